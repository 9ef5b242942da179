/**
 * The service's housekeeping of IdempotencyKeys (lib/housekeeping.ts, docs/contract.md §4.1) against a real
 * Azurite: the rows the service wrote more than KEY_ROWS_KEPT_MS ago go, the others stay, and a row written
 * again after it was listed (a take-over of its key) is never removed. Concurrent takes and take-overs are in
 * the generated histories (tests/support/histories.ts).
 */
import { odata } from '@azure/data-tables';
import { tableClient } from '../../dev/demoData';
import { removeOldKeyRows } from '../../lib/housekeeping';
import { KEY_LIFETIME_MS, KEY_ROWS_KEPT_MS, keyRecordId } from '../../lib/idempotency';
import { Harness, PARTNER, draw } from '../support/harness';

let h: Harness;
let clock = Date.parse('2031-05-01T09:00:00Z');
const now = () => new Date(clock);
beforeAll(async () => {
  h = await Harness.start();
  h.rebuild({ now });
});
afterAll(() => h.stop());

const keyed = (key: string) => ({ headers: { 'Idempotency-Key': key } });
let keys = 0;
const newKey = () => `housekept-${process.pid}-${++keys}`;

/** The rows of a partner's key: RowKey "" (its holder) and one per batch under it. */
async function rowsOf(key: string): Promise<string[]> {
  const rows: string[] = [];
  const table = tableClient(h.azurite.connectionString, h.config.tables.idempotencyTable);
  for await (const row of table.listEntities({ queryOptions: { filter: odata`PartitionKey eq ${keyRecordId(PARTNER, key)}` } }))
    rows.push(row.rowKey === '' ? 'holder' : String(row.State));
  return rows.sort();
}

test("rows written more than the key's memory and an hour ago go, taken and refused alike; younger ones stay", async () => {
  const taken = newKey();
  const refused = newKey();
  const young = newKey();
  expect((await h.post([draw(await h.loan())], keyed(taken))).status).toBe(204);
  expect((await h.post([draw(await h.loan({ availableCredit: 1 }))], keyed(refused))).status).toBe(400);
  clock += KEY_ROWS_KEPT_MS - 60_000;
  expect((await h.post([draw(await h.loan())], keyed(young))).status).toBe(204);
  expect([await rowsOf(taken), await rowsOf(refused), await rowsOf(young)]).toEqual([['Taken', 'holder'], ['Refused'], ['Taken', 'holder']]);

  clock += 60_000; // exactly KEY_ROWS_KEPT_MS after the first two: kept, as long as that
  expect(await removeOldKeyRows(h.deps.store, now)).toEqual({ listed: 0, removed: 0, changed: 0, unfinished: false });
  clock += 1;
  const result = await removeOldKeyRows(h.deps.store, now);
  expect(result).toEqual({ listed: 3, removed: 3, changed: 0, unfinished: false });
  expect([await rowsOf(taken), await rowsOf(refused), await rowsOf(young)]).toEqual([[], [], ['Taken', 'holder']]);
  // Nothing left to do an hour later.
  clock += 60 * 60_000;
  expect(await removeOldKeyRows(h.deps.store, now)).toEqual({ listed: 0, removed: 0, changed: 0, unfinished: false });
});

test('a row written again after it was listed (its key taken over) is kept: only the row judged old is removed', async () => {
  const key = newKey();
  expect((await h.post([draw(await h.loan())], keyed(key))).status).toBe(204);
  clock += KEY_ROWS_KEPT_MS;
  const listed = await h.deps.store.oldKeyRows(new Date(clock - KEY_ROWS_KEPT_MS + 1));
  if (!listed.ok) throw new Error('listing failed');
  const ofKey = listed.value.rows.filter((r) => r.partitionKey === keyRecordId(PARTNER, key));
  expect(ofKey).toHaveLength(2);
  // Meanwhile the partner sends another batch under the key (past the first one's grace: a new submission).
  expect((await h.post([draw(await h.loan())], keyed(key))).status).toBe(204);
  const results = await Promise.all(ofKey.map((row) => h.deps.store.removeKeyRow(row)));
  // The holder was replaced (changed, kept); the first batch's own row was not rewritten (removed).
  expect(results.map((r, i) => [ofKey[i].rowKey === '' ? 'holder' : 'first batch', r.ok ? 'removed' : 'changed' in r ? 'changed' : 'failed'])).toEqual(
    expect.arrayContaining([
      ['holder', 'changed'],
      ['first batch', 'removed'],
    ]),
  );
  expect(await rowsOf(key)).toEqual(['Taken', 'holder']);
  // The resend that lost its answer is still answered from the kept rows: the replay, nothing recorded twice.
  const again = await h.post([draw(Number((await rowsOfLoans(key))[0]))], keyed(key));
  expect(again.status).toBe(204);
});

/** The loans of the batch holding a key, as its record names them. */
async function rowsOfLoans(key: string): Promise<string[]> {
  const table = tableClient(h.azurite.connectionString, h.config.tables.idempotencyTable);
  const holder = await table.getEntity<{ LoanNumbers: string }>(keyRecordId(PARTNER, key), '');
  return holder.LoanNumbers.split(',');
}

test('a run stops at its bounds and leaves the rest for the next; a run storage fails stops at the failure, having removed nothing it could not', async () => {
  const keysMade = [newKey(), newKey()];
  for (const key of keysMade) expect((await h.post([draw(await h.loan())], keyed(key))).status).toBe(204);
  clock += KEY_ROWS_KEPT_MS + KEY_LIFETIME_MS;
  const first = await removeOldKeyRows(h.deps.store, now, { ms: 60_000, rows: 1 });
  expect(first).toMatchObject({ removed: 1, unfinished: true });

  const proxy = await h.behindProxy({ now });
  proxy.mode = 'busy';
  const failed = await removeOldKeyRows(h.deps.store, now);
  expect(failed).toMatchObject({ removed: 0, unfinished: true, failure: { code: 'ERR_STORAGE_REJECTED', operation: 'listOldKeyRows', status: 503 } });
  proxy.mode = 'pass';
  // The rest: the other key's rows, and the earlier tests' rows, old by now too.
  const rest = await removeOldKeyRows(h.deps.store, now);
  expect(rest).toMatchObject({ changed: 0, unfinished: false });
  expect(rest.removed).toBe(rest.listed);
  for (const key of keysMade) expect(await rowsOf(key)).toEqual([]);
});
