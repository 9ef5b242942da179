/**
 * Storage round trips per request (docs/contract.md §4), counted at a proxy in front of a real Azurite:
 * one parallel round of point reads, then (with a new Idempotency-Key) one insert, then one transaction,
 * whatever the batch size; the partner's row and its stop-list row in that same round, and neither once the
 * partner is cached; never a call per element in sequence.
 */
import { Harness, draw } from '../support/harness';
import type { FaultProxy } from '../support/storageProxies';
import { MAX_STORAGE_CONNECTIONS } from '../../lib/store';

let h: Harness;
let proxy: FaultProxy;
beforeAll(async () => {
  h = await Harness.start();
  proxy = await h.behindProxy();
});
afterAll(() => h.stop());

/** Posts a batch of fresh loans through the proxy and returns what storage saw. */
async function callsFor(size: number, expectedReads: number, key?: string) {
  const loans = await Promise.all(Array.from({ length: size }, () => h.loan()));
  proxy.gate = expectedReads; // answers wait until every read of one parallel round has arrived
  proxy.arrivals.length = 0;
  proxy.maxInFlight = 0;
  const reply = await h.post(
    loans.map((l) => draw(l)),
    key === undefined ? {} : { headers: { 'Idempotency-Key': key } },
  );
  expect(reply.status).toBe(204);
  const reads = proxy.arrivals.filter((a) => a.kind === 'read');
  const commits = proxy.arrivals.filter((a) => a.kind === 'commit');
  return { reads, commits, other: proxy.arrivals.length - reads.length - commits.length, maxInFlight: proxy.maxInFlight };
}

test('a cold partner cache: the partner and its stop-list row are read in the same round as the loans and draws', async () => {
  h.rebuild({}, h.settingsVia(proxy.port));
  const { reads, commits, other, maxInFlight } = await callsFor(3, 8);
  expect(reads).toHaveLength(2 + 2 * 3); // partner, its stop-list row, 3 loans, 3 draw rows
  const { partnersTable, stoppedClientsTable } = h.config.tables;
  expect(reads.filter((r) => [partnersTable, stoppedClientsTable].includes(r.table)).map((r) => r.table)).toEqual(
    expect.arrayContaining([partnersTable, stoppedClientsTable]),
  );
  expect(maxInFlight).toBe(reads.length); // all in flight at once: one round, the stop list's read included
  expect(commits).toHaveLength(1);
  expect(other).toBe(0);
});

test.each([1, 10, 100])('batch of %i with a warm partner cache: 2 reads per loan in one round, then one transaction', async (size) => {
  const { reads, commits, other, maxInFlight } = await callsFor(size, 2 * size);
  expect(reads).toHaveLength(2 * size); // the loan and today's draw row; no partner read
  expect(reads.every((r) => r.answeredBefore === reads[0].answeredBefore)).toBe(true); // none waited for another
  expect(maxInFlight).toBe(2 * size);
  expect(commits).toHaveLength(1);
  expect(commits[0].answeredBefore - reads[0].answeredBefore).toBe(2 * size); // the commit came after every read
  expect(other).toBe(0);
});

test('a keyed batch of 10: its key record read in the same round, then the key taken, then one transaction', async () => {
  const size = 10;
  const { reads, commits, other, maxInFlight } = await callsFor(size, 2 * size + 1, `calls-${process.pid}`);
  const takes = proxy.arrivals.filter((a) => a.kind === 'other');
  expect(reads).toHaveLength(2 * size + 1); // loans, today's draw rows, the key's record
  expect(maxInFlight).toBe(2 * size + 1);
  expect(other).toBe(1); // the insert that takes the key
  expect(takes[0].answeredBefore - reads[0].answeredBefore).toBe(2 * size + 1); // after every read
  expect(commits).toHaveLength(1);
  expect(commits[0].answeredBefore - reads[0].answeredBefore).toBe(2 * size + 2); // after the take
});

test('connections to storage are bounded, kept and shared by every table: concurrent batches of 100 again open none', async () => {
  h.rebuild({}, h.settingsVia(proxy.port)); // a new instance: no connection open yet
  const wave = async () => {
    const batches = await Promise.all(Array.from({ length: 4 }, () => Promise.all(Array.from({ length: 100 }, () => h.loan()))));
    const replies = await Promise.all(batches.map((loans) => h.post(loans.map((l) => draw(l)))));
    expect(replies.map((r) => r.status)).toEqual([204, 204, 204, 204]);
  };
  proxy.gate = 0;
  const before = proxy.connections.opened;
  await wave(); // 800 reads and 4 transactions at once, plus the partner read
  const first = proxy.connections.opened - before;
  expect(first).toBeGreaterThan(1);
  expect(first).toBeLessThanOrEqual(MAX_STORAGE_CONNECTIONS);
  await wave();
  expect(proxy.connections.opened - before).toBe(first); // every connection of the first wave was kept and reused
}, 90_000);
