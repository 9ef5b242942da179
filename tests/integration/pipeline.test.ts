/**
 * The pipeline and scripts/deploy.sh, run for real against recording stand-ins of the Azure CLI
 * (tests/support/azStandIn.cjs: real JMESPath, the CLI's tsv, Entra's token rules) and the GitHub CLI
 * (tests/support/ghStandIn.cjs: GitHub's REST shapes of workflow runs), and a local "function app" that
 * answers as the contract says from what the pipeline deployed (tests/support/functionAppStandIn.cjs).
 * The workflows run as GitHub would for a push to main, a pull request and a rollback
 * (tests/support/workflowRunner.ts); the calls each makes, in order and with their arguments, are the
 * assertions: what-if before create, infrastructure before code, dev before prod, the same package
 * everywhere, nothing written by a pull request, nothing of a run that is not a release downloaded, and a
 * smoke check that fails, naming the likely setting, when the deployed settings are wrong. Each sign-in
 * presents the token GitHub would give the job and is accepted only if exactly one federated credential
 * that infra/bootstrap.bicep gives that client id's identity matches it, as Microsoft Entra ID decides
 * (tests/support/oidcTrust.ts), under the subject template scripts/githubSettings.cjs applies. GitHub's
 * environments are the ones that script made (run against the GitHub CLI stand-in): a job naming one
 * runs only if its branch policy admits the run's ref, and a job naming a missing one creates it,
 * unprotected, as GitHub does. The Azure CLI stand-in refuses a table call unless the signed-in identity's
 * roles, as infra/ assigns them and Microsoft defines them, allow it (tests/support/tableRbac.ts).
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { chmodSync, cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { HttpResponseInit } from '@azure/functions';
import { localCertificateAuthority, loopbackServerCertificate } from '../../dev/localCertificates';
import { DETAILS, accepted, badRequest, dependencyFailed, unauthorized } from '../../lib/problem';
import {
  EARLIER_CREDENTIALS,
  GITHUB_ISSUER,
  AZURE_AUDIENCE,
  SUBJECT_CLAIM_KEYS,
  bootstrapCredentials,
  githubSubject,
  matching,
  type FederatedCredential,
  type GitHubRepository,
  type OidcToken,
} from '../support/oidcTrust';
import { assignmentsOf, bootstrapRole, builtInTableRoles, tableAccess, type Permission, type TableOperation } from '../support/tableRbac';
import { StepFailed, runWorkflow, type RunRecord } from '../support/workflowRunner';

const ROOT = join(__dirname, '..', '..');
const TARGETS = {
  dev: {
    deployClientId: 'dev-deploy-client',
    planClientId: 'dev-plan-client',
    deployPrincipalId: 'dev-deploy-object',
    stopClientId: 'dev-stop-client',
    stopPrincipalId: 'dev-stop-object',
    storageAccountName: 'stdrawreqdevabc123',
  },
  prod: {
    deployClientId: 'prod-deploy-client',
    planClientId: 'prod-plan-client',
    deployPrincipalId: 'prod-deploy-object',
    stopClientId: 'prod-stop-client',
    stopPrincipalId: 'prod-stop-object',
    storageAccountName: 'stdrawreqprodabc123',
  },
} as const;
const PARTNERS = {
  dev: [
    { partnerId: 'PARTNER-001', clientAppId: '0b9f3c52-1111-4222-8333-944455556666' },
    { partnerId: 'PARTNER-003', clientAppId: '7d0e4a61-7777-4888-9999-aaaabbbbcccc', active: false },
  ],
  prod: [{ partnerId: 'PARTNER-001', clientAppId: '5c2a9e10-dddd-4eee-8fff-000011112222' }],
} as const;
/**
 * The repository the pipeline runs in, created after 15 July 2026: GitHub sends immutable subjects, under the
 * subject template scripts/githubSettings.cjs applies (each workspace applies it to the GitHub stand-in).
 */
const REPOSITORY: GitHubRepository = {
  owner: 'octo-org',
  ownerId: '123',
  name: 'octo-repo',
  id: '456',
  immutableSubject: true,
  subjectClaimKeys: SUBJECT_CLAIM_KEYS,
};
/** infra/rollbackFloor.json: the commits whose layout every release deployed must contain. */
const FLOOR = (
  JSON.parse(readFileSync(join(ROOT, 'infra', 'rollbackFloor.json'), 'utf8')) as { layouts: Array<{ table: string; since: string; first: string }> }
).layouts;
/** The commit the tests' releases are built from (a run's head_sha), and one from before every layout of the floor. */
const RELEASE_COMMIT = 'c0ffee'.padEnd(40, '0');
const OLDER_COMMIT = '01de57'.padEnd(40, '0');
/** The team that reviews prod's deployments (scripts/githubSettings.cjs apply prod --reviewer-team). */
const PROD_REVIEWERS = '4242';
/** Its owner/name: github.repository, and the full_name GitHub's REST API gives. */
const FULL_NAME = `${REPOSITORY.owner}/${REPOSITORY.name}`;
/** deploy.yml as GitHub's REST API gives it (GET /repos/{owner}/{repo}/actions/workflows/deploy.yml). */
const DEPLOY_WORKFLOW = { id: 161335, name: 'deploy', path: '.github/workflows/deploy.yml', state: 'active' };
/** prod's runner group (infra/env/prod.pipeline.json), whose runners GitHub places in prod's network, and that network. */
const PROD_RUNNER_GROUP = (JSON.parse(readFileSync(join(ROOT, 'infra', 'env', 'prod.pipeline.json'), 'utf8')) as { privateRunnerGroup: string })
  .privateRunnerGroup;
const PROD_NETWORK = 'vnet-drawreq-prod';
/** Where GitHub runs a job of this runs-on: prod's runner group inside prod's network (its network configuration), anything else outside. */
const runnerEnv = (runsOn: unknown): Record<string, string> =>
  typeof runsOn === 'object' && runsOn !== null && (runsOn as { group?: string }).group === PROD_RUNNER_GROUP ? { AZ_CALLER_NETWORK: PROD_NETWORK } : {};
/** The loan docs/contract.md §4.5 reserves for the smoke check, and its partner. */
const SMOKE_LOAN = 9007199254740991;
const SMOKE_PARTNER = 'DEPLOY-SMOKE-CHECK';
/** The smoke check's key: new per request (scripts/smokeCheck.cjs). */
const SMOKE_KEY = /^deployment-smoke-check-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** The user-assigned identity each client id of TARGETS belongs to. */
const IDENTITIES: Record<string, { env: 'dev' | 'prod'; identity: string }> = Object.fromEntries(
  (['dev', 'prod'] as const).flatMap((env) => [
    [TARGETS[env].deployClientId, { env, identity: `id-drawreq-${env}-deploy` }],
    [TARGETS[env].planClientId, { env, identity: `id-drawreq-${env}-plan` }],
    [TARGETS[env].stopClientId, { env, identity: `id-drawreq-${env}-stop` }],
  ]),
);
/** Credentials by the identity they belong to, as the Azure CLI stand-in lists them. */
const credentialsByIdentity = (credentials: readonly FederatedCredential[]): Record<string, FederatedCredential[]> =>
  credentials.reduce<Record<string, FederatedCredential[]>>((all, c) => ({ ...all, [c.identity]: [...(all[c.identity] ?? []), c] }), {});
/** The bootstrap's federated credentials for this repository, by environment (githubSubjectFormat left to its default). */
let CREDENTIALS: Record<'dev' | 'prod', FederatedCredential[]>;
const bootstrapped = (env: 'dev' | 'prod', format?: string) =>
  bootstrapCredentials({
    environmentName: env,
    githubRepository: FULL_NAME,
    githubOwnerId: REPOSITORY.ownerId,
    githubRepositoryId: REPOSITORY.id,
    ...(format === undefined ? {} : { githubSubjectFormat: format }),
  });
/**
 * What each identity that signs in may do to each table (account/table → operations), as infra/ assigns
 * roles and Microsoft defines them: the deploying identity (and a person deploying by hand) by
 * partnersWriter.bicep, the stop identity by stopAccess.bicep. The plan identity has no table role.
 */
let TABLE_ACCESS: Record<string, Record<string, TableOperation[]>>;
const TABLES = ['Partners', 'Loans', 'DrawRequests', 'IdempotencyKeys', 'StoppedClients'];
const STOP_ROLE = '5ca1ab1e-0000-4000-8000-000000005709';
beforeAll(async () => {
  CREDENTIALS = { dev: await bootstrapped('dev'), prod: await bootstrapped('prod') };
  const roles: Record<string, Permission[]> = {
    ...Object.fromEntries(Object.entries(builtInTableRoles()).map(([id, role]) => [id, role.permissions])),
    [STOP_ROLE]: await bootstrapRole('stopRole'),
  };
  const tablesOf = { partnersTableName: 'Partners', stoppedClientsTableName: 'StoppedClients' };
  const access = async (module: string, env: 'dev' | 'prod', parameters: Record<string, string>) => {
    const account = TARGETS[env].storageAccountName;
    const allowed = tableAccess(await assignmentsOf(module, { storageAccountName: account, ...tablesOf, ...parameters }), roles, TABLES);
    return Object.fromEntries(Object.entries(allowed).map(([table, ops]) => [`${account}/${table}`, ops]));
  };
  const writer = async (env: 'dev' | 'prod') => access('partnersWriter', env, { principalId: 'writer', principalType: 'ServicePrincipal' });
  const bothWriters = { ...(await writer('dev')), ...(await writer('prod')) };
  TABLE_ACCESS = {
    [TARGETS.dev.deployClientId]: await writer('dev'),
    [TARGETS.prod.deployClientId]: await writer('prod'),
    [TARGETS.dev.stopClientId]: await access('stopAccess', 'dev', { principalId: 'stop', stopRoleId: STOP_ROLE }),
    [TARGETS.prod.stopClientId]: await access('stopAccess', 'prod', { principalId: 'stop', stopRoleId: STOP_ROLE }),
    // Those who run scripts/deploy.sh by hand: the deployment grants them partnersWriter as it grants the pipeline.
    deployer: bothWriters,
    'jane@lender.example': bothWriters,
  };
});

interface Call {
  readonly args: string[];
  readonly as: string;
  readonly cwd: string;
  readonly sha256?: string;
}

let dir: string;
/** The "function app" the smoke check posts to: a process of its own, as the runner and the script block this one. */
let app: ChildProcess;
/** A folder under the system's temporary one, removed when the file's tests are done. */
const scratchFolders: string[] = [];
function scratch(prefix: string): string {
  const folder = mkdtempSync(join(tmpdir(), prefix));
  scratchFolders.push(folder);
  return folder;
}
afterAll(() => {
  for (const folder of scratchFolders) rmSync(folder, { recursive: true, force: true });
});
let url: string;
let appLog: string;
/** Its settings and storage, rewritten by each test (read on every request). */
let appConfig: string;
beforeAll(async () => {
  const appDir = scratch('pipeline-app-');
  appLog = join(appDir, 'requests.log');
  appConfig = join(appDir, 'config.json');
  app = spawn(process.execPath, [join(ROOT, 'tests', 'support', 'functionAppStandIn.cjs'), appLog, appConfig], { stdio: ['ignore', 'pipe', 'inherit'] });
  const port = await new Promise<string>((resolve) => app.stdout?.once('data', (chunk: Buffer) => resolve(chunk.toString().trim())));
  url = `http://127.0.0.1:${port}`;
});
/**
 * The Table service of the stand-in's accounts (tests/support/tableServiceStandIn.cjs), for scripts/stopClient.cjs:
 * a process of its own too, reading the test's state through the function app's config file; one port outside
 * any network, one inside prod's.
 */
let tableService: ChildProcess;
let tablePorts: Record<string, number>;
/** The CA the Table service's certificate is from, which scripts trust as a runner trusts Azure's (NODE_EXTRA_CA_CERTS). */
let tableCa: string;
beforeAll(async () => {
  const certificates = scratch('pipeline-tls-');
  const ca = await localCertificateAuthority(certificates);
  const server = await loopbackServerCertificate(ca);
  writeFileSync(join(certificates, 'key.pem'), server.key);
  writeFileSync(join(certificates, 'cert.pem'), server.cert);
  tableCa = ca.certPath;
  const args = [
    join(ROOT, 'tests', 'support', 'tableServiceStandIn.cjs'),
    appConfig,
    join(certificates, 'key.pem'),
    join(certificates, 'cert.pem'),
    PROD_NETWORK,
  ];
  tableService = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'inherit'] });
  tablePorts = await new Promise((resolve) =>
    tableService.stdout?.once('data', (chunk: Buffer) => resolve(JSON.parse(chunk.toString()) as Record<string, number>)),
  );
});
/** GitHub's OIDC token endpoint for the jobs (tests/support/oidcTokenStandIn.cjs), and the folder the runner tells it each job's claims in. */
let oidc: { url: string; folder: string };
let oidcTokens: ChildProcess;
beforeAll(async () => {
  const folder = scratch('pipeline-oidc-');
  oidcTokens = spawn(process.execPath, [join(ROOT, 'tests', 'support', 'oidcTokenStandIn.cjs'), folder], { stdio: ['ignore', 'pipe', 'inherit'] });
  const port = await new Promise<string>((resolve) => oidcTokens.stdout?.once('data', (chunk: Buffer) => resolve(chunk.toString().trim())));
  oidc = { url: `http://127.0.0.1:${port}`, folder };
});
/** Where an account's Table service answers a caller in `network` (none: outside every network), as TABLES_ENDPOINT. */
const tablesEndpoint = (account: string, network?: string) => `https://127.0.0.1:${tablePorts[network ?? 'public']}/${account}`;
afterAll(() => {
  app?.kill();
  tableService?.kill();
  oidcTokens?.kill();
});

interface AppRequest {
  readonly method: string;
  readonly url: string;
  readonly token: boolean;
  readonly idempotencyKey: string | null;
}
const appRequests = (): AppRequest[] =>
  existsSync(appLog)
    ? readFileSync(appLog, 'utf8')
        .trim()
        .split('\n')
        .filter((l) => l !== '')
        .map((l) => JSON.parse(l) as AppRequest)
    : [];

const wire = (response: HttpResponseInit) => ({ status: response.status, headers: response.headers, body: response.body ?? '' });
/** The service as deployed right: its settings name the four tables the account has, and no loan exists. */
function appSettings(azState: string): Record<string, unknown> {
  const id = randomUUID();
  const noSuchLoan = [0, 1].map((index) => ({
    code: 'InvalidLoanNumber' as const,
    detail: DETAILS.loanNotFound,
    index,
    loanNumber: SMOKE_LOAN,
    pointer: `/${index}/loanNumber`,
  }));
  return {
    azState,
    audiences: ['api://api-app-id-dev/.default', 'api://api-app-id-prod/.default'],
    settings: {
      partnersTable: 'Partners',
      loansTable: 'Loans',
      drawsTable: 'DrawRequests',
      idempotencyTable: 'IdempotencyKeys',
      stoppedClientsTable: 'StoppedClients',
    },
    tables: TABLES,
    loanNumbers: [],
    records: false,
    // The service's own answers (lib/problem.ts), as docs/contract.md §2.1-§2.4 and §4.5 give them.
    answers: {
      noToken: wire(unauthorized(id, false)),
      badToken: wire(unauthorized(id, true)),
      dependencyFailed: wire(dependencyFailed(id)),
      noSuchLoan: wire(badRequest(id, noSuchLoan, 2)),
      other: wire(badRequest(id, [{ code: 'InvalidRequest', detail: DETAILS.notArray }])),
      recorded: wire(accepted(id)),
    },
  };
}
function deployApp(change: (config: Record<string, unknown>) => void): void {
  const config = JSON.parse(readFileSync(appConfig, 'utf8')) as Record<string, unknown>;
  change(config);
  writeFileSync(appConfig, JSON.stringify(config));
}

/** A repository checkout with the environments bootstrapped (pipeline files filled in) and partners listed. */
interface Setup {
  readonly workspace: string;
  readonly zipSha: string;
  /** The stand-ins' folder (az, gh), put first on PATH. */
  readonly bin: string;
  readonly state: string;
  readonly log: string;
  readonly ghState: string;
  readonly ghLog: string;
  readonly artifacts: string;
}
/** A folder made by `make` (setting `dir` and the app's config), made once; each call returns a copy of it. */
function copied(make: () => Setup): () => Setup {
  let made: { dir: string; setup: Setup; appConfig: string; appLog?: string } | undefined;
  return () => {
    if (made === undefined) {
      const setup = make();
      scratchFolders.push(dir); // the original, copied for each test
      made = { dir, setup, appConfig: readFileSync(appConfig, 'utf8'), appLog: existsSync(appLog) ? readFileSync(appLog, 'utf8') : undefined };
    }
    const from = made.dir;
    const copy = mkdtempSync(join(tmpdir(), 'pipeline-'));
    cpSync(from, copy, { recursive: true });
    // The copy's own paths where the original's stood (the stand-ins' states and scripts name them).
    const moved = (text: string) => text.split(from).join(copy);
    for (const entry of readdirSync(copy, { recursive: true, withFileTypes: true })) {
      if (!entry.isFile()) continue;
      const file = join(entry.parentPath, entry.name);
      const bytes = readFileSync(file);
      if (bytes.includes(from)) writeFileSync(file, moved(bytes.toString('utf8')));
    }
    dir = copy;
    writeFileSync(appConfig, moved(made.appConfig));
    if (made.appLog === undefined) rmSync(appLog, { force: true });
    else writeFileSync(appLog, moved(made.appLog));
    return Object.fromEntries(Object.entries(made.setup).map(([k, v]) => [k, moved(v)])) as unknown as Setup;
  };
}
/**
 * A workspace as the platform team leaves it before main's first push: settings applied, prod at phase 1.
 * Made once (about 10 s of scripts); each test works on a copy of it.
 */
const workspace = copied(freshWorkspace);
/** Main's push (run PUSHED) that deployed both environments from such a workspace, its record and the sign-ins its jobs presented: made once too. */
const PUSHED = '900';
let pushRecord: RunRecord;
const pushTokens: Array<[string, string]> = [];
const pushed = copied(() => {
  const setup = workspace();
  pushTokens.length = 0;
  pushRecord = run('push', setup, PUSHED, undefined, { tokens: pushTokens });
  return setup;
});
function freshWorkspace(): Setup {
  dir = mkdtempSync(join(tmpdir(), 'pipeline-'));
  const ws = join(dir, 'repo');
  for (const part of ['infra', 'scripts', '.github']) cpSync(join(ROOT, part), join(ws, part), { recursive: true });
  for (const env of ['dev', 'prod'] as const) {
    const target = {
      githubRepository: FULL_NAME,
      tenantId: 'tenant-id',
      subscriptionId: '11111111-2222-4333-8444-555555555555',
      resourceGroup: `rg-drawreq-${env}`,
      ...TARGETS[env],
      requiredReviewers: env === 'prod',
      privateRunnerGroup: env === 'prod' ? PROD_RUNNER_GROUP : '',
    };
    writeFileSync(join(ws, 'infra', 'env', `${env}.pipeline.json`), JSON.stringify(target));
    const parametersFile = join(ws, 'infra', 'env', `${env}.parameters.json`);
    const parameters = JSON.parse(readFileSync(parametersFile, 'utf8')) as { parameters: Record<string, { value: unknown }> };
    parameters.parameters.partners = { value: PARTNERS[env] };
    // What a person fills in before prod's first deployment (docs/deploy.md, "What a person does").
    if (env === 'prod')
      Object.assign(parameters.parameters, {
        onCallActionGroupId: { value: '/subscriptions/s/resourceGroups/g/providers/Microsoft.Insights/actionGroups/on-call' },
        onCallGroupObjectId: { value: '6f1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d' },
        escalationContact: { value: 'Platform team, #drawreq-platform' },
        platformActionGroupId: { value: '/subscriptions/s/resourceGroups/g/providers/Microsoft.Insights/actionGroups/platform' },
        githubBusinessId: { value: '98765432' },
      });
    writeFileSync(parametersFile, JSON.stringify(parameters));
  }
  // The package the build job makes (npm run package is proven by the package tests).
  mkdirSync(join(ws, 'dist'));
  const zip = randomBytes(4096);
  writeFileSync(join(ws, 'dist', 'draw-request-service.zip'), zip);
  const bin = join(dir, 'bin');
  mkdirSync(bin);
  for (const cli of ['az', 'gh']) {
    writeFileSync(join(bin, cli), `#!/bin/sh\nexec "${process.execPath}" "${join(ROOT, 'tests', 'support', `${cli}StandIn.cjs`)}" "$@"\n`);
    chmodSync(join(bin, cli), 0o755);
  }
  const state = join(dir, 'az-state.json');
  writeFileSync(
    state,
    JSON.stringify({
      signedIn: { name: 'nobody', type: 'user' },
      functionAppUrl: url,
      groups: ['rg-drawreq-dev', 'rg-drawreq-prod'],
      deployments: {},
      tableAccess: TABLE_ACCESS,
      federatedCredentials: credentialsByIdentity([...CREDENTIALS.dev, ...CREDENTIALS.prod]),
    }),
  );
  const ghState = join(dir, 'gh-state.json');
  // Main's history as GitHub compares it: an old release's commit, the floor's commits, then the releases'.
  const history = [OLDER_COMMIT, ...FLOOR.map((l) => l.since), RELEASE_COMMIT];
  // GitHub's OIDC settings name the immutable prefix this repository's tokens carry (docs/deploy.md, "Which subject GitHub sends").
  const ids = { owner: Number(REPOSITORY.ownerId), repository: Number(REPOSITORY.id) };
  const subClaimPrefix = `repo:${REPOSITORY.owner}@${REPOSITORY.ownerId}/${REPOSITORY.name}@${REPOSITORY.id}`;
  writeFileSync(
    ghState,
    JSON.stringify({ repository: FULL_NAME, workflows: { 'deploy.yml': DEPLOY_WORKFLOW }, runs: {}, environments: {}, history, ids, subClaimPrefix }),
  );
  // GitHub's settings as a repository admin applies them (docs/deploy.md, "GitHub's settings as code").
  const ghEnv = {
    ...process.env,
    PATH: `${bin}:${process.env.PATH ?? ''}`,
    GH_STATE: ghState,
    GH_LOG: join(dir, 'gh-setup.log'),
    AZ_STATE: state,
    AZ_LOG: join(dir, 'az-setup.log'),
  };
  for (const args of [
    ['apply', 'dev'],
    ['apply', 'prod', '--reviewer-team', PROD_REVIEWERS],
  ]) {
    const applied = spawnSync(process.execPath, [join(ws, 'scripts', 'githubSettings.cjs'), ...args], { env: ghEnv, encoding: 'utf8' });
    if (applied.status !== 0) throw new Error(applied.stderr);
  }
  writeFileSync(appConfig, JSON.stringify({ ...appSettings(state), azLog: join(dir, 'az.log') }));
  rmSync(appLog, { force: true });
  // prod as it stands after phase 1 of docs/deploy.md's migration (isolated, storage still public), which
  // its parameters file, closing storage, must follow: deployed by the stand-in itself, then its log removed.
  const phase1 = join(dir, 'prod-phase1.parameters.json');
  const prod = JSON.parse(readFileSync(join(ws, 'infra', 'env', 'prod.parameters.json'), 'utf8')) as { parameters: Record<string, { value: unknown }> };
  prod.parameters.storagePublicAccess = { value: true };
  writeFileSync(phase1, JSON.stringify(prod));
  const seeded = spawnSync(
    join(bin, 'az'),
    [
      'deployment',
      'group',
      'create',
      '--name',
      'drawreq-prod-20261101000000',
      '--resource-group',
      'rg-drawreq-prod',
      '--template-file',
      'infra/main.bicep',
      '--parameters',
      `@${phase1}`,
    ],
    { cwd: ws, env: { ...process.env, AZ_STATE: state, AZ_LOG: join(dir, 'seed.log') }, encoding: 'utf8' },
  );
  if (seeded.status !== 0) throw new Error(seeded.stderr);
  return {
    workspace: ws,
    zipSha: createHash('sha256').update(zip).digest('hex'),
    bin,
    state,
    log: join(dir, 'az.log'),
    ghState,
    ghLog: join(dir, 'gh.log'),
    artifacts: join(dir, 'artifacts'),
  };
}

/** A workflow run as GitHub's REST API gives it (GET /repos/{owner}/{repo}/actions/runs/{run_id}): by default a release. */
function ghRun(id: string, fields: Record<string, unknown> = {}): Record<string, unknown> {
  const repository = { id: Number(REPOSITORY.id), name: REPOSITORY.name, full_name: FULL_NAME, fork: false };
  return {
    id: Number(id),
    name: 'deploy',
    head_branch: 'main',
    head_sha: RELEASE_COMMIT,
    path: DEPLOY_WORKFLOW.path,
    run_attempt: 1,
    event: 'push',
    status: 'completed',
    conclusion: 'success',
    workflow_id: DEPLOY_WORKFLOW.id,
    repository,
    head_repository: repository,
    ...fields,
  };
}
/** What GitHub records of a run, as the test's GitHub. */
function recordRun(setup: Setup, run: Record<string, unknown>): void {
  const state = JSON.parse(readFileSync(setup.ghState, 'utf8')) as { runs: Record<string, unknown> };
  state.runs[String(run.id)] = run;
  writeFileSync(setup.ghState, JSON.stringify(state));
}
afterEach(() => rmSync(dir, { recursive: true, force: true }));

/**
 * Microsoft Entra ID's side of azure/login: the token is exchanged for the client id's identity only if
 * exactly one of that identity's federated credentials matches it; otherwise the sign-in fails with the
 * error azure/login reports.
 */
function exchange(clientId: string, token: OidcToken, credentials: Record<'dev' | 'prod', FederatedCredential[]>): void {
  const target = IDENTITIES[clientId];
  const own = target === undefined ? [] : credentials[target.env].filter((c) => c.identity === target.identity);
  if (matching(own, token).length !== 1)
    throw new Error(`AADSTS700213: No matching federated identity record found for presented assertion subject '${token.sub}'.`);
}

/**
 * GitHub's side of a job naming an environment (docs: "Running a workflow that references an environment that
 * does not exist will create an environment with the referenced name", without protection rules; "Only
 * branches and tags that match your specified name patterns can deploy to the environment"): a missing one
 * is created, unprotected; an existing one with custom branch policies admits only a branch they name.
 * Environments created this way are recorded in the state, as GitHub would show them.
 */
function githubEnvironments(setup: Setup): (name: string, ref: string) => void {
  return (name, ref) => {
    const state = JSON.parse(readFileSync(setup.ghState, 'utf8')) as { environments: Record<string, GitHubEnvironment> };
    const environment = state.environments[name.toLowerCase()];
    if (environment === undefined) {
      state.environments[name.toLowerCase()] = { name, protection_rules: [], deployment_branch_policy: null, branch_policies: [], createdByAJob: true };
      writeFileSync(setup.ghState, JSON.stringify(state));
      return;
    }
    const branch = ref.replace(/^refs\/heads\//, '');
    if (
      environment.deployment_branch_policy?.custom_branch_policies === true &&
      !environment.branch_policies.some((p) => p.type === 'branch' && p.name === branch)
    )
      throw new Error(`Branch "${branch}" is not allowed to deploy to ${name} due to environment protection rules.`);
  };
}
interface GitHubEnvironment {
  name: string;
  protection_rules: Array<{ type: string; prevent_self_review?: boolean; reviewers?: unknown[] }>;
  deployment_branch_policy: { protected_branches: boolean; custom_branch_policies: boolean } | null;
  branch_policies: Array<{ id?: number; name: string; type: string }>;
  createdByAJob?: boolean;
}
const ghEnvironments = (setup: Setup): Record<string, GitHubEnvironment> =>
  (JSON.parse(readFileSync(setup.ghState, 'utf8')) as { environments: Record<string, GitHubEnvironment> }).environments;
/**
 * The repository as GitHub signs its jobs' tokens now: under the subject template the GitHub stand-in holds
 * (what scripts/githubSettings.cjs applied, or GitHub's default once reset), not the one the test expects.
 */
function signing(setup: Setup, repository: GitHubRepository = REPOSITORY): GitHubRepository {
  const state = JSON.parse(readFileSync(setup.ghState, 'utf8')) as { oidcSubject?: { use_default: boolean; include_claim_keys?: string[] } };
  return { ...repository, subjectClaimKeys: state.oidcSubject?.use_default === false ? state.oidcSubject.include_claim_keys : undefined };
}
function setGhState(setup: Setup, change: (state: Record<string, unknown> & { environments: Record<string, GitHubEnvironment> }) => void): void {
  const state = JSON.parse(readFileSync(setup.ghState, 'utf8')) as Record<string, unknown> & { environments: Record<string, GitHubEnvironment> };
  change(state);
  writeFileSync(setup.ghState, JSON.stringify(state));
}

function signIn(state: string, name: string, type: 'servicePrincipal' | 'user'): void {
  const current = JSON.parse(readFileSync(state, 'utf8')) as Record<string, unknown>;
  writeFileSync(state, JSON.stringify({ ...current, signedIn: { name, type } }));
}

const calls = (log: string): Call[] =>
  readFileSync(log, 'utf8')
    .trim()
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l) as Call);
const isCall = (c: Call, ...command: string[]) => command.every((word, i) => c.args[i] === word);
const groupOf = (c: Call) => c.args[c.args.indexOf('--resource-group') + 1];
const after = (c: Call, option: string) => c.args[c.args.indexOf(option) + 1];
/** The command without its options: `deployment group what-if`. */
const verb = (c: Call) =>
  c.args
    .slice(
      0,
      c.args.findIndex((a) => a.startsWith('-')),
    )
    .join(' ');

/** The environment of every step and script: the stand-ins first on PATH, with their state. */
const standInEnv = (setup: Setup): Record<string, string> => ({
  PATH: `${setup.bin}:${process.env.PATH ?? ''}`,
  HOME: dir,
  AZ_STATE: setup.state,
  AZ_LOG: setup.log,
  GH_STATE: setup.ghState,
  GH_LOG: setup.ghLog,
  GH_ARTIFACTS: setup.artifacts,
  // The packages `npm ci --omit=dev` installs on a runner (stop-client.yml): this checkout's.
  NODE_PATH: join(ROOT, 'node_modules'),
  NODE_EXTRA_CA_CERTS: tableCa,
  SMOKE_RETRY_SECONDS: '0',
  SMOKE_ATTEMPTS: '3',
  DEPLOY_RETRY_SECONDS: '0',
});

/**
 * Runs another workflow file of the workspace (or a branch's), as GitHub would on `ref`; records each token
 * its sign-ins present, then has Entra judge it against the bootstrap's credentials.
 */
function runOther(
  setup: Setup,
  file: string,
  run: {
    event: 'push' | 'workflow_dispatch';
    ref?: string;
    inputs?: Record<string, unknown>;
    runId: string;
    tokens: Array<[string, string]>;
    runner?: (runsOn: unknown) => Record<string, string>;
  },
): RunRecord {
  return runWorkflow(file, {
    workspace: setup.workspace,
    event: run.event,
    ref: run.ref,
    inputs: run.inputs,
    runId: run.runId,
    artifacts: setup.artifacts,
    env: standInEnv(setup),
    // npm ci's packages are this checkout's (NODE_PATH).
    skip: (step) => /^npm /.test(step.run ?? ''),
    repository: signing(setup),
    oidc,
    runner: run.runner ?? runnerEnv,
    environment: githubEnvironments(setup),
    login: (clientId, token) => {
      run.tokens.push([clientId, token.sub]);
      exchange(clientId, token, CREDENTIALS);
      signIn(setup.state, clientId, 'servicePrincipal');
    },
  });
}

/** Runs deploy.yml for `event`; GitHub knows the run (in progress, then its conclusion) as the provenance check reads it. */
function run(
  event: 'push' | 'pull_request' | 'workflow_dispatch',
  setup: Setup,
  runId: string,
  inputs?: Record<string, unknown>,
  github: {
    repository?: GitHubRepository;
    credentials?: Record<'dev' | 'prod', FederatedCredential[]>;
    tokens?: Array<[string, string]>;
    ref?: string;
    jobWorkflowFile?: (defined: string, caller: string) => string;
  } = {},
): RunRecord {
  const headBranch = event === 'pull_request' ? 'feature/clearer-rules' : 'main';
  recordRun(setup, ghRun(runId, { event, head_branch: headBranch, status: 'in_progress', conclusion: null }));
  let conclusion = 'failure';
  try {
    const record = runWorkflow('deploy.yml', {
      workspace: setup.workspace,
      event,
      ref: github.ref,
      inputs,
      runId,
      artifacts: setup.artifacts,
      env: standInEnv(setup),
      // The build's npm steps (.ci/run, npm run package) are proven by CI itself.
      skip: (step) => /^(npm |bash \.ci\/run)/.test(step.run ?? ''),
      repository: signing(setup, github.repository),
      oidc,
      jobWorkflowFile: github.jobWorkflowFile,
      runner: runnerEnv,
      environment: githubEnvironments(setup),
      login: (clientId, token) => {
        exchange(clientId, token, github.credentials ?? CREDENTIALS);
        github.tokens?.push([clientId, token.sub]);
        signIn(setup.state, clientId, 'servicePrincipal');
      },
    });
    conclusion = 'success';
    return record;
  } finally {
    recordRun(setup, ghRun(runId, { event, head_branch: headBranch, status: 'completed', conclusion }));
  }
}

describe('a push to main', () => {
  test('builds once; previews dev and prod as the read-only plan identity; dev: what-if, create, partners, the package, smoke; then prod the same; the same zip in both', () => {
    const setup = pushed();
    const record = pushRecord;
    const log = calls(setup.log);
    const changing = log.filter((c) => !isCall(c, 'account') && !(isCall(c, 'deployment', 'group', 'show') || isCall(c, 'deployment', 'group', 'list')));
    expect(changing.map((c) => `${c.as}: ${verb(c)}${c.args[0] === 'deployment' || c.args[0] === 'functionapp' ? ` ${groupOf(c)}` : ''}`)).toEqual([
      // The previews, before prod's reviewers are asked (deploy-prod needs them): read permissions only.
      'dev-plan-client: deployment group what-if rg-drawreq-dev',
      'prod-plan-client: deployment group what-if rg-drawreq-prod',
      'dev-deploy-client: deployment group what-if rg-drawreq-dev',
      'dev-deploy-client: group exists',
      'dev-deploy-client: deployment group create rg-drawreq-dev',
      'dev-deploy-client: storage entity insert',
      'dev-deploy-client: storage entity insert',
      'dev-deploy-client: storage entity insert',
      'dev-deploy-client: functionapp deploy rg-drawreq-dev',
      'prod-deploy-client: deployment group what-if rg-drawreq-prod',
      'prod-deploy-client: group exists',
      'prod-deploy-client: deployment group create rg-drawreq-prod',
      'prod-deploy-client: storage entity insert',
      'prod-deploy-client: storage entity insert',
      'prod-deploy-client: functionapp deploy rg-drawreq-prod',
    ]);
    expect(log.filter((c) => c.as.endsWith('-plan-client') && isCall(c, 'deployment')).map((c) => after(c, '--validation-level'))).toEqual([
      'ProviderNoRbac',
      'ProviderNoRbac',
    ]);
    // Every deployer's template call: the environment's own files; its deploying identity may write Partners and is the smoke identity.
    for (const c of log.filter(
      (c) => c.as.endsWith('-deploy-client') && (isCall(c, 'deployment', 'group', 'what-if') || isCall(c, 'deployment', 'group', 'create')),
    )) {
      const env = groupOf(c).replace('rg-drawreq-', '') as 'dev' | 'prod';
      expect(c.args).toEqual(
        expect.arrayContaining([
          '--template-file',
          'infra/main.bicep',
          `@infra/env/${env}.parameters.json`,
          `partnerWriterPrincipalId=${TARGETS[env].deployPrincipalId}`,
          'partnerWriterPrincipalType=ServicePrincipal',
          `smokeClientAppId=${TARGETS[env].deployClientId}`,
          `stopPrincipalId=${TARGETS[env].stopPrincipalId}`,
        ]),
      );
      expect(c.args).not.toContain('--validation-level');
      expect(c.cwd).toMatch(/release$/); // the artifact's own infra/ and scripts, not a checkout
    }
    const deploys = log.filter((c) => isCall(c, 'functionapp', 'deploy'));
    // The artifact's zip, downloaded by each environment's job: the bytes the build made.
    expect(deploys.map((c) => [after(c, '--name'), after(c, '--src-path').replace(/^.*\/runners\/[^/]+\//, ''), c.sha256])).toEqual([
      ['func-drawreq-dev-abc123', 'release/draw-request-service.zip', setup.zipSha],
      ['func-drawreq-prod-abc123', 'release/draw-request-service.zip', setup.zipSha],
    ]);
    // Each environment's smoke check: a token for its own API, as its deploying identity, after the code.
    const tokens = log.filter((c) => isCall(c, 'account', 'get-access-token'));
    expect(tokens.map((c) => [c.as, after(c, '--scope')])).toEqual([
      ['dev-deploy-client', 'api://api-app-id-dev/.default'],
      ['prod-deploy-client', 'api://api-app-id-prod/.default'],
    ]);
    expect(log.indexOf(tokens[0])).toBeGreaterThan(log.indexOf(deploys[0]));
    expect(appRequests().map((r) => [r.token, r.idempotencyKey])).toEqual([
      [false, null],
      [true, expect.stringMatching(SMOKE_KEY)],
      [false, null],
      [true, expect.stringMatching(SMOKE_KEY)],
    ]);
    // Each environment's deployment first proved it runs for main, and the run a release (this run, in progress, deploying its own build),
    // then chose its runner: dev (open) a GitHub-hosted one, prod (storage closed) its runner group, inside its network.
    const ran = record.steps.filter((s) => !s.endsWith(' (skipped)')); // a job's claims step runs only after a refused sign-in
    expect(ran.filter((s) => / > (provenance|deploy): /.test(s)).map((s) => s.replace(/: .*$/, ''))).toEqual([
      ...Array<string>(5).fill('deploy-dev > provenance'),
      ...Array<string>(6).fill('deploy-dev > deploy'),
      ...Array<string>(5).fill('deploy-prod > provenance'),
      ...Array<string>(6).fill('deploy-prod > deploy'),
    ]);
    expect([record.runners['deploy-dev > deploy'], record.runners['deploy-prod > deploy']]).toEqual(['ubuntu-24.04', { group: PROD_RUNNER_GROUP }]);
    expect(record.steps.filter((s) => s.endsWith('provenance: dispatched from main'))).toHaveLength(2);
    expect(Object.entries(record.summaries).map(([job, text]) => [job, text.split('\n')[0]])).toEqual([
      ['what-if (dev)', '### What-if: dev (rg-drawreq-dev)'],
      ['what-if (prod)', '### What-if: prod (rg-drawreq-prod)'],
      ['deploy-dev > deploy', '### What-if: dev (rg-drawreq-dev)'],
      ['deploy-prod > deploy', '### What-if: prod (rg-drawreq-prod)'],
    ]);
    // Each environment's protection and the subject template were checked before its deploy job, and no job created an environment.
    expect(record.steps.filter((s) => s.endsWith("provenance: the environment's protection and the OIDC subject template have not drifted"))).toHaveLength(2);
    expect(Object.values(ghEnvironments(setup)).filter((e) => e.createdByAJob === true)).toEqual([]);
  });

  test("each partner of the environment's parameters file gets its Partners row, inactive ones as inactive, and the smoke partner its own, signed in as the deployer", () => {
    const setup = pushed();
    const inserts = calls(setup.log).filter((c) => isCall(c, 'storage', 'entity', 'insert'));
    const row = (as: string, account: string, clientId: string, partnerId: string, active: boolean) => [
      as,
      account,
      'Partners',
      `PartitionKey=${clientId}`,
      'RowKey=',
      `PartnerId=${partnerId}`,
      `Active=${active}`,
      'Active@odata.type=Edm.Boolean',
    ];
    expect(
      inserts.map((c) => [
        c.as,
        after(c, '--account-name'),
        after(c, '--table-name'),
        ...c.args.slice(c.args.indexOf('--entity') + 1, c.args.indexOf('--entity') + 6),
      ]),
    ).toEqual([
      row('dev-deploy-client', 'stdrawreqdevabc123', PARTNERS.dev[0].clientAppId, 'PARTNER-001', true),
      row('dev-deploy-client', 'stdrawreqdevabc123', PARTNERS.dev[1].clientAppId, 'PARTNER-003', false),
      row('dev-deploy-client', 'stdrawreqdevabc123', TARGETS.dev.deployClientId, SMOKE_PARTNER, true),
      row('prod-deploy-client', 'stdrawreqprodabc123', PARTNERS.prod[0].clientAppId, 'PARTNER-001', true),
      row('prod-deploy-client', 'stdrawreqprodabc123', TARGETS.prod.deployClientId, SMOKE_PARTNER, true),
    ]);
    for (const c of inserts) expect(c.args).toEqual(expect.arrayContaining(['--auth-mode', 'login', '--if-exists', 'replace']));
  });
});

test('a pull request is built and tested, signs in to nothing, changes nothing and keeps no artifact (issue #40: no role of any environment)', () => {
  const setup = workspace();
  const tokens: Array<[string, string]> = [];
  const record = run('pull_request', setup, '902', undefined, { tokens });
  expect(tokens).toEqual([]);
  expect(existsSync(setup.log)).toBe(false); // no Azure call at all
  expect(record.steps.some((s) => s.startsWith('deploy-') || s.startsWith('what-if'))).toBe(false);
  expect(record.summaries).toEqual({});
  // Built and tested, never kept: there is no deployable artifact of a pull request to roll back to.
  expect(record.steps).toEqual(
    expect.arrayContaining([
      'build: artifact (the package, and the infra/ and scripts it is deployed with) (skipped)',
      'build: actions/upload-artifact@bbbca2ddaa5d8feaa63e36b76fdaad77386f024f (skipped)',
    ]),
  );
  expect(existsSync(join(setup.artifacts, '902'))).toBe(false);
});

test("a rollback re-deploys an earlier run's artifact to the chosen environment: its code only, then the smoke check", () => {
  const setup = pushed();
  rmSync(setup.log);
  rmSync(setup.ghLog);
  // A later release replaced the package in the workspace; the rollback must not pick it up.
  writeFileSync(join(setup.workspace, 'dist', 'draw-request-service.zip'), randomBytes(10));
  run('workflow_dispatch', setup, '904', { environment: 'prod', run_id: PUSHED, with_infrastructure: false });
  const log = calls(setup.log).filter((c) => !isCall(c, 'account') && !isCall(c, 'deployment', 'group', 'list'));
  expect(log.map((c) => [c.as, verb(c), groupOf(c), c.sha256])).toEqual([['prod-deploy-client', 'functionapp deploy', 'rg-drawreq-prod', setup.zipSha]]);
  // The run was read from GitHub (with deploy.yml's id), then prod's protection and the subject template,
  // before its artifact was downloaded.
  expect(ghCalls(setup)).toEqual([
    `api repos/${FULL_NAME}/actions/runs/${PUSHED}`,
    `api repos/${FULL_NAME}/actions/workflows/deploy.yml`,
    ...FLOOR.map((l) => `api repos/${FULL_NAME}/compare/${l.since}...${RELEASE_COMMIT}`),
    `api -X GET repos/${FULL_NAME}/environments/prod`,
    `api -X GET repos/${FULL_NAME}/environments/prod/deployment-branch-policies`,
    `api -X GET repos/${FULL_NAME}/actions/oidc/customization/sub`,
  ]);
});

const ghCalls = (setup: Setup): string[] =>
  existsSync(setup.ghLog)
    ? readFileSync(setup.ghLog, 'utf8')
        .trim()
        .split('\n')
        .filter((l) => l !== '')
        .map((l) => (JSON.parse(l) as { args: string[] }).args.join(' '))
    : [];

/**
 * An artifact kept under `runId` as GitHub keeps every run's upload: a pull request that edits deploy.yml
 * can upload one. Its deploy.sh is the attacker's: it leaves a mark and deploys, if it is ever run.
 */
function plantArtifact(setup: Setup, runId: string): string {
  const release = join(setup.artifacts, runId, 'draw-request-service');
  mkdirSync(join(release, 'scripts'), { recursive: true });
  cpSync(join(setup.workspace, 'infra'), join(release, 'infra'), { recursive: true });
  cpSync(join(setup.workspace, 'scripts', 'target.sh'), join(release, 'scripts', 'target.sh'));
  cpSync(join(setup.workspace, 'dist', 'draw-request-service.zip'), join(release, 'draw-request-service.zip'));
  writeFileSync(join(release, 'build.json'), JSON.stringify({ commit: 'bad'.padEnd(40, '0'), run: runId }));
  const mark = join(dir, `ran-the-artifact-of-${runId}`);
  writeFileSync(
    join(release, 'scripts', 'deploy.sh'),
    `#!/usr/bin/env bash\ntouch "${mark}"\ncd "$(dirname "$0")/.."\naz deployment group create --resource-group rg-drawreq-dev --template-file infra/main.bicep --parameters @infra/env/dev.parameters.json\n`,
  );
  return mark;
}

/** The stable codes a refusal lists (`  ERR_…: …` lines), in order. */
const codesIn = (stderr: string): string[] => [...stderr.matchAll(/^ {2}(ERR_[A-Z_]+): /gm)].map((m) => m[1]);
/** What the provenance check refused a run for: its stable codes, in order. */
const refusalCodes = (failure: StepFailed): string[] => [...failure.stderr.matchAll(/^ {2}(ERR_[A-Z_]+): /gm)].map((m) => m[1]);

function refusal(action: () => unknown): StepFailed {
  try {
    action();
  } catch (error) {
    if (error instanceof StepFailed) return error;
    throw error;
  }
  throw new Error('the run was not refused');
}

describe('a rollback deploys only a release: a successful push to main of deploy.yml in this repository', () => {
  const refused: Array<[string, Record<string, unknown>, string[]]> = [
    ["a pull request's run", { event: 'pull_request', head_branch: 'feature/clearer-rules' }, ['ERR_RUN_EVENT', 'ERR_RUN_BRANCH']],
    ['a failed run', { conclusion: 'failure' }, ['ERR_RUN_CONCLUSION']],
    ['a run still in progress', { status: 'in_progress', conclusion: null }, ['ERR_RUN_CONCLUSION']],
    ["another workflow's run", { path: '.github/workflows/nightly.yml', workflow_id: 161_400 }, ['ERR_RUN_WORKFLOW']],
    [
      "a fork's pull request from its main",
      { event: 'pull_request', head_repository: { id: 900_013, name: REPOSITORY.name, full_name: `mallory/${REPOSITORY.name}`, fork: true } },
      ['ERR_RUN_EVENT', 'ERR_RUN_FORK'],
    ],
    ['a run of another branch', { head_branch: 'release/2026-11' }, ['ERR_RUN_BRANCH']],
  ];

  test.each(refused)('%s is refused, naming why; nothing is downloaded, signed in to or deployed', (_name, fields, codes) => {
    const setup = workspace();
    const mark = plantArtifact(setup, '920');
    recordRun(setup, ghRun('920', fields));
    const failure = refusal(() => run('workflow_dispatch', setup, '921', { environment: 'dev', run_id: '920', with_infrastructure: true }));
    expect(failure.step).toMatch(/^rollback > provenance: /);
    expect(refusalCodes(failure)).toEqual(codes);
    expect(failure.stderr).toContain(`run 920 is not a release of ${FULL_NAME}; nothing of it is downloaded or deployed`);
    // The deploy job never started: no download, no sign-in, no Azure call, the artifact's script never ran.
    expect(failure.record.steps.filter((s) => s.startsWith('rollback > deploy'))).toEqual([]);
    expect(existsSync(setup.log)).toBe(false);
    expect(existsSync(mark)).toBe(false);
    expect(ghCalls(setup)).toEqual([`api repos/${FULL_NAME}/actions/runs/920`, `api repos/${FULL_NAME}/actions/workflows/deploy.yml`]);
  });

  test('a run GitHub does not know in this repository (another repository’s id) is refused', () => {
    const setup = workspace();
    plantArtifact(setup, '930');
    recordRun(setup, ghRun('930', { repository: { id: 5, full_name: 'someone/else', fork: false } }));
    const failure = refusal(() => run('workflow_dispatch', setup, '931', { environment: 'prod', run_id: '930', with_infrastructure: false }));
    expect(refusalCodes(failure)).toEqual(['ERR_RUN_UNREADABLE']);
    expect(existsSync(setup.log)).toBe(false);
  });

  test("a fork's run is refused in the fork: github.repository is not the repository infra/env/<env>.pipeline.json pins", () => {
    const setup = workspace();
    const mark = plantArtifact(setup, '950');
    const fork: GitHubRepository = { owner: 'mallory', ownerId: '900', name: REPOSITORY.name, id: '900013', immutableSubject: true };
    const forkRepository = { id: 900_013, name: REPOSITORY.name, full_name: `mallory/${REPOSITORY.name}`, fork: true };
    // The fork's own successful push to its main: to GitHub, in the fork, every other check passes.
    const state = JSON.parse(readFileSync(setup.ghState, 'utf8')) as Record<string, unknown>;
    writeFileSync(setup.ghState, JSON.stringify({ ...state, repository: forkRepository.full_name }));
    recordRun(setup, ghRun('950', { repository: forkRepository, head_repository: forkRepository }));
    const failure = refusal(() =>
      run('workflow_dispatch', setup, '951', { environment: 'dev', run_id: '950', with_infrastructure: true }, { repository: fork }),
    );
    expect(failure.step).toMatch(/^rollback > provenance: /);
    expect(refusalCodes(failure)).toEqual(['ERR_REPOSITORY_MISMATCH']);
    expect(ghCalls(setup)).toEqual([]);
    expect(existsSync(setup.log)).toBe(false);
    expect(existsSync(mark)).toBe(false);
  });

  test('a dispatch from another branch is refused before anything is checked out or read: only main deploys', () => {
    const setup = workspace();
    const mark = plantArtifact(setup, '960');
    recordRun(setup, ghRun('960'));
    const inputs = { environment: 'prod', run_id: '960', with_infrastructure: true };
    const failure = refusal(() => run('workflow_dispatch', setup, '961', inputs, { ref: 'refs/heads/release/2026-11' }));
    expect(failure.step).toBe('rollback > provenance: dispatched from main');
    expect(refusalCodes(failure)).toEqual(['ERR_REF_NOT_MAIN']);
    expect(failure.stderr).toContain('refs/heads/release/2026-11');
    expect(failure.record.steps.filter((s) => s.startsWith('rollback > deploy'))).toEqual([]);
    expect(ghCalls(setup)).toEqual([]);
    expect(existsSync(setup.log)).toBe(false);
    expect(existsSync(mark)).toBe(false);
  });

  test('GitHub unreadable (a bad token, a rate limit, no gh) is refused, naming what failed, and never a token', () => {
    const setup = workspace();
    plantArtifact(setup, '970');
    recordRun(setup, ghRun('970'));
    const state = JSON.parse(readFileSync(setup.ghState, 'utf8')) as Record<string, unknown>;
    writeFileSync(setup.ghState, JSON.stringify({ ...state, apiError: 'gh: Bad credentials (HTTP 401) ghp_Secret0123456789\nmore detail' }));
    const failure = refusal(() => run('workflow_dispatch', setup, '971', { environment: 'dev', run_id: '970', with_infrastructure: false }));
    expect(refusalCodes(failure)).toEqual(['ERR_RUN_UNREADABLE']);
    expect(failure.stderr).toContain('gh exited 1: gh: Bad credentials (HTTP 401) [token]');
    expect(failure.stderr).not.toContain('ghp_Secret');
    expect(failure.stderr).not.toContain('more detail');
    expect(existsSync(setup.log)).toBe(false);
    const noGh = spawnSync(process.execPath, [join(setup.workspace, 'scripts', 'provenance.cjs'), '970', '--environment', 'dev', '--repository', FULL_NAME], {
      env: { PATH: join(dir, 'nowhere') },
      encoding: 'utf8',
    });
    expect(noGh.status).toBe(1);
    expect(noGh.stderr).toContain('ERR_RUN_UNREADABLE: ');
    expect(noGh.stderr).toContain('gh was not found');
  });

  test("a release older than the tables' layout (infra/rollbackFloor.json) is refused, naming each layout, why and what to do first; nothing is downloaded", () => {
    const setup = workspace();
    const mark = plantArtifact(setup, '945');
    recordRun(setup, ghRun('945', { head_sha: OLDER_COMMIT }));
    const failure = refusal(() => run('workflow_dispatch', setup, '946', { environment: 'prod', run_id: '945', with_infrastructure: false }));
    expect(failure.step).toMatch(/^rollback > provenance: /);
    expect(refusalCodes(failure)).toEqual(FLOOR.map(() => 'ERR_RUN_BEFORE_LAYOUT'));
    expect(failure.stderr).toContain("run 945 is older than the tables' current layout is safe with (infra/rollbackFloor.json)");
    for (const layout of FLOOR)
      expect(failure.stderr).toContain(`its commit ${OLDER_COMMIT} does not contain ${layout.since} (${layout.table}): releases before it`);
    expect(failure.stderr).toContain("every stopped client's tokens are accepted again");
    expect(failure.stderr).toContain(`First: ${FLOOR[0].first}`);
    expect(failure.record.steps.filter((s) => s.startsWith('rollback > deploy'))).toEqual([]);
    expect(existsSync(setup.log)).toBe(false);
    expect(existsSync(mark)).toBe(false);
    // GitHub unable to compare (the commit unknown to it): refused all the same, with GitHub's reason.
    recordRun(setup, ghRun('947', { head_sha: 'feed'.padEnd(40, '0') }));
    const unproven = refusal(() => run('workflow_dispatch', setup, '948', { environment: 'prod', run_id: '947', with_infrastructure: false }));
    expect(refusalCodes(unproven)).toEqual(FLOOR.map(() => 'ERR_LAYOUT_UNPROVEN'));
    expect(unproven.stderr).toContain('gh exited 1: gh: Not Found (HTTP 404)');
    expect(existsSync(mark)).toBe(false);
  });

  test('the same artifact, from a release, is deployed: the check can pass', () => {
    const setup = workspace();
    const mark = plantArtifact(setup, '940');
    // The form of `path` GitHub's OpenAPI description shows: this repository's deploy.yml all the same.
    recordRun(setup, ghRun('940', { path: `${FULL_NAME}/.github/workflows/deploy.yml@refs/heads/main` }));
    // The planted script deploys dev's template whatever it is asked: proof that this artifact's own script ran.
    run('workflow_dispatch', setup, '941', { environment: 'dev', run_id: '940', with_infrastructure: false });
    expect(existsSync(mark)).toBe(true);
    expect(calls(setup.log).map(verb)).toEqual(['deployment group create']);
  });
});

describe('scripts/deploy.sh by hand', () => {
  const deploy = (setup: Setup, args: string[], extraPath = '') =>
    spawnSync('bash', [join(setup.workspace, 'scripts', 'deploy.sh'), ...args], {
      env: { ...standInEnv(setup), PATH: `${extraPath}${setup.bin}:${process.env.PATH ?? ''}` },
      encoding: 'utf8',
      input: '',
    });

  test('a person deploys everything in the same order, as themself (a User may write Partners), building the package when none is given', () => {
    const setup = workspace();
    signIn(setup.state, 'jane@lender.example', 'user');
    // npm stands in for `npm ci && npm run package`: it leaves the package where npm run package does.
    const npmDir = join(dir, 'npm-bin');
    mkdirSync(npmDir);
    writeFileSync(
      join(npmDir, 'npm'),
      `#!/bin/sh\necho "npm $*" >> "${join(dir, 'npm.log')}"\n[ "$2" = package ] && cp "${join(setup.workspace, 'dist', 'draw-request-service.zip')}" dist/ 2>/dev/null; exit 0\n`,
    );
    chmodSync(join(npmDir, 'npm'), 0o755);
    const result = deploy(setup, ['dev', '--yes'], `${npmDir}:`);
    expect(result.stderr).toBe('');
    expect(result.status).toBe(0);
    expect(readFileSync(join(dir, 'npm.log'), 'utf8')).toBe('npm ci --no-audit --no-fund\nnpm run package\n');
    const log = calls(setup.log).filter((c) => !isCall(c, 'account') && !isCall(c, 'deployment', 'group', 'show'));
    expect(log.map(verb)).toEqual([
      'ad signed-in-user show',
      'deployment group what-if',
      'group exists',
      'deployment group create',
      'storage entity insert',
      'storage entity insert',
      'storage entity insert',
      'functionapp deploy',
    ]);
    // The smoke identity is the environment's deploying identity, whoever deploys: its grant and row stay.
    expect(log[1].args).toEqual(
      expect.arrayContaining(['partnerWriterPrincipalId=object-id-of-the-person', 'partnerWriterPrincipalType=User', 'smokeClientAppId=dev-deploy-client']),
    );
    // A person cannot get the smoke identity's token: only the check without a token runs, and says so.
    expect(result.stdout).toContain('smoke check: signed in as jane@lender.example, not the smoke identity (dev-deploy-client)');
    expect(result.stdout).toContain('The deployed settings are NOT proven');
    expect(appRequests().map((r) => r.token)).toEqual([false]);
  });

  test('--what-if previews only; --code-only deploys the given package to the last deployment and smoke-checks it', () => {
    const setup = workspace();
    signIn(setup.state, 'deployer', 'servicePrincipal');
    expect(deploy(setup, ['dev', '--what-if']).status).toBe(0);
    expect(
      calls(setup.log)
        .filter((c) => !isCall(c, 'account'))
        .map(verb),
    ).toEqual(['ad sp show', 'deployment group what-if']);
    rmSync(setup.log);
    expect(deploy(setup, ['dev', '--infra-only', '--yes']).status).toBe(0);
    rmSync(setup.log);
    const zip = join(setup.workspace, 'dist', 'draw-request-service.zip');
    const result = deploy(setup, ['dev', '--code-only', '--package', zip]);
    expect(result.status).toBe(0);
    const log = calls(setup.log).filter((c) => !isCall(c, 'account'));
    expect(log.map(verb)).toEqual(['deployment group list', 'deployment group list', 'functionapp deploy']);
    expect(after(log[2], '--name')).toBe('func-drawreq-dev-abc123');
  });

  test('refuses what it cannot do, before any Azure call: unknown options, a missing package, placeholders left', () => {
    const setup = workspace();
    expect(deploy(setup, ['staging']).status).toBe(2);
    expect(deploy(setup, ['dev', '--bogus']).status).toBe(2);
    expect(deploy(setup, ['dev', '--step', 'everything']).status).toBe(2);
    const parametersFile = join(setup.workspace, 'infra', 'env', 'dev.parameters.json');
    writeFileSync(parametersFile, readFileSync(parametersFile, 'utf8').replace('"UTC"', '"REPLACE-WITH-TIME-ZONE"'));
    const placeholder = deploy(setup, ['dev', '--what-if']);
    expect(placeholder.status).toBe(1);
    expect(placeholder.stderr).toContain('still has placeholders');
    expect(() => calls(setup.log)).toThrow(); // no call was made: no log at all
  });

  test("prod as the repository ships it is refused until a person fills in its placeholders, each named, with docs/deploy.md's checklist naming each", () => {
    const setup = workspace();
    cpSync(join(ROOT, 'infra', 'env', 'prod.parameters.json'), join(setup.workspace, 'infra', 'env', 'prod.parameters.json'));
    const refused = deploy(setup, ['prod', '--what-if']);
    expect(refused.status).toBe(1);
    expect(refused.stderr).toContain('infra/env/prod.parameters.json still has placeholders; fill them in (docs/deploy.md) and commit:');
    const named = [...refused.stderr.matchAll(/^\d+:\s+"(\w+)"/gm)].map((m) => m[1]);
    expect(named.sort()).toEqual(['escalationContact', 'githubBusinessId', 'onCallActionGroupId', 'onCallGroupObjectId', 'platformActionGroupId']);
    const checklist = /^## (?:\d+\. )?What a person does\n([^]*?)^## /m.exec(readFileSync(join(ROOT, 'docs', 'deploy.md'), 'utf8'))?.[1] ?? '';
    for (const name of named) expect({ name, inChecklist: checklist.includes(`\`${name}\``) }).toEqual({ name, inChecklist: true });
    expect(() => calls(setup.log)).toThrow(); // no Azure call was made
  });

  describe('the smoke check proves the deployed settings with the smoke identity’s token', () => {
    /** dev's infrastructure and Partners rows deployed by its deploying identity, which then runs the smoke step: deployed once, each test a copy. */
    const deployed = copied(() => {
      const setup = workspace();
      signIn(setup.state, TARGETS.dev.deployClientId, 'servicePrincipal');
      const result = deploy(setup, ['dev', '--infra-only', '--yes']);
      if (result.status !== 0) throw new Error(`deploy.sh dev --infra-only failed (${result.status}):\n${result.stdout}\n${result.stderr}`);
      rmSync(setup.log);
      return setup;
    });
    const smoke = (setup: Setup) => deploy(setup, ['dev', '--step', 'smoke']);
    const failureCode = (stderr: string) => /^smoke check failed \((SMOKE_[A-Z_]+)\): /m.exec(stderr)?.[1];

    test('all right: 401 without a token, then the 400 only the right settings give; nothing was asked to be written', () => {
      const setup = deployed();
      const result = smoke(setup);
      expect(result.stderr).toBe('');
      expect(result.status).toBe(0);
      expect(result.stdout).toContain(
        `smoke check passed: without a token 401; with the smoke identity's token 400 Invalid Loan Number for reserved loan ${SMOKE_LOAN}`,
      );
      expect(appRequests().map((r) => [r.token, r.idempotencyKey])).toEqual([
        [false, null],
        [true, expect.stringMatching(SMOKE_KEY)],
      ]);
      const log = calls(setup.log);
      expect(log.map((c) => `${c.as}: ${verb(c)}`)).toEqual([
        'dev-deploy-client: account show',
        'dev-deploy-client: deployment group list',
        'dev-deploy-client: deployment group list',
        'dev-deploy-client: account show',
        'dev-deploy-client: deployment group list',
        'dev-deploy-client: account get-access-token',
      ]);
      expect(after(log[5], '--scope')).toBe('api://api-app-id-dev/.default');
    });

    test('a wrong audience (AUTH_AUDIENCE is not the API application the token is for): 401, failing and naming the auth settings', () => {
      const setup = deployed();
      deployApp((config) => (config.audiences = ['api://some-other-application/.default']));
      const result = smoke(setup);
      expect(result.status).toBe(1);
      expect(failureCode(result.stderr)).toBe('SMOKE_AUTH');
      expect(result.stderr).toMatch(/AUTH_TENANT_ID or AUTH_AUDIENCE/);
    });

    test('no Partners row for the smoke identity: 401, failing and naming the Partners row', () => {
      const setup = deployed();
      const state = JSON.parse(readFileSync(setup.state, 'utf8')) as Record<string, unknown>;
      writeFileSync(setup.state, JSON.stringify({ ...state, tables: {} }));
      const result = smoke(setup);
      expect(failureCode(result.stderr)).toBe('SMOKE_AUTH');
      expect(result.stderr).toMatch(/Partners row/);
      // 401 may be a grant still replicating: asked again, as many times as allowed.
      expect(appRequests().filter((r) => r.token)).toHaveLength(3);
    });

    test('a table name the storage account does not have (LOANS_TABLE): 502, failing and naming storage', () => {
      const setup = deployed();
      deployApp((config) => ((config.settings as Record<string, string>).loansTable = 'Loan'));
      const result = smoke(setup);
      expect(result.status).toBe(1);
      expect(failureCode(result.stderr)).toBe('SMOKE_STORAGE');
      expect(result.stderr).toMatch(/storage, that is TABLES_ENDPOINT, a table name/);
    });

    test('an unexpected 204 (the service recorded what it must refuse): failing at once, not asked again', () => {
      const setup = deployed();
      deployApp((config) => (config.records = true));
      const result = smoke(setup);
      expect(result.status).toBe(1);
      expect(failureCode(result.stderr)).toBe('SMOKE_RECORDED');
      expect(appRequests().filter((r) => r.token)).toHaveLength(1);
    });

    test('the reserved loan exists: the answer is not the one the settings prove, failing at once', () => {
      const setup = deployed();
      deployApp((config) => (config.loanNumbers = [SMOKE_LOAN]));
      const result = smoke(setup);
      expect(failureCode(result.stderr)).toBe('SMOKE_UNEXPECTED');
      expect(result.stderr).toContain(`A Loans row ${SMOKE_LOAN} must not exist`);
    });

    test('the smoke identity was never granted the app role (a deployment before it was one): no token, failing before any request', () => {
      const setup = deployed();
      const state = JSON.parse(readFileSync(setup.state, 'utf8')) as {
        deployments: Record<string, Array<{ properties: { outputs: Record<string, { value: unknown }> } }>>;
      };
      for (const d of state.deployments['rg-drawreq-dev']) d.properties.outputs.partnerRows.value = [];
      writeFileSync(setup.state, JSON.stringify(state));
      const result = smoke(setup);
      expect(result.status).toBe(1);
      expect(result.stderr).toMatch(/AADSTS501051/);
      expect(result.stderr).toMatch(/^smoke check failed \(SMOKE_NO_TOKEN\): /m);
      expect(appRequests()).toEqual([]);
    });

    test('without a token the service must refuse: a 400 means authentication is off, failing at once', () => {
      const setup = deployed();
      deployApp(
        (config) => ((config.answers as Record<string, unknown>).noToken = wire(badRequest('x', [{ code: 'InvalidRequest', detail: DETAILS.notArray }]))),
      );
      const result = smoke(setup);
      expect(failureCode(result.stderr)).toBe('SMOKE_UNAUTHENTICATED');
      expect(appRequests()).toHaveLength(1);
    });
  });

  describe("scripts/rollback.sh: a person re-deploys a run's artifact with that artifact's own script, once GitHub proves the run a release", () => {
    /** The workspace's own rollback.sh, as a person runs it from their checkout. */
    const rollback = (setup: Setup, ...args: string[]) =>
      spawnSync('bash', [join(setup.workspace, 'scripts', 'rollback.sh'), ...args], { env: standInEnv(setup), encoding: 'utf8' });
    const git = (setup: Setup, ...args: string[]) => {
      const result = spawnSync('git', ['-c', 'user.name=Jane', '-c', 'user.email=jane@lender.example', '-c', 'commit.gpgsign=false', ...args], {
        cwd: setup.workspace,
        encoding: 'utf8',
      });
      if (result.status !== 0) throw new Error(`git ${args.join(' ')}: ${result.stderr}`);
      return result.stdout.trim();
    };
    /** The workspace made a git checkout of main, and GitHub's main of the pinned repository that same commit. */
    function cleanMain(setup: Setup): string {
      git(setup, 'init', '--quiet', '--initial-branch=main');
      git(setup, 'add', '--all');
      git(setup, 'commit', '--quiet', '--message', 'main');
      const sha = git(setup, 'rev-parse', 'HEAD');
      const state = JSON.parse(readFileSync(setup.ghState, 'utf8')) as Record<string, unknown>;
      writeFileSync(setup.ghState, JSON.stringify({ ...state, branches: { [FULL_NAME]: { main: sha } } }));
      return sha;
    }
    const codesOf = (stderr: string) => [...stderr.matchAll(/^ {2}(ERR_[A-Z_]+): /gm)].map((m) => m[1]);

    test('a release is fetched with the GitHub CLI, from the repository it was proven in, and deployed', () => {
      const setup = pushed();
      rmSync(setup.log);
      rmSync(setup.ghLog);
      cleanMain(setup);
      signIn(setup.state, 'jane@lender.example', 'user');
      const result = rollback(setup, 'prod', PUSHED);
      expect(result.stderr).toBe('');
      expect(result.status).toBe(0);
      expect(ghCalls(setup).map((c) => c.replace(/--dir \S+$/, '--dir <temporary>'))).toEqual([
        'repo view --json nameWithOwner',
        `api repos/${FULL_NAME}/branches/main`,
        `api repos/${FULL_NAME}/actions/runs/${PUSHED}`,
        `api repos/${FULL_NAME}/actions/workflows/deploy.yml`,
        ...FLOOR.map((l) => `api repos/${FULL_NAME}/compare/${l.since}...${RELEASE_COMMIT}`),
        `run download ${PUSHED} --repo ${FULL_NAME} --name draw-request-service --dir <temporary>`,
      ]);
      expect(result.stdout).toContain(`run ${PUSHED} is a release: a successful push to main of .github/workflows/deploy.yml in ${FULL_NAME}`);
      expect(result.stdout).toContain(`re-deploying run ${PUSHED}: {"commit":"c0ffee`);
      const log = calls(setup.log).filter((c) => !isCall(c, 'account') && !isCall(c, 'deployment', 'group', 'list'));
      expect(log.map((c) => [c.as, verb(c), groupOf(c), c.sha256])).toEqual([['jane@lender.example', 'functionapp deploy', 'rg-drawreq-prod', setup.zipSha]]);
      expect(rollback(setup, 'prod', 'latest').status).toBe(2);
    });

    test("a release older than the tables' layout is refused by hand too, before anything is downloaded", () => {
      const setup = workspace();
      const mark = plantArtifact(setup, '904');
      recordRun(setup, ghRun('904', { head_sha: OLDER_COMMIT }));
      cleanMain(setup);
      signIn(setup.state, 'jane@lender.example', 'user');
      const result = rollback(setup, 'prod', '904');
      expect(result.status).toBe(1);
      expect(codesOf(result.stderr)).toEqual(FLOOR.map(() => 'ERR_RUN_BEFORE_LAYOUT'));
      expect(result.stderr).toContain(`First: ${FLOOR[1].first}`);
      expect(ghCalls(setup).some((c) => c.startsWith('run download'))).toBe(false);
      expect(existsSync(setup.log)).toBe(false);
      expect(existsSync(mark)).toBe(false);
    });

    test("a pull request's run is refused by hand too, before anything is downloaded", () => {
      const setup = workspace();
      const mark = plantArtifact(setup, '906');
      recordRun(setup, ghRun('906', { event: 'pull_request', head_branch: 'feature/clearer-rules' }));
      cleanMain(setup);
      signIn(setup.state, 'jane@lender.example', 'user');
      const result = rollback(setup, 'dev', '906', '--with-infrastructure');
      expect(result.status).toBe(1);
      expect([...result.stderr.matchAll(/^ {2}(ERR_[A-Z_]+): /gm)].map((m) => m[1])).toEqual(['ERR_RUN_EVENT', 'ERR_RUN_BRANCH']);
      expect(ghCalls(setup).some((c) => c.startsWith('run download'))).toBe(false);
      expect(existsSync(setup.log)).toBe(false);
      expect(existsSync(mark)).toBe(false);
    });

    test("in a fork's clone (or GH_REPO naming the fork), the fork's own successful push to its main is refused: the repository is the pinned one", () => {
      const setup = workspace();
      const mark = plantArtifact(setup, '907');
      const fork = { id: 900_013, name: REPOSITORY.name, full_name: `mallory/${REPOSITORY.name}`, fork: true };
      // To GitHub it is a release of the fork: a successful push to the fork's main of its deploy.yml.
      recordRun(setup, ghRun('907', { repository: fork, head_repository: fork }));
      cleanMain(setup);
      const state = JSON.parse(readFileSync(setup.ghState, 'utf8')) as Record<string, unknown>;
      writeFileSync(setup.ghState, JSON.stringify({ ...state, repository: fork.full_name }));
      signIn(setup.state, 'jane@lender.example', 'user');
      const result = rollback(setup, 'dev', '907', '--with-infrastructure');
      expect(result.status).toBe(1);
      expect(codesOf(result.stderr)).toEqual(['ERR_REPOSITORY_MISMATCH']);
      expect(result.stderr).toContain(`asked from mallory/${REPOSITORY.name}`);
      expect(result.stderr).toContain(`pins ${FULL_NAME}`);
      expect(ghCalls(setup)).toEqual(['repo view --json nameWithOwner']);
      expect(existsSync(setup.log)).toBe(false);
      expect(existsSync(mark)).toBe(false);
    });

    test('no pinned repository (a pipeline file before the pin): refused before gh is asked anything', () => {
      const setup = pushed();
      rmSync(setup.log);
      rmSync(setup.ghLog);
      const file = join(setup.workspace, 'infra', 'env', 'prod.pipeline.json');
      const unpinned = JSON.parse(readFileSync(file, 'utf8')) as Record<string, string>;
      delete unpinned.githubRepository;
      writeFileSync(file, JSON.stringify(unpinned));
      cleanMain(setup);
      const result = rollback(setup, 'prod', PUSHED);
      expect(result.status).toBe(1);
      expect(codesOf(result.stderr)).toEqual(['ERR_REPOSITORY_UNPINNED']);
      expect(ghCalls(setup)).toEqual([]);
      expect(existsSync(setup.log)).toBe(false);
    });

    /** A checker that passes everything: what an unreviewed branch could hold. */
    const looseChecker = (setup: Setup) =>
      writeFileSync(join(setup.workspace, 'scripts', 'provenance.cjs'), "process.stdout.write('every run is a release\\n');\n");

    test('a checker edited in the checkout is never run: local changes are refused before the run is read', () => {
      const setup = workspace();
      const mark = plantArtifact(setup, '909');
      recordRun(setup, ghRun('909', { event: 'pull_request', head_branch: 'feature/clearer-rules' }));
      cleanMain(setup);
      looseChecker(setup);
      signIn(setup.state, 'jane@lender.example', 'user');
      const result = rollback(setup, 'dev', '909');
      expect(result.status).toBe(1);
      expect(codesOf(result.stderr)).toEqual(['ERR_CHECKOUT_CHANGED']);
      expect(result.stderr).toContain('local changes (scripts/provenance.cjs)');
      expect(result.stdout).not.toContain('every run is a release');
      expect(ghCalls(setup)).toEqual(['repo view --json nameWithOwner', `api repos/${FULL_NAME}/branches/main`]);
      expect(existsSync(setup.log)).toBe(false);
      expect(existsSync(mark)).toBe(false);
    });

    test("another branch checked out (its own checker committed) is refused: only GitHub's main of the pinned repository runs the check", () => {
      const setup = workspace();
      const mark = plantArtifact(setup, '910');
      recordRun(setup, ghRun('910', { event: 'pull_request', head_branch: 'feature/clearer-rules' }));
      const main = cleanMain(setup);
      git(setup, 'switch', '--quiet', '--create', 'feature/clearer-rules');
      looseChecker(setup);
      git(setup, 'commit', '--quiet', '--all', '--message', 'a looser checker');
      signIn(setup.state, 'jane@lender.example', 'user');
      const result = rollback(setup, 'dev', '910');
      expect(result.status).toBe(1);
      expect(codesOf(result.stderr)).toEqual(['ERR_CHECKOUT_NOT_MAIN']);
      expect(result.stderr).toContain(`not ${FULL_NAME}'s main (${main})`);
      expect(existsSync(setup.log)).toBe(false);
      expect(existsSync(mark)).toBe(false);
      // Not a git checkout at all (a copied folder) proves nothing either.
      rmSync(join(setup.workspace, '.git'), { recursive: true, force: true });
      const copied = rollback(setup, 'dev', '910');
      expect(codesOf(copied.stderr)).toEqual(['ERR_CHECKOUT_NOT_MAIN']);
      expect(copied.stderr).toContain('is at not a git checkout');
      expect(existsSync(mark)).toBe(false);
    });
  });

  test('scripts/target.sh refuses an environment not bootstrapped yet, naming what to fill in', () => {
    const result = spawnSync('bash', [join(ROOT, 'scripts', 'target.sh'), 'prod'], { encoding: 'utf8' });
    expect(result.status).toBe(1);
    expect(result.stderr).toMatch(
      /prod\.pipeline\.json: set tenantId, subscriptionId, deployClientId, deployPrincipalId, planClientId, stopClientId, stopPrincipalId, storageAccountName from the outputs of infra\/bootstrap\.bicep/,
    );
  });
});

describe("sign-in (issue #40): each job presents the token GitHub gives it, and only main's run of the identity's own workflow file signs in", () => {
  /** The subject GitHub gives a job of `file` on `ref` under the repository's template (scripts/githubSettings.cjs). */
  const subject = (repository: GitHubRepository, file: string, environment?: string, ref = 'refs/heads/main') =>
    githubSubject(repository, { environment, event: 'push', ref, jobWorkflowRef: `${repository.owner}/${repository.name}/.github/workflows/${file}@${ref}` });

  test.each([
    ['created after 15 July 2026 (immutable subjects)', REPOSITORY],
    ['created before, not opted in (legacy subjects)', { ...REPOSITORY, immutableSubject: false }],
  ])('a repository %s: main previews as each plan identity and deploys as each deploy identity; a pull request signs in as nothing', (_name, repository) => {
    // The file's own push (PUSHED) is main's push in REPOSITORY: its sign-ins are read rather than the same push run again.
    const own = repository === REPOSITORY;
    const setup = own ? pushed() : workspace();
    const tokens: Array<[string, string]> = own ? [...pushTokens] : [];
    if (!own) run('push', setup, '910', undefined, { repository, tokens });
    // A deploy job signs in twice (again before the code and the smoke check): the same subject, accepted both times.
    expect(tokens).toEqual([
      ['dev-plan-client', subject(repository, 'deploy.yml')],
      ['prod-plan-client', subject(repository, 'deploy.yml')],
      ['dev-deploy-client', subject(repository, 'deploy-environment.yml', 'dev')],
      ['dev-deploy-client', subject(repository, 'deploy-environment.yml', 'dev')],
      ['prod-deploy-client', subject(repository, 'deploy-environment.yml', 'prod')],
      ['prod-deploy-client', subject(repository, 'deploy-environment.yml', 'prod')],
    ]);
    expect(tokens[4][1]).toBe(
      `${repository.immutableSubject ? 'repo:octo-org@123/octo-repo@456' : 'repo:octo-org/octo-repo'}:environment:prod:ref:refs/heads/main:job_workflow_ref:octo-org/octo-repo/.github/workflows/deploy-environment.yml@refs/heads/main`,
    );
    const pullRequest: Array<[string, string]> = [];
    run('pull_request', setup, '911', undefined, { repository, tokens: pullRequest });
    expect(pullRequest).toEqual([]);
  });

  test("a rollback (a dispatch of deploy.yml on main) signs in from the GitHub environment it deploys, with main's deploy-environment.yml", () => {
    const setup = pushed();
    const tokens: Array<[string, string]> = [];
    run('workflow_dispatch', setup, '913', { environment: 'prod', run_id: PUSHED, with_infrastructure: false }, { tokens });
    expect(tokens).toEqual(Array(2).fill(['prod-deploy-client', subject(REPOSITORY, 'deploy-environment.yml', 'prod')]));
  });

  /** An environment's credentials before issue #40 (the default template's subjects), as the migration finds them. */
  const earlier = (env: 'dev' | 'prod'): FederatedCredential[] =>
    Object.entries(EARLIER_CREDENTIALS(env)).flatMap(([identity, names]) =>
      names.map((name) => {
        const prefix = name.endsWith('-immutable') ? 'repo:octo-org@123/octo-repo@456' : 'repo:octo-org/octo-repo';
        const context = identity.endsWith('-plan') ? 'pull_request' : `environment:${identity.endsWith('-stop') ? `${env}-stop` : env}`;
        return { identity, name, issuer: GITHUB_ISSUER, subject: `${prefix}:${context}`, audiences: [AZURE_AUDIENCE] };
      }),
    );

  test("the earlier credentials (the default template's subjects) match no job once the template is applied: credentials first, then the template (GitHub's order)", () => {
    const setup = workspace();
    const first = subject(REPOSITORY, 'deploy.yml');
    expect(() => run('push', setup, '914', undefined, { credentials: { dev: earlier('dev'), prod: earlier('prod') } })).toThrow(
      `AADSTS700213: No matching federated identity record found for presented assertion subject '${first}'.`,
    );
    expect(existsSync(setup.log)).toBe(false); // no az call at all
    // Before the template, GitHub's default subject is what those credentials matched, and the new ones do not.
    setGhState(setup, (state) => {
      state.oidcSubject = { use_default: true };
    });
    expect(() => run('push', setup, '915')).toThrow(
      `AADSTS700213: No matching federated identity record found for presented assertion subject 'repo:octo-org@123/octo-repo@456:ref:refs/heads/main'.`,
    );
  });

  /** What the claims step printed in `job`, after its sign-in failed. */
  const claimsPrinted = (failure: StepFailed, job: string, identity: string) =>
    failure.record.output[`${job}: the sign-in refused, the job's token claims beside the ${identity} identity's subjects`] ?? '(the step did not run)';

  test("a sign-in Entra refuses shows, in the job, the token's sub, job_workflow_ref, ref and environment beside the subjects the identity expects, and what differs; never the token", () => {
    const setup = workspace();
    // Were GitHub to name the calling workflow (deploy.yml) in a reusable workflow's job_workflow_ref, never seen in a live token.
    const failure = refusal(() => run('push', setup, '919', undefined, { jobWorkflowFile: (_defined, caller) => caller }));
    expect(failure.step).toBe("deploy-dev > deploy: sign in as the environment's deploying identity");
    expect(failure.stderr).toContain('AADSTS700213: No matching federated identity record found');
    const printed = claimsPrinted(failure, 'deploy-dev > deploy', 'deploying');
    const ref = (file: string) => `octo-org/octo-repo/.github/workflows/${file}@refs/heads/main`;
    expect(printed).toContain("The Azure sign-in as id-drawreq-dev-deploy failed. What this job's OIDC token says");
    for (const line of [
      `  sub               repo:octo-org@123/octo-repo@456:environment:dev:ref:refs/heads/main:job_workflow_ref:${ref('deploy.yml')}`,
      `  job_workflow_ref  ${ref('deploy.yml')}`,
      '  ref               refs/heads/main',
      '  environment       dev',
      `  sub               repo:octo-org/octo-repo:environment:dev:ref:refs/heads/main:job_workflow_ref:${ref('deploy-environment.yml')}`,
      `  sub               repo:octo-org@123/octo-repo@456:environment:dev:ref:refs/heads/main:job_workflow_ref:${ref('deploy-environment.yml')}`,
      `Differs: job_workflow_ref is ${ref('deploy.yml')}, not ${ref('deploy-environment.yml')}.`,
      'az identity federated-credential list --identity-name id-drawreq-dev-deploy --resource-group rg-drawreq-dev -o table',
    ])
      expect(printed).toContain(line);
    expect(printed).not.toMatch(/eyJ[\w-]+\.eyJ/); // no JWT
    expect(calls(setup.log).filter((c) => c.as === TARGETS.dev.deployClientId)).toEqual([]);
  });

  test("a subject the bootstrap gives but the identity does not trust (its earlier credentials only): the token's sub is shown as expected, and the credentials to check named", () => {
    const setup = workspace();
    const failure = refusal(() => run('push', setup, '920', undefined, { credentials: { dev: earlier('dev'), prod: earlier('prod') } }));
    expect(failure.step).toBe("what-if (dev): sign in as the environment's what-if identity (read only)");
    const printed = claimsPrinted(failure, 'what-if (dev)', 'plan');
    expect(printed).toContain(`  sub               ${subject(REPOSITORY, 'deploy.yml')}   (the token's)`);
    expect(printed).toContain('  environment       (none)');
    expect(printed).toContain(
      "The token's sub is one the bootstrap gives id-drawreq-dev-plan: check that its credentials hold it (the bootstrap re-run, with these ids): az identity federated-credential list --identity-name id-drawreq-dev-plan --resource-group rg-drawreq-dev -o table",
    );
  });

  /**
   * A writer's branch with its own workflow (or a changed copy of stop-client.yml) that names `environment`
   * and signs in with that identity's client id, pushed or dispatched on the branch.
   */
  function branchWorkflow(setup: Setup, environment: string, clientId: string): void {
    writeFileSync(
      join(setup.workspace, '.github', 'workflows', 'evil.yml'),
      [
        'name: evil',
        'on: [push, workflow_dispatch]',
        'permissions:',
        '  contents: read',
        'jobs:',
        '  take:',
        '    runs-on: ubuntu-24.04',
        `    environment: ${environment}`,
        '    permissions:',
        '      contents: read',
        '      id-token: write',
        '    steps:',
        '      - uses: azure/login@f5d393ae46f8fde4be8b75f32e3fc50e654ad0ca # v3.0.1',
        '        with:',
        `          client-id: ${clientId}`,
        '          tenant-id: tenant-id',
        '          allow-no-subscriptions: true',
        '      - run: az storage entity insert --auth-mode login --account-name stdrawreqprodabc123 --table-name StoppedClients --entity PartitionKey=x RowKey=',
        '',
      ].join('\n'),
    );
  }
  const branchRun = (setup: Setup, file: string, tokens: Array<[string, string]>, inputs?: Record<string, unknown>) =>
    runOther(setup, file, { event: inputs === undefined ? 'push' : 'workflow_dispatch', ref: 'refs/heads/feature/x', inputs, runId: '916', tokens });

  test.each([
    ['prod-stop', TARGETS.prod.stopClientId],
    ['prod', TARGETS.prod.deployClientId],
    ['dev-stop', TARGETS.dev.stopClientId],
  ])(
    "a branch's workflow naming %s: refused by the environment's branch policy; with the environment missing, GitHub creates it and runs the job, and the token is still refused",
    (environment, clientId) => {
      const setup = workspace();
      branchWorkflow(setup, environment, clientId);
      const tokens: Array<[string, string]> = [];
      expect(() => branchRun(setup, 'evil.yml', tokens)).toThrow(
        `Branch "feature/x" is not allowed to deploy to ${environment} due to environment protection rules.`,
      );
      expect(tokens).toEqual([]);
      // The environment deleted (or never made): GitHub creates it, without protection, and the job runs to its sign-in.
      setGhState(setup, (state) => delete state.environments[environment]);
      expect(() => branchRun(setup, 'evil.yml', tokens)).toThrow('AADSTS700213');
      expect(tokens).toEqual([[clientId, subject(REPOSITORY, 'evil.yml', environment, 'refs/heads/feature/x')]]);
      expect(ghEnvironments(setup)[environment]).toMatchObject({ createdByAJob: true, deployment_branch_policy: null });
      expect(existsSync(setup.log)).toBe(false); // no Azure call was made
    },
  );

  test("a branch's copy of stop-client.yml without its refusal of other branches, dispatched from the branch with prod-stop missing: no token", () => {
    const setup = workspace();
    const workflow = join(setup.workspace, '.github', 'workflows', 'stop-client.yml');
    writeFileSync(workflow, readFileSync(workflow, 'utf8').replace(/if \[ "\$REF" != refs\/heads\/main \]; then/, 'if false; then'));
    setGhState(setup, (state) => delete state.environments['prod-stop']);
    const tokens: Array<[string, string]> = [];
    expect(() => branchRun(setup, 'stop-client.yml', tokens, { environment: 'prod', client_id: PARTNERS.prod[0].clientAppId })).toThrow('AADSTS700213');
    expect(tokens).toEqual([[TARGETS.prod.stopClientId, subject(REPOSITORY, 'stop-client.yml', 'prod-stop', 'refs/heads/feature/x')]]);
    expect(existsSync(setup.log)).toBe(false);
  });

  test.each([
    ['prod deleted', (state: { environments: Record<string, GitHubEnvironment> }) => delete state.environments.prod, ['ERR_ENV_MISSING'], 'prod'],
    [
      "prod's reviewers removed",
      (state: { environments: Record<string, GitHubEnvironment> }) => {
        state.environments.prod.protection_rules = state.environments.prod.protection_rules.filter((r) => r.type !== 'required_reviewers');
      },
      ['ERR_ENV_REVIEWERS'],
      'prod',
    ],
    [
      'prod admitting another branch',
      (state: { environments: Record<string, GitHubEnvironment> }) =>
        state.environments.prod.branch_policies.push({ id: 999, name: 'release/*', type: 'branch' }),
      ['ERR_ENV_BRANCHES'],
      'prod',
    ],
  ])("%s: main's deployment is refused before its deploy job, naming the drift; nothing of it is created or signed in to", (_name, drift, codes, env) => {
    const setup = workspace();
    setGhState(setup, drift);
    const failure = refusal(() => run('push', setup, '917'));
    expect(failure.step).toBe(`deploy-${env} > provenance: the environment's protection and the OIDC subject template have not drifted`);
    expect(refusalCodes(failure)).toEqual(codes);
    expect(failure.stderr).toContain(`node scripts/githubSettings.cjs apply ${env}`);
    expect(calls(setup.log).filter((c) => c.as === TARGETS[env as 'dev' | 'prod'].deployClientId)).toEqual([]);
    expect(ghEnvironments(setup)[env]?.createdByAJob).toBeUndefined();
  });

  test("GitHub refusing the settings' reads (a token without actions: read): refused before the deploy job, naming each read and the permission it needs", () => {
    const setup = workspace();
    setGhState(setup, (state) => {
      state.settingsError = 'gh: Resource not accessible by integration (HTTP 403)';
    });
    const failure = refusal(() => run('push', setup, '918'));
    expect(failure.step).toBe("deploy-dev > provenance: the environment's protection and the OIDC subject template have not drifted");
    expect(refusalCodes(failure)).toEqual(['ERR_GITHUB_UNREADABLE', 'ERR_GITHUB_UNREADABLE']);
    for (const path of [`repos/${FULL_NAME}/environments/dev`, `repos/${FULL_NAME}/actions/oidc/customization/sub`])
      expect(failure.stderr).toContain(
        `GET ${path} could not be read (gh exited 1: gh: Resource not accessible by integration (HTTP 403)): it needs the repository permission "Actions" (read)`,
      );
    expect(failure.stderr).toContain('permissions: actions: read');
    expect(failure.stderr).not.toContain('githubSettings.cjs apply'); // not a drift: applying would not help
    expect(calls(setup.log).filter((c) => c.as === TARGETS.dev.deployClientId)).toEqual([]);
  });

  test("the subject template reset to GitHub's default: no job of main signs in (its subject names neither the ref nor the file), and each environment's check names the drift", () => {
    const setup = workspace();
    setGhState(setup, (state) => {
      state.oidcSubject = { use_default: true };
    });
    // The first job that asks, the what-if, presents GitHub's default subject, which no credential names.
    expect(() => run('push', setup, '917')).toThrow(
      "AADSTS700213: No matching federated identity record found for presented assertion subject 'repo:octo-org@123/octo-repo@456:ref:refs/heads/main'.",
    );
    expect(existsSync(setup.log)).toBe(false); // no Azure call at all
    for (const env of ['dev', 'prod']) {
      const checked = spawnSync(process.execPath, [join(setup.workspace, 'scripts', 'githubSettings.cjs'), 'check', env], {
        env: standInEnv(setup),
        encoding: 'utf8',
      });
      expect(checked.status).toBe(1);
      expect(checked.stderr).toContain('ERR_OIDC_SUBJECT');
      expect(checked.stderr).toContain(`node scripts/githubSettings.cjs apply ${env}`);
    }
  });

  const settings = (setup: Setup, ...args: string[]) =>
    spawnSync(process.execPath, [join(setup.workspace, 'scripts', 'githubSettings.cjs'), ...args], { env: standInEnv(setup), encoding: 'utf8' });

  /** The repository's OIDC settings before the migration (GitHub's default template), and the bootstrap's credentials as `credentials` gives them. */
  function beforeMigration(setup: Setup, credentials: FederatedCredential[]): void {
    setGhState(setup, (state) => {
      state.oidcSubject = { use_default: true };
    });
    const state = JSON.parse(readFileSync(setup.state, 'utf8')) as Record<string, unknown>;
    writeFileSync(setup.state, JSON.stringify({ ...state, federatedCredentials: credentialsByIdentity(credentials) }));
  }
  const templatePuts = (setup: Setup) => ghCalls(setup).filter((c) => c.includes('-X PUT') && c.includes('oidc/customization/sub'));
  const template = (setup: Setup) => (JSON.parse(readFileSync(setup.ghState, 'utf8')) as { oidcSubject: unknown }).oidcSubject;

  test('apply refuses, changing nothing, while another environment has not been bootstrapped again (only its earlier credentials): each identity and subject named; then it applies', () => {
    const setup = workspace();
    beforeMigration(setup, [...CREDENTIALS.dev, ...earlier('prod')]);
    const refused = settings(setup, 'apply', 'dev');
    expect(refused.status).toBe(1);
    expect(refused.stderr).toContain("not applied, nothing changed: the OIDC subject template applies to every environment's sign-ins at once");
    expect(codesIn(refused.stderr)).toEqual(['ERR_SUBJECT_UNTRUSTED', 'ERR_SUBJECT_UNTRUSTED', 'ERR_SUBJECT_UNTRUSTED']);
    for (const [job, file, environment] of [
      ['deploy', 'deploy-environment.yml', 'prod'],
      ['plan', 'deploy.yml', undefined],
      ['stop', 'stop-client.yml', 'prod-stop'],
    ] as const)
      expect(refused.stderr).toContain(`id-drawreq-prod-${job} (prod) has no federated credential for ${subject(REPOSITORY, file, environment)}`);
    expect(refused.stderr).toContain('Bootstrap every environment first, then apply (docs/deploy.md, "Migration")');
    expect(template(setup)).toEqual({ use_default: true });
    expect(templatePuts(setup)).toEqual([]);
    // prod's bootstrap run again: its new credentials beside the earlier ones. Now the template is applied.
    beforeMigration(setup, [...CREDENTIALS.dev, ...CREDENTIALS.prod, ...earlier('prod')]);
    const applied = settings(setup, 'apply', 'dev');
    expect([applied.status, applied.stderr]).toEqual([0, '']);
    expect(applied.stdout).toContain(`${FULL_NAME}: dev, prod trust the subjects of the template`);
    expect(template(setup)).toEqual({ use_default: false, include_claim_keys: SUBJECT_CLAIM_KEYS });
  });

  test('apply says why it cannot tell, and changes nothing: nobody signed in to Azure (it cannot read the credentials)', () => {
    const setup = workspace();
    beforeMigration(setup, [...CREDENTIALS.dev, ...CREDENTIALS.prod]);
    const state = JSON.parse(readFileSync(setup.state, 'utf8')) as Record<string, unknown>;
    writeFileSync(setup.state, JSON.stringify({ ...state, signedIn: null }));
    const refused = settings(setup, 'apply', 'prod', '--reviewer-team', PROD_REVIEWERS);
    expect(refused.status).toBe(1);
    expect(codesIn(refused.stderr)).toEqual(Array<string>(6).fill('ERR_SUBJECTS_UNREADABLE'));
    expect(refused.stderr).toContain(
      "the federated credentials of id-drawreq-dev-deploy (dev) could not be read (az exited 1: az stand-in: Please run 'az login' to setup account.), so apply cannot tell whether dev trusts the new subjects: sign in (az login) as someone who may read rg-drawreq-dev",
    );
    expect(template(setup)).toEqual({ use_default: true });
    expect(templatePuts(setup)).toEqual([]);
  });

  test('an environment not bootstrapped yet has nothing to lose: apply names it and goes on (its bootstrap adds the subjects)', () => {
    const setup = workspace();
    beforeMigration(setup, CREDENTIALS.dev);
    cpSync(join(ROOT, 'infra', 'env', 'prod.pipeline.json'), join(setup.workspace, 'infra', 'env', 'prod.pipeline.json'));
    const pin = JSON.parse(readFileSync(join(setup.workspace, 'infra', 'env', 'prod.pipeline.json'), 'utf8')) as Record<string, unknown>;
    writeFileSync(join(setup.workspace, 'infra', 'env', 'prod.pipeline.json'), JSON.stringify({ ...pin, githubRepository: FULL_NAME }));
    const applied = settings(setup, 'apply', 'dev');
    expect([applied.status, applied.stderr]).toEqual([0, '']);
    expect(applied.stdout).toContain(`${FULL_NAME}: dev trusts the subjects of the template; prod not bootstrapped yet (its bootstrap adds them)`);
    expect(calls(setup.log).map((c) => after(c, '--identity-name'))).toEqual(['id-drawreq-dev-deploy', 'id-drawreq-dev-plan', 'id-drawreq-dev-stop']);
  });

  test('GitHub naming no sub_claim_prefix: both forms are required, so a bootstrap trusting the immutable form alone is refused (the legacy subjects named)', async () => {
    const setup = workspace();
    setGhState(setup, (state) => {
      delete state.subClaimPrefix;
    });
    const immutableOnly = [...(await bootstrapped('dev', 'immutable')), ...(await bootstrapped('prod', 'immutable'))];
    beforeMigration(setup, immutableOnly);
    const refused = settings(setup, 'apply', 'dev');
    expect(codesIn(refused.stderr)).toEqual(Array<string>(6).fill('ERR_SUBJECT_UNTRUSTED'));
    expect(refused.stderr).toContain(`has no federated credential for repo:${FULL_NAME}:environment:dev:ref:refs/heads/main`);
    expect(refused.stderr).not.toContain('for repo:octo-org@123/');
    expect(ghCalls(setup)).toContain(`api -X GET repos/${FULL_NAME}`);
    beforeMigration(setup, [...CREDENTIALS.dev, ...CREDENTIALS.prod]); // githubSubjectFormat both, the default
    expect(settings(setup, 'apply', 'dev').status).toBe(0);
  });

  test("apply --runner-group (GitHub Enterprise Cloud) restricts the environment's runner group to deploy-environment.yml and stop-client.yml on main", () => {
    const setup = workspace();
    setGhState(setup, (state) => {
      state.runnerGroups = { '77': { id: 77, name: 'drawreq-prod', restricted_to_workflows: false, selected_workflows: [] } };
    });
    const applied = settings(setup, 'apply', 'prod', '--reviewer-team', PROD_REVIEWERS, '--runner-group', '77');
    expect(applied.stderr).toBe('');
    expect(applied.status).toBe(0);
    const group = (JSON.parse(readFileSync(setup.ghState, 'utf8')) as { runnerGroups: Record<string, unknown> }).runnerGroups['77'];
    expect(group).toMatchObject({
      restricted_to_workflows: true,
      selected_workflows: [`${FULL_NAME}/.github/workflows/deploy-environment.yml@main`, `${FULL_NAME}/.github/workflows/stop-client.yml@main`],
    });
    expect(settings(setup, 'check', 'prod').status).toBe(0);
  });

  test('apply refuses what it cannot do: prod without its reviewer team, a runner group GitHub does not show (a plan without the restriction)', () => {
    const setup = workspace();
    const noTeam = settings(setup, 'apply', 'prod');
    expect(noTeam.status).toBe(2);
    expect(noTeam.stderr).toContain('infra/env/prod.pipeline.json asks for required reviewers in prod: give --reviewer-team <team id>');
    const noGroup = settings(setup, 'apply', 'prod', '--reviewer-team', PROD_REVIEWERS, '--runner-group', '78');
    expect(noGroup.status).not.toBe(0);
    expect(noGroup.stderr).toContain('the runner group (an organization owner, on GitHub Enterprise Cloud)');
  });
});

describe("closed storage: only the app and the environment's runners inside its network write the tables", () => {
  const deploy = (setup: Setup, args: string[], env: Record<string, string> = {}) =>
    spawnSync('bash', [join(setup.workspace, 'scripts', 'deploy.sh'), ...args], { env: { ...standInEnv(setup), ...env }, encoding: 'utf8', input: '' });
  const network = (setup: Setup, account: string) => (JSON.parse(readFileSync(setup.state, 'utf8')) as { storage: Record<string, unknown> }).storage[account];
  const rows = (setup: Setup, account: string) =>
    Object.keys((JSON.parse(readFileSync(setup.state, 'utf8')) as { tables?: Record<string, object> }).tables?.[`${account}/Partners`] ?? {});
  const setParameters = (setup: Setup, env: string, values: Record<string, unknown>) => {
    const parametersFile = join(setup.workspace, 'infra', 'env', `${env}.parameters.json`);
    const parameters = JSON.parse(readFileSync(parametersFile, 'utf8')) as { parameters: Record<string, { value: unknown }> };
    for (const [name, value] of Object.entries(values)) parameters.parameters[name] = { value };
    writeFileSync(parametersFile, JSON.stringify(parameters));
  };
  const setRunnerGroup = (setup: Setup, env: string, group: string) => {
    const file = join(setup.workspace, 'infra', 'env', `${env}.pipeline.json`);
    writeFileSync(file, JSON.stringify({ ...(JSON.parse(readFileSync(file, 'utf8')) as object), privateRunnerGroup: group }));
  };

  test("prod's parameters close its storage: its deploy job runs on its runner group, inside its network, writes the Partners rows through the private endpoint and deploys the code; nothing is opened", () => {
    const setup = pushed();
    const record = pushRecord;
    expect(record.runners['deploy-prod > deploy']).toEqual({ group: PROD_RUNNER_GROUP });
    expect(network(setup, 'stdrawreqprodabc123')).toEqual({ publicNetworkAccess: 'Disabled', defaultAction: 'Deny', privateNetwork: PROD_NETWORK });
    expect(rows(setup, 'stdrawreqprodabc123')).toEqual([PARTNERS.prod[0].clientAppId, TARGETS.prod.deployClientId]);
    // No rule, no public window: the account's network settings are the deployment's alone.
    expect(calls(setup.log).filter((c) => isCall(c, 'storage', 'account'))).toEqual([]);
    // The code deployment needs nothing of the network: it goes to the app's own deployment endpoint.
    expect(calls(setup.log).filter((c) => isCall(c, 'functionapp', 'deploy') && groupOf(c) === 'rg-drawreq-prod')).toHaveLength(1);
  });

  test('from outside the network (a GitHub-hosted runner, a laptop) the closed account refuses the rows: the step fails, naming where they are written from', () => {
    const setup = workspace();
    signIn(setup.state, 'deployer', 'servicePrincipal');
    const result = deploy(setup, ['prod', '--infra-only', '--yes']);
    expect(result.status).toBe(1);
    expect(result.stderr).toContain('Partners row of PARTNER-001 not written');
    expect(result.stderr).toContain('AuthorizationFailure');
    expect(result.stderr).toContain("the rows are written from inside the environment's network");
    expect(result.stderr).toContain('privateRunnerGroup of infra/env/prod.pipeline.json');
    expect(
      calls(setup.log)
        .filter((c) => isCall(c, 'storage'))
        .map(verb),
    ).toEqual(['storage entity insert']);
    // From inside it (a runner of the group), the same step writes them.
    expect(deploy(setup, ['prod', '--step', 'partners'], { AZ_CALLER_NETWORK: PROD_NETWORK }).status).toBe(0);
    expect(rows(setup, 'stdrawreqprodabc123')).toEqual([PARTNERS.prod[0].clientAppId, TARGETS.prod.deployClientId]);
  });

  test('in phase 1 (isolated, storage public) and not isolated, the rows are written from anywhere', () => {
    for (const [name, values] of [
      ['phase1', { networkIsolated: true, storagePublicAccess: true }],
      ['public', { networkIsolated: false, storagePublicAccess: true }],
    ] as const) {
      const setup = workspace();
      signIn(setup.state, 'deployer', 'servicePrincipal');
      setParameters(setup, 'dev', values);
      const result = deploy(setup, ['dev', '--infra-only', '--yes']);
      expect({ name, status: result.status, stderr: result.stderr }).toEqual({ name, status: 0, stderr: '' });
      expect(
        calls(setup.log)
          .filter((c) => isCall(c, 'storage'))
          .map(verb),
      ).toEqual(Array<string>(3).fill('storage entity insert'));
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('closing storage before phase 1 (no isolated deployment before it) is refused before the what-if: nothing is deployed', () => {
    const setup = workspace();
    signIn(setup.state, 'deployer', 'servicePrincipal');
    setParameters(setup, 'dev', { networkIsolated: true, storagePublicAccess: false });
    for (const step of [
      ['--infra-only', '--yes'],
      ['--step', 'infra'],
    ]) {
      const result = deploy(setup, ['dev', ...step]);
      expect(result.status).toBe(1);
      expect(result.stderr).toContain('refused, nothing deployed: infra/env/dev.parameters.json closes storage');
      expect(result.stderr).toContain('networkIsolated unknown: none found');
    }
    // dev deployed open, then closed at once: refused all the same (its last deployment did not isolate it).
    setParameters(setup, 'dev', { networkIsolated: false, storagePublicAccess: true });
    expect(deploy(setup, ['dev', '--infra-only', '--yes']).status).toBe(0);
    setParameters(setup, 'dev', { networkIsolated: true, storagePublicAccess: false });
    rmSync(setup.log);
    const result = deploy(setup, ['dev', '--infra-only', '--yes']);
    expect([result.status, result.stderr]).toEqual([1, expect.stringContaining('did not isolate it (networkIsolated False)')]);
    expect(
      calls(setup.log)
        .filter((c) => !isCall(c, 'account'))
        .map(verb),
    ).toEqual(['ad sp show', 'deployment group list']);
    // The what-if alone previews anything.
    expect(deploy(setup, ['dev', '--what-if']).status).toBe(0);
  });

  test('storage closed with no runner group named: refused by scripts/target.sh before anything is downloaded or signed in', () => {
    const setup = workspace();
    setRunnerGroup(setup, 'prod', '');
    const failure = refusal(() => run('push', setup, '961'));
    // The first job to read prod's target is its what-if, which deploy-prod needs: nothing of prod runs.
    expect(failure.step).toBe('what-if (prod): target');
    expect(failure.stderr).toContain("the environment's storage is closed (networkIsolated, storagePublicAccess false): set privateRunnerGroup");
    expect(calls(setup.log).filter((c) => groupOf(c) === 'rg-drawreq-prod' || c.as === TARGETS.prod.deployClientId)).toEqual([]);
  });
});

describe("on-call's emergency stop: the stop-client workflow, on the environment's runner, as its stop identity, puts the client on the stop list", () => {
  const STOP_SUBJECT = (env: string) =>
    `repo:octo-org@123/octo-repo@456:environment:${env}-stop:ref:refs/heads/main:job_workflow_ref:octo-org/octo-repo/.github/workflows/stop-client.yml@refs/heads/main`;
  /** Dispatches stop-client.yml from main (or `ref`); records the tokens its sign-ins present. */
  const stop = (setup: Setup, inputs: Record<string, unknown>, tokens: Array<[string, string]> = [], ref?: string): RunRecord =>
    runOther(setup, 'stop-client.yml', {
      event: 'workflow_dispatch',
      ref,
      inputs,
      runId: '970',
      tokens,
      // The account's Table service as the runner reaches it: through the private endpoint inside prod's network.
      runner: (runsOn) => {
        const runner = runnerEnv(runsOn);
        const account = TARGETS[inputs.environment as 'dev' | 'prod']?.storageAccountName ?? 'none';
        return { ...runner, TABLES_ENDPOINT: tablesEndpoint(account, runner.AZ_CALLER_NETWORK) };
      },
    });
  /** scripts/stopClient.cjs run by hand, from `network` (none: outside every network), with `env` besides. */
  const stopByHand = (setup: Setup, env: string, clientId: string, network?: string, extra: Record<string, string> = {}) =>
    spawnSync(process.execPath, [join(setup.workspace, 'scripts', 'stopClient.cjs'), env, clientId], {
      env: {
        ...standInEnv(setup),
        ...(network === undefined ? {} : { AZ_CALLER_NETWORK: network }),
        TABLES_ENDPOINT: tablesEndpoint(TARGETS[env as 'dev' | 'prod']?.storageAccountName ?? 'none', network),
        ...extra,
      },
      encoding: 'utf8',
    });
  const rowsOf = (setup: Setup, account: string, table: string) =>
    (JSON.parse(readFileSync(setup.state, 'utf8')) as { tables?: Record<string, Record<string, Record<string, string>>> }).tables?.[`${account}/${table}`] ??
    {};
  const partnerRows = (setup: Setup, account: string) => rowsOf(setup, account, 'Partners');
  const stopRows = (setup: Setup, account: string) => rowsOf(setup, account, 'StoppedClients');
  /** The az and Table service calls after the deployment that wrote the rows (log cut there), but sign-in's. */
  const stopCalls = (setup: Setup) => (existsSync(setup.log) ? calls(setup.log).filter((c) => !isCall(c, 'account')) : []);
  /** A call as `who: method /account/table` (the Table service's) or `who: az command` (the Azure CLI's). */
  const described = (c: Call) => `${c.as}: ${c.args[0] === 'tables' ? c.args.slice(1).join(' ') : verb(c)}`;
  /** A workspace after main's push deployed both environments: the file's push (PUSHED, about 30 s of jobs), its calls forgotten. */
  const deployed = copied(() => {
    const setup = pushed();
    rmSync(setup.log);
    return setup;
  });
  const PROD_CLIENT = PARTNERS.prod[0].clientAppId;

  test("prod: runs on prod's runner group, inside its network, as the stop identity from prod-stop, reads the client's Partners row and inserts its stop-list row, nothing else", () => {
    const setup = deployed();
    const before = partnerRows(setup, 'stdrawreqprodabc123');
    const tokens: Array<[string, string]> = [];
    // Pasted in capitals: Entra's ids, and the rows' keys, are lower case.
    const record = stop(setup, { environment: 'prod', client_id: PROD_CLIENT.toUpperCase() }, tokens);
    expect(record.runners).toEqual({ target: 'ubuntu-24.04', stop: { group: PROD_RUNNER_GROUP } });
    expect(tokens).toEqual([['prod-stop-client', STOP_SUBJECT('prod')]]);
    // Get Entity of its Partners row, then Insert Entity (a POST: the stop identity's one write), through prod's private endpoint.
    expect(stopCalls(setup).map(described)).toEqual([
      'prod-stop-client: GET /stdrawreqprodabc123/Partners',
      'prod-stop-client: POST /stdrawreqprodabc123/StoppedClients',
    ]);
    expect(stopRows(setup, 'stdrawreqprodabc123')).toEqual({
      [PROD_CLIENT]: expect.objectContaining({
        PartitionKey: PROD_CLIENT,
        RowKey: '',
        StopId: '970',
        StoppedBy: 'octocat',
        'StoppedAt@odata.type': 'Edm.DateTime',
      }),
    });
    expect(partnerRows(setup, 'stdrawreqprodabc123')).toEqual(before); // the Partners row is untouched
    expect(record.summaries.stop).toContain(`Client ${PROD_CLIENT} stopped in prod`);
    expect(record.summaries.stop).toContain('adds `"liftStop": "970"` to this client\'s entry in `infra/env/prod.parameters.json`');
  });

  test('dev (open): a GitHub-hosted runner, dev-stop, the same single insert; a second stop of the same client changes nothing', () => {
    const setup = deployed();
    const tokens: Array<[string, string]> = [];
    const record = stop(setup, { environment: 'dev', client_id: PARTNERS.dev[0].clientAppId }, tokens);
    expect(record.runners.stop).toBe('ubuntu-24.04');
    expect(tokens).toEqual([['dev-stop-client', STOP_SUBJECT('dev')]]);
    expect(stopCalls(setup).map(described)).toEqual([
      'dev-stop-client: GET /stdrawreqdevabc123/Partners',
      'dev-stop-client: POST /stdrawreqdevabc123/StoppedClients',
    ]);
    const stopped = stopRows(setup, 'stdrawreqdevabc123');
    expect(Object.keys(stopped)).toEqual([PARTNERS.dev[0].clientAppId]);
    rmSync(setup.log);
    const again = stop(setup, { environment: 'dev', client_id: PARTNERS.dev[0].clientAppId });
    expect(again.steps.slice(-2)).toEqual([
      'stop: put the client on the stop list',
      "stop: the sign-in refused, the job's token claims beside the stop identity's subjects (skipped)",
    ]);
    // The insert itself is refused (409 EntityAlreadyExists), which is "already stopped": the stop list is never read.
    expect(stopCalls(setup).map(described)).toEqual([
      'dev-stop-client: GET /stdrawreqdevabc123/Partners',
      'dev-stop-client: POST /stdrawreqdevabc123/StoppedClients',
    ]);
    expect(stopRows(setup, 'stdrawreqdevabc123')).toEqual(stopped); // already stopped: the first stop stays as it was
  });

  test('the stop identity can stop a client and nothing else: it cannot lift a stop, change a PartnerId, delete a row or a table (its roles, as Azure applies them)', () => {
    const setup = deployed();
    stop(setup, { environment: 'prod', client_id: PROD_CLIENT });
    signIn(setup.state, 'prod-stop-client', 'servicePrincipal');
    const before = JSON.stringify((JSON.parse(readFileSync(setup.state, 'utf8')) as { tables: unknown }).tables);
    const az = (...args: string[]) =>
      spawnSync(join(setup.bin, 'az'), [...args, '--auth-mode', 'login', '--account-name', 'stdrawreqprodabc123'], {
        env: { ...standInEnv(setup), AZ_CALLER_NETWORK: PROD_NETWORK },
        encoding: 'utf8',
      });
    const key = ['--partition-key', PROD_CLIENT, '--row-key', ''];
    const attempts: Array<[string, string[]]> = [
      ['lift its stop: delete the row', ['storage', 'entity', 'delete', '--table-name', 'StoppedClients', ...key]],
      [
        'lift its stop: replace the row',
        ['storage', 'entity', 'replace', '--table-name', 'StoppedClients', '--entity', `PartitionKey=${PROD_CLIENT}`, 'RowKey='],
      ],
      [
        'lift its stop: merge into the row',
        ['storage', 'entity', 'merge', '--table-name', 'StoppedClients', '--if-match', '*', '--entity', `PartitionKey=${PROD_CLIENT}`, 'RowKey='],
      ],
      [
        'change a PartnerId: merge',
        ['storage', 'entity', 'merge', '--table-name', 'Partners', '--if-match', '*', '--entity', `PartitionKey=${PROD_CLIENT}`, 'RowKey=', 'PartnerId=OTHER'],
      ],
      [
        'change a PartnerId: insert or replace',
        [
          'storage',
          'entity',
          'insert',
          '--table-name',
          'Partners',
          '--if-exists',
          'replace',
          '--entity',
          `PartitionKey=${PROD_CLIENT}`,
          'RowKey=',
          'PartnerId=OTHER',
        ],
      ],
      [
        'undo an inactive row: replace',
        ['storage', 'entity', 'replace', '--table-name', 'Partners', '--entity', `PartitionKey=${PROD_CLIENT}`, 'RowKey=', 'Active=true'],
      ],
      [
        'register a client: insert a Partners row',
        [
          'storage',
          'entity',
          'insert',
          '--table-name',
          'Partners',
          '--entity',
          'PartitionKey=6e6e6e6e-1234-4abc-8def-0123456789ab',
          'RowKey=',
          'PartnerId=PARTNER-001',
        ],
      ],
      ['delete a Partners row', ['storage', 'entity', 'delete', '--table-name', 'Partners', ...key]],
      ['delete the stop list', ['storage', 'table', 'delete', '--name', 'StoppedClients']],
      ['delete the Partners table', ['storage', 'table', 'delete', '--name', 'Partners']],
      ['read a loan', ['storage', 'entity', 'show', '--table-name', 'Loans', '--partition-key', '1001', '--row-key', '']],
    ];
    for (const [what, args] of attempts) {
      const result = az(...args);
      expect({ what, status: result.status, refused: result.stderr.includes('AuthorizationPermissionMismatch') }).toEqual({ what, status: 1, refused: true });
    }
    expect(JSON.stringify((JSON.parse(readFileSync(setup.state, 'utf8')) as { tables: unknown }).tables)).toBe(before);
    // The same calls as the deploying identity are allowed (the check can pass): it lifts stops and writes Partners.
    signIn(setup.state, 'prod-deploy-client', 'servicePrincipal');
    expect(az('storage', 'entity', 'delete', '--table-name', 'StoppedClients', ...key).status).toBe(0);
  });

  test('a deployment does not undo a stop; a reviewed liftStop naming the stop lifts it; a later stop of the client stays', () => {
    const setup = deployed();
    stop(setup, { environment: 'prod', client_id: PROD_CLIENT });
    run('push', setup, '971'); // the next deployment, its parameters file unchanged
    expect(Object.keys(stopRows(setup, 'stdrawreqprodabc123'))).toEqual([PROD_CLIENT]);
    // The reviewed change: the client's entry names the stop it lifts (the stop's run id, 970).
    const parametersFile = join(setup.workspace, 'infra', 'env', 'prod.parameters.json');
    const parameters = JSON.parse(readFileSync(parametersFile, 'utf8')) as { parameters: { partners: { value: Array<Record<string, unknown>> } } };
    parameters.parameters.partners.value[0].liftStop = '970';
    writeFileSync(parametersFile, JSON.stringify(parameters));
    rmSync(setup.log);
    const record = run('push', setup, '972');
    expect(stopRows(setup, 'stdrawreqprodabc123')).toEqual({});
    const deletes = calls(setup.log).filter((c) => isCall(c, 'storage', 'entity', 'delete'));
    expect(deletes.map((c) => [c.as, after(c, '--table-name'), after(c, '--partition-key'), after(c, '--if-match').startsWith('W/')])).toEqual([
      ['prod-deploy-client', 'StoppedClients', PROD_CLIENT, true],
    ]);
    expect(record.steps).toContain('deploy-prod > deploy: what-if, then the infrastructure and the Partners rows');
    // Stopped again by a later run (973): the file still names 970, so the deployment keeps the new stop.
    signIn(setup.state, 'prod-stop-client', 'servicePrincipal');
    const later = stopByHand(setup, 'prod', PROD_CLIENT, PROD_NETWORK, { GITHUB_RUN_ID: '973' });
    expect([later.status, later.stderr]).toEqual([0, '']);
    run('push', setup, '974');
    expect(Object.values(stopRows(setup, 'stdrawreqprodabc123')).map((row) => row.StopId)).toEqual(['973']);
  });

  test('a warning the Azure CLI writes on stderr is never read as the stop: the reviewed liftStop lifts it, and a second run says it is lifted already', () => {
    const setup = deployed();
    stop(setup, { environment: 'prod', client_id: PROD_CLIENT });
    const parametersFile = join(setup.workspace, 'infra', 'env', 'prod.parameters.json');
    const parameters = JSON.parse(readFileSync(parametersFile, 'utf8')) as { parameters: { partners: { value: Array<Record<string, unknown>> } } };
    parameters.parameters.partners.value[0].liftStop = '970';
    writeFileSync(parametersFile, JSON.stringify(parameters));
    signIn(setup.state, 'prod-deploy-client', 'servicePrincipal');
    const warning = "WARNING: You have 2 update(s) available. Consider updating your CLI installation with 'az upgrade'";
    const partners = () =>
      spawnSync('bash', [join(setup.workspace, 'scripts', 'deploy.sh'), 'prod', '--infra-only', '--yes'], {
        env: { ...standInEnv(setup), AZ_CALLER_NETWORK: PROD_NETWORK, AZ_WARNING: warning },
        encoding: 'utf8',
      });
    const lifted = partners();
    expect([lifted.status, lifted.stdout]).toEqual([0, expect.stringContaining(`stop 970 of client ${PROD_CLIENT} lifted`)]);
    expect(lifted.stdout).not.toContain('stays stopped');
    expect(stopRows(setup, 'stdrawreqprodabc123')).toEqual({});
    const again = partners();
    expect([again.status, again.stdout]).toEqual([0, expect.stringContaining(`stop 970 of client ${PROD_CLIENT}: not on the stop list (lifted already)`)]);
  });

  test("from outside prod's network the closed account refuses: nothing changes, and the message names the runner group", () => {
    const setup = deployed();
    signIn(setup.state, 'prod-stop-client', 'servicePrincipal');
    // A laptop, or a GitHub-hosted runner: scripts/stopClient.cjs outside the network.
    const result = stopByHand(setup, 'prod', PROD_CLIENT);
    expect(result.status).toBe(1);
    expect(result.stderr).toContain('AuthorizationFailure');
    expect(result.stderr).toContain(
      `answers only inside prod's network: run the stop-client workflow, whose job runs on the runner group ${PROD_RUNNER_GROUP}`,
    );
    expect(stopCalls(setup).map(described)).toEqual(['prod-stop-client: GET /stdrawreqprodabc123/Partners']);
    expect(partnerRows(setup, 'stdrawreqprodabc123')[PROD_CLIENT].Active).toBe('true');
    // The workflow without a runner group for prod is refused before any runner of the network or sign-in.
    const file = join(setup.workspace, 'infra', 'env', 'prod.pipeline.json');
    writeFileSync(file, JSON.stringify({ ...(JSON.parse(readFileSync(file, 'utf8')) as object), privateRunnerGroup: '' }));
    const tokens: Array<[string, string]> = [];
    const failure = refusal(() => stop(setup, { environment: 'prod', client_id: PROD_CLIENT }, tokens));
    expect(failure.step).toBe("target: the stop job's runner (the environment's runner group in its network, or GitHub-hosted)");
    expect(failure.stderr).toContain('set privateRunnerGroup');
    expect(tokens).toEqual([]);
  });

  test.each([
    ['not a GUID', 'PARTNER-001'],
    ['a GUID with more after it', `${PROD_CLIENT}; az storage entity delete`],
    ['a workflow command', '::add-mask::x'],
    ['a GUID without its dashes', PROD_CLIENT.replace(/-/g, '')],
    ['empty', ''],
  ])('a client id that is %s is refused before any Azure call, and not echoed', (_name, clientId) => {
    const setup = deployed();
    const tokens: Array<[string, string]> = [];
    const failure = refusal(() => stop(setup, { environment: 'prod', client_id: clientId }, tokens));
    expect(failure.step).toBe('target: the client id is a client application id (a GUID)');
    expect(failure.stderr).toContain('ERR_STOP_CLIENT_ID');
    if (clientId !== '') expect(failure.stdout + failure.stderr).not.toContain(clientId);
    expect(failure.record.runners).toEqual({ target: 'ubuntu-24.04' });
    expect(tokens).toEqual([]);
    expect(existsSync(setup.log)).toBe(false); // no az call at all
    // The script refuses it too, whoever runs it.
    const result = stopByHand(setup, 'prod', clientId);
    expect([result.status, result.stderr]).toEqual([2, expect.stringContaining('ERR_STOP_CLIENT_ID')]);
    expect(existsSync(setup.log)).toBe(false);
  });

  test('a client with no Partners row is refused and no row is created', () => {
    const setup = deployed();
    const before = partnerRows(setup, 'stdrawreqprodabc123');
    const unknown = '0f0f0f0f-1234-4abc-8def-0123456789ab';
    const failure = refusal(() => stop(setup, { environment: 'prod', client_id: unknown }));
    expect(failure.step).toBe('stop: put the client on the stop list');
    expect(failure.stderr).toContain(`ERR_STOP_NO_ROW: client ${unknown} has no Partners row in prod`);
    expect(stopCalls(setup).map(described)).toEqual(['prod-stop-client: GET /stdrawreqprodabc123/Partners']);
    expect(partnerRows(setup, 'stdrawreqprodabc123')).toEqual(before);
    expect(stopRows(setup, 'stdrawreqprodabc123')).toEqual({});
  });

  test("the stop identity signs in only from main's stop-client.yml in <env>-stop, and the deploy identity never from there", () => {
    const from = (environment: string, file = 'stop-client.yml'): OidcToken => ({
      iss: GITHUB_ISSUER,
      sub: githubSubject(REPOSITORY, {
        environment,
        event: 'workflow_dispatch',
        ref: 'refs/heads/main',
        jobWorkflowRef: `octo-org/octo-repo/.github/workflows/${file}@refs/heads/main`,
      }),
      aud: AZURE_AUDIENCE,
    });
    for (const env of ['dev', 'prod'] as const) {
      const of = (identity: string) => CREDENTIALS[env].filter((c) => c.identity === `id-drawreq-${env}-${identity}`);
      expect(matching(of('stop'), from(`${env}-stop`))).toHaveLength(1);
      expect(matching(of('stop'), from(env))).toEqual([]);
      expect(matching(of('stop'), from(`${env}-stop`, 'deploy-environment.yml'))).toEqual([]);
      expect(matching(of('deploy'), from(`${env}-stop`))).toEqual([]);
      expect(matching(of('plan'), from(`${env}-stop`))).toEqual([]);
    }
    // The workflow given the deploy identity's client id would be refused by Entra: the job is in prod-stop.
    const setup = deployed();
    expect(() => exchange(TARGETS.prod.deployClientId, from('prod-stop'), CREDENTIALS)).toThrow('AADSTS700213');
    expect(stopCalls(setup)).toEqual([]);
  });

  test('only from main: a dispatch from another branch is refused before anything is checked out', () => {
    const setup = deployed();
    const failure = refusal(() => stop(setup, { environment: 'prod', client_id: PROD_CLIENT }, [], 'refs/heads/feature/x'));
    expect(failure.step).toBe('target: dispatched from main');
    expect(failure.stderr).toContain('ERR_REF_NOT_MAIN');
    expect(existsSync(setup.log)).toBe(false);
  });
});
