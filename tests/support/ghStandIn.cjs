#!/usr/bin/env node
// A recording stand-in for the GitHub CLI (`gh`), for the pipeline tests (tests/integration/pipeline.test.ts).
// It answers the calls scripts/provenance.cjs and scripts/rollback.sh make as gh and GitHub's REST API
// would: `gh api` prints the resource's JSON, or GitHub's error body with "gh: Not Found (HTTP 404)" on
// stderr and exit 1; `gh run download` copies the artifact GitHub keeps for that run. Every call is
// appended to a log; any other call fails, so a new call cannot go unnoticed.
//
// GH_STATE:     JSON file { repository, workflows: { <file name>: workflow }, runs: { <id>: workflow run },
//               branches?: { <owner/name>: { <branch>: commit sha } }, apiError?: gh's stderr line }
//               (the REST shapes of GET /repos/{owner}/{repo}/actions/workflows/{file}, /actions/runs/{id}
//               and /branches/{branch}; `repository` is what `gh repo view` names, GH_REPO's or the
//               checkout's; `apiError` makes every `gh api` fail as gh does, e.g. with a bad token)
// GH_ARTIFACTS: folder of artifacts, <run id>/<name>/ (as the workflow runner keeps them)
// GH_LOG:       one JSON line per call: { args }
const { appendFileSync, cpSync, existsSync, readFileSync } = require('node:fs');
const { join } = require('node:path');

const args = process.argv.slice(2);
const state = JSON.parse(readFileSync(process.env.GH_STATE, 'utf8'));
appendFileSync(process.env.GH_LOG, `${JSON.stringify({ args })}\n`);

const option = (name) => {
  const i = args.indexOf(name);
  return i < 0 ? undefined : args[i + 1];
};
const same = (a, b) => String(a).toLowerCase() === String(b).toLowerCase();
const fail = (message) => {
  process.stderr.write(`${message}\n`);
  process.exit(1);
};
const notFound = () => {
  process.stdout.write('{"message":"Not Found","documentation_url":"https://docs.github.com/rest","status":"404"}');
  fail('gh: Not Found (HTTP 404)');
};

/** A run as GitHub serves it: only from the repository it belongs to. */
function runOf(repository, id) {
  const run = state.runs[id];
  return run !== undefined && same(run.repository.full_name, repository) ? run : undefined;
}

const command = args.slice(0, 2).join(' ');
if (args[0] === 'api') {
  if (state.apiError !== undefined) fail(state.apiError);
  const branchPath = /^repos\/([^/]+\/[^/]+)\/branches\/([^/]+)$/.exec(args[1] ?? '');
  if (args.length === 2 && branchPath !== null) {
    const [, repository, branch] = branchPath;
    const sha = Object.entries(state.branches ?? {}).find(([name]) => same(name, repository))?.[1][branch];
    if (sha === undefined) notFound();
    process.stdout.write(JSON.stringify({ name: branch, commit: { sha }, protected: true }, null, 2));
    process.exit(0);
  }
  const runPath = /^repos\/([^/]+\/[^/]+)\/actions\/runs\/(\d+)$/.exec(args[1] ?? '');
  const workflowPath = /^repos\/([^/]+\/[^/]+)\/actions\/workflows\/([^/]+)$/.exec(args[1] ?? '');
  if (args.length !== 2 || (runPath === null && workflowPath === null)) fail(`gh stand-in: unexpected call: gh ${args.join(' ')}`);
  const found = runPath !== null ? runOf(runPath[1], runPath[2]) : same(workflowPath[1], state.repository) ? state.workflows[workflowPath[2]] : undefined;
  if (found === undefined) notFound();
  process.stdout.write(JSON.stringify(found, null, 2));
} else if (command === 'repo view' && option('--json') === 'nameWithOwner') {
  process.stdout.write(`${JSON.stringify({ nameWithOwner: state.repository })}\n`);
} else if (command === 'run download') {
  const id = args[2];
  const repository = option('--repo') ?? state.repository;
  const from = join(process.env.GH_ARTIFACTS, id, option('--name'));
  if (runOf(repository, id) === undefined) fail(`could not find any workflow run with ID ${id}`);
  if (!existsSync(from)) fail('no valid artifacts found to download');
  cpSync(from, option('--dir'), { recursive: true });
} else {
  fail(`gh stand-in: unexpected call: gh ${args.join(' ')}`);
}
