/**
 * The day partition under load (docs/decisions/0050-the-day-partition-is-the-ceiling-beyond-it-the-nothing.md): a proxy in front
 * of a real Azurite throttles every partition at an entity rate, as Table Storage does (503 ServerBusy
 * beyond it). Concurrent keyed and unkeyed batches of several sizes overrun today's DrawRequests
 * partition; every answer is checked against storage, then every 502 is retried as partners are told
 * to, and each batch must end recorded whole and once.
 */
import { RestError, TableClient, odata, type TransactionAction } from '@azure/data-tables';
import { OUTCOME_UNKNOWN_DETAIL, RETRY_AFTER_SECONDS } from '../../lib/problem';
import { Harness, draw, todayUtc, type Reply } from '../support/harness';
import { expectGenericProblem, expectOutcomeUnknown } from '../support/problems';
import { THROTTLED_MESSAGE, connectionStringVia, startThrottlingProxy, transactionCost, type ThrottlingProxy } from '../support/storageProxies';

jest.setTimeout(60_000);

let h: Harness;
beforeAll(async () => {
  h = await Harness.start();
});
afterAll(() => h.stop());

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('the throttling proxy', () => {
  let proxy: ThrottlingProxy;
  let table: TableClient;
  beforeAll(async () => {
    proxy = await startThrottlingProxy(h.azurite.port, { ratePerSecond: 20, burst: 6 });
    const via = connectionStringVia(h.azurite.connectionString, h.azurite.port, proxy.port);
    // No retries: each call is one request, so the counts below are exact.
    table = TableClient.fromConnectionString(via, h.config.tables.drawsTable, { allowInsecureConnection: true, retryOptions: { maxRetries: 0 } });
  });
  afterAll(() => proxy.close());

  test('charges a point read 1, an insert 1 and a transaction 1 per operation, to their partition', async () => {
    const partition = `proxy-${process.pid}-a`;
    await table.createEntity({ partitionKey: partition, rowKey: 'single', Amount: 1 });
    expect(proxy.load(h.config.tables.drawsTable, partition)).toEqual({ accepted: 1, refused: 0, requests: 1, refusedRequests: 0 });

    const filter = odata`PartitionKey eq ${partition} and RowKey eq ${'single'}`;
    const pages = table.listEntities({ queryOptions: { filter } }).byPage({ maxPageSize: 1 });
    expect((await pages.next()).value).toHaveLength(1);
    await table.getEntity(partition, 'single'); // the (PartitionKey='…',RowKey='…') form
    expect(proxy.load(h.config.tables.drawsTable, partition).accepted).toBe(3);
    expect(proxy.reads).toMatchObject({ attempts: 2, forwarded: 2, refused: 0 });

    const actions: TransactionAction[] = ['b', 'c', 'd'].map((rowKey) => ['create', { partitionKey: partition, rowKey, Amount: 1 }]);
    await table.submitTransaction(actions);
    expect(proxy.load(h.config.tables.drawsTable, partition)).toEqual({ accepted: 6, refused: 0, requests: 4, refusedRequests: 0 });
    expect(proxy.transactions).toMatchObject({ attempts: 1, forwarded: 1, operations: 3 });
    // Another partition has a budget of its own.
    await table.createEntity({ partitionKey: `${partition}-other`, rowKey: 'x' });
    expect(proxy.load(h.config.tables.drawsTable, `${partition}-other`).accepted).toBe(1);
  });

  test('over budget: 503 ServerBusy as Table Storage answers it, nothing forwarded; budget refills at the rate', async () => {
    const partition = `proxy-${process.pid}-b`;
    const actions: TransactionAction[] = Array.from({ length: 100 }, (_, i) => ['create', { partitionKey: partition, rowKey: `r${i}` }]);
    // Burst 6: admitted with budget left, it leaves the partition 94 in debt, 4.7 s at 20/s: room for a slow machine.
    await table.submitTransaction(actions);
    const refused = await table.createEntity({ partitionKey: partition, rowKey: 'late' }).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(RestError);
    expect(refused).toMatchObject({
      statusCode: 503,
      details: { errorCode: 'ServerBusy', odataError: { code: 'ServerBusy', message: { value: THROTTLED_MESSAGE } } },
    });
    const headers = (refused as RestError).response?.headers;
    expect(headers?.get('x-ms-error-code')).toBe('ServerBusy');
    expect(headers?.get('content-type')).toMatch(/^application\/json;odata=minimalmetadata/);
    expect(headers?.get('retry-after')).toBeUndefined();
    const transaction = await table.submitTransaction([['create', { partitionKey: partition, rowKey: 'late2' }]]).catch((error: unknown) => error);
    expect(transaction).toMatchObject({ statusCode: 503, code: 'ServerBusy', message: THROTTLED_MESSAGE }); // parsed by the transaction's own code
    expect(proxy.load(h.config.tables.drawsTable, partition)).toEqual({ accepted: 100, refused: 2, requests: 1, refusedRequests: 2 });

    const direct = h.table('draws');
    await expect(direct.getEntity(partition, 'late')).rejects.toMatchObject({ statusCode: 404 });
    await sleep(5_500); // 20/s: the 94 of debt and then some are repaid
    await table.createEntity({ partitionKey: partition, rowKey: 'later' });
    expect((await direct.getEntity(partition, 'later')).rowKey).toBe('later');
  });

  test('reads a transaction body: every operation, its partition from its URL or its entity', () => {
    const body = [
      '--batch_1',
      'Content-Type: multipart/mixed; boundary=changeset_1',
      '',
      '--changeset_1',
      'POST http://127.0.0.1:1/devstoreaccount1/Draws HTTP/1.1',
      'Content-Type: application/json',
      '',
      '{"PartitionKey":"2026-11-25","RowKey":"1","Amount":1}',
      '--changeset_1',
      "MERGE http://127.0.0.1:1/devstoreaccount1/Draws(PartitionKey='2026-11-25',RowKey='2') HTTP/1.1",
      '',
      '{"Status":"Done"}',
      '--changeset_1',
      "DELETE http://127.0.0.1:1/devstoreaccount1/Draws(PartitionKey='it''s',RowKey='3') HTTP/1.1",
      '',
      '--changeset_1--',
      '--batch_1--',
    ].join('\r\n');
    expect([...transactionCost(body)]).toEqual([
      ['Draws/2026-11-25', 2],
      ["Draws/it's", 1],
    ]);
  });
});

describe('concurrent batches over a throttled day partition', () => {
  const RATE = 60;
  let proxy: ThrottlingProxy;
  beforeAll(async () => {
    // Warm the partner cache unthrottled, then reach storage only through the throttling proxy.
    expect((await h.post([draw(await h.loan())])).status).toBe(204);
    proxy = await startThrottlingProxy(h.azurite.port, { ratePerSecond: RATE });
    // Bounds with headroom for a busy 2-core machine: throttling, not a slow Azurite, must be what fails.
    h.rebuild({ timeouts: { attemptMs: 4_000, readMs: 10_000, commitMs: 10_000 } }, h.settingsVia(proxy.port));
    expect((await h.post([draw(await h.loan())])).status).toBe(204); // this instance's partner cache
  });
  afterAll(() => proxy.close());

  interface Sent {
    readonly loans: number[];
    readonly key?: string;
    readonly replies: Reply[];
  }

  const nothingSubmitted = (reply: Reply) => reply.status === 502 && reply.body?.detail !== OUTCOME_UNKNOWN_DETAIL;

  test('each answer is true to storage, 502s say when to come back, and retries record every batch exactly once', async () => {
    const sizes = [40, 40, 20, 20, 10, 10, 5, 5, 1, 1];
    const batches: Sent[] = [];
    for (const [i, size] of sizes.entries()) {
      const loans: number[] = [];
      for (let start = 0; start < size; start += 50) loans.push(...(await Promise.all(Array.from({ length: Math.min(50, size - start) }, () => h.loan()))));
      batches.push({ loans, key: i % 2 === 0 ? `day-${process.pid}-${i}` : undefined, replies: [] });
    }
    const day = todayUtc();
    const send = async (batch: Sent) => {
      const reply = await h.post(
        batch.loans.map((l) => draw(l, 10)),
        batch.key === undefined ? {} : { headers: { 'Idempotency-Key': batch.key } },
      );
      batch.replies.push(reply);
      return reply;
    };
    const rowsOf = async (batch: Sent) =>
      (await h.drawsFor(...batch.loans)).map((r) => ({ day: r.partitionKey as string, loan: Number(r.rowKey), requestId: r.RequestId }));
    proxy.resetCounts();

    // 1. All at once: 2 × 152 entity operations on today's partition, against a budget of 60 a second.
    await Promise.all(batches.map(send));
    const first = batches.map((b) => b.replies[0]);
    expect(first.some((r) => r.status === 502)).toBe(true); // the partition was overrun
    expect(first.every((r) => r.status === 204 || r.status === 502)).toBe(true);
    expect(proxy.load(h.config.tables.drawsTable, day).refused).toBeGreaterThan(0);
    // Throttled reads were retried by the SDK (whether a retry got through depends on timing: the bench counts those).
    expect(proxy.reads.refused).toBeGreaterThan(0);
    expect(proxy.reads.attempts).toBeGreaterThan(proxy.reads.forwarded);

    const check = async (batch: Sent, reply: Reply) => {
      const rows = await rowsOf(batch);
      if (reply.status === 204) {
        expect(reply.headers['retry-after']).toBeUndefined();
        expect(rows).toHaveLength(batch.loans.length); // whole
        expect(new Set(rows.map((r) => r.loan)).size).toBe(batch.loans.length); // once
        expect(new Set(rows.map((r) => r.day))).toEqual(new Set([day]));
      } else if (nothingSubmitted(reply)) {
        expectGenericProblem(reply, 502); // the fixed detail, and Retry-After
        expect(reply.headers['retry-after']).toBe(String(RETRY_AFTER_SECONDS));
        expect(h.recordOf(reply)).toMatchObject({ outcome: 'DependencyFailed', reason: 'ERR_STORAGE_REJECTED' });
        expect(h.recordOf(reply)?.reasonDetail).toMatch(/^(readBatchState|commitDraws|readDraws) status 503 ServerBusy$/);
        expect(rows).toEqual([]); // absent
      } else {
        // A keyed batch may be resent under its key (Retry-After); an unkeyed one may not (contract §2.1).
        expectOutcomeUnknown(reply, batch.key === undefined ? undefined : RETRY_AFTER_SECONDS);
        expect([0, batch.loans.length]).toContain(rows.length); // never half
      }
    };
    for (const batch of batches) await check(batch, batch.replies[0]);

    // 2. Partners come back after Retry-After, one batch at a time: keyed batches with their key, unkeyed
    // ones only after a 502 that said nothing was submitted (contract §2.1); again after each 502.
    const failed = batches.filter((b) => b.replies[0].status === 502);
    expect(failed.every((b) => b.key !== undefined || nothingSubmitted(b.replies[0]))).toBe(true);
    for (const batch of failed) {
      for (let attempt = 0; attempt < 6 && batch.replies[batch.replies.length - 1].status === 502; attempt++) {
        await sleep(Number(batch.replies[batch.replies.length - 1].headers['retry-after'] ?? RETRY_AFTER_SECONDS) * 1000);
        await check(batch, await send(batch));
      }
      expect(batch.replies[batch.replies.length - 1].status).toBe(204);
    }

    // 3. Storage afterwards: every batch whole, once, by the request that answered 204 without replay.
    for (const batch of batches) {
      const rows = await rowsOf(batch);
      expect(rows).toHaveLength(batch.loans.length);
      expect(new Set(rows.map((r) => r.loan)).size).toBe(batch.loans.length);
      const recordedBy = new Set(rows.map((r) => r.requestId));
      expect(recordedBy.size).toBe(1);
      // At most one answer recorded it (a plain 204, which names the rows' request), the others replayed.
      const fresh = batch.replies.filter((r) => r.status === 204 && r.headers['idempotent-replay'] === undefined);
      expect(fresh.length).toBeLessThanOrEqual(1);
      if (fresh.length === 1) expect([...recordedBy]).toEqual([fresh[0].headers['x-request-id']]);
      else expect(batch.replies.some((r) => r.headers['idempotent-replay'] === 'true')).toBe(true);
    }
    const accepted = proxy.load(h.config.tables.drawsTable, day).accepted;
    expect(accepted).toBeGreaterThan(0);
  });
});
