/**
 * Cold start with and without Application Insights, in fresh processes (`npm run coldstart`):
 *  - loading the deployable entry module (dist/functions/main.js), median of several processes;
 *  - a fresh dev host: start-up, then its first request (token check, reads, commit) end to end.
 * Prints a Markdown table for the README.
 */
import { spawn, spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { startAzurite } from '../dev/azurite';
import { createTables, putLoan, putPartner, tableClient } from '../dev/demoData';
import { startOidcProvider } from '../dev/oidcProvider';

const RUNS = Number(process.env.COLDSTART_RUNS ?? 7);
const ROOT = join(__dirname, '..', '..');
const MAIN = join(ROOT, 'dist', 'functions', 'main.js');
const DEV_HOST = join(ROOT, 'dist', 'dev', 'devHost.js');
const AUDIENCE = 'api://coldstart';
// Nothing listens there: the exporter's sends fail quietly, which does not change what is measured.
const TELEMETRY = 'InstrumentationKey=00000000-0000-4000-8000-000000000000;IngestionEndpoint=https://127.0.0.1:9/';

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

export interface ModuleLoad {
  readonly ms: number;
  /** RSS once loaded. */
  readonly rssMb: number;
  /** The process's peak RSS up to then (getrusage maxrss). */
  readonly peakRssMb: number;
}

/** Loads an entry module in a fresh process with only `env`: how long `require` took, and the RSS after. */
export function loadModule(env: Record<string, string>, entry = MAIN): ModuleLoad {
  const probe =
    `const t=performance.now();require(${JSON.stringify(entry)});const ms=performance.now()-t;` +
    'console.log(JSON.stringify({ms, rssMb: process.memoryUsage().rss/1048576, peakRssMb: process.resourceUsage().maxRSS/1024}));process.exit(0)';
  const out = spawnSync(process.execPath, ['-e', probe], { env: { PATH: process.env.PATH ?? '', ...env }, encoding: 'utf8' });
  const line = out.stdout.trim().split('\n').pop() ?? '';
  return JSON.parse(line) as ModuleLoad;
}

async function firstRequest(env: Record<string, string>, token: string, loanNumber: number): Promise<{ startMs: number; firstMs: number }> {
  const started = performance.now();
  const child = spawn(process.execPath, [DEV_HOST], { env: { PATH: process.env.PATH ?? '', PORT: '0', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  const url = await new Promise<string>((resolve, reject) => {
    child.stdout.on('data', (c: Buffer) => {
      output += c.toString();
      const match = /listening on (\S+)/.exec(output);
      if (match) resolve(match[1]);
    });
    child.once('exit', (code) => reject(new Error(`dev host exited ${code}: ${output}`)));
  });
  const listening = performance.now();
  const response = await fetch(url, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify([{ loanNumber, requestor: 'bench', amount: 1 }]),
  });
  const answered = performance.now();
  if (response.status !== 204) throw new Error(`first request answered ${response.status}: ${await response.text()}`);
  child.kill('SIGTERM');
  await new Promise((resolve) => child.once('exit', resolve));
  return { startMs: listening - started, firstMs: answered - listening };
}

async function main(): Promise<void> {
  const base = {
    AUTH_OPENID_CONFIG_URL: 'http://127.0.0.1:9/.well-known/openid-configuration',
    AUTH_AUDIENCE: AUDIENCE,
    TABLES_CONNECTION_STRING: 'UseDevelopmentStorage=true',
  };
  const rows: string[] = [];
  const loads: Record<string, ModuleLoad[]> = { off: [], on: [] };
  for (let i = 0; i < RUNS; i++) {
    loads.off.push(loadModule(base));
    loads.on.push(loadModule({ ...base, APPLICATIONINSIGHTS_CONNECTION_STRING: TELEMETRY }));
  }

  const [azurite, provider] = await Promise.all([startAzurite(), startOidcProvider({ audience: AUDIENCE })]);
  const tables = { partnersTable: 'Partners', loansTable: 'Loans', drawsTable: 'DrawRequests', idempotencyTable: 'IdempotencyKeys' };
  await createTables(azurite.connectionString, tables);
  await putPartner(tableClient(azurite.connectionString, tables.partnersTable), { clientId: 'bench', partnerId: 'BENCH' });
  const loans = tableClient(azurite.connectionString, tables.loansTable);
  for (let n = 1; n <= 2 * RUNS; n++) await putLoan(loans, { loanNumber: n, partnerId: 'BENCH', availableCredit: 100, fundingInvestorId: 'I' });
  const token = await provider.server.issuer.buildToken({ scopesOrTransform: (_h, p) => Object.assign(p, { aud: AUDIENCE, azp: 'bench' }) });
  const hostEnv = { AUTH_OPENID_CONFIG_URL: provider.openIdConfigUrl, AUTH_AUDIENCE: AUDIENCE, TABLES_CONNECTION_STRING: azurite.connectionString };
  const first: Record<string, { startMs: number; firstMs: number }[]> = { off: [], on: [] };
  let loan = 0;
  for (let i = 0; i < RUNS; i++) {
    first.off.push(await firstRequest(hostEnv, token, ++loan));
    first.on.push(await firstRequest({ ...hostEnv, APPLICATIONINSIGHTS_CONNECTION_STRING: TELEMETRY }, token, ++loan));
  }
  await Promise.all([azurite.stop(true), provider.stop()]);

  const f = (x: number) => x.toFixed(0);
  rows.push('| | without telemetry | with telemetry | difference |', '|---|---|---|---|');
  const row = (label: string, off: number, on: number, unit = 'ms') =>
    rows.push(`| ${label} | ${f(off)} ${unit} | ${f(on)} ${unit} | +${f(on - off)} ${unit} |`);
  row('load `dist/functions/main.js`', median(loads.off.map((x) => x.ms)), median(loads.on.map((x) => x.ms)));
  row('RSS after loading', median(loads.off.map((x) => x.rssMb)), median(loads.on.map((x) => x.rssMb)), 'MB');
  row('dev host: start to listening', median(first.off.map((x) => x.startMs)), median(first.on.map((x) => x.startMs)));
  row('dev host: first request (204)', median(first.off.map((x) => x.firstMs)), median(first.on.map((x) => x.firstMs)));
  console.log(`Medians of ${RUNS} fresh processes each, Node ${process.version}, ${new Date().toISOString().slice(0, 10)}:\n`);
  console.log(rows.join('\n'));
}

if (require.main === module) {
  void main().catch((error) => {
    console.error(error);
    process.exit(1);
  });
}
