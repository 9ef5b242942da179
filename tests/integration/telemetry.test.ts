/**
 * The telemetry that really leaves the process, from what ships: the zip of `npm run package` runs
 * under the real Functions Node.js worker (tests/support/workerHost.ts, with the deployment's Node
 * options) with APPLICATIONINSIGHTS_CONNECTION_STRING pointing at a local HTTPS ingestion endpoint.
 * Invocations carry a W3C traceParent as the host sends them: accepted, rejected, unauthorized and
 * dependency-failure requests. Then the host terminates the worker at once, as a scale-in does, and
 * the envelopes that arrived are checked: names, dimensions, the Table Storage rounds and
 * identity-provider dependencies, correlation with each invocation's operation id, that nothing
 * emitted before the terminate was lost, and that no secret is in them. A second worker, with a fault
 * proxy in front of storage, shows what a batch of 100 costs and that a failed or slow storage call
 * is still seen.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { startAzurite, type Azurite } from '../../dev/azurite';
import { createTables, putLoan, putPartner, tableClient } from '../../dev/demoData';
import { startOidcProvider, type OidcProvider } from '../../dev/oidcProvider';
import { ofType, startIngestion, type Envelope, type Ingestion } from '../support/ingestion';
import { startChaosProxy, type ChaosProxy } from '../support/chaosProxy';
import { connectionStringVia } from '../support/storageProxies';
import { deployedNodeArguments, packagedApp, type PackagedApp } from '../support/packagedApp';
import { REFUSED_TELEMETRY_SETTINGS } from '../../lib/config';
import { ROOT } from '../../scripts/bundle';
import { WorkerHost } from '../support/workerHost';

const AUDIENCE = 'api://telemetry-tests';
const TABLES = {
  partnersTable: 'Partners',
  loansTable: 'Loans',
  drawsTable: 'DrawRequests',
  idempotencyTable: 'IdempotencyKeys',
  stoppedClientsTable: 'StoppedClients',
};
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
 * The SDKs' families of environment variables (docs/contributing.md §9, "Telemetry settings"): every name of
 * them that the bundle holds or the process reads must be in the table.
 */
const SDK_FAMILIES =
  /^(APPLICATIONINSIGHTS|APPLICATION_INSIGHTS|APPINSIGHTS|APPSETTING|OTEL|AZURE|WEBSITE|FUNCTIONS|CONTAINER_APP|KUBERNETES|AKS|MICROSOFT|DEBUG)(_[A-Z0-9_]*)?$|^(HTTPS?|ALL|NO)_PROXY$|^(https?|all|no)_proxy$|^azure_[a-z_]+_disabled$/;

type Verdict = 'honoured' | 'refused' | 'not a setting' | "the worker's";
/** The table of docs/contributing.md §9, "Telemetry settings": each variable's verdict, and the value the honoured run sets. */
function readSettingsTable(): Map<string, { verdict: Verdict; value?: string }> {
  const doc = readFileSync(join(ROOT, 'docs', 'contributing.md'), 'utf8');
  const section = /^## \d+\. Telemetry settings$([\s\S]*?)(?:^## |(?![\s\S]))/m.exec(doc)?.[1] ?? '';
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
      rejectedElements: '0:502:InvalidAmount,1:9999:InvalidLoanNumber,2:503:InvalidAmount',
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

test('the rejected elements are in the event, not a trace each: the only trace of the 400 is its data-quality warning', () => {
  const traces = ofType(ingestion.envelopes, 'MessageData').filter((e) => e.tags['ai.operation.id'] === sent.rejected.traceId);
  expect(traces.map((t) => t.data.baseData.properties?.issue)).toEqual(['LoanWithoutCredit']);
});

test('data-quality warnings: a loan without numeric credit, a Partners row without PartnerId', () => {
  const warnings = ofType(ingestion.envelopes, 'MessageData').filter((e) => String(e.data.baseData.message).startsWith('Data quality'));
  expect(warnings.map((w) => w.data.baseData.properties)).toEqual(
    expect.arrayContaining([
      expect.objectContaining({ issue: 'LoanWithoutCredit', loanNumbers: '503', requestId: sent.rejected.requestId }),
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
  // Table Storage, one HTTP dependency of the account per round: the partner read (its row and its
  // stop-list row: two calls), the batch's reads (a loan and a draw row: two calls) and the commit. The Azure SDK's own spans are not recorded.
  const storage = dependencies.filter((d) => d.target === `127.0.0.1:${azurite.port}`);
  expect(storage.map((d) => [d.name, d.type, d.resultCode, d.success, d.properties?.calls, d.properties?.failedCalls]).sort()).toEqual([
    ['commitDraws DrawRequests', 'Http', '202', true, '1', '0'],
    ['readBatchState Loans+DrawRequests', 'Http', '200', true, '2', '0'],
    ['readPartner Partners+StoppedClients', 'Http', '200', true, '2', '0'],
  ]);
  expect(dependencies.filter((d) => String(d.type).startsWith('InProc'))).toEqual([]);
  expect(storage.every((d) => !JSON.stringify(d).includes(REQUESTOR))).toBe(true);
  // The identity provider: metadata and keys.
  expect(dependencies.some((d) => String(d.data ?? d.name).includes('/.well-known/openid-configuration'))).toBe(true);
  expect(dependencies.some((d) => String(d.data ?? d.name).includes('/jwks'))).toBe(true);
  expect(eventFor('rejected').tags['ai.operation.id']).toBe(sent.rejected.traceId);
});

test("the invocation's trace context is set once, by the service: the worker runs no invocation hook, and tells the host of none", () => {
  const invocations = host.logs.filter((l) => l.message.includes('received FunctionInvocationRequest'));
  expect(invocations.length).toBeGreaterThanOrEqual(Object.keys(sent).length);
  expect(host.logs.filter((l) => /"(pre|post)Invocation" hooks/.test(l.message)).map((l) => l.message)).toEqual([]);
});

test('the failing storage calls of the dependency failure are recorded: the round, and each call with its table, partition and row', () => {
  const correlated = ingestion.envelopes.filter((e) => e.tags['ai.operation.id'] === sent.storageDown.traceId);
  const failed = ofType(correlated, 'RemoteDependencyData')
    .filter((d) => d.data.baseData.success === false)
    .map((d) => d.data.baseData);
  const round = failed.find((d) => d.name === 'readBatchState Loans+DrawRequests');
  expect(round).toEqual(
    expect.objectContaining({
      target: `127.0.0.1:${azurite.port}`,
      resultCode: 'ECONNREFUSED',
      properties: expect.objectContaining({ failure: 'ERR_STORAGE_UNREACHABLE' }),
    }),
  );
  const calls = failed.filter((d) => d !== round);
  expect(calls.length).toBeGreaterThan(0);
  expect(calls.map((d) => d.properties?.table)).toEqual(expect.arrayContaining(['Loans']));
  // Refused when the attempt opened a connection; reset when it went out on a kept-alive one that the
  // stopped storage had not closed yet (which of the two comes first is a race): either is the truth.
  expect(calls.find((d) => d.properties?.table === 'Loans')).toEqual(
    expect.objectContaining({
      resultCode: expect.stringMatching(/^(ECONNREFUSED|ECONNRESET)$/),
      properties: expect.objectContaining({ partitionKey: '501', rowKey: '', operation: 'readBatchState' }),
    }),
  );
});

test('a normal request records no exception and no failed dependency', () => {
  const { traceId } = sent.accepted;
  const correlated = ingestion.envelopes.filter((e) => e.tags['ai.operation.id'] === traceId);
  expect(ofType(correlated, 'ExceptionData')).toHaveLength(0);
  expect(ofType(correlated, 'RemoteDependencyData').filter((d) => d.data.baseData.success === false)).toHaveLength(0);
});

test('telemetry names the service as its cloud role, and the instance by its host name', () => {
  expect(new Set(ingestion.envelopes.map((e) => e.tags['ai.cloud.role']))).toEqual(new Set(['draw-request-service']));
  expect(new Set(ingestion.envelopes.map((e) => e.tags['ai.cloud.roleInstance']))).toEqual(new Set([hostname()]));
});

test('the host records requests: this service sends no request telemetry of its own', () => {
  expect(ofType(ingestion.envelopes, 'RequestData')).toHaveLength(0);
});

test('nothing nobody reads: no metric (the standard metrics Application Insights computes from the records, the resource metric), no marker of metrics counted', () => {
  expect(ofType(ingestion.envelopes, 'MetricData').map((m) => JSON.stringify(m.data.baseData).slice(0, 80))).toEqual([]);
  expect(ingestion.envelopes.filter((e) => JSON.stringify(e).includes('_MS.ProcessedByMetricExtractors'))).toEqual([]);
  expect(ofType(ingestion.envelopes, 'RemoteDependencyData').length).toBeGreaterThan(3);
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

describe('every environment variable the telemetry SDK reads is in the table of docs/contributing.md §9, honoured or refused', () => {
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

  test('the requests are served, and their events (the rejected element in its event) and storage rounds arrive, correlated', () => {
    expect({ accepted: answers.accepted.status, rejected: answers.rejected.status }).toEqual({ accepted: 204, rejected: 400 });
    const arrived = honouredIngestion.envelopes;
    const eventOf = (name: string) =>
      ofType(arrived, 'EventData').filter(
        (e) => e.data.baseData.name === 'DrawRequestBatch' && e.data.baseData.properties?.requestId === answers[name].requestId,
      );
    expect(eventOf('accepted')).toHaveLength(1);
    expect(eventOf('rejected')).toHaveLength(1);
    expect(eventOf('accepted')[0].tags['ai.operation.id']).toBe(answers.accepted.traceId);
    expect(eventOf('rejected')[0].data.baseData.properties?.rejectedElements).toBe('0:9999:InvalidLoanNumber');
    const dependencies = ofType(arrived, 'RemoteDependencyData')
      .filter((d) => d.tags['ai.operation.id'] === answers.accepted.traceId)
      .map((d) => String(d.data.baseData.name));
    expect(dependencies).toEqual(expect.arrayContaining(['readBatchState Loans+DrawRequests', 'commitDraws DrawRequests']));
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

describe('one dependency per storage round, through the worker and a fault proxy: what a batch costs, and a failed or slow call still seen', () => {
  let roundsIngestion: Ingestion;
  let storage: Azurite;
  let chaos: ChaosProxy;
  let worker: WorkerHost;
  const answers: Record<string, Sent> = {};
  /** The loan whose draw-row read fails once (a 503 the SDK's retry gets past). */
  const FAILING_LOAN = 1250;
  let failOnce = true;
  let slowReadsMs = 0;

  const batch = (first: number, amount = 10) => Array.from({ length: 100 }, (_, i) => ({ loanNumber: first + i, requestor: REQUESTOR, amount }));

  beforeAll(async () => {
    storage = await startAzurite();
    await seed(storage.connectionString);
    const loans = tableClient(storage.connectionString, TABLES.loansTable);
    for (let first = 1000; first < 1400; first += 50)
      await Promise.all(
        Array.from({ length: 50 }, (_, i) => putLoan(loans, { loanNumber: first + i, partnerId: 'TELE', availableCredit: 1000, fundingInvestorId: 'I' })),
      );
    chaos = await startChaosProxy(storage.port);
    chaos.decide = (kind, path) => {
      if (kind === 'read' && slowReadsMs > 0) return { kind: 'delay', ms: slowReadsMs };
      if (kind === 'read' && failOnce && path.includes('/DrawRequests()') && path.includes(`RowKey eq '${FAILING_LOAN}'`)) {
        failOnce = false;
        return { kind: 'status', status: 503 };
      }
      return { kind: 'pass' };
    };
    roundsIngestion = await startIngestion();
    worker = await startWorker(roundsIngestion, { TABLES_CONNECTION_STRING: connectionStringVia(storage.connectionString, storage.port, chaos.port) });
    const good = await tokenFor('tele-client');
    // The first request also reads the partner and the identity provider's metadata and keys.
    await post('first', good, [{ loanNumber: 1000, requestor: REQUESTOR, amount: 10 }], worker, answers);
    await post('single', good, [{ loanNumber: 1001, requestor: REQUESTOR, amount: 10 }], worker, answers);
    await post('accepted100', good, batch(1100), worker, answers);
    await post('oneFailedRead', good, batch(1200), worker, answers);
    await post('refused100', good, batch(1300, 5000), worker, answers);
    slowReadsMs = 400;
    await post('slow', good, [{ loanNumber: 1002, requestor: REQUESTOR, amount: 10 }], worker, answers);
    await worker.terminate(GRACE_MS);
  }, 120_000);

  afterAll(async () => {
    await worker?.kill();
    await Promise.allSettled([roundsIngestion?.stop(), chaos?.close(), storage?.stop(true)]);
  });

  const recorded = (name: string) => roundsIngestion.envelopes.filter((e) => e.tags['ai.operation.id'] === answers[name].traceId);
  const cost = (name: string) => ({
    envelopes: recorded(name).length,
    bytes: recorded(name).reduce((sum, e) => sum + Buffer.byteLength(JSON.stringify(e)), 0),
  });
  const dependencies = (name: string) => ofType(recorded(name), 'RemoteDependencyData').map((d) => d.data.baseData);
  const target = () => `127.0.0.1:${chaos.port}`;

  test('the requests got their statuses', () => {
    expect(Object.fromEntries(Object.entries(answers).map(([k, v]) => [k, v.status]))).toEqual({
      first: 204,
      single: 204,
      accepted100: 204,
      oneFailedRead: 204,
      refused100: 400,
      slow: 204,
    });
  });

  test('what each costs, as the ingestion endpoint received it', () => {
    const costs = Object.fromEntries(Object.keys(answers).map((name) => [name, cost(name)]));
    console.log(`telemetry per request (envelopes, bytes of JSON): ${JSON.stringify(costs)}`);
    expect(costs.first.envelopes).toBeLessThanOrEqual(6);
    expect(costs.single.envelopes).toBeLessThanOrEqual(6);
    expect(costs.single.bytes).toBeLessThanOrEqual(4 * 1024);
    expect(costs.accepted100.envelopes).toBeLessThanOrEqual(12);
    expect(costs.accepted100.bytes).toBeLessThanOrEqual(24 * 1024);
    expect(costs.refused100.envelopes).toBeLessThanOrEqual(12);
    expect(costs.refused100.bytes).toBeLessThanOrEqual(32 * 1024);
  });

  test('a batch of 100: one dependency for its 200 reads and one for its commit', () => {
    expect(dependencies('accepted100').map((d) => [d.name, d.target, d.resultCode, d.success, d.properties?.calls, d.properties?.statuses])).toEqual(
      expect.arrayContaining([
        ['readBatchState Loans+DrawRequests', target(), '200', true, '200', '{"200":200}'],
        ['commitDraws DrawRequests', target(), '202', true, '1', '{"202":1}'],
      ]),
    );
    expect(dependencies('accepted100')).toHaveLength(2);
  });

  test('a refused batch of 100: its elements in one event dimension, index, loan and code', () => {
    const [event] = ofType(recorded('refused100'), 'EventData');
    expect(event.data.baseData.properties?.rejectedElements).toBe(Array.from({ length: 100 }, (_, i) => `${i}:${1300 + i}:InvalidAmount`).join(','));
    expect(ofType(recorded('refused100'), 'MessageData')).toEqual([]);
  });

  test('one failed read among 200: seen by itself with its status, storage code, table, partition and row (the loan); the round counts it', () => {
    const all = dependencies('oneFailedRead');
    const failed = all.filter((d) => d.success === false);
    expect(failed).toEqual([
      expect.objectContaining({
        name: 'GET DrawRequests',
        type: 'Http',
        target: target(),
        resultCode: '503',
        properties: expect.objectContaining({ operation: 'readBatchState', table: 'DrawRequests', rowKey: String(FAILING_LOAN), storageCode: 'ServerBusy' }),
      }),
    ]);
    expect(failed[0].properties?.partitionKey).toMatch(/^\d{4}-\d{2}-\d{2}$/);
    const round = all.find((d) => d.name === 'readBatchState Loans+DrawRequests');
    // The SDK retried the call: 201 calls, one failed, and the round succeeded.
    expect(round).toEqual(
      expect.objectContaining({
        success: true,
        resultCode: '200',
        properties: expect.objectContaining({ calls: '201', failedCalls: '1', statuses: '{"200":200,"503":1}' }),
      }),
    );
    // The failing-dependencies tile groups by target, type and result code: the call is one row of it.
    const ofRound = recorded('oneFailedRead').find((e) => e.data.baseData === failed[0]);
    expect(ofRound?.tags['ai.operation.parentId']).toBe(round?.id);
  });

  test('a slow round shows its duration', () => {
    const round = dependencies('slow').find((d) => d.name === 'readBatchState Loans+DrawRequests');
    const [, h, m, s] = /^(?:\d+\.)?(\d+):(\d+):([\d.]+)$/.exec(String(round?.duration)) ?? [];
    expect(Number(h) * 3600 + Number(m) * 60 + Number(s)).toBeGreaterThanOrEqual(0.4);
  });
});
