#!/usr/bin/env node
// A recording stand-in for the GitHub CLI (`gh`), for the pipeline tests (tests/integration/pipeline.test.ts).
// It answers the calls scripts/provenance.cjs, scripts/rollback.sh and scripts/githubSettings.cjs make as
// gh and GitHub's REST API would: `gh api` prints the resource's JSON, or GitHub's error body with
// "gh: Not Found (HTTP 404)" on stderr and exit 1; `gh api -X PUT|POST|PATCH … --input -` takes the JSON
// body on stdin; `gh run download` copies the artifact GitHub keeps for that run. Every call is appended
// to a log; any other call fails, so a new call cannot go unnoticed.
//
// GH_STATE:     JSON file { repository, workflows: { <file name>: workflow }, runs: { <id>: workflow run },
//               branches?: { <owner/name>: { <branch>: commit sha } }, apiError?: gh's stderr line,
//               environments?: { <name, lower case>: environment, with branch_policies: [{ id, name, type }] },
//               oidcSubject?: { use_default, include_claim_keys? }, runnerGroups?: { <id>: runner group },
//               history?: [commit sha, oldest first]: main's history, which GET /compare/{base}...{head} reads,
//               ids?: { owner, repository } (GET /repos/{owner}/{repo}), subClaimPrefix?: the OIDC settings'
//               sub_claim_prefix, as GitHub gives it for a repository (absent: GitHub gives none) }
//               (the REST shapes of GET /repos/{owner}/{repo}/actions/workflows/{file}, /actions/runs/{id},
//               /branches/{branch}, /environments/{name} and its /deployment-branch-policies,
//               /actions/oidc/customization/sub and /orgs/{org}/actions/runner-groups/{id}; `repository` is
//               what `gh repo view` names, GH_REPO's or the checkout's; `apiError` makes every `gh api` fail
//               as gh does, e.g. with a bad token; `settingsError` only the settings calls, as GitHub refuses a
//               token without the permission they need)
// GH_ARTIFACTS: folder of artifacts, <run id>/<name>/ (as the workflow runner keeps them)
// GH_LOG:       one JSON line per call: { args }
const { appendFileSync, cpSync, existsSync, readFileSync, writeFileSync } = require('node:fs');
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

const save = () => writeFileSync(process.env.GH_STATE, JSON.stringify(state, null, 1));
const print = (value) => process.stdout.write(JSON.stringify(value, null, 2));

/**
 * The settings calls (scripts/githubSettings.cjs): environments, their branch policies, the repository's
 * OIDC subject template, a runner group's workflows. Answers and returns true when `path` is one of them.
 */
function settingsCall(method, path, body) {
  const environmentPath = /^repos\/([^/]+\/[^/]+)\/environments\/([^/]+)(\/deployment-branch-policies(?:\/(\d+))?)?$/.exec(path);
  if (environmentPath !== null) {
    const [, repository, name, policies, policyId] = environmentPath;
    if (!same(repository, state.repository)) notFound();
    state.environments ??= {};
    const key = decodeURIComponent(name).toLowerCase();
    let environment = state.environments[key];
    if (policies === undefined && method === 'PUT') {
      // GitHub's "Create or update an environment": the protection rules the body names.
      environment ??= { name: decodeURIComponent(name), protection_rules: [], deployment_branch_policy: null, branch_policies: [] };
      if (body.deployment_branch_policy !== undefined) environment.deployment_branch_policy = body.deployment_branch_policy;
      const rules = environment.protection_rules.filter((r) => r.type !== 'required_reviewers' && r.type !== 'branch_policy');
      const reviewers = body.reviewers === undefined ? environment.protection_rules.find((r) => r.type === 'required_reviewers')?.reviewers : body.reviewers;
      if (reviewers !== undefined && reviewers !== null && reviewers.length > 0)
        rules.push({
          type: 'required_reviewers',
          prevent_self_review: body.prevent_self_review ?? false,
          reviewers: reviewers.map((r) => (r.reviewer === undefined ? { type: r.type, reviewer: { id: r.id } } : r)),
        });
      if (environment.deployment_branch_policy !== null) rules.push({ type: 'branch_policy' });
      environment.protection_rules = rules;
      state.environments[key] = environment;
      save();
      print(environment);
      return true;
    }
    if (environment === undefined) notFound();
    if (policies === undefined && method === 'GET') {
      const shown = { ...environment };
      delete shown.branch_policies;
      print(shown);
      return true;
    }
    if (method === 'GET' && policyId === undefined) {
      print({ total_count: environment.branch_policies.length, branch_policies: environment.branch_policies });
      return true;
    }
    if (method === 'POST' && policyId === undefined) {
      if (environment.deployment_branch_policy?.custom_branch_policies !== true) fail('gh: the environment has no custom branch policies (HTTP 404)');
      const policy = { id: (state.nextId = (state.nextId ?? 100) + 1), name: body.name, type: body.type ?? 'branch' };
      environment.branch_policies.push(policy);
      save();
      print(policy);
      return true;
    }
    if (method === 'DELETE' && policyId !== undefined) {
      environment.branch_policies = environment.branch_policies.filter((p) => String(p.id) !== policyId);
      save();
      return true;
    }
  }
  const oidcPath = /^repos\/([^/]+\/[^/]+)\/actions\/oidc\/customization\/sub$/.exec(path);
  if (oidcPath !== null) {
    if (!same(oidcPath[1], state.repository)) notFound();
    if (method === 'GET')
      print({ ...(state.oidcSubject ?? { use_default: true }), ...(state.subClaimPrefix === undefined ? {} : { sub_claim_prefix: state.subClaimPrefix }) });
    else if (method === 'PUT') {
      state.oidcSubject = body.use_default ? { use_default: true } : { use_default: false, include_claim_keys: body.include_claim_keys };
      save();
    } else return false;
    return true;
  }
  const groupPath = /^orgs\/([^/]+)\/actions\/runner-groups\/(\d+)$/.exec(path);
  if (groupPath !== null) {
    const group = state.runnerGroups?.[groupPath[2]];
    if (group === undefined) notFound();
    if (method === 'PATCH') {
      Object.assign(group, body);
      save();
    } else if (method !== 'GET') return false;
    print(group);
    return true;
  }
  return false;
}

const command = args.slice(0, 2).join(' ');
if (args[0] === 'api') {
  if (state.apiError !== undefined) fail(state.apiError);
  const method = option('-X') ?? option('--method') ?? 'GET';
  const body = option('--input') === '-' ? JSON.parse(readFileSync(0, 'utf8')) : {};
  const path = args.filter((a, i) => i > 0 && !a.startsWith('-') && !['-X', '--method', '--input'].includes(args[i - 1]))[0] ?? '';
  if (state.settingsError !== undefined && /\/(environments|actions\/oidc)\//.test(path)) {
    process.stdout.write('{"message":"Resource not accessible by integration","documentation_url":"https://docs.github.com/rest","status":"403"}');
    fail(state.settingsError);
  }
  if (settingsCall(method, path, body)) process.exit(0);
  if (method !== 'GET') fail(`gh stand-in: unexpected call: gh ${args.join(' ')}`);
  const branchPath = /^repos\/([^/]+\/[^/]+)\/branches\/([^/]+)$/.exec(args[1] ?? '');
  if (args.length === 2 && branchPath !== null) {
    const [, repository, branch] = branchPath;
    const sha = Object.entries(state.branches ?? {}).find(([name]) => same(name, repository))?.[1][branch];
    if (sha === undefined) notFound();
    print({ name: branch, commit: { sha }, protected: true });
    process.exit(0);
  }
  const repositoryPath = /^repos\/([^/]+)\/([^/]+)$/.exec(path);
  if (repositoryPath !== null && state.ids !== undefined) {
    if (!same(`${repositoryPath[1]}/${repositoryPath[2]}`, state.repository)) notFound();
    const [owner, name] = state.repository.split('/');
    print({ id: state.ids.repository, name, full_name: state.repository, owner: { login: owner, id: state.ids.owner } });
    process.exit(0);
  }
  // GitHub's "Compare two commits": where head stands to base in main's (linear) history.
  const comparePath = /^repos\/([^/]+\/[^/]+)\/compare\/(\w+)\.\.\.(\w+)$/.exec(args[1] ?? '');
  if (args.length === 2 && comparePath !== null) {
    const [, repository, base, head] = comparePath;
    const [b, h] = [base, head].map((sha) => (state.history ?? []).indexOf(sha));
    if (!same(repository, state.repository) || b < 0 || h < 0) notFound();
    print({ status: h === b ? 'identical' : h > b ? 'ahead' : 'behind', ahead_by: Math.max(0, h - b), behind_by: Math.max(0, b - h) });
    process.exit(0);
  }
  const runPath = /^repos\/([^/]+\/[^/]+)\/actions\/runs\/(\d+)$/.exec(args[1] ?? '');
  const workflowPath = /^repos\/([^/]+\/[^/]+)\/actions\/workflows\/([^/]+)$/.exec(args[1] ?? '');
  if (args.length !== 2 || (runPath === null && workflowPath === null)) fail(`gh stand-in: unexpected call: gh ${args.join(' ')}`);
  const found = runPath !== null ? runOf(runPath[1], runPath[2]) : same(workflowPath[1], state.repository) ? state.workflows[workflowPath[2]] : undefined;
  if (found === undefined) notFound();
  print(found);
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
