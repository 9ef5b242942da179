/**
 * Storage that stops answering, at a proxy in front of a real Azurite: the service answers 502 at
 * each operation's deadline and closes the connections of the calls it gave up on then, so a stall
 * cannot take the instance's pool of storage connections (MAX_STORAGE_CONNECTIONS) with it. A deadline
 * that falls due while this process is held up, after storage answered, is still answered truthfully.
 */
import { Harness, UNHURRIED_TIMEOUTS, draw, type Reply } from '../support/harness';
import { watchStalls } from '../support/eventLoopStall';
import { expectGenericProblem, expectOutcomeUnknown } from '../support/problems';
import { RETRY_AFTER_SECONDS } from '../../lib/problem';
import type { FaultProxy, UnansweredRequest } from '../support/storageProxies';
import { MAX_STORAGE_CONNECTIONS } from '../../lib/store';

/**
 * Allowance for timers and the event loop; on top of it, each check allows for the time this process was
 * held up meanwhile (watchStalls), which a busy machine causes and the service cannot help.
 */
const SLACK_MS = 500;

let h: Harness;
let proxy: FaultProxy;
beforeAll(async () => {
  h = await Harness.start();
  proxy = await h.behindProxy();
  // One request first, so no measured one pays for code paths' first use (compiling, loading).
  expect((await h.post([draw(await h.loan())])).status).toBe(204);
});
afterEach(() => {
  proxy.mode = 'pass';
});
afterAll(() => h.stop());

async function until(done: () => boolean, ms: number): Promise<void> {
  const end = Date.now() + ms;
  while (!done() && Date.now() < end) await new Promise((resolve) => setTimeout(resolve, 20));
}

/**
 * Posts, and returns the reply with when it came, the requests the proxy held meanwhile, and the slack the
 * checks of both allow: SLACK_MS and how long this process was held up until the held requests closed.
 */
async function postHeld(body: unknown): Promise<{ reply: Reply; answeredAt: number; held: UnansweredRequest[]; slackMs: number }> {
  const mark = proxy.unanswered.length;
  const stalls = watchStalls();
  try {
    const reply = await h.post(body);
    const answeredAt = Date.now();
    const held = proxy.unanswered.slice(mark);
    await until(() => held.every((r) => r.closedAt !== undefined), 2_000); // the close reaches the proxy a moment later
    return { reply, answeredAt, held, slackMs: SLACK_MS + stalls.heldUpMs() };
  } finally {
    stalls.stop();
  }
}

/** How long after its arrival each held request's connection was closed by the service (Infinity: still open). */
const closedAfter = (held: UnansweredRequest[]) => held.map((r) => (r.closedAt === undefined ? Infinity : r.closedAt - r.arrivedAt));

test('a commit storage never answers: 502 at the commit deadline, its connection closed then, nothing written', async () => {
  const commitMs = 600;
  h.rebuild({ timeouts: { ...UNHURRIED_TIMEOUTS, commitMs } }, h.settingsVia(proxy.port)); // the reads are answered: their bounds are not tested here
  const loans = [await h.loan(), await h.loan()];
  proxy.mode = 'holdCommit';
  const { reply, answeredAt, held, slackMs } = await postHeld(loans.map((l) => draw(l)));

  expectOutcomeUnknown(reply);
  expect(h.recordOf(reply)).toMatchObject({ reason: 'CommitOutcomeUnknown', reasonDetail: 'commitDraws ERR_STORAGE_TIMEOUT' });
  expect(held.map((r) => r.kind)).toEqual(['commit']);
  expect(h.recordOf(reply)?.durations.commit).toBeLessThan(commitMs + slackMs);
  expect(answeredAt - held[0].arrivedAt).toBeLessThan(commitMs + slackMs);
  expect(closedAfter(held)[0]).toBeGreaterThanOrEqual(commitMs - 50);
  expect(closedAfter(held)[0]).toBeLessThan(commitMs + slackMs);
  proxy.mode = 'pass';
  expect(await h.drawsFor(...loans)).toHaveLength(0);
});

test('storage records the commit and answers while this process is held up past the deadline: outcome unknown, and a retry with the key finds the batch', async () => {
  // A starved machine: the deadline falls due before the service reads storage's answer. The service cannot
  // know what the answer said, so it must not say nothing was submitted (docs/contract.md §2.1).
  const commitMs = 300;
  h.rebuild({ timeouts: { ...UNHURRIED_TIMEOUTS, commitMs } }, h.settingsVia(proxy.port));
  const loans = [await h.loan(), await h.loan()];
  const keyed = { headers: { 'Idempotency-Key': `held-up-${process.pid}-${loans[0]}` } };
  proxy.mode = 'stallOnCommitAnswer';
  proxy.stallMs = commitMs + 200;
  const reply = await h.post(
    loans.map((l) => draw(l)),
    keyed,
  );

  expectOutcomeUnknown(reply, RETRY_AFTER_SECONDS); // a keyed request: its resend under the key is safe

  expect(h.recordOf(reply)).toMatchObject({ reason: 'CommitOutcomeUnknown', reasonDetail: 'commitDraws ERR_STORAGE_TIMEOUT' });
  expect((await h.drawsFor(...loans)).map((r) => r.RequestId)).toEqual([reply.headers['x-request-id'], reply.headers['x-request-id']]);
  proxy.mode = 'pass';
  const retry = await h.post(
    loans.map((l) => draw(l)),
    keyed,
  );
  expect(retry.status).toBe(204);
  expect(retry.headers['idempotent-replay']).toBe('true');
});

test("reads storage never answers: 502 at the read deadline, every read's connection closed then", async () => {
  const readMs = 600;
  // Each attempt's own bound is longer than the operation's: the operation's deadline must end them.
  h.rebuild({ timeouts: { attemptMs: 5_000, readMs, commitMs: 5_000 } }, h.settingsVia(proxy.port));
  const loan = await h.loan();
  proxy.mode = 'blackhole';
  const { reply, answeredAt, held, slackMs } = await postHeld([draw(loan)]);

  expectGenericProblem(reply, 502);
  expect(h.recordOf(reply)?.reason).toBe('ERR_STORAGE_TIMEOUT');
  // the partner and its stop-list row (a new instance), the loan, today's draw row
  expect(held.map((r) => r.kind)).toEqual(['read', 'read', 'read', 'read']);
  expect(h.recordOf(reply)?.durations.read).toBeLessThan(readMs + slackMs);
  expect(answeredAt - Math.min(...held.map((r) => r.arrivedAt))).toBeLessThan(readMs + slackMs);
  for (const ms of closedAfter(held)) expect(ms).toBeLessThan(readMs + slackMs);
  proxy.mode = 'pass';
  expect(await h.drawsFor(loan)).toHaveLength(0);
});

test('an HTTP attempt storage never answers is ended by the per-attempt bound, inside a longer read deadline', async () => {
  const attemptMs = 400;
  h.rebuild({ timeouts: { attemptMs, readMs: 5_000, commitMs: 5_000 } }, h.settingsVia(proxy.port));
  const loan = await h.loan();
  proxy.mode = 'blackhole';
  const { reply, held, slackMs } = await postHeld([draw(loan)]);

  expectGenericProblem(reply, 502);
  expect(h.recordOf(reply)?.reason).toBe('ERR_STORAGE_TIMEOUT');
  expect(held.length).toBeGreaterThanOrEqual(3);
  for (const ms of closedAfter(held)) expect(ms).toBeLessThan(attemptMs + slackMs);
});

test('a stall longer than the pool: more held commits than MAX_STORAGE_CONNECTIONS, and the next request is served at once', async () => {
  // The reads are answered: only the commit's bound is tested, and a starved read must not end a request before its commit.
  h.rebuild({ timeouts: { ...UNHURRIED_TIMEOUTS, commitMs: 400 } }, h.settingsVia(proxy.port));
  expect((await h.post([draw(await h.loan())])).status).toBe(204); // warms the partner cache
  const stalled = await h.loan();
  const commitsBefore = proxy.counts.commits;
  proxy.mode = 'holdCommit';
  // Waves of requests, each reading no draw yet (none lands) and committing: every commit reaches
  // storage and is held. Were their connections kept, the waves would spend the pool, and the next
  // request's reads would wait for a connection until their bound.
  const waves = 8;
  const perWave = Math.ceil((MAX_STORAGE_CONNECTIONS + 8) / waves);
  const failed: (string | undefined)[] = [];
  for (let wave = 0; wave < waves; wave += 1) {
    const replies = await Promise.all(Array.from({ length: perWave }, () => h.post([draw(stalled)])));
    for (const reply of replies) {
      expectOutcomeUnknown(reply);
      failed.push(h.recordOf(reply)?.reasonDetail);
    }
  }
  const commitsHeld = proxy.counts.commits - commitsBefore;

  proxy.mode = 'pass';
  const fresh = await h.loan();
  const stalls = watchStalls();
  const start = Date.now();
  const next = await h.post([draw(fresh)]);
  const tookMs = Date.now() - start;
  stalls.stop();
  expect(next.status).toBe(204);
  expect(tookMs).toBeLessThan(1_000 + stalls.heldUpMs());

  expect(new Set(failed)).toEqual(new Set(['commitDraws ERR_STORAGE_TIMEOUT'])); // every one reached its commit: none waited for a connection
  expect(waves * perWave).toBeGreaterThan(MAX_STORAGE_CONNECTIONS);
  expect(commitsHeld).toBe(waves * perWave);
  await until(() => proxy.inFlight === 0, 2_000);
  expect(proxy.inFlight).toBe(0); // every held commit's connection was closed by the service
  expect(await h.drawsFor(stalled)).toHaveLength(0);
}, 90_000);
