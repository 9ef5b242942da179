/**
 * The pipeline and scripts/deploy.sh, run for real against a recording stand-in of the Azure CLI
 * (tests/support/azStandIn.cjs: real JMESPath, the CLI's tsv) and a local "function app" for the smoke
 * check. The workflows run as GitHub would for a push to main, a pull request and a rollback
 * (tests/support/workflowRunner.ts); the calls each makes, in order and with their arguments, are the
 * assertions: what-if before create, infrastructure before code, dev before prod, the same package
 * everywhere, nothing written by a pull request. Each sign-in presents the token GitHub would give the job
 * and is accepted only if exactly one federated credential that infra/bootstrap.bicep gives that client
 * id's identity matches it, as Microsoft Entra ID decides (tests/support/oidcTrust.ts).
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { chmodSync, cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { bootstrapCredentials, matching, type FederatedCredential, type GitHubRepository, type OidcToken } from '../support/oidcTrust';
import { runWorkflow, type RunRecord } from '../support/workflowRunner';

const ROOT = join(__dirname, '..', '..');
const TARGETS = {
  dev: { deployClientId: 'dev-deploy-client', planClientId: 'dev-plan-client', deployPrincipalId: 'dev-deploy-object' },
  prod: { deployClientId: 'prod-deploy-client', planClientId: 'prod-plan-client', deployPrincipalId: 'prod-deploy-object' },
} as const;
const PARTNERS = {
  dev: [
    { partnerId: 'PARTNER-001', clientAppId: '0b9f3c52-1111-4222-8333-944455556666' },
    { partnerId: 'PARTNER-003', clientAppId: '7d0e4a61-7777-4888-9999-aaaabbbbcccc', active: false },
  ],
  prod: [{ partnerId: 'PARTNER-001', clientAppId: '5c2a9e10-dddd-4eee-8fff-000011112222' }],
} as const;

/** The repository the pipeline runs in, created after 15 July 2026: GitHub sends immutable subjects. */
const REPOSITORY: GitHubRepository = { owner: 'octo-org', ownerId: '123', name: 'octo-repo', id: '456', immutableSubject: true };
/** The user-assigned identity each client id of TARGETS belongs to. */
const IDENTITIES: Record<string, { env: 'dev' | 'prod'; identity: string }> = Object.fromEntries(
  (['dev', 'prod'] as const).flatMap((env) => [
    [TARGETS[env].deployClientId, { env, identity: `id-drawreq-${env}-deploy` }],
    [TARGETS[env].planClientId, { env, identity: `id-drawreq-${env}-plan` }],
  ]),
);
/** The bootstrap's federated credentials for this repository, by environment (githubSubjectFormat left to its default). */
let CREDENTIALS: Record<'dev' | 'prod', FederatedCredential[]>;
const bootstrapped = (env: 'dev' | 'prod', format?: string) =>
  bootstrapCredentials({
    environmentName: env,
    githubRepository: `${REPOSITORY.owner}/${REPOSITORY.name}`,
    githubOwnerId: REPOSITORY.ownerId,
    githubRepositoryId: REPOSITORY.id,
    ...(format === undefined ? {} : { githubSubjectFormat: format }),
  });
beforeAll(async () => {
  CREDENTIALS = { dev: await bootstrapped('dev'), prod: await bootstrapped('prod') };
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
let url: string;
let appLog: string;
beforeAll(async () => {
  appLog = join(mkdtempSync(join(tmpdir(), 'pipeline-app-')), 'requests.log');
  const source = `
    const { appendFileSync } = require('node:fs');
    const server = require('node:http').createServer((req, res) => {
      appendFileSync(process.argv[1], req.method + ' ' + req.url + '\\n');
      res.writeHead(req.method === 'POST' && req.url === '/DrawRequest' ? 401 : 404).end();
    });
    server.listen(0, '127.0.0.1', () => console.log(server.address().port));`;
  app = spawn(process.execPath, ['-e', source, appLog], { stdio: ['ignore', 'pipe', 'inherit'] });
  const port = await new Promise<string>((resolve) => app.stdout?.once('data', (chunk: Buffer) => resolve(chunk.toString().trim())));
  url = `http://127.0.0.1:${port}`;
});
afterAll(() => {
  app?.kill();
});
const smokeRequests = () => readFileSync(appLog, 'utf8').trim().split('\n');

/** A repository checkout with the environments bootstrapped (pipeline files filled in) and partners listed. */
function workspace(): { workspace: string; zipSha: string; bin: string; state: string; log: string } {
  dir = mkdtempSync(join(tmpdir(), 'pipeline-'));
  const ws = join(dir, 'repo');
  for (const part of ['infra', 'scripts', '.github']) cpSync(join(ROOT, part), join(ws, part), { recursive: true });
  for (const env of ['dev', 'prod'] as const) {
    const target = { tenantId: 'tenant-id', subscriptionId: '11111111-2222-4333-8444-555555555555', resourceGroup: `rg-drawreq-${env}`, ...TARGETS[env] };
    writeFileSync(join(ws, 'infra', 'env', `${env}.pipeline.json`), JSON.stringify(target));
    const parametersFile = join(ws, 'infra', 'env', `${env}.parameters.json`);
    const parameters = JSON.parse(readFileSync(parametersFile, 'utf8')) as { parameters: Record<string, { value: unknown }> };
    parameters.parameters.partners = { value: PARTNERS[env] };
    if (env === 'prod')
      parameters.parameters.onCallActionGroupId = { value: '/subscriptions/s/resourceGroups/g/providers/Microsoft.Insights/actionGroups/on-call' };
    writeFileSync(parametersFile, JSON.stringify(parameters));
  }
  // The package the build job makes (npm run package is proven by the package tests).
  mkdirSync(join(ws, 'dist'));
  const zip = randomBytes(4096);
  writeFileSync(join(ws, 'dist', 'draw-request-service.zip'), zip);
  const bin = join(dir, 'bin');
  mkdirSync(bin);
  writeFileSync(join(bin, 'az'), `#!/bin/sh\nexec "${process.execPath}" "${join(ROOT, 'tests', 'support', 'azStandIn.cjs')}" "$@"\n`);
  chmodSync(join(bin, 'az'), 0o755);
  const state = join(dir, 'az-state.json');
  writeFileSync(
    state,
    JSON.stringify({ signedIn: { name: 'nobody', type: 'user' }, functionAppUrl: url, groups: ['rg-drawreq-dev', 'rg-drawreq-prod'], deployments: {} }),
  );
  return { workspace: ws, zipSha: createHash('sha256').update(zip).digest('hex'), bin, state, log: join(dir, 'az.log') };
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

function run(
  event: 'push' | 'pull_request' | 'workflow_dispatch',
  setup: ReturnType<typeof workspace>,
  runId: string,
  inputs?: Record<string, unknown>,
  artifacts?: string,
  oidc: { repository?: GitHubRepository; credentials?: Record<'dev' | 'prod', FederatedCredential[]>; tokens?: Array<[string, string]> } = {},
): RunRecord {
  return runWorkflow('deploy.yml', {
    workspace: setup.workspace,
    event,
    inputs,
    runId,
    artifacts: artifacts ?? join(dir, 'artifacts'),
    env: {
      PATH: `${setup.bin}:${process.env.PATH ?? ''}`,
      HOME: dir,
      AZ_STATE: setup.state,
      AZ_LOG: setup.log,
      SMOKE_RETRY_SECONDS: '0',
      DEPLOY_RETRY_SECONDS: '0',
    },
    // The build's npm steps (Core Tools, .ci/run, npm run package) are proven by CI itself.
    skip: (step) => /^(npm |bash \.ci\/run)/.test(step.run ?? ''),
    repository: oidc.repository ?? REPOSITORY,
    login: (clientId, token) => {
      exchange(clientId, token, oidc.credentials ?? CREDENTIALS);
      oidc.tokens?.push([clientId, token.sub]);
      signIn(setup.state, clientId, 'servicePrincipal');
    },
  });
}

describe('a push to main', () => {
  test('builds once; dev: what-if, create, partners, the package, smoke; then prod the same; the same zip in both', () => {
    const setup = workspace();
    const record = run('push', setup, '900');
    const log = calls(setup.log);
    const changing = log.filter((c) => !isCall(c, 'account') && !(isCall(c, 'deployment', 'group', 'show') || isCall(c, 'deployment', 'group', 'list')));
    expect(changing.map((c) => `${c.as}: ${verb(c)}${c.args[0] === 'deployment' || c.args[0] === 'functionapp' ? ` ${groupOf(c)}` : ''}`)).toEqual([
      'dev-deploy-client: deployment group what-if rg-drawreq-dev',
      'dev-deploy-client: group exists',
      'dev-deploy-client: deployment group create rg-drawreq-dev',
      'dev-deploy-client: storage entity insert',
      'dev-deploy-client: storage entity insert',
      'dev-deploy-client: functionapp deploy rg-drawreq-dev',
      'prod-deploy-client: deployment group what-if rg-drawreq-prod',
      'prod-deploy-client: group exists',
      'prod-deploy-client: deployment group create rg-drawreq-prod',
      'prod-deploy-client: storage entity insert',
      'prod-deploy-client: functionapp deploy rg-drawreq-prod',
    ]);
    // Every template call: the environment's own files, and its deploying identity may write Partners.
    for (const c of log.filter((c) => isCall(c, 'deployment', 'group', 'what-if') || isCall(c, 'deployment', 'group', 'create'))) {
      const env = groupOf(c).replace('rg-drawreq-', '') as 'dev' | 'prod';
      expect(c.args).toEqual(
        expect.arrayContaining([
          '--template-file',
          'infra/main.bicep',
          `@infra/env/${env}.parameters.json`,
          `partnerWriterPrincipalId=${TARGETS[env].deployPrincipalId}`,
          'partnerWriterPrincipalType=ServicePrincipal',
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
    expect(record.steps.filter((s) => s.includes('smoke check'))).toHaveLength(2);
    expect(smokeRequests().filter((r) => r === 'POST /DrawRequest').length).toBeGreaterThanOrEqual(2);
    expect(Object.entries(record.summaries).map(([job, text]) => [job, text.split('\n')[0]])).toEqual([
      ['deploy-dev > deploy', '### What-if: dev (rg-drawreq-dev)'],
      ['deploy-prod > deploy', '### What-if: prod (rg-drawreq-prod)'],
    ]);
  });

  test("each partner of the environment's parameters file gets its Partners row, inactive ones as inactive, signed in as the deployer", () => {
    const setup = workspace();
    run('push', setup, '901');
    const inserts = calls(setup.log).filter((c) => isCall(c, 'storage', 'entity', 'insert'));
    expect(
      inserts.map((c) => [
        c.as,
        after(c, '--account-name'),
        after(c, '--table-name'),
        ...c.args.slice(c.args.indexOf('--entity') + 1, c.args.indexOf('--entity') + 6),
      ]),
    ).toEqual([
      [
        'dev-deploy-client',
        'stdrawreqdevabc123',
        'Partners',
        `PartitionKey=${PARTNERS.dev[0].clientAppId}`,
        'RowKey=',
        'PartnerId=PARTNER-001',
        'Active=true',
        'Active@odata.type=Edm.Boolean',
      ],
      [
        'dev-deploy-client',
        'stdrawreqdevabc123',
        'Partners',
        `PartitionKey=${PARTNERS.dev[1].clientAppId}`,
        'RowKey=',
        'PartnerId=PARTNER-003',
        'Active=false',
        'Active@odata.type=Edm.Boolean',
      ],
      [
        'prod-deploy-client',
        'stdrawreqprodabc123',
        'Partners',
        `PartitionKey=${PARTNERS.prod[0].clientAppId}`,
        'RowKey=',
        'PartnerId=PARTNER-001',
        'Active=true',
        'Active@odata.type=Edm.Boolean',
      ],
    ]);
    for (const c of inserts) expect(c.args).toEqual(expect.arrayContaining(['--auth-mode', 'login', '--if-exists', 'replace']));
  });
});

test('a pull request previews dev and prod with the read-only identities and changes nothing', () => {
  const setup = workspace();
  const record = run('pull_request', setup, '902');
  const log = calls(setup.log);
  expect(log.filter((c) => !isCall(c, 'account')).map((c) => `${c.as}: ${verb(c)} ${groupOf(c)} ${after(c, '--validation-level')}`)).toEqual([
    'dev-plan-client: deployment group what-if rg-drawreq-dev ProviderNoRbac',
    'prod-plan-client: deployment group what-if rg-drawreq-prod ProviderNoRbac',
  ]);
  // The preview is of what the deployer would do: its identity is the one that may write Partners.
  for (const c of log.filter((c) => isCall(c, 'deployment'))) expect(c.args.join(' ')).toMatch(/partnerWriterPrincipalId=(dev|prod)-deploy-object/);
  expect(Object.values(record.summaries).map((s) => s.split('\n')[0])).toEqual(['### What-if: dev (rg-drawreq-dev)', '### What-if: prod (rg-drawreq-prod)']);
  expect(record.steps.some((s) => s.startsWith('deploy-'))).toBe(false);
});

test("a rollback re-deploys an earlier run's artifact to the chosen environment: its code only, then the smoke check", () => {
  const setup = workspace();
  run('push', setup, '903');
  rmSync(setup.log);
  // A later release replaced the package in the workspace; the rollback must not pick it up.
  writeFileSync(join(setup.workspace, 'dist', 'draw-request-service.zip'), randomBytes(10));
  run('workflow_dispatch', setup, '904', { environment: 'prod', run_id: '903', with_infrastructure: false });
  const log = calls(setup.log).filter((c) => !isCall(c, 'account') && !isCall(c, 'deployment', 'group', 'list'));
  expect(log.map((c) => [c.as, verb(c), groupOf(c), c.sha256])).toEqual([['prod-deploy-client', 'functionapp deploy', 'rg-drawreq-prod', setup.zipSha]]);
});

describe('scripts/deploy.sh by hand', () => {
  const deploy = (setup: ReturnType<typeof workspace>, args: string[], extraPath = '') =>
    spawnSync('bash', [join(setup.workspace, 'scripts', 'deploy.sh'), ...args], {
      env: {
        PATH: `${extraPath}${setup.bin}:${process.env.PATH ?? ''}`,
        HOME: dir,
        AZ_STATE: setup.state,
        AZ_LOG: setup.log,
        SMOKE_RETRY_SECONDS: '0',
        DEPLOY_RETRY_SECONDS: '0',
      },
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
      'functionapp deploy',
    ]);
    expect(log[1].args).toEqual(expect.arrayContaining(['partnerWriterPrincipalId=object-id-of-the-person', 'partnerWriterPrincipalType=User']));
    expect(result.stdout).toContain('smoke check: POST');
  });

  test('--what-if previews only; --code-only deploys the given package to the last deployment and smoke-checks it', () => {
    const setup = workspace();
    signIn(setup.state, 'deployer', 'servicePrincipal');
    expect(deploy(setup, ['prod', '--what-if']).status).toBe(0);
    expect(
      calls(setup.log)
        .filter((c) => !isCall(c, 'account'))
        .map(verb),
    ).toEqual(['ad sp show', 'deployment group what-if']);
    rmSync(setup.log);
    expect(deploy(setup, ['prod', '--infra-only', '--yes']).status).toBe(0);
    rmSync(setup.log);
    const zip = join(setup.workspace, 'dist', 'draw-request-service.zip');
    const result = deploy(setup, ['prod', '--code-only', '--package', zip]);
    expect(result.status).toBe(0);
    const log = calls(setup.log).filter((c) => !isCall(c, 'account'));
    expect(log.map(verb)).toEqual(['deployment group list', 'deployment group list', 'functionapp deploy']);
    expect(after(log[2], '--name')).toBe('func-drawreq-prod-abc123');
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

  test("scripts/rollback.sh: a person re-deploys a run's artifact (fetched with the GitHub CLI) with that artifact's own script", () => {
    const setup = workspace();
    run('push', setup, '905');
    rmSync(setup.log);
    signIn(setup.state, 'jane@lender.example', 'user');
    const ghDir = join(dir, 'gh-bin');
    mkdirSync(ghDir);
    // gh run download <run> --name <name> --dir <dir>: the artifacts GitHub keeps, by run.
    writeFileSync(join(ghDir, 'gh'), `#!/bin/sh\necho "gh $*" >> "${join(dir, 'gh.log')}"\ncp -R "${join(dir, 'artifacts')}/$3/$5/." "$7"\n`);
    chmodSync(join(ghDir, 'gh'), 0o755);
    const result = spawnSync('bash', [join(ROOT, 'scripts', 'rollback.sh'), 'prod', '905'], {
      env: { PATH: `${ghDir}:${setup.bin}:${process.env.PATH ?? ''}`, HOME: dir, AZ_STATE: setup.state, AZ_LOG: setup.log, SMOKE_RETRY_SECONDS: '0' },
      encoding: 'utf8',
    });
    expect(result.stderr).toBe('');
    expect(result.status).toBe(0);
    expect(readFileSync(join(dir, 'gh.log'), 'utf8')).toMatch(/^gh run download 905 --name draw-request-service --dir \S+\n$/);
    expect(result.stdout).toContain('re-deploying run 905: {"commit":"c0ffee');
    const log = calls(setup.log).filter((c) => !isCall(c, 'account') && !isCall(c, 'deployment', 'group', 'list'));
    expect(log.map((c) => [c.as, verb(c), groupOf(c), c.sha256])).toEqual([['jane@lender.example', 'functionapp deploy', 'rg-drawreq-prod', setup.zipSha]]);
    expect(spawnSync('bash', [join(ROOT, 'scripts', 'rollback.sh'), 'prod', 'latest'], { encoding: 'utf8' }).status).toBe(2);
  });

  test('scripts/target.sh refuses an environment not bootstrapped yet, naming what to fill in', () => {
    const result = spawnSync('bash', [join(ROOT, 'scripts', 'target.sh'), 'prod'], { encoding: 'utf8' });
    expect(result.status).toBe(1);
    expect(result.stderr).toMatch(
      /prod\.pipeline\.json: set tenantId, subscriptionId, deployClientId, deployPrincipalId, planClientId from the outputs of infra\/bootstrap\.bicep/,
    );
  });
});

describe("sign-in: each job presents the token GitHub gives it, and only its own identity's federated credential accepts it", () => {
  const subjects = (repository: GitHubRepository, event: 'push' | 'pull_request'): Array<[string, string]> => {
    const prefix = repository.immutableSubject
      ? `repo:${repository.owner}@${repository.ownerId}/${repository.name}@${repository.id}`
      : `repo:${repository.owner}/${repository.name}`;
    return event === 'push'
      ? [
          ['dev-deploy-client', `${prefix}:environment:dev`],
          ['prod-deploy-client', `${prefix}:environment:prod`],
        ]
      : [
          ['dev-plan-client', `${prefix}:pull_request`],
          ['prod-plan-client', `${prefix}:pull_request`],
        ];
  };

  test.each([
    ['created after 15 July 2026 (immutable subjects)', REPOSITORY],
    ['created before, not opted in (legacy subjects)', { ...REPOSITORY, immutableSubject: false }],
  ])('a repository %s: main deploys as each environment’s deploy identity, a pull request previews as its plan identity', (_name, repository) => {
    for (const [event, runId] of [
      ['push', '910'],
      ['pull_request', '911'],
    ] as const) {
      const setup = workspace();
      const tokens: Array<[string, string]> = [];
      run(event, setup, runId, undefined, undefined, { repository, tokens });
      expect(tokens).toEqual(subjects(repository, event));
      rmSync(dir, { recursive: true, force: true }); // afterEach removes only the last workspace
    }
  });

  test('a rollback signs in from the GitHub environment it deploys', () => {
    const setup = workspace();
    run('push', setup, '912');
    const tokens: Array<[string, string]> = [];
    run('workflow_dispatch', setup, '913', { environment: 'prod', run_id: '912', with_infrastructure: false }, undefined, { tokens });
    expect(tokens).toEqual([['prod-deploy-client', 'repo:octo-org@123/octo-repo@456:environment:prod']]);
  });

  test('credentials for the legacy subject only (the bootstrap before this fix) refuse a repository created today, before any Azure call', async () => {
    const legacyOnly = { dev: await bootstrapped('dev', 'legacy'), prod: await bootstrapped('prod', 'legacy') };
    for (const event of ['push', 'pull_request'] as const) {
      const setup = workspace();
      const first = subjects(REPOSITORY, event)[0][1];
      expect(() => run(event, setup, '914', undefined, undefined, { credentials: legacyOnly })).toThrow(
        `AADSTS700213: No matching federated identity record found for presented assertion subject '${first}'.`,
      );
      expect(() => calls(setup.log)).toThrow(); // no az call at all: no log
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
