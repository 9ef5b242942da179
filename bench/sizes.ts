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
 *  - one request at a time (what a sparse partner's call costs: each opens its own billed window).
 * Azurite, the OpenID provider and this process (the host side) run outside the limits.
 *
 * Knobs for trying things (never set by `npm run bench`): SIZES_ONLY=2048 (sizes), SIZES_NODE_ARGS
 * (Node options instead of the deployment's), SIZES_TELEMETRY=off, SIZES_SAMPLING (percent of
 * operations' dependencies kept), SIZES_COLD_RUNS / SIZES_SINGLES / SIZES_BATCHES / SIZES_ISOLATED
 * (sample counts), SIZES_FROM=<saved json> (render a saved run again).
 */
import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, rmdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startAzurite, type Azurite } from '../dev/azurite';
import { createTables, putPartner, tableClient, tableSettings } from '../dev/demoData';
import { startOidcProvider, type OidcProvider } from '../dev/oidcProvider';
import { ROOT } from '../scripts/bundle';
import { cpuMs } from '../tests/support/devHostProcess';
import { ordinaryBody } from '../tests/support/hostileBodies';
import { startIngestion, type Ingestion } from '../tests/support/ingestion';
import { deployedNodeArguments, packagedApp } from '../tests/support/packagedApp';
import { WorkerHost } from '../tests/support/workerHost';
import { node22 } from './coldStart';
import { INGESTION, alwaysReadyBreakEvenShare, alwaysReadyMonthly, billedSeconds, sparsePerMillion, steadyPerMillion } from './costModel';
import { LoanPool } from './loanPool';
import { median, percentile, pin } from './stats';
import { benchToken } from './benchToken';

/** Flex Consumption's sizes: memory, the share of a core each gets, and the default HTTP concurrency per instance. */
export const INSTANCE_SIZES = [
  { memoryMB: 512, cores: 0.25, defaultConcurrency: 4, concurrencies: [1, 2, 4] },
  { memoryMB: 2048, cores: 1, defaultConcurrency: 16, concurrencies: [1, 4, 8, 16] },
  { memoryMB: 4096, cores: 2, defaultConcurrency: 32, concurrencies: [1, 8, 16, 32] },
] as const;
export type MemoryMB = (typeof INSTANCE_SIZES)[number]['memoryMB'];

/** The issue's bounds for Node 22 with telemetry on. */
export const SIZE_TARGETS = { rssMiB: 80, initMsAtOneCore: 150 } as const;

const AUDIENCE = 'api://draw-request-sizes';
const CLIENT = 'sizes-client';
const PARTNER = 'SIZES';
const COLD_RUNS = Number(process.env.SIZES_COLD_RUNS ?? 7);
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

interface Cell {
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
  /** Telemetry sent per call (measured at prod's size only): envelopes and JSON bytes, a single draw and a batch of 100. */
  readonly telemetry?: { readonly single: TelemetryVolume; readonly batch: TelemetryVolume };
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

export async function measureSizes(only: readonly number[] = INSTANCE_SIZES.map((s) => s.memoryMB)): Promise<Sizes> {
  const node = node22();
  // SIZES_NODE_ARGS tries other Node options against the deployment's (space-separated).
  const nodeArgs = process.env.SIZES_NODE_ARGS?.split(' ').filter((a) => a !== '') ?? deployedNodeArguments();
  const scratch = mkdtempSync(join(tmpdir(), 'sizes-'));
  const app = await packagedApp();
  let azurite: Azurite | undefined;
  let provider: OidcProvider | undefined;
  let ingestion: Ingestion | undefined;
  try {
    [azurite, provider, ingestion] = await Promise.all([startAzurite(), startOidcProvider({ audience: AUDIENCE }), startIngestion()]);
    pin(azurite.pid, 0); // storage answers alike for every size
    const received = ingestion; // what the exporter sent, read after each settled exchange
    const tables = { partnersTable: 'SizesPartners', loansTable: 'SizesLoans', drawsTable: 'SizesDraws', idempotencyTable: 'SizesKeys' };
    await createTables(azurite.connectionString, tables);
    await putPartner(tableClient(azurite.connectionString, tables.partnersTable), { clientId: CLIENT, partnerId: PARTNER });
    const pool = new LoanPool(tableClient(azurite.connectionString, tables.loansTable), tableClient(azurite.connectionString, tables.drawsTable), PARTNER);
    const most = Math.max(...INSTANCE_SIZES.flatMap((s) => s.concurrencies));
    await pool.seed(Math.max(SINGLES, 20 * most, Math.max(BATCHES, most) * 100));
    const token = await benchToken(provider, AUDIENCE, CLIENT, {}, 3 * 3600);
    const settings: Record<string, string> = {
      PATH: process.env.PATH ?? '',
      AUTH_OPENID_CONFIG_URL: provider.openIdConfigUrl,
      AUTH_AUDIENCE: AUDIENCE,
      TABLES_CONNECTION_STRING: azurite.connectionString,
      ...tableSettings(tables),
      APPLICATIONINSIGHTS_CONNECTION_STRING: ingestion.connectionString,
      NODE_EXTRA_CA_CERTS: ingestion.caFile,
    };
    if (process.env.SIZES_TELEMETRY === 'off') settings.APPLICATIONINSIGHTS_CONNECTION_STRING = '';
    if (process.env.SIZES_SAMPLING !== undefined) settings.TELEMETRY_SAMPLING_PERCENTAGE = process.env.SIZES_SAMPLING;
    const prod = recommended('prod');
    const results: SizeResult[] = [];
    for (const size of INSTANCE_SIZES.filter((s) => only.includes(s.memoryMB))) {
      process.stdout.write(`size ${size.memoryMB} MB (${size.cores} core): cold starts`);
      const limits = InstanceLimits.create(String(size.memoryMB), size.cores, size.memoryMB, node, scratch);
      try {
        const start = () => WorkerHost.start({ appDir: app.appDir, settings, node: limits.node, nodeArgs });
        const samples: { ms: number; rss: number }[] = [];
        for (let i = 0; i < COLD_RUNS; i++) {
          const host = await start();
          try {
            const began = performance.now();
            const init = await host.init();
            const ms = performance.now() - began;
            if ((init.result as { status?: string } | undefined)?.status !== 'Success') throw new Error(`workerInitRequest failed:\n${host.output}`);
            samples.push({ ms, rss: host.rssMiB() });
          } finally {
            await host.kill();
          }
          process.stdout.write('.');
        }
        process.stdout.write(' load');

        const host = await start();
        try {
          await host.init();
          await host.metadata();
          await host.load();
          const invoke = async (size: number) => {
            const began = performance.now();
            const reply = await host.invoke({
              method: 'POST',
              url: 'http://127.0.0.1/DrawRequest',
              headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
              body: ordinaryBody(pool.take(size)),
            });
            return { ms: performance.now() - began, ok: reply.status === 204 };
          };
          /** `requests` invocations with `concurrency` in flight at once (closed loop). */
          const run = async (batch: 1 | 100, concurrency: number, requests: number): Promise<Cell> => {
            const latencies: number[] = [];
            let errors = 0;
            let left = requests;
            const cpuBefore = cpuMs(host.pid);
            const began = performance.now();
            await Promise.all(
              Array.from({ length: concurrency }, async () => {
                while (left > 0) {
                  left -= 1;
                  const { ms, ok } = await invoke(batch);
                  latencies.push(ms);
                  if (!ok) errors += 1;
                }
              }),
            );
            const seconds = (performance.now() - began) / 1000;
            const cpu = cpuMs(host.pid) - cpuBefore;
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
          };
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
          // What one call sends to Application Insights: the exporter sends every 5 s, so each side waits that out.
          let telemetry: SizeResult['telemetry'];
          if (size.memoryMB === prod.memoryMB) {
            const volume = async (batch: 1 | 100, calls: number): Promise<TelemetryVolume> => {
              const settle = () => new Promise((resolve) => setTimeout(resolve, 7_000));
              await settle();
              const [envelopes, bodies] = [received.envelopes.length, received.rawBodies.length];
              await run(batch, 1, calls);
              await settle();
              const sent = received.envelopes.slice(envelopes);
              const bytes = received.rawBodies.slice(bodies).reduce((n, body) => n + Buffer.byteLength(body), 0);
              return {
                envelopes: sent.length / calls,
                dependencies: sent.filter((e) => e.data.baseType === 'RemoteDependencyData').length / calls,
                bytes: bytes / calls,
              };
            };
            telemetry = { single: await volume(1, 20), batch: await volume(100, 4) };
          }
          results.push({
            telemetry,
            memoryMB: size.memoryMB,
            cores: size.cores,
            defaultConcurrency: size.defaultConcurrency,
            cold: { initMs: median(samples.map((s) => s.ms)), rssMiB: median(samples.map((s) => s.rss)), samples: samples.map((s) => Math.round(s.ms)) },
            isolated: { single: isolatedSingle.p50, batch: isolatedBatch.p50 },
            cells: [{ ...isolatedSingle, concurrency: 1 }, { ...isolatedBatch, concurrency: 1 }, ...cells],
            warmRssMiB,
            peakRssMiB: host.peakRssMiB(),
          });
        } finally {
          await host.kill();
        }
        process.stdout.write('\n');
      } finally {
        limits.remove();
      }
    }
    return { node: spawnSync(node, ['--version'], { encoding: 'utf8' }).stdout.trim(), nodeArgs, results };
  } finally {
    app.remove();
    rmSync(scratch, { recursive: true, force: true });
    await Promise.allSettled([azurite?.stop(true), provider?.stop(), ingestion?.stop()]);
  }
}

const f0 = (x: number) => x.toFixed(0);
const f1 = (x: number) => x.toFixed(1);
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

/** Application Insights' share: what one call sends, and its price at the Analytics Logs rate. */
function telemetrySection(t: { single: TelemetryVolume; batch: TelemetryVolume }): string[] {
  const perMillion = (v: TelemetryVolume) => usd(((v.bytes * 1e6) / 1e9) * INGESTION.billedShare * INGESTION.perGb);
  return [
    `Telemetry per call, counted at the ingestion endpoint (one call at a time, after the exporter's sends settled): each Table Storage call is recorded as the SDK's operation and its HTTP request, a read also as the page it fetches (about 2.5 records per call). Priced at Analytics Logs' $${INGESTION.perGb} per GB, with the billed size taken as ${INGESTION.billedShare * 100} % of the JSON sent (Microsoft: "around 25 percent less than the incoming data size"), after the first ${INGESTION.freeGbPerMonth} GB a month.`,
    '',
    '| call | envelopes | of which dependencies | JSON bytes | $ per million calls |',
    '|---|---|---|---|---|',
    `| single draw | ${f1(t.single.envelopes)} | ${f1(t.single.dependencies)} | ${f0(t.single.bytes)} | ${perMillion(t.single)} |`,
    `| batch of 100 | ${f1(t.batch.envelopes)} | ${f1(t.batch.dependencies)} | ${f0(t.batch.bytes)} | ${perMillion(t.batch)} |`,
    '',
  ];
}

/** The cost model of docs/decisions.md, from this run's figures (bench/costModel.ts has the rules and prices). */
export function costSection(results: readonly SizeResult[], prod: { memoryMB: number; concurrency: number } = recommended('prod')): string[] {
  const share = alwaysReadyBreakEvenShare();
  return [
    '### What each size costs, from these figures',
    '',
    `On demand, an isolated call is billed its own activity window: at least 1 s, then in steps of 100 ms, of the instance's memory (the warm p50 at concurrency 1 above). Under steady load the instance's memory is billed while it is busy, shared by the calls it runs at once: the cost per call is its memory over the calls per second it carries, here the CPU bound (the size's cores over the worker's CPU per call, at the concurrency named, the highest without an error unless it is prod's): a lower bound on cost, since in Azure the Functions host shares those cores. An always-ready instance pays for itself when an instance is executing ${f0(share * 100)} % of the time or more (its baseline against the lower execution rate; the size cancels out): for batches of 100, from ${f0(share * 100)} % of a second's windows (each isolated batch billed at least 1 s) to ${f0(share * 100)} % of the time taken by back-to-back batches (windows merging, each batch's isolated p50). USD list prices, East US, without the monthly free grant (bench/costModel.ts).`,
    '',
    '| size | isolated call billed s: single / batch of 100 | sparse, $ per million calls: single / batch | capacity per instance, calls/s: single / batch (CPU-bound, at concurrency) | steady, $ per million: single / batch | one always-ready instance, per month | batches of 100 a second at which it pays: isolated windows to merged |',
    '|---|---|---|---|---|---|---|',
    ...results.map((r) => {
      const at = judgedAt(r, prod);
      const [one, hundred] = [capacity(r, 1, at), capacity(r, 100, at)];
      const payAt = `${(share / billedSeconds(r.isolated.batch)).toFixed(2)} to ${f1(share / (r.isolated.batch / 1000))}`;
      return `| ${r.memoryMB} MB | ${billedSeconds(r.isolated.single)} / ${billedSeconds(r.isolated.batch)} | ${usd(sparsePerMillion(r.memoryMB, r.isolated.single))} / ${usd(sparsePerMillion(r.memoryMB, r.isolated.batch))} | ${f1(one)} / ${f1(hundred)} (at ${at}) | ${usd(steadyPerMillion(r.memoryMB, one))} / ${usd(steadyPerMillion(r.memoryMB, hundred))} | ${usd(alwaysReadyMonthly(r.memoryMB))} | ${payAt} |`;
    }),
    '',
  ];
}

/** The Markdown section: cold start and load per size, and the bounds of the issue. */
export function sizesSection({ node, nodeArgs, results }: Sizes): string[] {
  const prod = recommended('prod');
  const dev = recommended('dev');
  const verdict = (ok: boolean) => (ok ? 'met' : '**not met**');
  const oneCore = results.find((r) => r.cores === 1);
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
    `Cold start: ${COLD_RUNS} fresh workers per size, the time from \`workerInitRequest\` to its response and the RSS right after (medians).`,
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
    ...(oneCore === undefined
      ? []
      : [
          `| RSS after init ≤ ${SIZE_TARGETS.rssMiB} MiB (median, one core) | ${f1(oneCore.cold.rssMiB)} MiB | ${verdict(oneCore.cold.rssMiB <= SIZE_TARGETS.rssMiB)} |`,
          `| init ≤ ${SIZE_TARGETS.initMsAtOneCore} ms at one core (median) | ${f0(oneCore.cold.initMs)} ms | ${verdict(oneCore.cold.initMs <= SIZE_TARGETS.initMsAtOneCore)} |`,
        ]),
    ...(smallest === undefined
      ? []
      : [
          `| headroom of 512 MB under batches of 100 at concurrency ${smallest.defaultConcurrency} | worker peak ${f1(smallest.peakRssMiB)} MiB: ${f0(512 - smallest.peakRssMiB)} MiB left for the Functions host and the rest | stated |`,
        ]),
    '',
    ...costSection(results),
    ...results.flatMap((r) => (r.telemetry === undefined ? [] : telemetrySection(r.telemetry))),
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
