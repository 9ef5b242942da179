import fc from 'fast-check';
import {
  COMMIT_LANDS_WITHIN_MS,
  CLOCK_TOLERANCE_MS,
  KEY_GRACE_MS,
  KEY_LIFETIME_MS,
  KEY_REUSED,
  ROWS_KEPT_MS,
  NO_KEY_STATE,
  REFUSAL_LIFETIME_MS,
  batchHash,
  decodeErrors,
  encodeErrors,
  judgeKey,
  replayedErrors,
  storedErrors,
  keyRecordId,
  lastCommitStart,
  readIdempotencyKey,
  recordedRow,
  settleHeld,
  settledAt,
  type KeyRecord,
  type KeyState,
  type KeyVerdict,
  type KeyedBatch,
  type PriorDraw,
} from '../../lib/idempotency';
import { DETAILS } from '../../lib/problem';
import { DEFAULT_TIMEOUTS } from '../../lib/store';

const headers = (value?: string) => ({ get: (name: string) => (name.toLowerCase() === 'idempotency-key' && value !== undefined ? value : null) });

describe('readIdempotencyKey', () => {
  test('no header: no key', () => {
    expect(readIdempotencyKey(headers())).toEqual({ ok: true });
  });

  test('any 1–128 visible ASCII characters are a key, taken as sent', () => {
    fc.assert(
      fc.property(fc.string({ unit: fc.integer({ min: 0x21, max: 0x7e }).map((c) => String.fromCharCode(c)), minLength: 1, maxLength: 128 }), (key) => {
        expect(readIdempotencyKey(headers(key))).toEqual({ ok: true, key });
      }),
    );
  });

  test('anything else is a request-level Invalid Request', () => {
    const invalid = fc.oneof(
      fc.constant(''),
      fc.string({ minLength: 129, maxLength: 300 }).filter((s) => /^[\x21-\x7e]+$/.test(s)),
      fc
        .tuple(
          fc.string({ maxLength: 60 }),
          fc.oneof(fc.constant(' '), fc.constant('\t'), fc.constant('\x7f'), fc.constant('é'), fc.constant('\u0000')),
          fc.string({ maxLength: 60 }),
        )
        .map(([a, b, c]) => a + b + c),
    );
    fc.assert(
      fc.property(invalid, (value) => {
        expect(readIdempotencyKey(headers(value))).toEqual({ ok: false, error: { code: 'InvalidRequest', detail: DETAILS.idempotencyKeyForm } });
      }),
    );
  });
});

describe('batchHash', () => {
  const element = fc.record({
    loanNumber: fc.integer({ min: 1 }),
    amount: fc.integer({ min: 100, max: 10_000_00 }).map((c) => c / 100),
    requestor: fc.string({ minLength: 1 }),
  });

  test('is a SHA-256 hex digest', () => {
    expect(batchHash([{ loanNumber: 1, amount: 1, requestor: 'a' }])).toMatch(/^[0-9a-f]{64}$/);
  });

  test('depends on every canonical value and on order, not on how they were spelled', () => {
    fc.assert(
      fc.property(fc.array(element, { minLength: 1, maxLength: 5 }), fc.nat(), (batch, which) => {
        const i = which % batch.length;
        const respelled = batch.map((e) => ({ ...e, amount: Number(e.amount.toFixed(2)) }));
        expect(batchHash(respelled)).toBe(batchHash(batch));
        expect(batchHash(batch.map((e, j) => (j === i ? { ...e, loanNumber: e.loanNumber + 1 } : e)))).not.toBe(batchHash(batch));
        expect(batchHash(batch.map((e, j) => (j === i ? { ...e, amount: e.amount + 0.01 } : e)))).not.toBe(batchHash(batch));
        expect(batchHash(batch.map((e, j) => (j === i ? { ...e, requestor: `${e.requestor}x` } : e)))).not.toBe(batchHash(batch));
        if (batch.length > 1 && batchHash([batch[1]]) !== batchHash([batch[0]])) {
          expect(batchHash([batch[1], batch[0], ...batch.slice(2)])).not.toBe(batchHash(batch));
        }
      }),
    );
  });

  test('field boundaries cannot be shifted to forge the same hash', () => {
    expect(batchHash([{ loanNumber: 1, amount: 1, requestor: 'a","b' }])).not.toBe(
      batchHash([
        { loanNumber: 1, amount: 1, requestor: 'a' },
        { loanNumber: 1, amount: 1, requestor: 'b' },
      ]),
    );
  });
});

describe('keyRecordId', () => {
  test('is a valid RowKey whatever the key holds, and differs by partner and by key', () => {
    expect(keyRecordId('P', 'a/b\\c#d?e')).toMatch(/^[0-9a-f]{64}$/);
    expect(keyRecordId('P1', 'k')).not.toBe(keyRecordId('P2', 'k'));
    expect(keyRecordId('P', 'k1')).not.toBe(keyRecordId('P', 'k2'));
    expect(keyRecordId('P|', 'k')).not.toBe(keyRecordId('P', '|k'));
  });
});

describe('judgeKey', () => {
  const batch: KeyedBatch = { key: 'K', hash: 'H', partnerId: 'P' };
  const takenAt = new Date('2031-04-01T23:59:58Z');
  const record = (over: Partial<KeyRecord> = {}): KeyRecord => ({
    partnerId: 'P',
    key: 'K',
    hash: 'H',
    day: '2031-04-01',
    loanNumbers: ['1001'],
    requestId: 'r1',
    takenAt,
    ...over,
  });
  const at = (ms: number) => new Date(takenAt.getTime() + ms);
  const holding = (r?: KeyRecord): KeyState => ({ holder: { value: r, etag: 'e0' } });
  const refusal = {
    kind: 'refused' as const,
    errors: [{ index: 0, code: 'InvalidAmount' as const, field: 'amount' as const, detail: 'd' }],
    requestId: 'r0',
    refusedAt: takenAt,
  };

  test.each<[string, KeyState, Date, KeyVerdict]>([
    ['no rows: free', NO_KEY_STATE, at(0), { kind: 'free' }],
    ['an unreadable record: free', holding(undefined), at(0), { kind: 'free' }],
    ['taken by this batch: its day, whatever day it is now', holding(record()), at(3_000), { kind: 'mine', day: '2031-04-01', takenAt }],
    ['taken by this batch a moment before the lifetime ends', holding(record()), at(KEY_LIFETIME_MS - 1), { kind: 'mine', day: '2031-04-01', takenAt }],
    ['taken by this batch, lifetime over, grace not: expiring', holding(record()), at(KEY_LIFETIME_MS), { kind: 'expiring', day: '2031-04-01', takenAt }],
    [
      'taken by this batch, the last moment of grace',
      holding(record()),
      at(KEY_LIFETIME_MS + KEY_GRACE_MS - 1),
      { kind: 'expiring', day: '2031-04-01', takenAt },
    ],
    [
      'taken by this batch, lifetime and grace over: expired, its day still named',
      holding(record()),
      at(KEY_LIFETIME_MS + KEY_GRACE_MS),
      { kind: 'expired', day: '2031-04-01', known: true },
    ],
    [
      'taken by this batch, the last moment its rows are surely kept',
      holding(record()),
      at(ROWS_KEPT_MS - 1),
      { kind: 'expired', day: '2031-04-01', known: true },
    ],
    [
      'taken by this batch, its rows no longer surely kept: still expired, its outcome no longer known (never judged anew)',
      holding(record()),
      at(ROWS_KEPT_MS),
      { kind: 'expired', day: '2031-04-01', known: false },
    ],
    [
      'taken by this batch, refused under the key later (written by an older release): its take still answers',
      { holder: { value: record(), etag: 'e1' }, own: { value: refusal, etag: 'e2' } },
      at(ROWS_KEPT_MS + 60_000),
      { kind: 'expired', day: '2031-04-01', known: false },
    ],
    ['taken by another batch', holding(record({ hash: 'other' })), at(1), { kind: 'held', holder: record({ hash: 'other' }) }],
    [
      'taken by another batch, lifetime over, grace not: still held',
      holding(record({ hash: 'other' })),
      at(KEY_LIFETIME_MS + 1),
      { kind: 'held', holder: record({ hash: 'other' }) },
    ],
    ['taken by another batch, lifetime and grace over: free', holding(record({ hash: 'other' })), at(KEY_LIFETIME_MS + KEY_GRACE_MS), { kind: 'free' }],
    [
      'a clock behind the taker (another instance): still bound',
      holding(record({ hash: 'other' })),
      at(-5_000),
      { kind: 'held', holder: record({ hash: 'other' }) },
    ],
    [
      'this batch took the key, then another took it over: its own row keeps its day',
      { holder: { value: record({ hash: 'other', takenAt: at(60_000) }), etag: 'e1' }, own: { value: { kind: 'taken', record: record() }, etag: 'e2' } },
      at(120_000),
      { kind: 'mine', day: '2031-04-01', takenAt },
    ],
    [
      'taken over, its own take past the time rows are surely kept: still answered from its take',
      {
        holder: { value: record({ hash: 'other', takenAt: at(ROWS_KEPT_MS - 60_000) }), etag: 'e1' },
        own: { value: { kind: 'taken', record: record() }, etag: 'e2' },
      },
      at(ROWS_KEPT_MS),
      { kind: 'expired', day: '2031-04-01', known: false },
    ],
    ['refused under the key: the same refusal', { own: { value: refusal, etag: 'e2' } }, at(1), { kind: 'refused', errors: refusal.errors, requestId: 'r0' }],
    [
      'refused, with another batch holding the key: the refusal still stands for this batch',
      { holder: { value: record({ hash: 'other' }), etag: 'e1' }, own: { value: refusal, etag: 'e2' } },
      at(KEY_LIFETIME_MS - 1),
      { kind: 'refused', errors: refusal.errors, requestId: 'r0' },
    ],
    ['a refusal 24 hours old no longer stands: free', { own: { value: refusal, etag: 'e2' } }, at(REFUSAL_LIFETIME_MS), { kind: 'free' }],
    ['an unreadable own row: free', { own: { value: undefined, etag: 'e2' } }, at(1), { kind: 'free' }],
  ])('%s', (_name, state, now, verdict) => {
    expect(judgeKey(batch, state, now)).toEqual(verdict);
  });

  test('only the time since the take counts, whatever side of midnight; no instant both completes the batch and frees the key', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 3 * KEY_LIFETIME_MS }), fc.integer({ min: 0, max: 3 * KEY_LIFETIME_MS }), fc.boolean(), (start, elapsed, same) => {
        const taken = new Date(Date.parse('2031-01-01T00:00:00Z') + start);
        const verdict = judgeKey(batch, holding(record({ takenAt: taken, hash: same ? 'H' : 'other' })), new Date(taken.getTime() + elapsed));
        const over = elapsed >= KEY_LIFETIME_MS + KEY_GRACE_MS;
        const expected = !same ? (over ? 'free' : 'held') : elapsed < KEY_LIFETIME_MS ? 'mine' : over ? 'expired' : 'expiring';
        expect(verdict.kind).toBe(expected);
        if (verdict.kind === 'expired') expect(verdict.known).toBe(elapsed < ROWS_KEPT_MS);
      }),
    );
    // The last instant that completes the batch and the first that frees the key are the grace apart.
    expect(KEY_GRACE_MS).toBeGreaterThanOrEqual(5 * 60_000);
    // The batch's rows are kept (contract §4) well past the grace, so "expired" can be told from them.
    expect(ROWS_KEPT_MS).toBeGreaterThan(KEY_LIFETIME_MS + KEY_GRACE_MS);
    // The answer that says so names the same 48 hours.
    expect(DETAILS.idempotencyKeyOutcomeForgotten).toContain(`over ${ROWS_KEPT_MS / 3_600_000} hours ago`);
  });

  test('a standing refusal answers the batch unless it holds a binding of its own; whatever the holder', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 2 * REFUSAL_LIFETIME_MS }),
        fc.option(fc.integer({ min: -KEY_LIFETIME_MS, max: KEY_LIFETIME_MS })),
        (elapsed, heldFor) => {
          const holder = heldFor === null ? undefined : { value: record({ hash: 'other', takenAt: at(heldFor) }), etag: 'e1' };
          const verdict = judgeKey(batch, { holder, own: { value: refusal, etag: 'e2' } }, at(elapsed));
          if (elapsed < REFUSAL_LIFETIME_MS) expect(verdict).toEqual({ kind: 'refused', errors: refusal.errors, requestId: 'r0' });
          else expect(['free', 'held']).toContain(verdict.kind);
        },
      ),
    );
  });

  test("no commit of a key's batch starts after halfway through its grace, and its outcome is final at the grace's end", () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 3 * KEY_LIFETIME_MS }), (start) => {
        const taken = new Date(Date.parse('2031-01-01T00:00:00Z') + start);
        // The last instant judged `mine` can still start its commit; the cutoff leaves half the grace for
        // that commit (bounded at seconds) and for instances' clocks to differ before the outcome is final.
        expect(judgeKey(batch, holding(record({ takenAt: taken })), new Date(lastCommitStart(taken) - KEY_GRACE_MS / 2 - 1)).kind).toBe('mine');
        expect(lastCommitStart(taken)).toBe(taken.getTime() + KEY_LIFETIME_MS + KEY_GRACE_MS / 2);
        expect(settledAt(taken) - lastCommitStart(taken)).toBe(KEY_GRACE_MS / 2);
        expect(judgeKey(batch, holding(record({ takenAt: taken })), new Date(settledAt(taken))).kind).toBe('expired');
        expect(judgeKey(batch, holding(record({ takenAt: taken })), new Date(settledAt(taken) - 1)).kind).toBe('expiring');
      }),
    );
  });

  test("the clocks' tolerance is what is left of the grace's second half once a commit has landed", () => {
    expect(CLOCK_TOLERANCE_MS).toBe(KEY_GRACE_MS / 2 - COMMIT_LANDS_WITHIN_MS);
    expect(CLOCK_TOLERANCE_MS).toBeGreaterThanOrEqual(4 * 60_000);
    // A commit leaves within its deadline and storage carries it out within its 30 s server timeout.
    expect(COMMIT_LANDS_WITHIN_MS).toBeGreaterThanOrEqual(DEFAULT_TIMEOUTS.commitMs + 30_000);
  });
});

describe('a refusal as stored and answered again', () => {
  const spelled = (loanNumber: number, keyCase: string) => ({ index: 0, loanNumber, pointers: { loanNumber: `/0/${keyCase}`, amount: '/0/amount' } });
  test("keeps codes and details, and answers with the resend's own spelling of the keys", () => {
    const first = [spelled(1001, 'loanNumber'), { ...spelled(1002, 'loanNumber'), index: 1, pointers: { loanNumber: '/1/loanNumber', amount: '/1/Amount' } }];
    const errors = [
      { index: 0, loanNumber: 1001, code: 'InvalidLoanNumber' as const, pointer: '/0/loanNumber', detail: DETAILS.loanNotFound },
      { index: 1, loanNumber: 1002, code: 'InvalidAmount' as const, pointer: '/1/Amount', detail: DETAILS.amountAboveCredit },
      { index: 1, loanNumber: 1002, code: 'InvalidFundingInvestor' as const, detail: DETAILS.noFundingInvestor },
    ];
    const stored = decodeErrors(encodeErrors(storedErrors(errors, first)));
    expect(stored).toEqual(storedErrors(errors, first));
    const resend = [spelled(1001, 'LOANNUMBER'), { ...spelled(1002, 'loannumber'), index: 1, pointers: { loanNumber: '/1/loannumber', amount: '/1/AMOUNT' } }];
    expect(replayedErrors(stored ?? [], resend)).toEqual([
      { index: 0, loanNumber: 1001, code: 'InvalidLoanNumber', pointer: '/0/LOANNUMBER', detail: DETAILS.loanNotFound },
      { index: 1, loanNumber: 1002, code: 'InvalidAmount', pointer: '/1/AMOUNT', detail: DETAILS.amountAboveCredit },
      { index: 1, loanNumber: 1002, code: 'InvalidFundingInvestor', detail: DETAILS.noFundingInvestor },
    ]);
  });

  test('a request-level refusal (the key bound to another batch) is answered again as it was', () => {
    const stored = decodeErrors(encodeErrors(storedErrors([KEY_REUSED], [])));
    expect(replayedErrors(stored ?? [], [])).toEqual([KEY_REUSED]);
  });

  test.each([
    '',
    'x',
    '{}',
    '[]',
    '[[0,"Nope",null,"d"]]',
    '[[-1,"InvalidAmount",null,"d"]]',
    '[[0,"InvalidAmount","requestor","d"]]',
    '[[0,"InvalidAmount",null]]',
  ])('text that encodeErrors never writes is unreadable: %s', (text) => {
    expect(decodeErrors(text)).toBeUndefined();
  });
});

describe('recordedRow', () => {
  const batch: KeyedBatch = { key: 'K', hash: 'H', partnerId: 'P' };
  const row = (over: Partial<PriorDraw> = {}): PriorDraw => ({ partnerId: 'P', idempotencyKey: 'K', batchHash: 'H', requestId: 'r1', ...over });

  test.each<[string, PriorDraw[], PriorDraw | undefined]>([
    ['no rows', [], undefined],
    ['rows of unkeyed submissions', [row({ idempotencyKey: undefined, batchHash: undefined })], undefined],
    ['a row of this partner, key and batch', [row()], row()],
    ['one matching row among others (the batch landed atomically)', [row({ idempotencyKey: 'other' }), row({ requestId: 'r9' })], row({ requestId: 'r9' })],
    ['this key with another batch', [row({ batchHash: 'other' })], undefined],
    ["another partner's row under the same key and hash", [row({ partnerId: 'Q' })], undefined],
  ])('%s', (_name, rows, found) => {
    expect(recordedRow(batch, rows)).toEqual(found);
  });
});

describe('settleHeld', () => {
  const holder: KeyRecord = { partnerId: 'P', key: 'K', hash: 'H', day: '2031-04-01', loanNumbers: ['1', '2'], requestId: 'r1', takenAt: new Date() };
  const row = (over: Partial<PriorDraw> = {}): PriorDraw => ({ partnerId: 'P', idempotencyKey: 'K', batchHash: 'H', requestId: 'r1', ...over });

  test.each<[string, PriorDraw[], ReturnType<typeof settleHeld>]>([
    ['no row on its loans that day: it may still land (in flight, or its outcome unknown)', [], 'unsettled'],
    ['its own rows: recorded', [row(), row()], 'recorded'],
    [
      'a row of an unkeyed submission on one of its loans: it can never land',
      [row({ idempotencyKey: undefined, batchHash: undefined, requestId: 'x' })],
      'never',
    ],
    ['a row of the same partner under another key: never', [row({ idempotencyKey: 'other' })], 'never'],
    ['a row of another partner that happens to use the same key and hash: never', [row({ partnerId: 'Q' })], 'never'],
    ['its rows beside nothing else: recorded, even if listed after a foreign one', [row({ idempotencyKey: 'other' }), row()], 'recorded'],
  ])('%s', (_name, rows, verdict) => {
    expect(settleHeld(holder, rows)).toBe(verdict);
  });
});
