/**
 * Authentication (docs/contract.md §3) with real RS256 tokens verified against the local provider's
 * metadata and JWKS over HTTP: every refusal is 401 with nothing written and its reason in the
 * logs and in the invocation's telemetry record; an unreachable provider is 502, never 401.
 */
import { createServer, type Server } from 'node:http';
import { randomUUID } from 'node:crypto';
import { SignJWT, exportJWK, generateKeyPair, base64url } from 'jose';
import { startOidcProvider } from '../../dev/oidcProvider';
import { freePort } from '../../dev/azurite';
import { putPartner } from '../../dev/demoData';
import { DEFAULT_PROVIDER_TIMINGS } from '../../lib/auth';
import { LIMITS } from '../../lib/limits';
import { AUDIENCE, CLIENT, Harness, TENANT, draw, type Reply } from '../support/harness';
import { expectGenericProblem } from '../support/problems';
import { holdTheClock, moveClockTo, releaseTheClock } from '../support/clock';
import { expect401, expectAccepted, expectRefusalRecorded, expectRefused } from '../support/authReplies';

let h: Harness;
beforeAll(async () => {
  h = await Harness.start({ AUTH_TENANT_ID: TENANT, AUTH_REQUIRED_ROLE: 'Draws.Submit' });
  await putPartner(h.table('partners'), { clientId: 'inactive-app', partnerId: 'PARTNER-X', active: false });
  await putPartner(h.table('partners'), { clientId: 'unnamed-app' });
});
afterAll(() => h.stop());

const refusedWith = (authorization: string | null, reason: string, tokenSent = true): Promise<Reply> => expectRefused(h, authorization, reason, tokenSent);
const accepted = (token: string): Promise<void> => expectAccepted(h, token);

function providerKid(): string {
  return h.provider.server.issuer.keys.get()?.kid as string;
}

const now = () => Math.floor(Date.now() / 1000);

describe('accepted tokens', () => {
  test('an Entra-shaped app token with the role, tenant and a registered partner', async () => {
    await accepted(await h.token());
  });

  test('the scheme is case-insensitive', async () => {
    const loan = await h.loan();
    const reply = await h.post([draw(loan)], { token: null, headers: { authorization: `bEaReR ${await h.token()}` } });
    expect(reply.status).toBe(204);
  });

  test("a token from the provider's client-credentials endpoint", async () => {
    // A service configured without tenant or role, as the provider's endpoint issues neither.
    const plain = await Harness.start();
    try {
      const response = await fetch(plain.provider.tokenUrl, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ grant_type: 'client_credentials', client_id: CLIENT, client_secret: 'x' }),
      });
      const { access_token: token } = (await response.json()) as { access_token: string };
      const loan = await plain.loan();
      expect((await plain.post([draw(loan)], { token })).status).toBe(204);
    } finally {
      await plain.stop();
    }
  });

  test('a v1 token naming its client in appid instead of azp', async () => {
    await accepted(await h.token({ azp: undefined, appid: CLIENT }));
  });

  test('an expiry within the clock tolerance (60 s) is still accepted', async () => {
    await accepted(await h.token({ exp: now() - 30 }));
  });

  test('idtyp may be absent (the optional claim is not configured)', async () => {
    await accepted(await h.token({ idtyp: undefined }));
  });

  test('a tab after the scheme', async () => {
    const loan = await h.loan();
    expect((await h.post([draw(loan)], { token: null, headers: { authorization: `Bearer\t${await h.token()}` } })).status).toBe(204);
  });
});

describe('a token sent again (accepted tokens are remembered, lib/verifiedTokens)', () => {
  test('is accepted again, and refused as expired once its exp passes the tolerance, though it was remembered', async () => {
    holdTheClock();
    try {
      const exp = now() - 60 + 2; // within the 60 s tolerance for two more seconds of the held clock
      const token = await h.token({ exp });
      await accepted(token);
      await accepted(token); // answered from memory
      moveClockTo((exp + 60) * 1000 - 1); // the tolerance's last millisecond: still accepted
      await accepted(token);
      moveClockTo((exp + 60) * 1000);
      await refusedWith(`Bearer ${token}`, 'ERR_AUTH_EXPIRED');
    } finally {
      releaseTheClock();
    }
  });

  test('a token differing in one signature character is checked on its own, not taken for the remembered one', async () => {
    const token = await h.token();
    await accepted(token);
    const [header, payload, signature] = token.split('.');
    const flipped = `${header}.${payload}.${signature.slice(0, 10)}${signature[10] === 'A' ? 'B' : 'A'}${signature.slice(11)}`;
    await refusedWith(`Bearer ${flipped}`, 'ERR_AUTH_SIGNATURE');
  });
});

describe('settings that change what is accepted', () => {
  async function withHarness(settings: Record<string, string>, run: (x: Harness) => Promise<void>): Promise<void> {
    const x = await Harness.start(settings);
    try {
      await run(x);
    } finally {
      await x.stop();
    }
  }

  test('AUTH_PARTNER_CLAIM names the claim that identifies the client', () =>
    withHarness({ AUTH_PARTNER_CLAIM: 'oid' }, async (x) => {
      expect((await x.post([draw(await x.loan())], { token: await x.token({ oid: CLIENT, azp: 'someone-else' }) })).status).toBe(204);
      const refused = await x.post([draw(await x.loan())], { token: await x.token({ oid: undefined }) });
      expect401(refused, true);
      expectRefusalRecorded(x, refused, 'ERR_AUTH_NO_CLIENT (claim oid)');
    }));

  test('AUTH_ALLOWED_ISSUERS replaces the issuers from metadata', () =>
    withHarness({ AUTH_ALLOWED_ISSUERS: 'https://issuer-a.example/, https://issuer-b.example/' }, async (x) => {
      expect((await x.post([draw(await x.loan())], { token: await x.token({ iss: 'https://issuer-b.example/' }) })).status).toBe(204);
      const refused = await x.post([draw(await x.loan())], { token: await x.token() }); // the metadata issuer
      expect401(refused, true);
      expectRefusalRecorded(x, refused, 'ERR_AUTH_CLAIM (claim iss)');
    }));

  test('an upper-case AUTH_TENANT_ID accepts the lower-case tid Entra writes', () => {
    const tenant = 'a1b2c3d4-e5f6-47a8-b9c0-d1e2f3a4b5c6';
    return withHarness({ AUTH_TENANT_ID: tenant.toUpperCase() }, async (x) => {
      expect((await x.post([draw(await x.loan())], { token: await x.token({ tid: tenant }) })).status).toBe(204);
    });
  });

  // The v1 issuer is learnt from Entra's v1 metadata (entraTokens.test.ts), never assumed: a provider
  // that is not laid out as Entra has none, with or without a tenant.
  test.each([
    ['without a tenant, where tid is not required either', {}, { tid: undefined }],
    ['with a tenant', { AUTH_TENANT_ID: TENANT }, {}],
  ])('a v1 issuer is not accepted from a provider not laid out as Entra, %s', (_name, settings: Record<string, string>, acceptedClaims) =>
    withHarness(settings, async (x) => {
      const refused = await x.post([draw(await x.loan())], { token: await x.token({ iss: `https://sts.windows.net/${TENANT}/` }) });
      expect401(refused, true);
      expectRefusalRecorded(x, refused, 'ERR_AUTH_CLAIM (claim iss)');
      expect((await x.post([draw(await x.loan())], { token: await x.token(acceptedClaims) })).status).toBe(204);
    }),
  );
});

describe('401 refusals, nothing written, reason logged but not returned', () => {
  test('no Authorization header', () => refusedWith(null, 'ERR_AUTH_MISSING', false));
  test('another scheme (Basic)', () => refusedWith('Basic dXNlcjpwYXNz', 'ERR_AUTH_MISSING', false));
  test('Bearer with no token', () => refusedWith('Bearer ', 'ERR_AUTH_MISSING', false));
  test('not a JWT', () => refusedWith('Bearer not.a.jwt', 'ERR_AUTH_MALFORMED'));
  test('expired beyond the tolerance', async () => refusedWith(`Bearer ${await h.token({ exp: now() - 120 })}`, 'ERR_AUTH_EXPIRED'));
  test('not yet valid', async () => refusedWith(`Bearer ${await h.token({ nbf: now() + 600 })}`, 'ERR_AUTH_CLAIM (claim nbf)'));
  test('no exp claim', async () => refusedWith(`Bearer ${await h.token({ exp: undefined })}`, 'ERR_AUTH_CLAIM (claim exp)'));
  test('wrong audience', async () => refusedWith(`Bearer ${await h.token({ aud: 'api://someone-else' })}`, 'ERR_AUTH_CLAIM (claim aud)'));
  test('wrong issuer', async () => refusedWith(`Bearer ${await h.token({ iss: 'https://login.example.net/evil/' })}`, 'ERR_AUTH_CLAIM (claim iss)'));
  test("another tenant's tid", async () =>
    refusedWith(`Bearer ${await h.token({ tid: '99999999-2222-3333-4444-555555555555' })}`, 'ERR_AUTH_TENANT (claim tid)'));
  test('a delegated (user) token with scp', async () => refusedWith(`Bearer ${await h.token({ scp: 'Draws.Submit' })}`, 'ERR_AUTH_DELEGATED (claim scp)'));
  test('idtyp user', async () => refusedWith(`Bearer ${await h.token({ idtyp: 'user' })}`, 'ERR_AUTH_NOT_APP (claim idtyp)'));
  test('required role missing', async () => refusedWith(`Bearer ${await h.token({ roles: ['Other.Role'] })}`, 'ERR_AUTH_ROLE (claim roles)'));
  test('no roles claim at all', async () => refusedWith(`Bearer ${await h.token({ roles: undefined })}`, 'ERR_AUTH_ROLE (claim roles)'));
  test('no client claim', async () => refusedWith(`Bearer ${await h.token({ azp: undefined, appid: undefined })}`, 'ERR_AUTH_NO_CLIENT (claim azp)'));
  // Refused before any lookup: such a value cannot be a Partners key (a lookup would say UNKNOWN_CLIENT).
  test('a client id that cannot be a table key', async () => refusedWith(`Bearer ${await h.token({ azp: 'bad/client' })}`, 'ERR_AUTH_NO_CLIENT (claim azp)'));
  test('two Authorization values joined', async () => refusedWith(`Bearer ${await h.token()}, Bearer ${await h.token()}`, 'ERR_AUTH_MALFORMED'));
  // Longer than any token at its limit could be: refused before the header's text is read.
  test('an Authorization header of 100 KiB of spaces after Bearer', () => refusedWith(`Bearer${' '.repeat(100 * 1024)}x`, 'ERR_AUTH_TOKEN_TOO_LARGE'));
  // A verified token of a client that is not an active partner: the record names the client.
  test.each([
    ['a client that is not a registered partner', 'stranger-app', 'ERR_AUTH_UNKNOWN_CLIENT'],
    ['an inactive partner', 'inactive-app', 'ERR_AUTH_INACTIVE_CLIENT'],
    ['a Partners row without PartnerId fails closed', 'unnamed-app', 'ERR_AUTH_PARTNER_UNNAMED'],
  ])('%s', async (_name, azp, reason) => {
    const reply = await refusedWith(`Bearer ${await h.token({ azp })}`, reason);
    expect(h.recordOf(reply)).toMatchObject({ clientId: azp, partnerId: undefined });
  });
  test('a token over 8 KiB', async () => refusedWith(`Bearer ${await h.token({ pad: 'x'.repeat(9000) })}`, 'ERR_AUTH_TOKEN_TOO_LARGE'));
  /** A valid token of exactly `bytes` bytes. */
  async function tokenOfBytes(bytes: number): Promise<string> {
    // base64url never has a length of 4k+1, so a header field shifts the total where the payload cannot.
    const padded = (payloadPad: number, headerPad: number) =>
      h.provider.server.issuer.buildToken({
        scopesOrTransform: (header, payload) => {
          Object.assign(header, { pad: 'z'.repeat(headerPad) });
          Object.assign(payload, { aud: AUDIENCE, azp: CLIENT, idtyp: 'app', tid: TENANT, roles: ['Draws.Submit'], pad: 'x'.repeat(payloadPad) });
        },
      });
    const estimate = Math.floor(((bytes - Buffer.byteLength(await padded(0, 0))) * 3) / 4) - 4;
    for (let n = estimate; n < estimate + 8; n += 1) {
      for (let k = 0; k < 3; k += 1) {
        const token = await padded(n, k);
        if (Buffer.byteLength(token) === bytes) return token;
      }
    }
    throw new Error(`no token of ${bytes} bytes`);
  }
  test('a token of exactly 8 KiB is accepted', async () => accepted(await tokenOfBytes(LIMITS.tokenBytes)));
  test('a token of 8 KiB and one byte', async () => refusedWith(`Bearer ${await tokenOfBytes(LIMITS.tokenBytes + 1)}`, 'ERR_AUTH_TOKEN_TOO_LARGE'));

  test('alg none', async () => {
    const header = base64url.encode(JSON.stringify({ alg: 'none', typ: 'JWT' }));
    const payload = base64url.encode(
      JSON.stringify({ iss: h.provider.issuer, aud: AUDIENCE, azp: CLIENT, tid: TENANT, roles: ['Draws.Submit'], exp: now() + 600 }),
    );
    await refusedWith(`Bearer ${header}.${payload}.`, 'ERR_AUTH_ALGORITHM');
  });

  test('HS256 signed with the RSA public key as the secret', async () => {
    const publicJwk = h.provider.server.issuer.keys.toJSON()[0];
    const secret = new TextEncoder().encode(JSON.stringify(publicJwk));
    const forged = await new SignJWT({ azp: CLIENT, tid: TENANT, roles: ['Draws.Submit'] })
      .setProtectedHeader({ alg: 'HS256', kid: providerKid() })
      .setIssuer(h.provider.issuer)
      .setAudience(AUDIENCE)
      .setExpirationTime('10m')
      .sign(secret);
    await refusedWith(`Bearer ${forged}`, 'ERR_AUTH_ALGORITHM');
  });

  async function signedWithForeignKey(kid: string, extraHeader: Record<string, unknown> = {}): Promise<string> {
    const { privateKey } = await generateKeyPair('RS256');
    return new SignJWT({ azp: CLIENT, tid: TENANT, roles: ['Draws.Submit'], idtyp: 'app' })
      .setProtectedHeader({ alg: 'RS256', kid, ...extraHeader })
      .setIssuer(h.provider.issuer)
      .setAudience(AUDIENCE)
      .setExpirationTime('10m')
      .sign(privateKey);
  }

  test('an unknown kid', async () => refusedWith(`Bearer ${await signedWithForeignKey('not-a-known-kid')}`, 'ERR_AUTH_UNKNOWN_KEY'));
  test("the provider's kid with another key", async () => refusedWith(`Bearer ${await signedWithForeignKey(providerKid())}`, 'ERR_AUTH_SIGNATURE'));
  test('jku and x5u headers pointing elsewhere are ignored', async () => {
    const token = await signedWithForeignKey('attacker-kid', { jku: 'https://attacker.example/jwks', x5u: 'https://attacker.example/cert' });
    await refusedWith(`Bearer ${token}`, 'ERR_AUTH_UNKNOWN_KEY');
  });

  test('authentication is checked before the body: an unknown client with a bad body is 401', async () => {
    const reply = await h.post('not json', { token: await h.token({ azp: 'stranger-app' }) });
    expect401(reply, true);
    expectRefusalRecorded(h, reply, 'ERR_AUTH_UNKNOWN_CLIENT');
  });

  test('no log line carries a token', () => {
    expect(h.logs.length).toBeGreaterThan(10);
    expect(h.logs.join('\n')).not.toMatch(/eyJ[A-Za-z0-9_-]{10,}/);
  });
});

describe('identity provider failures are 502, never 401', () => {
  const expect502 = (reply: Reply) => expectGenericProblem(reply, 502);

  test('provider down at cold start: 502, then served once it is back, without a new instance', async () => {
    const port = await freePort();
    const provider = await startOidcProvider({ audience: AUDIENCE, port });
    await provider.stop();
    const cold = await Harness.start({ AUTH_OPENID_CONFIG_URL: provider.openIdConfigUrl });
    try {
      const loan = await cold.loan();
      expect502(await cold.post([draw(loan)], { token: 'any.token.here' }));
      expect(cold.logs.join('\n')).toContain('identity provider (ERR_IDP_METADATA)');
      await provider.server.start(port, '127.0.0.1');
      const token = await provider.server.issuer.buildToken({ scopesOrTransform: (_h, p) => Object.assign(p, { aud: AUDIENCE, azp: CLIENT }) });
      expect((await cold.post([draw(loan)], { token })).status).toBe(204);
    } finally {
      await Promise.allSettled([cold.stop(), provider.stop()]);
    }
  });

  test('provider down after keys were fetched: valid tokens are still accepted', async () => {
    const provider = await startOidcProvider({ audience: AUDIENCE });
    const warm = await Harness.start({ AUTH_OPENID_CONFIG_URL: provider.openIdConfigUrl });
    try {
      const mint = () => provider.server.issuer.buildToken({ scopesOrTransform: (_h, p) => Object.assign(p, { aud: AUDIENCE, azp: CLIENT }) });
      expect((await warm.post([draw(await warm.loan())], { token: await mint() })).status).toBe(204);
      const token = await mint();
      await provider.stop();
      expect((await warm.post([draw(await warm.loan())], { token })).status).toBe(204);
    } finally {
      await Promise.allSettled([warm.stop(), provider.stop()]);
    }
  });

  describe('with a provider whose metadata or keys misbehave', () => {
    let server: Server;
    let base: string;
    let jwksStatus = 200;
    let jwksHits = 0;
    const keys = generateKeyPair('RS256', { extractable: true });

    beforeAll(async () => {
      const { publicKey } = await keys;
      const jwk = { ...(await exportJWK(publicKey)), kid: 'k1', alg: 'RS256', use: 'sig' };
      server = createServer((req, res) => {
        if (req.url === '/good/.well-known/openid-configuration') {
          res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ issuer: `${base}/good`, jwks_uri: `${base}/jwks` }));
        } else if (req.url === '/insecure/.well-known/openid-configuration') {
          res
            .writeHead(200, { 'content-type': 'application/json' })
            .end(JSON.stringify({ issuer: `${base}/insecure`, jwks_uri: 'http://keys.example.com/jwks' }));
        } else if (req.url === '/deadkeys/.well-known/openid-configuration') {
          res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ issuer: `${base}/deadkeys`, jwks_uri: 'http://127.0.0.1:9/jwks' }));
        } else if (req.url === '/jwks') {
          jwksHits += 1;
          res.writeHead(jwksStatus, { 'content-type': 'application/json' }).end(JSON.stringify({ keys: [jwk] }));
        } else {
          res.writeHead(404).end();
        }
      });
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      base = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
    });
    afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

    async function tokenFor(issuer: string, kid = 'k1'): Promise<string> {
      const { privateKey } = await keys;
      return new SignJWT({ azp: CLIENT })
        .setProtectedHeader({ alg: 'RS256', kid })
        .setIssuer(issuer)
        .setAudience(AUDIENCE)
        .setExpirationTime('10m')
        .sign(privateKey);
    }

    async function withMetadata(url: string, run: (x: Harness) => Promise<void>): Promise<void> {
      const x = await Harness.start({ AUTH_OPENID_CONFIG_URL: url });
      try {
        await run(x);
      } finally {
        await x.stop();
      }
    }

    test('metadata answering 404', () =>
      withMetadata(`${base}/missing/.well-known/openid-configuration`, async (x) => {
        expect502(await x.post([draw(await x.loan())], { token: await tokenFor(`${base}/missing`) }));
      }));

    test('metadata naming a key set over plain http to another host (never fetched)', () =>
      withMetadata(`${base}/insecure/.well-known/openid-configuration`, async (x) => {
        expect502(await x.post([draw(await x.loan())], { token: await tokenFor(`${base}/insecure`) }));
        expect(x.logs.join('\n')).toContain('identity provider (ERR_IDP_METADATA)');
      }));

    test('JWKS unreachable', () =>
      withMetadata(`${base}/deadkeys/.well-known/openid-configuration`, async (x) => {
        const loan = await x.loan();
        expect502(await x.post([draw(loan)], { token: await tokenFor(`${base}/deadkeys`) }));
        expect(x.logs.join('\n')).toContain('identity provider (ERR_IDP_JWKS)');
        expect(await x.drawsFor(loan)).toHaveLength(0);
      }));

    test('JWKS answering 500, then healthy: 502 then 204 on the same instance', () =>
      withMetadata(`${base}/good/.well-known/openid-configuration`, async (x) => {
        jwksStatus = 500;
        expect502(await x.post([draw(await x.loan())], { token: await tokenFor(`${base}/good`) }));
        jwksStatus = 200;
        expect((await x.post([draw(await x.loan())], { token: await tokenFor(`${base}/good`) })).status).toBe(204);
      }));

    /** 20 requests at once, each with a kid the provider never issued: each is 401, recorded, writes nothing. */
    async function burstOfRandomKids(x: Harness, issuer: string): Promise<void> {
      const loans = await Promise.all(Array.from({ length: 20 }, () => x.loan()));
      const tokens = await Promise.all(loans.map(() => tokenFor(issuer, `random-${randomUUID()}`)));
      const replies = await Promise.all(loans.map((loan, i) => x.post([draw(loan)], { token: tokens[i] })));
      for (const reply of replies) {
        expect401(reply, true);
        expectRefusalRecorded(x, reply, 'ERR_AUTH_UNKNOWN_KEY');
      }
      expect(await x.drawsFor(...loans)).toHaveLength(0);
    }

    test('a burst of unknown kids fetches the key set at most once per cooldown', () =>
      withMetadata(`${base}/good/.well-known/openid-configuration`, async (x) => {
        jwksStatus = 200;
        expect((await x.post([draw(await x.loan())], { token: await tokenFor(`${base}/good`) })).status).toBe(204);
        const hits = jwksHits;
        await burstOfRandomKids(x, `${base}/good`); // within the default 30 s cooldown of that fetch
        expect(jwksHits - hits).toBe(0);
      }));

    test('once the cooldown has passed, a burst of unknown kids fetches the key set exactly once', async () => {
      jwksStatus = 200;
      holdTheClock(); // the cooldown is measured on the test's clock, not raced
      let x: Harness | undefined;
      try {
        x = await Harness.start({ AUTH_OPENID_CONFIG_URL: `${base}/good/.well-known/openid-configuration` });
        const hits = jwksHits;
        expect((await x.post([draw(await x.loan())], { token: await tokenFor(`${base}/good`) })).status).toBe(204);
        expect(jwksHits - hits).toBe(1);
        moveClockTo(Date.now() + DEFAULT_PROVIDER_TIMINGS.jwksCooldownMs);
        await burstOfRandomKids(x, `${base}/good`);
        expect(jwksHits - hits).toBe(2); // one refetch for all 20, then the cooldown holds
        await burstOfRandomKids(x, `${base}/good`);
        expect(jwksHits - hits).toBe(2);
      } finally {
        releaseTheClock();
        await x?.stop();
      }
    });
  });
});
