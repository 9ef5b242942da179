/**
 * Signing keys held through an identity-provider outage (docs/contract.md §3.1). Once the key set is
 * older than its cache age and the provider is down, tokens signed by a held key are verified with the
 * held keys at once: the key set is reloaded in the background, at most once per back-off period, and no
 * request waits on that reload. A token whose kid is not held is the provider's to answer (502
 * ERR_IDP_JWKS while it is down). When the provider is back, a background reload picks up its new key.
 *
 * The provider is the Entra stand-in over HTTP (tests/support/entraProvider.ts), its key set either
 * hanging (the connection held open until the service's 5 s fetch timeout: what made requests wait) or
 * answering 503. The clock is the test's (tests/support/clock.ts), so cache age and back-off periods pass
 * without waiting; the service's own default timings are used.
 */
import { performance } from 'node:perf_hooks';
import { DEFAULT_PROVIDER_TIMINGS } from '../../lib/auth';
import { TENANT_TEMPLATE } from '../../lib/entraTokens';
import { holdTheClock, moveClockTo } from '../support/clock';
import { CLOUDS, startEntraProvider, type EntraProvider } from '../support/entraProvider';
import { CLIENT, Harness, TENANT, draw, type Reply } from '../support/harness';
import { expectGenericProblem } from '../support/problems';

const API_APP_ID = '6e1f2a3b-4c5d-4e6f-8a9b-0c1d2e3f4a5b';
const KEY_SET = 'discovery/v2.0/keys';
const { jwksMaxAgeMs, retryAfterFailureMs, fetchTimeoutMs } = DEFAULT_PROVIDER_TIMINGS;
/**
 * A request that waited on a key-set reload takes the fetch timeout (5 s) when the provider hangs. An
 * answer from held keys takes tens of milliseconds (storage included); the rest is headroom for a busy machine.
 */
const NOT_WAITING_MS = 1_000;

holdTheClock();

let provider: EntraProvider;
let h: Harness;
beforeAll(async () => {
  provider = await startEntraProvider(CLOUDS[0]);
  // A key the provider signs with but never publishes: its kid is never among the held keys.
  await provider.addKey({ kid: 'never-published', issuer: CLOUDS[0].v2Issuer(TENANT_TEMPLATE), publish: false });
  h = await Harness.start({
    AUTH_OPENID_CONFIG_URL: undefined,
    AUTH_AUTHORITY_HOST: provider.authorityHost,
    AUTH_TENANT_ID: TENANT,
    AUTH_AUDIENCE: API_APP_ID,
    AUTH_REQUIRED_ROLE: 'Draws.Submit',
  });
});
afterAll(() => Promise.allSettled([h.stop(), provider.stop()]));

const token = (kid?: string) => provider.v2Token(TENANT, API_APP_ID, CLIENT, kid === undefined ? {} : { kid });
const keySetFetches = () => provider.requests.filter((path) => path.endsWith(`/${KEY_SET}`)).length;
const lastFailure = () => h.deps.authenticator.lastRefreshFailure();

/** Posts a draw on a new loan with `bearer`; the time is the handler's alone, seeding the loan excluded. */
async function timedPost(bearer: string): Promise<{ reply: Reply; ms: number; loan: number }> {
  const loan = await h.loan();
  const started = performance.now();
  const reply = await h.post([draw(loan)], { token: bearer });
  return { reply, ms: performance.now() - started, loan };
}

/** 204 and recorded, answered without waiting on the provider. */
async function acceptedAtOnce(bearer: string): Promise<void> {
  const { reply, ms, loan } = await timedPost(bearer);
  expect(ms).toBeLessThan(NOT_WAITING_MS);
  expect(reply.status).toBe(204);
  expect(await h.drawsFor(loan)).toHaveLength(1);
}

/** An unknown kid while the provider is down: 502 ERR_IDP_JWKS (as before the fix), nothing written. */
async function providerFailureAtOnce(bearer: string): Promise<void> {
  const { reply, ms, loan } = await timedPost(bearer);
  expect(ms).toBeLessThan(NOT_WAITING_MS);
  expectGenericProblem(reply, 502);
  expect(h.recordOf(reply)).toMatchObject({ reason: 'ERR_IDP_JWKS' });
  expect(await h.drawsFor(loan)).toHaveLength(0);
}

/** Polls `condition` on real time (the held clock does not move) until it holds. */
async function until(condition: () => boolean, what: string, withinMs = 3 * fetchTimeoutMs): Promise<void> {
  const deadline = performance.now() + withinMs;
  while (!condition()) {
    if (performance.now() > deadline) throw new Error(`timed out waiting until ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe.each([
  ['hanging', () => provider.hanging],
  ['answering 503', () => provider.failing],
] as const)('the key set %s', (_mode, outage) => {
  beforeEach(() => h.rebuild({})); // a new instance: nothing held yet

  test('held keys verify at once across several back-off periods; a new key is picked up in the background once the provider is back', async () => {
    await acceptedAtOnce(await token()); // fetches metadata and keys
    const fetchedAt = Date.now();
    expect(keySetFetches()).toBeGreaterThan(0);

    outage().add(KEY_SET);
    try {
      let fetches = keySetFetches();
      for (let period = 0; period < 3; period += 1) {
        // Past the cache age, then one back-off period after each failed reload.
        const periodStart = fetchedAt + jwksMaxAgeMs + period * retryAfterFailureMs;
        moveClockTo(periodStart);
        // Requests at once: none waits; together they start one reload in the background.
        await Promise.all([token(), token(), token()].map(async (bearer) => acceptedAtOnce(await bearer)));
        await until(() => keySetFetches() === fetches + 1, 'the background reload reaches the provider');
        fetches += 1;
        // While that reload is still out (hanging: for the fetch timeout), nothing new is asked.
        await acceptedAtOnce(await token());
        // Its failure is caught and recorded (no unhandled rejection), and the back-off starts from it.
        await until(() => lastFailure()?.at === periodStart, 'the background reload has failed');
        expect(lastFailure()).toEqual({ code: 'ERR_IDP_JWKS', at: periodStart });
        // Within the back-off: held keys still verify; a kid that is not held is the provider's to answer.
        moveClockTo(periodStart + retryAfterFailureMs - 1);
        await acceptedAtOnce(await token());
        await providerFailureAtOnce(await token('never-published'));
        expect(keySetFetches()).toBe(fetches);
      }

      // The provider is back, with a new signing key published beside the old one.
      outage().delete(KEY_SET);
      await provider.addKey({ kid: 'entra-key-2', issuer: CLOUDS[0].v2Issuer(TENANT_TEMPLATE) });
      const backAt = fetchedAt + jwksMaxAgeMs + 3 * retryAfterFailureMs;
      moveClockTo(backAt);
      // A token of a held key is answered from the held set and starts the reload in the background.
      await acceptedAtOnce(await token());
      await until(() => keySetFetches() === fetches + 1, 'the background reload reaches the provider');
      // The provider goes down again: the new kid is accepted from what the background reload brought,
      // without the provider being asked again.
      outage().add(KEY_SET);
      await acceptedAtOnce(await token('entra-key-2'));
      await acceptedAtOnce(await token());
      expect(keySetFetches()).toBe(fetches + 1);
      expect(lastFailure()?.at).toBeLessThan(backAt);
    } finally {
      outage().delete(KEY_SET);
      provider.removeKey('entra-key-2');
    }
  }, 60_000);
});
