/**
 * The development host (docs/contributing.md §2) driven from outside over HTTP: with settings pointing at
 * another Azurite and another OpenID provider, and as `npm start` runs it on a fresh machine.
 */
import { execFile } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { decodeJwt } from 'jose';
import { promisify } from 'node:util';
import { ConfigError } from '../../lib/config';
import { startAzurite, type Azurite } from '../../dev/azurite';
import { DEMO_CLIENT_SECRETS, DEMO_TENANT_ID, createTables, putLoan, putPartner, tableClient, tableSettings } from '../../dev/demoData';
import { startDevHost, type DevHost, type EmbeddedIdentity } from '../../dev/devHost';
import { clientAssertion } from '../../examples/submit-draws';
import { startOidcProvider, type OidcProvider } from '../../dev/oidcProvider';
import { spawnDevHost } from '../support/devHostProcess';
import { trustingFetch } from '../support/localCa';

const run = promisify(execFile);
const AUDIENCE = 'api://external-audience';
const TABLES = { partnersTable: 'ExtPartners', loansTable: 'ExtLoans', drawsTable: 'ExtDraws', idempotencyTable: 'ExtKeys', stoppedClientsTable: 'ExtStops' };

describe('settings from the environment replace the embedded defaults', () => {
  let azurite: Azurite;
  let provider: OidcProvider;
  let host: DevHost;
  const lines: string[] = [];

  beforeAll(async () => {
    [azurite, provider] = await Promise.all([startAzurite(), startOidcProvider({ audience: AUDIENCE })]);
    await createTables(azurite.connectionString, TABLES);
    await putPartner(tableClient(azurite.connectionString, TABLES.partnersTable), { clientId: 'ext-client', partnerId: 'EXT' });
    await putLoan(tableClient(azurite.connectionString, TABLES.loansTable), { loanNumber: 42, partnerId: 'EXT', availableCredit: 100, fundingInvestorId: 'I' });
    host = await startDevHost(
      {
        PORT: '0',
        TABLES_CONNECTION_STRING: azurite.connectionString,
        AUTH_OPENID_CONFIG_URL: provider.openIdConfigUrl,
        AUTH_AUDIENCE: AUDIENCE,
        ...tableSettings(TABLES),
      },
      (line) => lines.push(line),
    );
  });
  afterAll(async () => {
    await host?.stop();
    await Promise.allSettled([azurite.stop(true), provider.stop()]);
  });

  async function tokenFor(clientId: string): Promise<string> {
    const response = await fetch(provider.tokenUrl, {
      method: 'POST',
      body: new URLSearchParams({ grant_type: 'client_credentials', client_id: clientId, client_secret: 's' }),
    });
    return ((await response.json()) as { access_token: string }).access_token;
  }

  test('nothing embedded is started, and a draw posted over HTTP lands in the external storage', async () => {
    expect(host.embeddedStorage).toBe(false);
    expect(host.identity).toBeUndefined();
    const response = await fetch(host.url, {
      method: 'POST',
      headers: { authorization: `Bearer ${await tokenFor('ext-client')}`, 'content-type': 'application/json' },
      body: JSON.stringify([{ loanNumber: '42', requestor: 'ext', amount: 99.99 }]),
    });
    expect(response.status).toBe(204);
    expect(response.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
    const rows = [];
    for await (const row of tableClient(azurite.connectionString, TABLES.drawsTable).listEntities()) rows.push(row);
    expect(rows).toEqual([
      expect.objectContaining({ rowKey: '42', Amount: 99.99, ClientId: 'ext-client', PartnerId: 'EXT', RequestId: response.headers.get('x-request-id') }),
    ]);
    expect(lines.join('\n')).toContain('DrawRequest accepted');
  });

  test('errors reach the client over HTTP exactly as the handler shaped them', async () => {
    const response = await fetch(host.url.replace('/DrawRequest', '/drawrequest'), {
      method: 'POST',
      body: '[]',
      headers: { 'content-type': 'application/json' },
    });
    expect(response.status).toBe(401);
    expect(response.headers.get('www-authenticate')).toBe('Bearer');
    expect(response.headers.get('content-type')).toBe('application/problem+json');
    expect(((await response.json()) as { status: number }).status).toBe(401);
  });

  test('other routes are 404 (no /api prefix) and other methods 405', async () => {
    expect((await fetch(host.url.replace('/DrawRequest', '/api/DrawRequest'), { method: 'POST' })).status).toBe(404);
    const get = await fetch(host.url);
    expect(get.status).toBe(405);
    expect(get.headers.get('allow')).toBe('POST');
  });

  test('a malformed setting fails start-up with a message naming it', async () => {
    const failure = startDevHost({
      PORT: '0',
      TABLES_CONNECTION_STRING: azurite.connectionString,
      AUTH_OPENID_CONFIG_URL: provider.openIdConfigUrl,
      AUTH_AUDIENCE: AUDIENCE,
      MAX_BATCH_SIZE: '500',
    });
    await expect(failure).rejects.toBeInstanceOf(ConfigError);
    await expect(failure).rejects.toThrow(/MAX_BATCH_SIZE must be a whole number from 1 to 100/);
  });
});

describe('`npm start` on a fresh machine: embedded Azurite and provider, the printed curl works', () => {
  test('prints demo data and a curl; the curl gets 204, the same again 400 Pending; SIGTERM stops it cleanly', async () => {
    const host = await spawnDevHost();
    let exitCode: number | null;
    try {
      const output = host.output();
      expect(output).toContain(`listening on ${host.url}`);
      expect(output).toContain('loan 1001: partner PARTNER-001');
      const commands = output
        .split('\n')
        .filter((l) => l.startsWith('TOKEN=') || l.startsWith('curl '))
        .join('\n');
      expect(commands).toContain(host.url);
      expect(commands).not.toMatch(/\bjq\b/);

      const first = await run('sh', ['-c', commands]);
      expect(first.stdout).toMatch(/^HTTP\/1\.1 204 No Content/);
      expect(first.stdout).toMatch(/X-Request-Id: [0-9a-f-]{36}/i);
      const second = await run('sh', ['-c', commands]);
      expect(second.stdout).toMatch(/^HTTP\/1\.1 400 Bad Request/);
      expect(second.stdout).toContain('"error":"Pending Transaction Request"');
    } finally {
      exitCode = await host.stop();
    }
    expect(exitCode).toBe(0);
  });
});

describe("the embedded provider is laid out as Entra is, on HTTPS, and its token endpoint refuses what Entra refuses, in Entra's shape", () => {
  let host: DevHost;
  let identity: EmbeddedIdentity;
  /** This test's fetch trusts the local CA, as a partner's process told with NODE_EXTRA_CA_CERTS does. */
  let trusted: typeof fetch;
  beforeAll(async () => {
    host = await startDevHost({ PORT: '0' }, () => undefined);
    identity = host.identity as EmbeddedIdentity;
    trusted = trustingFetch(identity.caCertPath);
  }, 60_000);
  afterAll(() => host?.stop());

  const ask = async (form: Record<string, string>) => {
    const response = await trusted(identity.tokenUrl, { method: 'POST', body: new URLSearchParams({ grant_type: 'client_credentials', ...form }) });
    return { status: response.status, body: (await response.json()) as Record<string, unknown> };
  };

  test("the tenant's metadata names an issuer on the authority's host, Entra's endpoints under it, and keys that name their issuer", async () => {
    expect(identity.authority).toBe(`${identity.authorityHost}/${DEMO_TENANT_ID}`);
    expect(identity.authorityHost).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
    const metadata = (await (await trusted(`${identity.authority}/v2.0/.well-known/openid-configuration`)).json()) as Record<string, unknown>;
    expect(metadata).toMatchObject({
      issuer: `${identity.authority}/v2.0`,
      token_endpoint: identity.tokenUrl,
      jwks_uri: `${identity.authority}/discovery/v2.0/keys`,
      authorization_endpoint: `${identity.authority}/oauth2/v2.0/authorize`,
      token_endpoint_auth_methods_supported: expect.arrayContaining(['client_secret_post', 'private_key_jwt']),
    });
    expect(identity.tokenUrl).toBe(`${identity.authority}/oauth2/v2.0/token`);
    const keys = (await (await trusted(metadata.jwks_uri as string)).json()) as { keys: Array<Record<string, unknown>> };
    expect(keys.keys).toEqual([
      expect.objectContaining({ kty: 'RSA', use: 'sig', kid: expect.any(String), issuer: `${identity.authorityHost}/{tenantid}/v2.0` }),
    ]);
    const v1 = (await (await trusted(`${identity.authority}/.well-known/openid-configuration`)).json()) as Record<string, unknown>;
    expect(v1.issuer).toBe(`${identity.authority}/`);
  });

  test("its certificate is trusted only through the local CA, which is a CA and issued it for this machine's addresses", async () => {
    // In a process of its own with a clean environment: no NODE_EXTRA_CA_CERTS a developer may have exported.
    const probe = `fetch(${JSON.stringify(identity.tokenUrl)}, { method: 'POST' }).then(() => console.log('trusted'), (e) => console.log(e.cause?.code))`;
    const { stdout } = await run(process.execPath, ['-e', probe], { env: { PATH: process.env.PATH ?? '' } });
    expect(stdout.trim()).toBe('UNABLE_TO_VERIFY_LEAF_SIGNATURE');
    const ca = new X509Certificate(readFileSync(identity.caCertPath));
    expect(ca.ca).toBe(true);
    expect((await trusted(identity.tokenUrl, { method: 'POST' })).status).toBe(400);
  });

  test('another tenant in the path is not found, as Entra says it', async () => {
    const response = await trusted(identity.tokenUrl.replace(DEMO_TENANT_ID, '11111111-2222-4333-8444-555555555555'), { method: 'POST' });
    expect(response.status).toBe(400);
    expect(((await response.json()) as { error_codes: number[] }).error_codes).toEqual([90002]);
  });

  test("the demo partner's certificate signs a client assertion (built as examples/submit-draws.ts builds it) that gets a token", async () => {
    const cert = identity.certificateClient;
    const credential = { certificate: readFileSync(cert.certPath, 'utf8'), privateKey: readFileSync(cert.keyPath, 'utf8') };
    const answer = await ask({
      client_id: cert.clientId,
      client_assertion_type: 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer',
      client_assertion: clientAssertion(cert.clientId, identity.tokenUrl, credential),
      scope: identity.scope,
    });
    expect(answer.status).toBe(200);
    expect(answer.body).toMatchObject({ token_type: 'Bearer', expires_in: 3599, access_token: expect.any(String) });
    expect(decodeJwt(answer.body.access_token as string)).toMatchObject({
      iss: `${identity.authority}/v2.0`,
      tid: DEMO_TENANT_ID,
      aud: 'api://draw-request-service',
      azp: cert.clientId,
      sub: cert.clientId,
      idtyp: 'app',
      ver: '2.0',
    });
    const post = await fetch(host.url, {
      method: 'POST',
      headers: { authorization: `Bearer ${answer.body.access_token as string}`, 'content-type': 'application/json' },
      body: JSON.stringify([{ loanNumber: 1005, requestor: 'jane.doe@partner.example', amount: 5 }]),
    });
    expect(post.status).toBe(204);
  });
  const demo = { client_id: 'demo-partner', client_secret: DEMO_CLIENT_SECRETS['demo-partner'], scope: 'api://draw-request-service/.default' };

  test.each([
    ['an unknown client', { ...demo, client_id: 'stranger' }, 400, 'unauthorized_client', 700016],
    ['no secret', { client_id: demo.client_id, scope: demo.scope }, 401, 'invalid_client', 7000216],
    ["another demo client's secret", { ...demo, client_secret: DEMO_CLIENT_SECRETS['other-partner'] }, 401, 'invalid_client', 7000215],
    ['no scope', { client_id: demo.client_id, client_secret: demo.client_secret }, 400, 'invalid_request', 900144],
    ['a scope without /.default', { ...demo, scope: 'api://draw-request-service/Draws.Submit' }, 400, 'invalid_scope', 1002012],
    ["another resource's scope", { ...demo, scope: 'api://someone-else/.default' }, 400, 'invalid_resource', 500011],
  ])('%s', async (_name, form, status, error, code) => {
    const answer = await ask(form);
    expect(answer.status).toBe(status);
    expect(answer.body).toEqual({
      error,
      error_description: expect.stringMatching(
        new RegExp(
          `^AADSTS${code}: .*\\r\\nTrace ID: [0-9a-f-]{36}\\r\\nCorrelation ID: [0-9a-f-]{36}\\r\\nTimestamp: \\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\d:\\d\\dZ$`,
        ),
      ),
      error_codes: [code],
      timestamp: expect.any(String),
      trace_id: expect.any(String),
      correlation_id: expect.any(String),
      error_uri: `https://login.microsoftonline.com/error?code=${code}`,
    });
    expect(answer.body.access_token).toBeUndefined();
  });

  test("each demo client with its own secret and the API's /.default scope gets a token the service accepts", async () => {
    for (const clientId of ['demo-partner', 'other-partner']) {
      const answer = await ask({ ...demo, client_id: clientId, client_secret: DEMO_CLIENT_SECRETS[clientId] });
      expect(answer.status).toBe(200);
      const post = await fetch(host.url, {
        method: 'POST',
        headers: { authorization: `Bearer ${answer.body.access_token as string}`, 'content-type': 'application/json' },
        body: JSON.stringify([{ loanNumber: clientId === 'demo-partner' ? 1004 : 2001, requestor: 'jane.doe@partner.example', amount: 5 }]),
      });
      expect(post.status).toBe(204);
    }
  });
});
