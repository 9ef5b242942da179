/**
 * The partner example client (examples/submit-draws.ts): against `npm start` run as a
 * process with its embedded Azurite and OpenID provider, so the client's defaults (demo client,
 * secret, scope) are what gets a token; then its retry policy against a scripted server.
 */
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  MAX_RETRY_WAIT_MS,
  configFromEnv,
  formatOutcome,
  parseDrawFile,
  submitDraws,
  type ClientConfig,
  type DrawBatch,
  type SubmitResult,
} from '../../examples/submit-draws';
import { RETRY_AFTER_SECONDS, outcomePending } from '../../lib/problem';
import { spawnDevHostOnFreePort, type DevHostProcess } from '../support/devHostProcess';
import { DEMO_TENANT_ID } from '../../dev/demoData';
import { trustingFetch } from '../support/localCa';

const ROOT = join(__dirname, '..', '..');
const EXAMPLE_ENTRY = join(ROOT, 'dist', 'examples', 'submit-draws.js');
const SAMPLE_JSON = join(ROOT, 'examples', 'draws.json');
const SAMPLE_CSV = join(ROOT, 'examples', 'draws.csv');
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const TABLE_HEADER = /^index\s+loanNumber\s+amount\s+result$/m;

/** A table row of the report, e.g. row(1, '1004', '100.50', 'accepted'). */
function row(index: number, loanNumber: string, amount: string, result: string): RegExp {
  const esc = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  return new RegExp(`^${index}\\s+${esc(loanNumber)}\\s+${esc(amount)}\\s+${esc(result)}$`, 'm');
}

interface CliRun {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

function runCli(args: readonly string[], env: Record<string, string>): Promise<CliRun> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [EXAMPLE_ENTRY, ...args],
      { env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...env }, timeout: 30_000 },
      (error, stdout, stderr) => {
        const code = error === null ? 0 : typeof error.code === 'number' ? error.code : null;
        resolve({ code, stdout, stderr });
      },
    );
  });
}

describe('against `npm start` (embedded Azurite and provider), with the client defaults', () => {
  let host: DevHostProcess;
  let env: { DRAWS_BASE_URL: string; NODE_EXTRA_CA_CERTS: string };
  /** The files npm start prints: its local CA, and the demo partner's certificate with its key. */
  let caCertPath: string;
  let combinedPath: string;
  let dir: string;
  let firstKey: string;

  beforeAll(async () => {
    if (!existsSync(EXAMPLE_ENTRY)) throw new Error(`${EXAMPLE_ENTRY} is missing: run \`npm run build\` (npm test does)`);
    dir = mkdtempSync(join(tmpdir(), 'example-'));
    // A fixed port, as `npm start` has: its embedded provider then listens on the next one, where the client looks.
    let port: number;
    ({ host, port } = await spawnDevHostOnFreePort());
    caCertPath = /its certificate authority: (\S+)/.exec(host.output())?.[1] ?? '';
    combinedPath = /\(both in (\S+)\)/.exec(host.output())?.[1] ?? '';
    env = { DRAWS_BASE_URL: host.url.replace(/\/DrawRequest$/, ''), NODE_EXTRA_CA_CERTS: caCertPath };
    // The client's default token URL is where the curl `npm start` prints gets its token.
    expect(host.output()).toContain(`--cacert ${caCertPath} -X POST ${configFromEnv(env).tokenUrl} `);
    expect(configFromEnv(env).tokenUrl).toBe(`https://127.0.0.1:${port + 1}/${DEMO_TENANT_ID}/oauth2/v2.0/token`);
  });
  afterAll(async () => {
    await host?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  function file(name: string, content: unknown): string {
    const path = join(dir, name);
    writeFileSync(path, typeof content === 'string' ? content : JSON.stringify(content));
    return path;
  }

  async function submit(path: string, idempotencyKey?: string): Promise<{ result: SubmitResult; report: string; batch: DrawBatch }> {
    const batch = await parseDrawFile(path);
    const result = await submitDraws({ ...configFromEnv(env), batch, idempotencyKey, fetch: trustingFetch(caCertPath) });
    return { result, report: formatOutcome(result, batch), batch };
  }

  test('the defaults are the demo client, its placeholder secret and the demo API scope', () => {
    expect(configFromEnv(env)).toMatchObject({ clientId: 'demo-partner', clientSecret: 'local-demo', scope: 'api://draw-request-service/.default' });
  });

  test('(1) the sample JSON file: 204, every element accepted, a fresh UUID key, the X-Request-Id shown', async () => {
    const { result, report } = await submit(SAMPLE_JSON);
    expect(result).toMatchObject({ outcome: 'accepted', exitCode: 0, status: 204, replay: false, attempts: 1, tokensFetched: 1, url: host.url });
    expect(result.idempotencyKey).toMatch(UUID);
    expect(result.requestId).toMatch(UUID);
    expect(result.elements.map((e) => [e.index, e.loanNumber, e.status, e.result])).toEqual([
      [0, '1001', 'accepted', 'accepted'],
      [1, '1004', 'accepted', 'accepted'],
    ]);
    expect(report).toMatch(TABLE_HEADER);
    expect(report).toMatch(row(0, '1001', '250.00', 'accepted'));
    expect(report).toMatch(row(1, '1004', '100.50', 'accepted'));
    expect(report).toContain(`X-Request-Id: ${result.requestId}`);
    expect(report).toContain(`Idempotency-Key: ${result.idempotencyKey}`);
    firstKey = result.idempotencyKey;
  });

  test('(2) the same file again with the same Idempotency-Key: 204 accepted (replay)', async () => {
    const { result, report } = await submit(SAMPLE_JSON, firstKey);
    expect(result).toMatchObject({ outcome: 'accepted', exitCode: 0, status: 204, replay: true, idempotencyKey: firstKey });
    expect(result.elements.map((e) => e.result)).toEqual(['accepted (replay)', 'accepted (replay)']);
    expect(report).toMatch(row(0, '1001', '250.00', 'accepted (replay)'));
    expect(report).toMatch(row(1, '1004', '100.50', 'accepted (replay)'));
    expect(report).toContain('Idempotent-Replay: true');
  });

  test('(3) the sample CSV file: 204 accepted, the digit string sent as a string', async () => {
    const { result, report, batch } = await submit(SAMPLE_CSV);
    expect(JSON.parse(batch.body)).toEqual([{ loanNumber: '1002', requestor: 'Doe, Jane <jane.doe@partner.example>', amount: 75.1 }]);
    expect(result).toMatchObject({ outcome: 'accepted', exitCode: 0, status: 204, replay: false });
    expect(report).toMatch(row(0, '1002', '75.10', 'accepted'));
  });

  test('(4) rejections against storage: 400, exit 1, each index with its exact error name', async () => {
    const path = file('rules.json', [
      { loanNumber: 1001, requestor: 'jane', amount: 10 }, // drawn in (1)
      { loanNumber: 1004, requestor: 'jane', amount: 800 }, // over its 750.50 credit
      { loanNumber: 2001, requestor: 'jane', amount: 10 }, // another partner's loan
      { loanNumber: 1003, requestor: 'jane', amount: 10 }, // no funding investor
      { loanNumber: 9999, requestor: 'jane', amount: 10 }, // no such loan
    ]);
    const { result, report } = await submit(path);
    expect(result).toMatchObject({ outcome: 'rejected', exitCode: 1, status: 400, requestErrors: [] });
    expect(result.elements.map((e) => [e.index, e.status, e.errors.map((x) => x.error)])).toEqual([
      [0, 'rejected', ['Pending Transaction Request']],
      [1, 'rejected', ['Invalid Amount']],
      [2, 'rejected', ['Invalid Authorization']],
      [3, 'rejected', ['Invalid Funding Investor']],
      [4, 'rejected', ['Invalid Loan Number']],
    ]);
    expect(report).toMatch(row(0, '1001', '10.00', 'Pending Transaction Request: a draw request for this loan was already submitted today'));
    expect(report).toMatch(row(1, '1004', '800.00', "Invalid Amount: amount must be between 1.00 and the loan's available credit"));
    expect(report).toMatch(/^2\s+2001\s+10\.00\s+Invalid Authorization: /m);
    expect(report).toMatch(/^3\s+1003\s+10\.00\s+Invalid Funding Investor: /m);
    expect(report).toMatch(/^4\s+9999\s+10\.00\s+Invalid Loan Number: /m);
    expect(report).toContain('Rejected: 5 of 5 draw requests were rejected; none was submitted.');
    expect(report).toContain(`X-Request-Id: ${result.requestId}`);
  });

  test('(4) an invalid element beside an over-credit amount: the rules on the element alone answer first, the rest is not submitted', async () => {
    const path = file('shape.json', [
      { loanNumber: 1002, amount: 10 }, // no requestor
      { loanNumber: '12a', requestor: 'jane', amount: 10 },
      { LoanNumber: 1004, Requestor: 'jane', Amount: 800 }, // over credit, but never checked against storage
      { loanNumber: 1001, requestor: 'jane', amount: 1.001 },
    ]);
    const { result, report } = await submit(path);
    expect(result).toMatchObject({ outcome: 'rejected', exitCode: 1, status: 400 });
    expect(result.elements.map((e) => [e.index, e.status, e.errors.map((x) => x.error)])).toEqual([
      [0, 'rejected', ['Invalid Request']],
      [1, 'rejected', ['Invalid Loan Number']],
      [2, 'not submitted', []],
      [3, 'rejected', ['Invalid Amount']],
    ]);
    expect(report).toMatch(row(0, '1002', '10.00', 'Invalid Request: requestor is required'));
    expect(report).toMatch(/^1\s+12a\s+10\.00\s+Invalid Loan Number: /m);
    expect(report).toMatch(row(2, '1004', '800.00', 'not submitted'));
    expect(report).toMatch(/^3\s+1001\s+1\.001\s+Invalid Amount: /m);
  });

  test('a request-level error is printed on its own: the first key with a different batch', async () => {
    const { result, report } = await submit(SAMPLE_CSV, firstKey);
    expect(result).toMatchObject({ outcome: 'rejected', exitCode: 1, status: 400 });
    expect(result.requestErrors.map((e) => e.error)).toEqual(['Invalid Request']);
    expect(result.elements.map((e) => e.result)).toEqual(['not submitted']);
    expect(report).toMatch(/^Request error: Invalid Request: this Idempotency-Key is bound to a different batch/m);
  });

  test('the CLI as a process: exit 0 and the table on a replay, exit 1 on a rejection, exit 2 without a token endpoint', async () => {
    const replay = await runCli([SAMPLE_JSON, '--idempotency-key', firstKey], env);
    expect(replay.code).toBe(0);
    expect(replay.stdout).toMatch(TABLE_HEADER);
    expect(replay.stdout).toMatch(row(0, '1001', '250.00', 'accepted (replay)'));
    expect(replay.stdout).toMatch(row(1, '1004', '100.50', 'accepted (replay)'));
    expect(replay.stdout).toMatch(/X-Request-Id: [0-9a-f-]{36}/);
    expect(replay.stderr).toContain('client demo-partner');
    expect(replay.stderr).not.toContain('local-demo'); // the secret is never printed

    const rejected = await runCli([SAMPLE_CSV], { ...env, DRAWS_IDEMPOTENCY_KEY: 'cli-key-1' });
    expect(rejected.code).toBe(1);
    expect(rejected.stdout).toContain('Idempotency-Key: cli-key-1');
    expect(rejected.stdout).toMatch(row(0, '1002', '75.10', 'Pending Transaction Request: a draw request for this loan was already submitted today'));

    const unconfigured = await runCli([SAMPLE_JSON], { DRAWS_BASE_URL: 'https://draws.example' });
    expect(unconfigured.code).toBe(2);
    expect(unconfigured.stdout).toBe('');
    expect(unconfigured.stderr).toContain('DRAWS_TOKEN_URL is not set');
  });

  test("the CLI with the demo partner's certificate: a client assertion gets the token, and the draw is accepted", async () => {
    const path = file('certificate.json', [{ loanNumber: 1005, requestor: 'jane.doe@partner.example', amount: 20 }]);
    const run = await runCli([path], { ...env, DRAWS_CLIENT_CERTIFICATE: combinedPath });
    expect(run.stderr).toContain('Token: client demo-partner with its certificate at https://127.0.0.1:');
    expect(run.stdout).toMatch(row(0, '1005', '20.00', 'accepted'));
    expect(run.code).toBe(0);
  });

  test("the CLI without NODE_EXTRA_CA_CERTS: the provider's certificate is not trusted, said at once, exit 2", async () => {
    const run = await runCli([SAMPLE_JSON], { DRAWS_BASE_URL: env.DRAWS_BASE_URL });
    expect(run.code).toBe(2);
    expect(run.stdout).toContain('Failed: no access token');
    expect(run.stdout).toContain('set NODE_EXTRA_CA_CERTS to the CA file it prints');
    expect(run.stderr).not.toContain('retrying'); // an untrusted certificate is not retried
  });
});

// ---------------------------------------------------------------------------------------------

interface Recorded {
  readonly path: string;
  /** performance.now() when the request had arrived whole, just before it was answered. */
  readonly at: number;
  readonly headers: IncomingMessage['headers'];
  readonly body: string;
}

type Answer = (res: ServerResponse, req: IncomingMessage) => void;

const answer =
  (status: number, headers: Record<string, string> = {}, body?: unknown): Answer =>
  (res) => {
    res.writeHead(status, { 'X-Request-Id': `req-${status}`, ...(body === undefined ? {} : { 'Content-Type': 'application/problem+json' }), ...headers });
    res.end(body === undefined ? undefined : JSON.stringify(body));
  };
const dropConnection: Answer = (_res, req) => req.socket.destroy();
const neverAnswer: Answer = () => undefined;

describe('retries (docs/partners.md §6) against a scripted server', () => {
  let server: Server;
  let config: ClientConfig;
  let requests: Recorded[];
  let script: Answer[];
  let tokenAnswers: Answer[];
  let tokensIssued: number;
  const logs: string[] = [];
  const batch: DrawBatch = {
    source: 'inline',
    format: 'json',
    body: '[{"loanNumber": 1001, "requestor": "jane", "amount": 250.00}]',
    draws: [{ loanNumber: 1001, requestor: 'jane', amount: 250 }],
  };

  beforeAll(async () => {
    server = createServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => {
        requests.push({ path: req.url ?? '', at: performance.now(), headers: req.headers, body });
        if (req.url === '/token') {
          const scripted = tokenAnswers.shift();
          if (scripted) return scripted(res, req);
          tokensIssued++;
          res
            .writeHead(200, { 'Content-Type': 'application/json' })
            .end(JSON.stringify({ access_token: `token-${tokensIssued}`, token_type: 'Bearer', expires_in: 3600 }));
          return;
        }
        (script.shift() ?? answer(599))(res, req);
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const base = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
    config = { ...configFromEnv({ DRAWS_BASE_URL: base, DRAWS_TOKEN_URL: `${base}/token` }), retryDelaysMs: [20, 40], timeoutMs: 1000 };
  });
  beforeEach(() => {
    requests = [];
    script = [];
    tokenAnswers = [];
    tokensIssued = 0;
    logs.length = 0;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  const run = (idempotencyKey?: string) => submitDraws({ ...config, batch, idempotencyKey, log: (l) => logs.push(l) });
  const posts = () => requests.filter((r) => r.path === '/DrawRequest');

  test('the token request is a client-credentials form; the POST carries bearer, JSON and the key, with the file as written', async () => {
    script = [answer(204)];
    const result = await run('key-1');
    expect(result).toMatchObject({ outcome: 'accepted', exitCode: 0, attempts: 1, tokensFetched: 1, requestId: 'req-204' });
    const [token, post] = requests;
    expect(token.headers['content-type']).toBe('application/x-www-form-urlencoded');
    expect(Object.fromEntries(new URLSearchParams(token.body))).toEqual({
      grant_type: 'client_credentials',
      client_id: 'demo-partner',
      client_secret: 'local-demo',
      scope: 'api://draw-request-service/.default',
    });
    expect(post.headers).toMatchObject({ authorization: 'Bearer token-1', 'content-type': 'application/json', 'idempotency-key': 'key-1' });
    expect(post.body).toBe(batch.body);
  });

  test('502, 502, then 204: three attempts with the same key and token', async () => {
    script = [answer(502, {}, { status: 502 }), answer(502, {}, { status: 502 }), answer(204)];
    const result = await run();
    expect(result).toMatchObject({ outcome: 'accepted', attempts: 3, tokensFetched: 1 });
    expect(new Set(posts().map((p) => p.headers['idempotency-key']))).toEqual(new Set([result.idempotencyKey]));
    expect(logs.filter((l) => /502 .*retrying in 0\.0[24] s with the same Idempotency-Key/.test(l))).toHaveLength(2);
  });

  test('502 three times: gives up after 3 attempts, exit 2, the key printed for a later retry', async () => {
    script = [502, 502, 502].map((s) => answer(s, {}, { title: 'Bad Gateway', status: s, detail: 'A service this API depends on is unavailable' }));
    const result = await run('key-2');
    expect(result).toMatchObject({ outcome: 'failed', exitCode: 2, status: 502, attempts: 3 });
    expect(result.elements.map((e) => e.result)).toEqual(['not submitted']);
    const report = formatOutcome(result);
    expect(report).toContain('Bad Gateway: A service this API depends on is unavailable');
    expect(report).toContain('--idempotency-key key-2');
  });

  /** A timer may fire a millisecond or so before performance.now() says its time is up; a wait of 1 s where 2 s were asked is what must fail. */
  const TIMER_SLACK_MS = 50;
  const gaps = () => {
    const at = posts().map((p) => p.at);
    return at.slice(1).map((t, i) => t - at[i]);
  };
  const nothingSubmitted = { title: 'Bad Gateway', status: 502, detail: 'A service this API depends on is unavailable; nothing was submitted. Retry later.' };

  test('a 502 with `Retry-After` in seconds, as docs/partners.md §6 says the service sends it: each retry waits at least that, longer as failures repeat', async () => {
    const row = /^\| `502` \|.*$/m.exec(readFileSync(join(ROOT, 'docs', 'partners.md'), 'utf8'))?.[0] ?? '';
    const seconds = Number(/`Retry-After: (\d+)`/.exec(row)?.[1]);
    expect(seconds).toBe(RETRY_AFTER_SECONDS); // the page says what lib/problem.ts sends
    expect(row).toContain('up to a minute');
    expect(MAX_RETRY_WAIT_MS).toBe(60_000);
    const retryAfter = { 'Retry-After': String(seconds) };
    script = [answer(502, retryAfter, nothingSubmitted), answer(502, retryAfter, nothingSubmitted), answer(204)];
    const result = await run('key-retry-after');
    expect(result).toMatchObject({ outcome: 'accepted', attempts: 3 });
    const [first, second] = gaps();
    // config's backoff is 20 ms and 40 ms: only Retry-After makes these waits.
    expect(first).toBeGreaterThanOrEqual(seconds * 1000 - TIMER_SLACK_MS);
    expect(second).toBeGreaterThanOrEqual(2 * seconds * 1000 - TIMER_SLACK_MS);
    expect(first + second).toBeLessThan(MAX_RETRY_WAIT_MS);
    expect(logs.filter((l) => l.includes(`retrying in ${seconds} s (Retry-After: ${seconds}) with the same Idempotency-Key`))).toHaveLength(1);
    expect(new Set(posts().map((p) => p.headers['idempotency-key']))).toEqual(new Set(['key-retry-after']));
  }, 30_000);

  test("a 502 with `Retry-After` as an HTTP-date: waits until then, by the clock of the answer's `Date`", async () => {
    const dated: Answer = (res, req) => {
      const now = Date.now();
      // Both whole seconds of one clock: the date asked for is 3 s after the answer's own Date.
      answer(502, { Date: new Date(now).toUTCString(), 'Retry-After': new Date(now + 3000).toUTCString() }, nothingSubmitted)(res, req);
    };
    script = [dated, answer(204)];
    const result = await run();
    expect(result).toMatchObject({ outcome: 'accepted', attempts: 2 });
    expect(gaps()[0]).toBeGreaterThanOrEqual(3000 - TIMER_SLACK_MS);
    expect(gaps()[0]).toBeLessThan(MAX_RETRY_WAIT_MS);
  }, 30_000);

  test('a 502 whose Retry-After is longer than a run waits (a key in its grace, contract §9): stops at once and says when to send the same file again', async () => {
    // The answer exactly as the service builds it for a key in its grace.
    const pending = outcomePending('9b1c3f7e-02aa-4c8e-b1f4-6a3e5d2c7f10', 540);
    script = [answer(502, pending.headers as Record<string, string>, JSON.parse(pending.body as string)), answer(204)];
    const result = await run('key-in-grace');
    expect(result).toMatchObject({ outcome: 'failed', exitCode: 2, status: 502, attempts: 1 });
    expect(posts()).toHaveLength(1);
    expect(formatOutcome(result)).toContain('the outcome is not known yet; send the same file again with --idempotency-key key-in-grace in 540 s');
  });

  test('a dropped connection and a timeout are retried with the same key', async () => {
    script = [dropConnection, neverAnswer, answer(204, { 'Idempotent-Replay': 'true' })];
    const result = await run();
    expect(result).toMatchObject({ outcome: 'accepted', replay: true, attempts: 3 });
    expect(result.elements.map((e) => e.result)).toEqual(['accepted (replay)']);
    expect(new Set(posts().map((p) => p.headers['idempotency-key'])).size).toBe(1);
    expect(logs.some((l) => l.includes('no answer within the timeout'))).toBe(true);
  });

  test('no answer at all: exit 2 after 3 attempts', async () => {
    script = [dropConnection, dropConnection, dropConnection];
    const result = await run();
    expect(result).toMatchObject({ outcome: 'failed', exitCode: 2, attempts: 3 });
    expect(result.status).toBeUndefined();
    expect(formatOutcome(result)).toMatch(/^no answer\s+X-Request-Id: -/m);
    expect(result.failure).toMatch(/^no answer after 3 attempts/);
  });

  test('401: one new token and one more try', async () => {
    script = [answer(401, { 'WWW-Authenticate': 'Bearer error="invalid_token"' }, { status: 401 }), answer(204)];
    const result = await run();
    expect(result).toMatchObject({ outcome: 'accepted', attempts: 2, tokensFetched: 2 });
    expect(posts().map((p) => p.headers.authorization)).toEqual(['Bearer token-1', 'Bearer token-2']);
  });

  test('401 twice: not a third time; exit 2', async () => {
    script = [answer(401, {}, { status: 401 }), answer(401, {}, { status: 401 }), answer(204)];
    const result = await run();
    expect(result).toMatchObject({ outcome: 'failed', exitCode: 2, status: 401, attempts: 2, tokensFetched: 2 });
  });

  test('400 is not retried: exit 1', async () => {
    script = [
      answer(
        400,
        {},
        {
          status: 400,
          detail: '1 of 1 draw requests was rejected; none was submitted.',
          errors: [{ index: 0, loanNumber: 1001, error: 'Invalid Amount', code: 'InvalidAmount', detail: 'd' }],
        },
      ),
      answer(204),
    ];
    const result = await run();
    expect(result).toMatchObject({ outcome: 'rejected', exitCode: 1, attempts: 1 });
    expect(result.elements[0].result).toBe('Invalid Amount: d');
  });

  test('500 is not retried: exit 2, report it with the X-Request-Id', async () => {
    script = [answer(500, {}, { status: 500 }), answer(204)];
    const result = await run();
    expect(result).toMatchObject({ outcome: 'failed', exitCode: 2, attempts: 1, requestId: 'req-500' });
    expect(formatOutcome(result)).toContain('Quote X-Request-Id req-500 to support');
  });

  test('the token endpoint refusing the client: nothing posted, exit 2, its OAuth error shown', async () => {
    tokenAnswers = [(res) => res.writeHead(401, { 'Content-Type': 'application/json' }).end('{"error":"invalid_client","error_description":"bad secret"}')];
    const result = await run();
    expect(result).toMatchObject({ outcome: 'failed', exitCode: 2, attempts: 0 });
    expect(result.failure).toMatch(/answered 401 Unauthorized: invalid_client \(bad secret\)/);
    expect(posts()).toHaveLength(0);
  });
});
