/**
 * The shipped package under the real Azure Functions Node.js worker. The zip of `npm run package`
 * is built and unpacked as a deployment does, and tests/support/workerHost.ts drives the worker
 * over gRPC as the Functions host does: init, indexing, load, invocations as RpcHttp, terminate.
 * Nothing is called in-process; storage is a real Azurite and tokens are verified through a real
 * local OpenID provider (tests/support/harness.ts sets both up and seeds them). Every answer is
 * checked against the partner contract, and its X-Request-Id against the invocation id the host
 * sent (docs/contract.md §2.1).
 */
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connectionStringFor, freePort } from '../../dev/azurite';
import { tableClient } from '../../dev/demoData';
import { DETAILS, internalError } from '../../lib/problem';
import { contractViolations } from '../support/contract';
import { AUDIENCE, Harness, draw, type Reply } from '../support/harness';
import { deployedNodeArguments, packagedApp, type PackagedApp } from '../support/packagedApp';
import { VENDORED_WORKER_DIR, WorkerHost, findWorkerDir, type FunctionMetadata } from '../support/workerHost';

const FUNCTION_URL = 'https://draw-request-service.example/DrawRequest';
const GRACE_MS = 5_000;

let app: PackagedApp;
let appDir: string;
let workerDir: string;
let harness: Harness;
let token: string;

interface Started {
  readonly host: WorkerHost;
  readonly init: Record<string, unknown>;
  readonly metadata: { response: Record<string, unknown>; functions: FunctionMetadata[] };
  readonly loads: Record<string, unknown>[];
}

/** A worker on the unpacked package with these app settings, initialised, indexed and loaded as the host does. */
async function startWorker(settings: Record<string, string | undefined>, nodeArgs?: readonly string[]): Promise<Started> {
  const defined = Object.fromEntries(Object.entries(settings).filter((e): e is [string, string] => e[1] !== undefined));
  const host = await WorkerHost.start({ appDir, workerDir, settings: defined, nodeArgs });
  const init = await host.init();
  const metadata = await host.metadata();
  const loads = await host.load();
  return { host, init, metadata, loads };
}

type WorkerReply = Reply & { readonly invocationId: string };

/** POSTs `body` through the worker; every answer must match the contract and carry the invocation id. */
async function post(host: WorkerHost, body: unknown, options: { token?: string | null; headers?: Record<string, string> } = {}): Promise<WorkerReply> {
  const bearer = options.token === undefined ? token : options.token;
  const headers: Record<string, string> = { 'content-type': 'application/json', ...options.headers };
  if (bearer !== null) headers.authorization = `Bearer ${bearer}`;
  const answer = await host.invoke({ method: 'POST', url: FUNCTION_URL, headers, body: JSON.stringify(body) });
  expect(answer.result.status).toBe('Success');
  const text = answer.body.toString('utf8');
  const reply = { status: answer.status, headers: answer.headers, text, body: text === '' ? undefined : JSON.parse(text), invocationId: answer.invocationId };
  expect(contractViolations(reply)).toEqual([]);
  expect(reply.headers['x-request-id']).toBe(answer.invocationId);
  if (reply.body !== undefined) expect(reply.body.requestId).toBe(answer.invocationId);
  return reply;
}

/** The function's own log lines of one invocation, as the worker sent them to the host. */
function logsOf(host: WorkerHost, reply: WorkerReply) {
  return host.logs.filter((l) => l.invocationId === reply.invocationId && l.logCategory === 'User').map((l) => ({ level: l.level, message: l.message }));
}

beforeAll(async () => {
  workerDir = findWorkerDir(); // first: a wrong FUNCTIONS_NODE_WORKER_DIR fails the suite here, saying so
  app = await packagedApp();
  appDir = app.appDir;
  harness = await Harness.start();
  token = await harness.token();
}, 120_000);

afterAll(async () => {
  await harness?.stop();
  app?.remove();
});

test('a worker folder without the worker: the suite fails saying which folder and what to do', () => {
  const elsewhere = join(tmpdir(), 'no-such-worker');
  expect(() => findWorkerDir({ FUNCTIONS_NODE_WORKER_DIR: elsewhere })).toThrow(
    `No Azure Functions Node.js worker in ${elsewhere} (no dist/src/nodejsWorker.js). FUNCTIONS_NODE_WORKER_DIR must name a worker folder; unset it to use the vendored worker.`,
  );
  expect(findWorkerDir({})).toBe(VENDORED_WORKER_DIR);
});

describe('a configured instance', () => {
  let started: Started;
  let host: WorkerHost;

  beforeAll(async () => {
    started = await startWorker(harness.settings);
    host = started.host;
  }, 30_000);

  afterAll(() => host?.kill());

  test('indexing: the worker loads the bundle and reports DrawRequest alone, POST on route DrawRequest, anonymous, answered through an http output', () => {
    expect(started.init).toEqual(expect.objectContaining({ result: expect.objectContaining({ status: 'Success' }) }));
    expect(started.init.workerMetadata).toEqual(expect.objectContaining({ customProperties: { modelName: '@azure/functions', modelVersion: '4.16.5' } }));
    const { response, functions } = started.metadata;
    expect(response).toEqual(expect.objectContaining({ useDefaultMetadataIndexing: false, result: expect.objectContaining({ status: 'Success' }) }));
    expect(functions.map((f) => f.name)).toEqual(['DrawRequest']);
    const [trigger, output] = functions[0].bindings;
    expect(trigger).toEqual(
      expect.objectContaining({
        type: 'httpTrigger',
        direction: 'in',
        route: 'DrawRequest',
        methods: ['POST'],
        authLevel: 'anonymous',
        name: expect.any(String),
      }),
    );
    expect(output).toEqual({ type: 'http', name: '$return', direction: 'out' });
    expect(functions[0].bindings).toHaveLength(2);
    expect(started.loads.map((l) => l.result)).toEqual([expect.objectContaining({ status: 'Success' })]);
  });

  test('204: the draw is recorded under the invocation id, and the log line reaches the host under it', async () => {
    const loan = await harness.loan();
    const reply = await post(host, [draw(loan, 250.5)]);
    expect(reply.status).toBe(204);
    expect(reply.text).toBe('');
    const rows = await harness.drawsFor(loan);
    expect(rows.map((r) => ({ partner: r.PartnerId, amount: r.Amount, requestId: r.RequestId }))).toEqual([
      { partner: 'PARTNER-A', amount: 250.5, requestId: reply.invocationId },
    ]);
    expect(logsOf(host, reply)).toEqual([{ level: 'Information', message: expect.stringMatching(/^DrawRequest accepted: 1 draw\(s\) for partner PARTNER-A/) }]);
  });

  test('400: problem+json listing exactly the rejected elements; nothing stored', async () => {
    const loan = await harness.loan();
    const reply = await post(host, [
      { loanNumber: 'twelve', requestor: 'jane.doe@partner.example', amount: 10 },
      { LoanNumber: loan, requestor: 'jane.doe@partner.example', amount: 1.234 },
    ]);
    expect(reply.status).toBe(400);
    expect(reply.headers['content-type']).toBe('application/problem+json');
    expect(reply.body).toEqual({
      type: 'about:blank',
      title: 'Bad Request',
      status: 400,
      detail: '2 of 2 draw requests were rejected; none was submitted.',
      requestId: reply.invocationId,
      errors: [
        { index: 0, error: 'Invalid Loan Number', code: 'InvalidLoanNumber', pointer: '/0/loanNumber', detail: DETAILS.loanNumberFormat },
        { index: 1, loanNumber: loan, error: 'Invalid Amount', code: 'InvalidAmount', pointer: '/1/amount', detail: DETAILS.amountFormat },
      ],
    });
    expect(await harness.drawsFor(loan)).toEqual([]);
  });

  test('401 with WWW-Authenticate: no token, and a token for another audience; the reason only in the log', async () => {
    const loan = await harness.loan();
    const none = await post(host, [draw(loan)], { token: null });
    expect(none.status).toBe(401);
    expect(none.headers['www-authenticate']).toBe('Bearer');
    expect(logsOf(host, none)).toEqual([{ level: 'Warning', message: 'DrawRequest unauthorized: ERR_AUTH_MISSING' }]);

    const wrong = await post(host, [draw(loan)], { token: await harness.token({ aud: `${AUDIENCE}-other` }) });
    expect(wrong.status).toBe(401);
    expect(wrong.headers['www-authenticate']).toBe('Bearer error="invalid_token"');
    expect(logsOf(host, wrong)).toEqual([{ level: 'Warning', message: expect.stringContaining('ERR_AUTH_CLAIM (claim aud)') }]);
    expect(await harness.drawsFor(loan)).toEqual([]);
  });

  test('Idempotency-Key: the same keyed batch again answers 204 with Idempotent-Replay: true; storage holds one set of rows', async () => {
    const loans = [await harness.loan(), await harness.loan()];
    const batch = loans.map((loan) => draw(loan, 40));
    const key = randomUUID();
    const first = await post(host, batch, { headers: { 'idempotency-key': key } });
    expect(first.status).toBe(204);
    expect(first.headers['idempotent-replay']).toBeUndefined();
    const again = await post(host, batch, { headers: { 'idempotency-key': key } });
    expect(again.status).toBe(204);
    expect(again.headers['idempotent-replay']).toBe('true');
    expect(again.invocationId).not.toBe(first.invocationId);

    const rows = await harness.drawsFor(...loans);
    expect(rows.map((r) => ({ loan: String(r.rowKey), key: r.IdempotencyKey, requestId: r.RequestId })).sort((a, b) => a.loan.localeCompare(b.loan))).toEqual(
      loans.map((loan) => ({ loan: String(loan), key, requestId: first.invocationId })),
    );
    const records: Record<string, unknown>[] = [];
    for await (const row of tableClient(harness.azurite.connectionString, harness.config.tables.idempotencyTable).listEntities<Record<string, unknown>>())
      if (row.RequestId === first.invocationId || row.RequestId === again.invocationId) records.push(row);
    // The key's holder and the batch's own row, both written by the request that took the key (contract §4.1).
    expect(records.map((r) => [r.rowKey === '' ? 'holder' : r.State, r.RequestId]).sort()).toEqual([
      ['Taken', first.invocationId],
      ['holder', first.invocationId],
    ]);
  });

  // Last in this describe: it ends the describe's worker.
  test('WorkerTerminate: the worker exits 0 within the grace period', async () => {
    const started = Date.now();
    expect(await host.terminate(GRACE_MS)).toBe(0);
    expect(Date.now() - started).toBeLessThan(GRACE_MS);
  });
});

describe('storage unreachable', () => {
  let host: WorkerHost;

  beforeAll(async () => {
    // A port nobody listens on: every storage call is refused.
    ({ host } = await startWorker({ ...harness.settings, TABLES_CONNECTION_STRING: connectionStringFor(await freePort()) }));
  }, 30_000);

  afterAll(() => host?.kill());

  test('502 problem+json, generic; the failing dependency is logged at Error level under the invocation id', async () => {
    const reply = await post(host, [draw(1001)]);
    expect(reply.status).toBe(502);
    expect(reply.body).toEqual({
      type: 'about:blank',
      title: 'Bad Gateway',
      status: 502,
      detail: expect.stringContaining('Retry later'),
      requestId: reply.invocationId,
    });
    expect(logsOf(host, reply)).toEqual([
      { level: 'Error', message: expect.stringMatching(/^DrawRequest dependency failed: table storage \S+ ERR_STORAGE_UNREACHABLE/) },
    ]);
  });
});

describe('a misconfigured instance (AUTH_AUDIENCE unset): loud, not invisible', () => {
  let started: Started;
  let host: WorkerHost;
  const accountKey = /AccountKey=([^;]+)/.exec(connectionStringFor(1))?.[1] as string;

  beforeAll(async () => {
    started = await startWorker({ ...harness.settings, AUTH_AUDIENCE: undefined });
    host = started.host;
  }, 30_000);

  afterAll(() => host?.kill());

  test('DrawRequest is still indexed and loaded', () => {
    expect(started.metadata.response).toEqual(expect.objectContaining({ useDefaultMetadataIndexing: false }));
    expect(started.metadata.functions.map((f) => f.name)).toEqual(['DrawRequest']);
    expect(started.loads.map((l) => (l.result as { status: string }).status)).toEqual(['Success']);
  });

  test('every invocation answers the generic 500 with its requestId, and logs at Error level the setting at fault', async () => {
    for (const options of [{}, { token: null }]) {
      const reply = await post(host, [draw(1001)], options);
      expect(reply.status).toBe(500);
      expect(reply.body).toEqual(JSON.parse(internalError(reply.invocationId).body as string));
      expect(logsOf(host, reply)).toEqual([{ level: 'Error', message: expect.stringContaining('AUTH_AUDIENCE is required') }]);
    }
  });

  test('the setting is also named once at start-up in the worker output; no secret is in any log', () => {
    expect(host.output).toContain('AUTH_AUDIENCE is required');
    const everything = `${host.output}\n${host.logs.map((l) => l.message).join('\n')}`;
    expect(everything).not.toContain(accountKey);
    expect(everything).not.toContain(harness.settings.TABLES_CONNECTION_STRING);
  });
});

describe('a defect under the deployed Node options: the logged stack names the TypeScript source', () => {
  let host: WorkerHost;
  let storage: Server;

  beforeAll(async () => {
    // A table endpoint whose every query answers a page holding a null row: the storage client throws a
    // TypeError reading it, which the service treats as a defect (lib/store.ts), answered 500.
    storage = createServer((_req, res) => res.writeHead(200, { 'content-type': 'application/json;odata=nometadata' }).end('{"value":[null]}'));
    await new Promise<void>((resolve) => storage.listen(0, '127.0.0.1', resolve));
    const { port } = storage.address() as AddressInfo;
    ({ host } = await startWorker({ ...harness.settings, TABLES_CONNECTION_STRING: connectionStringFor(port) }, deployedNodeArguments()));
  }, 30_000);

  afterAll(async () => {
    await host?.kill();
    await new Promise((resolve) => storage?.close(resolve));
  });

  test('500 with the generic body; the Error-level log line carries the stack, mapped to lib/….ts lines', async () => {
    const reply = await post(host, [draw(1001)]);
    expect(reply.status).toBe(500);
    expect(reply.body).toEqual(JSON.parse(internalError(reply.invocationId).body as string));
    const lines = logsOf(host, reply);
    expect(lines).toEqual([{ level: 'Error', message: expect.stringMatching(/^DrawRequest failed: TypeError: /) }]);
    // Frames in the package, `at … (<app>/<file>:<line>:<column>)`: the service's own named by their
    // TypeScript file and line (the store's read round, where the SDK's error reached the service);
    // the SDK's own frames stay in the bundle (the maps carry the service's mappings only,
    // scripts/sourceMaps.ts), with their method names.
    const frames = [...lines[0].message.matchAll(/^\s+at .*\((\S+):(\d+):\d+\)$/gm)]
      .filter((m) => m[1].startsWith(`${appDir}/`))
      .map((m) => ({ file: m[1].slice(appDir.length + 1), line: Number(m[2]) }));
    const storeLines = readFileSync(join(__dirname, '..', '..', 'lib', 'store.ts'), 'utf8').split('\n').length;
    expect(frames.filter((f) => f.file === 'lib/store.ts' && f.line >= 1 && f.line <= storeLines)).not.toEqual([]);
    expect([...new Set(frames.map((f) => f.file))].filter((file) => !/^(lib|functions)\/\w+\.ts$/.test(file))).toEqual(['dist/bundle/main.js']);
  });
});

/** Preloads of tests/support that produce faults no setting can (Node resolves them from the test's folder). */
const preload = (file: string) => ['--require', join(__dirname, '..', 'support', file)];
// Nothing listens at the ingestion endpoint: what is sent is not what these check.
const TELEMETRY = 'InstrumentationKey=00000000-0000-4000-8000-000000000000;IngestionEndpoint=https://127.0.0.1:9/';

describe.each([
  [
    'asks the SDK for a part the package leaves out (OTEL_PROPAGATORS=b3)',
    { OTEL_PROPAGATORS: 'b3' },
    [],
    'OTEL_PROPAGATORS may list only tracecontext, baggage or none',
  ],
  ['would switch telemetry off (OTEL_SDK_DISABLED=true)', { OTEL_SDK_DISABLED: 'true' }, [], 'OTEL_SDK_DISABLED is not supported'],
  [
    'would start the browser SDK loader, not in the package (APPLICATIONINSIGHTS_WEB_INSTRUMENTATION_ENABLED=false)',
    { APPLICATIONINSIGHTS_WEB_INSTRUMENTATION_ENABLED: 'false' },
    [],
    'APPLICATIONINSIGHTS_WEB_INSTRUMENTATION_ENABLED is not supported',
  ],
  [
    'reaches the SDK though the service did not see it (a fault: the browser loader stand-in throws inside initialize())',
    { ENV_WATCH_LATE: 'APPLICATIONINSIGHTS_WEB_INSTRUMENTATION_ENABLED=true' },
    preload('envWatch.cjs'),
    'is not in the bundle',
  ],
  [
    'is switched off though the service did not see it (a fault: OTEL_SDK_DISABLED=true reaches only the SDK, which then registers nothing)',
    { ENV_WATCH_LATE: 'OTEL_SDK_DISABLED=true' },
    preload('envWatch.cjs'),
    'no OpenTelemetry tracer or logger provider was registered',
  ],
  [
    'meets an OpenTelemetry API registry it cannot use (a fault: the providers fail to register, reported only to diag)',
    {},
    preload('otelApiTaken.cjs'),
    'the Application Insights SDK did not start (',
  ],
] as [string, Record<string, string>, string[], string][])('a telemetry setting or start-up that %s', (_what, settings, nodeArgs, message) => {
  let host: WorkerHost;

  beforeAll(async () => {
    ({ host } = await startWorker({ ...harness.settings, APPLICATIONINSIGHTS_CONNECTION_STRING: TELEMETRY, ...settings }, nodeArgs));
  }, 30_000);

  afterAll(() => host?.kill());

  test('is a misconfigured instance, not a silent one: the generic 500, the cause named at Error level and at start-up', async () => {
    const reply = await post(host, [draw(1001)]);
    expect(reply.status).toBe(500);
    expect(reply.body).toEqual(JSON.parse(internalError(reply.invocationId).body as string));
    expect(logsOf(host, reply)).toEqual([{ level: 'Error', message: expect.stringContaining(message) }]);
    expect(host.output).toContain(message);
  });
});
