/**
 * An instance answers every request on one event loop, so a request that takes seconds to read
 * delays every other caller's request on that instance. While one caller sends worst-case requests
 * (tests/support/hostileBodies.ts) back to back, another partner's ordinary draws must still be answered,
 * and about as fast as alone; each worst-case request is refused, and none writes anything.
 */
import { hostileRequests, ordinaryBody, type HostileRequest } from '../support/hostileBodies';
import { Harness, OTHER_CLIENT, OTHER_PARTNER, nextLoanNumber } from '../support/harness';

/** Ordinary draws per phase (alone, then attacked): the p99 of 150 is their second slowest. */
const ORDINARY = 150;
/** Warm-up draws first: the first requests of an instance read the partner and compile the code. */
const WARM_UP = 20;
/**
 * Header attacks as long as the Functions host in Azure (Kestrel) lets through (32 KiB of headers);
 * the handler is called directly here, so no HTTP server of this process limits them.
 */
const HEADER_CHARS = 32 * 1024;

let h: Harness;
beforeAll(async () => {
  h = await Harness.start();
});
afterAll(() => h.stop());

const p99 = (latencies: readonly number[]) => [...latencies].sort((a, b) => a - b)[Math.floor(0.99 * latencies.length)];

test("another partner's draws answer 204 about as fast as alone while one caller sends worst-case requests back to back", async () => {
  const ordinaryToken = await h.token({ azp: OTHER_CLIENT, sub: OTHER_CLIENT });
  const loans = await Promise.all(Array.from({ length: WARM_UP + 2 * ORDINARY }, () => h.loan({ partnerId: OTHER_PARTNER })));
  const [warmUp, alone, attacked] = [loans.slice(0, WARM_UP), loans.slice(WARM_UP, WARM_UP + ORDINARY), loans.slice(WARM_UP + ORDINARY)];

  /** One ordinary single draw after another: each answer's status and latency. */
  const ordinaryDraws = async (loanNumbers: readonly number[]) => {
    const answers: { status: number; ms: number }[] = [];
    for (const loan of loanNumbers) {
      const start = performance.now();
      const { status } = await h.post(ordinaryBody([loan]), { token: ordinaryToken });
      answers.push({ status, ms: performance.now() - start });
    }
    return answers;
  };

  // The attacker's loan exists nowhere (a body whose shape passes is refused by the draw rules). Beside
  // its own worst cases, callers that must get 401 before their body is read: a token that fails, and
  // a client that is not a partner (refused, then remembered as refused), each with the worst body.
  const worstCases = hostileRequests(nextLoanNumber(), HEADER_CHARS);
  const worstBody = worstCases[0].body;
  const stream: (Omit<HostileRequest, 'expected'> & { token?: string; expected: { status: number; code?: string } })[] = [
    ...worstCases,
    { name: 'expired token', body: worstBody, token: await h.token({ exp: Math.floor(Date.now() / 1000) - 3600 }), expected: { status: 401 } },
    { name: 'not a partner', body: worstBody, token: await h.token({ azp: 'not-a-partner', sub: 'not-a-partner' }), expected: { status: 401 } },
  ];

  await ordinaryDraws(warmUp);
  const quiet = await ordinaryDraws(alone);

  let attacking = true;
  const hostile: { name: string; status: number; code?: string; expected: { status: number; code?: string } }[] = [];
  const attacker = (async () => {
    // One request at a time, at least one of each, until the ordinary draws are done. Over HTTP an
    // answer reaches the caller, and its next request arrives, no sooner than the event loop's next turn.
    for (let i = 0; attacking || i < stream.length; i++) {
      const { name, body, headers, token, expected } = stream[i % stream.length];
      const reply = await h.post(body, { headers, token });
      const problem = reply.body as { errors?: { code: string }[] } | undefined;
      hostile.push({ name, status: reply.status, code: problem?.errors?.[0]?.code, expected });
      await new Promise((resolve) => setImmediate(resolve));
    }
  })();
  const underAttack = await ordinaryDraws(attacked);
  attacking = false;
  await attacker;

  // Every ordinary draw was accepted: none waited out the storage deadline (502) behind the attacker.
  expect([...quiet, ...underAttack].filter((a) => a.status !== 204)).toEqual([]);
  // The bound: the attacker sends one request at a time, and within the limits each is read in linear
  // time (1.5–15 ms of parsing for 256 KiB here, 26,000 keys the most); an ordinary draw waits behind
  // at most one of them at each of its turns of the event loop, and its storage calls queue behind the
  // attacker's reads. Measured on 2 cores in five runs: p99 alone 24–63 ms, under attack 98–185 ms. 4× the p99
  // alone plus 250 ms leaves room for a loaded machine (the p99 alone grows with it) and is far under
  // the 5 s storage deadline. Without the limits one amount 1.000…0001 held the event loop for 90 s,
  // and the draws waiting behind it were answered 502.
  const bound = 4 * p99(quiet.map((a) => a.ms)) + 250;
  expect(p99(underAttack.map((a) => a.ms))).toBeLessThan(bound);

  expect(new Set(hostile.map((r) => r.name)).size).toBe(stream.length);
  for (const { name, status, code, expected } of hostile) {
    expect({ name, status, code }).toEqual({ name, status: expected.status, code: expected.code });
  }
  // What is stored: each ordinary draw, and nothing from any worst-case request.
  const stored = (await h.draws()).map((row) => Number(row.rowKey)).sort((a, b) => a - b);
  expect(stored).toEqual([...loans].sort((a, b) => a - b));
});
