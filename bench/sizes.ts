/**
 * Flex Consumption's instance sizes, measured on the package in the real Functions worker (a section of
 * `npm run bench`; `npm run bench:sizes` alone; the loop is bench/workerHarness.ts). Each size's CPU is a
 * cgroup v1 CFS quota on the worker process (and its memory a memory cgroup limit): 512 MB gets a quarter
 * of a core, 2,048 MB one core, 4,096 MB two. Per size, on Node 22 (production) with telemetry on:
 *  - start-up: fresh workers, from workerInitRequest to every function loaded, and RSS then; at one core
 *    interleaved with the package with telemetry off, the empty app, the `tsc` output and the package on
 *    Node 24: telemetry's share of start-up and what the bundle saves;
 *  - a warm worker under closed-loop load: single draws and batches of 100 at several concurrencies, the
 *    size's default and prod's among them; p50/p99, the worker's CPU per request, its RSS and peak RSS;
 *  - at one core, what a single draw, a batch of 100 and a refused batch of 100 send to the ingestion endpoint.
 * Azurite, the OpenID provider and this process (the host side) run outside the limits.
 *
 * Knobs for trying things (never set by `npm run bench`): SIZES_ONLY=2048 (sizes), SIZES_NODE_ARGS (Node
 * options instead of the deployment's), SIZES_COLD_RUNS / SIZES_INIT_RUNS / SIZES_SINGLES / SIZES_BATCHES /
 * SIZES_ISOLATED (sample counts), SIZES_FROM=<saved json> (render a saved run again).
 */
import { build } from 'esbuild';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, rmdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ROOT } from '../scripts/bundle';
import type { Ingestion } from '../tests/support/ingestion';
import { deployedNodeArguments, packagedApp } from '../tests/support/packagedApp';
import type { WorkerHost } from '../tests/support/workerHost';
import { INGESTION, alwaysReadyBreakEvenShare, alwaysReadyMonthly, billedSeconds, sparsePerMillion, steadyPerMillion, telemetryPerMillion } from './costModel';
import type { LoanPool } from './loanPool';
import { median, medianInterval } from './stats';
import {
  NODES,
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
} from './workerHarness';

export type { Cell } from './workerHarness';

/** Flex Consumption's sizes: memory, the share of a core each gets, and the default HTTP concurrency per instance. */
export const INSTANCE_SIZES = [
  { memoryMB: 512, cores: 0.25, defaultConcurrency: 4, concurrencies: [1, 2, 4] },
  { memoryMB: 2048, cores: 1, defaultConcurrency: 16, concurrencies: [1, 4, 8, 16] },
  { memoryMB: 4096, cores: 2, defaultConcurrency: 32, concurrencies: [1, 8, 16, 32] },
] as const;
export type MemoryMB = (typeof INSTANCE_SIZES)[number]['memoryMB'];

/**
 * The start-up bounds, at one core (docs/decisions/0220-telemetry-bounded-on-its-own.md): telemetry's share (the
 * package with it on minus off, paired workers started back to back) at most 50 ms on Node 22, judged only
 * when its 95 % interval lies on one side of the bound; the package ready within 250 ms; loading the
 * bundle at most 40 % of what loading the `tsc` output adds to the empty app's; RSS above the empty
 * app's reported, with a regression guard at +20 MiB; the zip at most 5 MiB.
 */
export const START_TARGETS = { telemetryMs: 50, readyMs: 250, bundleShare: 0.4, rssGuardAboveEmptyMiB: 20, zipMiB: 5 } as const;

/** Issue #32's bounds on what one call sends to Application Insights (JSON bytes, KiB as 1,024). */
export const TELEMETRY_TARGETS = {
  single: { envelopes: 6, bytes: 4 * 1024 },
  batch: { envelopes: 12, bytes: 24 * 1024 },
  refused: { envelopes: 12, bytes: 32 * 1024 },
} as const;

/** The same calls before issue #32, as bench/results.md of 2026-11-25 recorded them (the refused batch as issue #32 quotes it). */
export const TELEMETRY_BEFORE = {
  date: '2026-11-25',
  single: '8.1 envelopes, 6,822 bytes (6.8 KB)',
  batch: '504 envelopes, 440,337 bytes (440 KB)',
  refused: '501 envelopes, 460 KB',
} as const;

const AUDIENCE = 'api://draw-request-sizes';
const CLIENT = 'sizes-client';
const PARTNER = 'SIZES';
const COLD_RUNS = Number(process.env.SIZES_COLD_RUNS ?? 7);
/** At one core, where the start-up differences are judged: the quota's 100 ms periods make single samples jumpy. */
const INIT_RUNS = Math.max(COLD_RUNS, Number(process.env.SIZES_INIT_RUNS ?? 31));
/** Requests per cell: enough for a p99 of singles; for batches of 100, the p99 is about the slowest of them. */
const SINGLES = Number(process.env.SIZES_SINGLES ?? 400);
const BATCHES = Number(process.env.SIZES_BATCHES ?? 24);
const ISOLATED = Number(process.env.SIZES_ISOLATED ?? 15);

/** The sizes and concurrency each environment's parameters file sets (the recommendation). */
export function recommended(env: 'dev' | 'prod'): { memoryMB: number; concurrency: number; alwaysReady: number } {
  const parameters = JSON.parse(readFileSync(join(ROOT, 'infra', 'env', `${env}.parameters.json`), 'utf8')) as {
    parameters: Record<string, { value: unknown }>;
  };
  const value = (name: string) => parameters.parameters[name]?.value;
  return { memoryMB: Number(value('instanceMemoryMB')), concurrency: Number(value('perInstanceConcurrency')), alwaysReady: Number(value('alwaysReady')) };
}

/**
 * A CPU quota (cgroup v1 `cpu.cfs_quota_us` over a 100 ms period) and a memory limit, entered by a
 * wrapper script that joins the cgroups and then execs the Node binary it wraps, so the worker is
 * limited from its first instruction. Needs root and cgroup v1's cpu controller (as on these machines).
 */
class InstanceLimits {
  private constructor(
    private readonly dirs: readonly string[],
    private readonly label: string,
    private readonly scratch: string,
  ) {}

  static create(label: string, cores: number, memoryMB: number, scratch: string): InstanceLimits {
    const limits = new InstanceLimits([], label, scratch);
    const dirs = limits.dirs as string[];
    try {
      const cpu = join('/sys/fs/cgroup/cpu', `drawbench-${process.pid}-${label}`);
      mkdirSync(cpu);
      dirs.push(cpu);
      writeFileSync(join(cpu, 'cpu.cfs_period_us'), '100000');
      writeFileSync(join(cpu, 'cpu.cfs_quota_us'), String(Math.round(cores * 100_000)));
      if (existsSync('/sys/fs/cgroup/memory')) {
        const memory = join('/sys/fs/cgroup/memory', `drawbench-${process.pid}-${label}`);
        mkdirSync(memory);
        dirs.push(memory);
        writeFileSync(join(memory, 'memory.limit_in_bytes'), String(memoryMB * 2 ** 20));
      }
    } catch (error) {
      limits.remove();
      throw new Error(
        `bench: cannot limit the worker (${(error as Error).message}): the sizes section needs root and cgroup v1's cpu controller at /sys/fs/cgroup/cpu`,
        { cause: error },
      );
    }
    return limits;
  }

  /** A script that starts `node` inside the limits: what WorkerHost starts instead of it. */
  wrap(node: string): string {
    const script = join(this.scratch, `node-${this.label}-${node.replace(/\W+/g, '-')}.sh`);
    writeFileSync(script, ['#!/bin/sh', ...this.dirs.map((d) => `echo $$ > '${d}/cgroup.procs' || exit 70`), `exec '${node}' "$@"`, ''].join('\n'));
    chmodSync(script, 0o755);
    return script;
  }

  remove(): void {
    for (const dir of this.dirs) {
      try {
        rmdirSync(dir);
      } catch (error) {
        // a process still in it: the next run uses a new name
        process.stderr.write(`bench: could not remove ${dir}: ${(error as Error).message}\n`);
      }
    }
  }
}

export type StartApp = 'empty app' | 'package' | 'tsc output';

/** Fresh workers of one kind: medians of start-up (workerInitRequest to every function loaded) and of RSS then. */
export interface StartRow {
  readonly app: StartApp;
  readonly telemetry: boolean;
  readonly node: NodeMajor;
  readonly readyMs: number;
  readonly rssMiB: number;
  /** Every worker's start-up, ms, in the order started (the rows' samples pair run by run). */
  readonly samples: readonly number[];
}

export interface TelemetryVolume {
  readonly envelopes: number;
  readonly dependencies: number;
  readonly bytes: number;
}

export interface TelemetryVolumes {
  readonly single: TelemetryVolume;
  readonly batch: TelemetryVolume;
  readonly refused: TelemetryVolume;
}

export interface SizeResult {
  readonly memoryMB: MemoryMB;
  readonly cores: number;
  readonly defaultConcurrency: number;
  /** The package with telemetry on, Node 22: medians of fresh workers. */
  readonly cold: { readonly readyMs: number; readonly rssMiB: number; readonly samples: readonly number[] };
  /** One request at a time, warm: p50 ms of a single draw and of a batch of 100. */
  readonly isolated: { readonly single: number; readonly batch: number };
  readonly cells: readonly Cell[];
  /** The worker's RSS after the warm-up, and its peak (VmHWM) over everything it ran. */
  readonly warmRssMiB: number;
  readonly peakRssMiB: number;
  /** At one core: what one call sends to Application Insights. */
  readonly telemetry?: TelemetryVolumes;
  /** At one core: every start-up row, the rows interleaved. */
  readonly starts?: { readonly runs: number; readonly rows: readonly StartRow[] };
}

export interface Sizes {
  readonly date: string;
  /** What each pinned binary reports, `v22.23.3`. */
  readonly nodes: Readonly<Record<NodeMajor, string>>;
  readonly nodeArgs: readonly string[];
  readonly zip: { readonly bytes: number; readonly files: number };
  readonly results: readonly SizeResult[];
}

/** The worker's own share: an app whose main only registers one HTTP function with @azure/functions. */
async function emptyApp(dir: string): Promise<string> {
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: 'empty', version: '1.0.0', main: 'main.js' }));
  writeFileSync(join(dir, 'host.json'), JSON.stringify({ version: '2.0' }));
  await build({
    stdin: {
      contents: "require('@azure/functions').app.http('Empty', { methods: ['POST'], authLevel: 'anonymous', handler: async () => ({ status: 204 }) });",
      resolveDir: ROOT,
    },
    bundle: true,
    platform: 'node',
    format: 'cjs',
    minify: true,
    external: ['@azure/functions-core'],
    outfile: join(dir, 'main.js'),
    logLevel: 'warning',
  });
  return dir;
}

/** What one call sends to Application Insights: the exporter sends every 5 s, so each side waits that out. */
async function volume(
  host: WorkerHost,
  ingestion: Ingestion,
  pool: LoanPool,
  token: string,
  batch: 1 | 100,
  calls: number,
  refused = false,
): Promise<TelemetryVolume> {
  await settle(7_000);
  const [envelopes, bodies] = [ingestion.envelopes.length, ingestion.rawBodies.length];
  const cell = await runCell(host, pool, token, batch, 1, calls, { refused });
  if (cell.errors > 0) throw new Error(`bench: ${cell.errors} of ${calls} calls were not answered ${refused ? 400 : 204}`);
  await settle(7_000);
  const sent = ingestion.envelopes.slice(envelopes);
  return {
    envelopes: sent.length / calls,
    dependencies: sent.filter((e) => e.data.baseType === 'RemoteDependencyData').length / calls,
    bytes: ingestion.rawBodies.slice(bodies).reduce((n, body) => n + Buffer.byteLength(body), 0) / calls,
  };
}

export async function measureSizes(only: readonly number[] = INSTANCE_SIZES.map((s) => s.memoryMB)): Promise<Sizes> {
  const date = new Date().toISOString();
  const nodes = { 22: pinnedNode(22), 24: pinnedNode(24) };
  // SIZES_NODE_ARGS tries other Node options against the deployment's (space-separated).
  const nodeArgs = process.env.SIZES_NODE_ARGS?.split(' ').filter((a) => a !== '') ?? deployedNodeArguments();
  const scratch = mkdtempSync(join(tmpdir(), 'sizes-'));
  const app = await packagedApp();
  const services = await startServices(AUDIENCE, CLIENT);
  try {
    const most = Math.max(...INSTANCE_SIZES.flatMap((s) => s.concurrencies));
    const { tables, pool } = await seededTables(services, 'Sizes', PARTNER, Math.max(SINGLES, 20 * most, Math.max(BATCHES, most) * 100));
    const apps: Record<StartApp, string> = { 'empty app': await emptyApp(join(scratch, 'empty')), package: app.appDir, 'tsc output': ROOT };
    const settings = (telemetry: boolean) => workerSettings(services, tables, telemetry);
    const prod = recommended('prod');
    const results: SizeResult[] = [];
    for (const size of INSTANCE_SIZES.filter((s) => only.includes(s.memoryMB))) {
      process.stdout.write(`size ${size.memoryMB} MB (${size.cores} core): start-ups`);
      const limits = InstanceLimits.create(String(size.memoryMB), size.cores, size.memoryMB, scratch);
      const start = (what: StartApp = 'package', telemetry = true, node: NodeMajor = 22) =>
        startWorker(apps[what], settings(telemetry), limits.wrap(nodes[node]), nodeArgs);
      try {
        // At one core, the package beside what its start-up is judged against; interleaved, so drift falls on all.
        const kinds: { app: StartApp; telemetry: boolean; node: NodeMajor }[] = [
          { app: 'package', telemetry: true, node: 22 },
          ...(size.cores !== 1
            ? []
            : [
                { app: 'package' as const, telemetry: false, node: 22 as const },
                { app: 'empty app' as const, telemetry: false, node: 22 as const },
                { app: 'tsc output' as const, telemetry: false, node: 22 as const },
                { app: 'package' as const, telemetry: true, node: 24 as const },
                { app: 'package' as const, telemetry: false, node: 24 as const },
              ]),
        ];
        const runs = size.cores === 1 ? INIT_RUNS : COLD_RUNS;
        const samples = kinds.map(() => [] as { ms: number; rss: number }[]);
        for (let i = 0; i < runs; i++) {
          for (const [k, kind] of kinds.entries()) {
            const started = await start(kind.app, kind.telemetry, kind.node);
            await started.host.kill();
            samples[k].push({ ms: started.readyMs, rss: started.rssMiB });
          }
          process.stdout.write('.');
        }
        const rows: StartRow[] = kinds.map((kind, k) => ({
          ...kind,
          readyMs: median(samples[k].map((s) => s.ms)),
          rssMiB: median(samples[k].map((s) => s.rss)),
          samples: samples[k].map((s) => Math.round(s.ms)),
        }));

        process.stdout.write(' load');
        const { host } = await start();
        let load: Pick<SizeResult, 'isolated' | 'cells' | 'warmRssMiB' | 'peakRssMiB'>;
        let telemetry: TelemetryVolumes | undefined;
        try {
          const run = (batch: 1 | 100, concurrency: number, requests: number) => runCell(host, pool, services.token, batch, concurrency, requests);
          // Warm-up: the provider's keys fetched, the partner cached, V8 past its first optimisations.
          await run(1, size.defaultConcurrency, SINGLES);
          await run(100, size.defaultConcurrency, Math.min(BATCHES, 8));
          const warmRssMiB = host.rssMiB();
          const isolatedSingle = await run(1, 1, ISOLATED * 4);
          const isolatedBatch = await run(100, 1, ISOLATED);
          const concurrencies = [...new Set([...size.concurrencies, ...(prod.memoryMB === size.memoryMB ? [prod.concurrency] : [])])].sort((a, b) => a - b);
          const cells: Cell[] = [isolatedSingle, isolatedBatch];
          for (const concurrency of concurrencies.filter((c) => c > 1)) {
            cells.push(await run(1, concurrency, Math.max(SINGLES, 20 * concurrency)), await run(100, concurrency, Math.max(BATCHES, concurrency)));
            process.stdout.write('.');
          }
          load = { isolated: { single: isolatedSingle.p50, batch: isolatedBatch.p50 }, cells, warmRssMiB, peakRssMiB: host.peakRssMiB() };
          if (size.cores === 1) {
            process.stdout.write(' telemetry');
            const call = (batch: 1 | 100, calls: number, refused = false) => volume(host, services.ingestion, pool, services.token, batch, calls, refused);
            telemetry = { single: await call(1, 20), batch: await call(100, 4), refused: await call(100, 4, true) };
          }
        } finally {
          await host.kill();
        }
        const cold = rows[0];
        results.push({
          memoryMB: size.memoryMB,
          cores: size.cores,
          defaultConcurrency: size.defaultConcurrency,
          cold: { readyMs: cold.readyMs, rssMiB: cold.rssMiB, samples: cold.samples },
          ...load,
          telemetry,
          starts: size.cores === 1 ? { runs, rows } : undefined,
        });
        process.stdout.write('\n');
      } finally {
        limits.remove();
      }
    }
    return {
      date,
      nodes: { 22: versionOf(nodes[22]), 24: versionOf(nodes[24]) },
      nodeArgs,
      zip: { bytes: app.report.zipBytes, files: app.report.entries.length },
      results,
    };
  } finally {
    app.remove();
    rmSync(scratch, { recursive: true, force: true });
    await services.stop();
  }
}

const f0 = (x: number) => x.toFixed(0);
const f1 = (x: number) => x.toFixed(1);
const usd = (x: number) => `$${x < 10 ? x.toFixed(2) : x.toFixed(0)}`;
const kib = (bytes: number) => `${(bytes / 1024).toFixed(1)} KiB`;
const verdict = (ok: boolean) => (ok ? 'met' : '**not met**');
const CALLS = [
  ['single', 'single draw'],
  ['batch', 'batch of 100, accepted'],
  ['refused', 'batch of 100, refused'],
] as const;

/**
 * The concurrency a size is judged at: prod's when prod runs this size and every batch of 100 there was
 * answered 204, else the highest concurrency at which every batch was (failed calls spend less CPU, so
 * a cell with errors would flatter the size).
 */
export function judgedAt(r: SizeResult, prod: { memoryMB: number; concurrency: number } = recommended('prod')): number {
  const clean = r.cells.filter((c) => c.batch === 100 && c.errors === 0).map((c) => c.concurrency);
  if (prod.memoryMB === r.memoryMB && clean.includes(prod.concurrency)) return prod.concurrency;
  return Math.max(...clean);
}

/**
 * Calls per second one instance of a size carries when storage keeps up: its cores over the measured
 * worker CPU per call (here Azurite, on this machine's cores, caps the larger sizes' measured rate). An
 * upper bound: in Azure the Functions host shares the instance's cores, here it is not in the quota.
 */
export function capacity(r: SizeResult, batch: 1 | 100, at = judgedAt(r)): number {
  const cell = r.cells.find((c) => c.batch === batch && c.concurrency === at);
  return cell === undefined ? NaN : (r.cores * 1000) / cell.cpuMsPerRequest;
}

/**
 * Telemetry's share of start-up on a Node: the median of the paired differences (the package with
 * telemetry on minus off, the two workers started back to back in each interleaved run), with its 95 % interval.
 */
export function telemetryStartShare(rows: readonly StartRow[], node: NodeMajor): { ms: number; low: number; high: number; pairs: number } {
  const samples = (telemetry: boolean) => rows.find((r) => r.app === 'package' && r.telemetry === telemetry && r.node === node)?.samples ?? [];
  const [on, off] = [samples(true), samples(false)];
  const pairs = on.slice(0, off.length).map((ms, i) => ms - off[i]);
  if (pairs.length === 0) return { ms: NaN, low: NaN, high: NaN, pairs: 0 };
  const { median: ms, low, high } = medianInterval(pairs);
  return { ms, low, high, pairs: pairs.length };
}

/** The lines of "Against the targets" this section measures: what one call sends, and start-up at one core. */
export function sizeTargetLines(sizes: Pick<Sizes, 'results' | 'zip'>): string[] {
  const one = sizes.results.find((r) => r.cores === 1);
  const lines = CALLS.map(([key, label]) => {
    const v = one?.telemetry?.[key];
    const bound = TELEMETRY_TARGETS[key];
    const target = `${label}: ≤ ${bound.envelopes} envelopes and ≤ ${kib(bound.bytes)} of JSON sent (${TELEMETRY_BEFORE.date}: ${TELEMETRY_BEFORE[key]})`;
    return v === undefined
      ? `| ${target} | not measured | **not met** |`
      : `| ${target} | ${f1(v.envelopes)} envelopes, ${kib(v.bytes)} | ${verdict(v.envelopes <= bound.envelopes && v.bytes <= bound.bytes)} |`;
  });
  const rows = one?.starts?.rows ?? [];
  const row = (app: StartApp, telemetry: boolean, node: NodeMajor = 22) => rows.find((r) => r.app === app && r.telemetry === telemetry && r.node === node);
  const { telemetryMs: bound, readyMs, bundleShare, rssGuardAboveEmptyMiB: guard, zipMiB } = START_TARGETS;
  for (const node of NODES) {
    const share = telemetryStartShare(rows, node);
    // Judged only when the interval is on one side of the bound: a verdict the spread of the samples cannot flip.
    const judged = share.high <= bound ? 'met' : share.low > bound ? '**not met**' : '**undecided** (the interval holds the bound: more workers)';
    const target = `telemetry's share of start-up, Node ${node} at one core: median of the paired workers (on minus off, started back to back) ≤ ${bound} ms, its 95 % interval clear of the bound${node === 22 ? '' : ': reported'}`;
    lines.push(
      Number.isNaN(share.ms)
        ? `| ${target} | not measured | ${node === 22 ? '**not met**' : 'reported'} |`
        : `| ${target} | ${f0(share.ms)} ms of ${share.pairs} pairs (95 % interval ${f0(share.low)} to ${f0(share.high)}) | ${node === 22 ? judged : 'reported'} |`,
    );
  }
  for (const node of NODES) {
    const ready = row('package', true, node)?.readyMs ?? NaN;
    lines.push(`| the package with telemetry ready ≤ ${readyMs} ms, Node ${node} at one core | ${f0(ready)} ms | ${verdict(ready <= readyMs)} |`);
  }
  const added = (app: StartApp) => (row(app, false)?.readyMs ?? NaN) - (row('empty app', false)?.readyMs ?? NaN);
  const share = added('package') / added('tsc output');
  lines.push(
    `| loading the package adds ≤ ${bundleShare * 100} % of what loading the \`tsc\` output adds to the empty app's start-up (telemetry off) | ${f1(added('package'))} ms vs ${f1(added('tsc output'))} ms (${f0(share * 100)} %) | ${verdict(share <= bundleShare)} |`,
  );
  const rss = (row('package', true)?.rssMiB ?? NaN) - (row('empty app', false)?.rssMiB ?? NaN);
  // Two decimals: a difference within a tenth of the guard reads as its verdict says.
  lines.push(
    `| RSS when ready above the empty app's, Node 22 at one core: reported, regression guard +${guard} MiB | ${(row('package', true)?.rssMiB ?? NaN).toFixed(2)} − ${(row('empty app', false)?.rssMiB ?? NaN).toFixed(2)} = +${rss.toFixed(2)} MiB | ${rss <= guard ? 'guard held' : '**guard broken**'} |`,
  );
  const mib = sizes.zip.bytes / 2 ** 20;
  lines.push(`| zip ≤ ${zipMiB} MiB | ${mib.toFixed(2)} MiB, ${sizes.zip.files} files | ${verdict(mib <= zipMiB)} |`);
  const smallest = sizes.results.find((r) => r.memoryMB === 512);
  if (smallest !== undefined)
    lines.push(
      `| headroom of 512 MB under batches of 100 at concurrency ${smallest.defaultConcurrency} | worker peak ${f1(smallest.peakRssMiB)} MiB: ${f0(512 - smallest.peakRssMiB)} MiB left for the Functions host and the rest | stated |`,
    );
  return lines;
}

/** The cost model of docs/decisions/0116-the-cost-model-follows-microsofts-billing-rules.md, from this run's figures (bench/costModel.ts has the rules and prices). */
export function costSection(
  results: readonly SizeResult[],
  prod: { memoryMB: number; concurrency: number } = recommended('prod'),
  telemetry: TelemetryVolumes | undefined = results.find((r) => r.telemetry !== undefined)?.telemetry,
): string[] {
  const share = alwaysReadyBreakEvenShare();
  const ingestion = (v: TelemetryVolume | undefined) => (v === undefined ? NaN : telemetryPerMillion(v.bytes));
  const [single, batch] = [ingestion(telemetry?.single), ingestion(telemetry?.batch)];
  const pair = (x: number, y: number) => (Number.isNaN(x) || Number.isNaN(y) ? 'not measured' : `${usd(x)} / ${usd(y)}`);
  return [
    '### What each size costs, from these figures',
    '',
    `On demand, an isolated call is billed its own activity window: at least 1 s, then in steps of 100 ms, of the instance's memory (the warm p50 at concurrency 1 above). Under steady load the instance's memory is billed while it is busy, shared by the calls it runs at once: the cost per call is its memory over the calls per second it carries, here the CPU bound (the size's cores over the worker's CPU per call, at the concurrency named, the highest without an error unless it is prod's): a lower bound on cost, since in Azure the Functions host shares those cores. An always-ready instance pays for itself when an instance is executing ${f0(share * 100)} % of the time or more (its baseline against the lower execution rate; the size cancels out): for batches of 100, from ${f0(share * 100)} % of a second's windows (each isolated batch billed at least 1 s) to ${f0(share * 100)} % of the time taken by back-to-back batches (windows merging, each batch's isolated p50). Telemetry is what one call sends to Application Insights (measured at one core, below), priced at Analytics Logs' ingestion rate: the same per call whatever the size and the traffic, added to the compute of sparse and of steady traffic. USD list prices, East US, without the monthly free grants (bench/costModel.ts).`,
    '',
    '| size | isolated call billed s: single / batch of 100 | sparse, $ per million calls: single / batch | capacity per instance, calls/s: single / batch (CPU-bound, at concurrency) | steady, $ per million: single / batch | one always-ready instance, per month | batches of 100 a second at which it pays: isolated windows to merged | telemetry, $ per million: single / batch | sparse with telemetry, $ per million: single / batch | steady with telemetry, $ per million: single / batch |',
    '|---|---|---|---|---|---|---|---|---|---|',
    ...results.map((r) => {
      const at = judgedAt(r, prod);
      const [one, hundred] = [capacity(r, 1, at), capacity(r, 100, at)];
      const payAt = `${(share / billedSeconds(r.isolated.batch)).toFixed(2)} to ${f1(share / (r.isolated.batch / 1000))}`;
      const sparse = [sparsePerMillion(r.memoryMB, r.isolated.single), sparsePerMillion(r.memoryMB, r.isolated.batch)];
      const steady = [steadyPerMillion(r.memoryMB, one), steadyPerMillion(r.memoryMB, hundred)];
      return `| ${r.memoryMB} MB | ${billedSeconds(r.isolated.single)} / ${billedSeconds(r.isolated.batch)} | ${usd(sparse[0])} / ${usd(sparse[1])} | ${f1(one)} / ${f1(hundred)} (at ${at}) | ${usd(steady[0])} / ${usd(steady[1])} | ${usd(alwaysReadyMonthly(r.memoryMB))} | ${payAt} | ${pair(single, batch)} | ${pair(sparse[0] + single, sparse[1] + batch)} | ${pair(steady[0] + single, steady[1] + batch)} |`;
    }),
    '',
  ];
}

/** The Markdown section: start-up and load per size, what each size costs, start-up and telemetry at one core. */
export function sizesSection({ date, nodes, nodeArgs, results }: Sizes): string[] {
  const prod = recommended('prod');
  const dev = recommended('dev');
  const mark = (r: SizeResult, c: number) =>
    [
      c === r.defaultConcurrency ? 'default' : '',
      r.memoryMB === prod.memoryMB && c === prod.concurrency ? 'prod' : '',
      r.memoryMB === dev.memoryMB && c === dev.concurrency ? 'dev' : '',
    ]
      .filter((s) => s !== '')
      .join(', ');
  const one = results.find((r) => r.cores === 1);
  const perCall = (v: TelemetryVolume | undefined) => (v === undefined ? 'not measured' : `${f1(v.envelopes)} (${f1(v.dependencies)}) / ${f0(v.bytes)}`);
  return [
    '## Instance sizes in the real worker (telemetry on)',
    '',
    `Run ${date.slice(0, 16).replace('T', ' ')} UTC (\`bench/sizes.ts\`). Each Flex Consumption size as a cgroup v1 CPU quota (and memory limit) on the worker process: 512 MB a quarter of a core, 2,048 MB one core, 4,096 MB two. Node ${nodes[22]} (production's; ${nodes[24]} where a row says Node 24), started with the deployment's Node options (\`${nodeArgs.join(' ')}\`), loads the package (the zip of \`npm run package\`), with telemetry sent to a local ingestion endpoint. Azurite (pinned to core 0), the OpenID provider and the host side of gRPC run outside the limits; on this machine's two cores the 4,096 MB size shares core 0 with Azurite, so its throughput is a lower bound on what two cores give (and its latency an upper bound).`,
    '',
    `Start-up: ${COLD_RUNS} fresh workers per size (${INIT_RUNS} at one core), the time from \`workerInitRequest\` (the app's \`main\` loaded) to the response to the last \`functionLoadRequest\` (every function ready), and the RSS then (medians).`,
    '',
    '| size | CPU | start-up ms (median) | RSS when ready MiB | start-up ms, every sample |',
    '|---|---|---|---|---|',
    ...results.map((r) => `| ${r.memoryMB} MB | ${r.cores} core | **${f0(r.cold.readyMs)}** | ${f1(r.cold.rssMiB)} | ${r.cold.samples.join(', ')} |`),
    '',
    `Load: one warm worker per size, invocations over gRPC as the host sends them, each a valid batch of fresh loans (every answer must be 204), a fixed number in flight at once. Warm-up first (${SINGLES} single draws and 8 batches of 100 at the default concurrency). Concurrency 1 is one request at a time: what an isolated call takes. CPU is the worker process's own (user + system, /proc), per request.`,
    '',
    '| size | batch | concurrency | requests | req/s | p50 ms | p99 ms | worker CPU ms/request | errors |',
    '|---|---|---|---|---|---|---|---|---|',
    ...results.flatMap((r) =>
      r.cells.map((c) => {
        const note = mark(r, c.concurrency);
        return `| ${r.memoryMB} MB | ${c.batch} | ${c.concurrency}${note === '' ? '' : ` (${note})`} | ${c.requests} | ${f1(c.perSecond)} | ${f1(c.p50)} | ${f1(c.p99)} | ${c.cpuMsPerRequest.toFixed(2)} | ${c.errors} |`;
      }),
    ),
    '',
    '| size | worker RSS after warm-up MiB | worker peak RSS (VmHWM) MiB | instance memory MB |',
    '|---|---|---|---|',
    ...results.map((r) => `| ${r.memoryMB} MB | ${f1(r.warmRssMiB)} | ${f1(r.peakRssMiB)} | ${r.memoryMB} |`),
    '',
    ...costSection(results),
    ...(one?.starts === undefined
      ? []
      : [
          `### Start-up at one core, ${one.starts.runs} fresh workers per row, the rows interleaved`,
          '',
          "The empty app's `main` only registers one function (the worker's own share); the `tsc` output is `dist/functions/main.js` with the repository's `node_modules`.",
          '',
          '| loaded | telemetry | Node | start-up ms (median) | RSS when ready MiB | start-up ms, every sample |',
          '|---|---|---|---|---|---|',
          ...one.starts.rows.map(
            (r) => `| ${r.app} | ${r.telemetry ? 'on' : 'off'} | ${r.node} | **${f0(r.readyMs)}** | ${f1(r.rssMiB)} | ${r.samples.join(', ')} |`,
          ),
          '',
        ]),
    '### What one call sends to Application Insights (one core)',
    '',
    `Counted at the ingestion endpoint, one call at a time, after the exporter's sends settled: envelopes (of which dependencies) / bytes of JSON as sent, before compression. A refused batch is 100 elements whose amounts are above the loans' credit (a 400 after the storage reads). Priced at Analytics Logs' $${INGESTION.perGb} per GB, the billed size taken as ${INGESTION.billedShare * 100} % of the JSON sent (Microsoft: "around 25 percent less than the incoming data size"), before the first ${INGESTION.freeGbPerMonth} GB a month that are free (\`telemetryPerMillion\`, bench/costModel.ts).`,
    '',
    `| call | ${TELEMETRY_BEFORE.date} (before issue #32) | now | bound | now, $ per million calls |`,
    '|---|---|---|---|---|',
    ...CALLS.map(([key, label]) => {
      const v = one?.telemetry?.[key];
      return `| ${label} | ${TELEMETRY_BEFORE[key]} | **${perCall(v)}** | ${TELEMETRY_TARGETS[key].envelopes} / ${TELEMETRY_TARGETS[key].bytes} | ${v === undefined ? '' : usd(telemetryPerMillion(v.bytes))} |`;
    }),
    '',
  ];
}

if (require.main === module) {
  const saved = process.env.SIZES_FROM;
  // SIZES_FROM renders a saved run again (after the parameters files changed, say).
  (saved === undefined ? measureSizes(process.env.SIZES_ONLY?.split(',').map(Number)) : Promise.resolve(JSON.parse(readFileSync(saved, 'utf8')) as Sizes))
    .then((sizes) => {
      if (saved === undefined) writeFileSync(join(ROOT, 'bench', 'sizes.json'), JSON.stringify(sizes));
      console.log([...sizeTargetLines(sizes), '', ...sizesSection(sizes)].join('\n'));
    })
    .catch((error) => {
      console.error(error);
      process.exit(1);
    });
}
