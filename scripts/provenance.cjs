#!/usr/bin/env node
// Proves, before anything of a pipeline run is downloaded, that the run is a release: a push to main of
// .github/workflows/deploy.yml in this repository (not a fork's), which succeeded. A deployment runs the
// artifact's own scripts/ and infra/ as the environment's deploying identity, which holds tenant-wide
// Microsoft Graph power (docs/deploy.md, Rollback): only reviewed code on main may get there.
// "This repository" is the one infra/env/<env>.pipeline.json pins (`githubRepository`, committed with the
// bootstrap's outputs), never whatever `gh repo view` or GH_REPO names: a fork's own pushes to its main
// would pass every other check. A release older than the tables' current layout is safe with is refused
// too (infra/rollbackFloor.json): its commit must contain each commit that file names.
//
// Usage: node scripts/provenance.cjs <run id> --environment <dev|prod> --repository <owner/name> [--this-run <run id>]
//   --environment  the environment deployed: its infra/env/<env>.pipeline.json (this checkout's) pins the repository
//   --repository   the repository asking (the pipeline's github.repository; gh repo view by hand): must be the pinned one
//   --this-run     the run asking (github.run_id): a run deploying its own build is still in progress
// Reads GitHub's REST API with the GitHub CLI (GH_TOKEN with actions: read in the pipeline; gh auth
// login by hand). Exit 0 when proven; 1 when refused, each reason on stderr with its code; 2 on usage.
'use strict';
const { execFileSync } = require('node:child_process');
const { readFileSync } = require('node:fs');
const { join } = require('node:path');

const WORKFLOW_PATH = '.github/workflows/deploy.yml';
const BRANCH = 'main';
/** This checker's checkout: its pipeline files pin the repository (scripts/rollback.sh first proves it main's). */
const ROOT = join(__dirname, '..');
const REPOSITORY_NAME = /^[\w.-]+\/[\w.-]+$/;
/** The oldest release each part of the tables' current layout is safe with: this checkout's. */
const FLOOR_FILE = join(ROOT, 'infra', 'rollbackFloor.json');

/** Why the asking repository is not the pinned one: refused before the run is read. */
const PRECONDITIONS = {
  ERR_REPOSITORY_UNPINNED: (c) =>
    `${c.pinFile} pins no repository: set "githubRepository" to the owner/name given to infra/bootstrap.bicep (docs/deploy.md, Bootstrap)${c.pinReason ? ` (${c.pinReason})` : ''}`,
  ERR_REPOSITORY_MISMATCH: (c) =>
    `asked from ${c.asking}, but ${c.pinFile} pins ${c.pinned}: a fork or another repository is never deployed from (check gh repo view, GH_REPO, or github.repository)`,
};

/** Why a run is not a release: stable codes, each with what a person should know. */
const REFUSALS = {
  ERR_RUN_UNREADABLE: (c) => `GitHub returned no run ${c.runId} of ${c.repository} (a wrong id, another repository's run, or no access): ${c.runReason}`,
  ERR_RUN_EVENT: (c) => `it was started by ${c.run.event}, not push: only a push to ${BRANCH} is reviewed code`,
  ERR_RUN_BRANCH: (c) => `it ran on ${c.run.head_branch ?? 'no branch'}, not ${BRANCH}`,
  ERR_WORKFLOW_UNREADABLE: (c) =>
    `GitHub returned no workflow ${WORKFLOW_PATH} in ${c.repository}, so the run's workflow cannot be proven: ${c.workflowReason}`,
  ERR_RUN_WORKFLOW: (c) => `it ran ${c.run.path} (workflow ${c.run.workflow_id}), not ${WORKFLOW_PATH} (workflow ${c.workflow?.id ?? 'unknown'})`,
  ERR_RUN_CONCLUSION: (c) =>
    `it ${c.run.status === 'completed' ? `concluded ${c.run.conclusion}` : `is ${c.run.status}`}, not success: its build or tests did not pass`,
  ERR_RUN_REPOSITORY: (c) => `the run belongs to ${c.run.repository?.full_name ?? 'no repository'}, not ${c.repository}`,
  ERR_RUN_FORK: (c) => `its code came from ${c.run.head_repository?.full_name ?? 'a repository GitHub no longer knows'}, not ${c.repository} (a fork)`,
};

/** Why a release may not be deployed over today's tables. */
const TOO_OLD = {
  ERR_RUN_BEFORE_LAYOUT: (c) =>
    `its commit ${c.run.head_sha} does not contain ${c.layout.since} (${c.layout.table}): releases before it ${c.layout.olderReleases}. First: ${c.layout.first}`,
  ERR_LAYOUT_UNPROVEN: (c) => `GitHub could not compare its commit ${c.run.head_sha} with ${c.layout.since} (${c.layout.table}): ${c.reason}`,
};

const same = (a, b) => typeof a === 'string' && typeof b === 'string' && a.toLowerCase() === b.toLowerCase();

/**
 * The run's workflow file. GitHub gives `.github/workflows/x.yml`; its OpenAPI description also shows
 * `<owner>/<repo>/.github/workflows/x.yml@<ref>`, which names the same file of this repository.
 */
function workflowFile(path, repository) {
  if (typeof path !== 'string') return undefined;
  const withoutRef = path.replace(/@[^@]*$/, '');
  const prefix = `${repository}/`;
  return withoutRef.toLowerCase().startsWith(prefix.toLowerCase()) ? withoutRef.slice(prefix.length) : withoutRef;
}

/** Every reason the run is not a release (none: it is one). */
function refusals(run, workflow, repository, thisRun) {
  const codes = [];
  if (run.event !== 'push') codes.push('ERR_RUN_EVENT');
  if (run.head_branch !== BRANCH) codes.push('ERR_RUN_BRANCH');
  if (workflow === undefined) codes.push('ERR_WORKFLOW_UNREADABLE');
  else if (run.workflow_id !== workflow.id || workflowFile(run.path, repository) !== WORKFLOW_PATH) codes.push('ERR_RUN_WORKFLOW');
  // The run deploying its own build has not concluded yet; its deploy jobs need its build job's success.
  const ownBuild = thisRun !== undefined && String(run.id) === thisRun;
  if (!ownBuild && !(run.status === 'completed' && run.conclusion === 'success')) codes.push('ERR_RUN_CONCLUSION');
  if (!same(run.repository?.full_name, repository)) codes.push('ERR_RUN_REPOSITORY');
  if (!same(run.head_repository?.full_name, repository)) codes.push('ERR_RUN_FORK');
  return codes;
}

/** A failure's first line, with anything shaped like a GitHub token taken out. */
const firstLine = (text) =>
  String(text ?? '')
    .split('\n')
    .map((l) => l.trim())
    .find((l) => l !== '')
    ?.replace(/\b(gh[pousr]_\w+|github_pat_\w+)/g, '[token]') ?? '';

/** Why a command failed: not started (gh missing), or its exit code and the first line of its stderr. */
function failure(command, error) {
  if (error.code === 'ENOENT') return `${command} was not found (is it installed and on PATH?)`;
  if (error.status === undefined || error.status === null) return `${command} failed: ${firstLine(error.message)}`;
  return `${command} exited ${error.status}: ${firstLine(error.stderr) || 'no message'}`;
}

/**
 * GET of a REST path with the GitHub CLI: { value }, or { reason } when it cannot be read (no gh, a bad
 * token, a rate limit, not found). Either way nothing is proven: the caller refuses on a reason.
 */
function get(path) {
  let text;
  try {
    text = execFileSync('gh', ['api', path], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  } catch (error) {
    return { reason: failure('gh', error) };
  }
  try {
    return { value: JSON.parse(text) };
  } catch {
    return { reason: `gh api ${path} answered something that is not JSON` };
  }
}

/** The repository infra/env/<env>.pipeline.json pins: { pinned } or { pinReason }. */
function pin(pinFile) {
  let target;
  try {
    target = JSON.parse(readFileSync(pinFile, 'utf8'));
  } catch (error) {
    return { pinReason: firstLine(error.message) };
  }
  const value = target?.githubRepository;
  if (typeof value !== 'string' || !REPOSITORY_NAME.test(value) || value.includes('REPLACE-WITH'))
    return { pinReason: `githubRepository is ${JSON.stringify(value ?? null)}` };
  return { pinned: value };
}

function usage() {
  process.stderr.write('usage: node scripts/provenance.cjs <run id> --environment <dev|prod> --repository <owner/name> [--this-run <run id>]\n');
  process.exit(2);
}

function refuse(header, codes, table, context, hint) {
  const reasons = codes.map((code) => `  ${code}: ${table[code](context)}\n`).join('');
  process.stderr.write(`${header}:\n${reasons}${hint}\n`);
  process.exit(1);
}

function main(argv) {
  const [runId, ...rest] = argv;
  const options = {};
  for (let i = 0; i < rest.length; i += 2) {
    if (!['--environment', '--repository', '--this-run'].includes(rest[i]) || rest[i + 1] === undefined) usage();
    options[rest[i]] = rest[i + 1];
  }
  const environment = options['--environment'];
  const asking = options['--repository'];
  const thisRun = options['--this-run'];
  if (
    !/^[0-9]+$/.test(runId ?? '') ||
    !['dev', 'prod'].includes(environment) ||
    !REPOSITORY_NAME.test(asking ?? '') ||
    (thisRun !== undefined && !/^[0-9]+$/.test(thisRun))
  )
    usage();

  // Which repository is "this repository": the committed pin, and the asker must be it.
  const pinFile = join(ROOT, 'infra', 'env', `${environment}.pipeline.json`);
  const context = { runId, asking, pinFile, ...pin(pinFile) };
  const header = `refused before run ${runId} is read; nothing of it is downloaded or deployed`;
  if (context.pinned === undefined) refuse(header, ['ERR_REPOSITORY_UNPINNED'], PRECONDITIONS, context, `Commit the pin in ${pinFile}.`);
  if (!same(context.pinned, asking))
    refuse(header, ['ERR_REPOSITORY_MISMATCH'], PRECONDITIONS, context, `Run it from a clone of ${context.pinned} (or GH_REPO=${context.pinned}).`);
  const repository = context.pinned;
  context.repository = repository;

  const run = get(`repos/${repository}/actions/runs/${runId}`);
  const workflow = run.value === undefined ? {} : get(`repos/${repository}/actions/workflows/${WORKFLOW_PATH.split('/').pop()}`);
  const codes = run.value === undefined ? ['ERR_RUN_UNREADABLE'] : refusals(run.value, workflow.value, repository, thisRun);
  if (codes.length > 0) {
    Object.assign(context, { run: run.value, workflow: workflow.value, runReason: run.reason, workflowReason: workflow.reason });
    refuse(
      `run ${runId} is not a release of ${repository}; nothing of it is downloaded or deployed`,
      codes,
      REFUSALS,
      context,
      `Deploy a successful run of ${WORKFLOW_PATH} for a push to ${BRANCH}: gh run list -R ${repository} -w deploy.yml -b ${BRANCH} -e push -s success`,
    );
  }
  // A push deploying its own build is main's newest commit, which holds every commit of the floor.
  if (thisRun !== runId) {
    const unsafe = floorRefusals(repository, run.value);
    if (unsafe.length > 0) {
      const reasons = unsafe.map(([code, layoutContext]) => `  ${code}: ${TOO_OLD[code]({ ...layoutContext, run: run.value })}\n`).join('');
      process.stderr.write(
        `run ${runId} is older than the tables' current layout is safe with (infra/rollbackFloor.json); nothing of it is downloaded or deployed:\n${reasons}`,
      );
      process.exit(1);
    }
  }
  process.stdout.write(`run ${runId} is a release: a successful push to ${BRANCH} of ${WORKFLOW_PATH} in ${repository}, commit ${run.value.head_sha}\n`);
}

/**
 * Each layout of infra/rollbackFloor.json the run's commit does not contain, by GitHub's compare of the
 * layout's commit with the run's ("ahead" or "identical": the run's commit has it in its history).
 */
function floorRefusals(repository, run) {
  const { layouts } = JSON.parse(readFileSync(FLOOR_FILE, 'utf8'));
  return layouts.flatMap((layout) => {
    const compared = get(`repos/${repository}/compare/${layout.since}...${run.head_sha}`);
    if (compared.value === undefined) return [['ERR_LAYOUT_UNPROVEN', { layout, reason: compared.reason }]];
    return ['ahead', 'identical'].includes(compared.value.status) ? [] : [['ERR_RUN_BEFORE_LAYOUT', { layout }]];
  });
}

main(process.argv.slice(2));
