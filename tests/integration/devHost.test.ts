/**
 * The development host (docs/contract.md §6) driven from outside over HTTP: with settings pointing at
 * another Azurite and another OpenID provider, and as `npm start` runs it on a fresh machine.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { ConfigError } from '../../lib/config';
import { startAzurite, type Azurite } from '../../dev/azurite';
import { DEMO_CLIENT_SECRETS, createTables, putLoan, putPartner, tableClient, tableSettings } from '../../dev/demoData';
import { startDevHost, type DevHost } from '../../dev/devHost';
import { startOidcProvider, type OidcProvider } from '../../dev/oidcProvider';
import { spawnDevHost } from '../support/devHostProcess';

const run = promisify(execFile);
const AUDIENCE = 'api://external-audience';
const TABLES = { partnersTable: 'ExtPartners', loansTable: 'ExtLoans', drawsTable: 'ExtDraws', idempotencyTable: 'ExtKeys' };

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
    expect(host.tokenUrl).toBeUndefined();
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

describe("the embedded provider's token endpoint refuses what Entra refuses, in Entra's shape", () => {
  let host: DevHost;
  beforeAll(async () => {
    host = await startDevHost({ PORT: '0' }, () => undefined);
  }, 60_000);
  afterAll(() => host?.stop());

  const ask = async (form: Record<string, string>) => {
    const response = await fetch(host.tokenUrl as string, { method: 'POST', body: new URLSearchParams({ grant_type: 'client_credentials', ...form }) });
    return { status: response.status, body: (await response.json()) as Record<string, unknown> };
  };
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
        new RegExp(`^AADSTS${code}: .* Trace ID: [0-9a-f-]{36} Correlation ID: [0-9a-f-]{36} Timestamp: \\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\d:\\d\\dZ$`),
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
