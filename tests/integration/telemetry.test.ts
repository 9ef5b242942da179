/**
 * The telemetry that really leaves the process, from what ships: the zip of `npm run package` runs
 * under the real Functions Node.js worker (tests/support/workerHost.ts, with the deployment's Node
 * options) with APPLICATIONINSIGHTS_CONNECTION_STRING pointing at a local HTTPS ingestion endpoint.
 * Invocations carry a W3C traceParent as the host sends them: accepted, rejected, unauthorized and
 * dependency-failure requests. Then the host terminates the worker at once, as a scale-in does, and
 * the envelopes that arrived are checked: names, dimensions, the Table Storage and identity-provider
 * dependencies, correlation with each invocation's operation id, that nothing emitted before the
 * terminate was lost, and that no secret is in them.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startAzurite, type Azurite } from '../../dev/azurite';
import { createTables, putLoan, putPartner, tableClient } from '../../dev/demoData';
import { startOidcProvider, type OidcProvider } from '../../dev/oidcProvider';
import { ofType, startIngestion, type Envelope, type Ingestion } from '../support/ingestion';
import { deployedNodeArguments, packagedApp, type PackagedApp } from '../support/packagedApp';
import { REFUSED_TELEMETRY_SETTINGS } from '../../lib/config';
import { ROOT } from '../../scripts/bundle';
import { WorkerHost } from '../support/workerHost';

const AUDIENCE = 'api://telemetry-tests';
const TABLES = { partnersTable: 'Partners', loansTable: 'Loans', drawsTable: 'DrawRequests', idempotencyTable: 'IdempotencyKeys' };
const REQUESTOR = 'private.person@partner.example';
const FUNCTION_URL = 'https://draw-request-service.example/DrawRequest';
/** The host's WorkerTerminate grace period (WorkerConstants.WorkerTerminateGracePeriodInSeconds). */
const GRACE_MS = 5_000;

interface Sent {
  readonly status: number;
  /** The invocation id: the requestId of the answer and of everything recorded. */
  readonly requestId: string;
  readonly traceId: string;
}

/** Notes every environment variable the worker reads (tests/support/envWatch.cjs). */
const ENV_WATCH = join(__dirname, '..', 'support', 'envWatch.cjs');
const envReadFile = join(mkdtempSync(join(tmpdir(), 'env-watch-')), 'read.txt');

/**
 * The SDKs' families of environment variables (docs/decisions.md, "Telemetry settings"): every name of
 * them that the bundle holds or the process reads must be in the table.
 */
const SDK_FAMILIES =
  /^(APPLICATIONINSIGHTS|APPLICATION_INSIGHTS|APPINSIGHTS|APPSETTING|OTEL|AZURE|WEBSITE|FUNCTIONS|CONTAINER_APP|KUBERNETES|AKS|MICROSOFT|DEBUG)(_[A-Z0-9_]*)?$|^(HTTPS?|ALL|NO)_PROXY$|^(https?|all|no)_proxy$|^azure_[a-z_]+_disabled$/;

type Verdict = 'honoured' | 'refused' | 'not a setting' | "the worker's";
/** The table of docs/decisions.md, "Telemetry settings": each variable's verdict, and the value the honoured run sets. */
function readSettingsTable(): Map<string, { verdict: Verdict; value?: string }> {
  const doc = readFileSync(join(ROOT, 'docs', 'decisions.md'), 'utf8');
  const section = /^## Telemetry settings$([\s\S]*?)^## /m.exec(doc)?.[1] ?? '';
  const rows = [...section.matchAll(/^\| `([^`]+)` \| (honoured|refused|not a setting|the worker's) \| (.*) \|$/gm)];
  return new Map(rows.map(([, name, verdict, text]) => [name, { verdict: verdict as Verdict, value: /; `([^`]*)`$/.exec(text)?.[1] }]));
}

const SETTINGS = readSettingsTable();

/** What the table says of a name: a `DEBUG_*`-style row covers its family. */
function inTable(table: Map<string, unknown>, name: string): boolean {
  return table.has(name) || [...table.keys()].some((row) => row.endsWith('*') && name.startsWith(row.slice(0, -1)));
}

let app: PackagedApp;
let ingestion: Ingestion;
let azurite: Azurite;
let provider: OidcProvider;
let host: WorkerHost;
let exit: { code: number | null; ms: number };
const tokens: string[] = [];
const sent: Record<string, Sent> = {};

async function tokenFor(clientId: string, expired = false): Promise<string> {
  const token = await provider.server.issuer.buildToken({
    expiresIn: expired ? -3600 : 3600,
    scopesOrTransform: (_h, p) => Object.assign(p, { aud: AUDIENCE, azp: clientId, idtyp: 'app' }),
  });
  tokens.push(token);
  return token;
}

/** POSTs `body` through `to` (the main scenario's worker by default) with a traceParent, and notes the answer under `name` in `into`. */
async function post(name: string, token: string, body: unknown, to: WorkerHost = host, into: Record<string, Sent> = sent): Promise<void> {
  const traceId = randomBytes(16).toString('hex');
  const reply = await to.invoke({
    method: 'POST',
    url: FUNCTION_URL,
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
    traceParent: `00-${traceId}-${randomBytes(8).toString('hex')}-01`,
  });
  expect(reply.headers['x-request-id']).toBe(reply.invocationId);
  into[name] = { status: reply.status, requestId: reply.invocationId, traceId };
}

/**
 * A worker on the package, with the deployment's Node options, sending telemetry to `to`; initialised,
 * indexed and loaded as the host does. (Azurite may be stopped by the time the Entra describe starts
 * one: a call without a token is refused before any storage call.)
 */
async function startWorker(to: Ingestion, settings: Record<string, string> = {}, nodeArgs: readonly string[] = []): Promise<WorkerHost> {
  const worker = await WorkerHost.start({
    appDir: app.appDir,
    nodeArgs: [...deployedNodeArguments(), ...nodeArgs],
    settings: {
      PATH: process.env.PATH ?? '',
      APPLICATIONINSIGHTS_CONNECTION_STRING: to.connectionString,
      // The exporter sends over HTTPS: the worker trusts the local endpoint's self-signed certificate.
      NODE_EXTRA_CA_CERTS: to.caFile,
      TABLES_CONNECTION_STRING: azurite.connectionString,
      AUTH_OPENID_CONFIG_URL: provider.openIdConfigUrl,
      AUTH_AUDIENCE: AUDIENCE,
      ...settings,
    },
  });
  expect((await worker.init()).result.status).toBe('Success');
  await worker.metadata();
  await worker.load();
  return worker;
}

/** The scenarios' partners and loans: 501 with credit, 502 with little, 503 without numeric credit. */
async function seed(connectionString: string): Promise<void> {
  await createTables(connectionString, TABLES);
  await putPartner(tableClient(connectionString, TABLES.partnersTable), { clientId: 'tele-client', partnerId: 'TELE' });
  await putPartner(tableClient(connectionString, TABLES.partnersTable), { clientId: 'unnamed-client' });
  const loans = tableClient(connectionString, TABLES.loansTable);
  await putLoan(loans, { loanNumber: 501, partnerId: 'TELE', availableCredit: 1000, fundingInvestorId: 'I' });
  await putLoan(loans, { loanNumber: 502, partnerId: 'TELE', availableCredit: 10, fundingInvestorId: 'I' });
  await loans.upsertEntity({ partitionKey: '503', rowKey: '', PartnerId: 'TELE', FundingInvestorId: 'I' }, 'Replace');
}

beforeAll(async () => {
  [app, ingestion, azurite, provider] = await Promise.all([packagedApp(), startIngestion(), startAzurite(), startOidcProvider({ audience: AUDIENCE })]);
  await seed(azurite.connectionString);

  host = await startWorker(ingestion, { ENV_WATCH_FILE: envReadFile }, ['--require', ENV_WATCH]);

  const good = await tokenFor('tele-client');
  await post('accepted', good, [{ loanNumber: 501, requestor: REQUESTOR, amount: 100 }]);
  await post('rejected', good, [
    { loanNumber: 502, requestor: REQUESTOR, amount: 50 }, // above credit
    { loanNumber: 9999, requestor: REQUESTOR, amount: 5 }, // no such loan
    { loanNumber: 503, requestor: REQUESTOR, amount: 5 }, // no numeric credit: a data-quality warning too
  ]);
  await post('expired', await tokenFor('tele-client', true), [{ loanNumber: 501, requestor: REQUESTOR, amount: 1 }]);
  await post('unnamed', await tokenFor('unnamed-client'), [{ loanNumber: 501, requestor: REQUESTOR, amount: 1 }]);
  await azurite.stop(true);
  await post('storageDown', good, [{ loanNumber: 501, requestor: REQUESTOR, amount: 1 }]);

  // At once, as a scale-in does: nothing has had time to leave on the exporter's own schedule.
  const started = Date.now();
  const code = await host.terminate(GRACE_MS);
  exit = { code, ms: Date.now() - started };
}, 90_000);

afterAll(async () => {
  await host?.kill();
  await Promise.allSettled([ingestion?.stop(), azurite?.stop(true), provider?.stop()]);
  app?.remove();
});

const events = () => ofType(ingestion.envelopes, 'EventData').filter((e) => e.data.baseData.name === 'DrawRequestBatch');
const eventFor = (name: string): Envelope => {
  const found = events().filter((e) => e.data.baseData.properties?.requestId === sent[name].requestId);
  expect(found).toHaveLength(1);
  return found[0];
};

test('WorkerTerminate: the worker flushes and exits 0 within the grace period', () => {
  expect(exit.code).toBe(0);
  expect(exit.ms).toBeLessThan(GRACE_MS);
});

test('the requests got the statuses the scenario needs', () => {
  expect(Object.fromEntries(Object.entries(sent).map(([k, v]) => [k, v.status]))).toEqual({
    accepted: 204,
    rejected: 400,
    expired: 401,
    unnamed: 401,
    storageDown: 502,
  });
});

test('one DrawRequestBatch event per invocation, with its dimensions', () => {
  expect(events()).toHaveLength(5);
  const accepted = eventFor('accepted').data.baseData;
  expect(accepted.properties).toEqual({
    requestId: sent.accepted.requestId,
    outcome: 'Accepted',
    partnerId: 'TELE',
    clientId: 'tele-client',
    loanNumbers: '501',
  });
  expect(accepted.measurements).toEqual(
    expect.objectContaining({
      batchSize: 1,
      rejectedCount: 0,
      totalMs: expect.any(Number),
      authMs: expect.any(Number),
      readMs: expect.any(Number),
      commitMs: expect.any(Number),
    }),
  );

  const rejected = eventFor('rejected').data.baseData;
  expect(rejected.properties).toEqual(
    expect.objectContaining({
      outcome: 'Rejected',
      partnerId: 'TELE',
      clientId: 'tele-client',
      errorCodes: JSON.stringify({ InvalidAmount: 2, InvalidLoanNumber: 1 }),
      loanNumbers: '502,9999,503',
    }),
  );
  expect(rejected.measurements).toEqual(expect.objectContaining({ batchSize: 3, rejectedCount: 3 }));
  expect(rejected.measurements).not.toHaveProperty('commitMs');
});

test('the reason for a 401 goes to telemetry (never to the caller)', () => {
  expect(eventFor('expired').data.baseData.properties).toEqual(expect.objectContaining({ outcome: 'Unauthorized', reason: 'ERR_AUTH_EXPIRED' }));
  expect(eventFor('unnamed').data.baseData.properties).toEqual(
    expect.objectContaining({ outcome: 'Unauthorized', reason: 'ERR_AUTH_PARTNER_UNNAMED', clientId: 'unnamed-client' }),
  );
});

test('a dependency failure names the dependency and its failure code', () => {
  expect(eventFor('storageDown').data.baseData.properties).toEqual(
    expect.objectContaining({
      outcome: 'DependencyFailed',
      reason: 'ERR_STORAGE_UNREACHABLE',
      reasonDetail: expect.stringMatching(/^readBatchState/),
      partnerId: 'TELE',
    }),
  );
});

test('one trace per rejected element, findable by loan number', () => {
  const traces = ofType(ingestion.envelopes, 'MessageData').filter((e) => e.data.baseData.properties?.requestId === sent.rejected.requestId);
  const elements = traces.filter((t) => String(t.data.baseData.message).startsWith('DrawRequest element rejected'));
  expect(elements.map((t) => t.data.baseData.properties)).toEqual(
    expect.arrayContaining([
      expect.objectContaining({ index: '0', loanNumber: '502', code: 'InvalidAmount', pointer: '/0/amount', partnerId: 'TELE' }),
      expect.objectContaining({ index: '1', loanNumber: '9999', code: 'InvalidLoanNumber' }),
      expect.objectContaining({ index: '2', loanNumber: '503', code: 'InvalidAmount' }),
    ]),
  );
  expect(elements).toHaveLength(3);
});

test('data-quality warnings: a loan without numeric credit, a Partners row without PartnerId', () => {
  const warnings = ofType(ingestion.envelopes, 'MessageData').filter((e) => String(e.data.baseData.message).startsWith('Data quality'));
  expect(warnings.map((w) => w.data.baseData.properties)).toEqual(
    expect.arrayContaining([
      expect.objectContaining({ issue: 'LoanWithoutCredit', loanNumber: '503', requestId: sent.rejected.requestId }),
      expect.objectContaining({ issue: 'PartnerWithoutId', clientId: 'unnamed-client', requestId: sent.unnamed.requestId }),
    ]),
  );
  for (const w of warnings) expect(w.data.baseData.severityLevel).toBe('Warning');
});

test('everything an invocation records carries the operation id of its traceParent, dependencies included', () => {
  const { traceId } = sent.accepted;
  const correlated = ingestion.envelopes.filter((e) => e.tags['ai.operation.id'] === traceId);
  const types = new Set(correlated.map((e) => e.data.baseType));
  expect(types).toEqual(new Set(['EventData', 'RemoteDependencyData']));
  const dependencies = ofType(correlated, 'RemoteDependencyData').map((d) => d.data.baseData);
  // Table Storage, as the Azure SDK records it: the partner, loan and draw reads and the transaction,
  // each with the HTTP call to the account under it.
  const tableOperations = dependencies.filter((d) => d.type === 'InProc | Microsoft.Data.Tables').map((d) => String(d.name));
  expect(tableOperations.filter((n) => n === 'TableClient.listEntitiesPage').length).toBeGreaterThanOrEqual(3);
  expect(tableOperations).toContain('TableTransaction.submitTransaction');
  const storageCalls = dependencies.filter((d) => String(d.target).includes(`127.0.0.1:${azurite.port}`));
  expect(storageCalls.map((d) => String(d.name))).toEqual(expect.arrayContaining([expect.stringMatching(/Loans\(\)$/), 'POST /devstoreaccount1/$batch']));
  expect(storageCalls.every((d) => !String(d.data).includes(REQUESTOR))).toBe(true);
  // The identity provider: metadata and keys.
  expect(dependencies.some((d) => String(d.data ?? d.name).includes('/.well-known/openid-configuration'))).toBe(true);
  expect(dependencies.some((d) => String(d.data ?? d.name).includes('/jwks'))).toBe(true);
  expect(eventFor('rejected').tags['ai.operation.id']).toBe(sent.rejected.traceId);
});

test('the failing storage call of the dependency failure is recorded as a failed dependency of its invocation', () => {
  const correlated = ingestion.envelopes.filter((e) => e.tags['ai.operation.id'] === sent.storageDown.traceId);
  const failed = ofType(correlated, 'RemoteDependencyData').filter((d) => d.data.baseData.success === false);
  expect(failed.length).toBeGreaterThan(0);
});

test('a normal request records no exception and no failed dependency', () => {
  const { traceId } = sent.accepted;
  const correlated = ingestion.envelopes.filter((e) => e.tags['ai.operation.id'] === traceId);
  expect(ofType(correlated, 'ExceptionData')).toHaveLength(0);
  expect(ofType(correlated, 'RemoteDependencyData').filter((d) => d.data.baseData.success === false)).toHaveLength(0);
});

test('telemetry names the service as its cloud role', () => {
  expect(new Set(ingestion.envelopes.map((e) => e.tags['ai.cloud.role']))).toEqual(new Set(['draw-request-service']));
});

test('the host records requests: this service sends no request telemetry of its own', () => {
  expect(ofType(ingestion.envelopes, 'RequestData')).toHaveLength(0);
});

test('no token, secret, connection string, requestor or request body is sent', () => {
  const everything = ingestion.rawBodies.join('\n');
  expect(everything.length).toBeGreaterThan(1000);
  for (const token of tokens) {
    expect(everything).not.toContain(token);
    expect(everything).not.toContain(token.split('.')[2]); // not even the signature
  }
  expect(everything).not.toMatch(/Bearer|AccountKey|Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/);
  expect(everything).not.toContain(REQUESTOR);
  expect(everything).not.toContain('"requestor"');
  expect(everything).not.toContain('client_secret');
});

describe('every environment variable the telemetry SDK reads is in the table of docs/decisions.md, honoured or refused', () => {
  const table = SETTINGS;

  test('the table is whole and agrees with lib/config.ts: its refused rows are exactly the variables refused by name', () => {
    expect(table.size).toBeGreaterThan(100);
    const refused = [...table].filter(([, row]) => row.verdict === 'refused').map(([name]) => name);
    expect(refused.sort()).toEqual(Object.keys(REFUSED_TELEMETRY_SETTINGS).sort());
    const honoured = [...table].filter(([, row]) => row.verdict === 'honoured');
    // Each honoured row says what the honoured run sets, but the service's own two settings (tested above and below).
    expect(honoured.filter(([, row]) => row.value === undefined).map(([name]) => name)).toEqual([
      'APPLICATIONINSIGHTS_CONNECTION_STRING',
      'APPLICATIONINSIGHTS_AUTHENTICATION_STRING',
    ]);
  });

  test("the shipped bundle names no variable of the SDKs' families the table does not list", () => {
    const bundle = readFileSync(join(app.appDir, 'dist', 'bundle', 'main.js'), 'utf8');
    const names = new Set([
      ...[...bundle.matchAll(/process\.env\.([A-Za-z_][A-Za-z0-9_]*)/g)].map((m) => m[1]),
      ...[...bundle.matchAll(/["'`]([A-Za-z][A-Za-z0-9]*(?:_[A-Za-z0-9]+)+)["'`]/g)].map((m) => m[1]).filter((n) => SDK_FAMILIES.test(n)),
    ]);
    expect(names.size).toBeGreaterThan(80);
    expect([...names].filter((n) => SDK_FAMILIES.test(n) && !inTable(table, n))).toEqual([]);
  });

  test('the worker running the package read no variable of those families the table does not list (names built at run time included)', () => {
    const read = readFileSync(envReadFile, 'utf8').split('\n');
    expect(read).toEqual(expect.arrayContaining(['APPLICATIONINSIGHTS_CONNECTION_STRING', 'OTEL_SDK_DISABLED', 'APPSETTING_APPINSIGHTS_INSTRUMENTATIONKEY']));
    expect(read.filter((n) => SDK_FAMILIES.test(n) && !inTable(table, n))).toEqual([]);
    // The environment enumerated as a whole: only the `debug` package does, for DEBUG_*.
    if (read.includes('*')) expect(table.get('DEBUG_*')?.verdict).toBe('honoured');
  });
});

describe('every honoured variable set at once (the values of the table): telemetry arrives whole', () => {
  let honouredIngestion: Ingestion;
  let worker: WorkerHost;
  const answers: Record<string, Sent> = {};

  beforeAll(async () => {
    const settings: Record<string, string> = {};
    for (const [name, row] of SETTINGS) {
      if (row.verdict !== 'honoured' || row.value === undefined) continue;
      if (name.endsWith('*')) {
        const [k, v] = row.value.split('=');
        settings[k] = v;
      } else settings[name] = row.value;
    }
    honouredIngestion = await startIngestion();
    // Azurite is stopped by the main scenario: this one has storage of its own, and the same loans.
    const storage = await startAzurite();
    await seed(storage.connectionString);
    worker = await startWorker(honouredIngestion, { ...settings, TABLES_CONNECTION_STRING: storage.connectionString });
    const good = await tokenFor('tele-client');
    for (const [name, body] of [
      ['accepted', [{ loanNumber: 501, requestor: REQUESTOR, amount: 10 }]],
      ['rejected', [{ loanNumber: 9999, requestor: REQUESTOR, amount: 5 }]],
    ] as const)
      await post(name, good, body, worker, answers);
    await worker.terminate(GRACE_MS);
    await storage.stop(true);
  }, 90_000);

  afterAll(async () => {
    await worker?.kill();
    await honouredIngestion?.stop();
  });

  test('the requests are served, and their events, element trace and dependencies arrive, correlated', () => {
    expect({ accepted: answers.accepted.status, rejected: answers.rejected.status }).toEqual({ accepted: 204, rejected: 400 });
    const arrived = honouredIngestion.envelopes;
    const eventOf = (name: string) =>
      ofType(arrived, 'EventData').filter(
        (e) => e.data.baseData.name === 'DrawRequestBatch' && e.data.baseData.properties?.requestId === answers[name].requestId,
      );
    expect(eventOf('accepted')).toHaveLength(1);
    expect(eventOf('rejected')).toHaveLength(1);
    expect(eventOf('accepted')[0].tags['ai.operation.id']).toBe(answers.accepted.traceId);
    expect(ofType(arrived, 'MessageData').filter((t) => t.data.baseData.properties?.requestId === answers.rejected.requestId)).toHaveLength(1);
    const dependencies = ofType(arrived, 'RemoteDependencyData')
      .filter((d) => d.tags['ai.operation.id'] === answers.accepted.traceId)
      .map((d) => String(d.data.baseData.name));
    expect(dependencies).toEqual(expect.arrayContaining(['TableClient.listEntitiesPage', 'TableTransaction.submitTransaction']));
    expect(dependencies.some((n) => n.includes('/jwks') || n.includes('openid-configuration'))).toBe(true);
    // In a function app the site's name is the role on-call filters by (the Functions resource detector sets it).
    expect(new Set(arrived.map((e) => e.tags['ai.cloud.role']))).toEqual(new Set([SETTINGS.get('WEBSITE_SITE_NAME')?.value]));
  });
});

describe('Entra ingestion (APPLICATIONINSIGHTS_AUTHENTICATION_STRING): the SDK sends with the managed identity', () => {
  // App Service's managed-identity endpoint, as Azure provides it to the worker (IDENTITY_ENDPOINT and
  // IDENTITY_HEADER): it hands out a token for the resource asked for.
  const IDENTITY_TOKEN = 'entra-ingestion-test-token';
  const CLIENT_ID = '11111111-2222-4333-8444-555555555555';
  const asked: { resource: string | null; clientId: string | null; header: string | undefined }[] = [];
  let identity: Server;
  let entraIngestion: Ingestion;
  let worker: WorkerHost;
  let status: number;
  let code: number | null;

  beforeAll(async () => {
    identity = createServer((req, res) => {
      const query = new URL(req.url ?? '/', 'http://identity').searchParams;
      asked.push({ resource: query.get('resource'), clientId: query.get('client_id'), header: req.headers['x-identity-header'] as string | undefined });
      const expiresOn = Math.floor(Date.now() / 1000) + 3600;
      res.writeHead(200, { 'content-type': 'application/json' }).end(
        JSON.stringify({
          access_token: IDENTITY_TOKEN,
          expires_on: String(expiresOn),
          resource: query.get('resource'),
          token_type: 'Bearer',
          client_id: CLIENT_ID,
        }),
      );
    });
    await new Promise<void>((resolve) => identity.listen(0, '127.0.0.1', resolve));
    const { port } = identity.address() as AddressInfo;
    entraIngestion = await startIngestion();
    worker = await startWorker(entraIngestion, {
      APPLICATIONINSIGHTS_AUTHENTICATION_STRING: `Authorization=AAD;ClientId=${CLIENT_ID}`,
      IDENTITY_ENDPOINT: `http://127.0.0.1:${port}/msi/token`,
      IDENTITY_HEADER: 'identity-header-value',
    });
    // No token: a 401 whose event must still arrive, sent with the identity's token.
    status = (await worker.invoke({ method: 'POST', url: FUNCTION_URL, headers: { 'content-type': 'application/json' }, body: '[]' })).status;
    code = await worker.terminate(GRACE_MS);
  }, 60_000);

  afterAll(async () => {
    await worker?.kill();
    await entraIngestion?.stop();
    await new Promise((resolve) => identity?.close(resolve));
  });

  test("the invocation's event arrives, sent with the identity's bearer token for Azure Monitor", () => {
    expect({ status, code }).toEqual({ status: 401, code: 0 });
    expect(ofType(entraIngestion.envelopes, 'EventData').map((e) => e.data.baseData.properties?.outcome)).toEqual(['Unauthorized']);
    expect(new Set(entraIngestion.authorizations)).toEqual(new Set([`Bearer ${IDENTITY_TOKEN}`]));
    expect(asked.length).toBeGreaterThan(0);
    expect(asked[0]).toEqual({ resource: expect.stringMatching(/^https:\/\/monitor\.azure\.com/), clientId: CLIENT_ID, header: 'identity-header-value' });
  });
});
