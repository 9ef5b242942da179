/**
 * Runs the pipeline's workflows (.github/workflows/) as GitHub Actions would for one event, on this
 * machine: jobs in `needs` order with their `if`, matrices, called workflows, step `if`, `env`,
 * `$GITHUB_OUTPUT` and `$GITHUB_STEP_SUMMARY`, job `outputs` read through `needs`, `runs-on` (each job's
 * runner, given the environment options.runner says a runner there has), and every `run` step executed by bash. Actions stand
 * in for themselves: checkout and setup-node are the workspace as it is, upload/download-artifact copy
 * a folder (kept per run id), azure/login presents the OpenID Connect token GitHub would give the job
 * (its subject by GitHub's documented rules: the job's environment, else the pull request, else the ref,
 * or the repository's customized template with the run's ref and the file the job is defined in;
 * tests/support/oidcTrust.ts) and the test decides, as Microsoft Entra ID would, whether it signs in. A
 * job that references an environment is first shown to options.environment, as GitHub applies the
 * environment's protection rules (or creates a missing one) before it sends the job to a runner.
 * Expressions: context paths, string literals, `==`, `!=`, `&&`, `||`, `!`, `fromJSON()` and the status
 * functions `success()`, `failure()`, `always()` (all these workflows use). A step that fails (a `run` step's
 * exit, azure/login refused) fails its job as GitHub does: the steps after it run only if their `if` asks for
 * a failure (`failure()`, `always()`), `steps.<id>.outcome` says which failed, and the run then stops with a
 * StepFailed, as GitHub skips the jobs that need the failed one. A job with `permissions: id-token: write`
 * gets ACTIONS_ID_TOKEN_REQUEST_URL and _TOKEN for its token (options.oidc), as GitHub's runner gives them.
 */
import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { randomUUID } from 'node:crypto';
import { githubClaims, githubToken, type GitHubJob, type GitHubRepository, type OidcToken } from './oidcTrust';

type Context = Record<string, unknown>;
interface Step {
  id?: string;
  name?: string;
  if?: string;
  uses?: string;
  run?: string;
  with?: Record<string, unknown>;
  env?: Record<string, string>;
}
interface Job {
  if?: string;
  'runs-on'?: unknown;
  outputs?: Record<string, string>;
  environment?: string | { name: string };
  needs?: string | string[];
  uses?: string;
  with?: Record<string, unknown>;
  strategy?: { matrix?: Record<string, unknown[]> };
  permissions?: Record<string, string>;
  steps?: Step[];
}

export interface RunOptions {
  /** The repository's checkout: the workflows are read from it, and jobs start in a copy of it. */
  readonly workspace: string;
  readonly event: 'push' | 'pull_request' | 'workflow_dispatch';
  /** github.ref: by default refs/heads/main (a pull request: its merge ref); a dispatch may be from another branch. */
  readonly ref?: string;
  readonly inputs?: Record<string, unknown>;
  readonly runId: string;
  /** The environment of every `run` step (PATH with the stand-ins, their state). */
  readonly env: Record<string, string>;
  /** Artifacts by run id, then name: folders (shared across runs, as GitHub keeps them). */
  readonly artifacts: string;
  /** A `run` step not to execute (its work is proven elsewhere), recorded as skipped. */
  readonly skip?: (step: Step) => boolean;
  /** The repository the workflows run in: what its tokens' subjects name; `github.repository` is its owner/name. */
  readonly repository: GitHubRepository;
  /** azure/login: exchange the job's token for the client id's identity (throw to refuse), and sign the stand-in in. */
  readonly login: (clientId: string, token: OidcToken) => void;
  /** What a runner of this `runs-on` has besides options.env (where GitHub places it: e.g. inside a network); none by default. */
  readonly runner?: (runsOn: unknown) => Record<string, string>;
  /**
   * GitHub's side of a job that references an environment, before the job runs: create it if it does not
   * exist, and refuse the job (throw) when its protection rules do not admit the run's ref.
   */
  readonly environment?: (name: string, ref: string) => void;
  /**
   * GitHub's OIDC token endpoint (tests/support/oidcTokenStandIn.cjs): its URL, and the folder where it finds
   * each job's claims under the job's request token.
   */
  readonly oidc?: { readonly url: string; readonly folder: string };
  /**
   * The workflow file GitHub names in a job's `job_workflow_ref`: the file the job is defined in (`defined`,
   * GitHub's documented rule), unless a test says otherwise (`caller`: the workflow that called it).
   */
  readonly jobWorkflowFile?: (defined: string, caller: string) => string;
}

export interface RunRecord {
  /** `job: step` in the order they ran, with `(skipped)` for steps not executed. */
  readonly steps: string[];
  /** What each `run` step that ran printed (stdout, then stderr), by `job: step`. */
  readonly output: Record<string, string>;
  /** Job summaries, by job. */
  readonly summaries: Record<string, string>;
  /** Each job's `runs-on` as evaluated, by job (jobs that ran steps). */
  readonly runners: Record<string, unknown>;
}

/**
 * A `run` step that exited non-zero: the run stops there, as GitHub fails the job and skips the jobs
 * that need it. Carries what ran up to and including that step, and the step's output.
 */
export class StepFailed extends Error {
  constructor(
    readonly step: string,
    readonly status: number | null,
    readonly stdout: string,
    readonly stderr: string,
    readonly record: RunRecord,
  ) {
    super(`${step} failed (${status}):\n${stdout}\n${stderr}`);
    this.name = 'StepFailed';
  }
}

/** The status functions of a step's `if`, by the job's status so far (context `job.status`). */
const STATUS_FUNCTIONS: Record<string, (status: unknown) => boolean> = {
  success: (status) => status !== 'failure',
  failure: (status) => status === 'failure',
  always: () => true,
};

/** Evaluates a workflow expression (without `${{ }}`). */
export function evaluate(expression: string, context: Context): unknown {
  const tokens = expression.match(/'[^']*'|==|!=|&&|\|\||!|\(|\)|[A-Za-z_][\w.-]*/g) ?? [];
  let i = 0;
  const primary = (): unknown => {
    const token = tokens[i++];
    if (STATUS_FUNCTIONS[token] !== undefined && tokens[i] === '(' && tokens[i + 1] === ')') {
      i += 2;
      return STATUS_FUNCTIONS[token]((context.job as { status?: string } | undefined)?.status);
    }
    if (token === '(') {
      const value = or();
      i++; // ')'
      return value;
    }
    if (token === '!') return !primary();
    if (token === 'fromJSON' && tokens[i] === '(') {
      i++; // '('
      const text = or();
      i++; // ')'
      return JSON.parse(String(text)) as unknown;
    }
    if (token.startsWith("'")) return token.slice(1, -1);
    if (token === 'true' || token === 'false') return token === 'true';
    return token.split('.').reduce<unknown>((v, key) => (v !== null && typeof v === 'object' ? (v as Context)[key] : undefined), context);
  };
  const comparison = (): unknown => {
    const left = primary();
    if (tokens[i] === '==' || tokens[i] === '!=') {
      const op = tokens[i++];
      const right = primary();
      return op === '==' ? String(left) === String(right) : String(left) !== String(right);
    }
    return left;
  };
  /** A left-associative chain of `op`, e.g. a && b && c, each value `combine`d with the next. */
  const chain = (op: string, next: () => unknown, combine: (left: unknown, right: unknown) => unknown) => (): unknown => {
    let value = next();
    while (tokens[i] === op) {
      i++;
      value = combine(value, next());
    }
    return value;
  };
  const and = chain('&&', comparison, (left, right) => (left ? right : left));
  const or = chain('||', and, (left, right) => (left ? left : right));
  return or();
}

/** A value with its `${{ }}` expressions replaced. */
function interpolate(value: unknown, context: Context): unknown {
  if (typeof value !== 'string') return value;
  const whole = /^\$\{\{(.*)\}\}$/.exec(value.trim());
  if (whole && !whole[1].includes('}}')) return evaluate(whole[1].trim(), context);
  return value.replace(/\$\{\{(.*?)\}\}/g, (_, e: string) => String(evaluate(e.trim(), context)));
}

const ifHolds = (condition: string | undefined, context: Context) =>
  condition === undefined || Boolean(evaluate(condition.replace(/^\$\{\{|\}\}$/g, '').trim(), context));
/** A step's `if`: without a status function GitHub adds `success()`, so after a failure only `failure()`/`always()` steps run. */
const stepRuns = (condition: string | undefined, context: Context) => {
  const expression = condition ?? 'true';
  const statusAsked = /\b(success|failure|always|cancelled)\(\)/.test(expression);
  return ifHolds(statusAsked ? expression : `success() && (${expression.replace(/^\$\{\{|\}\}$/g, '')})`, context);
};

function outputsOf(file: string): Record<string, string> {
  if (!existsSync(file)) return {};
  const outputs: Record<string, string> = {};
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    const at = line.indexOf('=');
    if (at > 0) outputs[line.slice(0, at)] = line.slice(at + 1);
  }
  return outputs;
}

export function runWorkflow(file: string, options: RunOptions): RunRecord {
  const record: RunRecord = { steps: [], output: {}, summaries: {}, runners: {} };
  const ref = options.ref ?? (options.event === 'pull_request' ? 'refs/pull/7/merge' : 'refs/heads/main');
  const github = {
    event_name: options.event,
    ref,
    run_id: options.runId,
    repository: `${options.repository.owner}/${options.repository.name}`,
    sha: 'c0ffee'.padEnd(40, '0'),
    token: 'github-token',
  };
  runJobs(file, { github, inputs: options.inputs ?? {} }, options, record, '', file);
  return record;
}

/** job_workflow_ref of a job defined in `file` (called by `caller`): a local reusable workflow (`./`) runs at its caller's ref. */
const jobWorkflowRef = (options: RunOptions, file: string, caller: string, ref: string) =>
  `${options.repository.owner}/${options.repository.name}/.github/workflows/${options.jobWorkflowFile?.(file, caller) ?? file}@${ref}`;

function runJobs(file: string, base: Context, options: RunOptions, record: RunRecord, prefix: string, caller: string): void {
  const workflow = parse(readFileSync(join(options.workspace, '.github', 'workflows', file), 'utf8')) as { jobs: Record<string, Job> };
  const done = new Map<string, boolean>();
  // Each finished job's outputs (its `outputs:` evaluated over its steps), as `needs.<job>.outputs`.
  const needs: Record<string, { outputs: Record<string, string> }> = {};
  const pending = Object.keys(workflow.jobs);
  while (pending.length > 0) {
    const index = pending.findIndex((name) => [workflow.jobs[name].needs ?? []].flat().every((need) => done.has(need)));
    if (index < 0) throw new Error(`${file}: jobs wait on each other: ${pending.join(', ')}`);
    const [name] = pending.splice(index, 1);
    const job = workflow.jobs[name];
    const needsMet = [job.needs ?? []].flat().every((need) => done.get(need) === true);
    const jobBase = { ...base, needs };
    const runs = needsMet && ifHolds(job.if, jobBase);
    done.set(name, runs);
    if (!runs) continue;
    const matrix = job.strategy?.matrix ?? {};
    const combinations = Object.entries(matrix).reduce<Context[]>((all, [key, list]) => all.flatMap((c) => list.map((v) => ({ ...c, [key]: v }))), [{}]);
    for (const combination of combinations) {
      const context = { ...jobBase, matrix: combination };
      const label = `${prefix}${name}${Object.keys(combination).length > 0 ? ` (${Object.values(combination).join(', ')})` : ''}`;
      if (job.uses !== undefined) {
        const inputs = Object.fromEntries(Object.entries(job.with ?? {}).map(([k, v]) => [k, interpolate(v, context)]));
        runJobs(job.uses.replace('./.github/workflows/', ''), { ...base, inputs }, options, record, `${label} > `, file);
      } else {
        const environment = typeof job.environment === 'object' ? job.environment.name : job.environment;
        const runsOn = interpolate(job['runs-on'], context);
        const environmentName = environment === undefined ? undefined : String(interpolate(environment, context));
        const ref = (base.github as { ref: string }).ref;
        if (environmentName !== undefined) options.environment?.(environmentName, ref);
        record.runners[label] = runsOn;
        const identity: GitHubJob = {
          environment: environmentName,
          event: (base.github as { event_name: string }).event_name,
          ref,
          jobWorkflowRef: jobWorkflowRef(options, file, caller, ref),
        };
        const steps = runSteps(job, context, options, record, label, runsOn, identity);
        needs[name] = {
          outputs: Object.fromEntries(Object.entries(job.outputs ?? {}).map(([k, v]) => [k, String(interpolate(v, { ...context, steps }))])),
        };
      }
    }
  }
}

/** Some of the variables GitHub sets in every step (its "Default environment variables"). */
function defaults(base: Context): Record<string, string> {
  const github = base.github as { run_id: string; repository: string; ref: string };
  return { GITHUB_RUN_ID: github.run_id, GITHUB_REPOSITORY: github.repository, GITHUB_REF: github.ref, GITHUB_ACTOR: 'octocat' };
}

/**
 * What a job with `id-token: write` gets to ask GitHub for its token: the variables GitHub's runner sets
 * (ACTIONS_ID_TOKEN_REQUEST_URL, ACTIONS_ID_TOKEN_REQUEST_TOKEN), the token endpoint told the job's claims.
 */
function idTokenEnv(job: Job, options: RunOptions, identity: GitHubJob): Record<string, string> {
  if (job.permissions?.['id-token'] !== 'write' || options.oidc === undefined) return {};
  const requestToken = randomUUID();
  writeFileSync(join(options.oidc.folder, `${requestToken}.json`), JSON.stringify(githubClaims(options.repository, identity)));
  return { ACTIONS_ID_TOKEN_REQUEST_URL: `${options.oidc.url}/token?api-version=2.0`, ACTIONS_ID_TOKEN_REQUEST_TOKEN: requestToken };
}

/** A step that failed: the first one ends the run once the job's `failure()` steps have run. */
interface Failure {
  readonly title: string;
  readonly status: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs a job's steps; returns its `steps` context (their outputs and outcomes). */
function runSteps(
  job: Job,
  base: Context,
  options: RunOptions,
  record: RunRecord,
  label: string,
  runsOn: unknown,
  identity: GitHubJob,
): Record<string, { outputs: Record<string, string>; outcome: string }> {
  const steps = job.steps ?? [];
  // Each job starts on a fresh runner: a copy of the repository (what checkout gives), nothing else kept.
  const runner = join(options.artifacts, '..', 'runners', label.replace(/[^\w-]+/g, '_'));
  rmSync(runner, { recursive: true, force: true });
  mkdirSync(runner, { recursive: true });
  const checkedOut = steps.some((s) => s.uses?.startsWith('actions/checkout@'));
  if (checkedOut) cpSync(options.workspace, runner, { recursive: true, filter: (src) => !src.includes('node_modules') });
  const summary = join(runner, '.summary');
  const tokenEnv = idTokenEnv(job, options, identity);
  const stepsContext: Record<string, { outputs: Record<string, string>; outcome: string }> = {};
  let failed: Failure | undefined;
  for (const [n, step] of steps.entries()) {
    const context = { ...base, steps: stepsContext, job: { status: failed === undefined ? 'success' : 'failure' } };
    const title = `${label}: ${step.name ?? step.uses ?? step.run?.split('\n')[0]}`;
    if (!stepRuns(step.if, context)) {
      record.steps.push(`${title} (skipped)`);
      if (step.id !== undefined) stepsContext[step.id] = { outputs: {}, outcome: 'skipped' };
      continue;
    }
    const given = Object.fromEntries(Object.entries(step.with ?? {}).map(([k, v]) => [k, interpolate(v, context)]));
    if (step.uses !== undefined) {
      const action = step.uses.split('@')[0];
      if (action === 'actions/upload-artifact') {
        const target = join(options.artifacts, options.runId, String(given.name));
        rmSync(target, { recursive: true, force: true });
        cpSync(join(runner, String(given.path)), target, { recursive: true });
      } else if (action === 'actions/download-artifact') {
        const runId = typeof given['run-id'] === 'string' ? given['run-id'] : options.runId;
        cpSync(join(options.artifacts, runId, String(given.name)), join(runner, String(given.path)), { recursive: true });
      } else if (action === 'azure/login') {
        try {
          options.login(String(given['client-id']), githubToken(options.repository, identity));
        } catch (error) {
          // azure/login fails the step with Entra's answer (AADSTS…).
          record.steps.push(title);
          failed ??= { title, status: 1, stdout: '', stderr: error instanceof Error ? error.message : String(error) };
          if (step.id !== undefined) stepsContext[step.id] = { outputs: {}, outcome: 'failure' };
          continue;
        }
      } else if (action !== 'actions/checkout' && action !== 'actions/setup-node') {
        throw new Error(`${title}: no stand-in for ${step.uses}`);
      }
      record.steps.push(title);
      if (step.id !== undefined) stepsContext[step.id] = { outputs: {}, outcome: 'success' };
      continue;
    }
    if (options.skip?.(step)) {
      record.steps.push(`${title} (skipped)`);
      continue;
    }
    const output = join(runner, `.output-${n}`);
    const env = Object.fromEntries(Object.entries(step.env ?? {}).map(([k, v]) => [k, String(interpolate(v, context))]));
    const result = spawnSync('bash', ['-e', '-o', 'pipefail', '-c', String(step.run)], {
      cwd: runner,
      env: {
        ...options.env,
        ...options.runner?.(runsOn),
        ...env,
        ...defaults(base),
        ...tokenEnv,
        GITHUB_OUTPUT: output,
        GITHUB_STEP_SUMMARY: summary,
        CI: 'true',
      },
      encoding: 'utf8',
    });
    record.steps.push(title);
    record.output[title] = `${result.stdout}${result.stderr}`;
    if (step.id !== undefined) stepsContext[step.id] = { outputs: outputsOf(output), outcome: result.status === 0 ? 'success' : 'failure' };
    if (result.status !== 0) failed ??= { title, status: result.status, stdout: result.stdout, stderr: result.stderr };
  }
  if (existsSync(summary)) record.summaries[label] = readFileSync(summary, 'utf8');
  if (failed !== undefined) throw new StepFailed(failed.title, failed.status, failed.stdout, failed.stderr, record);
  writeFileSync(join(runner, '.done'), '');
  return stepsContext;
}
