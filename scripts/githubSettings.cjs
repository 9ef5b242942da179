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
//        node scripts/githubSettings.cjs claims <dev|prod> <deploy|plan|stop>
//   apply  a repository admin (an organization owner too for --runner-group), after infra/bootstrap.bicep
//          added the credentials for these subjects: GitHub asks for the matching condition first. The
//          template is one setting for every environment, so apply first reads (az, signed in with read
//          access to each environment's group) the credentials of every bootstrapped environment of
//          infra/env/ and refuses, changing nothing, while one lacks a subject the template gives, or when
//          it cannot read them (it says why).
//   check  read only (GH_TOKEN with actions: read in the pipeline): the deploy job's environment and the
//          subject template as apply leaves them; exit 1 naming each difference with its code.
//   claims in a job whose Azure sign-in failed (id-token: write): the claims of the job's OIDC token the
//          identity's federated credentials match on (sub, job_workflow_ref, ref, environment; never the
//          token), beside the subjects those credentials expect, and which part differs.
// The repository is the one infra/env/<env>.pipeline.json pins (githubRepository). Exit 2 on usage.
'use strict';
const { execFileSync } = require('node:child_process');
const { readFileSync, readdirSync } = require('node:fs');
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
const MAIN_REF = `refs/heads/${BRANCH}`;
/** The issuer and audience of the pipeline's federated credentials (GitHub's tokens, Entra's token exchange). */
const GITHUB_ISSUER = 'https://token.actions.githubusercontent.com';
const EXCHANGE_AUDIENCE = 'api://AzureADTokenExchange';
/**
 * The pipeline's sign-ins (infra/modules/pipelineIdentities.bicep): each identity's job, the workflow file
 * it is defined in, and the GitHub environment it runs in (none for the plan identity's what-if).
 */
const SIGN_INS = {
  deploy: { file: 'deploy-environment.yml', environment: (env) => env },
  plan: { file: 'deploy.yml', environment: () => undefined },
  stop: { file: 'stop-client.yml', environment: (env) => `${env}-stop` },
};
/** The subject GitHub gives `job`'s token on main under the template, after `prefix` (the repository part). */
function subjectOf(prefix, repository, env, job) {
  const environment = SIGN_INS[job].environment(env);
  const context = environment === undefined ? `ref:${MAIN_REF}` : `environment:${environment}`;
  return `${prefix}:${context}:ref:${MAIN_REF}:job_workflow_ref:${repository}/.github/workflows/${SIGN_INS[job].file}@${MAIN_REF}`;
}

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
      '       node scripts/githubSettings.cjs check <dev|prod>\n' +
      '       node scripts/githubSettings.cjs claims <dev|prod> <deploy|plan|stop>\n',
  );
  process.exit(2);
}

/** A CLI's error's reason (gh's by default), without anything shaped like a token. */
function reason(error, command = 'gh') {
  if (error.code === 'ENOENT') return `${command} was not found (is it installed and on PATH?)`;
  const line = String(error.stderr ?? error.message ?? '')
    .split('\n')
    .map((l) => l.trim())
    .find((l) => l !== '');
  return `${command} exited ${error.status}: ${(line ?? 'no message').replace(/\b(gh[pousr]_\w+|github_pat_\w+)/g, '[token]')}`;
}

/** An Azure CLI command's JSON output, or { error }. Only stdout is parsed: the CLI writes warnings on stderr. */
function az(args) {
  try {
    return { value: JSON.parse(execFileSync('az', [...args, '--output', 'json'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] })) };
  } catch (error) {
    return { error: reason(error, 'az') };
  }
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

/** Why apply cannot set the template: what an environment lacks, or why it cannot tell. */
const UNSAFE = {
  ERR_SUBJECT_UNTRUSTED: (c) =>
    `${c.identity} (${c.env}) has no federated credential for ${c.subject}: its ${c.job} sign-in would fail once the template applies; re-run ${c.env}'s bootstrap (docs/deploy.md, "Migration")`,
  ERR_SUBJECTS_UNREADABLE: (c) =>
    `the federated credentials of ${c.identity} (${c.env}) could not be read (${c.reason}), so apply cannot tell whether ${c.env} trusts the new subjects: sign in (az login) as someone who may read ${c.group} in subscription ${c.subscription} (Reader), then apply again`,
  ERR_GITHUB_UNREADABLE: DRIFT.ERR_GITHUB_UNREADABLE,
};

/**
 * The forms of the repository part GitHub may put in this repository's subjects: the one its
 * `sub_claim_prefix` names; without one, both (names alone, and names with their ids), as the bootstrap's
 * default `githubSubjectFormat` trusts (docs/deploy.md, "Which subject GitHub sends").
 */
function subjectPrefixes(repository) {
  const path = `repos/${repository}/actions/oidc/customization/sub`;
  const settings = api('GET', path);
  if (settings.error !== undefined) return { problem: ['ERR_GITHUB_UNREADABLE', { path, reason: settings.error }] };
  const prefix = settings.value?.sub_claim_prefix;
  if (typeof prefix === 'string' && prefix !== '') return { prefixes: [prefix] };
  const ids = api('GET', `repos/${repository}`);
  if (ids.error !== undefined) return { problem: ['ERR_GITHUB_UNREADABLE', { path: `repos/${repository}`, reason: ids.error }] };
  const [owner, name] = repository.split('/');
  return { prefixes: [`repo:${repository}`, `repo:${owner}@${ids.value.owner.id}/${name}@${ids.value.id}`] };
}

/**
 * What stands in the way of setting the template, over every environment of infra/env/ pinned to this
 * repository: each subject a bootstrapped environment's identities do not trust, each identity whose
 * credentials cannot be read. An environment not bootstrapped yet has nothing to lose (its bootstrap adds
 * the subjects): it is listed in `waiting`.
 */
function unsafeForTemplate(repository) {
  const found = subjectPrefixes(repository);
  if (found.problem !== undefined) return { problems: [found.problem], checked: [], waiting: [] };
  const problems = [];
  const checked = [];
  const waiting = [];
  const envDir = join(ROOT, 'infra', 'env');
  for (const file of readdirSync(envDir)
    .filter((f) => f.endsWith('.pipeline.json'))
    .sort()) {
    const env = file.replace(/\.pipeline\.json$/, '');
    const pipeline = JSON.parse(readFileSync(join(envDir, file), 'utf8'));
    if (typeof pipeline.githubRepository !== 'string' || pipeline.githubRepository.toLowerCase() !== repository.toLowerCase()) continue;
    const filled = (name) => typeof pipeline[name] === 'string' && pipeline[name] !== '' && !pipeline[name].includes('REPLACE-WITH');
    if (!filled('resourceGroup') || !filled('subscriptionId')) {
      waiting.push(env);
      continue;
    }
    checked.push(env);
    for (const job of Object.keys(SIGN_INS)) {
      const identity = `id-drawreq-${env}-${job}`;
      const group = pipeline.resourceGroup;
      const listed = az([
        'identity',
        'federated-credential',
        'list',
        '--identity-name',
        identity,
        '--resource-group',
        group,
        '--subscription',
        pipeline.subscriptionId,
      ]);
      if (listed.error !== undefined) {
        problems.push(['ERR_SUBJECTS_UNREADABLE', { env, identity, group, subscription: pipeline.subscriptionId, reason: listed.error }]);
        continue;
      }
      for (const prefix of found.prefixes) {
        const subject = subjectOf(prefix, repository, env, job);
        const trusted = listed.value.some((c) => c.issuer === GITHUB_ISSUER && c.subject === subject && (c.audiences ?? []).includes(EXCHANGE_AUDIENCE));
        if (!trusted) problems.push(['ERR_SUBJECT_UNTRUSTED', { env, identity, job, subject }]);
      }
    }
  }
  return { problems, checked, waiting };
}

function apply(env, options) {
  const { repository, requiredReviewers, pinFile } = target(env);
  if (requiredReviewers && !/^\d+$/.test(options['--reviewer-team'] ?? '')) {
    process.stderr.write(`${pinFile} asks for required reviewers in ${env}: give --reviewer-team <team id> (gh api orgs/<org>/teams/<team slug> --jq .id)\n`);
    process.exit(2);
  }
  // The template is one setting for the whole repository: every environment must trust its subjects first
  // (GitHub: "you should first create a matching condition in your cloud provider's OIDC configuration").
  const { problems, checked, waiting } = unsafeForTemplate(repository);
  if (problems.length > 0) {
    process.stderr.write(
      `not applied, nothing changed: the OIDC subject template applies to every environment's sign-ins at once, and it is not yet safe:\n` +
        problems.map(([code, context]) => `  ${code}: ${UNSAFE[code](context)}\n`).join('') +
        `Bootstrap every environment first, then apply (docs/deploy.md, "Migration").\n`,
    );
    process.exit(1);
  }
  process.stdout.write(
    `${repository}: ${checked.length > 0 ? `${checked.join(', ')} trust${checked.length === 1 ? 's' : ''} the subjects of the template` : 'no environment is bootstrapped yet'}${
      waiting.length > 0 ? `; ${waiting.join(', ')} not bootstrapped yet (its bootstrap adds them)` : ''
    }\n`,
  );
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

/**
 * The job's OIDC token, as GitHub's runner lets a step ask for it (GitHub's OIDC reference, "Methods for
 * requesting the OIDC token"), with the audience azure/login asks for: its claims, decoded, not verified
 * (they are only shown), or { reason }.
 */
async function jobClaims() {
  const url = process.env.ACTIONS_ID_TOKEN_REQUEST_URL;
  const requestToken = process.env.ACTIONS_ID_TOKEN_REQUEST_TOKEN;
  if (!url || !requestToken) return { reason: 'ACTIONS_ID_TOKEN_REQUEST_URL is not set: GitHub sets it only in a job with permissions id-token: write' };
  try {
    const response = await fetch(`${url}&audience=${encodeURIComponent(EXCHANGE_AUDIENCE)}`, {
      headers: { Authorization: `bearer ${requestToken}` },
      signal: AbortSignal.timeout(30_000),
    });
    if (!response.ok) return { reason: `GitHub's OIDC provider answered ${response.status}` };
    const { value } = await response.json();
    return { claims: JSON.parse(Buffer.from(String(value).split('.')[1] ?? '', 'base64url').toString('utf8')) };
  } catch (error) {
    return { reason: `GitHub's OIDC provider could not be asked: ${error.message}` };
  }
}

/**
 * After a failed Azure sign-in: what the job's token says beside what the identity's credentials expect
 * (the subjects infra/modules/pipelineIdentities.bicep gives it, in both forms of the repository part, the
 * token's ids in the immutable one), and which part differs. Prints; never the token itself.
 */
async function claims(env, job) {
  const pinFile = join('infra', 'env', `${env}.pipeline.json`);
  const pipeline = JSON.parse(readFileSync(join(ROOT, pinFile), 'utf8'));
  const repository = pipeline.githubRepository;
  const identity = `id-drawreq-${env}-${job}`;
  const got = await jobClaims();
  if (got.claims === undefined) {
    process.stderr.write(`the job's token claims cannot be shown: ${got.reason}\n`);
    process.exit(1);
  }
  const token = got.claims;
  const [owner, name] = String(repository).split('/');
  const forms = [`repo:${repository}`, `repo:${owner}@${token.repository_owner_id}/${name}@${token.repository_id}`];
  const expected = forms.map((prefix) => subjectOf(prefix, repository, env, job));
  const expectedClaims = {
    job_workflow_ref: `${repository}/.github/workflows/${SIGN_INS[job].file}@${MAIN_REF}`,
    ref: MAIN_REF,
    environment: SIGN_INS[job].environment(env),
  };
  const shown = ['sub', 'job_workflow_ref', 'ref', 'environment'];
  const lines = [
    `The Azure sign-in as ${identity} failed. What this job's OIDC token says (the claims the credentials match on; not the token):`,
    ...shown.map((claim) => `  ${claim.padEnd(17)} ${token[claim] ?? '(none)'}`),
    `What ${identity}'s federated credentials expect (${pinFile}'s githubRepository; the immutable form with this token's ids):`,
    ...expected.map((subject) => `  sub               ${subject}${subject === token.sub ? "   (the token's)" : ''}`),
  ];
  const differs = Object.entries(expectedClaims)
    .filter(([claim, value]) => (token[claim] ?? undefined) !== value)
    .map(([claim, value]) => `${claim} is ${token[claim] ?? '(none)'}, not ${value ?? '(none)'}`);
  if (!forms.some((prefix) => String(token.sub).startsWith(`${prefix}:`)))
    differs.unshift(`the repository part of sub is neither ${forms.join(' nor ')} (githubRepository, or the ids given to the bootstrap)`);
  if (expected.includes(token.sub))
    lines.push(
      `The token's sub is one the bootstrap gives ${identity}: check that its credentials hold it (the bootstrap re-run, with these ids): az identity federated-credential list --identity-name ${identity} --resource-group ${pipeline.resourceGroup} -o table`,
    );
  else
    lines.push(
      `Differs: ${differs.length > 0 ? differs.join('; ') : "the template's parts (GitHub's OIDC settings: node scripts/githubSettings.cjs check)"}.`,
      `Compare with the credentials: az identity federated-credential list --identity-name ${identity} --resource-group ${pipeline.resourceGroup} -o table`,
    );
  process.stdout.write(`${lines.join('\n')}\n`);
}

function main(argv) {
  const [command, env, ...rest] = argv;
  if (command === 'claims') {
    if (!['dev', 'prod'].includes(env) || rest.length !== 1 || SIGN_INS[rest[0]] === undefined) usage();
    claims(env, rest[0]).catch((error) => {
      process.stderr.write(`the job's token claims cannot be shown: ${error.message}\n`);
      process.exit(1);
    });
    return;
  }
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
