/**
 * `npm run bench`: the service against its floor, in one run on this machine.
 *
 * - **Service**: the built dev host (a process of its own), loaded by autocannon at a fixed
 *   concurrency with valid batches of fresh loans (every answer must be 204).
 * - **Floor**: the same storage work done directly with `@azure/data-tables` in this process at
 *   the same concurrency: one parallel round of point reads (the batch's loans and today's draw
 *   rows), then one entity-group transaction. Nothing can do the job with less.
 * - **Storage calls per request**, counted at a proxy in front of Azurite for a separate dev host.
 * - **CPU**: the dev host's own CPU time (from /proc), per request, against this process's CPU
 *   time for the floor (`process.cpuUsage`); Azurite's CPU counts for neither.
 * - **A CPU profile** (`--cpu-prof`) of a dev host per batch size (each on tables of its own): self
 *   time by owner (package, Node, this code) and the top functions.
 * - **Worst-case requests** (tests/support/hostileBodies.ts): each one at a time through a dev host,
 *   latency and CPU against an ordinary single draw's.
 * - **The package in the real worker** (bench/workerFloor.ts): its own CPU against the floor's as a
 *   function app, what telemetry adds on Node 22 and Node 24, and where a single draw's CPU goes.
 * - **Instance sizes** (bench/sizes.ts): the package in the real worker under each Flex Consumption
 *   size's CPU quota, start-up and load, what each size costs (bench/costModel.ts), and what one call
 *   sends to Application Insights.
 * - **The day partition under load** (bench/dayPartition.ts): storage throttled as Table Storage
 *   throttles a partition, the sustained rate, what partners see beyond it, storage checked after.
 *
 * Writes bench/results.md. Azurite and the service share this machine's cores, so absolute numbers
 * are this machine's; the ratios are what the targets are about.
 */
import type { TableClient } from '@azure/data-tables';
import autocannon from 'autocannon';
import { mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, totalmem } from 'node:os';
import { join } from 'node:path';
import { startAzurite, type Azurite } from '../dev/azurite';
import { createTables, putPartner, tableClient, tableSettings, tablesNamed } from '../dev/demoData';
import { cpuMs, spawnDevHost, type DevHostProcess } from '../tests/support/devHostProcess';
import { hostileRequests, ordinaryBody, ORDINARY_DRAW, HTTP_HEADER_CHARS } from '../tests/support/hostileBodies';
import { startOidcProvider, type OidcProvider } from '../dev/oidcProvider';
import { connectionStringVia, startFaultProxy } from '../tests/support/storageProxies';
import { LIMITS } from '../lib/limits';
import { LoanPool } from './loanPool';
import { PINNING, median, percentile, pin } from './stats';
import { measureSizes, sizeTargetLines, sizesSection, type Sizes } from './sizes';
import { measureDayPartition } from './dayPartition';
import { benchToken } from './benchToken';
import { FLOOR_CLIENT, FLOOR_PARTNER, floorBatch, floorClients } from './floor';
import { measureWorkerFloor, workerFloorSection, workerTargetLines, type WorkerFloor } from './workerFloor';

const ROOT = join(__dirname, '..', '..');
const RESULTS = join(ROOT, 'bench', 'results.md');
const SIZES_RESULTS = join(ROOT, 'bench', 'sizes.json');
const WORKER_FLOOR_RESULTS = join(ROOT, 'bench', 'workerFloor.json');
const PROFILES = join(ROOT, 'bench', 'profiles');
const AUDIENCE = 'api://draw-request-bench';
const CLIENT = FLOOR_CLIENT;
const PARTNER = FLOOR_PARTNER;
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 4);
/**
 * Each side runs ROUNDS measured segments per batch size, alternating with the other side (floor
 * first in odd rounds, service first in even ones), so that drift in a shared machine's speed falls
 * on both alike. Requests per segment: about 1,000 draws, at least the concurrency.
 */
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 9);
const DRAWS_PER_SEGMENT = Number(process.env.BENCH_DRAWS ?? 1000);
const requestsFor = (size: number) => Math.max(CONCURRENCY, Number(process.env[`BENCH_REQUESTS_${size}`] ?? Math.ceil(DRAWS_PER_SEGMENT / size)));
/** BENCH_SIZES=1,100 runs only those batch sizes (to profile one of them, say). */
const SIZES = (process.env.BENCH_SIZES ?? '1,10,100').split(',').map(Number);
const PLAN: readonly { size: number; requests: number }[] = [1, 10, 100]
  .filter((size) => SIZES.includes(size))
  .map((size) => ({ size, requests: requestsFor(size) }));
/**
 * Segments run per side before measuring: enough (about 3,000 draws) for V8 to have optimized the
 * hot path, so the numbers are of a warm instance; the first requests are what cold start is about.
 */
const WARMUP_SEGMENTS = Number(process.env.BENCH_WARMUP_SEGMENTS ?? 3);
/**
 * Each worst-case request, and the ordinary draw it is compared with, is sent this many times, one at
 * a time: enough for the host's CPU (counted in 10 ms ticks) to be read to 0.25 ms per request.
 */
const WORST_CASE_REQUESTS = Number(process.env.BENCH_WORST_CASE_REQUESTS ?? 40);
/** Ordinary draws first, so that V8 has optimized the host's path of an ordinary request before it is compared. */
const WORST_CASE_WARMUP = 500;
/** The loan worst-case bodies name: never seeded (the pools start at 1,000,000). */
const UNSEEDED_LOAN = 999;
/** Each batch size gets tables of its own: Azurite answers a query by scanning the table, so a shared, ever-growing table would slow the later sizes. */
const serviceTables = tablesNamed;
const floorTables = (tag: string) => tablesNamed(`${tag}Floor`);

interface Latency {
  readonly p50: number;
  readonly p90: number;
  readonly p99: number;
}

/** One measured segment of one side. */
interface Segment {
  /** Milliseconds, one per request. */
  readonly latencies: readonly number[];
  readonly seconds: number;
  /** CPU ms the measured process used. */
  readonly cpuMs: number;
  readonly ok: number;
  readonly errors: number;
}

interface Run {
  readonly requests: number;
  readonly rps: number;
  readonly latency: Latency;
  readonly errors: number;
  /** CPU ms per accepted request of the measured process, over all rounds. */
  readonly cpuPerRequest: number;
  /** CPU ms per accepted request, round by round. */
  readonly cpuByRound: readonly number[];
}

/** A side's segments pooled: percentiles of every request, throughput and CPU over all of them. */
function pooled(segments: readonly Segment[]): Run {
  const sorted = segments.flatMap((s) => s.latencies).sort((x, y) => x - y);
  const sum = (f: (s: Segment) => number) => segments.reduce((n, s) => n + f(s), 0);
  const ok = sum((s) => s.ok);
  return {
    requests: sorted.length,
    rps: ok / sum((s) => s.seconds),
    latency: { p50: percentile(sorted, 50), p90: percentile(sorted, 90), p99: percentile(sorted, 99) },
    errors: sum((s) => s.errors),
    cpuPerRequest: sum((s) => s.cpuMs) / Math.max(1, ok),
    cpuByRound: segments.map((s) => s.cpuMs / Math.max(1, s.ok)),
  };
}

/**
 * Azurite has core 0 to itself, so storage (another machine, in Azure) answers both sides equally
 * fast; the measured process (this one for the floor, the dev host for the service) has core 1. The
 * load generator (this process, during the service's segments) gets core 2 where there is one; on two
 * cores it shares core 1 with the dev host, where it costs the dev host some CPU (switches, caches).
 * With the load generator beside Azurite instead, storage was slower during the service's segments
 * only, and a measured process that waits longer between events spends more CPU per request (fewer
 * events per wake-up). Unpinned, three busy processes on two cores made the dev host pay for
 * contention the floor never paid. docs/decisions/0113-how-the-benchmark-measures.md says why.
 */
const LOAD_GENERATOR_CORE = cpus().length >= 3 ? 2 : 1;

const f1 = (n: number) => n.toFixed(1);
const f2 = (n: number) => n.toFixed(2);

/** The service under autocannon: `requests` posts of `size` fresh loans each, all expected 204. */
async function serviceSegment(host: DevHostProcess, token: string, pool: LoanPool, size: number, requests: number): Promise<Segment> {
  const latencies: number[] = [];
  const cpuBefore = cpuMs(host.pid);
  const started = performance.now();
  const options: autocannon.Options = {
    url: host.url,
    connections: CONCURRENCY,
    amount: requests,
    requests: [
      {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        setupRequest: (request: object) => ({ ...request, body: ordinaryBody(pool.take(size)) }),
      },
    ],
  };
  // Read at the last response: autocannon reports only at its next sampling tick (up to a second
  // later), and whatever the host does while idle in that gap is not a request's cost.
  const reading = () => ({ cpu: cpuMs(host.pid), at: performance.now() });
  let last: { cpu: number; at: number } | undefined;
  const result = await new Promise<autocannon.Result>((resolve, reject) => {
    const instance = autocannon(options, (error: unknown, done) =>
      error ? reject(error instanceof Error ? error : new Error('autocannon failed')) : resolve(done),
    );
    instance.on('response', (_client, _status, _bytes, responseTime) => {
      latencies.push(responseTime);
      if (latencies.length === requests) last = reading();
    });
  });
  last ??= reading(); // not every request was answered: up to the end
  return {
    latencies,
    seconds: (last.at - started) / 1000,
    cpuMs: last.cpu - cpuBefore,
    ok: result['2xx'],
    errors: result.errors + result.non2xx + result.timeouts,
  };
}

/** The floor (bench/floor.ts): the same storage work straight through the SDK, at the same concurrency. */
async function floorSegment(loans: TableClient, draws: TableClient, pool: LoanPool, size: number, requests: number): Promise<Segment> {
  const latencies: number[] = [];
  let errors = 0;
  let left = requests;
  const worker = async () => {
    while (left > 0) {
      left -= 1;
      const batch = pool.take(size).map((loanNumber) => ({ loanNumber, ...ORDINARY_DRAW }));
      const start = performance.now();
      if (!(await floorBatch(loans, draws, batch))) errors += 1;
      latencies.push(performance.now() - start);
    }
  };
  const cpuBefore = process.cpuUsage();
  const started = performance.now();
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
  const seconds = (performance.now() - started) / 1000;
  const cpu = process.cpuUsage(cpuBefore);
  return { latencies, seconds, cpuMs: (cpu.user + cpu.system) / 1000, ok: requests - errors, errors };
}

/** Storage HTTP calls per request, for each batch size, through a counting proxy. */
async function countCalls(
  azurite: Azurite,
  hostEnv: Record<string, string>,
  token: string,
  pool: LoanPool,
): Promise<Map<number, { cold: number; warm: number; transactions: number }>> {
  const proxy = await startFaultProxy(azurite.port);
  const host = await spawnDevHost({ ...hostEnv, TABLES_CONNECTION_STRING: connectionStringVia(azurite.connectionString, azurite.port, proxy.port) });
  const counts = new Map<number, { cold: number; warm: number; transactions: number }>();
  try {
    let cold = 0;
    for (const { size } of PLAN) {
      const post = async () => {
        proxy.arrivals.length = 0;
        const response = await fetch(host.url, {
          method: 'POST',
          headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
          body: ordinaryBody(pool.take(size)),
        });
        if (response.status !== 204) throw new Error(`bench: counting request answered ${response.status}`);
        return { calls: proxy.arrivals.length, transactions: proxy.arrivals.filter((a) => a.kind === 'commit').length };
      };
      if (cold === 0) cold = (await post()).calls; // the first request of the instance: partner not cached
      const warm = await post();
      counts.set(size, { cold: size === PLAN[0].size ? cold : Number.NaN, warm: warm.calls, transactions: warm.transactions });
    }
  } finally {
    await host.stop();
    await proxy.close();
  }
  return counts;
}

/** One worst-case request (or the ordinary draw), sent WORST_CASE_REQUESTS times through a dev host. */
interface WorstCaseRow {
  readonly name: string;
  readonly bodyBytes: number;
  /** What it was answered (every distinct answer), and what it should be. */
  readonly answers: string;
  readonly expected: string;
  readonly p50: number;
  readonly cpuPerRequest: number;
}

/** `204`, `401`, or `400 InvalidAmount`: a status and the code of the first error listed. */
async function answerOf(response: Response): Promise<string> {
  const text = await response.text();
  const code = response.status === 400 ? (JSON.parse(text) as { errors?: { code: string }[] }).errors?.[0]?.code : undefined;
  return code === undefined ? String(response.status) : `${response.status} ${code}`;
}

/**
 * Each worst-case request, and an ordinary single draw to compare it with, WORST_CASE_REQUESTS times one
 * after another (each alone on the host, so its latency is its own), through a dev host of its own after a
 * warm-up. CPU is the host's over the requests divided by their number: /proc counts 10 ms ticks, too
 * coarse for one request. Worst-case bodies name a loan never seeded, so none of them writes.
 */
async function worstCases(env: Record<string, string>, token: string, notPartnerToken: string, pool: LoanPool): Promise<WorstCaseRow[]> {
  const hostile = hostileRequests(UNSEEDED_LOAN);
  const requests: { name: string; body: () => Buffer; headers?: Record<string, string>; token?: string; expected: string }[] = [
    { name: 'ordinary single draw', body: () => ordinaryBody(pool.take(1)), expected: '204' },
    ...hostile.map((r) => ({ ...r, body: () => r.body, expected: `${r.expected.status} ${r.expected.code}` })),
    // Refused before its body is read: a client that is no partner (remembered as refused after its first request).
    { name: `not a partner, ${hostile[0].name}`, body: () => hostile[0].body, token: notPartnerToken, expected: '401' },
  ];
  const host = await spawnDevHost(env);
  pin(host.pid, 1);
  pin(process.pid, LOAD_GENERATOR_CORE);
  try {
    const run = async (request: (typeof requests)[number], count: number): Promise<WorstCaseRow> => {
      const latencies: number[] = [];
      const answers = new Set<string>();
      let bodyBytes = 0;
      const cpuBefore = cpuMs(host.pid);
      for (let i = 0; i < count; i++) {
        const body = request.body();
        bodyBytes = body.byteLength;
        const start = performance.now();
        const response = await fetch(host.url, {
          method: 'POST',
          headers: { authorization: `Bearer ${request.token ?? token}`, 'content-type': 'application/json', ...request.headers },
          body,
        });
        answers.add(await answerOf(response));
        latencies.push(performance.now() - start);
      }
      const cpu = cpuMs(host.pid) - cpuBefore;
      return {
        name: request.name,
        bodyBytes,
        answers: [...answers].join(', '),
        expected: request.expected,
        p50: median(latencies),
        cpuPerRequest: cpu / count,
      };
    };
    for (const request of requests) await run(request, request === requests[0] ? WORST_CASE_WARMUP : 2);
    const rows: WorstCaseRow[] = [];
    for (const request of requests) {
      const row = await run(request, WORST_CASE_REQUESTS);
      rows.push(row);
      process.stdout.write(`  ${row.name}: ${row.answers}, p50 ${f1(row.p50)} ms, CPU ${f2(row.cpuPerRequest)} ms per request\n`);
    }
    return rows;
  } finally {
    await host.stop();
  }
}

/** The worst-case rows as Markdown, each against the ordinary draw (the first row). */
function worstCaseSection(rows: readonly WorstCaseRow[]): string[] {
  const [ordinary] = rows;
  return [
    '## Worst-case requests, one at a time',
    '',
    `Each request ${WORST_CASE_REQUESTS} times, one after another, to a dev host of its own (placed on the cores as above) after a warm-up; bodies of at most ${LIMITS.bodyBytes.toLocaleString('en')} bytes (tests/support/hostileBodies.ts), headers of ${HTTP_HEADER_CHARS.toLocaleString('en')} characters (what fits beside a token in Node's default 16 KiB of request headers). A body whose shape is accepted names a loan that does not exist, so none is written. Latency is the median; CPU is the dev host's over the ${WORST_CASE_REQUESTS} requests, per request (one request at a time costs the host more CPU than the same request among others at concurrency ${CONCURRENCY}, above).`,
    '',
    '| request | body bytes | answer | p50 ms | × ordinary | dev host CPU ms/request | × ordinary |',
    '|---|---|---|---|---|---|---|',
    ...rows.map((r) => {
      const answer = r.answers === r.expected ? r.answers : `**${r.answers}** (expected ${r.expected})`;
      return `| ${r.name} | ${r.bodyBytes} | ${answer} | ${f1(r.p50)} | ${f2(r.p50 / ordinary.p50)}× | ${f2(r.cpuPerRequest)} | ${f2(r.cpuPerRequest / ordinary.cpuPerRequest)}× |`;
    }),
    '',
  ];
}

interface ProfileSummary {
  /** Share of busy samples (idle excluded). */
  readonly busyShare: number;
  readonly top: { name: string; share: number }[];
  readonly byOwner: { owner: string; share: number }[];
}

/** Who a frame's code belongs to: a package, Node itself, or this project. */
function ownerOf(url: string, functionName: string): string {
  if (url === '') return functionName.startsWith('(') ? functionName : 'V8 / native';
  if (url.startsWith('node:')) return 'Node.js (http, streams, crypto …)';
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)\/(?!.*node_modules\/)/.exec(url);
  if (pkg) return pkg[1];
  if (/\/dist\/dev\//.test(url)) return 'dev host (dev/devHost.ts)';
  return 'service code (lib/, functions/)';
}

/** Self time in a .cpuprofile (V8's format): top functions and shares by owner, idle excluded. */
function summarizeProfile(file: string, count: number): ProfileSummary {
  const profile = JSON.parse(readFileSync(file, 'utf8')) as {
    nodes: { id: number; callFrame: { functionName: string; url: string; lineNumber: number } }[];
    samples: number[];
  };
  const byNode = new Map(profile.nodes.map((n) => [n.id, n]));
  const self = new Map<string, number>();
  const owners = new Map<string, number>();
  let busy = 0;
  for (const id of profile.samples) {
    const frame = byNode.get(id)?.callFrame;
    if (frame === undefined || frame.functionName === '(idle)') continue;
    busy += 1;
    const where = frame.url === '' ? '' : ` (${frame.url.replace(/^.*node_modules\//, '').replace(/^file:\/\/.*?\/(dist\/)?/, '')}:${frame.lineNumber + 1})`;
    const name = `${frame.functionName || '(anonymous)'}${where}`;
    self.set(name, (self.get(name) ?? 0) + 1);
    const owner = ownerOf(frame.url, frame.functionName);
    owners.set(owner, (owners.get(owner) ?? 0) + 1);
  }
  const ranked = (m: Map<string, number>, n: number) => [...m].sort((x, y) => y[1] - x[1]).slice(0, n);
  return {
    busyShare: busy / Math.max(1, profile.samples.length),
    top: ranked(self, count).map(([name, k]) => ({ name, share: k / busy })),
    byOwner: ranked(owners, 14).map(([owner, k]) => ({ owner, share: k / busy })),
  };
}

/**
 * What the profiles (and the measurements that followed them) showed, and what was changed because
 * of it. Kept with the script that measures it, written under every run's numbers.
 */
const FINDINGS = [
  '## What the profiles showed, and what was changed',
  '',
  'Hot path at batch 1 and 100 (`--cpu-prof` of the dev host, by owner and by function), cold start (`--cpu-prof` of `require`), and A/B runs of single changes:',
  '',
  "- **Token checks.** jose verifies RS256 through WebCrypto: `verify`/`signVerify` (node:internal/crypto/webcrypto) and the algorithm normalisation in node:internal/crypto/util were about 0.2 ms of every request. A token accepted once is now remembered, under its SHA-256, while the same provider metadata and key set (no fetch since, none in flight, still fresh) hold and until it expires by jose's rule (`lib/verifiedTokens.ts`). A key the provider retires still stops working after the next key-set fetch (tests/integration/keyRotation.test.ts).",
  '- **An AbortSignal on every SDK call.** `createAbortSignal`/`AbortSignal.timeout` per call and the listeners the SDK adds showed under node:internal/abort_controller. Each store operation now has one AbortController whose signal all its calls share (`withDeadline` in lib/store.ts): a timer alone, tried in between, was cheaper but left the sockets of abandoned calls taken until storage answered.',
  "- **Connections.** At batch 100, `internalConnect` and 1–3 s tails: the SDK gives every client its own unbounded agent, so concurrent batches opened hundreds of connections, closed most afterwards, and bursts of new ones overflowed the listener's backlog (a dropped SYN costs a second). One keep-alive agent of 256 connections per account, shared by every table (`storageAgent`), keeps them; the floor is configured the same way, so both make the same calls.",
  '- **Log writes.** The dev host wrote each log line to stdout with its own system call (`writeUtf8String` under `logHandler`); it now writes what accumulated every 50 ms.',
  '- **Per-request formatting.** `Intl.DateTimeFormat#formatToParts` for the business day ran on every request; it now runs once per minute per zone, and not at all for UTC. `randomBytes` for the trace id went to the system on every request; `randomUUID` draws from a pool.',
  "- **Measuring.** A profiler attached to the measured host cost it about a third more CPU: the numbers above come from a host without one, the profiles from a second host. V8 had not finished optimising after 1,000 requests: warm-up is now 3 segments. Azurite answers a point query by scanning its table: each segment's draw rows are deleted afterwards, so tables stay small. Unpinned, the service's segments put three busy processes on two cores and the dev host paid for the contention. With the load generator on Azurite's core, storage was slower during the service's segments only, and a process that waits longer between events spends more CPU per request (a CPU hog on that core moved the ratio from 1.13 to 1.33): Azurite now has a core to itself, and the measured process shares the other with the load generator (on two cores; a third core goes to the load generator). autocannon reports only at its next one-second tick: a service segment now ends at its last response, where the idle gap had understated its requests per second by up to a third and added the host's idle work to its CPU.",
  "- **Cold start.** Compiling the element schema with ajv, and loading ajv's compiler, was about a third of the bundle's load time: the validator is now generated once by ajv (`npm run generate`, lib/generated/, checked by a drift test). Checking `DRAW_DAY_TIMEZONE` loaded ICU's time-zone data (about 15 ms): UTC, the default and what infra sets, needs none. `@azure/identity` with MSAL (270 KB) had come back into the bundle through telemetry's ingestion credential: both credentials now live in the separate `managedIdentity.js`, loaded on first use. The XML parser the storage SDK carries (80 KB) is loaded on first use too: this service's calls never get XML.",
  "- **Where it ships (issue #42).** In the real worker the floor pays what the package pays for gRPC and the `@azure/functions` adapter (reading its body included), so what remains beyond it is the package's own: without telemetry the remembered token, the request's checks, the rules and the log line (the profile of the section on the package in the real worker, part by part). What telemetry adds is bounded on its own, on minus off in the same rounds (docs/decisions/0220-telemetry-bounded-on-its-own.md).",
  "- **The distro's Azure Functions hook.** `@azure/monitor-opentelemetry` registered a preInvocation hook that set each invocation's trace context, which `inInvocation` already sets: per invocation the worker ran the hook and sent the host two Debug log messages about it over gRPC. The bundle stands it in with one that registers nothing (`noFunctionsHook`, scripts/bundlePlugins.ts).",
  "- **What nobody reads (issue #48).** The SDK's standard metrics (a histogram per span, a counter per log record, a marker on every dependency, an export a minute) and the exporter's resource metric (the resource's attributes again with every export) are off: no alert, tile or query reads them, and Application Insights computes the standard metrics from the records (docs/decisions/0222-telemetry-nobody-reads.md). Kept: every record and field on-call reads, and the context manager's promise hooks, which Node 22 runs for every promise while an AsyncLocalStorage is in use and Node 24 does not (its rows above); the trace context passed by hand to every store call instead would change every recording path.",
  "- **Measuring in the worker.** With workers run ABBA, the one whose segment came after the longer pause paid up to a third more CPU for it, whichever package it ran, so rounds now run each worker in turn after one round not counted (here and in the sizes section). callgrind's instruction counts were not repeatable here: one worker's count over 1,000 identical single draws varied by a quarter between windows, as timing decides how many answers one turn of the event loop handles. Under the shared machine's load the package with telemetry on lost most (its exports land on the core the bench's ingestion endpoint shares): each run's load is quoted with its section.",
  '',
  "What remains at batch 1 is mostly the HTTP layer in front of the handler, measured piece by piece under the same load: the dev host's `node:http` server (about 40 µs per request), the `@azure/functions` `HttpRequest` (an undici `Request` whose body is a web stream: about 40 µs to build, 30 µs to read the body) and `InvocationContext` with a log line (under 10 µs). The Functions worker builds the same request and context objects in Azure. The handler's own parsing and checks are about 15 µs in all (remembered token 3 µs, `parseDrawRequests` of one element 5 µs). The ratio moves with the shared machine's load and with how the processes share its cores, by about ±0.15 across runs (docs/decisions/0113-how-the-benchmark-measures.md).",
  '',
];

/** A profile as Markdown: where the busy time went by owner, then the top functions. */
function profileSection(size: number, profile: ProfileSummary): string[] {
  const pct = (share: number) => `${(share * 100).toFixed(1)} %`;
  return [
    `## Profile of the dev host at batch ${size} (\`--cpu-prof\`: a separate host, from start-up through warm-up and one segment)`,
    '',
    `Busy ${pct(profile.busyShare)} of the samples; the shares below are of the busy samples (idle excluded), by self time.`,
    '',
    '| self time | owner |',
    '|---|---|',
    ...profile.byOwner.map((o) => `| ${pct(o.share)} | ${o.owner} |`),
    '',
    '| self time | function |',
    '|---|---|',
    ...profile.top.map((t) => `| ${pct(t.share)} | \`${t.name}\` |`),
    '',
  ];
}

/** The targets, each against this run's numbers (the dev host's here, the worker's from their sections). */
function targetLines(
  rows: readonly { size: number; service: Run; floor: Run }[],
  calls: ReadonlyMap<number, { cold: number; warm: number; transactions: number }>,
  sizes: Sizes,
  workerFloor: WorkerFloor,
): string[] {
  const verdict = (ok: boolean) => (ok ? 'met' : '**not met**');
  const rounds = [...calls].every(([size, c]) => c.warm === 2 * size + 1 && c.transactions === 1);
  const lines = [
    '| target | this run | |',
    '|---|---|---|',
    `| 2 sequential storage rounds whatever the batch size; no partner read when cached | ${[...calls].map(([size, c]) => `batch ${size}: ${c.warm} calls, ${c.transactions} transaction`).join('; ')} | ${verdict(rounds)} |`,
  ];
  for (const { size, service, floor } of rows.filter((r) => r.size === 1 || r.size === 100)) {
    const ratio = service.latency.p50 / floor.latency.p50;
    lines.push(`| p50 at batch ${size} ≤ 1.3× the floor (dev host) | ${f2(ratio)}× | ${verdict(ratio <= 1.3)} |`);
  }
  return [...lines, ...workerTargetLines(workerFloor), ...sizeTargetLines(sizes)];
}

async function main(): Promise<void> {
  const date = new Date().toISOString();
  const loadBefore = loadavg()[0];
  let azurite: Azurite | undefined;
  let provider: OidcProvider | undefined;
  let host: DevHostProcess | undefined;
  try {
    [azurite, provider] = await Promise.all([startAzurite(), startOidcProvider({ audience: AUDIENCE })]);
    pin(azurite.pid, 0);
    const connection = azurite.connectionString;
    const benchProvider = provider;
    const tokenFor = (client: string) => benchToken(benchProvider, AUDIENCE, client);
    const token = await tokenFor(CLIENT);
    /** A dev host's settings and a pool of fresh loans, on tables of their own. */
    const serviceSide = async (tag: string, loans: number) => {
      const tables = serviceTables(tag);
      await createTables(connection, tables);
      await putPartner(tableClient(connection, tables.partnersTable), { clientId: CLIENT, partnerId: PARTNER });
      const pool = new LoanPool(tableClient(connection, tables.loansTable), tableClient(connection, tables.drawsTable), PARTNER);
      await pool.seed(loans);
      const env = {
        AUTH_OPENID_CONFIG_URL: provider?.openIdConfigUrl as string,
        AUTH_AUDIENCE: AUDIENCE,
        TABLES_CONNECTION_STRING: connection,
        ...tableSettings(tables),
      };
      return { env, pool };
    };

    const counting = await serviceSide('Count', 2 * (1 + 10 + 100));
    const calls = await countCalls(azurite, counting.env, token, counting.pool);

    rmSync(PROFILES, { recursive: true, force: true });
    const rows: { size: number; service: Run; floor: Run; cpuRatio: number; cpuRatios: readonly number[]; profile?: ProfileSummary }[] = [];
    for (const { size, requests } of PLAN) {
      const tag = `Batch${size}`;
      const loans = requests * size; // one segment's worth per side: reused after each reset
      process.stdout.write(`batch ${size}: seeding ${loans} loans for each side…\n`);
      const tables = floorTables(tag);
      await createTables(connection, tables);
      // Configured as the service configures its clients: the same connection handling, the same calls.
      const { loans: floorLoans, draws: floorDraws } = floorClients(connection, tables.loansTable, tables.drawsTable);
      const floorPool = new LoanPool(floorLoans, floorDraws, PARTNER);
      const [{ env, pool }] = await Promise.all([serviceSide(tag, loans), floorPool.seed(loans)]);
      const serviceRun = async (on: DevHostProcess) => {
        pin(process.pid, LOAD_GENERATOR_CORE);
        const segment = await serviceSegment(on, token, pool, size, requests);
        await pool.reset();
        return segment;
      };
      const floorRun = async () => {
        pin(process.pid, 1); // the floor is measured here
        const segment = await floorSegment(floorLoans, floorDraws, floorPool, size, requests);
        await floorPool.reset();
        return segment;
      };

      // A dev host per batch size, measured without a profiler attached (it costs the host CPU).
      host = await spawnDevHost(env);
      pin(host.pid, 1);
      for (let i = 0; i < WARMUP_SEGMENTS; i++) {
        await serviceRun(host);
        await floorRun();
      }
      const segments: { service: Segment[]; floor: Segment[] } = { service: [], floor: [] };
      for (let round = 0; round < ROUNDS; round++) {
        if (round % 2 === 0) segments.floor.push(await floorRun());
        segments.service.push(await serviceRun(host));
        if (round % 2 === 1) segments.floor.push(await floorRun());
        const [f, v] = [segments.floor[round], segments.service[round]];
        process.stdout.write(
          `  round ${round + 1}: CPU per request floor ${f2(f.cpuMs / f.ok)} ms (${f1(f.ok / f.seconds)}/s), service ${f2(v.cpuMs / v.ok)} ms (${f1(v.ok / v.seconds)}/s)\n`,
        );
      }
      const service = pooled(segments.service);
      const floor = pooled(segments.floor);
      await host.stop();

      // Then a profiled host on the same tables: warmed up alike, then one segment.
      const profileDir = join(PROFILES, `batch-${size}`);
      mkdirSync(profileDir, { recursive: true });
      host = await spawnDevHost(env, undefined, ['--cpu-prof', `--cpu-prof-dir=${profileDir}`]);
      for (let i = 0; i <= WARMUP_SEGMENTS; i++) await serviceRun(host);
      await host.stop(); // writes the profile
      host = undefined;
      const file = readdirSync(profileDir).find((f) => f.endsWith('.cpuprofile'));
      // The CPU ratio of each round (service and floor measured back to back), and its median.
      const cpuRatios = service.cpuByRound.map((ms, i) => ms / floor.cpuByRound[i]);
      const cpuRatio = median(cpuRatios);
      rows.push({ size, service, floor, cpuRatio, cpuRatios, profile: file === undefined ? undefined : summarizeProfile(join(profileDir, file), 12) });
      process.stdout.write(
        `batch ${size}: p50 service ${f1(service.latency.p50)} ms, floor ${f1(floor.latency.p50)} ms; CPU service ${f2(service.cpuPerRequest)} ms, floor ${f2(floor.cpuPerRequest)} ms, median ratio ${f2(cpuRatio)}\n`,
      );
    }

    process.stdout.write('worst-case requests:\n');
    const worst = await serviceSide('Worst', WORST_CASE_WARMUP + WORST_CASE_REQUESTS);
    const worstRows = await worstCases(worst.env, token, await tokenFor('bench-not-a-partner'), worst.pool);

    pin(process.pid, 'all'); // the workers below inherit this process's cores

    // Each starts its own Azurite: stop this one first, so the machine's cores are theirs.
    await azurite.stop(true);
    azurite = undefined;
    process.stdout.write('instance sizes in the real worker:\n');
    const sizes = await measureSizes();
    writeFileSync(SIZES_RESULTS, JSON.stringify(sizes)); // `SIZES_FROM=bench/sizes.json` renders it again
    process.stdout.write('the service against the floor in the real worker:\n');
    const workerFloor = await measureWorkerFloor();
    writeFileSync(WORKER_FLOOR_RESULTS, JSON.stringify(workerFloor)); // `FLOOR_FROM=bench/workerFloor.json` renders it again
    process.stdout.write('the day partition under load:\n');
    const day = await measureDayPartition();

    const cpu = cpus();
    const loadGenerator = LOAD_GENERATOR_CORE === 1 ? ', which the load generator shares (two cores only)' : `, the load generator core ${LOAD_GENERATOR_CORE}`;
    const placement = PINNING
      ? `: Azurite has core 0 to itself, so storage answers both sides equally fast; the measured process (the dev host, or this process for the floor) has core 1${loadGenerator}`
      : ' (not pinned to cores: fewer than two, or no taskset)';
    const lines = [
      '# Benchmark results',
      '',
      `Run ${date.slice(0, 16).replace('T', ' ')} UTC with \`npm run bench\` on ${cpu.length} × ${cpu[0]?.model.trim()}, ${Math.round(totalmem() / 2 ** 30)} GiB, Node ${process.version}; load average (1 minute) ${loadBefore.toFixed(2)} at the start, ${loadavg()[0].toFixed(2)} at the end (the machine is shared).`,
      `Azurite (in memory), the dev host and the load generator share the machine${placement}. Concurrency ${CONCURRENCY}; every request a valid batch of fresh loans.`,
      `Per batch size, after a warm-up of ${WARMUP_SEGMENTS} segments per side, ${ROUNDS} rounds alternate the floor and the service (each round one segment of about ${DRAWS_PER_SEGMENT} draws of each side, back to back), so that a shared machine's drift falls on both.`,
      '',
      '## Against the targets',
      '',
      ...targetLines(rows, calls, sizes, workerFloor),
      '',
      '## Latency and throughput: service against the floor',
      '',
      'The floor is the same storage work done directly with `@azure/data-tables` (one parallel round of point reads, then one transaction), at the same concurrency.',
      '',
      'Percentiles are of every measured request of the side, all rounds pooled.',
      '',
      '| batch | requests per side | service req/s | service p50 / p90 / p99 ms | floor req/s | floor p50 / p90 / p99 ms | p50 ratio | errors |',
      '|---|---|---|---|---|---|---|---|',
      ...rows.map(
        ({ size, service: s, floor: fl }) =>
          `| ${size} | ${s.requests} | ${f1(s.rps)} | ${f1(s.latency.p50)} / ${f1(s.latency.p90)} / ${f1(s.latency.p99)} | ${f1(fl.rps)} | ${f1(fl.latency.p50)} / ${f1(fl.latency.p90)} / ${f1(fl.latency.p99)} | **${f2(s.latency.p50 / fl.latency.p50)}×** | ${s.errors + fl.errors} |`,
      ),
      '',
      '## CPU per request',
      '',
      "Service: the dev host process's own CPU time (user + system, /proc), per 204. Floor: this process's `process.cpuUsage` over its segments, per batch. Azurite's CPU is in neither. The ratio is the median of the rounds' ratios (each round's two segments ran back to back); the per-round ratios follow it.",
      '',
      '| batch | service CPU ms/request | floor CPU ms/request | ratio (median of rounds) | ratio by round |',
      '|---|---|---|---|---|',
      ...rows.map(
        ({ size, service: s, floor: fl, cpuRatio, cpuRatios }) =>
          `| ${size} | ${f2(s.cpuPerRequest)} | ${f2(fl.cpuPerRequest)} | **${f2(cpuRatio)}×** | ${cpuRatios.map(f2).join(', ')} |`,
      ),
      '',
      '## Storage HTTP calls per request',
      '',
      'Counted at a proxy in front of Azurite. That the reads are one parallel round, followed by the transaction, is proven by `tests/integration/storageCalls.test.ts` (a proxy that holds answers until every read of the round is in flight).',
      '',
      '| batch | calls, partner cached | of which transactions | first request of an instance |',
      '|---|---|---|---|',
      ...PLAN.map(({ size }) => {
        const c = calls.get(size);
        return `| ${size} | ${c?.warm} | ${c?.transactions} | ${Number.isNaN(c?.cold) ? '' : `${c?.cold} (with the partner read)`} |`;
      }),
      '',
      ...workerFloorSection(workerFloor),
      ...sizesSection(sizes),
      day.markdown,
      '',
      ...worstCaseSection(worstRows),
      ...rows.flatMap(({ size, profile }) => (profile === undefined ? [] : profileSection(size, profile))),
      ...FINDINGS,
    ];
    mkdirSync(join(ROOT, 'bench'), { recursive: true });
    writeFileSync(RESULTS, lines.join('\n'));
    process.stdout.write(`\n${lines.join('\n')}\nwritten to ${RESULTS}\n`);
    const failed = rows.some((r) => r.service.errors + r.floor.errors > 0) || worstRows.some((r) => r.answers !== r.expected) || day.failed;
    if (failed) process.exitCode = 1;
  } finally {
    await host?.stop();
    await Promise.allSettled([azurite?.stop(true), provider?.stop()]);
  }
}

void main().catch((error) => {
  console.error(error);
  process.exit(1);
});
