/**
 * Bearer token → the calling client id, or a typed failure (docs/contract.md §3).
 * Tokens are verified with jose against the provider's OpenID metadata and JWKS. A provider
 * that cannot be reached is a dependency failure (502), never a rejected token (401).
 */
import {
  createLocalJWKSet,
  createRemoteJWKSet,
  customFetch,
  jwtVerify,
  errors as joseErrors,
  type JSONWebKeySet,
  type FlattenedJWSInput,
  type JWTHeaderParameters,
  type JWTPayload,
  type JWTVerifyGetKey,
  type JWTVerifyOptions,
} from 'jose';
import { isSecureOrLoopbackUrl, type AuthConfig } from './config';
import { audienceForms, keyIssuerHolds, v1MetadataUrl, withTenant } from './entraTokens';
import { LIMITS } from './limits';
import { tracedFetch } from './telemetry';
import { VerifiedTokens } from './verifiedTokens';

/** How the provider's metadata and keys are fetched and kept. */
export interface ProviderTimings {
  /** Each metadata or key-set request. */
  readonly fetchTimeoutMs: number;
  /** Metadata is refreshed at most this often (docs/contract.md §3: 24 h). */
  readonly metadataMaxAgeMs: number;
  /** jose's key-set cache age, and its cooldown between refetches for an unknown kid. */
  readonly jwksMaxAgeMs: number;
  readonly jwksCooldownMs: number;
  /** After a failed refresh, what is held is used without asking the provider again for this long. */
  readonly retryAfterFailureMs: number;
}

export const DEFAULT_PROVIDER_TIMINGS: ProviderTimings = {
  fetchTimeoutMs: 5_000,
  metadataMaxAgeMs: 24 * 60 * 60 * 1000,
  jwksMaxAgeMs: 10 * 60 * 1000,
  jwksCooldownMs: 30 * 1000,
  retryAfterFailureMs: 60 * 1000,
};

/** RFC 6750 b64token. */
const B64TOKEN = /^[A-Za-z0-9\-._~+/]+=*$/;

/** Why a caller was refused. Goes to logs and telemetry, never to the caller. */
export type UnauthorizedCode =
  | 'ERR_AUTH_MISSING' // no Authorization header, or not the Bearer scheme
  | 'ERR_AUTH_TOKEN_TOO_LARGE'
  | 'ERR_AUTH_MALFORMED' // not a well-formed signed JWT
  | 'ERR_AUTH_ALGORITHM' // alg not allowed (none, HS256 …)
  | 'ERR_AUTH_UNKNOWN_KEY' // kid not in the provider's key set
  | 'ERR_AUTH_SIGNATURE'
  | 'ERR_AUTH_KEY_ISSUER' // the signing key is published for another issuer (claim iss)
  | 'ERR_AUTH_EXPIRED'
  | 'ERR_AUTH_CLAIM' // issuer, audience, nbf, missing exp … (see `claim`)
  | 'ERR_AUTH_TENANT' // tid is not the configured tenant
  | 'ERR_AUTH_DELEGATED' // a user (delegated) token: has scp
  | 'ERR_AUTH_NOT_APP' // idtyp present and not app
  | 'ERR_AUTH_ROLE' // required app role missing
  | 'ERR_AUTH_NO_CLIENT' // no usable client id claim
  | 'ERR_AUTH_UNKNOWN_CLIENT' // client not in Partners
  | 'ERR_AUTH_INACTIVE_CLIENT'
  | 'ERR_AUTH_STOPPED_CLIENT' // on the stop list (StoppedClients): on-call's emergency stop
  | 'ERR_AUTH_PARTNER_UNNAMED'; // Partners row without PartnerId: a data problem, fail closed

export type IdentityProviderFailureCode = 'ERR_IDP_METADATA' | 'ERR_IDP_JWKS';

export type AuthFailure =
  | { readonly kind: 'unauthorized'; readonly code: UnauthorizedCode; readonly tokenSent: boolean; readonly claim?: string }
  | { readonly kind: 'dependency'; readonly code: IdentityProviderFailureCode };

export type TokenResult = { readonly ok: true; readonly clientId: string; readonly claims: JWTPayload } | { readonly ok: false; readonly failure: AuthFailure };

/** A background refresh of the provider's metadata or key set that failed: recorded, never thrown. */
export interface RefreshFailure {
  readonly code: IdentityProviderFailureCode;
  /** When it failed, on the authenticator's clock (milliseconds since the epoch). */
  readonly at: number;
}

/**
 * Refreshes something held while requests keep using it: at most one refresh at a time, and none for
 * `retryAfterFailureMs` after a failure, so an outage costs the provider one request per period and no
 * request a wait. The request that started a refresh has its answer from what is held, so a refresh
 * never rejects into it: a failure is caught and handed to `onFailure`.
 */
export class BackgroundRefresh {
  private running = false;
  private failedAt = Number.NEGATIVE_INFINITY;

  constructor(
    private readonly now: () => number,
    private readonly retryAfterFailureMs: number,
    private readonly onFailure: (at: number) => void,
  ) {}

  /** Within `retryAfterFailureMs` of the last failure, in the background or awaited by a request. */
  backingOff(): boolean {
    return this.now() - this.failedAt < this.retryAfterFailureMs;
  }

  /** A failed fetch that a request awaited: what is held then answers for a while without asking again. */
  failed(): void {
    this.failedAt = this.now();
  }

  /** Starts `refresh` unless one is running or a failure is recent, and returns at once. */
  start(refresh: () => Promise<unknown>): void {
    if (this.running || this.backingOff()) return;
    this.running = true;
    // Through a new promise, so that a refresh throwing before its first await is caught as well.
    void new Promise((resolve) => resolve(refresh()))
      .catch(() => {
        this.failed();
        this.onFailure(this.failedAt);
      })
      .finally(() => {
        this.running = false;
      });
  }
}

/** Thrown inside the key resolver so jose's own failures stay distinguishable from the provider's. */
class IdentityProviderUnavailable extends Error {
  constructor(
    readonly code: IdentityProviderFailureCode,
    options?: { cause?: unknown },
  ) {
    super(code, options);
    this.name = 'IdentityProviderUnavailable';
  }
}

interface ProviderKeys {
  /** jwtVerify's options, built once per metadata fetch rather than per request. */
  readonly verifyOptions: JWTVerifyOptions;
  /** The (v2) metadata's issuer, its `{tenantid}` filled with the configured tenant: what keys are held to. */
  readonly metadataIssuer: string;
  readonly jwksUri: string;
  readonly resolver: KeyResolver;
  readonly fetchedAt: number;
}

interface KeyResolver {
  /**
   * A key getter for one verification, and the `issuer` fields of the keys of the token's `kid` in the
   * very key set that key came from (undefined until a key is found), so that the issuer check reads
   * the set that verified the signature, whatever reloads happen meanwhile.
   */
  forOneToken(): { readonly getKey: JWTVerifyGetKey; keyIssuers(): readonly unknown[] | undefined };
  /**
   * Changes whenever the key set may have changed (at the start of every fetch). Undefined while a
   * fetch is in flight, once jose would refetch the set, or while held keys stand in for a provider
   * that is down: no verification is remembered then.
   */
  keySetVersion(): number | undefined;
}

const JOSE_CODES: Record<string, UnauthorizedCode> = {
  ERR_JWT_EXPIRED: 'ERR_AUTH_EXPIRED',
  ERR_JWT_CLAIM_VALIDATION_FAILED: 'ERR_AUTH_CLAIM',
  ERR_JWS_SIGNATURE_VERIFICATION_FAILED: 'ERR_AUTH_SIGNATURE',
  ERR_JOSE_ALG_NOT_ALLOWED: 'ERR_AUTH_ALGORITHM',
  ERR_JOSE_NOT_SUPPORTED: 'ERR_AUTH_ALGORITHM',
  ERR_JWKS_NO_MATCHING_KEY: 'ERR_AUTH_UNKNOWN_KEY',
  ERR_JWKS_MULTIPLE_MATCHING_KEYS: 'ERR_AUTH_UNKNOWN_KEY',
};

/** Characters a Table Storage key cannot hold; a client id with them cannot be a partner. */
const CLIENT_ID = /^[^/\\#?\p{Cc}]{1,256}$/u;

export class Authenticator {
  private keys?: ProviderKeys;
  /** The first metadata fetch, which requests wait for: nothing is held before it. */
  private loading?: Promise<ProviderKeys>;
  private readonly metadataRefresh: BackgroundRefresh;
  private refreshFailure?: RefreshFailure;
  private readonly verified: VerifiedTokens<TokenResult>;
  private readonly providerFetch: typeof fetch;

  /** `fetchImpl` reaches the identity provider: the global fetch, or the dev host's, which trusts its local CA. */
  constructor(
    private readonly config: AuthConfig,
    private readonly now: () => number = Date.now,
    private readonly timings: ProviderTimings = DEFAULT_PROVIDER_TIMINGS,
    fetchImpl?: typeof fetch,
  ) {
    this.verified = new VerifiedTokens(config.clockToleranceSeconds);
    this.providerFetch = tracedFetch('identity-provider', fetchImpl);
    this.metadataRefresh = new BackgroundRefresh(now, timings.retryAfterFailureMs, (at) => this.recordRefreshFailure('ERR_IDP_METADATA', at));
  }

  /**
   * The last background refresh that failed. No request saw it (each was answered from what was held);
   * the fetch itself is in telemetry as a failed identity-provider dependency.
   */
  lastRefreshFailure(): RefreshFailure | undefined {
    return this.refreshFailure;
  }

  private recordRefreshFailure(code: IdentityProviderFailureCode, at: number): void {
    this.refreshFailure = { code, at };
  }

  async verify(authorization: string | null | undefined): Promise<TokenResult> {
    const refuse = (code: UnauthorizedCode, tokenSent = true, claim?: string): TokenResult => ({
      ok: false,
      failure: { kind: 'unauthorized', code, tokenSent, ...(claim === undefined ? {} : { claim }) },
    });
    // Longer than any token at its limit could be: refused before any text of it is read.
    if ((authorization?.length ?? 0) > LIMITS.authorizationLength) return refuse('ERR_AUTH_TOKEN_TOO_LARGE');
    const scheme = /^Bearer(?:[ \t]+([^]*))?$/i.exec(authorization ?? '');
    const token = scheme?.[1]?.trim() ?? '';
    if (token === '') return refuse('ERR_AUTH_MISSING', false);
    if (Buffer.byteLength(token) > LIMITS.tokenBytes) return refuse('ERR_AUTH_TOKEN_TOO_LARGE');
    if (!B64TOKEN.test(token)) return refuse('ERR_AUTH_MALFORMED');

    let keys: ProviderKeys;
    try {
      keys = await this.providerKeys();
    } catch {
      return { ok: false, failure: { kind: 'dependency', code: 'ERR_IDP_METADATA' } };
    }

    // The same token again, with nothing changed since it was accepted: the same answer, without the signature check.
    const keySetVersion = keys.resolver.keySetVersion();
    const remembered = this.verified.get(token, keys, keySetVersion);
    if (remembered !== undefined) return remembered;

    let claims: JWTPayload;
    const signing = keys.resolver.forOneToken();
    try {
      ({ payload: claims } = await jwtVerify(token, signing.getKey, keys.verifyOptions));
    } catch (error) {
      if (error instanceof IdentityProviderUnavailable) return { ok: false, failure: { kind: 'dependency', code: error.code } };
      const code = (error as { code?: string }).code;
      const claim = error instanceof joseErrors.JWTClaimValidationFailed ? error.claim : undefined;
      if (code !== undefined && code in JOSE_CODES) return refuse(JOSE_CODES[code], true, claim);
      if (error instanceof joseErrors.JOSEError || error instanceof TypeError) return refuse('ERR_AUTH_MALFORMED');
      throw error;
    }

    if (!keyIssuerHolds(signing.keyIssuers() ?? [], claims, keys.metadataIssuer)) return refuse('ERR_AUTH_KEY_ISSUER', true, 'iss');
    const { tenantId, requiredRole, partnerClaim } = this.config;
    if (tenantId !== undefined && claims.tid !== tenantId) return refuse('ERR_AUTH_TENANT', true, 'tid');
    // App-only tokens: a delegated token carries scp; Entra's idtyp, when present, says which.
    if (claims.scp !== undefined) return refuse('ERR_AUTH_DELEGATED', true, 'scp');
    if (claims.idtyp !== undefined && claims.idtyp !== 'app') return refuse('ERR_AUTH_NOT_APP', true, 'idtyp');
    if (requiredRole !== undefined && !(Array.isArray(claims.roles) && claims.roles.includes(requiredRole))) {
      return refuse('ERR_AUTH_ROLE', true, 'roles');
    }
    const clientId = partnerClaim !== undefined ? claims[partnerClaim] : (claims.azp ?? claims.appid);
    if (typeof clientId !== 'string' || !CLIENT_ID.test(clientId)) return refuse('ERR_AUTH_NO_CLIENT', true, partnerClaim ?? 'azp');
    const accepted: TokenResult = { ok: true, clientId, claims };
    // Remembered only if the key set did not change (or start changing) while this token was checked.
    if (keySetVersion !== undefined && keys.resolver.keySetVersion() === keySetVersion) {
      this.verified.set(token, keys, keySetVersion, claims.exp as number, accepted);
    }
    return accepted;
  }

  /**
   * Metadata is fetched on first use and kept. Once older than 24 h it is refreshed in the background
   * while requests keep using what is held; a failed refresh keeps it and waits before trying again.
   * Only the first fetch is waited for: if it fails, this request answers 502 and the next one retries.
   */
  private async providerKeys(): Promise<ProviderKeys> {
    const current = this.keys;
    if (current === undefined) {
      this.loading ??= this.loadKeys(undefined).finally(() => {
        this.loading = undefined;
      });
      return this.loading;
    }
    if (this.now() - current.fetchedAt >= this.timings.metadataMaxAgeMs) this.metadataRefresh.start(() => this.loadKeys(current));
    return current;
  }

  private async loadKeys(previous: ProviderKeys | undefined): Promise<ProviderKeys> {
    const { openIdConfigUrl, tenantId, allowedIssuers } = this.config;
    // Pinned issuers replace the metadata's: the v1 document is then not needed, nor waited for.
    const v1Url = allowedIssuers === undefined ? v1MetadataUrl(openIdConfigUrl) : undefined;
    const [v2, v1] = await Promise.all([this.metadata(openIdConfigUrl), v1Url === undefined ? undefined : this.metadata(v1Url)]);
    const { jwks_uri: jwksUri } = v2;
    if (typeof jwksUri !== 'string' || !isSecureOrLoopbackUrl(new URL(jwksUri))) throw new IdentityProviderUnavailable('ERR_IDP_METADATA');
    // Multi-tenant metadata names `{tenantid}`: this service serves one tenant, so that is the one filled in.
    const ofTenant = (issuer: string) => (tenantId === undefined ? issuer : withTenant(issuer, tenantId));
    const metadataIssuer = ofTenant(v2.issuer);
    const issuers = allowedIssuers ?? [metadataIssuer, ...(v1 === undefined ? [] : [ofTenant(v1.issuer)])];
    const resolver =
      previous?.jwksUri === jwksUri
        ? previous.resolver
        : keyResolver(new URL(jwksUri), this.timings, this.now, this.providerFetch, (at) => this.recordRefreshFailure('ERR_IDP_JWKS', at));
    const verifyOptions: JWTVerifyOptions = {
      issuer: [...issuers],
      audience: audienceForms(this.config.audiences),
      algorithms: [...this.config.algorithms],
      clockTolerance: this.config.clockToleranceSeconds,
      requiredClaims: ['exp'],
    };
    const keys = { verifyOptions, metadataIssuer, jwksUri, resolver, fetchedAt: this.now() };
    this.keys = keys;
    return keys;
  }

  /** One OpenID metadata document: it must name its issuer. */
  private async metadata(url: string): Promise<{ issuer: string; jwks_uri?: unknown }> {
    const response = await this.providerFetch(url, {
      signal: AbortSignal.timeout(this.timings.fetchTimeoutMs),
      redirect: 'manual',
      headers: { accept: 'application/json' },
    });
    if (response.status !== 200) throw new IdentityProviderUnavailable('ERR_IDP_METADATA');
    const metadata = (await response.json()) as { issuer?: unknown; jwks_uri?: unknown };
    if (typeof metadata.issuer !== 'string') throw new IdentityProviderUnavailable('ERR_IDP_METADATA');
    return { issuer: metadata.issuer, jwks_uri: metadata.jwks_uri };
  }
}

/**
 * jose's remote key set (cached; refetched on an unknown kid after its cooldown), made to tell
 * "the provider is down" apart from "no such key", and to verify with the keys it holds whenever they
 * have the token's key: a set past its cache age is reloaded in the background (jose's `reload()`),
 * as the metadata is, instead of jose's awaited reload, which made a request wait up to the fetch
 * timeout once per back-off period while the provider hung.
 */
function keyResolver(
  jwksUri: URL,
  timings: ProviderTimings,
  now: () => number,
  providerFetch: typeof fetch,
  onRefreshFailure: (at: number) => void,
): KeyResolver {
  let version = 0;
  const remote = createRemoteJWKSet(jwksUri, {
    timeoutDuration: timings.fetchTimeoutMs,
    cacheMaxAge: timings.jwksMaxAgeMs,
    cooldownDuration: timings.jwksCooldownMs,
    [customFetch]: (...args: Parameters<typeof providerFetch>) => {
      version += 1;
      return providerFetch(...args);
    },
  });
  const refresh = new BackgroundRefresh(now, timings.retryAfterFailureMs, onRefreshFailure);
  // The verifier of the key set last read, rebuilt only when the set's content changes.
  let local: { readonly json: string; readonly getKey: JWTVerifyGetKey } | undefined;
  /**
   * The key from one snapshot of the held set, with the issuers that snapshot gives the token's kid:
   * the signature and the issuer check then read the same set, even if a reload lands in between.
   */
  const fromSnapshot = async (header: JWTHeaderParameters, token: FlattenedJWSInput) => {
    const held: JSONWebKeySet | undefined = remote.jwks();
    if (held === undefined) throw new IdentityProviderUnavailable('ERR_IDP_JWKS');
    const json = JSON.stringify(held);
    if (local?.json !== json) local = { json, getKey: createLocalJWKSet(held) };
    const key = await local.getKey(header, token);
    const keyIssuers = held.keys.filter((jwk) => header.kid === undefined || jwk.kid === header.kid).map((jwk) => (jwk as { issuer?: unknown }).issuer);
    return { key, keyIssuers };
  };
  /** The held keys while the provider is down: a kid not among them is the provider's to answer. */
  const fromHeldKeys = async (header: JWTHeaderParameters, token: FlattenedJWSInput) => {
    try {
      return await fromSnapshot(header, token);
    } catch {
      throw new IdentityProviderUnavailable('ERR_IDP_JWKS');
    }
  };
  /** The token's key from the held set, or undefined when that set cannot give it (none held yet, kid not in it …). */
  const fromHeldSet = async (header: JWTHeaderParameters, token: FlattenedJWSInput) => {
    // fromSnapshot throws when no set is held yet: one copy of the set per request, not two.
    try {
      return await fromSnapshot(header, token);
    } catch {
      return undefined;
    }
  };
  const find = async (header: JWTHeaderParameters, token: FlattenedJWSInput) => {
    const held = await fromHeldSet(header, token);
    if (held !== undefined) {
      // However old the set, its key verifies now; a set past its cache age is refetched meanwhile.
      if (!remote.fresh && !remote.reloading) refresh.start(() => remote.reload());
      return held;
    }
    // A kid the held set lacks may be a rotation: jose refetches (after its cooldown) and the request
    // waits for the answer, unless the provider failed just now, when only it could tell (502).
    if (refresh.backingOff() && remote.jwks() !== undefined) return fromHeldKeys(header, token);
    try {
      // jose's cache, cooldown and refetch on an unknown kid decide which set is held.
      await remote(header, token);
    } catch (error) {
      if (error instanceof joseErrors.JWKSNoMatchingKey || error instanceof joseErrors.JWKSMultipleMatchingKeys) throw error;
      refresh.failed();
      return fromHeldKeys(header, token);
    }
    return fromSnapshot(header, token);
  };
  const forOneToken = () => {
    let keyIssuers: readonly unknown[] | undefined;
    const getKey: JWTVerifyGetKey = async (header, token) => {
      const found = await find(header, token);
      keyIssuers = found.keyIssuers;
      return found.key;
    };
    return { getKey, keyIssuers: () => keyIssuers };
  };
  return { forOneToken, keySetVersion: () => (remote.reloading || !remote.fresh || refresh.backingOff() ? undefined : version) };
}
