/**
 * Table Storage may answer a query with no rows and a continuation (Microsoft Learn, "Query Timeout and
 * Pagination": "It is possible for a query to return no results but to still return a continuation
 * header"). Every point read (the client's stop-list and Partners rows, the loans, today's draws) follows
 * it within the read's deadline: a proxy in front of a real Azurite answers each read of one table with
 * such an empty page first, and the answer is the one storage's whole answer gives.
 */
import { putStop } from '../../dev/demoData';
import { CLIENT, Harness, draw } from '../support/harness';
import type { FaultProxy } from '../support/storageProxies';

let h: Harness;
let proxy: FaultProxy;
beforeAll(async () => {
  h = await Harness.start();
  proxy = await h.behindProxy();
});
afterAll(() => h.stop());

/** A new instance (nothing cached) reading through the proxy, whose reads of `table` first get an empty page. */
function emptyFirstPagesOf(table: string): void {
  h.rebuild({}, h.settingsVia(proxy.port));
  proxy.emptyFirstPages = new Set([table]);
  proxy.emptyPagesAnswered = 0;
}

test('the stop list: a stopped client is refused 401 and nothing is written, though its row came after an empty page', async () => {
  await putStop(h.table('stops'), CLIENT);
  try {
    emptyFirstPagesOf(h.config.tables.stoppedClientsTable);
    const loan = await h.loan();
    const reply = await h.post([draw(loan)]);
    expect(proxy.emptyPagesAnswered).toBe(1);
    expect(reply.status).toBe(401);
    expect(h.recordOf(reply)).toMatchObject({ outcome: 'Unauthorized', reason: 'ERR_AUTH_STOPPED_CLIENT', clientId: CLIENT });
    expect(await h.drawsFor(loan)).toEqual([]);
  } finally {
    await h.table('stops').deleteEntity(CLIENT, '');
  }
});

test("the Partners row: a known client's batch is recorded", async () => {
  emptyFirstPagesOf(h.config.tables.partnersTable);
  const loan = await h.loan();
  const reply = await h.post([draw(loan)]);
  expect(proxy.emptyPagesAnswered).toBe(1);
  expect(reply.status).toBe(204);
  expect(await h.drawsFor(loan)).toHaveLength(1);
});

test('the loans: each loan is found and the batch recorded', async () => {
  emptyFirstPagesOf(h.config.tables.loansTable);
  const loans = [await h.loan(), await h.loan()];
  const reply = await h.post(loans.map((l) => draw(l)));
  expect(proxy.emptyPagesAnswered).toBe(2);
  expect(reply.status).toBe(204);
  expect(await h.drawsFor(...loans)).toHaveLength(2);
});

test("today's draws: a loan drawn today is refused by the rules, beside the batch's other errors, and nothing more is written", async () => {
  const drawn = await h.loan();
  h.rebuild();
  expect((await h.post([draw(drawn)])).status).toBe(204);
  emptyFirstPagesOf(h.config.tables.drawsTable);
  const other = await h.loan();
  const reply = await h.post([draw(drawn), draw(other), draw(9_000_000_001)]);
  expect(proxy.emptyPagesAnswered).toBe(3);
  expect(reply.status).toBe(400);
  // Read whole, the rules see the row and name every element they refuse; the commit is never sent.
  expect((reply.body as { errors: Array<{ index: number; code: string }> }).errors.map((e) => [e.index, e.code])).toEqual([
    [0, 'PendingTransactionRequest'],
    [2, 'InvalidLoanNumber'],
  ]);
  expect(await h.drawsFor(drawn, other)).toHaveLength(1);
});
