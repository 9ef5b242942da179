/**
 * The package in the real worker, round by round against its floor and against itself without telemetry
 * (a section of `npm run bench`; `npm run bench:floor` alone; the loop is bench/workerHarness.ts). Every
 * side is the real Functions worker with the deployment's Node options, driven over gRPC as the host
 * drives it, pinned with this process to core 1 (Azurite has core 0):
 *  - the floor (bench/floorApp.ts: the same reads and transaction straight through the SDK, no checks), Node 22;
 *  - the package (the zip of `npm run package`) with telemetry on and off, on Node 22 and on Node 24;
 *  - the package before issue #32 (TELEMETRY_BASELINE, built by bench/baseline.ts), on and off, Node 22.
 * Each round runs single draws at concurrency 1 and at prod's, and batches of 100 at prod's, every side
 * in turn. A round gives the package's own CPU over the floor's (telemetry off), and what telemetry adds
 * (on minus off) over the package's own CPU per single draw, and over what it added before #32 per batch;
 * the targets are the median of the rounds, with their spread. Then one more worker each of the floor and
 * of the package on Node 22, on and off, under `--cpu-prof`: where a single draw's CPU goes, part by part.
 *
 * Knobs (never set by `npm run bench`): FLOOR_ROUNDS, FLOOR_BASELINE=<commit>, FLOOR_PROFILE=off,
 * FLOOR_PROFILES_DIR (keep the profiles), FLOOR_FROM=<saved json> (render a saved run again).
 */
import { build } from 'esbuild';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { SourceMap } from 'node:module';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { COMMON_OPTIONS, MAIN_OPTIONS, ROOT } from '../scripts/bundle';
import { oneCopy, oneDialect, xmlOnFirstUse } from '../scripts/bundlePlugins';
import { deployedNodeArguments, packagedApp, type PackagedApp } from '../tests/support/packagedApp';
import type { WorkerHost } from '../tests/support/workerHost';
import type { LoanPool } from './loanPool';
import { baselinePackage, type BaselinePackage } from './baseline';
import { FLOOR_CLIENT, FLOOR_PARTNER } from './floor';
import { recommended } from './sizes';
import { median, pin } from './stats';
import {
  EXPORT_SETTLE_MS,
  inTurn,
  pinnedNode,
  runCell,
  seededTables,
  settle,
  startServices,
  startWorker,
  versionOf,
  workerSettings,
  type Cell,
  type NodeMajor,
  type Services,
} from './workerHarness';

const AUDIENCE = 'api://draw-request-floor';
/** main just before issue #32's telemetry was merged (8dd2341): what telemetry added then is the batch bound's measure. */
export const TELEMETRY_BASELINE = process.env.FLOOR_BASELINE ?? 'c88e4df';
/** Counted rounds: at least 10, so that a target is the median of 10 (issue #48). */
const ROUNDS = Number(process.env.FLOOR_ROUNDS ?? 10);
/** One request at a time, and prod's concurrency (infra/env/prod.parameters.json). */
const PROD = recommended('prod').concurrency;
/** Single draws per worker before anything is measured, so V8 has optimised every side's path; batches of 100 too where a side runs them. */
const WARMUP = { singles: 1_500, batches: 8 };
/** Single draws at prod's concurrency in the profiled workers' measured windows, in chunks taken in turn. */
const PROFILED = 1_000;
const PROFILE_CHUNK = 200;

/** The workers: which app, which Node, telemetry on or off. */
const SIDES = {
  floor: { app: 'floor', node: 22, telemetry: false },
  'package, Node 22': { app: 'package', node: 22, telemetry: true },
  'package, Node 22, telemetry off': { app: 'package', node: 22, telemetry: false },
  'package, Node 24': { app: 'package', node: 24, telemetry: true },
  'package, Node 24, telemetry off': { app: 'package', node: 24, telemetry: false },
  'before #32': { app: 'before #32', node: 22, telemetry: true },
  'before #32, telemetry off': { app: 'before #32', node: 22, telemetry: false },
} as const satisfies Record<string, { app: 'floor' | 'package' | 'before #32'; node: NodeMajor; telemetry: boolean }>;
export type Side = keyof typeof SIDES;
const on = (node: NodeMajor) => `package, Node ${node}` as const;
const off = (node: NodeMajor) => `package, Node ${node}, telemetry off` as const;

/**
 * The segments of a round, each run by the groups named, in this order. The sides a single-draw target
 * compares run at the same time, so that the shared machine's load falls on them alike (record 0225).
 */
export const PLAN: readonly { batch: 1 | 100; concurrency: number; requests: number; groups: readonly (readonly Side[])[] }[] = [
  { batch: 1, concurrency: 1, requests: 300, groups: [['floor', on(22), off(22)]] },
  {
    batch: 1,
    concurrency: PROD,
    requests: 600,
    groups: [
      ['floor', on(22), off(22)],
      [on(24), off(24)],
    ],
  },
  // The floor runs the batches too: a worker that has run batches of 100 spends about half as much again per
  // single draw afterwards, the floor as much as the package (record 0224), so only workers of the same history compare.
  {
    batch: 100,
    concurrency: PROD,
    requests: 40,
    groups: [['floor'], [on(22)], [off(22)], [on(24)], [off(24)], ['before #32'], ['before #32, telemetry off']],
  },
];
/** The sides that run a segment. */
export const sidesOf = (segment: (typeof PLAN)[number]): readonly Side[] => segment.groups.flat();

/**
 * The targets of issue #48, each on the median of the rounds: the package's own CPU per single draw at
 * most 1.2× the floor's (telemetry off, concurrency 1 and prod's); what telemetry adds per single draw at
 * prod's concurrency at most ½ of the package's own (Node 22); per batch of 100 at most ½ (Node 22) and ⅓
 * (Node 24) of what it added to the package before #32 on Node 22, in the same rounds.
 */
export const WORKER_TARGETS = { ownVsFloor: 1.2, telemetryVsOwn: 0.5, telemetryVsBefore: { 22: 1 / 2, 24: 1 / 3 } } as const;

/** One segment of the plan: each side's cell, round by round. */
export interface Segment {
  readonly batch: 1 | 100;
  readonly concurrency: number;
  readonly requests: number;
  readonly rounds: readonly Partial<Record<Side, Cell>>[];
}

/** Profiled CPU ms per request of one part of the work: the package on Node 22 with telemetry on and off, and the floor. */
export interface Part {
  readonly part: string;
  readonly onMs: number;
  readonly offMs: number;
  readonly floorMs: number;
}

export interface WorkerFloor {
  readonly date: string;
  readonly nodes: Readonly<Record<NodeMajor, string>>;
  readonly nodeArgs: readonly string[];
  readonly baseline: string;
  /** The 1-minute load average before and after (this machine's two cores are shared). */
  readonly load: { readonly before: number; readonly after: number };
  readonly segments: readonly Segment[];
  /** At prod's concurrency; absent with FLOOR_PROFILE=off. */
  readonly parts?: readonly Part[];
  /** The package's heaviest functions by self time, telemetry on, ms per request, with their source. */
  readonly top?: readonly { readonly name: string; readonly part: string; readonly ms: number }[];
}

/** The floor app: bench/floorApp.ts bundled as the package is (same options and plugins for the SDK's code). */
async function floorApp(dir: string): Promise<{ appDir: string; map: SourceMap }> {
  const result = await build({
    ...COMMON_OPTIONS,
    entryPoints: [join(ROOT, 'bench', 'floorApp.ts')],
    outfile: join(dir, 'main.js'),
    plugins: [xmlOnFirstUse, oneCopy(ROOT), oneDialect],
    sourcemap: 'external', // kept here for the profile, not loaded by the worker
    write: false,
  });
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: 'floor', version: '1.0.0', main: 'main.js' }));
  writeFileSync(join(dir, 'host.json'), JSON.stringify({ version: '2.0' }));
  let map: SourceMap | undefined;
  for (const file of result.outputFiles) {
    if (file.path.endsWith('.map')) map = new SourceMap(JSON.parse(file.text) as ConstructorParameters<typeof SourceMap>[0]);
    else writeFileSync(file.path, file.contents);
  }
  if (map === undefined) throw new Error('bench: esbuild wrote no source map for the floor app');
  return { appDir: dir, map };
}

/**
 * The package's main.js with the whole source map (the shipped one names only the service's own
 * sources): built again with the same options, and refused unless it is the shipped main.js byte for byte.
 */
async function packageMap(app: PackagedApp): Promise<SourceMap> {
  const result = await build({ ...MAIN_OPTIONS, write: false });
  const js = result.outputFiles.find((f) => f.path.endsWith('main.js'));
  const map = result.outputFiles.find((f) => f.path.endsWith('main.js.map'));
  const shipped = readFileSync(join(app.appDir, 'dist', 'bundle', 'main.js'), 'utf8');
  if (js === undefined || map === undefined || js.text !== shipped)
    throw new Error("bench: main.js built again is not the package's: its map would misattribute");
  return new SourceMap(JSON.parse(map.text) as ConstructorParameters<typeof SourceMap>[0]);
}

const TELEMETRY_PACKAGES = String.raw`\/node_modules\/(applicationinsights|@opentelemetry|@azure\/monitor-|@azure\/opentelemetry-|@azure-rest\/|@microsoft\/)`;
/**
 * The parts of the work, by where a frame's code comes from (its source path for the bundles' frames,
 * its URL otherwise). A sample belongs to the innermost frame of its stack that has a part, except that
 * the exporter claims everything it calls (its HTTP client is the storage SDK's). Node's sockets and
 * streams count for the code that called them. Order matters: the first that matches wins.
 */
const PARTS: readonly { readonly part: string; readonly test: RegExp }[] = [
  { part: 'telemetry: export (envelopes, their JSON, the POST to ingestion)', test: /\/node_modules\/@azure\/monitor-opentelemetry-exporter\// },
  {
    part: "telemetry: metrics (the SDK's meters and their exports)",
    test: /\/node_modules\/(@opentelemetry\/sdk-metrics\/|@azure\/monitor-opentelemetry\/.*\/metrics\/)/,
  },
  {
    part: "telemetry: context (AsyncLocalStorage and Node's promise hooks for it)",
    test: /\/node_modules\/@opentelemetry\/context-async-hooks\/|^node:internal\/async_local_storage/,
  },
  {
    part: 'telemetry: recording (spans, the event, their processors, the rounds)',
    test: new RegExp(String.raw`\/lib\/(telemetry|storageTelemetry)\.ts$|${TELEMETRY_PACKAGES}`),
  },
  { part: 'token verification (cached)', test: /\/lib\/(auth|verifiedTokens|entraTokens)\.ts$|\/node_modules\/jose\// },
  {
    part: 'request checks: headers, body parsing and validation',
    test: /\/lib\/(requestBody|jsonTokens|elementChecks|elementSchema|idempotency)\.ts$|\/lib\/generated\/|\/node_modules\/content-type\//,
  },
  { part: 'draw rules', test: /\/lib\/(drawRules|errorCatalogue|loans)\.ts$/ },
  { part: 'partner lookup', test: /\/lib\/partners\.ts$/ },
  { part: 'outcome: log line and answer', test: /\/lib\/(outcome|problem)\.ts$/ },
  {
    part: 'storage client',
    test: /\/lib\/(store|keyedBatch)\.ts$|\/bench\/floor\.ts$|\/node_modules\/(@azure\/(data-tables|core-[a-z-]+|abort-controller|logger)|@typespec\/ts-http-runtime|tslib)\//,
  },
  { part: 'handler', test: /\/functions\/(drawRequest|main)\.ts$|\/bench\/floorApp\.ts$/ },
  { part: 'adapter (@azure/functions)', test: /\/node_modules\/(@azure\/functions(-extensions-base)?|cookie)\// },
  { part: 'worker and gRPC', test: /azure-functions-nodejs-worker\// },
];
const EXPORT = PARTS[0].part;
const CONTEXT = PARTS[2].part;
const GC = '(garbage collector)';
/** V8's own time outside JavaScript (the event loop's polling, compiling …). */
const PROGRAM = '(program)';
const OTHER = 'Node and V8, not under any of these';

interface ProfileNode {
  readonly id: number;
  readonly callFrame: { readonly functionName: string; readonly url: string; readonly lineNumber: number; readonly columnNumber: number };
  readonly children?: readonly number[];
}
export interface CpuProfile {
  readonly nodes: readonly ProfileNode[];
  readonly startTime: number;
  readonly samples: readonly number[];
  readonly timeDeltas: readonly number[];
}

/**
 * Where a frame's code comes from: for a bundle's frame (its file URL a key of `maps`), the source its
 * map gives, as `/node_modules/<package>/…` or the repository path (`webpack://<package>/…`, a package's
 * own bundled sources, counts as that package); otherwise the frame's URL.
 */
function sourceOf(frame: ProfileNode['callFrame'], maps: ReadonlyMap<string, SourceMap>): string {
  const map = maps.get(frame.url);
  if (map === undefined) return frame.url;
  const { originalSource } = map.findEntry(frame.lineNumber, frame.columnNumber) as { originalSource?: string };
  if (originalSource === undefined) return frame.url;
  return `/${originalSource.replace(/^webpack:\/\//, 'node_modules/').replace(/^(\.\.\/)+/, '')}`;
}

/** A source as the tables show it: a package's path, or the repository's. */
function shortSource(source: string): string {
  if (source === '') return 'V8';
  if (source.startsWith('file://')) return shortSource(fileURLToPath(source));
  const inPackage = /\/node_modules\/(.*)$/.exec(source)?.[1];
  if (inPackage !== undefined) return inPackage;
  return source.startsWith(`${ROOT}/`) ? source.slice(ROOT.length + 1) : source.replace(/^\/(?=[a-z]+\/)/, '');
}

/** A measured stretch of a profile, µs on the monotonic clock. */
export interface Window {
  readonly from: number;
  readonly to: number;
}

/**
 * CPU ms per request of each part, in the samples taken within the windows, and the heaviest functions
 * by self time. Idle samples are not CPU.
 */
export function attribute(
  profile: CpuProfile,
  maps: ReadonlyMap<string, SourceMap>,
  windows: readonly Window[],
  requests: number,
): { parts: Map<string, number>; self: Map<string, { part: string; ms: number }> } {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const own = (id: number): string | undefined => {
    const frame = (byId.get(id) as ProfileNode).callFrame;
    if (frame.functionName === GC || frame.functionName === PROGRAM) return frame.functionName;
    // Node runs promise hooks for the OpenTelemetry context manager's AsyncLocalStorage only.
    if (frame.url === 'node:internal/async_hooks' && /^promise/.test(frame.functionName)) return CONTEXT;
    const source = sourceOf(frame, maps);
    return PARTS.find((p) => p.test.test(source))?.part;
  };
  const known = new Map<number, { part: string; exported: boolean }>();
  const of = (id: number): { part: string; exported: boolean } => {
    const memo = known.get(id);
    if (memo !== undefined) return memo;
    const up = parent.get(id);
    const above = up === undefined ? { part: OTHER, exported: false } : of(up);
    const mine = own(id);
    const result = above.exported ? above : mine === EXPORT ? { part: EXPORT, exported: true } : { part: mine ?? above.part, exported: false };
    known.set(id, result);
    return result;
  };
  const parts = new Map<string, number>();
  const self = new Map<string, { part: string; ms: number }>();
  let at = profile.startTime;
  profile.samples.forEach((id, i) => {
    const next = at + profile.timeDeltas[i];
    // A sample stands for the time since the one before it.
    const ms = (next - at) / 1000 / requests;
    at = next;
    if (!windows.some((w) => next >= w.from && next <= w.to)) return;
    const frame = (byId.get(id) as ProfileNode).callFrame;
    if (frame.functionName === '(idle)' || frame.functionName === '(root)') return;
    const { part } = of(id);
    parts.set(part, (parts.get(part) ?? 0) + ms);
    const name = `${frame.functionName || '(anonymous)'} (${shortSource(sourceOf(frame, maps))})`;
    const entry = self.get(name) ?? { part, ms: 0 };
    entry.ms += ms;
    self.set(name, entry);
  });
  return { parts, self };
}

/** The monotonic clock of V8's profiles, in µs. */
const monotonicMicros = () => Number(process.hrtime.bigint() / 1000n);

export async function measureWorkerFloor(): Promise<WorkerFloor> {
  const date = new Date().toISOString();
  const nodes = { 22: pinnedNode(22), 24: pinnedNode(24) };
  const nodeArgs = deployedNodeArguments();
  const scratch = mkdtempSync(join(tmpdir(), 'worker-floor-'));
  const load = { before: loadavg()[0], after: Number.NaN };
  const app = await packagedApp();
  let before: BaselinePackage | undefined;
  let services: Services | undefined;
  const workers: WorkerHost[] = [];
  try {
    process.stdout.write(`building the package of ${TELEMETRY_BASELINE} (before issue #32)…\n`);
    before = await baselinePackage(TELEMETRY_BASELINE);
    services = await startServices(AUDIENCE, FLOOR_CLIENT);
    const { token, ingestion } = services;
    const floor = await floorApp(join(scratch, 'floor'));
    const apps = { floor: floor.appDir, package: app.appDir, 'before #32': before.appDir };
    pin(process.pid, 1); // the host side and the load, beside the measured workers
    const start = async (side: Side, extraArgs: readonly string[] = []) => {
      const { app: what, node, telemetry } = SIDES[side];
      const runs = PLAN.filter((s) => sidesOf(s).includes(side));
      const loans = Math.max(WARMUP.singles / 3, PROFILED, ...runs.map((s) => s.requests * s.batch));
      const { tables, pool } = await seededTables(services as Services, side.replace(/\W+/g, ''), FLOOR_PARTNER, loans);
      const { host } = await startWorker(apps[what], workerSettings(services as Services, tables, telemetry), nodes[node], [...nodeArgs, ...extraArgs]);
      workers.push(host);
      pin(host.pid, 1);
      for (let i = 0; i < 3; i++) await runCell(host, pool, token, 1, PROD, WARMUP.singles / 3);
      if (runs.some((s) => s.batch === 100)) await runCell(host, pool, token, 100, PROD, WARMUP.batches);
      return { host, pool };
    };
    const forget = () => {
      // Only CPU is measured here: the envelopes are not kept (this process's heap is the host side's).
      ingestion.envelopes.length = 0;
      ingestion.rawBodies.length = 0;
    };

    process.stdout.write('the package in the real worker: warming up');
    const sides = [...new Set(PLAN.flatMap(sidesOf))];
    const running = {} as Record<Side, Awaited<ReturnType<typeof start>>>;
    for (const side of sides) running[side] = await start(side);
    const counted = await inTurn(
      ROUNDS,
      PLAN.map((segment) => ({
        groups: segment.groups,
        run: async (side: Side) => {
          const { host, pool } = running[side];
          const cell = await runCell(host, pool, token, segment.batch, segment.concurrency, segment.requests, { settleMs: EXPORT_SETTLE_MS });
          forget();
          return cell;
        },
      })),
    );
    const segments = PLAN.map(({ batch, concurrency, requests }, k) => ({ batch, concurrency, requests, rounds: counted[k] }));
    await Promise.all(workers.splice(0).map((w) => w.kill()));

    let profiled: Pick<WorkerFloor, 'parts' | 'top'> = {};
    if (process.env.FLOOR_PROFILE !== 'off') {
      process.stdout.write(' profiles');
      const maps = new Map([
        [pathToFileURL(join(app.appDir, 'dist', 'bundle', 'main.js')).href, await packageMap(app)],
        [pathToFileURL(join(floor.appDir, 'main.js')).href, floor.map],
      ]);
      // The profiled workers take turns as the measured ones do, in chunks, each window its requests and the
      // export of what they recorded: load on the shared machine falls on the three alike.
      const sides = [on(22), off(22), 'floor'] as const;
      const profiling = new Map<Side, { host: WorkerHost; pool: LoanPool; dir: string; windows: Window[] }>();
      for (const side of sides) {
        const dir = join(scratch, `profile-${side.replace(/\W+/g, '-')}`);
        profiling.set(side, { ...(await start(side, ['--cpu-prof', `--cpu-prof-dir=${dir}`])), dir, windows: [] });
      }
      await inTurn(PROFILED / PROFILE_CHUNK, [
        {
          groups: sides.map((side) => [side]),
          run: async (side) => {
            const { host, pool, windows } = profiling.get(side) as NonNullable<ReturnType<typeof profiling.get>>;
            const from = monotonicMicros();
            const cell = await runCell(host, pool, token, 1, PROD, PROFILE_CHUNK);
            await settle(EXPORT_SETTLE_MS);
            windows.push({ from, to: monotonicMicros() });
            forget();
            return cell;
          },
        },
      ]);
      const profileOf = async (side: Side) => {
        const { host, dir, windows } = profiling.get(side) as NonNullable<ReturnType<typeof profiling.get>>;
        await host.terminate(10_000); // the profile is written as the worker exits
        const file = readdirSync(dir).find((f) => f.endsWith('.cpuprofile'));
        if (file === undefined) throw new Error(`bench: the ${side} worker wrote no profile:\n${host.output}`);
        if (process.env.FLOOR_PROFILES_DIR !== undefined) cpSync(join(dir, file), join(process.env.FLOOR_PROFILES_DIR, `${side}.cpuprofile`));
        // The first window is the round not counted.
        return attribute(JSON.parse(readFileSync(join(dir, file), 'utf8')) as CpuProfile, maps, windows.slice(1), PROFILED);
      };
      const [p, o, f] = [await profileOf(on(22)), await profileOf(off(22)), await profileOf('floor')];
      profiled = {
        parts: [...new Set([...PARTS.map((x) => x.part), GC, PROGRAM, OTHER])].map((part) => ({
          part,
          onMs: p.parts.get(part) ?? 0,
          offMs: o.parts.get(part) ?? 0,
          floorMs: f.parts.get(part) ?? 0,
        })),
        top: [...p.self]
          .sort((a, b) => b[1].ms - a[1].ms)
          .slice(0, 15)
          .map(([name, { part, ms }]) => ({ name, part, ms })),
      };
    }
    process.stdout.write('\n');
    load.after = loadavg()[0];
    return {
      date,
      nodes: { 22: versionOf(nodes[22]), 24: versionOf(nodes[24]) },
      nodeArgs,
      baseline: before.commit,
      load,
      segments,
      ...profiled,
    };
  } finally {
    await Promise.allSettled(workers.map((w) => w.kill()));
    pin(process.pid, 'all');
    app.remove();
    before?.remove();
    rmSync(scratch, { recursive: true, force: true });
    await services?.stop();
  }
}

const f2 = (x: number) => x.toFixed(2);
const f1 = (x: number) => x.toFixed(1);

/** A figure of each counted round, its median, and its spread across the rounds. */
export interface ByRound {
  readonly median: number;
  readonly rounds: readonly number[];
}
const byRound = (rounds: readonly number[]): ByRound => ({ median: median(rounds), rounds });
const spread = ({ median: m, rounds }: ByRound, digits = 2) =>
  `**${m.toFixed(digits)}** (median of ${rounds.length} rounds; ${Math.min(...rounds).toFixed(digits)} to ${Math.max(...rounds).toFixed(digits)})`;

/** The round-by-round figures the targets are judged on. */
export function figures(r: WorkerFloor) {
  const segment = (batch: 1 | 100, concurrency: number) => r.segments.find((s) => s.batch === batch && s.concurrency === concurrency);
  const cpu = (cells: Partial<Record<Side, Cell>>, side: Side) => cells[side]?.cpuMsPerRequest ?? NaN;
  const ratio = (s: Segment | undefined, of: (cells: Partial<Record<Side, Cell>>) => number) => byRound((s?.rounds ?? []).map(of));
  const added = (cells: Partial<Record<Side, Cell>>, node: NodeMajor) => cpu(cells, on(node)) - cpu(cells, off(node));
  const prod = r.segments.find((s) => s.batch === 1 && s.concurrency !== 1)?.concurrency ?? PROD;
  return {
    prod,
    ownVsFloor: [1, prod].map((c) => ({ concurrency: c, ...ratio(segment(1, c), (cells) => cpu(cells, off(22)) / cpu(cells, 'floor')) })),
    singleTelemetry: ([22, 24] as const).map((node) => ({ node, ...ratio(segment(1, prod), (cells) => added(cells, node) / cpu(cells, off(node))) })),
    batchTelemetry: ([22, 24] as const).map((node) => ({
      node,
      ...ratio(segment(100, prod), (cells) => added(cells, node) / (cpu(cells, 'before #32') - cpu(cells, 'before #32, telemetry off'))),
    })),
  };
}

/** The lines of "Against the targets" this section measures. */
export function workerTargetLines(r: WorkerFloor): string[] {
  const { prod, ownVsFloor, singleTelemetry, batchTelemetry } = figures(r);
  const judged = (x: ByRound, bound: number) => (Number.isNaN(x.median) ? '**not met**' : x.median <= bound ? 'met' : '**not met**');
  const shown = (x: ByRound) => (x.rounds.length === 0 || Number.isNaN(x.median) ? 'not measured' : `${spread(x)}×`);
  const third = (x: number) => (x === 1 / 3 ? '⅓' : x === 1 / 2 ? '½' : String(x));
  return [
    ...ownVsFloor.map(
      (x) =>
        `| the package's own CPU per single draw ≤ ${WORKER_TARGETS.ownVsFloor}× the floor's, in the real worker, telemetry off (Node 22), concurrency ${x.concurrency}${x.concurrency === prod ? " (prod's)" : ''} | ${shown(x)} | ${judged(x, WORKER_TARGETS.ownVsFloor)} |`,
    ),
    ...singleTelemetry.map(
      (x) =>
        `| what telemetry adds per single draw at prod's concurrency (on − off, same rounds) ≤ ${third(WORKER_TARGETS.telemetryVsOwn)} of the package's own CPU, Node ${x.node}${x.node === 22 ? '' : ': reported'} | ${shown(x)} | ${x.node === 22 ? judged(x, WORKER_TARGETS.telemetryVsOwn) : 'reported'} |`,
    ),
    ...batchTelemetry.map(
      (x) =>
        `| what telemetry adds per batch of 100 at prod's concurrency (on − off, same rounds) ≤ ${third(WORKER_TARGETS.telemetryVsBefore[x.node])} of what it added to the package before #32 (${r.baseline}, Node 22), Node ${x.node} | ${shown(x)} | ${judged(x, WORKER_TARGETS.telemetryVsBefore[x.node])} |`,
    ),
  ];
}

/** The groups of single-draw segments whose sides run at the same time, as the section names them. */
const together = () =>
  [
    ...new Set(PLAN.filter((s) => s.batch === 1).flatMap((s) => s.groups.filter((g) => g.length > 1).map((g) => g.map((side) => `“${side}”`).join(' with ')))),
  ].join('; ');

/** The Markdown section. */
export function workerFloorSection(r: WorkerFloor): string[] {
  const perSide = (s: Segment) => {
    const sides = Object.keys(SIDES).filter((side) => s.rounds[0]?.[side as Side] !== undefined) as Side[];
    const pooled = (side: Side, f: (c: Cell) => number) => median(s.rounds.map((cells) => f(cells[side] as Cell)));
    return sides.map(
      (side) =>
        `| ${s.batch} | ${s.concurrency} | ${s.requests} | ${side} | ${f2(pooled(side, (c) => c.cpuMsPerRequest))} | ${f1(pooled(side, (c) => c.p50))} |`,
    );
  };
  const parts = r.parts ?? [];
  const total = (key: 'onMs' | 'offMs' | 'floorMs') => parts.reduce((n, p) => n + p[key], 0);
  return [
    '## The package in the real worker: its own cost against the floor, and what telemetry adds',
    '',
    `Run ${r.date.slice(0, 16).replace('T', ' ')} UTC (\`bench/workerFloor.ts\`), load average ${r.load.before.toFixed(1)} before and ${r.load.after.toFixed(1)} after on two cores. The real Functions worker on Node ${r.nodes[22]} (and ${r.nodes[24]} where a side says Node 24), started with the deployment's Node options (\`${r.nodeArgs.join(' ')}\`), loads the package (the zip of \`npm run package\`; telemetry sent to a local ingestion endpoint, as in Azure, or off), the package before issue #32 (\`npm run package\` of ${r.baseline}, built by this run: \`bench/baseline.ts\`), or the floor as a function app (\`bench/floorApp.ts\`: it reads the body for the batch's loans, then makes the same point reads and transaction straight through \`@azure/data-tables\`, with no checks). The host side drives each worker over gRPC as the Functions host does; Azurite has core 0, the workers and the host side core 1. Every request is a valid batch of fresh loans, answered 204.`,
    '',
    `${r.segments[0]?.rounds.length ?? 0} rounds after one not counted; in each, the workers run each kind of segment in turn, so that every segment follows the same pause of its worker, except that the sides a single-draw target compares run theirs at the same time (${together()}), so that the shared machine's load falls on them alike (docs/decisions/0225-compared-sides-run-at-the-same-time.md). A worker's CPU (user + system, /proc) is read ${EXPORT_SETTLE_MS / 1000} s after a segment's last answer, so what the exporter sends of it counts, less the worker's idle CPU over as long. The targets above are figures of each round (the package's own CPU over the floor's; telemetry on minus off over the package's own CPU, or over what telemetry added before #32 in the same round): their median, and the lowest and highest round. Below, each side's median over the rounds.`,
    '',
    '| batch | concurrency | requests per segment | worker | CPU ms/request | p50 ms |',
    '|---|---|---|---|---|---|',
    ...r.segments.flatMap(perSide),
    '',
    ...(parts.length === 0
      ? []
      : [
          `### Where a single draw's CPU goes at concurrency ${figures(r).prod} (\`--cpu-prof\`, Node 22)`,
          '',
          `One more worker each of the package with telemetry on and off and of the floor, warmed up alike, then ${PROFILED} single draws at prod's concurrency, in chunks of ${PROFILE_CHUNK} the three take in turn after one round not counted: the samples from a chunk's first request until ${EXPORT_SETTLE_MS / 1000} s after its last (the export of what it recorded), with nothing left to export before it. A sample counts for the innermost frame of its stack that belongs to a part, the package's frames mapped to their sources through the bundle's whole source map; the exporter claims everything it calls (its JSON, its HTTP client). Node's sockets and streams count for the code that called them, so what telemetry costs outside its own parts (the exporter's responses arriving, the worker's extra turns) shows as on minus off in the other rows. The profiler adds its own cost, so the milliseconds are larger than those above; the differences are what it attributes.`,
          '',
          '| part | package ms/request | telemetry off | floor | telemetry (on − off) | the package beyond the floor (off − floor) |',
          '|---|---|---|---|---|---|',
          ...[...parts]
            .sort((x, y) => y.onMs - y.offMs - (x.onMs - x.offMs))
            .map((p) => `| ${p.part} | ${f2(p.onMs)} | ${f2(p.offMs)} | ${f2(p.floorMs)} | ${f2(p.onMs - p.offMs)} | ${f2(p.offMs - p.floorMs)} |`),
          `| **total** | **${f2(total('onMs'))}** | **${f2(total('offMs'))}** | **${f2(total('floorMs'))}** | **${f2(total('onMs') - total('offMs'))}** | **${f2(total('offMs') - total('floorMs'))}** |`,
          '',
          "The package's heaviest functions by self time, telemetry on (ms per request):",
          '',
          '| function (source) | part | ms/request |',
          '|---|---|---|',
          ...(r.top ?? []).map((t) => `| \`${t.name}\` | ${t.part} | ${t.ms.toFixed(3)} |`),
          '',
        ]),
  ];
}

if (require.main === module) {
  const saved = process.env.FLOOR_FROM;
  (saved === undefined ? measureWorkerFloor() : Promise.resolve(JSON.parse(readFileSync(saved, 'utf8')) as WorkerFloor))
    .then((result) => {
      if (saved === undefined) writeFileSync(join(ROOT, 'bench', 'workerFloor.json'), JSON.stringify(result));
      console.log([...workerTargetLines(result), '', ...workerFloorSection(result)].join('\n'));
    })
    .catch((error) => {
      console.error(error);
      process.exit(1);
    });
}
