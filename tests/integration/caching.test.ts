/**
 * What an instance keeps between requests: the partner lookup (≤ 5 minutes), the provider's
 * metadata (refreshed after 24 h) and keys (held through a provider outage).
 */
import { putPartner, putStop } from '../../dev/demoData';
import { startOidcProvider, type OidcProvider } from '../../dev/oidcProvider';
import { AUDIENCE, CLIENT, Harness, PARTNER, draw } from '../support/harness';

/** A clock the test moves by hand; it drives the partner cache, metadata age and business day. */
function manualClock() {
  let t = Date.now();
  return { now: () => new Date(t), advance: (ms: number) => (t += ms) };
}

describe('the partner lookup is cached for at most five minutes', () => {
  const clock = manualClock();
  let h: Harness;
  beforeAll(async () => {
    h = await Harness.start({}, { now: clock.now });
  });
  afterAll(() => h.stop());

  test('a deactivated partner is refused once the cached answer is older than 5 minutes', async () => {
    expect((await h.post([draw(await h.loan())])).status).toBe(204);
    await putPartner(h.table('partners'), { clientId: CLIENT, partnerId: PARTNER, active: false });

    clock.advance(4 * 60 * 1000 + 59 * 1000);
    expect((await h.post([draw(await h.loan())])).status).toBe(204); // still the cached answer

    clock.advance(2 * 1000);
    const refused = await h.post([draw(await h.loan())]);
    expect(refused.status).toBe(401);
    expect(h.logs.join('\n')).toContain(`unauthorized: ERR_AUTH_INACTIVE_CLIENT client ${CLIENT}`);

    await putPartner(h.table('partners'), { clientId: CLIENT, partnerId: PARTNER, active: true });
    clock.advance(5 * 60 * 1000 + 1000);
    expect((await h.post([draw(await h.loan())])).status).toBe(204);
  });

  test('a client on the stop list is refused once the cached answer is older than 5 minutes, its Partners row untouched, and until the stop is lifted', async () => {
    h.rebuild({ now: clock.now });
    expect((await h.post([draw(await h.loan())])).status).toBe(204);
    await putStop(h.table('stops'), CLIENT); // what scripts/stopClient.cjs inserts
    const loan = await h.loan();

    clock.advance(4 * 60 * 1000 + 59 * 1000);
    expect((await h.post([draw(await h.loan())])).status).toBe(204); // still the cached answer

    clock.advance(2 * 1000);
    const refused = await h.post([draw(loan)]);
    expect(refused.status).toBe(401);
    expect(h.recordOf(refused)).toMatchObject({ outcome: 'Unauthorized', reason: 'ERR_AUTH_STOPPED_CLIENT', clientId: CLIENT });
    expect((await h.table('partners').getEntity(CLIENT, '')).Active).not.toBe(false); // the stop is not a change of the row
    expect(await h.drawsFor(loan)).toEqual([]);
    // An active Partners row written meanwhile (a deployment) does not undo it: only removing the stop does.
    await putPartner(h.table('partners'), { clientId: CLIENT, partnerId: PARTNER, active: true });
    clock.advance(5 * 60 * 1000 + 1000);
    expect((await h.post([draw(loan)])).status).toBe(401);

    await h.table('stops').deleteEntity(CLIENT, ''); // the deployment lifting it (docs/deploy.md)
    clock.advance(5 * 60 * 1000 + 1000);
    expect((await h.post([draw(loan)])).status).toBe(204);
  });

  test('a storage failure during the lookup is not cached: the next request asks again', async () => {
    h.rebuild({ now: clock.now });
    await h.stopStorage();
    const failed = await h.post([draw(1)]);
    await h.startStorage();
    await h.seedBasics(); // in-memory storage came back empty
    expect(failed.status).toBe(502);
    expect((await h.post([draw(await h.loan())])).status).toBe(204);
  });
});

describe('provider metadata and keys', () => {
  const mint = (provider: OidcProvider) =>
    provider.server.issuer.buildToken({ scopesOrTransform: (_h, p) => Object.assign(p, { aud: AUDIENCE, azp: CLIENT }) });

  test('keys older than their cache age still verify tokens while the provider is down, without waiting on it', async () => {
    const provider = await startOidcProvider({ audience: AUDIENCE });
    const h = await Harness.start(
      { AUTH_OPENID_CONFIG_URL: provider.openIdConfigUrl },
      { providerTimings: { fetchTimeoutMs: 2_000, metadataMaxAgeMs: 24 * 3600_000, jwksMaxAgeMs: 200, jwksCooldownMs: 100, retryAfterFailureMs: 60_000 } },
    );
    try {
      expect((await h.post([draw(await h.loan())], { token: await mint(provider) })).status).toBe(204);
      const token = await mint(provider);
      await provider.stop();
      await new Promise((resolve) => setTimeout(resolve, 300)); // the key set is now stale: jose will try to refetch
      expect((await h.post([draw(await h.loan())], { token })).status).toBe(204);
      const started = Date.now();
      expect((await h.post([draw(await h.loan())], { token })).status).toBe(204);
      expect(Date.now() - started).toBeLessThan(1_000); // backing off: the provider is not asked again
    } finally {
      await Promise.allSettled([h.stop(), provider.stop()]);
    }
  });

  test('metadata older than 24 h is refreshed in the background; while the provider is down, the held metadata serves', async () => {
    const clock = manualClock();
    const provider = await startOidcProvider({ audience: AUDIENCE });
    const h = await Harness.start({ AUTH_OPENID_CONFIG_URL: provider.openIdConfigUrl }, { now: clock.now });
    let metadataFetches = 0;
    const countingFetch = globalThis.fetch;
    globalThis.fetch = (input: Parameters<typeof fetch>[0], init?: RequestInit) => {
      const url = typeof input === 'string' ? input : input instanceof URL ? input.href : input.url;
      if (url.endsWith('/.well-known/openid-configuration')) metadataFetches += 1;
      return countingFetch(input, init);
    };
    try {
      expect((await h.post([draw(await h.loan())], { token: await mint(provider) })).status).toBe(204);
      expect(metadataFetches).toBe(1);
      clock.advance(23 * 3600_000);
      expect((await h.post([draw(await h.loan())], { token: await mint(provider) })).status).toBe(204);
      expect(metadataFetches).toBe(1); // younger than 24 h: not fetched again

      const token = await mint(provider);
      await provider.stop();
      clock.advance(2 * 3600_000);
      expect((await h.post([draw(await h.loan())], { token })).status).toBe(204); // stale, refresh fails, held metadata serves
      await new Promise((resolve) => setTimeout(resolve, 100));
      expect(metadataFetches).toBe(2);
      expect((await h.post([draw(await h.loan())], { token })).status).toBe(204);
      expect(metadataFetches).toBe(2); // backing off after the failed refresh
    } finally {
      globalThis.fetch = countingFetch;
      await Promise.allSettled([h.stop(), provider.stop()]);
    }
  });
});
