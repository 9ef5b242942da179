/**
 * Both sides of the pipeline's sign-in, as their owners document them, so that tests can put one against
 * the other:
 *   - GitHub: the `sub` claim of a job's OpenID Connect token, by the default template (GitHub's OIDC
 *     reference, "Example subject claims" and "Immutable subject claims"): `repo:OWNER/REPO:CONTEXT`, or
 *     `repo:OWNER@OWNER-ID/REPO@REPO-ID:CONTEXT` for a repository that uses immutable subject claims, where
 *     the context is `environment:NAME` when the job references an environment, else `pull_request` for a
 *     pull request event, else `ref:REF`; a `:` inside a value is written `%3A`. Under a repository's
 *     customized template (`include_claim_keys`, "Customizing the subject claims"), each key in its order:
 *     `repo` and `context` as above, any other claim as `KEY:VALUE` (`ref:refs/heads/main`,
 *     `job_workflow_ref:OWNER/REPO/.github/workflows/FILE@REF`: the file the job is defined in, at its ref).
 *   - Microsoft Entra ID: a federated identity credential accepts a token only if its issuer, subject and
 *     audience match exactly (case-sensitive; no wildcards), at most 20 credentials per identity.
 *   - This repository: the credentials infra/bootstrap.bicep gives each identity, evaluated from the
 *     Bicep itself (tests/support/bicepEvaluation.ts) for given bootstrap parameters.
 */
import { join } from 'node:path';
import { BicepFile, ResourceRef, type Value } from './bicepEvaluation';

/** The repository's subject template (`include_claim_keys`), as scripts/githubSettings.cjs applies it. */
// eslint-disable-next-line @typescript-eslint/no-require-imports
export const SUBJECT_CLAIM_KEYS: readonly string[] = (require(join(__dirname, '..', '..', 'scripts', 'githubSettings.cjs')) as { SUBJECT_CLAIM_KEYS: string[] })
  .SUBJECT_CLAIM_KEYS;

/**
 * The federated credentials infra/bootstrap.bicep gave an environment's identities before issue #40 (the
 * default template's subjects: `environment:<env>`, `pull_request`, `environment:<env>-stop`), in both
 * subject forms: what an existing environment keeps until the migration deletes them (docs/deploy.md).
 */
export const EARLIER_CREDENTIALS = (env: string): Record<string, string[]> => ({
  [`id-drawreq-${env}-deploy`]: [`github-environment-${env}`, `github-environment-${env}-immutable`],
  [`id-drawreq-${env}-plan`]: ['github-pull-requests', 'github-pull-requests-immutable'],
  [`id-drawreq-${env}-stop`]: [`github-environment-${env}-stop`, `github-environment-${env}-stop-immutable`],
});

/** GitHub's OIDC issuer for github.com (not GitHub Enterprise Server). */
export const GITHUB_ISSUER = 'https://token.actions.githubusercontent.com';
/** The audience azure/login asks GitHub for, and Entra expects for a token exchange. */
export const AZURE_AUDIENCE = 'api://AzureADTokenExchange';
/** Microsoft Entra ID: "A maximum of 20 federated identity credentials can be added to an application or user-assigned managed identity." */
export const MAX_CREDENTIALS_PER_IDENTITY = 20;

export interface GitHubRepository {
  readonly owner: string;
  readonly ownerId: string;
  readonly name: string;
  readonly id: string;
  /** Created after 15 July 2026, renamed or transferred since, or opted in. */
  readonly immutableSubject: boolean;
  /** The repository's customized subject template (`include_claim_keys`); absent: GitHub's default. */
  readonly subjectClaimKeys?: readonly string[];
}

export interface GitHubJob {
  /** The GitHub environment the job references, if any. */
  readonly environment?: string;
  readonly event: string;
  /** github.ref: refs/heads/main, refs/pull/1/merge, … (a called workflow's job: its caller's). */
  readonly ref: string;
  /** job_workflow_ref: `OWNER/REPO/.github/workflows/FILE@REF` of the file the job is defined in. */
  readonly jobWorkflowRef?: string;
}

export interface OidcToken {
  readonly iss: string;
  readonly sub: string;
  readonly aud: string;
}

const escape = (value: string) => value.replaceAll(':', '%3A');

/** The `sub` claim GitHub gives this job's token, by the repository's template (its default, or its customized one). */
export function githubSubject(repository: GitHubRepository, job: GitHubJob): string {
  const repo = repository.immutableSubject
    ? `repo:${repository.owner}@${repository.ownerId}/${repository.name}@${repository.id}`
    : `repo:${repository.owner}/${repository.name}`;
  const context =
    job.environment !== undefined && job.environment !== ''
      ? `environment:${escape(job.environment)}`
      : job.event === 'pull_request'
        ? 'pull_request'
        : `ref:${escape(job.ref)}`;
  const claims: Record<string, string | undefined> = { ref: job.ref, job_workflow_ref: job.jobWorkflowRef };
  return (repository.subjectClaimKeys ?? ['repo', 'context'])
    .map((key) => {
      if (key === 'repo') return repo;
      if (key === 'context') return context;
      const value = claims[key];
      if (value === undefined) throw new Error(`no ${key} claim for this job: the token builder knows ref and job_workflow_ref only`);
      return `${key}:${escape(value)}`;
    })
    .join(':');
}

/** The token azure/login obtains for the job. */
export function githubToken(repository: GitHubRepository, job: GitHubJob): OidcToken {
  return { iss: GITHUB_ISSUER, sub: githubSubject(repository, job), aud: AZURE_AUDIENCE };
}

/**
 * The job's token's claims as GitHub's OIDC reference lists them ("OIDC token claims"): the token above, and
 * the custom claims the subject is built from (`ref`, `job_workflow_ref`, `environment` when the job names
 * one, the repository and its owner, with their ids).
 */
export function githubClaims(repository: GitHubRepository, job: GitHubJob): Record<string, string> {
  return {
    ...githubToken(repository, job),
    ref: job.ref,
    ...(job.jobWorkflowRef === undefined ? {} : { job_workflow_ref: job.jobWorkflowRef }),
    ...(job.environment === undefined || job.environment === '' ? {} : { environment: job.environment }),
    event_name: job.event,
    repository: `${repository.owner}/${repository.name}`,
    repository_id: repository.id,
    repository_owner: repository.owner,
    repository_owner_id: repository.ownerId,
  };
}

export interface FederatedCredential {
  /** Name of the user-assigned identity it belongs to (`id-drawreq-dev-deploy`). */
  readonly identity: string;
  readonly name: string;
  readonly issuer: string;
  readonly subject: string;
  readonly audiences: readonly string[];
}

/** The credentials of `credentials` that Entra would accept this token for: an exact match of all three. */
export function matching(credentials: readonly FederatedCredential[], token: OidcToken): FederatedCredential[] {
  return credentials.filter((c) => c.issuer === token.iss && c.subject === token.sub && c.audiences.includes(token.aud));
}

const INFRA = join(__dirname, '..', '..', 'infra');
const CREDENTIAL_TYPE = 'Microsoft.ManagedIdentity/userAssignedIdentities/federatedIdentityCredentials';

/** The federated credentials infra/bootstrap.bicep declares for these parameters, as ARM would create them. */
export async function bootstrapCredentials(parameters: Record<string, Value>): Promise<FederatedCredential[]> {
  const bootstrap = await BicepFile.load(join(INFRA, 'bootstrap.bicep'), parameters);
  const identities = await BicepFile.load(join(INFRA, 'modules', 'pipelineIdentities.bicep'), bootstrap.moduleParams('identities'));
  return identities.resourcesOf(CREDENTIAL_TYPE).map(({ symbol, body }) => {
    const text = (value: Value | undefined, what: string): string => {
      if (typeof value !== 'string') throw new Error(`${symbol}: ${what} is not a string: ${JSON.stringify(value)}`);
      return value;
    };
    const properties = body.properties as Record<string, Value>;
    if (!(body.parent instanceof ResourceRef)) throw new Error(`${symbol}: no parent identity`);
    return {
      identity: body.parent.name,
      name: text(body.name, 'name'),
      issuer: text(properties.issuer, 'issuer'),
      subject: text(properties.subject, 'subject'),
      audiences: (properties.audiences as Value[]).map((a) => text(a, 'an audience')),
    };
  });
}
