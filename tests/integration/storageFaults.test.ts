/**
 * Table Storage failures with real processes stopped and started: every one is 502 within
 * the time bound, nothing is written, and the same instance serves again when storage returns.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { BatchState, StoreResult } from '../../lib/store';
import { Harness, draw, type Reply } from '../support/harness';
import { expectGenericProblem, expectOutcomeUnknown } from '../support/problems';
import { startDelayProxy, type DelayProxy, type FaultProxy } from '../support/storageProxies';

const expect502 = (reply: Reply) => expectGenericProblem(reply, 502);

async function timed<T>(work: () => Promise<T>): Promise<[T, number]> {
  const start = Date.now();
  const result = await work();
  return [result, Date.now() - start];
}

describe('storage stopped and restarted (Azurite on disk, so data survives the restart)', () => {
  let h: Harness;
  let location: string;
  beforeAll(async () => {
    location = mkdtempSync(join(tmpdir(), 'draws-storage-'));
    h = await Harness.start({}, { location });
  });
  afterAll(async () => {
    await h.stop();
    rmSync(location, { recursive: true, force: true });
  });

  test('502 in seconds while down, nothing written; served again by the same instance when back', async () => {
    const before = await h.loan();
    expect((await h.post([draw(before)])).status).toBe(204); // warms the partner cache
    const during = await h.loan();
    const after = await h.loan();

    await h.stopStorage();
    const [reply, ms] = await timed(() => h.post([draw(during)]));
    expect502(reply);
    expect(ms).toBeLessThan(5_000);
    expect(h.logs.join('\n')).toMatch(/table storage readBatchState ERR_STORAGE_UNREACHABLE/);

    // Request shape is answered without touching storage: still a 400, not a 502.
    const shape = await h.post('{"not":"an array"}');
    expect(shape.status).toBe(400);

    await h.startStorage();
    expect((await h.post([draw(after)])).status).toBe(204);
    const stored = (await h.draws()).map((r) => Number(r.rowKey));
    expect(stored).toEqual(expect.arrayContaining([before, after]));
    expect(stored).not.toContain(during);
  });

  test('a partner lookup that cannot reach storage is 502, never 401', async () => {
    h.rebuild(); // a new instance: empty partner cache
    await h.stopStorage();
    try {
      expect502(await h.post([draw(1)]));
      expect(h.logs.join('\n')).toMatch(/table storage readPartner ERR_STORAGE_UNREACHABLE/);
    } finally {
      await h.startStorage();
    }
  });

  test('with a malformed Idempotency-Key the partner lookup failing is the plain 502: the key binds nothing, so nothing was submitted (issue 46)', async () => {
    // 6125bfd answered the outcome-unknown 502 ("resend under the key") to any request carrying the header.
    h.rebuild();
    await h.stopStorage();
    try {
      expect502(await h.post([draw(1)], { headers: { 'Idempotency-Key': 'two words' } }));
      expectOutcomeUnknown(await h.post([draw(1)], { headers: { 'Idempotency-Key': 'one-word' } }), 2);
    } finally {
      await h.startStorage();
    }
  });

  test('storage lost between the reads and the commit: 502 and none of the batch written', async () => {
    const loans = [await h.loan(), await h.loan()];
    expect((await h.post([draw(await h.loan())])).status).toBe(204);
    const store = h.deps.store;
    const realRead = store.readBatchState.bind(store);
    store.readBatchState = async (day: string, loanNumbers: readonly string[]): Promise<StoreResult<BatchState>> => {
      const state = await realRead(day, loanNumbers);
      await h.stopStorage();
      return state;
    };
    try {
      expect502(await h.post(loans.map((l) => draw(l))));
      expect(h.logs.join('\n')).toMatch(/table storage commitDraws ERR_STORAGE_UNREACHABLE/);
    } finally {
      store.readBatchState = realRead;
      await h.startStorage();
    }
    expect(await h.drawsFor(...loans)).toHaveLength(0);
    expect((await h.post(loans.map((l) => draw(l)))).status).toBe(204);
  });
});

describe('storage stopped mid-run, while requests keep coming', () => {
  let h: Harness;
  let location: string;
  beforeAll(async () => {
    location = mkdtempSync(join(tmpdir(), 'draws-midrun-'));
    h = await Harness.start({}, { location, timeouts: { attemptMs: 500, readMs: 1_500, commitMs: 1_500 } });
  });
  afterAll(async () => {
    await h.stop();
    rmSync(location, { recursive: true, force: true });
  });

  test('every answer is 204 or 502 within the bound; exactly the accepted batches are stored; it resumes by itself', async () => {
    const loans = await Promise.all(Array.from({ length: 300 }, () => h.loan()));
    const answers: { loans: number[]; status: number; ms: number }[] = [];
    let next = 0;
    let answersAfterOutage = 0;
    let outageOver = false;
    // Three clients, each posting two-draw batches back to back, while storage goes away and comes back.
    const client = async () => {
      while (next + 2 <= loans.length && answersAfterOutage < 9) {
        const batch = loans.slice(next, (next += 2));
        const [reply, ms] = await timed(() => h.post(batch.map((l) => draw(l))));
        answers.push({ loans: batch, status: reply.status, ms });
        if (outageOver) answersAfterOutage += 1;
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    };
    const outage = (async () => {
      await new Promise((resolve) => setTimeout(resolve, 300));
      await h.stopStorage();
      await new Promise((resolve) => setTimeout(resolve, 1_500));
      await h.startStorage();
      outageOver = true;
    })();
    await Promise.all([client(), client(), client(), outage]);

    const statuses = new Set(answers.map((a) => a.status));
    expect([...statuses].sort()).toEqual([204, 502]); // the outage was seen, and so was service before and after it
    expect(Math.max(...answers.map((a) => a.ms))).toBeLessThan(4_000);
    expect(answers[answers.length - 1].status).toBe(204); // resumed without a restart
    const accepted = answers.filter((a) => a.status === 204).flatMap((a) => a.loans);
    const stored = (await h.drawsFor(...loans)).map((r) => Number(r.rowKey));
    expect(stored.sort()).toEqual(accepted.sort());
  });
});

describe('slow storage (a delaying TCP proxy in front of Azurite)', () => {
  let h: Harness;
  let proxy: DelayProxy;
  beforeAll(async () => {
    h = await Harness.start();
    proxy = await startDelayProxy(h.azurite.port);
    h.rebuild({ timeouts: { attemptMs: 400, readMs: 1_000, commitMs: 1_000 } }, h.settingsVia(proxy.port));
  });
  afterAll(async () => {
    await proxy.close();
    await h.stop();
  });

  test('a little latency is served; too much is 502 within the bound with nothing written; then served again', async () => {
    const [quick, slow, recovered] = [await h.loan(), await h.loan(), await h.loan()];
    proxy.delayMs = 50;
    expect((await h.post([draw(quick)])).status).toBe(204);

    proxy.delayMs = 1_500;
    const [reply, ms] = await timed(() => h.post([draw(slow)]));
    expect502(reply);
    expect(ms).toBeLessThan(2_500);
    expect(h.recordOf(reply)?.reason).toBe('ERR_STORAGE_TIMEOUT');

    proxy.delayMs = 0;
    expect((await h.post([draw(recovered)])).status).toBe(204);
    expect((await h.drawsFor(quick, slow, recovered)).map((r) => Number(r.rowKey)).sort()).toEqual([quick, recovered].sort());
  });
});

describe('storage answering 503 (server busy)', () => {
  let h: Harness;
  let proxy: FaultProxy;
  beforeAll(async () => {
    h = await Harness.start();
    proxy = await h.behindProxy();
  });
  afterAll(() => h.stop());

  test('502 after the bounded retries, nothing written; served again once storage recovers', async () => {
    const [busy, recovered] = [await h.loan(), await h.loan()];
    expect((await h.post([draw(await h.loan())])).status).toBe(204); // warm partner cache
    proxy.mode = 'busy';
    const readsBefore = proxy.counts.reads;
    const commitsBefore = proxy.counts.commits;
    const [reply, ms] = await timed(() => h.post([draw(busy)]));
    expect502(reply);
    expect(ms).toBeLessThan(5_000);
    expect(h.recordOf(reply)).toMatchObject({ reason: 'ERR_STORAGE_REJECTED', reasonDetail: 'readBatchState status 503 ServerBusy' });
    // Two point reads, retried a bounded number of times (at most three tries each), then given up.
    expect(proxy.counts.reads - readsBefore).toBeGreaterThan(2);
    expect(proxy.counts.reads - readsBefore).toBeLessThanOrEqual(2 * 3);
    expect(proxy.counts.commits).toBe(commitsBefore);

    proxy.mode = 'pass';
    expect((await h.post([draw(recovered)])).status).toBe(204);
    expect((await h.drawsFor(busy, recovered)).map((r) => Number(r.rowKey))).toEqual([recovered]);
  });

  test('a commit answered 503 is 502, is not retried, and writes nothing', async () => {
    const loans = [await h.loan(), await h.loan()];
    const store = h.deps.store;
    const realRead = store.readBatchState.bind(store);
    // Storage turns busy between the reads and the commit.
    store.readBatchState = async (day: string, loanNumbers: readonly string[]): Promise<StoreResult<BatchState>> => {
      const state = await realRead(day, loanNumbers);
      proxy.mode = 'busy';
      return state;
    };
    const commitsBefore = proxy.counts.commits;
    try {
      const reply = await h.post(loans.map((l) => draw(l)));
      expect502(reply);
      expect(h.recordOf(reply)).toMatchObject({ reason: 'ERR_STORAGE_REJECTED', reasonDetail: 'commitDraws status 503 ServerBusy' });
    } finally {
      store.readBatchState = realRead;
      proxy.mode = 'pass';
    }
    expect(proxy.counts.commits - commitsBefore).toBe(1);
    expect(await h.drawsFor(...loans)).toHaveLength(0);
  });
});

describe('storage that accepts connections but never answers', () => {
  let blackhole: Server;
  const sockets = new Set<Socket>();
  let h: Harness;

  beforeAll(async () => {
    blackhole = createServer((socket) => {
      sockets.add(socket); // hold every connection open, answer nothing
    });
    await new Promise<void>((resolve) => blackhole.listen(0, '127.0.0.1', resolve));
    h = await Harness.start();
  });
  afterAll(async () => {
    for (const s of sockets) s.destroy();
    await new Promise<void>((resolve) => blackhole.close(() => resolve()));
    await h.stop();
  });

  test('answers 502 within the configured bound (ERR_STORAGE_TIMEOUT)', async () => {
    const port = (blackhole.address() as { port: number }).port;
    h.rebuild({ timeouts: { attemptMs: 300, readMs: 1_000, commitMs: 1_000 } }, h.settingsVia(port));
    const [reply, ms] = await timed(() => h.post([draw(1)]));
    expect502(reply);
    expect(ms).toBeLessThan(3_000);
    expect(h.logs.join('\n')).toMatch(/ERR_STORAGE_TIMEOUT/);
  });
});

describe('a table that does not exist is a deployment fault (502), not an unknown loan', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await Harness.start();
  });
  afterAll(() => h.stop());

  test.each(['LOANS_TABLE', 'DRAWS_TABLE'])('%s names a missing table', async (setting) => {
    h.rebuild();
    const loan = await h.loan();
    h.rebuild({}, { ...h.settings, [setting]: 'NoSuchTable' });
    const mark = h.logs.length;
    expect502(await h.post([draw(loan)]));
    expect(h.logs.slice(mark).join('\n')).toMatch(/ERR_STORAGE_TABLE_MISSING status 404 TableNotFound/);
  });
});

describe('a commit that storage never answers', () => {
  let h: Harness;
  let proxy: FaultProxy;
  beforeAll(async () => {
    h = await Harness.start();
    proxy = await h.behindProxy();
  });
  afterAll(() => h.stop());

  test('answers 502 within the commit bound, saying the batch may have been recorded; here nothing was', async () => {
    const loans = [await h.loan(), await h.loan()];
    proxy.mode = 'holdCommit';
    h.rebuild({ timeouts: { attemptMs: 2_000, readMs: 2_000, commitMs: 800 } }, h.settingsVia(proxy.port));
    const [reply, ms] = await timed(() => h.post(loans.map((l) => draw(l))));
    // The transaction reached storage and hung: only storage knows whether it was applied.
    expectOutcomeUnknown(reply);
    expect(ms).toBeLessThan(2_500);
    expect(proxy.counts.commits).toBe(1); // the reads went through; the transaction reached storage and hung
    expect(h.logs.join('\n')).toMatch(/outcome unknown: table storage commitDraws ERR_STORAGE_TIMEOUT/);
    expect(await h.drawsFor(...loans)).toHaveLength(0);
  });
});

describe('managed identity that cannot get a token', () => {
  test('is a dependency failure (502), for the partner lookup as for everything else', async () => {
    // A fake only for a fault a real part cannot produce here: no managed identity endpoint on this machine.
    const credential = {
      getToken: () => {
        const error = new Error('ManagedIdentityCredential: no identity endpoint');
        error.name = 'AggregateAuthenticationError';
        return Promise.reject(error);
      },
    };
    const h = await Harness.start();
    try {
      const settings = { ...h.settings, TABLES_CONNECTION_STRING: undefined, TABLES_ENDPOINT: 'https://127.0.0.1:1/devstoreaccount1' };
      h.rebuild({ credential }, settings);
      expect502(await h.post([draw(1)]));
      expect(h.logs.join('\n')).toContain('table storage readPartner ERR_STORAGE_CREDENTIAL AggregateAuthenticationError');
      expect502(await h.post('not json'));
    } finally {
      await h.stop();
    }
  });
});
