/**
 * Safe retries with `Idempotency-Key`, against a real Azurite: a retry of a batch that landed is
 * answered 204 again with `Idempotent-Replay: true` and writes nothing; a key names one batch.
 */
import { TableClient } from '@azure/data-tables';
import { putLoan } from '../../dev/demoData';
import { KEY_GRACE_MS, KEY_LIFETIME_MS, ROWS_KEPT_MS, batchHash, keyRecordId } from '../../lib/idempotency';
import { DETAILS, RETRY_AFTER_SECONDS } from '../../lib/problem';
import { Harness, OTHER_CLIENT, OTHER_PARTNER, PARTNER, draw, todayUtc, type Reply } from '../support/harness';
import { expectGenericProblem, expectOutcomeUnknown, expectProblem400 } from '../support/problems';
import { startChaosProxy, type ChaosProxy } from '../support/chaosProxy';
import { startFaultProxy, type FaultProxy } from '../support/storageProxies';

let h: Harness;
beforeAll(async () => {
  h = await Harness.start();
});
afterAll(() => h.stop());

const keyed = (key: string) => ({ headers: { 'Idempotency-Key': key } });
let keyCounter = 0;
const newKey = () => `batch-${process.pid}-${++keyCounter}`;

function expectAccepted(reply: Reply): void {
  expect(reply.status).toBe(204);
  expect(reply.text).toBe('');
  expect(reply.headers['idempotent-replay']).toBeUndefined();
}

function expectReplay(reply: Reply): void {
  expect(reply.status).toBe(204);
  expect(reply.text).toBe('');
  expect(reply.headers['idempotent-replay']).toBe('true');
  expect(reply.headers['x-request-id']).toBeTruthy();
}

/** A request-level Invalid Request (no index) with this detail. */
function expectRequestError(reply: Reply, detail: string): void {
  expectProblem400(reply);
  expect(reply.body.errors).toEqual([{ error: 'Invalid Request', code: 'InvalidRequest', detail }]);
}

const expectKeyReused = (reply: Reply) => expectRequestError(reply, DETAILS.idempotencyKeyReused);

/**
 * A keyed request's storage failure: never "nothing was submitted", since an earlier request with the key may
 * have recorded the batch; the outcome-unknown answer, with Retry-After (a resend under the key is safe).
 */
const expectKeyedFailure = (reply: Reply) => expectOutcomeUnknown(reply, RETRY_AFTER_SECONDS);

/** What a test of a key's lifetime works with: the batch's loan and key, the proxy, and the service's clock. */
interface FailedFirstAttempt {
  readonly taken: number;
  readonly loan: number;
  readonly key: string;
  readonly chaos: ChaosProxy;
  readonly now: () => number;
  readonly moveClockTo: (at: number) => void;
}

/** Runs `test` after a keyed batch's first attempt took its key at `taken` and failed at the commit (503: nothing recorded). */
async function afterFailedFirstAttempt(taken: number, test: (first: FailedFirstAttempt) => Promise<void>): Promise<void> {
  let clock = new Date(taken);
  const chaos = await startChaosProxy(h.azurite.port);
  chaos.decide = (kind) => (kind === 'commit' ? { kind: 'status', status: 503 } : { kind: 'pass' });
  h.rebuild({ now: () => clock }, h.settingsVia(chaos.port));
  try {
    const loan = await h.loan();
    const key = newKey();
    expectKeyedFailure(await h.post([draw(loan)], keyed(key))); // the key is taken; nothing recorded
    chaos.decide = () => ({ kind: 'pass' });
    await test({ taken, loan, key, chaos, now: () => clock.getTime(), moveClockTo: (at) => (clock = new Date(at)) });
  } finally {
    await chaos.close();
    h.rebuild();
  }
}

function keyRecords(): TableClient {
  return TableClient.fromConnectionString(h.azurite.connectionString, h.config.tables.idempotencyTable, { allowInsecureConnection: true });
}

describe('a keyed batch', () => {
  test('is accepted as usual; its rows record the key and the hash of the canonical batch; the key is recorded', async () => {
    const [a, b] = [await h.loan(), await h.loan()];
    const key = newKey();
    const reply = await h.post([draw(a, 10), draw(b, 20.5, 'ops@partner.example')], keyed(key));
    expectAccepted(reply);
    const hash = batchHash([
      { loanNumber: a, amount: 10, requestor: 'jane.doe@partner.example' },
      { loanNumber: b, amount: 20.5, requestor: 'ops@partner.example' },
    ]);
    const rows = await h.drawsFor(a, b);
    expect(rows).toHaveLength(2);
    for (const row of rows) expect(row).toMatchObject({ IdempotencyKey: key, BatchHash: hash, RequestId: reply.headers['x-request-id'] });
    const record = await keyRecords().getEntity(keyRecordId(PARTNER, key), '');
    expect(record).toMatchObject({
      PartnerId: PARTNER,
      IdempotencyKey: key,
      BatchHash: hash,
      Day: todayUtc(),
      LoanNumbers: `${a},${b}`,
      RequestId: reply.headers['x-request-id'],
    });
    expect(Date.now() - new Date(record.TakenAt as string).getTime()).toBeLessThan(60_000);
  });

  test('rows of an unkeyed batch carry no key or hash', async () => {
    const loan = await h.loan();
    expectAccepted(await h.post([draw(loan)]));
    const [row] = await h.drawsFor(loan);
    expect(row.IdempotencyKey).toBeUndefined();
    expect(row.BatchHash).toBeUndefined();
  });
});

describe('a retry with the same key and the same batch', () => {
  test('answers 204 with Idempotent-Replay: true, its own X-Request-Id, and writes nothing', async () => {
    const [a, b] = [await h.loan(), await h.loan()];
    const key = newKey();
    const batch = [draw(a, 10), draw(b, 20)];
    const first = await h.post(batch, keyed(key));
    expectAccepted(first);
    const before = await h.drawsFor(a, b);

    const retry = await h.post(batch, keyed(key));
    expectReplay(retry);
    expect(retry.headers['x-request-id']).not.toBe(first.headers['x-request-id']);
    expect(await h.drawsFor(a, b)).toEqual(before); // same rows, same etags: nothing rewritten
    expect(h.recordOf(retry)).toMatchObject({ outcome: 'Replayed', idempotencyKey: key, reasonDetail: first.headers['x-request-id'] });
  });

  test('is recognised when spelled differently: key casing, digit-string loan number, 10.0, whitespace, unknown keys', async () => {
    const loan = await h.loan();
    const key = newKey();
    expectAccepted(await h.post([draw(loan, 10)], keyed(key)));
    const respelled = `[ { "LOANNUMBER": "000${loan}", "Amount": 10.0, "requestor": "  jane.doe@partner.example ", "note": "retry" } ]`;
    expectReplay(await h.post(respelled, keyed(key)));
    expect(await h.drawsFor(loan)).toHaveLength(1);
  });

  test("is replayed even when the loan has since changed (the answer does not depend on today's state)", async () => {
    const loan = await h.loan({ availableCredit: 100 });
    const key = newKey();
    expectAccepted(await h.post([draw(loan, 100)], keyed(key)));
    await h.loan({ loanNumber: loan, availableCredit: 0 }); // the loan-servicing system drew the credit down
    expectReplay(await h.post([draw(loan, 100)], keyed(key)));
  });

  test('a retry without the key is a new submission: Pending Transaction Request', async () => {
    const loan = await h.loan();
    const key = newKey();
    expectAccepted(await h.post([draw(loan)], keyed(key)));
    const reply = await h.post([draw(loan)]);
    expect(reply.status).toBe(400);
    expect(reply.body.errors).toEqual([expect.objectContaining({ index: 0, code: 'PendingTransactionRequest' })]);
  });

  test('a retry under a different key is a new submission: Pending Transaction Request', async () => {
    const loan = await h.loan();
    expectAccepted(await h.post([draw(loan)], keyed(newKey())));
    const reply = await h.post([draw(loan)], keyed(newKey()));
    expect(reply.status).toBe(400);
    expect(reply.body.errors).toEqual([expect.objectContaining({ index: 0, code: 'PendingTransactionRequest' })]);
  });

  test(`a key is bound for ${KEY_LIFETIME_MS / 3_600_000} hours from when it was taken; after them the same batch still finds its rows in the key's day`, async () => {
    const taken = Date.parse('2031-03-10T12:00:00Z');
    let clock = new Date(taken);
    h.rebuild({ now: () => clock });
    try {
      const loan = await h.loan();
      const key = newKey();
      expectAccepted(await h.post([draw(loan)], keyed(key)));
      clock = new Date(taken + KEY_LIFETIME_MS - 1_000);
      expectReplay(await h.post([draw(loan)], keyed(key)));
      clock = new Date(taken + KEY_LIFETIME_MS + 1_000); // recorded: found and replayed during the grace
      expectReplay(await h.post([draw(loan)], keyed(key)));
      clock = new Date(taken + KEY_LIFETIME_MS + KEY_GRACE_MS); // and after it, in the key's day: not recorded again
      expectReplay(await h.post([draw(loan)], keyed(key)));
      clock = new Date(taken + ROWS_KEPT_MS - 1);
      expectReplay(await h.post([draw(loan)], keyed(key)));
      clock = new Date(taken + 30 * KEY_LIFETIME_MS); // past what is surely kept, but the rows are there: still the truth
      expectReplay(await h.post([draw(loan)], keyed(key)));
      expect((await h.drawsFor(loan)).map((r) => r.partitionKey)).toEqual(['2031-03-10']);
    } finally {
      h.rebuild();
    }
  });

  test('a batch whose key outlived its lifetime unrecorded: not known yet during the grace (502, Retry-After), expired after it; nothing recorded', () =>
    afterFailedFirstAttempt(Date.parse('2031-03-12T12:00:00Z'), async ({ taken, loan, key, moveClockTo }) => {
      moveClockTo(taken + KEY_LIFETIME_MS + 60_000);
      const pending = await h.post([draw(loan)], keyed(key));
      expectOutcomeUnknown(pending, (KEY_GRACE_MS - 60_000) / 1000);
      expect(h.recordOf(pending)).toMatchObject({
        outcome: 'DependencyFailed',
        reason: 'KeyOutcomePending',
        reasonDetail: 'day 2031-03-12 until 2031-03-13T12:10:00.000Z',
      });
      moveClockTo(taken + KEY_LIFETIME_MS + KEY_GRACE_MS - 1);
      expectOutcomeUnknown(await h.post([draw(loan)], keyed(key)), 1);
      expect(await h.drawsFor(loan)).toHaveLength(0);
      moveClockTo(taken + KEY_LIFETIME_MS + KEY_GRACE_MS);
      expectRequestError(await h.post([draw(loan)], keyed(key)), DETAILS.idempotencyKeyExpired);
      moveClockTo(taken + ROWS_KEPT_MS - 1); // as long as its rows are surely kept (contract §4): still expired
      expectRequestError(await h.post([draw(loan)], keyed(key)), DETAILS.idempotencyKeyExpired);
      expect(await h.drawsFor(loan)).toHaveLength(0);
      // What the answer says: the batch under a new key is recorded, once, today.
      expectAccepted(await h.post([draw(loan)], keyed(newKey())));
      expect((await h.drawsFor(loan)).map((r) => r.partitionKey)).toEqual(['2031-03-14']);
    }));

  test('past 48 hours a batch that took its key is still answered from its take: found, the replay; not found, its outcome can no longer be told', () =>
    afterFailedFirstAttempt(Date.parse('2031-03-20T12:00:00Z'), async ({ taken, loan, key, moveClockTo }) => {
      moveClockTo(taken + ROWS_KEPT_MS); // the rows may have been removed by now (contract §4): "expired" could be untrue
      expectRequestError(await h.post([draw(loan)], keyed(key)), DETAILS.idempotencyKeyOutcomeForgotten);
      moveClockTo(taken + 30 * KEY_LIFETIME_MS);
      expectRequestError(await h.post([draw(loan)], keyed(key)), DETAILS.idempotencyKeyOutcomeForgotten);
      expect(await h.drawsFor(loan)).toHaveLength(0); // never judged anew: nothing recorded under the key
    }));

  test('a refusal stands once the take is 48 hours old (issue 46): the same batch under its key is never judged anew, whatever the loan does', () =>
    // 6125bfd judged the batch anew past 48 hours: refused it while the credit was low (400), then recorded it
    // minutes later once the credit was back (204), contradicting the 400.
    afterFailedFirstAttempt(Date.parse('2031-03-22T12:00:00Z'), async ({ taken, loan, key, moveClockTo }) => {
      moveClockTo(taken + ROWS_KEPT_MS + 10 * 60_000);
      await h.loan({ loanNumber: loan, availableCredit: 10 }); // the loan-servicing system lowered the credit
      const refused = await h.post([draw(loan, 100)], keyed(key));
      expect(refused.status).toBe(400);
      moveClockTo(taken + ROWS_KEPT_MS + 20 * 60_000);
      await h.loan({ loanNumber: loan, availableCredit: 10_000 }); // and restored it
      const again = await h.post([draw(loan, 100)], keyed(key));
      expect([again.status, again.body?.errors]).toEqual([400, refused.body.errors]);
      expect(await h.drawsFor(loan)).toHaveLength(0);
    }));

  test('an attempt still committing at the 24th hour is never answered "expired": the retry beside it is told to wait, then finds the batch', () =>
    // docs/contract.md §9: A1 took the key and failed; A2, a second before the 24th hour, commits into the
    // key's day but slowly; A3, a second after it, reads that day before A2 lands. A3 must not say the batch
    // was not recorded, or the partner resends it under a new key and it is recorded twice.
    afterFailedFirstAttempt(Date.parse('2031-03-16T23:59:30Z'), async ({ taken, loan, key, chaos, moveClockTo }) => {
      let committing: () => void = () => undefined;
      const a2Committing = new Promise<void>((resolve) => (committing = resolve));
      chaos.decide = (kind) => {
        if (kind !== 'commit') return { kind: 'pass' };
        committing();
        return { kind: 'delay', ms: 1_500 }; // within the commit's bound (UNHURRIED_TIMEOUTS): A2 lands and is answered 204
      };
      moveClockTo(taken + KEY_LIFETIME_MS - 1_000);
      const a2 = h.post([draw(loan)], keyed(key));
      await a2Committing;
      moveClockTo(taken + KEY_LIFETIME_MS + 1_000);
      expectOutcomeUnknown(await h.post([draw(loan)], keyed(key)), KEY_GRACE_MS / 1000 - 1);
      expectAccepted(await a2);
      moveClockTo(taken + KEY_LIFETIME_MS + KEY_GRACE_MS);
      expectReplay(await h.post([draw(loan)], keyed(key)));
      expect((await h.drawsFor(loan)).map((r) => r.partitionKey)).toEqual(['2031-03-16']);
    }));

  test('an attempt judged inside the lifetime that reaches its commit past halfway through the grace does not commit', () =>
    afterFailedFirstAttempt(Date.parse('2031-03-18T08:00:00Z'), async ({ taken, loan, key, chaos, now, moveClockTo }) => {
      // The retry is judged a second before the 24th hour; its reads stall while the clock runs past the
      // last moment a commit may start.
      moveClockTo(taken + KEY_LIFETIME_MS - 1_000);
      chaos.decide = (kind) => {
        if (kind === 'read' && now() < taken + KEY_LIFETIME_MS) {
          moveClockTo(taken + KEY_LIFETIME_MS + KEY_GRACE_MS / 2);
          return { kind: 'delay', ms: 50 };
        }
        return kind === 'commit' ? { kind: 'status', status: 500 } : { kind: 'pass' }; // a commit must not be tried at all
      };
      expectOutcomeUnknown(await h.post([draw(loan)], keyed(key)), KEY_GRACE_MS / 2000);
      expect(chaos.applied['commit:status'] ?? 0).toBe(1); // only the first attempt's
      expect(await h.drawsFor(loan)).toHaveLength(0);
    }));

  test('a retry of a batch holding its key completes it only if the loans still allow it; otherwise not known yet until the key settles (issue 46)', () =>
    // The first attempt took the key and its commit failed (503). The loan-servicing system then moved the loan
    // to another partner: without a key the same draw is Invalid Authorization, and under the key 6125bfd
    // recorded it for the former owner. A 400 would be untrue while the first attempt may still land.
    afterFailedFirstAttempt(Date.parse('2031-03-24T09:00:00Z'), async ({ taken, loan, key, moveClockTo }) => {
      moveClockTo(taken + 60_000);
      await h.loan({ loanNumber: loan, partnerId: OTHER_PARTNER });
      const moved = await h.post([draw(loan)], keyed(key));
      expectOutcomeUnknown(moved, KEY_GRACE_MS / 1000); // at most a grace's wait: the loans may allow it sooner
      expect(h.recordOf(moved)).toMatchObject({
        outcome: 'DependencyFailed',
        reason: 'KeyOutcomePending',
        errors: [expect.objectContaining({ index: 0, loanNumber: loan, code: 'InvalidAuthorization' })],
      });
      expect((await h.post([draw(loan)])).body.errors).toEqual([expect.objectContaining({ code: 'InvalidAuthorization' })]);
      await h.loan({ loanNumber: loan, availableCredit: 10 }); // back with the partner, its credit drawn down
      expectOutcomeUnknown(await h.post([draw(loan)], keyed(key)), KEY_GRACE_MS / 1000);
      expect(await h.drawsFor(loan)).toHaveLength(0);
      // Once the loans allow it again, the retry completes the submission in the key's day.
      await h.loan({ loanNumber: loan, availableCredit: 1_000 });
      moveClockTo(taken + KEY_LIFETIME_MS - 1_000);
      expectAccepted(await h.post([draw(loan)], keyed(key)));
      expect((await h.drawsFor(loan)).map((r) => [r.partitionKey, r.PartnerId])).toEqual([['2031-03-24', PARTNER]]);
    }));

  test('a completion the loans refuse until the key settles: then expired, and nothing was recorded', () =>
    afterFailedFirstAttempt(Date.parse('2031-03-26T09:00:00Z'), async ({ taken, loan, key, moveClockTo }) => {
      await h.loan({ loanNumber: loan, partnerId: OTHER_PARTNER });
      moveClockTo(taken + KEY_LIFETIME_MS + KEY_GRACE_MS - 1);
      expectOutcomeUnknown(await h.post([draw(loan)], keyed(key)), 1);
      moveClockTo(taken + KEY_LIFETIME_MS + KEY_GRACE_MS);
      expectRequestError(await h.post([draw(loan)], keyed(key)), DETAILS.idempotencyKeyExpired);
      expect(await h.drawsFor(loan)).toHaveLength(0);
    }));

  test('an unreadable key record binds nothing: it is replaced by the next batch under the key', async () => {
    const loan = await h.loan();
    const key = newKey();
    await keyRecords().createEntity({ partitionKey: keyRecordId(PARTNER, key), rowKey: '', PartnerId: PARTNER, BatchHash: 'x' }); // no Day, no TakenAt
    const reply = await h.post([draw(loan)], keyed(key));
    expectAccepted(reply);
    expect(await keyRecords().getEntity(keyRecordId(PARTNER, key), '')).toMatchObject({ RequestId: reply.headers['x-request-id'], Day: todayUtc() });
    expectReplay(await h.post([draw(loan)], keyed(key)));
  });
});

describe('a retry across midnight', () => {
  /** Runs `work` on a handler whose clock the test moves, in `timeZone`; restores the harness after. */
  async function withClock(start: string, timeZone: string, work: (setClock: (iso: string) => void) => Promise<void>): Promise<void> {
    let clock = new Date(start);
    h.rebuild({ now: () => clock }, { ...h.settings, DRAW_DAY_TIMEZONE: timeZone });
    try {
      await work((iso) => (clock = new Date(iso)));
    } finally {
      h.rebuild();
    }
  }

  test('a batch landed at 23:59:58 whose answer was lost is replayed at 00:00:30 and late the next evening, and recorded once', () =>
    withClock('2031-04-01T23:59:58Z', 'UTC', async (setClock) => {
      const [a, b] = [await h.loan(), await h.loan()];
      const key = newKey();
      const first = await h.post([draw(a, 10), draw(b, 20)], keyed(key));
      expectAccepted(first);
      for (const at of ['2031-04-02T00:00:30Z', '2031-04-02T23:59:00Z']) {
        setClock(at);
        const retry = await h.post([draw(a, 10), draw(b, 20)], keyed(key));
        expectReplay(retry);
        expect(h.recordOf(retry)).toMatchObject({ outcome: 'Replayed', reasonDetail: first.headers['x-request-id'] });
      }
      expect((await h.drawsFor(a, b)).map((r) => r.partitionKey)).toEqual(['2031-04-01', '2031-04-01']);
    }));

  test('on the new day the key is still bound to its batch: a different batch under it is refused', () =>
    withClock('2031-04-05T23:59:50Z', 'UTC', async (setClock) => {
      const [a, b] = [await h.loan(), await h.loan()];
      const key = newKey();
      expectAccepted(await h.post([draw(a, 10)], keyed(key)));
      setClock('2031-04-06T00:00:10Z');
      expectKeyReused(await h.post([draw(a, 11), draw(b, 12)], keyed(key)));
      expect((await h.drawsFor(a, b)).map((r) => `${r.partitionKey}/${r.rowKey}`)).toEqual([`2031-04-05/${a}`]);
    }));

  test('a slow commit sent at 23:59:58 and its retry at 00:00:01, while the first is in flight: both 204, one batch, under the first day', async () => {
    const proxy = await startChaosProxy(h.azurite.port);
    let commits = 0;
    // The first transaction reaches storage late, inside the commit bound; everything else passes.
    proxy.decide = (kind) => (kind === 'commit' && ++commits === 1 ? { kind: 'delay', ms: 1_500 } : { kind: 'pass' });
    let clock = new Date('2031-04-09T23:59:58Z');
    h.rebuild({ now: () => clock, timeouts: { attemptMs: 2_000, readMs: 4_000, commitMs: 4_000 } }, h.settingsVia(proxy.port));
    try {
      const [a, b] = [await h.loan(), await h.loan()];
      const key = newKey();
      const first = h.post([draw(a, 10), draw(b, 20)], keyed(key));
      while (commits === 0) await new Promise((r) => setTimeout(r, 10));
      clock = new Date('2031-04-10T00:00:01Z'); // the partner's client gave up and retries
      const retry = await h.post([draw(a, 10), draw(b, 20)], keyed(key));
      const answers = [await first, retry];
      expect(answers.map((r) => r.status)).toEqual([204, 204]);
      expect(answers.filter((r) => r.headers['idempotent-replay'] === 'true')).toHaveLength(1);
      const rows = await h.drawsFor(a, b);
      expect(rows.map((r) => r.partitionKey)).toEqual(['2031-04-09', '2031-04-09']);
      expect(new Set(rows.map((r) => r.RequestId)).size).toBe(1);
    } finally {
      await proxy.idle();
      await proxy.close();
      h.rebuild();
    }
  });

  test("midnight is the business day's, not UTC's: in America/New_York a batch of 23:59:58 EST is replayed at 00:00:30", () =>
    withClock('2031-11-20T04:59:58Z', 'America/New_York', async (setClock) => {
      const loan = await h.loan();
      const key = newKey();
      expectAccepted(await h.post([draw(loan)], keyed(key)));
      setClock('2031-11-20T05:00:30Z');
      expectReplay(await h.post([draw(loan)], keyed(key)));
      expect((await h.drawsFor(loan)).map((r) => r.partitionKey)).toEqual(['2031-11-19']);
    }));

  test('an unkeyed retry across midnight is a new submission, as before (only a key can tell a retry)', () =>
    withClock('2031-04-07T23:59:58Z', 'UTC', async (setClock) => {
      const loan = await h.loan();
      expectAccepted(await h.post([draw(loan)]));
      setClock('2031-04-08T00:00:30Z');
      expectAccepted(await h.post([draw(loan)]));
      expect(await h.drawsFor(loan)).toHaveLength(2);
    }));
});

describe('a key names one batch', () => {
  test('the same key with a different batch on overlapping loans is 400 Invalid Request; nothing written', async () => {
    const [a, b] = [await h.loan(), await h.loan()];
    const key = newKey();
    expectAccepted(await h.post([draw(a, 10)], keyed(key)));
    expectKeyReused(await h.post([draw(a, 11), draw(b, 10)], keyed(key)));
    expect(await h.drawsFor(b)).toHaveLength(0);
    expect((await h.drawsFor(a))[0].Amount).toBe(10);
  });

  test('the same key with a batch of other loans is 400 Invalid Request; nothing written', async () => {
    const [a, b] = [await h.loan(), await h.loan()];
    const key = newKey();
    expectAccepted(await h.post([draw(a)], keyed(key)));
    expectKeyReused(await h.post([draw(b)], keyed(key)));
    expect(await h.drawsFor(b)).toHaveLength(0);
  });

  test('the same elements in another order are another batch', async () => {
    const [a, b] = [await h.loan(), await h.loan()];
    const key = newKey();
    expectAccepted(await h.post([draw(a), draw(b)], keyed(key)));
    expectKeyReused(await h.post([draw(b), draw(a)], keyed(key)));
  });

  test('keys belong to a partner: another partner may use the same key', async () => {
    const mine = await h.loan();
    const theirs = await h.loan({ partnerId: OTHER_PARTNER });
    const key = newKey();
    expectAccepted(await h.post([draw(mine)], keyed(key)));
    const other = await h.post([draw(theirs)], { token: await h.token({ azp: OTHER_CLIENT, sub: OTHER_CLIENT }), ...keyed(key) });
    expectAccepted(other);
  });

  test('another partner sending our batch under our key is not replayed our answer', async () => {
    const mine = await h.loan();
    const key = newKey();
    expectAccepted(await h.post([draw(mine)], keyed(key)));
    const stranger = await h.post([draw(mine)], { token: await h.token({ azp: OTHER_CLIENT, sub: OTHER_CLIENT }), ...keyed(key) });
    expect(stranger.status).toBe(400);
    expect(stranger.body.errors).toEqual([expect.objectContaining({ index: 0, code: 'InvalidAuthorization' })]);
  });

  test('a batch rejected by the draw rules does not bind its key: the corrected batch is accepted under it', async () => {
    const loan = await h.loan({ availableCredit: 50 });
    const key = newKey();
    const rejected = await h.post([draw(loan, 60)], keyed(key));
    expect(rejected.body.errors[0].code).toBe('InvalidAmount');
    expectAccepted(await h.post([draw(loan, 50)], keyed(key)));
    expect(await h.drawsFor(loan)).toHaveLength(1);
  });
});

describe('the Idempotency-Key header', () => {
  const visible = Array.from({ length: 0x7e - 0x21 + 1 }, (_, i) => String.fromCharCode(0x21 + i)).join('');

  test.each([
    ['128 characters', 'k'.repeat(128)],
    ['every visible ASCII character, including / \\ # ?', visible.slice(0, 94)],
    ['a UUID', '5f0c6a1e-8d1b-4c1e-9f4e-2b7f0e9a3c11'],
  ])('%s is accepted', async (_name, key) => {
    const loan = await h.loan();
    expectAccepted(await h.post([draw(loan)], keyed(key)));
    expectReplay(await h.post([draw(loan)], keyed(key)));
  });

  test.each([
    ['empty', ''],
    ['129 characters', 'k'.repeat(129)],
    ['a space inside', 'two words'],
    ['a tab', 'a\tb'],
    ['two values joined by a comma and space', 'a, b'],
  ])('%s is 400 Invalid Request, before the body is read, and nothing is written', async (_name, key) => {
    const loan = await h.loan();
    const reply = await h.post([draw(loan)], keyed(key));
    expectRequestError(reply, DETAILS.idempotencyKeyForm);
    expect(await h.drawsFor(loan)).toHaveLength(0);
  });

  test('non-ASCII is 400 Invalid Request', async () => {
    // Node's HTTP client refuses such a header, but a Functions host may pass one through as Latin-1 text.
    const loan = await h.loan();
    expectRequestError(await h.post([draw(loan)], keyed('clé')), DETAILS.idempotencyKeyForm);
  });

  test('a bad key is still answered after authentication: no token is 401', async () => {
    const reply = await h.post([draw(1)], { token: null, ...keyed('') });
    expectGenericProblem(reply, 401);
  });
});

describe('concurrent requests with the same key', () => {
  test('the same batch sent five times at once: all 204, one landing and four replays, one set of rows', async () => {
    const [a, b] = [await h.loan(), await h.loan()];
    const key = newKey();
    const batch = [draw(a), draw(b)];
    const replies = await Promise.all(Array.from({ length: 5 }, () => h.post(batch, keyed(key))));
    expect(replies.map((r) => r.status)).toEqual([204, 204, 204, 204, 204]);
    const landed = replies.filter((r) => r.headers['idempotent-replay'] === undefined);
    expect(landed).toHaveLength(1);
    const rows = await h.drawsFor(a, b);
    expect(rows).toHaveLength(2);
    for (const row of rows) expect(row.RequestId).toBe(landed[0].headers['x-request-id']);
  });

  test('two different batches on the same loan under one key at once: one lands, the other is refused', async () => {
    const loan = await h.loan();
    const key = newKey();
    const replies = await Promise.all([h.post([draw(loan, 10)], keyed(key)), h.post([draw(loan, 20)], keyed(key))]);
    expect(replies.map((r) => r.status).sort()).toEqual([204, 400]);
    const refused = replies.find((r) => r.status === 400) as Reply;
    expectKeyReused(refused);
    const rows = await h.drawsFor(loan);
    expect(rows).toHaveLength(1);
    expect(rows[0].RequestId).toBe(replies.find((r) => r.status === 204)?.headers['x-request-id']);
  });
});

describe('the retry the header exists for: a commit that landed but whose answer was lost', () => {
  let proxy: FaultProxy;
  beforeAll(async () => {
    proxy = await startFaultProxy(h.azurite.port);
  });
  afterAll(async () => {
    await proxy.close();
    h.rebuild();
  });

  test('the first answer is 502 saying the batch may have been recorded; the keyed retry is 204 replayed, with one set of rows', async () => {
    h.rebuild({ timeouts: { attemptMs: 2_000, readMs: 2_000, commitMs: 800 } }, h.settingsVia(proxy.port));
    const [a, b] = [await h.loan(), await h.loan()];
    const key = newKey();
    proxy.mode = 'loseCommitAnswer';
    const first = await h.post([draw(a), draw(b)], keyed(key));
    expectKeyedFailure(first);
    expect(h.recordOf(first)).toMatchObject({ outcome: 'DependencyFailed', reason: 'CommitOutcomeUnknown', reasonDetail: 'commitDraws ERR_STORAGE_TIMEOUT' });
    expect(await h.drawsFor(a, b)).toHaveLength(2); // it landed

    proxy.mode = 'pass';
    expectReplay(await h.post([draw(a), draw(b)], keyed(key)));
    expect(await h.drawsFor(a, b)).toHaveLength(2);
    // Without the key, the same retry could only be told its draws were already submitted.
    const unkeyed = await h.post([draw(a), draw(b)]);
    expect(unkeyed.body.errors.map((e: { code: string }) => e.code)).toEqual(['PendingTransactionRequest', 'PendingTransactionRequest']);
  });

  test('a keyed batch whose commit storage never answered (outcome unknown, nothing landed) is accepted, not replayed, on retry', async () => {
    h.rebuild({ timeouts: { attemptMs: 2_000, readMs: 2_000, commitMs: 800 } }, h.settingsVia(proxy.port));
    const loan = await h.loan();
    const key = newKey();
    proxy.mode = 'holdCommit';
    expectKeyedFailure(await h.post([draw(loan)], keyed(key)));
    expect(await h.drawsFor(loan)).toHaveLength(0);
    proxy.mode = 'pass';
    expectAccepted(await h.post([draw(loan)], keyed(key)));
    expect(await h.drawsFor(loan)).toHaveLength(1);
  });

  test('a commit storage refused (503) says nothing was submitted; the key stays bound to that batch, which its retry records', async () => {
    const [a, b] = [await h.loan(), await h.loan()];
    const key = newKey();
    const chaos = await startChaosProxy(h.azurite.port);
    chaos.decide = (kind) => (kind === 'commit' ? { kind: 'status', status: 503 } : { kind: 'pass' });
    h.rebuild({ timeouts: { attemptMs: 2_000, readMs: 2_000, commitMs: 800 } }, h.settingsVia(chaos.port));
    try {
      expectKeyedFailure(await h.post([draw(a)], keyed(key)));
      expect(await h.drawsFor(a)).toHaveLength(0);
      chaos.decide = () => ({ kind: 'pass' });
      expectKeyReused(await h.post([draw(b)], keyed(key)));
      expectAccepted(await h.post([draw(a)], keyed(key)));
      expect((await h.drawsFor(a, b)).map((r) => Number(r.rowKey))).toEqual([a]);
    } finally {
      await chaos.close();
    }
  });
});

/** Another client draws `loan` between this request's reads and its commit. */
async function losingRace(loan: number, work: () => Promise<void>): Promise<void> {
  const store = h.deps.store;
  const realRead = store.readBatchState.bind(store);
  store.readBatchState = async (day, loanNumbers) => {
    const state = await realRead(day, loanNumbers);
    store.readBatchState = realRead;
    await h.table('draws').createEntity({ partitionKey: day, rowKey: String(loan), RequestId: 'competitor', PartnerId: PARTNER });
    return state;
  };
  try {
    await work();
  } finally {
    store.readBatchState = realRead;
  }
}

describe('a keyed batch that lost a race at the commit', () => {
  test('is 400 Pending Transaction Request; the same batch under the key is refused again; the corrected batch is recorded under it', async () => {
    const [a, b] = [await h.loan(), await h.loan()];
    const key = newKey();
    await losingRace(b, async () => {
      const lost = await h.post([draw(a), draw(b)], keyed(key));
      expectProblem400(lost);
      expect(lost.body.errors).toEqual([expect.objectContaining({ index: 1, loanNumber: b, code: 'PendingTransactionRequest' })]);
    });
    const again = await h.post([draw(a), draw(b)], keyed(key));
    expect(again.body.errors).toEqual([expect.objectContaining({ index: 1, loanNumber: b, code: 'PendingTransactionRequest' })]);
    const corrected = await h.post([draw(a)], keyed(key));
    expectAccepted(corrected);
    expectReplay(await h.post([draw(a)], keyed(key)));
    const rows = await h.drawsFor(a, b);
    expect(rows.map((r) => `${r.rowKey} ${String(r.RequestId)}`).sort()).toEqual([`${a} ${corrected.headers['x-request-id']}`, `${b} competitor`].sort());
  });
});

describe('two different batches under one key', () => {
  test('taking over the record of a batch that lost its race, at the same instant: one replace wins (ETag), the other is refused', async () => {
    for (let round = 0; round < 3; round++) {
      const [a, b, c] = [await h.loan(), await h.loan(), await h.loan()];
      const key = newKey();
      await losingRace(a, async () => expect((await h.post([draw(a)], keyed(key))).status).toBe(400));
      const replies = await Promise.all([h.post([draw(b)], keyed(key)), h.post([draw(c)], keyed(key))]);
      expect(replies.map((r) => r.status).sort()).toEqual([204, 400]);
      expectKeyReused(replies.find((r) => r.status === 400) as Reply);
      expect((await h.drawsFor(b, c)).map((r) => r.RequestId)).toEqual([replies.find((r) => r.status === 204)?.headers['x-request-id']]);
    }
  });

  test('on disjoint loans at the same instant: exactly one lands, the other is refused as a reused key', async () => {
    for (let round = 0; round < 5; round++) {
      const [a, b] = [await h.loan(), await h.loan()];
      const key = newKey();
      const replies = await Promise.all([h.post([draw(a)], keyed(key)), h.post([draw(b)], keyed(key))]);
      expect(replies.map((r) => r.status).sort()).toEqual([204, 400]);
      expectKeyReused(replies.find((r) => r.status === 400) as Reply);
      const rows = await h.drawsFor(a, b);
      expect(rows).toHaveLength(1);
      expect(rows[0].RequestId).toBe(replies.find((r) => r.status === 204)?.headers['x-request-id']);
    }
  });
});

describe('a retry that overtakes its first attempt while the loan changes (issue #39)', () => {
  /**
   * Batch A = [L1 $300, L2 $500] under key K, L2's credit 600. Attempt 1's first write to IdempotencyKeys is
   * held 1.5 s; meanwhile the loan-servicing system lowers L2's credit to 400 and the partner's retry arrives.
   */
  async function overtaken(holdFirstWriteOf: 'take' | 'refusal') {
    const chaos = await startChaosProxy(h.azurite.port);
    let held = false;
    chaos.decide = (kind, path) => {
      if (kind !== 'write' || held || !path.includes(h.config.tables.idempotencyTable)) return { kind: 'pass' };
      held = true;
      return { kind: 'delay', ms: 1_500 };
    };
    h.rebuild({}, h.settingsVia(chaos.port));
    try {
      const [l1, l2] = [await h.loan(), await h.loan({ availableCredit: 600 })];
      const key = newKey();
      const batch = [draw(l1, 300), draw(l2, 500)];
      const lower = () => putLoan(h.table('loans'), { loanNumber: l2, partnerId: PARTNER, availableCredit: 400, fundingInvestorId: 'INV-1' });
      let first: Promise<Reply>;
      let second: Reply;
      if (holdFirstWriteOf === 'take') {
        // Attempt 1 passes the rules and its take is held; the retry reads the lowered credit and is refused.
        first = h.post(batch, keyed(key));
        await until(() => held);
        await lower();
        second = await h.post(batch, keyed(key));
      } else {
        // The retry's refusal is the held write; attempt 1, read before the credit was lowered, takes the key.
        await lower();
        const refusing = h.post(batch, keyed(key));
        await until(() => held);
        await putLoan(h.table('loans'), { loanNumber: l2, partnerId: PARTNER, availableCredit: 600, fundingInvestorId: 'INV-1' });
        first = h.post(batch, keyed(key));
        second = await refusing;
      }
      return { replies: [await first, second], l1, l2, key };
    } finally {
      await chaos.close();
      h.rebuild();
    }
  }

  test('the retry is refused and the first attempt, whose take comes late, is refused the same: nothing recorded, the key left for the corrected batch', async () => {
    const { replies, l1, l2, key } = await overtaken('take');
    for (const reply of replies) {
      expectProblem400(reply);
      expect(reply.body.errors).toEqual([expect.objectContaining({ index: 1, loanNumber: l2, code: 'InvalidAmount' })]);
    }
    expect(await h.drawsFor(l1, l2)).toEqual([]);
    // What the answer says to do: the corrected batch, under the same key, is recorded once.
    const corrected = await h.post([draw(l1, 300)], keyed(key));
    expectAccepted(corrected);
    expect((await h.drawsFor(l1, l2)).map((r) => r.RequestId)).toEqual([corrected.headers['x-request-id']]);
    // The refused batch under the key stays refused, whatever the loan holds now.
    expectProblem400(await h.post([draw(l1, 300), draw(l2, 500)], keyed(key)));
  });

  test('the refusal whose mark comes late finds the key taken by the first attempt: both record the batch once (204, and the replay)', async () => {
    const { replies, l1, l2 } = await overtaken('refusal');
    expect(replies.map((r) => r.status)).toEqual([204, 204]);
    expect(replies.filter((r) => r.headers['idempotent-replay'] === 'true')).toHaveLength(1);
    expect((await h.drawsFor(l1, l2)).map((r) => r.RequestId).sort()).toEqual(
      [
        replies.find((r) => r.headers['idempotent-replay'] === undefined)?.headers['x-request-id'],
        replies.find((r) => r.headers['idempotent-replay'] === undefined)?.headers['x-request-id'],
      ].sort(),
    );
  });
});

describe('a retry judged again after the grace, on a day of 25 hours (found by the generated histories)', () => {
  /**
   * New York's clocks go back on 2031-11-02: that business day lasts 25 hours, so a key taken just after its
   * midnight is past its 24 hours and its grace while the day is still today. Attempt 1 takes the key at
   * 00:00:30 EDT (its take held 2 s by the proxy); the retry is read in the grace, finds the key free and
   * tries to take it (held 7 s); attempt 1 lands meanwhile; the retry's take then finds the key taken and is
   * judged again after the grace. Today's draws it read before attempt 1 landed must not decide that.
   */
  test('the retry is answered the replay of the batch attempt 1 recorded, not "expired"', async () => {
    const chaos = await startChaosProxy(h.azurite.port);
    let writes = 0;
    chaos.decide = (kind, path) => {
      if (kind !== 'write' || !path.includes(h.config.tables.idempotencyTable)) return { kind: 'pass' };
      writes += 1;
      return { kind: 'delay', ms: writes === 1 ? 2_000 : 7_000 };
    };
    let clock = new Date('2031-11-02T04:00:30Z'); // 00:00:30 EDT
    h.rebuild({ now: () => clock }, { ...h.settingsVia(chaos.port), DRAW_DAY_TIMEZONE: 'America/New_York' });
    try {
      const loan = await h.loan();
      const key = newKey();
      const first = h.post([draw(loan)], keyed(key));
      await until(() => writes === 1);
      clock = new Date('2031-11-03T04:05:00Z'); // 23:05 EST, still 2031-11-02: in the key's grace
      const retry = h.post([draw(loan)], keyed(key));
      await until(() => writes === 2);
      const landed = await first;
      expectAccepted(landed);
      clock = new Date('2031-11-03T04:11:00Z'); // 23:11 EST: the key's 24 hours and grace are over
      const answer = await retry;
      expectReplay(answer);
      expect(h.recordOf(answer)).toMatchObject({ outcome: 'Replayed', reasonDetail: landed.headers['x-request-id'] });
      expect((await h.drawsFor(loan)).map((r) => [r.partitionKey, r.RequestId])).toEqual([['2031-11-02', landed.headers['x-request-id']]]);
    } finally {
      await chaos.close();
      h.rebuild();
    }
  });
});

async function until(condition: () => boolean): Promise<void> {
  while (!condition()) await new Promise((r) => setTimeout(r, 5));
}
