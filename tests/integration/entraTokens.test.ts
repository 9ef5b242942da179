/**
 * Tokens as Microsoft Entra ID issues them (docs/contract.md §3), against a local provider laid out as
 * Entra in each cloud (tests/support/entraProvider.ts): the service is configured as the deployment
 * configures it (authority host and tenant, no issuers pinned), learns the v2 and v1 issuers from the
 * tenant's metadata, holds each signing key to the issuer it is published for, accepts the App ID URI
 * forms a v1 token carries, and takes a stated app-only posture.
 */
import { loadConfig, type Settings } from '../../lib/config';
import { Authenticator, DEFAULT_PROVIDER_TIMINGS } from '../../lib/auth';
import { holdTheClock, moveClockTo, releaseTheClock } from '../support/clock';
import { CLOUDS, DEFAULT_KID, startEntraProvider, type EntraProvider } from '../support/entraProvider';
import { CLIENT, Harness, TENANT, draw } from '../support/harness';
import { expectGenericProblem } from '../support/problems';
import { expectAccepted, expectRefused } from '../support/authReplies';

/** The API's application (client) id, what v2 tokens carry in `aud`, and its App ID URI, what v1 tokens carry. */
const API_APP_ID = '6e1f2a3b-4c5d-4e6f-8a9b-0c1d2e3f4a5b';
const APP_ID_URI = `api://${API_APP_ID}`;
const OTHER_TENANT = '99999999-8888-4777-8666-555555555555';

let h: Harness;
beforeAll(async () => {
  h = await Harness.start();
});
afterAll(() => h.stop());

/** The service as Bicep configures it for this provider's cloud, with `extra` settings on top. */
function configureFor(provider: EntraProvider, extra: Settings = {}): void {
  h.rebuild(
    {},
    {
      ...h.settings,
      AUTH_OPENID_CONFIG_URL: undefined,
      AUTH_AUTHORITY_HOST: provider.authorityHost,
      AUTH_TENANT_ID: TENANT,
      AUTH_AUDIENCE: `${API_APP_ID},${APP_ID_URI}`,
      AUTH_REQUIRED_ROLE: 'Draws.Submit',
      ...extra,
    },
  );
}

const accepted = (token: string) => expectAccepted(h, token);
const refused = (token: string, reason: string) => expectRefused(h, `Bearer ${token}`, reason);

describe.each(CLOUDS.map((cloud) => [cloud.name, cloud] as const))('in %s', (_name, cloud) => {
  let provider: EntraProvider;
  beforeAll(async () => {
    provider = await startEntraProvider(cloud);
  });
  afterAll(() => provider.stop());
  beforeEach(() => configureFor(provider));

  test("a v2 token is accepted, with the issuer learnt from the tenant's v2 metadata", async () => {
    await accepted(await provider.v2Token(TENANT, API_APP_ID, CLIENT));
    expect(provider.requests).toContain(`/${TENANT}/v2.0/.well-known/openid-configuration`);
  });

  test("a v1 token is accepted, with the issuer learnt from the tenant's v1 metadata", async () => {
    await accepted(await provider.v1Token(TENANT, APP_ID_URI, CLIENT));
    expect(provider.requests).toContain(`/${TENANT}/.well-known/openid-configuration`);
  });

  test('a v1 token for the App ID URI with a trailing slash is accepted', async () => {
    await accepted(await provider.v1Token(TENANT, `${APP_ID_URI}/`, CLIENT));
  });

  test('an upper-case tenant setting accepts both versions (Entra writes the tenant in lower case)', async () => {
    configureFor(provider, { AUTH_TENANT_ID: TENANT.toUpperCase() });
    await accepted(await provider.v2Token(TENANT, API_APP_ID, CLIENT));
    await accepted(await provider.v1Token(TENANT, APP_ID_URI, CLIENT));
  });

  const others = CLOUDS.filter((other) => other !== cloud);
  test.each(others.flatMap((other) => [[other.name, 'v2', other.v2Issuer(TENANT)] as const, [other.name, 'v1', other.v1Issuer(TENANT)] as const]))(
    "%s's %s issuer is refused",
    async (_other, _version, iss) => {
      await refused(await provider.v2Token(TENANT, API_APP_ID, CLIENT, { claims: { iss } }), 'ERR_AUTH_CLAIM (claim iss)');
    },
  );

  test('the v1 metadata failing is a provider failure (502, nothing written); once it answers, tokens are accepted', async () => {
    provider.failing.add('.well-known/openid-configuration');
    try {
      const loan = await h.loan();
      const reply = await h.post([draw(loan)], { token: await provider.v2Token(TENANT, API_APP_ID, CLIENT) });
      expectGenericProblem(reply, 502);
      expect(h.recordOf(reply)).toMatchObject({ reason: 'ERR_IDP_METADATA' });
      expect(await h.drawsFor(loan)).toHaveLength(0);
    } finally {
      provider.failing.clear();
    }
    await accepted(await provider.v1Token(TENANT, APP_ID_URI, CLIENT));
  });

  test('with the issuers pinned, the v1 metadata is not fetched, so its failing does not matter', async () => {
    configureFor(provider, { AUTH_ALLOWED_ISSUERS: cloud.v2Issuer(TENANT) });
    provider.failing.add('.well-known/openid-configuration');
    const before = provider.requests.length;
    try {
      await accepted(await provider.v2Token(TENANT, API_APP_ID, CLIENT));
      expect(provider.requests.slice(before)).not.toContain(`/${TENANT}/.well-known/openid-configuration`);
    } finally {
      provider.failing.clear();
    }
  });

  test("another tenant's issuers of this cloud are refused", async () => {
    await refused(await provider.v2Token(TENANT, API_APP_ID, CLIENT, { claims: { iss: cloud.v2Issuer(OTHER_TENANT) } }), 'ERR_AUTH_CLAIM (claim iss)');
    await refused(await provider.v1Token(TENANT, APP_ID_URI, CLIENT, { claims: { iss: cloud.v1Issuer(OTHER_TENANT) } }), 'ERR_AUTH_CLAIM (claim iss)');
  });
});

describe('v1 audiences: an App ID URI in AUTH_AUDIENCE accepts it with or without a trailing slash', () => {
  let provider: EntraProvider;
  beforeAll(async () => {
    provider = await startEntraProvider(CLOUDS[0]);
  });
  afterAll(() => provider.stop());

  test('configured without the slash', async () => {
    configureFor(provider, { AUTH_AUDIENCE: APP_ID_URI });
    await accepted(await provider.v1Token(TENANT, APP_ID_URI, CLIENT));
    await accepted(await provider.v1Token(TENANT, `${APP_ID_URI}/`, CLIENT));
  });

  test('configured with the slash', async () => {
    configureFor(provider, { AUTH_AUDIENCE: `${APP_ID_URI}/` });
    await accepted(await provider.v1Token(TENANT, APP_ID_URI, CLIENT));
    await accepted(await provider.v1Token(TENANT, `${APP_ID_URI}/`, CLIENT));
  });

  test('only the application id configured: a v1 token for the App ID URI is refused, and no other form is taken', async () => {
    configureFor(provider, { AUTH_AUDIENCE: API_APP_ID });
    await refused(await provider.v1Token(TENANT, APP_ID_URI, CLIENT), 'ERR_AUTH_CLAIM (claim aud)');
    await refused(await provider.v2Token(TENANT, `${API_APP_ID}/`, CLIENT), 'ERR_AUTH_CLAIM (claim aud)');
    await refused(await provider.v1Token(TENANT, `${APP_ID_URI}//`, CLIENT), 'ERR_AUTH_CLAIM (claim aud)');
    await accepted(await provider.v2Token(TENANT, API_APP_ID, CLIENT));
  });
});

describe("each signing key is held to the issuer it is published for (the key set's issuer field)", () => {
  const [publicCloud, , chinaCloud] = CLOUDS;
  let provider: EntraProvider;
  beforeAll(async () => {
    provider = await startEntraProvider(publicCloud);
    await provider.addKey({ kid: 'tenant-bound', issuer: publicCloud.v2Issuer(TENANT) });
    await provider.addKey({ kid: 'no-issuer' });
    await provider.addKey({ kid: 'blank-issuer', issuer: ' ' });
    await provider.addKey({ kid: 'other-tenant', issuer: publicCloud.v2Issuer(OTHER_TENANT) });
    await provider.addKey({ kid: 'other-cloud', issuer: chinaCloud.v2Issuer('{tenantid}') });
    await provider.addKey({ kid: 'unreadable-issuer', issuer: 42 });
  });
  afterAll(() => provider.stop());
  beforeEach(() => configureFor(provider));

  test.each([
    ["the cloud's {tenantid} template, filled from tid", DEFAULT_KID],
    ["the tenant's own issuer", 'tenant-bound'],
    ['no issuer field', 'no-issuer'],
    ['a blank issuer field', 'blank-issuer'],
  ])('a key with %s verifies v2 and v1 tokens', async (_name, kid) => {
    await accepted(await provider.v2Token(TENANT, API_APP_ID, CLIENT, { kid }));
    // A v1 issuer never matches a key's (v2) issuer: the key is held to the tenant's metadata issuer.
    await accepted(await provider.v1Token(TENANT, APP_ID_URI, CLIENT, { kid }));
  });

  test.each([
    ["another tenant's issuer", 'other-tenant'],
    ["another cloud's issuer", 'other-cloud'],
    ['an issuer that is not a string', 'unreadable-issuer'],
  ])('a key published for %s is refused, 401 with its reason in telemetry', async (_name, kid) => {
    await refused(await provider.v2Token(TENANT, API_APP_ID, CLIENT, { kid }), 'ERR_AUTH_KEY_ISSUER (claim iss)');
    await refused(await provider.v1Token(TENANT, APP_ID_URI, CLIENT, { kid }), 'ERR_AUTH_KEY_ISSUER (claim iss)');
  });

  test("another tenant's token signed with a {tenantid} key is refused on the key, before the tenant check", async () => {
    // Its issuer is allowed (AUTH_ALLOWED_ISSUERS names it) and its tid is the other tenant's: its issuer
    // does not name its tid (and the key's issuer, filled with that tid, is neither issuer).
    configureFor(provider, { AUTH_ALLOWED_ISSUERS: publicCloud.v2Issuer(TENANT) });
    await refused(
      await provider.v2Token(OTHER_TENANT, API_APP_ID, CLIENT, { claims: { iss: publicCloud.v2Issuer(TENANT) } }),
      'ERR_AUTH_KEY_ISSUER (claim iss)',
    );
  });

  test('without a tenant configured, a token without tid verifies only with a key that names no issuer', async () => {
    configureFor(provider, { AUTH_TENANT_ID: undefined, AUTH_OPENID_CONFIG_URL: provider.metadataUrl(TENANT) });
    await refused(await provider.v2Token(TENANT, API_APP_ID, CLIENT, { claims: { tid: undefined } }), 'ERR_AUTH_KEY_ISSUER (claim iss)');
    await accepted(await provider.v2Token(TENANT, API_APP_ID, CLIENT, { kid: 'no-issuer', claims: { tid: undefined } }));
  });
});

describe('app-only posture: a token with neither roles nor scp (nor idtyp)', () => {
  let provider: EntraProvider;
  beforeAll(async () => {
    provider = await startEntraProvider(CLOUDS[0]);
  });
  afterAll(() => provider.stop());
  const bare = (client: string) => provider.v2Token(TENANT, API_APP_ID, client, { claims: { roles: undefined, idtyp: undefined } });

  test('with no required role, the Partners table is the access-control list: accepted for an active partner', async () => {
    configureFor(provider, { AUTH_REQUIRED_ROLE: undefined });
    await accepted(await bare(CLIENT));
  });

  test('with no required role, refused for a client that is not a partner, with nothing written', async () => {
    configureFor(provider, { AUTH_REQUIRED_ROLE: undefined });
    await refused(await bare('some-other-app-of-the-tenant'), 'ERR_AUTH_UNKNOWN_CLIENT');
  });

  test('with a required role, refused for want of it', async () => {
    configureFor(provider);
    await refused(await bare(CLIENT), 'ERR_AUTH_ROLE (claim roles)');
  });

  test('with scp it is a delegated token: refused either way', async () => {
    configureFor(provider, { AUTH_REQUIRED_ROLE: undefined });
    await refused(
      await provider.v2Token(TENANT, API_APP_ID, CLIENT, { claims: { roles: undefined, idtyp: undefined, scp: 'Draws.Submit' } }),
      'ERR_AUTH_DELEGATED (claim scp)',
    );
  });
});

describe('the issuer check reads the key set that verified the signature', () => {
  test('a key set reloaded while a signature is being checked does not let a key of another tenant through', async () => {
    holdTheClock();
    const provider = await startEntraProvider(CLOUDS[0]);
    const realVerify = crypto.subtle.verify.bind(crypto.subtle);
    try {
      await provider.addKey({ kid: 'foreign', issuer: CLOUDS[0].v2Issuer(OTHER_TENANT) });
      await provider.addKey({ kid: 'not-published', publish: false });
      const auth = new Authenticator(
        loadConfig({
          ...h.settings,
          AUTH_OPENID_CONFIG_URL: undefined,
          AUTH_AUTHORITY_HOST: provider.authorityHost,
          AUTH_TENANT_ID: TENANT,
          AUTH_AUDIENCE: API_APP_ID,
        }).auth,
      );
      const forged = await provider.v2Token(TENANT, API_APP_ID, CLIENT, { kid: 'foreign' });
      expect(await auth.verify(`Bearer ${forged}`)).toMatchObject({ ok: false, failure: { code: 'ERR_AUTH_KEY_ISSUER' } });

      // Entra stops publishing the key; the forged token is sent again, and its signature check is held
      // open while another token's unknown kid (past the cooldown) reloads the set without that key.
      provider.removeKey('foreign');
      let release!: () => void;
      const gate = new Promise<void>((resolve) => (release = resolve));
      let held = 0;
      jest.spyOn(crypto.subtle, 'verify').mockImplementation(async (...args: Parameters<typeof crypto.subtle.verify>) => {
        if (held++ === 0) await gate;
        return realVerify(...args);
      });
      const again = auth.verify(`Bearer ${await provider.v2Token(TENANT, API_APP_ID, CLIENT, { kid: 'foreign' })}`);
      moveClockTo(Date.now() + DEFAULT_PROVIDER_TIMINGS.jwksCooldownMs);
      const reloads = provider.requests.filter((r) => r.endsWith('/keys')).length;
      expect(await auth.verify(`Bearer ${await provider.v2Token(TENANT, API_APP_ID, CLIENT, { kid: 'not-published' })}`)).toMatchObject({
        ok: false,
        failure: { code: 'ERR_AUTH_UNKNOWN_KEY' },
      });
      expect(provider.requests.filter((r) => r.endsWith('/keys')).length).toBe(reloads + 1);
      release();
      expect(await again).toMatchObject({ ok: false, failure: { code: 'ERR_AUTH_KEY_ISSUER' } });
    } finally {
      jest.restoreAllMocks();
      releaseTheClock();
      await provider.stop();
    }
  });
});
