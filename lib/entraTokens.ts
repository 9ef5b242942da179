/**
 * What Microsoft Entra ID's metadata, key sets and tokens mean, in every cloud (docs/contract.md §3):
 * the tenant's v1 metadata beside its v2 one, the `{tenantid}` template, the audience forms a v1 token
 * carries, and the issuer each signing key is published for. Pure functions; lib/auth applies them.
 */

/** Entra's placeholder for the tenant id in multi-tenant issuers and in key sets' `issuer` fields. */
export const TENANT_TEMPLATE = '{tenantid}';

const V2_METADATA = '/v2.0/.well-known/openid-configuration';
const V1_METADATA = '/.well-known/openid-configuration';

/**
 * The tenant's v1 metadata URL beside its v2 one, derived as Microsoft.Identity.Web derives it (the
 * authority without `/v2.0`): its `issuer` is the v1 issuer of that cloud (`sts.windows.net`,
 * `sts.chinacloudapi.cn`, …), which no rule could safely assume. Undefined when the URL is not
 * Entra's v2 shape (a local provider, or a provider that is not Entra): no v1 issuer then.
 */
export function v1MetadataUrl(v2MetadataUrl: string): string | undefined {
  const url = new URL(v2MetadataUrl);
  if (!url.pathname.endsWith(V2_METADATA)) return undefined;
  url.pathname = url.pathname.slice(0, -V2_METADATA.length) + V1_METADATA;
  return url.href;
}

/** An issuer with Entra's `{tenantid}` template filled in. */
export function withTenant(issuer: string, tenantId: string): string {
  return issuer.replaceAll(TENANT_TEMPLATE, tenantId);
}

/**
 * The `aud` values accepted for the configured audiences. A v1 token carries the App ID URI exactly as
 * the client asked for it, with or without a trailing slash; Entra resolves both to the same
 * application, so an App ID URI (anything with a scheme, unlike an application id) is accepted in both
 * forms. Application ids (GUIDs, what v2 tokens carry) are compared exactly.
 */
export function audienceForms(audiences: readonly string[]): string[] {
  const forms = new Set<string>();
  for (const audience of audiences) {
    forms.add(audience);
    if (audience.includes('://')) forms.add(audience.endsWith('/') ? audience.slice(0, -1) : `${audience}/`);
  }
  return [...forms];
}

/** The claims the per-key issuer check reads. */
export interface IssuerClaims {
  readonly iss?: unknown;
  readonly tid?: unknown;
}

/**
 * Whether a verified token's signing key is held to the token's issuer, as Microsoft.IdentityModel's
 * `ValidateIssuerSigningKey` does (the mitigation after the 2023 signing-key incident): a key whose
 * `issuer` is absent or blank is not held to one; otherwise that issuer, its `{tenantid}` filled from
 * the token's `tid`, must be the token's issuer, or the tenant's (v2) metadata issuer (a v1 token's
 * issuer never matches a key, as v1 key sets name no issuers). The token's issuer must name its `tid`.
 *
 * `keyIssuers` are the `issuer` fields of every key of the token's `kid` in the key set that verified it
 * (one, as Entra names each key by `kid`): all must hold, and there must be one. A token without `tid`
 * signed by a key that names an issuer is refused, as Microsoft.IdentityModel refuses it (IDX40009).
 * Deliberately stricter: a key naming an issuer that is not a string is refused (Microsoft treats it
 * as absent).
 */
export function keyIssuerHolds(keyIssuers: readonly unknown[], claims: IssuerClaims, metadataIssuer: string): boolean {
  const { iss, tid } = claims;
  // No key at all cannot have verified the token: refused rather than waved through.
  return (
    keyIssuers.length > 0 &&
    keyIssuers.every((keyIssuer) => {
      if (keyIssuer === undefined || (typeof keyIssuer === 'string' && keyIssuer.trim() === '')) return true;
      if (typeof keyIssuer !== 'string' || typeof tid !== 'string' || tid === '' || typeof iss !== 'string' || !iss.includes(tid)) return false;
      const effective = withTenant(keyIssuer, tid);
      return effective === iss || effective === metadataIssuer;
    })
  );
}
