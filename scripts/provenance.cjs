#!/usr/bin/env node
// Proves, before anything of a pipeline run is downloaded, that the run is a release: a push to main of
// .github/workflows/deploy.yml in this repository (not a fork's), which succeeded. A deployment runs the
// artifact's own scripts/ and infra/ as the environment's deploying identity, which holds tenant-wide
// Microsoft Graph power (docs/deploy.md, Rollback): only reviewed code on main may get there.
//
// Usage: node scripts/provenance.cjs <run id> --repository <owner/name> [--this-run <run id>]
//   --repository  the repository the run must belong to (the pipeline's github.repository)
//   --this-run    the run asking (github.run_id): a run deploying its own build is still in progress
// Reads GitHub's REST API with the GitHub CLI (GH_TOKEN with actions: read in the pipeline; gh auth
// login by hand). Exit 0 when proven; 1 when refused, each reason on stderr with its code; 2 on usage.
'use strict';
const { execFileSync } = require('node:child_process');

const WORKFLOW_PATH = '.github/workflows/deploy.yml';
const BRANCH = 'main';

/** Why a run is not a release: stable codes, each with what a person should know. */
const REFUSALS = {
  ERR_RUN_UNREADABLE: (c) => `GitHub returned no run ${c.runId} of ${c.repository} (a wrong id, another repository's run, or no access)`,
  ERR_RUN_EVENT: (c) => `it was started by ${c.run.event}, not push: only a push to ${BRANCH} is reviewed code`,
  ERR_RUN_BRANCH: (c) => `it ran on ${c.run.head_branch ?? 'no branch'}, not ${BRANCH}`,
  ERR_WORKFLOW_UNREADABLE: (c) => `GitHub returned no workflow ${WORKFLOW_PATH} in ${c.repository}, so the run's workflow cannot be proven`,
  ERR_RUN_WORKFLOW: (c) => `it ran ${c.run.path} (workflow ${c.run.workflow_id}), not ${WORKFLOW_PATH} (workflow ${c.workflow?.id ?? 'unknown'})`,
  ERR_RUN_CONCLUSION: (c) =>
    `it ${c.run.status === 'completed' ? `concluded ${c.run.conclusion}` : `is ${c.run.status}`}, not success: its build or tests did not pass`,
  ERR_RUN_REPOSITORY: (c) => `the run belongs to ${c.run.repository?.full_name ?? 'no repository'}, not ${c.repository}`,
  ERR_RUN_FORK: (c) => `its code came from ${c.run.head_repository?.full_name ?? 'a repository GitHub no longer knows'}, not ${c.repository} (a fork)`,
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

/** GET of a REST path with the GitHub CLI; undefined when GitHub answers an error. */
function get(path) {
  try {
    return JSON.parse(execFileSync('gh', ['api', path], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }));
  } catch {
    return undefined;
  }
}

function usage() {
  process.stderr.write('usage: node scripts/provenance.cjs <run id> --repository <owner/name> [--this-run <run id>]\n');
  process.exit(2);
}

function main(argv) {
  const [runId, ...rest] = argv;
  const options = {};
  for (let i = 0; i < rest.length; i += 2) {
    if (!['--repository', '--this-run'].includes(rest[i]) || rest[i + 1] === undefined) usage();
    options[rest[i]] = rest[i + 1];
  }
  const repository = options['--repository'];
  const thisRun = options['--this-run'];
  if (!/^[0-9]+$/.test(runId ?? '') || !/^[\w.-]+\/[\w.-]+$/.test(repository ?? '') || (thisRun !== undefined && !/^[0-9]+$/.test(thisRun))) usage();

  const run = get(`repos/${repository}/actions/runs/${runId}`);
  const workflow = run === undefined ? undefined : get(`repos/${repository}/actions/workflows/${WORKFLOW_PATH.split('/').pop()}`);
  const codes = run === undefined ? ['ERR_RUN_UNREADABLE'] : refusals(run, workflow, repository, thisRun);
  if (codes.length > 0) {
    const context = { runId, repository, run, workflow };
    const reasons = codes.map((code) => `  ${code}: ${REFUSALS[code](context)}\n`).join('');
    process.stderr.write(`run ${runId} is not a release of ${repository}; nothing of it is downloaded or deployed:\n${reasons}`);
    process.stderr.write(
      `Deploy a successful run of ${WORKFLOW_PATH} for a push to ${BRANCH}: gh run list -R ${repository} -w deploy.yml -b ${BRANCH} -e push -s success\n`,
    );
    process.exit(1);
  }
  process.stdout.write(`run ${runId} is a release: a successful push to ${BRANCH} of ${WORKFLOW_PATH} in ${repository}, commit ${run.head_sha}\n`);
}

main(process.argv.slice(2));
