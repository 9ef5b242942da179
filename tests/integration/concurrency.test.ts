/**
 * One draw per loan per day is enforced by the store's entity-group transaction, not by the
 * read: concurrent and overlapping batches, and a batch that loses a race after its reads.
 */
import { Harness, OTHER_PARTNER, draw, todayUtc } from '../support/harness';
import type { BatchState, StoreResult } from '../../lib/store';

let h: Harness;
beforeAll(async () => {
  h = await Harness.start();
});
afterAll(() => h.stop());

test('20 concurrent posts for one loan: exactly one 204, the rest Pending Transaction Request, one row', async () => {
  const loan = await h.loan();
  const token = await h.token();
  const replies = await Promise.all(Array.from({ length: 20 }, (_, i) => h.post([draw(loan, 10 + i)], { token })));
  const statuses = replies.map((r) => r.status).sort();
  expect(statuses).toEqual([204, ...Array(19).fill(400)]);
  for (const reply of replies.filter((r) => r.status === 400)) {
    expect(reply.body.errors).toEqual([
      expect.objectContaining({ index: 0, loanNumber: loan, code: 'PendingTransactionRequest', error: 'Pending Transaction Request' }),
    ]);
  }
  const rows = await h.drawsFor(loan);
  expect(rows).toHaveLength(1);
  const winner = replies.find((r) => r.status === 204);
  expect(rows[0].RequestId).toBe(winner?.headers['x-request-id']);
});

test('overlapping batches race: one is recorded whole, the other not at all', async () => {
  const token = await h.token();
  for (let round = 0; round < 5; round++) {
    const [a, shared, b] = [await h.loan(), await h.loan(), await h.loan()];
    const [first, second] = await Promise.all([h.post([draw(a), draw(shared)], { token }), h.post([draw(shared), draw(b)], { token })]);
    expect([first.status, second.status].sort()).toEqual([204, 400]);
    const loser = first.status === 400 ? first : second;
    const loserIndex = first.status === 400 ? 1 : 0;
    expect(loser.body.errors).toEqual([expect.objectContaining({ index: loserIndex, loanNumber: shared, code: 'PendingTransactionRequest' })]);
    const stored = (await h.drawsFor(a, shared, b)).map((r) => Number(r.rowKey)).sort();
    expect(stored).toEqual((first.status === 204 ? [a, shared] : [shared, b]).sort());
  }
});

test('a batch that loses the race after its reads: 400 for that element, and none of its rows written', async () => {
  const loans = [await h.loan(), await h.loan(), await h.loan()];
  const store = h.deps.store;
  const realRead = store.readBatchState.bind(store);
  // Another request commits loan[1] between this request's reads and its commit.
  store.readBatchState = async (day: string, loanNumbers: readonly string[]): Promise<StoreResult<BatchState>> => {
    const state = await realRead(day, loanNumbers);
    await h.table('draws').createEntity({ partitionKey: day, rowKey: String(loans[1]), RequestId: 'competitor', PartnerId: OTHER_PARTNER });
    return state;
  };
  try {
    const reply = await h.post(loans.map((l) => draw(l)));
    expect(reply.status).toBe(400);
    expect(reply.body.detail).toBe('1 of 3 draw requests was rejected; none was submitted.');
    expect(reply.body.errors).toEqual([
      {
        index: 1,
        loanNumber: loans[1],
        error: 'Pending Transaction Request',
        code: 'PendingTransactionRequest',
        pointer: '/1/loanNumber',
        detail: 'a draw request for this loan was already submitted today',
      },
    ]);
  } finally {
    store.readBatchState = realRead;
  }
  const rows = await h.drawsFor(...loans);
  expect(rows.map((r) => [r.partitionKey, Number(r.rowKey), r.RequestId])).toEqual([[todayUtc(), loans[1], 'competitor']]);
});
