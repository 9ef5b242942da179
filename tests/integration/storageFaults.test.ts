/**
 * Table Storage failures with real processes stopped and started: every one is 502 within
 * the time bound, nothing is written, and the same instance serves again when storage returns.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import { createServer as createHttpServer, request as httpRequest, type Server as HttpServer, type ServerResponse } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { BatchState, StoreResult } from '../../lib/store';
import { Harness, draw, type Reply } from '../support/harness';
import { expectGenericProblem } from '../support/problems';

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
    const settings = { ...h.settings, TABLES_CONNECTION_STRING: h.azurite.connectionString.replace(`:${h.azurite.port}/`, `:${port}/`) };
    h.rebuild({ timeouts: { attemptMs: 300, readMs: 1_000, commitMs: 1_000 } }, settings);
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
  let proxy: HttpServer;
  const stalled: ServerResponse[] = [];

  beforeAll(async () => {
    h = await Harness.start();
    // Forwards everything to Azurite except entity-group transactions, which it holds unanswered.
    proxy = createHttpServer((req, res) => {
      if (req.url?.includes('$batch')) {
        stalled.push(res);
        req.resume();
        return;
      }
      const upstream = httpRequest({ host: '127.0.0.1', port: h.azurite.port, method: req.method, path: req.url, headers: req.headers }, (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      });
      req.pipe(upstream);
    });
    await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
  });
  afterAll(async () => {
    for (const res of stalled) res.destroy();
    proxy.closeAllConnections();
    await new Promise<void>((resolve) => proxy.close(() => resolve()));
    await h.stop();
  });

  test('answers 502 within the commit bound, and nothing is written', async () => {
    const loans = [await h.loan(), await h.loan()];
    const port = (proxy.address() as { port: number }).port;
    const settings = { ...h.settings, TABLES_CONNECTION_STRING: h.azurite.connectionString.replace(`:${h.azurite.port}/`, `:${port}/`) };
    h.rebuild({ timeouts: { attemptMs: 2_000, readMs: 2_000, commitMs: 800 } }, settings);
    const [reply, ms] = await timed(() => h.post(loans.map((l) => draw(l))));
    expect502(reply);
    expect(ms).toBeLessThan(2_500);
    expect(stalled.length).toBe(1); // the reads went through; the transaction reached storage and hung
    expect(h.logs.join('\n')).toMatch(/table storage commitDraws ERR_STORAGE_TIMEOUT/);
    expect(await h.drawsFor(...loans)).toHaveLength(0);
  });
});

describe('managed identity that cannot get a token', () => {
  test('is a dependency failure (502), for the partner lookup as for everything else', async () => {
    // A fake only for a fault a real part cannot produce here: no managed identity endpoint on this machine.
    const credential = {
      getToken: async () => {
        const error = new Error('ManagedIdentityCredential: no identity endpoint');
        error.name = 'AggregateAuthenticationError';
        throw error;
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
