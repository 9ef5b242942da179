/**
 * Flex Consumption's instance sizes, measured on the package in the real Functions worker (a section of
 * `npm run bench`; `npm run bench:sizes` alone). Each size's CPU is a cgroup v1 CFS quota on the worker
 * process (and its memory a memory cgroup limit): 512 MB gets a quarter of a core, 2,048 MB one core,
 * 4,096 MB two. Per size, on Node 22 (production) with telemetry on (a local ingestion endpoint):
 *  - cold start: fresh workers, workerInitRequest to its response, and RSS right after;
 *  - a warm worker under closed-loop load through gRPC (tests/support/workerHost.ts, as the host drives
 *    it): single draws and batches of 100 at several concurrencies, the size's default and the one
 *    infra/env/prod.parameters.json sets among them; p50/p99 of the invocations, the worker's CPU per
 *    request (/proc), its RSS and peak RSS;
 *  - one request at a time (what a sparse partner's call costs: each opens its own billed window);
 *  - at one core, telemetry before and after issue #32: the package of TELEMETRY_BASELINE (main just
 *    before #32's merge, built into a temporary worktree by bench/baseline.ts) beside this one, in the
 *    same run: init with telemetry on and off against the empty worker's, worker CPU per batch of 100
 *    (rounds alternating the two, and each again with telemetry off: what telemetry costs each), and
 *    what a single draw, a batch of 100 and a refused batch of 100 send to the ingestion endpoint.
 * Azurite, the OpenID provider and this process (the host side) run outside the limits.
 *
 * Knobs for trying things (never set by `npm run bench`): SIZES_ONLY=2048 (sizes), SIZES_NODE_ARGS
 * (Node options instead of the deployment's), SIZES_TELEMETRY=off, SIZES_SAMPLING (percent of
 * operations' dependencies kept), SIZES_COLD_RUNS / SIZES_SINGLES / SIZES_BATCHES / SIZES_ISOLATED
 * (sample counts), SIZES_INIT_RUNS, SIZES_BASELINE=<commit> or none, SIZES_BASELINE_ROUNDS / SIZES_BASELINE_ISOLATED / SIZES_BASELINE_AT_PROD, SIZES_FROM=<saved json> (render a saved run again).
 */
import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, rmdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startAzurite, type Azurite } from '../dev/azurite';
import { createTables, putPartner, tableClient, tableSettings, tablesNamed } from '../dev/demoData';
import { startOidcProvider, type OidcProvider } from '../dev/oidcProvider';
import { ROOT } from '../scripts/bundle';
import { cpuMs } from '../tests/support/devHostProcess';
import { ORDINARY_DRAW, ordinaryBody } from '../tests/support/hostileBodies';
import { startIngestion, type Ingestion } from '../tests/support/ingestion';
import { deployedNodeArguments, packagedApp } from '../tests/support/packagedApp';
import { WorkerHost } from '../tests/support/workerHost';
import { baselinePackage, type BaselinePackage } from './baseline';
import { COLD_START_TARGETS, emptyApp, node22 } from './coldStart';
import { INGESTION, alwaysReadyBreakEvenShare, alwaysReadyMonthly, billedSeconds, sparsePerMillion, steadyPerMillion, telemetryPerMillion } from './costModel';
import { LoanPool } from './loanPool';
import { median, medianInterval, percentile, pin } from './stats';
import { benchToken } from './benchToken';

/** Flex Consumption's sizes: memory, the share of a core each gets, and the default HTTP concurrency per instance. */
export const INSTANCE_SIZES = [
  { memoryMB: 512, cores: 0.25, defaultConcurrency: 4, concurrencies: [1, 2, 4] },
  { memoryMB: 2048, cores: 1, defaultConcurrency: 16, concurrencies: [1, 4, 8, 16] },
  { memoryMB: 4096, cores: 2, defaultConcurrency: 32, concurrencies: [1, 8, 16, 32] },
] as const;
export type MemoryMB = (typeof INSTANCE_SIZES)[number]['memoryMB'];

/**
 * The team's bounds for Node 22 with telemetry on, at one core (docs/decisions/0117-bounds-on-what-the-package-adds-are-differences-in-one-run.md,
 * decided on issue #32's measurements):
 * - what telemetry adds to the worker's CPU per batch of 100 (the package with it on minus off, same
 *   run), at prod's concurrency, at most a third of what it added to the package before #32; at
 *   concurrency 1 it is reported, not bounded;
 * - telemetry's share of init at most 50 ms: the median of paired workers (on minus off, started back to
 *   back), judged only when its 95 % interval lies on one side of the bound;
 * - RSS after init above the empty worker's: reported, with a regression guard at +20 MiB.
 */
export const SIZE_TARGETS = { telemetryCpuVsBefore: 1 / 3, telemetryInitMs: 50, rssGuardAboveEmptyMiB: COLD_START_TARGETS.rssGuardAboveEmptyMiB } as const;

/** Issue #32's bounds on what one call sends to Application Insights (JSON bytes, KiB as 1,024). */
export const TELEMETRY_TARGETS = {
  single: { envelopes: 6, bytes: 4 * 1024 },
  batch: { envelopes: 12, bytes: 24 * 1024 },
  refused: { envelopes: 12, bytes: 32 * 1024 },
} as const;

/**
 * The same calls before issue #32, as bench/results.md of 2026-11-25 recorded them (single draw and
 * batch of 100; the refused batch of 100 as issue #32 quotes it): the baseline the issue's bounds were set against.
 */
export const TELEMETRY_BEFORE = {
  date: '2026-11-25',
  single: { envelopes: 8.1, bytes: 6822, text: '8.1 envelopes, 6,822 bytes (6.8 KB)' },
  batch: { envelopes: 504, bytes: 440337, text: '504 envelopes, 440,337 bytes (440 KB)' },
  refused: { envelopes: 501, bytes: 460_000, text: '501 envelopes, 460 KB' },
} as const;

/** main just before issue #32's telemetry was merged (8dd2341): the package measured beside this one. */
export const TELEMETRY_BASELINE = process.env.SIZES_BASELINE ?? 'c88e4df';
/** Rounds of the before/after CPU comparison, each one segment per worker per cell, in turn (after one round not counted). */
const BASELINE_ROUNDS = Number(process.env.SIZES_BASELINE_ROUNDS ?? 10);
/** After a segment, until the exporter (every 5 s) has sent what it recorded: its CPU is the segment's. */
export const EXPORT_SETTLE_MS = 6_000;
/** Then the worker's idle CPU (timers, gRPC) over this long, subtracted at its rate from the settle's. */
const IDLE_MS = 4_000;
/** Batches of 100 per segment of the before/after comparison, at concurrency 1 and at prod's. */
const BASELINE_BATCHES = { isolated: Number(process.env.SIZES_BASELINE_ISOLATED ?? 24), atProd: Number(process.env.SIZES_BASELINE_AT_PROD ?? 40) };
/** A refused batch: every element's amount above the loan's available credit (LoanPool seeds 1,000,000). */
const REFUSED_AMOUNT = 2_000_000;

const AUDIENCE = 'api://draw-request-sizes';
const CLIENT = 'sizes-client';
const PARTNER = 'SIZES';
const COLD_RUNS = Number(process.env.SIZES_COLD_RUNS ?? 7);
/** At one core, where the init differences are judged: the quota's 100 ms periods make single samples jumpy. */
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
  return {
    memoryMB: Number(value('instanceMemoryMB')),
    concurrency: Number(value('perInstanceConcurrency')),
    alwaysReady: Number(value('alwaysReady')),
  };
}

/**
 * A CPU quota (cgroup v1 `cpu.cfs_quota_us` over a 100 ms period) and a memory limit, entered by a
 * wrapper script that joins the cgroups and then execs node, so the worker is limited from its first
 * instruction. Needs root and cgroup v1's cpu controller (as on these machines).
 */
class InstanceLimits {
  private constructor(
    private readonly dirs: readonly string[],
    readonly node: string,
  ) {}

  static create(label: string, cores: number, memoryMB: number, node: string, scratch: string): InstanceLimits {
    const cpu = join('/sys/fs/cgroup/cpu', `drawbench-${process.pid}-${label}`);
    const memory = join('/sys/fs/cgroup/memory', `drawbench-${process.pid}-${label}`);
    const dirs: string[] = [];
    try {
      mkdirSync(cpu);
      dirs.push(cpu);
      writeFileSync(join(cpu, 'cpu.cfs_period_us'), '100000');
      writeFileSync(join(cpu, 'cpu.cfs_quota_us'), String(Math.round(cores * 100_000)));
      if (existsSync('/sys/fs/cgroup/memory')) {
        mkdirSync(memory);
        dirs.push(memory);
        writeFileSync(join(memory, 'memory.limit_in_bytes'), String(memoryMB * 2 ** 20));
      }
    } catch (error) {
      new InstanceLimits(dirs, node).remove();
      throw new Error(
        `bench: cannot limit the worker (${(error as Error).message}): the sizes section needs root and cgroup v1's cpu controller at /sys/fs/cgroup/cpu`,
        { cause: error },
      );
    }
    const script = join(scratch, `node-${label}.sh`);
    writeFileSync(script, ['#!/bin/sh', ...dirs.map((d) => `echo $$ > '${d}/cgroup.procs' || exit 70`), `exec '${node}' "$@"`, ''].join('\n'));
    chmodSync(script, 0o755);
    return new InstanceLimits(dirs, script);
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

export interface Cell {
  readonly batch: 1 | 100;
  readonly concurrency: number;
  readonly requests: number;
  readonly perSecond: number;
  readonly p50: number;
  readonly p99: number;
  readonly cpuMsPerRequest: number;
  readonly errors: number;
}

export interface SizeResult {
  readonly memoryMB: MemoryMB;
  readonly cores: number;
  readonly defaultConcurrency: number;
  readonly cold: { readonly initMs: number; readonly rssMiB: number; readonly samples: readonly number[] };
  /** One request at a time, warm: p50 ms of a single draw and of a batch of 100. */
  readonly isolated: { readonly single: number; readonly batch: number };
  readonly cells: readonly Cell[];
  /** The worker's RSS after the warm-up, and its peak (VmHWM) over everything it ran. */
  readonly warmRssMiB: number;
  readonly peakRssMiB: number;
  /** Telemetry sent per call (measured at one core): envelopes and JSON bytes, a single draw, a batch of 100 and a refused batch of 100. */
  readonly telemetry?: TelemetryVolumes;
  /** At one core: init against the empty worker's and the package before #32, all in one run. */
  readonly initComparison?: { readonly runs: number; readonly rows: readonly InitRow[] };
  /** At one core: this package against the one before #32, worker CPU per call and telemetry sent. */
  readonly baseline?: BaselineComparison;
}

export interface TelemetryVolumes {
  readonly single: TelemetryVolume;
  readonly batch: TelemetryVolume;
  /** Absent from runs before 2026-11-26. */
  readonly refused?: TelemetryVolume;
}

export type InitApp = 'empty app' | 'package' | 'package before #32';

export interface InitRow {
  readonly app: InitApp;
  readonly telemetry: boolean;
  /** Medians of the fresh workers: workerInitRequest to its response, and RSS right after. */
  readonly initMs: number;
  readonly rssMiB: number;
  readonly samples: readonly number[];
}

export interface CpuComparison {
  readonly batch: 1 | 100;
  readonly concurrency: number;
  readonly requests: number;
  /** Worker CPU ms per call, every round pooled. */
  readonly beforeMs: number;
  readonly afterMs: number;
  /** After ÷ before, round by round (the two segments of a round back to back), and their median. */
  readonly ratios: readonly number[];
  readonly ratio: number;
  /**
   * Each package again with telemetry off, in the same rounds (absent from runs before 2026-11-26 06:48):
   * what the work itself costs, so that what telemetry adds to each is their difference.
   */
  readonly off?: { readonly beforeMs: number; readonly afterMs: number };
}

export interface BaselineComparison {
  readonly commit: string;
  readonly rounds: number;
  readonly cpu: readonly CpuComparison[];
  readonly telemetry: TelemetryVolumes;
}

export interface TelemetryVolume {
  readonly envelopes: number;
  readonly dependencies: number;
  readonly bytes: number;
}

export interface Sizes {
  readonly node: string;
  readonly nodeArgs: readonly string[];
  readonly results: readonly SizeResult[];
}

const settle = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * `requests` invocations of `batch` fresh loans with `concurrency` in flight at once (closed loop), as
 * the host sends them; every answer must be 204 (400 for a refused batch, whose amounts are above the
 * loans' credit). With `settleMs`, the worker's CPU is read that long after the last answer, so that
 * what the exporter sends of the segment is counted in it, less what the worker spends idle in as long
 * (measured right after, over IDLE_MS, and scaled).
 */
export async function runCell(
  host: WorkerHost,
  pool: LoanPool,
  token: string,
  batch: 1 | 100,
  concurrency: number,
  requests: number,
  options: { refused?: boolean; settleMs?: number } = {},
): Promise<Cell> {
  const latencies: number[] = [];
  let errors = 0;
  let left = requests;
  const expected = options.refused === true ? 400 : 204;
  const cpuBefore = cpuMs(host.pid);
  const began = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (left > 0) {
        left -= 1;
        const loans = pool.take(batch);
        const body =
          options.refused === true
            ? Buffer.from(JSON.stringify(loans.map((loanNumber) => ({ loanNumber, requestor: ORDINARY_DRAW.requestor, amount: REFUSED_AMOUNT }))))
            : ordinaryBody(loans);
        const sent = performance.now();
        const reply = await host.invoke({
          method: 'POST',
          url: 'http://127.0.0.1/DrawRequest',
          headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
          body,
        });
        latencies.push(performance.now() - sent);
        if (reply.status !== expected) errors += 1;
      }
    }),
  );
  const seconds = (performance.now() - began) / 1000;
  let cpu: number;
  if (options.settleMs === undefined) cpu = cpuMs(host.pid) - cpuBefore;
  else {
    await settle(options.settleMs);
    const settled = cpuMs(host.pid);
    await settle(IDLE_MS);
    const idlePerMs = (cpuMs(host.pid) - settled) / IDLE_MS;
    cpu = settled - cpuBefore - idlePerMs * options.settleMs;
  }
  await pool.reset();
  const sorted = latencies.sort((a, b) => a - b);
  return {
    batch,
    concurrency,
    requests,
    perSecond: requests / seconds,
    p50: percentile(sorted, 50),
    p99: percentile(sorted, 99),
    cpuMsPerRequest: cpu / requests,
    errors,
  };
}

/** What one call sends to Application Insights: the exporter sends every 5 s, so each side waits that out. */
async function volume(
  host: WorkerHost,
  received: Ingestion,
  pool: LoanPool,
  token: string,
  batch: 1 | 100,
  calls: number,
  refused = false,
): Promise<TelemetryVolume> {
  await settle(7_000);
  const [envelopes, bodies] = [received.envelopes.length, received.rawBodies.length];
  const cell = await runCell(host, pool, token, batch, 1, calls, { refused });
  if (cell.errors > 0) throw new Error(`bench: ${cell.errors} of ${calls} calls were not answered ${refused ? 400 : 204}`);
  await settle(7_000);
  const sent = received.envelopes.slice(envelopes);
  const bytes = received.rawBodies.slice(bodies).reduce((n, body) => n + Buffer.byteLength(body), 0);
  return {
    envelopes: sent.length / calls,
    dependencies: sent.filter((e) => e.data.baseType === 'RemoteDependencyData').length / calls,
    bytes: bytes / calls,
  };
}

async function volumes(host: WorkerHost, received: Ingestion, pool: LoanPool, token: string): Promise<TelemetryVolumes> {
  return {
    single: await volume(host, received, pool, token, 1, 20),
    batch: await volume(host, received, pool, token, 100, 4),
    refused: await volume(host, received, pool, token, 100, 4, true),
  };
}

export async function measureSizes(only: readonly number[] = INSTANCE_SIZES.map((s) => s.memoryMB)): Promise<Sizes> {
  const node = node22();
  // SIZES_NODE_ARGS tries other Node options against the deployment's (space-separated).
  const nodeArgs = process.env.SIZES_NODE_ARGS?.split(' ').filter((a) => a !== '') ?? deployedNodeArguments();
  const scratch = mkdtempSync(join(tmpdir(), 'sizes-'));
  const app = await packagedApp();
  let before: BaselinePackage | undefined;
  let azurite: Azurite | undefined;
  let provider: OidcProvider | undefined;
  let ingestion: Ingestion | undefined;
  let beforeIngestion: Ingestion | undefined;
  try {
    if (TELEMETRY_BASELINE !== 'none') {
      process.stdout.write(`building the package of ${TELEMETRY_BASELINE} (before issue #32)…\n`);
      before = await baselinePackage(TELEMETRY_BASELINE);
    }
    const empty = await emptyApp(join(scratch, 'empty'));
    [azurite, provider, ingestion, beforeIngestion] = await Promise.all([
      startAzurite(),
      startOidcProvider({ audience: AUDIENCE }),
      startIngestion(),
      startIngestion(),
    ]);
    pin(azurite.pid, 0); // storage answers alike for every size
    const received = ingestion; // what the exporter sent, read after each settled exchange
    const receivedBefore = beforeIngestion; // the package before #32 sends here
    const tables = tablesNamed('Sizes');
    await createTables(azurite.connectionString, tables);
    await putPartner(tableClient(azurite.connectionString, tables.partnersTable), { clientId: CLIENT, partnerId: PARTNER });
    const pool = new LoanPool(tableClient(azurite.connectionString, tables.loansTable), tableClient(azurite.connectionString, tables.drawsTable), PARTNER);
    const most = Math.max(...INSTANCE_SIZES.flatMap((s) => s.concurrencies));
    await pool.seed(Math.max(SINGLES, 20 * most, Math.max(BATCHES, most, BASELINE_BATCHES.isolated, BASELINE_BATCHES.atProd) * 100));
    const token = await benchToken(provider, AUDIENCE, CLIENT, {}, 3 * 3600);
    const settings: Record<string, string> = {
      PATH: process.env.PATH ?? '',
      AUTH_OPENID_CONFIG_URL: provider.openIdConfigUrl,
      AUTH_AUDIENCE: AUDIENCE,
      TABLES_CONNECTION_STRING: azurite.connectionString,
      ...tableSettings(tables),
      APPLICATIONINSIGHTS_CONNECTION_STRING: ingestion.connectionString,
      NODE_EXTRA_CA_CERTS: ingestion.caFile,
      // Set by the platform in every function app (the worker inherits the host's environment). Without
      // them the distro finds no Azure platform and probes the VM metadata endpoint (169.254.169.254)
      // at start, which no function app does: about 3 ms of init (--cpu-prof) and an HTTP attempt that
      // only the bench paid. The site name is the role name the exporter would otherwise default to.
      WEBSITE_SITE_NAME: 'draw-request-service',
      FUNCTIONS_EXTENSION_VERSION: '~4',
    };
    if (process.env.SIZES_TELEMETRY === 'off') settings.APPLICATIONINSIGHTS_CONNECTION_STRING = '';
    if (process.env.SIZES_SAMPLING !== undefined) settings.TELEMETRY_SAMPLING_PERCENTAGE = process.env.SIZES_SAMPLING;
    const withoutTelemetry = { ...settings, APPLICATIONINSIGHTS_CONNECTION_STRING: '' };
    const beforeSettings = {
      ...settings,
      APPLICATIONINSIGHTS_CONNECTION_STRING: beforeIngestion.connectionString,
      NODE_EXTRA_CA_CERTS: beforeIngestion.caFile,
    };
    const prod = recommended('prod');
    const results: SizeResult[] = [];
    for (const size of INSTANCE_SIZES.filter((s) => only.includes(s.memoryMB))) {
      process.stdout.write(`size ${size.memoryMB} MB (${size.cores} core): cold starts`);
      const limits = InstanceLimits.create(String(size.memoryMB), size.cores, size.memoryMB, node, scratch);
      // The package before #32 gets a quota of its own: the two are never busy at once, and neither pays for the other's idle work.
      const beforeLimits =
        size.cores === 1 && before !== undefined ? InstanceLimits.create(`${size.memoryMB}-before`, size.cores, size.memoryMB, node, scratch) : undefined;
      // Each package with telemetry off too, for the comparison's floor: quotas of their own, as above.
      const offLimits =
        beforeLimits === undefined
          ? undefined
          : {
              after: InstanceLimits.create(`${size.memoryMB}-off`, size.cores, size.memoryMB, node, scratch),
              before: InstanceLimits.create(`${size.memoryMB}-before-off`, size.cores, size.memoryMB, node, scratch),
            };
      try {
        const start = (appDir = app.appDir, workerSettings = settings, on = limits) =>
          WorkerHost.start({ appDir, settings: workerSettings, node: on.node, nodeArgs });
        // At one core, the package's init with telemetry on beside the empty worker's, telemetry off, and the package before #32; interleaved.
        const variants: { app: InitApp; telemetry: boolean; start: () => Promise<WorkerHost> }[] = [
          { app: 'package', telemetry: true, start: () => start() },
          ...(size.cores !== 1
            ? []
            : [
                { app: 'empty app' as const, telemetry: false, start: () => start(empty, withoutTelemetry) },
                { app: 'package' as const, telemetry: false, start: () => start(app.appDir, withoutTelemetry) },
                ...(before === undefined || beforeLimits === undefined
                  ? []
                  : [
                      { app: 'package before #32' as const, telemetry: false, start: () => start(before?.appDir, withoutTelemetry, beforeLimits) },
                      { app: 'package before #32' as const, telemetry: true, start: () => start(before?.appDir, beforeSettings, beforeLimits) },
                    ]),
              ]),
        ];
        const samples = variants.map(() => [] as { ms: number; rss: number }[]);
        const runs = size.cores === 1 ? INIT_RUNS : COLD_RUNS;
        for (let i = 0; i < runs; i++) {
          for (const [k, variant] of variants.entries()) {
            const host = await variant.start();
            try {
              const began = performance.now();
              const init = await host.init();
              const ms = performance.now() - began;
              if ((init.result as { status?: string } | undefined)?.status !== 'Success') throw new Error(`workerInitRequest failed:\n${host.output}`);
              samples[k].push({ ms, rss: host.rssMiB() });
            } finally {
              await host.kill();
            }
          }
          process.stdout.write('.');
        }
        const initRows: InitRow[] = variants.map((v, k) => ({
          app: v.app,
          telemetry: v.telemetry,
          initMs: median(samples[k].map((s) => s.ms)),
          rssMiB: median(samples[k].map((s) => s.rss)),
          samples: samples[k].map((s) => Math.round(s.ms)),
        }));
        process.stdout.write(' load');

        const host = await start();
        let cellsOf: Omit<SizeResult, 'memoryMB' | 'cores' | 'defaultConcurrency' | 'cold'>;
        try {
          await host.init();
          await host.metadata();
          await host.load();
          const run = (batch: 1 | 100, concurrency: number, requests: number) => runCell(host, pool, token, batch, concurrency, requests);
          // Warm-up: the provider's keys fetched, the partner cached, V8 past its first optimisations.
          await run(1, size.defaultConcurrency, SINGLES);
          await run(100, size.defaultConcurrency, Math.min(BATCHES, 8));
          const warmRssMiB = host.rssMiB();
          const isolatedSingle = await run(1, 1, ISOLATED * 4);
          const isolatedBatch = await run(100, 1, ISOLATED);
          const concurrencies = [...new Set([...size.concurrencies, ...(prod.memoryMB === size.memoryMB ? [prod.concurrency] : [])])].sort((a, b) => a - b);
          const cells: Cell[] = [];
          for (const concurrency of concurrencies.filter((c) => c > 1)) {
            cells.push(await run(1, concurrency, Math.max(SINGLES, 20 * concurrency)));
            cells.push(await run(100, concurrency, Math.max(BATCHES, concurrency)));
            process.stdout.write('.');
          }
          cellsOf = {
            isolated: { single: isolatedSingle.p50, batch: isolatedBatch.p50 },
            cells: [{ ...isolatedSingle, concurrency: 1 }, { ...isolatedBatch, concurrency: 1 }, ...cells],
            warmRssMiB,
            peakRssMiB: host.peakRssMiB(),
          };
        } finally {
          await host.kill();
        }

        let telemetry: TelemetryVolumes | undefined;
        let baseline: BaselineComparison | undefined;
        if (size.cores === 1) {
          // Fresh workers, warmed alike: this package, and the one before #32 when it was built.
          process.stdout.write(' telemetry');
          const after = await start();
          const beforeHost = before === undefined || beforeLimits === undefined ? undefined : await start(before.appDir, beforeSettings, beforeLimits);
          const offHosts =
            before === undefined || offLimits === undefined
              ? undefined
              : {
                  after: await start(app.appDir, withoutTelemetry, offLimits.after),
                  before: await start(before.appDir, { ...beforeSettings, APPLICATIONINSIGHTS_CONNECTION_STRING: '' }, offLimits.before),
                };
          try {
            for (const worker of [after, beforeHost, offHosts?.after, offHosts?.before]) {
              if (worker === undefined) continue;
              await worker.init();
              await worker.metadata();
              await worker.load();
              await runCell(worker, pool, token, 1, size.defaultConcurrency, SINGLES);
              await runCell(worker, pool, token, 100, prod.concurrency, BATCHES);
            }
            telemetry = await volumes(after, received, pool, token);
            if (beforeHost !== undefined && before !== undefined) {
              const beforeTelemetry = await volumes(beforeHost, receivedBefore, pool, token);
              const plan = [
                { concurrency: 1, requests: BASELINE_BATCHES.isolated },
                { concurrency: prod.concurrency, requests: BASELINE_BATCHES.atProd },
              ];
              // Only the bytes matter from here: the envelopes are not kept, so that this process's heap (the
              // host side of gRPC and the ingestion endpoints) does not grow by the old package's 500 a batch.
              const forget = () => {
                for (const ingested of [received, receivedBefore]) {
                  ingested.envelopes.length = 0;
                  ingested.rawBodies.length = 0;
                }
              };
              forget();
              // Round-robin, the first round not counted: each worker's segment comes after the same pause
              // (the other workers' segments). In ABBA orders, whichever worker had waited longer paid up to
              // a third more CPU for its segment (bench/workerFloor.ts found it; docs/decisions/0113-how-the-benchmark-measures.md).
              type Side = 'before' | 'after' | 'beforeOff' | 'afterOff';
              const workers: Partial<Record<Side, WorkerHost>> = { before: beforeHost, after, beforeOff: offHosts?.before, afterOff: offHosts?.after };
              const sides = (Object.keys(workers) as Side[]).filter((side) => workers[side] !== undefined);
              const segments = plan.map(() => [] as Record<Side, Cell[]>[]);
              for (let round = -1; round < BASELINE_ROUNDS; round++) {
                for (const [k, { concurrency, requests }] of plan.entries()) {
                  const cells: Record<Side, Cell[]> = { before: [], after: [], beforeOff: [], afterOff: [] };
                  for (const side of sides) {
                    cells[side].push(await runCell(workers[side] as WorkerHost, pool, token, 100, concurrency, requests, { settleMs: EXPORT_SETTLE_MS }));
                    forget();
                  }
                  if (round >= 0) segments[k].push(cells);
                }
                process.stdout.write('.');
              }
              const perCall = (cells: readonly Cell[]) =>
                cells.reduce((n, c) => n + c.cpuMsPerRequest * c.requests, 0) / cells.reduce((n, c) => n + c.requests, 0);
              baseline = {
                commit: before.commit,
                rounds: BASELINE_ROUNDS,
                telemetry: beforeTelemetry,
                cpu: plan.map(({ concurrency, requests }, k) => {
                  const ratios = segments[k].map((round) => perCall(round.after) / perCall(round.before));
                  const all = (side: Side) => segments[k].flatMap((r) => r[side]);
                  const errors = sides.flatMap(all).reduce((n, c) => n + c.errors, 0);
                  if (errors > 0) throw new Error(`bench: ${errors} batches of 100 were not answered 204 in the before/after comparison`);
                  return {
                    batch: 100,
                    concurrency,
                    requests,
                    beforeMs: perCall(all('before')),
                    afterMs: perCall(all('after')),
                    ratios,
                    ratio: median(ratios),
                    off: offHosts === undefined ? undefined : { beforeMs: perCall(all('beforeOff')), afterMs: perCall(all('afterOff')) },
                  };
                }),
              };
            }
          } finally {
            await Promise.allSettled([after.kill(), beforeHost?.kill(), offHosts?.after.kill(), offHosts?.before.kill()]);
          }
        }
        const cold = initRows.find((r) => r.app === 'package' && r.telemetry) as InitRow;
        results.push({
          memoryMB: size.memoryMB,
          cores: size.cores,
          defaultConcurrency: size.defaultConcurrency,
          cold: { initMs: cold.initMs, rssMiB: cold.rssMiB, samples: cold.samples },
          ...cellsOf,
          telemetry,
          initComparison: size.cores === 1 ? { runs, rows: initRows } : undefined,
          baseline,
        });
        process.stdout.write('\n');
      } finally {
        limits.remove();
        beforeLimits?.remove();
        offLimits?.after.remove();
        offLimits?.before.remove();
      }
    }
    return { node: spawnSync(node, ['--version'], { encoding: 'utf8' }).stdout.trim(), nodeArgs, results };
  } finally {
    app.remove();
    before?.remove();
    rmSync(scratch, { recursive: true, force: true });
    await Promise.allSettled([azurite?.stop(true), provider?.stop(), ingestion?.stop(), beforeIngestion?.stop()]);
  }
}

const f0 = (x: number) => x.toFixed(0);
const f1 = (x: number) => x.toFixed(1);
const f2 = (x: number) => x.toFixed(2);
const usd = (x: number) => `$${x < 10 ? x.toFixed(2) : x.toFixed(0)}`;

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

const kib = (bytes: number) => `${(bytes / 1024).toFixed(1)} KiB`;
const verdict = (ok: boolean) => (ok ? 'met' : '**not met**');
const CALLS = [
  ['single', 'single draw'],
  ['batch', 'batch of 100, accepted'],
  ['refused', 'batch of 100, refused'],
] as const;

/** The size measured at one core, where telemetry, init and the before/after comparison are. */
const atOneCore = (results: readonly SizeResult[]) => results.find((r) => r.cores === 1);

/**
 * Telemetry's share of init at one core: the median of the paired differences (the package with telemetry
 * on minus off, the two workers started back to back in each interleaved run), with its 95 % interval;
 * and the RSS after init above the empty worker's (medians).
 */
export function initShares(
  rows: readonly InitRow[],
  app: InitApp = 'package',
): { telemetryMs: number; interval: { low: number; high: number }; pairs: number; rssAboveEmptyMiB: number } {
  const row = (a: InitApp, telemetry: boolean) => rows.find((r) => r.app === a && r.telemetry === telemetry);
  const [on, off] = [row(app, true)?.samples ?? [], row(app, false)?.samples ?? []];
  const pairs = on.slice(0, off.length).map((ms, i) => ms - off[i]);
  const { median: telemetryMs, low, high } = pairs.length === 0 ? { median: NaN, low: NaN, high: NaN } : medianInterval(pairs);
  return {
    telemetryMs,
    interval: { low, high },
    pairs: pairs.length,
    rssAboveEmptyMiB: (row(app, true)?.rssMiB ?? NaN) - (row('empty app', false)?.rssMiB ?? NaN),
  };
}

/** Worker CPU per batch that telemetry adds (on minus off, same rounds), this package and the one before #32. */
export function telemetryCpu(c: CpuComparison): { now: number; before: number } | undefined {
  return c.off === undefined ? undefined : { now: c.afterMs - c.off.afterMs, before: c.beforeMs - c.off.beforeMs };
}

/**
 * The bounds of issue #32 and of the team's decision of 2026-11-28, each against this run (the lines of
 * the targets tables, in bench/results.md's "Against the targets" and in the sizes section).
 */
export function telemetryTargetLines(results: readonly SizeResult[], prodConcurrency = recommended('prod').concurrency): string[] {
  const one = atOneCore(results);
  if (one === undefined) return [];
  const lines: string[] = [];
  const t = one.telemetry;
  for (const [key, label] of CALLS) {
    const v = t?.[key];
    const bound = TELEMETRY_TARGETS[key];
    const before = TELEMETRY_BEFORE[key];
    lines.push(
      v === undefined
        ? `| ${label}: ≤ ${bound.envelopes} envelopes and ≤ ${kib(bound.bytes)} of JSON sent | not measured | **not met** |`
        : `| ${label}: ≤ ${bound.envelopes} envelopes and ≤ ${kib(bound.bytes)} of JSON sent (${TELEMETRY_BEFORE.date}: ${before.text}) | ${f1(v.envelopes)} envelopes, ${kib(v.bytes)} | ${verdict(v.envelopes <= bound.envelopes && v.bytes <= bound.bytes)} |`,
    );
  }
  const commit = one.baseline?.commit ?? TELEMETRY_BASELINE;
  for (const concurrency of [...new Set([prodConcurrency, 1])]) {
    const bounded = concurrency === prodConcurrency;
    const c = one.baseline?.cpu.find((x) => x.batch === 100 && x.concurrency === concurrency);
    const added = c === undefined ? undefined : telemetryCpu(c);
    const target = bounded
      ? `what telemetry adds to the worker's CPU per batch of 100 at one core, concurrency ${concurrency} (prod's): on minus off, same run, ≤ a third of what it added to the package before #32 (${commit})`
      : `what telemetry adds to the worker's CPU per batch of 100 at one core, concurrency ${concurrency}: reported, not bounded`;
    if (c === undefined || added === undefined) {
      lines.push(`| ${target} | not measured | ${bounded ? '**not met**' : 'reported'} |`);
      continue;
    }
    const figures = `${added.now.toFixed(1)} ms (${c.afterMs.toFixed(1)} − ${(c.off as { afterMs: number }).afterMs.toFixed(1)}) against ${added.before.toFixed(1)} ms (${c.beforeMs.toFixed(1)} − ${(c.off as { beforeMs: number }).beforeMs.toFixed(1)}): ${f2(added.now / added.before)}×`;
    lines.push(`| ${target} | ${figures} | ${bounded ? verdict(added.now <= added.before * SIZE_TARGETS.telemetryCpuVsBefore) : 'reported'} |`);
  }
  const rows = one.initComparison?.rows ?? [];
  const now = initShares(rows);
  const then = initShares(rows, 'package before #32');
  const row = (app: InitApp, telemetry: boolean) => rows.find((r) => r.app === app && r.telemetry === telemetry);
  const was = (x: number, unit: string) => (Number.isNaN(x) ? '' : `; before #32 ${x.toFixed(1)} ${unit}`);
  // Judged only when the interval is on one side of the bound: a verdict the spread of the samples cannot flip.
  const bound = SIZE_TARGETS.telemetryInitMs;
  const initVerdict =
    now.interval.high <= bound ? 'met' : now.interval.low > bound ? '**not met**' : '**undecided** (the interval holds the bound: more workers)';
  const guard = SIZE_TARGETS.rssGuardAboveEmptyMiB;
  const initTarget = `telemetry's share of init, Node 22 at one core: median of the paired workers (on minus off, started back to back) ≤ ${bound} ms, its 95 % interval clear of the bound`;
  const rssTarget = `RSS after init above the empty worker's, Node 22 at one core (same run): reported, regression guard +${guard} MiB`;
  if (Number.isNaN(now.telemetryMs) || Number.isNaN(now.rssAboveEmptyMiB)) {
    lines.push(`| ${initTarget} | not measured | **not met** |`, `| ${rssTarget} | not measured | **not met** |`);
    return lines;
  }
  lines.push(
    `| ${initTarget} | ${now.telemetryMs.toFixed(0)} ms of ${now.pairs} pairs (95 % interval ${now.interval.low.toFixed(0)} to ${now.interval.high.toFixed(0)})${was(then.telemetryMs, 'ms')} | ${initVerdict} |`,
    // Two decimals: a difference within a tenth of the guard reads as its verdict says.
    `| ${rssTarget} | ${(row('package', true)?.rssMiB ?? NaN).toFixed(2)} − ${(row('empty app', false)?.rssMiB ?? NaN).toFixed(2)} = +${now.rssAboveEmptyMiB.toFixed(2)} MiB${was(then.rssAboveEmptyMiB, 'MiB')} | ${now.rssAboveEmptyMiB <= guard ? 'guard held' : '**guard broken**'} |`,
  );
  return lines;
}

/** Telemetry at one core, before issue #32 and now: init, worker CPU per batch of 100, and what each call sends. */
function telemetrySection(r: SizeResult): string[] {
  const t = r.telemetry;
  const b = r.baseline;
  const off = b?.cpu.some((c) => c.off !== undefined) ?? false;
  const comparison = r.initComparison;
  const perMillion = (v: TelemetryVolume | undefined) => (v === undefined ? '' : usd(telemetryPerMillion(v.bytes)));
  const cell = (v: TelemetryVolume | undefined) => (v === undefined ? 'not measured' : `${f1(v.envelopes)} (${f1(v.dependencies)}) / ${f0(v.bytes)}`);
  return [
    `### Telemetry before and after issue #32 (${r.memoryMB} MB, one core)`,
    '',
    ...(b === undefined
      ? []
      : [
          `The package before #32 is \`npm run package\` of ${b.commit} (main just before the telemetry merge), built by this run into a temporary worktree with the same node_modules (\`bench/baseline.ts\`), measured beside this package under a one-core quota of its own, sending to an ingestion endpoint of its own.`,
          '',
        ]),
    ...(comparison === undefined
      ? []
      : [
          `Init: ${comparison.runs} fresh workers per row, the rows interleaved (medians).`,
          '',
          '| loaded | telemetry | init ms (median) | RSS after init MiB | init ms, every sample |',
          '|---|---|---|---|---|',
          ...comparison.rows.map(
            (row) => `| ${row.app} | ${row.telemetry ? 'on' : 'off'} | **${f0(row.initMs)}** | ${f1(row.rssMiB)} | ${row.samples.join(', ')} |`,
          ),
          '',
        ]),
    ...(b === undefined
      ? []
      : [
          `Worker CPU per batch of 100: ${b.rounds} rounds after one not counted; in each, ${off ? 'four fresh workers warmed alike (each package with telemetry on, and again with it off)' : 'two fresh workers warmed alike (one per package)'} run each concurrency in turn, so that every segment follows the same pause of its worker (in ABBA orders, whichever worker had waited longer paid up to a third more), the worker's CPU read ${EXPORT_SETTLE_MS / 1000} s after the segment's last answer so that what the exporter sends of it is counted, less the worker's idle CPU over as long (its rate over the next ${IDLE_MS / 1000} s). The ratio of a round is its segment of each package${off ? ' (telemetry on)' : ''}; the table gives the median of the rounds' ratios and each round's.${off ? ' Telemetry off is every round pooled: what the work costs without it, so that on minus off is what telemetry costs each package.' : ''}`,
          '',
          '| batch | concurrency | batches per segment | before #32 CPU ms/batch | now CPU ms/batch | now ÷ before (median of rounds) | ratio by round | telemetry off, CPU ms/batch: before #32 / now | what telemetry costs, ms/batch: before #32 / now |',
          '|---|---|---|---|---|---|---|---|---|',
          ...b.cpu.map(
            (c) =>
              `| ${c.batch} | ${c.concurrency} | ${c.requests} | ${c.beforeMs.toFixed(1)} | ${c.afterMs.toFixed(1)} | **${f2(c.ratio)}×** | ${c.ratios.map(f2).join(', ')} | ${c.off === undefined ? 'not measured' : `${c.off.beforeMs.toFixed(1)} / ${c.off.afterMs.toFixed(1)}`} | ${c.off === undefined ? 'not measured' : `${(c.beforeMs - c.off.beforeMs).toFixed(1)} / ${(c.afterMs - c.off.afterMs).toFixed(1)}`} |`,
          ),
          '',
        ]),
    `Telemetry per call, counted at the ingestion endpoint (one call at a time, after the exporter's sends settled): envelopes (of which dependencies) / bytes of JSON as sent, before compression. A refused batch is 100 elements whose amounts are above the loans' credit (a 400 after the storage reads). Priced at Analytics Logs' $${INGESTION.perGb} per GB, with the billed size taken as ${INGESTION.billedShare * 100} % of the JSON sent (Microsoft: "around 25 percent less than the incoming data size"), before the first ${INGESTION.freeGbPerMonth} GB a month that are free (\`telemetryPerMillion\`, bench/costModel.ts).`,
    '',
    `| call | ${TELEMETRY_BEFORE.date} (bench/results.md of that run) | before #32, this run | now | bound | now, $ per million calls | before #32 (this run), $ per million calls |`,
    '|---|---|---|---|---|---|---|',
    ...CALLS.map(
      ([key, label]) =>
        `| ${label} | ${TELEMETRY_BEFORE[key].text} | ${cell(b?.telemetry[key])} | **${cell(t?.[key])}** | ${TELEMETRY_TARGETS[key].envelopes} / ${TELEMETRY_TARGETS[key].bytes} | ${perMillion(t?.[key])} | ${perMillion(b?.telemetry[key])} |`,
    ),
    '',
    `The ${TELEMETRY_BEFORE.date} refused batch is the figure issue #32 quotes (501 envelopes, 460 KB); that run's table had the single draw and the accepted batch only.`,
    '',
  ];
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

/** The Markdown section: cold start and load per size, and the bounds of the issue. */
export function sizesSection({ node, nodeArgs, results }: Sizes): string[] {
  const prod = recommended('prod');
  const dev = recommended('dev');
  const smallest = results.find((r) => r.memoryMB === 512);
  const mark = (r: SizeResult, c: number) =>
    [
      c === r.defaultConcurrency ? 'default' : '',
      r.memoryMB === prod.memoryMB && c === prod.concurrency ? 'prod' : '',
      r.memoryMB === dev.memoryMB && c === dev.concurrency ? 'dev' : '',
    ]
      .filter((s) => s !== '')
      .join(', ');
  return [
    '## Instance sizes in the real worker (Node 22, telemetry on)',
    '',
    `Each Flex Consumption size as a cgroup v1 CPU quota (and memory limit) on the worker process (\`bench/sizes.ts\`): 512 MB a quarter of a core, 2,048 MB one core, 4,096 MB two. ${node}, started with the deployment's Node options (\`${nodeArgs.join(' ')}\`), loads the package (the zip of \`npm run package\`), with telemetry sent to a local ingestion endpoint. Azurite (pinned to core 0), the OpenID provider and the host side of gRPC run outside the limits; on this machine's two cores the 4,096 MB size shares core 0 with Azurite, so its throughput is a lower bound on what two cores give (and its latency an upper bound).`,
    '',
    `Cold start: ${COLD_RUNS} fresh workers per size (${INIT_RUNS} at one core), the time from \`workerInitRequest\` to its response and the RSS right after (medians).`,
    '',
    '| size | CPU | init ms (median) | RSS after init MiB | init ms, every sample |',
    '|---|---|---|---|---|',
    ...results.map((r) => `| ${r.memoryMB} MB | ${r.cores} core | **${f0(r.cold.initMs)}** | ${f1(r.cold.rssMiB)} | ${r.cold.samples.join(', ')} |`),
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
    '| target (Node 22, package, telemetry on) | this run | |',
    '|---|---|---|',
    ...telemetryTargetLines(results),
    ...(smallest === undefined
      ? []
      : [
          `| headroom of 512 MB under batches of 100 at concurrency ${smallest.defaultConcurrency} | worker peak ${f1(smallest.peakRssMiB)} MiB: ${f0(512 - smallest.peakRssMiB)} MiB left for the Functions host and the rest | stated |`,
        ]),
    '',
    ...costSection(results),
    ...results.flatMap((r) => (r.cores === 1 ? telemetrySection(r) : [])),
  ];
}

if (require.main === module && process.env.SIZES_FROM !== undefined) {
  // Renders a saved run again (after the parameters files changed, say).
  console.log(sizesSection(JSON.parse(readFileSync(process.env.SIZES_FROM, 'utf8')) as Sizes).join('\n'));
} else if (require.main === module) {
  const only = process.env.SIZES_ONLY?.split(',').map(Number);
  measureSizes(only)
    .then((sizes) => {
      console.log(sizesSection(sizes).join('\n'));
      writeFileSync(join(ROOT, 'bench', 'sizes.json'), JSON.stringify(sizes, null, 1));
    })
    .catch((error) => {
      console.error(error);
      process.exit(1);
    });
}
