/**
 * Both sides of the pipeline's sign-in, as their owners document them, so that tests can put one against
 * the other:
 *   - GitHub: the `sub` claim of a job's OpenID Connect token, by the default template (GitHub's OIDC
 *     reference, "Example subject claims" and "Immutable subject claims"): `repo:OWNER/REPO:CONTEXT`, or
 *     `repo:OWNER@OWNER-ID/REPO@REPO-ID:CONTEXT` for a repository that uses immutable subject claims, where
 *     the context is `environment:NAME` when the job references an environment, else `pull_request` for a
 *     pull request event, else `ref:REF`; a `:` inside a value is written `%3A`.
 *   - Microsoft Entra ID: a federated identity credential accepts a token only if its issuer, subject and
 *     audience match exactly (case-sensitive; no wildcards), at most 20 credentials per identity.
 *   - This repository: the credentials infra/bootstrap.bicep gives each identity, evaluated from the
 *     Bicep itself (tests/support/bicepEvaluation.ts) for given bootstrap parameters.
 */
import { join } from 'node:path';
import { BicepFile, ResourceRef, type Value } from './bicepEvaluation';

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
}

export interface GitHubJob {
  /** The GitHub environment the job references, if any. */
  readonly environment?: string;
  readonly event: string;
  /** github.ref: refs/heads/main, refs/pull/1/merge, … */
  readonly ref: string;
}

export interface OidcToken {
  readonly iss: string;
  readonly sub: string;
  readonly aud: string;
}

const escape = (value: string) => value.replaceAll(':', '%3A');

/** The `sub` claim GitHub's default template gives this job's token. */
export function githubSubject(repository: GitHubRepository, job: GitHubJob): string {
  const repo = repository.immutableSubject
    ? `repo:${repository.owner}@${repository.ownerId}/${repository.name}@${repository.id}`
    : `repo:${repository.owner}/${repository.name}`;
  if (job.environment !== undefined && job.environment !== '') return `${repo}:environment:${escape(job.environment)}`;
  if (job.event === 'pull_request') return `${repo}:pull_request`;
  return `${repo}:ref:${escape(job.ref)}`;
}

/** The token azure/login obtains for the job. */
export function githubToken(repository: GitHubRepository, job: GitHubJob): OidcToken {
  return { iss: GITHUB_ISSUER, sub: githubSubject(repository, job), aud: AZURE_AUDIENCE };
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
