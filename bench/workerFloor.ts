/**
 * The service against its floor where it ships (a section of `npm run bench`; `npm run bench:floor`
 * alone): the package (the zip of `npm run package`, telemetry on as in Azure, and again with it off)
 * and the floor as a function app (bench/floorApp.ts: the same reads and transaction straight through
 * the SDK, no checks), each loaded by the real Functions worker on Node 22 with the deployment's Node
 * options, driven over gRPC as the host drives it (tests/support/workerHost.ts).
 *
 * - **CPU per single-draw request**: rounds in which each worker runs a segment at each concurrency in
 *   turn, CPU read once the exporter has sent what the segment recorded, less the worker's idle CPU
 *   (bench/sizes.ts runCell). A round's ratio is its package segment over its floor segment; the median
 *   and the spread of the rounds' ratios are reported.
 * - **Where the difference goes**: one more package worker and floor worker under `--cpu-prof`, the
 *   samples of a measured window only (the profile's clock is the monotonic one `process.hrtime` reads),
 *   each sample given to the innermost frame that belongs to a part of the work (the package's frames
 *   mapped to their sources through the bundle's whole source map, built again and checked byte for byte).
 *
 * Knobs (never set by `npm run bench`): FLOOR_ROUNDS, FLOOR_REQUESTS_1 / FLOOR_REQUESTS_4 (per segment),
 * FLOOR_PROFILE=off, FLOOR_PROFILED (draws per profiled window), FLOOR_PROFILES_DIR (keep the profiles),
 * FLOOR_FROM=<saved json> (render a saved run again).
 */
import { build } from 'esbuild';
import { spawnSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { SourceMap } from 'node:module';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { startAzurite, type Azurite } from '../dev/azurite';
import { createTables, putPartner, tableClient, tableSettings, tablesNamed } from '../dev/demoData';
import { startOidcProvider, type OidcProvider } from '../dev/oidcProvider';
import { COMMON_OPTIONS, MAIN_OPTIONS, ROOT } from '../scripts/bundle';
import { oneCopy, oneDialect, xmlOnFirstUse } from '../scripts/bundlePlugins';
import { startIngestion, type Ingestion } from '../tests/support/ingestion';
import { deployedNodeArguments, packagedApp, type PackagedApp } from '../tests/support/packagedApp';
import { WorkerHost } from '../tests/support/workerHost';
import { benchToken } from './benchToken';
import { node22 } from './coldStart';
import { FLOOR_CLIENT, FLOOR_PARTNER } from './floor';
import { LoanPool } from './loanPool';
import { EXPORT_SETTLE_MS, recommended, runCell, type Cell } from './sizes';
import { median, pin } from './stats';

const AUDIENCE = 'api://draw-request-floor';
const ROUNDS = Number(process.env.FLOOR_ROUNDS ?? 7);
/** One request at a time, and prod's concurrency (infra/env/prod.parameters.json). */
const CONCURRENCIES = [1, recommended('prod').concurrency];
const REQUESTS: Readonly<Record<number, number>> = {
  1: Number(process.env.FLOOR_REQUESTS_1 ?? 300),
  [CONCURRENCIES[1]]: Number(process.env.FLOOR_REQUESTS_4 ?? 600),
};
/** Single draws per worker before anything is measured, so V8 has optimised every side's path. */
const WARMUP = 1_500;
/** Single draws per concurrency in the profiled workers' measured windows. */
const PROFILED = Number(process.env.FLOOR_PROFILED ?? 1_000);

export const WORKER_SIDES = ['package', 'package, telemetry off', 'floor'] as const;
export type WorkerSide = (typeof WORKER_SIDES)[number];

/** The target of issue #42: service CPU per single-draw request over the floor's, in the worker. */
export const WORKER_FLOOR_TARGET = 1.2;

export interface FloorCell {
  readonly concurrency: number;
  readonly requests: number;
  /** Worker CPU ms per request, every round pooled. */
  readonly cpuMs: Readonly<Record<WorkerSide, number>>;
  readonly p50Ms: Readonly<Record<WorkerSide, number>>;
  /** The package's CPU over the floor's, round by round (telemetry on, and off). */
  readonly ratios: readonly number[];
  readonly ratiosOff: readonly number[];
}

/** Profiled CPU ms per request of one part of the work, package and floor. */
export interface Part {
  readonly part: string;
  readonly packageMs: number;
  /** The package with telemetry off. */
  readonly offMs: number;
  readonly floorMs: number;
}

export interface Attribution {
  readonly concurrency: number;
  readonly requests: number;
  readonly parts: readonly Part[];
  /** The package's heaviest functions by self time, ms per request, with their source. */
  readonly top: readonly { readonly name: string; readonly part: string; readonly ms: number }[];
}

export interface WorkerFloor {
  readonly date: string;
  readonly node: string;
  readonly nodeArgs: readonly string[];
  readonly rounds: number;
  /** The 1-minute load average before and after (this machine's two cores are shared). */
  readonly load: { readonly before: number; readonly after: number };
  readonly cells: readonly FloorCell[];
  readonly attribution: readonly Attribution[];
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

/**
 * The parts of the work, by where a frame's code comes from (its source path for the bundles' frames,
 * its URL otherwise). A sample belongs to the innermost frame of its stack that has a part: Node's
 * sockets and streams count for the SDK that called them. Order matters: the first that matches wins.
 */
const PARTS: readonly { readonly part: string; readonly test: RegExp }[] = [
  { part: 'token verification (cached)', test: /\/lib\/(auth|verifiedTokens|entraTokens)\.ts$|\/node_modules\/jose\// },
  {
    part: 'request checks: headers, body parsing and validation',
    test: /\/lib\/(requestBody|jsonTokens|elementChecks|elementSchema|idempotency)\.ts$|\/lib\/generated\/|\/node_modules\/content-type\//,
  },
  { part: 'draw rules', test: /\/lib\/(drawRules|errorCatalogue)\.ts$/ },
  { part: 'partner lookup', test: /\/lib\/partners\.ts$/ },
  {
    part: 'telemetry',
    test: /\/lib\/(telemetry|storageTelemetry)\.ts$|\/node_modules\/(applicationinsights|@opentelemetry|@azure\/monitor-|@azure\/opentelemetry-|@azure-rest\/|@microsoft\/)|^node:internal\/async_local_storage/,
  },
  { part: 'outcome: log line and answer', test: /\/lib\/(outcome|problem)\.ts$/ },
  {
    part: 'storage client',
    test: /\/lib\/store\.ts$|\/bench\/floor\.ts$|\/node_modules\/(@azure\/(data-tables|core-[a-z-]+|abort-controller|logger)|@typespec\/ts-http-runtime|tslib)\//,
  },
  { part: 'handler', test: /\/functions\/(drawRequest|main)\.ts$|\/bench\/floorApp\.ts$/ },
  { part: 'adapter (@azure/functions)', test: /\/node_modules\/(@azure\/functions(-extensions-base)?|cookie)\// },
  { part: 'worker and gRPC', test: /azure-functions-nodejs-worker\// },
];
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

/**
 * CPU ms per request of each part, in the samples taken between `from` and `to` (µs on the monotonic
 * clock), and the heaviest functions by self time. Idle samples are not CPU.
 */
export function attribute(
  profile: CpuProfile,
  maps: ReadonlyMap<string, SourceMap>,
  from: number,
  to: number,
  requests: number,
): { parts: Map<string, number>; self: Map<string, { part: string; ms: number }> } {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const partOfNode = new Map<number, string>();
  const partOf = (id: number): string => {
    const known = partOfNode.get(id);
    if (known !== undefined) return known;
    const frame = (byId.get(id) as ProfileNode).callFrame;
    let part: string;
    if (frame.functionName === GC || frame.functionName === PROGRAM) part = frame.functionName;
    // Node runs promise hooks for the OpenTelemetry context manager's AsyncLocalStorage only.
    else if (frame.url === 'node:internal/async_hooks' && /^promise/.test(frame.functionName)) part = 'telemetry';
    else {
      const source = sourceOf(frame, maps);
      const own = PARTS.find((p) => p.test.test(source))?.part;
      const up = parent.get(id);
      part = own ?? (up === undefined ? OTHER : partOf(up));
    }
    partOfNode.set(id, part);
    return part;
  };
  const parts = new Map<string, number>();
  const self = new Map<string, { part: string; ms: number }>();
  let at = profile.startTime;
  profile.samples.forEach((id, i) => {
    const next = at + profile.timeDeltas[i];
    // A sample stands for the time since the one before it.
    const ms = (next - at) / 1000 / requests;
    at = next;
    if (next < from || next > to) return;
    const frame = (byId.get(id) as ProfileNode).callFrame;
    if (frame.functionName === '(idle)' || frame.functionName === '(root)') return;
    const part = partOf(id);
    parts.set(part, (parts.get(part) ?? 0) + ms);
    const name = `${frame.functionName || '(anonymous)'} (${shortSource(sourceOf(frame, maps))})`;
    const entry = self.get(name) ?? { part, ms: 0 };
    entry.ms += ms;
    self.set(name, entry);
  });
  return { parts, self };
}

const settle = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The monotonic clock of V8's profiles, in µs. */
const monotonicMicros = () => Number(process.hrtime.bigint() / 1000n);

export async function measureWorkerFloor(): Promise<WorkerFloor> {
  const node = node22();
  const nodeArgs = deployedNodeArguments();
  const scratch = mkdtempSync(join(tmpdir(), 'worker-floor-'));
  const load = { before: loadavg()[0], after: Number.NaN };
  const app = await packagedApp();
  let azurite: Azurite | undefined;
  let provider: OidcProvider | undefined;
  let ingestion: Ingestion | undefined;
  const workers: WorkerHost[] = [];
  try {
    const floor = await floorApp(join(scratch, 'floor'));
    const maps = new Map([[pathToFileURL(join(app.appDir, 'dist', 'bundle', 'main.js')).href, await packageMap(app)]]);
    const floorMaps = new Map([[pathToFileURL(join(floor.appDir, 'main.js')).href, floor.map]]);
    [azurite, provider, ingestion] = await Promise.all([startAzurite(), startOidcProvider({ audience: AUDIENCE }), startIngestion()]);
    pin(azurite.pid, 0); // storage answers every side alike
    pin(process.pid, 1); // the host side and the load, beside the measured worker (as npm run bench places its load generator)
    const connection = azurite.connectionString;
    const token = await benchToken(provider, AUDIENCE, FLOOR_CLIENT, {}, 3 * 3600);
    const most = Math.max(...Object.values(REQUESTS), WARMUP / 3, PROFILED);
    /** Tables of its own per side (Azurite scans a table per query), seeded alike. */
    const tablesOf = async (tag: string) => {
      const tables = tablesNamed(tag);
      await createTables(connection, tables);
      await putPartner(tableClient(connection, tables.partnersTable), { clientId: FLOOR_CLIENT, partnerId: FLOOR_PARTNER });
      const pool = new LoanPool(tableClient(connection, tables.loansTable), tableClient(connection, tables.drawsTable), FLOOR_PARTNER);
      await pool.seed(most);
      return { tables, pool };
    };
    const settings = (tables: Awaited<ReturnType<typeof tablesOf>>['tables'], telemetry: boolean): Record<string, string> => ({
      PATH: process.env.PATH ?? '',
      AUTH_OPENID_CONFIG_URL: (provider as OidcProvider).openIdConfigUrl,
      AUTH_AUDIENCE: AUDIENCE,
      TABLES_CONNECTION_STRING: connection,
      ...tableSettings(tables),
      APPLICATIONINSIGHTS_CONNECTION_STRING: telemetry ? (ingestion as Ingestion).connectionString : '',
      NODE_EXTRA_CA_CERTS: (ingestion as Ingestion).caFile,
      // As every function app has (bench/sizes.ts says why).
      WEBSITE_SITE_NAME: 'draw-request-service',
      FUNCTIONS_EXTENSION_VERSION: '~4',
    });
    const sides = {
      package: { ...(await tablesOf('FloorPkg')), appDir: app.appDir, telemetry: true },
      'package, telemetry off': { ...(await tablesOf('FloorPkgOff')), appDir: app.appDir, telemetry: false },
      floor: { ...(await tablesOf('FloorSdk')), appDir: floor.appDir, telemetry: false },
    } satisfies Record<WorkerSide, unknown>;
    const start = async (side: WorkerSide, extraArgs: readonly string[] = []) => {
      const s = sides[side];
      const host = await WorkerHost.start({
        appDir: s.appDir,
        settings: settings(s.tables, s.telemetry),
        node,
        nodeArgs: [...nodeArgs, ...extraArgs],
      });
      workers.push(host);
      pin(host.pid, 1);
      const init = await host.init();
      if ((init.result as { status?: string } | undefined)?.status !== 'Success') throw new Error(`workerInitRequest failed:\n${host.output}`);
      await host.metadata();
      await host.load();
      for (let i = 0; i < 3; i++) await runCell(host, s.pool, token, 1, CONCURRENCIES[1], WARMUP / 3);
      return host;
    };
    const forget = () => {
      // Only CPU is measured here: the envelopes are not kept (this process's heap is the host side's).
      (ingestion as Ingestion).envelopes.length = 0;
      (ingestion as Ingestion).rawBodies.length = 0;
    };

    process.stdout.write('the floor in the real worker: warming up');
    const hosts = {} as Record<WorkerSide, WorkerHost>;
    for (const side of WORKER_SIDES) hosts[side] = await start(side);
    const segments = CONCURRENCIES.map(() => [] as Record<WorkerSide, Cell[]>[]);
    // Round-robin, the first round not counted: every measured segment comes after the same pause of its
    // worker (the other two workers' segments). With ABBA, a worker's segment after the longer pause
    // cost up to a third more CPU than its segment right after its own, whichever package it was.
    for (let round = -1; round < ROUNDS; round++) {
      for (const [k, concurrency] of CONCURRENCIES.entries()) {
        const cells = Object.fromEntries(WORKER_SIDES.map((s) => [s, [] as Cell[]])) as Record<WorkerSide, Cell[]>;
        for (const side of WORKER_SIDES) {
          cells[side].push(await runCell(hosts[side], sides[side].pool, token, 1, concurrency, REQUESTS[concurrency], { settleMs: EXPORT_SETTLE_MS }));
          forget();
        }
        if (round >= 0) segments[k].push(cells);
      }
      process.stdout.write('.');
    }
    const perCall = (cells: readonly Cell[]) => cells.reduce((n, c) => n + c.cpuMsPerRequest * c.requests, 0) / cells.reduce((n, c) => n + c.requests, 0);
    const cells: FloorCell[] = CONCURRENCIES.map((concurrency, k) => {
      const all = (side: WorkerSide) => segments[k].flatMap((round) => round[side]);
      const errors = WORKER_SIDES.flatMap(all).reduce((n, c) => n + c.errors, 0);
      if (errors > 0) throw new Error(`bench: ${errors} single draws were not answered 204 in the worker floor comparison`);
      const bySide = (f: (side: WorkerSide) => number) => Object.fromEntries(WORKER_SIDES.map((s) => [s, f(s)])) as Record<WorkerSide, number>;
      return {
        concurrency,
        requests: REQUESTS[concurrency],
        cpuMs: bySide((s) => perCall(all(s))),
        p50Ms: bySide((s) => median(all(s).map((c) => c.p50))),
        ratios: segments[k].map((round) => perCall(round.package) / perCall(round.floor)),
        ratiosOff: segments[k].map((round) => perCall(round['package, telemetry off']) / perCall(round.floor)),
      };
    });
    await Promise.all(workers.splice(0).map((w) => w.kill()));

    const attribution: Attribution[] = [];
    if (process.env.FLOOR_PROFILE !== 'off') {
      process.stdout.write(' profiles');
      const profiled = async (side: WorkerSide) => {
        const dir = join(scratch, `profile-${side}`);
        const host = await start(side, ['--cpu-prof', `--cpu-prof-dir=${dir}`]);
        const windows: { concurrency: number; from: number; to: number }[] = [];
        for (const concurrency of CONCURRENCIES) {
          // The window holds its requests and the export of what they recorded, nothing recorded before it.
          await settle(EXPORT_SETTLE_MS);
          const from = monotonicMicros();
          for (let done = 0; done < PROFILED; done += REQUESTS[concurrency])
            await runCell(host, sides[side].pool, token, 1, concurrency, Math.min(REQUESTS[concurrency], PROFILED - done));
          await settle(EXPORT_SETTLE_MS);
          windows.push({ concurrency, from, to: monotonicMicros() });
        }
        await host.terminate(10_000); // the profile is written as the worker exits
        const file = readdirSync(dir).find((f) => f.endsWith('.cpuprofile'));
        if (file === undefined) throw new Error(`bench: the ${side} worker wrote no profile:\n${host.output}`);
        if (process.env.FLOOR_PROFILES_DIR !== undefined) {
          cpSync(join(dir, file), join(process.env.FLOOR_PROFILES_DIR, `${side}.cpuprofile`));
          writeFileSync(join(process.env.FLOOR_PROFILES_DIR, `${side}.windows.json`), JSON.stringify(windows));
        }
        return { profile: JSON.parse(readFileSync(join(dir, file), 'utf8')) as CpuProfile, windows };
      };
      const profiles = {} as Record<WorkerSide, Awaited<ReturnType<typeof profiled>>>;
      for (const side of WORKER_SIDES) profiles[side] = await profiled(side);
      for (const [k, concurrency] of CONCURRENCIES.entries()) {
        const of = (side: WorkerSide) => {
          const { profile, windows } = profiles[side];
          return attribute(profile, side === 'floor' ? floorMaps : maps, windows[k].from, windows[k].to, PROFILED);
        };
        const [p, o, f] = WORKER_SIDES.map(of);
        const names = [...new Set([...PARTS.map((x) => x.part), GC, PROGRAM, OTHER])];
        attribution.push({
          concurrency,
          requests: PROFILED,
          parts: names.map((part) => ({ part, packageMs: p.parts.get(part) ?? 0, offMs: o.parts.get(part) ?? 0, floorMs: f.parts.get(part) ?? 0 })),
          top: [...p.self]
            .sort((a, b) => b[1].ms - a[1].ms)
            .slice(0, 15)
            .map(([name, { part, ms }]) => ({ name, part, ms })),
        });
      }
    }
    process.stdout.write('\n');
    load.after = loadavg()[0];
    return {
      date: new Date().toISOString(),
      node: spawnSync(node, ['--version'], { encoding: 'utf8' }).stdout.trim(),
      nodeArgs,
      rounds: ROUNDS,
      load,
      cells,
      attribution,
    };
  } finally {
    await Promise.allSettled(workers.map((w) => w.kill()));
    pin(process.pid, 'all');
    app.remove();
    rmSync(scratch, { recursive: true, force: true });
    await Promise.allSettled([azurite?.stop(true), provider?.stop(), ingestion?.stop()]);
  }
}

const f2 = (x: number) => x.toFixed(2);
const spread = (xs: readonly number[]) => `${f2(Math.min(...xs))}–${f2(Math.max(...xs))}`;

/** The target line of "Against the targets": at each concurrency measured, the median ratio of rounds. */
export function workerFloorTargetLines(r: WorkerFloor): string[] {
  return r.cells.map(
    (c) =>
      `| service CPU per single-draw request ≤ ${WORKER_FLOOR_TARGET}× the floor's in the real worker (Node 22, telemetry on), concurrency ${c.concurrency} | ${f2(median(c.ratios))}× (median of ${c.ratios.length} rounds; rounds ${spread(c.ratios)}) | ${median(c.ratios) <= WORKER_FLOOR_TARGET ? 'met' : '**not met**'} |`,
  );
}

/** The Markdown section. */
export function workerFloorSection(r: WorkerFloor): string[] {
  const lines = [
    '## Service against the floor in the real worker (Node 22)',
    '',
    `Run ${r.date.slice(0, 16).replace('T', ' ')} UTC (\`bench/workerFloor.ts\`), load average ${r.load.before.toFixed(1)} before and ${r.load.after.toFixed(1)} after on two cores. ${r.node}, started with the deployment's Node options (\`${r.nodeArgs.join(' ')}\`), loads either the package (the zip of \`npm run package\`; telemetry on and sent to a local ingestion endpoint, as in Azure, and again with it off) or the floor as a function app (\`bench/floorApp.ts\`: it reads the body for the batch's loans, then makes the same point reads and transaction straight through \`@azure/data-tables\`, with no checks). The host side drives each worker over gRPC as the Functions host does; Azurite has core 0, the workers and the host side core 1. Every request a single draw of a fresh loan, answered 204.`,
    '',
    `${r.rounds} rounds after one not counted; in each, the three workers run a segment at each concurrency in turn (ABC), so that every segment follows the same pause of its worker. A worker's CPU (user + system, /proc) is read ${EXPORT_SETTLE_MS / 1000} s after a segment's last answer, so what the exporter sends of it counts, less the worker's idle CPU over as long. A round's ratio is its package segment over its floor segment; the table gives every round pooled, the median of the rounds' ratios and their spread.`,
    '',
    '| concurrency | requests per segment | package CPU ms/request | package, telemetry off | floor | package ÷ floor (median of rounds) | ratio by round | telemetry off ÷ floor (median) | ratio by round, telemetry off | p50 ms: package / off / floor |',
    '|---|---|---|---|---|---|---|---|---|---|',
    ...r.cells.map(
      (c) =>
        `| ${c.concurrency} | ${c.requests} | ${f2(c.cpuMs.package)} | ${f2(c.cpuMs['package, telemetry off'])} | ${f2(c.cpuMs.floor)} | **${f2(median(c.ratios))}×** | ${c.ratios.map(f2).join(', ')} | ${f2(median(c.ratiosOff))}× | ${c.ratiosOff.map(f2).join(', ')} | ${c.p50Ms.package.toFixed(1)} / ${c.p50Ms['package, telemetry off'].toFixed(1)} / ${c.p50Ms.floor.toFixed(1)} |`,
    ),
    '',
  ];
  for (const a of r.attribution) {
    const total = (side: 'packageMs' | 'offMs' | 'floorMs') => a.parts.reduce((n, p) => n + p[side], 0);
    const share = (x: number, of: number) => `${((100 * x) / of).toFixed(0)} %`;
    const [ours, telemetry] = [total('offMs') - total('floorMs'), total('packageMs') - total('offMs')];
    lines.push(
      `### Where the package's CPU goes beyond the floor's, concurrency ${a.concurrency} (\`--cpu-prof\`)`,
      '',
      `One more worker of each kind, profiled, warmed up alike, then ${a.requests} single draws at concurrency ${a.concurrency}: the samples from the first request until ${EXPORT_SETTLE_MS / 1000} s after the last (the export of what they recorded), with nothing left to export before it. A sample counts for the innermost frame of its stack that belongs to a part (the package's frames mapped to their sources through the bundle's whole source map): Node's sockets and streams count for the code that called them. The profiler adds its own cost, so the milliseconds are larger than those above; the differences are what it attributes. Telemetry is the package with it on minus the package with it off, part by part (its exporter sends through \`@azure/core-rest-pipeline\`, a storage client part).`,
      '',
      '| part | package ms/request | telemetry off | floor | the service beyond the floor (off − floor) | share | telemetry (on − off) | share |',
      '|---|---|---|---|---|---|---|---|',
      ...[...a.parts]
        .sort((x, y) => y.packageMs - y.floorMs - (x.packageMs - x.floorMs))
        .map(
          (p) =>
            `| ${p.part} | ${f2(p.packageMs)} | ${f2(p.offMs)} | ${f2(p.floorMs)} | ${f2(p.offMs - p.floorMs)} | ${share(p.offMs - p.floorMs, ours)} | ${f2(p.packageMs - p.offMs)} | ${share(p.packageMs - p.offMs, telemetry)} |`,
        ),
      `| **total** | **${f2(total('packageMs'))}** | **${f2(total('offMs'))}** | **${f2(total('floorMs'))}** | **${f2(ours)}** | 100 % | **${f2(telemetry)}** | 100 % |`,
      '',
      "The package's heaviest functions by self time, telemetry on (ms per request):",
      '',
      '| function (source) | part | ms/request |',
      '|---|---|---|',
      ...a.top.map((t) => `| \`${t.name}\` | ${t.part} | ${t.ms.toFixed(3)} |`),
      '',
    );
  }
  return lines;
}

if (require.main === module && process.env.FLOOR_FROM !== undefined) {
  console.log(workerFloorSection(JSON.parse(readFileSync(process.env.FLOOR_FROM, 'utf8')) as WorkerFloor).join('\n'));
} else if (require.main === module) {
  measureWorkerFloor()
    .then((result) => {
      writeFileSync(join(ROOT, 'bench', 'workerFloor.json'), JSON.stringify(result, null, 1));
      console.log([...workerFloorTargetLines(result), '', ...workerFloorSection(result)].join('\n'));
    })
    .catch((error) => {
      console.error(error);
      process.exit(1);
    });
}
