#!/usr/bin/env node
// GitHub's side of who may sign in as the pipeline's identities (docs/deploy.md, "Identities"), as code:
//   - the repository's OIDC subject template, under which a job's subject names the run's ref and the
//     workflow file the job is defined in (`job_workflow_ref`). The federated credentials of
//     infra/modules/pipelineIdentities.bicep require both to be main's, so a branch's workflow, a changed
//     copy of one, or one that names a missing environment (GitHub then creates it, unprotected) gets no
//     token. It applies to every job of the repository: every job's subject takes this form.
//   - the GitHub environments <env> (the deploy job's) and <env>-stop (the stop job's): the branch main
//     only, and <env>'s required reviewers, who may not approve their own run, where
//     infra/env/<env>.pipeline.json asks for them (`requiredReviewers`; a private repository on the Free,
//     Pro or Team plan cannot have them).
//   - with --runner-group, the environment's runner group restricted to the two workflows that run on it,
//     on main (GitHub Enterprise Cloud only).
//
// Usage: node scripts/githubSettings.cjs apply <dev|prod> [--reviewer-team <team id>] [--runner-group <runner group id>]
//        node scripts/githubSettings.cjs check <dev|prod>
//   apply  a repository admin (an organization owner too for --runner-group), after infra/bootstrap.bicep
//          added the credentials for these subjects: GitHub asks for the matching condition first.
//   check  read only (GH_TOKEN with actions: read in the pipeline): the deploy job's environment and the
//          subject template as apply leaves them; exit 1 naming each difference with its code.
// The repository is the one infra/env/<env>.pipeline.json pins (githubRepository). Exit 2 on usage.
'use strict';
const { execFileSync } = require('node:child_process');
const { readFileSync } = require('node:fs');
const { join } = require('node:path');

/** The subject template: GitHub's default parts (repo, context), then the run's ref and the job's workflow file. */
const SUBJECT_CLAIM_KEYS = ['repo', 'context', 'ref', 'job_workflow_ref'];
/** The workflows whose jobs run on an environment's runner group (its deploy job, its stop job). */
const RUNNER_GROUP_WORKFLOWS = ['deploy-environment.yml', 'stop-client.yml'];
const BRANCH = 'main';
/** A deployment branch policy's kind (GitHub leaves it out for a branch) and whether it is main's. */
const policyType = (policy) => policy.type ?? 'branch';
const isMainPolicy = (policy) => policy.name === BRANCH && policyType(policy) === 'branch';
const ROOT = join(__dirname, '..');

/**
 * What `check`'s reads need of the token (GET of an environment, of its deployment branch policies, of the
 * OIDC subject template): GitHub's "Permissions required for GitHub Apps" lists all three under
 * "Repository permissions for "Actions"", read, for installation tokens (the run's GITHUB_TOKEN is one).
 */
const READ_PERMISSION = '"Actions" (read) (GitHub\'s "Permissions required for GitHub Apps")';

const DRIFT = {
  ERR_ENV_MISSING: (c) => `the environment ${c.name} does not exist: a job naming it would create it without protection`,
  ERR_ENV_BRANCHES: (c) => `the environment ${c.name} admits ${c.branches}, not the branch ${BRANCH} only`,
  ERR_ENV_REVIEWERS: (c) => `the environment ${c.name} has ${c.reviewers}, but ${c.pinFile} asks for required reviewers who may not approve their own run`,
  ERR_OIDC_SUBJECT: (c) =>
    `the repository's OIDC subject template is ${c.subject}, not ${JSON.stringify(SUBJECT_CLAIM_KEYS)}: no credential of the pipeline's identities matches its jobs`,
  ERR_GITHUB_UNREADABLE: (c) =>
    `GET ${c.path} could not be read (${c.reason}): it needs the repository permission ${READ_PERMISSION}, which the job's token has only where its workflow grants permissions: actions: read`,
};

function usage() {
  process.stderr.write(
    'usage: node scripts/githubSettings.cjs apply <dev|prod> [--reviewer-team <team id>] [--runner-group <runner group id>]\n' +
      '       node scripts/githubSettings.cjs check <dev|prod>\n',
  );
  process.exit(2);
}

/** A GitHub CLI error's reason, without anything shaped like a token. */
function reason(error) {
  if (error.code === 'ENOENT') return 'gh was not found (is it installed and on PATH?)';
  const line = String(error.stderr ?? error.message ?? '')
    .split('\n')
    .map((l) => l.trim())
    .find((l) => l !== '');
  return `gh exited ${error.status}: ${(line ?? 'no message').replace(/\b(gh[pousr]_\w+|github_pat_\w+)/g, '[token]')}`;
}

/** `gh api` with a method and a JSON body: the parsed answer, or { error } (a 404 is `notFound`). */
function api(method, path, body) {
  const args = ['api', '-X', method, path, ...(body === undefined ? [] : ['--input', '-'])];
  try {
    const text = execFileSync('gh', args, { encoding: 'utf8', input: body === undefined ? '' : JSON.stringify(body), stdio: ['pipe', 'pipe', 'pipe'] });
    return { value: text.trim() === '' ? undefined : JSON.parse(text) };
  } catch (error) {
    return { error: reason(error), notFound: /HTTP 404/.test(String(error.stderr ?? '')) };
  }
}

function must(result, what) {
  if (result.error === undefined) return result.value;
  process.stderr.write(`not applied: ${what}: ${result.error}\n`);
  process.exit(1);
}

/** The pinned repository and what the environment's protection asks for (infra/env/<env>.pipeline.json). */
function target(env) {
  const pinFile = join('infra', 'env', `${env}.pipeline.json`);
  const file = JSON.parse(readFileSync(join(ROOT, pinFile), 'utf8'));
  if (typeof file.githubRepository !== 'string' || !/^[\w.-]+\/[\w.-]+$/.test(file.githubRepository)) {
    process.stderr.write(`${pinFile}: set githubRepository, the owner/name given to infra/bootstrap.bicep (docs/deploy.md, Bootstrap)\n`);
    process.exit(1);
  }
  if (typeof file.requiredReviewers !== 'boolean') {
    process.stderr.write(`${pinFile}: set requiredReviewers, true or false (docs/deploy.md, "What each GitHub plan allows")\n`);
    process.exit(1);
  }
  return { repository: file.githubRepository, requiredReviewers: file.requiredReviewers, pinFile };
}

/** The differences between an environment and what apply leaves (codes of DRIFT, with their context). */
function environmentDrift(repository, name, requiredReviewers, context) {
  const environment = api('GET', `repos/${repository}/environments/${name}`);
  if (environment.notFound) return [['ERR_ENV_MISSING', { ...context, name }]];
  if (environment.error !== undefined) return [['ERR_GITHUB_UNREADABLE', { path: `repos/${repository}/environments/${name}`, reason: environment.error }]];
  const drift = [];
  const policy = environment.value.deployment_branch_policy;
  let branches = 'every branch';
  if (policy !== null && policy !== undefined) {
    if (policy.protected_branches === true) branches = 'every protected branch';
    else {
      const path = `repos/${repository}/environments/${name}/deployment-branch-policies`;
      const listed = api('GET', path);
      if (listed.error !== undefined) return [['ERR_GITHUB_UNREADABLE', { path, reason: listed.error }]];
      const names = listed.value.branch_policies.map((p) => `${policyType(p)}:${p.name}`);
      branches = names.length === 0 ? 'no branch' : names.join(', ');
    }
  }
  if (branches !== `branch:${BRANCH}`) drift.push(['ERR_ENV_BRANCHES', { ...context, name, branches }]);
  if (requiredReviewers) {
    const rule = (environment.value.protection_rules ?? []).find((r) => r.type === 'required_reviewers');
    const reviewers =
      rule === undefined
        ? 'no required reviewers'
        : rule.prevent_self_review !== true
          ? 'reviewers who may approve their own run'
          : (rule.reviewers ?? []).length === 0
            ? 'no reviewer'
            : '';
    if (reviewers !== '') drift.push(['ERR_ENV_REVIEWERS', { ...context, name, reviewers }]);
  }
  return drift;
}

function check(env) {
  const { repository, requiredReviewers, pinFile } = target(env);
  const drift = environmentDrift(repository, env, requiredReviewers, { pinFile });
  const subjectPath = `repos/${repository}/actions/oidc/customization/sub`;
  const subject = api('GET', subjectPath);
  if (subject.error !== undefined) drift.push(['ERR_GITHUB_UNREADABLE', { path: subjectPath, reason: subject.error }]);
  else if (subject.value.use_default !== false || JSON.stringify(subject.value.include_claim_keys) !== JSON.stringify(SUBJECT_CLAIM_KEYS))
    drift.push(['ERR_OIDC_SUBJECT', { subject: subject.value.use_default !== false ? "GitHub's default" : JSON.stringify(subject.value.include_claim_keys) }]);
  if (drift.length > 0) {
    process.stderr.write(
      `refused: ${repository}'s GitHub settings for ${env} are not the ones scripts/githubSettings.cjs applies; nothing is deployed:\n` +
        drift.map(([code, context]) => `  ${code}: ${DRIFT[code](context)}\n`).join('') +
        (drift.every(([code]) => code === 'ERR_GITHUB_UNREADABLE')
          ? ''
          : `A repository admin runs: node scripts/githubSettings.cjs apply ${env} (docs/deploy.md, "GitHub's settings as code")\n`),
    );
    process.exit(1);
  }
  process.stdout.write(
    `${repository}: the environment ${env} admits ${BRANCH} only${requiredReviewers ? ', with its required reviewers' : ''}, and jobs' subjects name their workflow and ref\n`,
  );
}

function apply(env, options) {
  const { repository, requiredReviewers, pinFile } = target(env);
  if (requiredReviewers && !/^\d+$/.test(options['--reviewer-team'] ?? '')) {
    process.stderr.write(`${pinFile} asks for required reviewers in ${env}: give --reviewer-team <team id> (gh api orgs/<org>/teams/<team slug> --jq .id)\n`);
    process.exit(2);
  }
  // The template first: the credentials for it exist (the bootstrap), and jobs from now on present it.
  must(
    api('PUT', `repos/${repository}/actions/oidc/customization/sub`, { use_default: false, include_claim_keys: SUBJECT_CLAIM_KEYS }),
    'the OIDC subject template',
  );
  process.stdout.write(`${repository}: jobs' OIDC subjects are ${SUBJECT_CLAIM_KEYS.join(', ')}\n`);
  for (const name of [env, `${env}-stop`]) {
    const reviewers = name === env && requiredReviewers ? [{ type: 'Team', id: Number(options['--reviewer-team']) }] : [];
    const body = {
      deployment_branch_policy: { protected_branches: false, custom_branch_policies: true },
      reviewers,
      ...(reviewers.length > 0 ? { prevent_self_review: true } : {}),
    };
    must(api('PUT', `repos/${repository}/environments/${name}`, body), `the environment ${name}`);
    const policies = must(api('GET', `repos/${repository}/environments/${name}/deployment-branch-policies`), `the branch policies of ${name}`);
    for (const policy of policies.branch_policies)
      if (!isMainPolicy(policy))
        must(api('DELETE', `repos/${repository}/environments/${name}/deployment-branch-policies/${policy.id}`), `the branch policy ${policy.name} of ${name}`);
    if (!policies.branch_policies.some(isMainPolicy))
      must(
        api('POST', `repos/${repository}/environments/${name}/deployment-branch-policies`, { name: BRANCH, type: 'branch' }),
        `the branch policy of ${name}`,
      );
    process.stdout.write(
      `${repository}: the environment ${name} admits ${BRANCH} only${reviewers.length > 0 ? `, reviewed by team ${reviewers[0].id} (not the run's own)` : ''}\n`,
    );
  }
  if (options['--runner-group'] !== undefined) {
    const selected = RUNNER_GROUP_WORKFLOWS.map((file) => `${repository}/.github/workflows/${file}@${BRANCH}`);
    const org = repository.split('/')[0];
    must(
      api('PATCH', `orgs/${org}/actions/runner-groups/${options['--runner-group']}`, { restricted_to_workflows: true, selected_workflows: selected }),
      'the runner group (an organization owner, on GitHub Enterprise Cloud)',
    );
    process.stdout.write(`runner group ${options['--runner-group']}: only ${selected.join(', ')}\n`);
  }
}

function main(argv) {
  const [command, env, ...rest] = argv;
  if (!['apply', 'check'].includes(command) || !['dev', 'prod'].includes(env)) usage();
  const options = {};
  for (let i = 0; i < rest.length; i += 2) {
    if (command !== 'apply' || !['--reviewer-team', '--runner-group'].includes(rest[i]) || !/^\d+$/.test(rest[i + 1] ?? '')) usage();
    options[rest[i]] = rest[i + 1];
  }
  if (command === 'check') check(env);
  else apply(env, options);
}

if (require.main === module) main(process.argv.slice(2));
module.exports = { SUBJECT_CLAIM_KEYS };
