/**
 * A local stand-in for Microsoft Entra ID's token-validation surface in one cloud, served over HTTP as
 * the tenant's real endpoints are laid out: v2 and v1 OpenID metadata under the authority, and key sets
 * whose keys carry the `issuer` each is published for. The issuers and key-set fields are each cloud's
 * real ones (CLOUDS); only the host is local. Tokens are real RS256 JWTs shaped like Entra's app-only
 * v1 and v2 access tokens, signed with jose.
 */
import { createServer, type Server } from 'node:http';
import { randomUUID } from 'node:crypto';
import { SignJWT, exportJWK, generateKeyPair, type JWK, type CryptoKey } from 'jose';
import { TENANT_TEMPLATE } from '../../lib/entraTokens';

/** A Microsoft cloud as its tokens and metadata name it. */
export interface Cloud {
  readonly name: string;
  /** The login host partners and the service talk to (`environment().authentication.loginEndpoint`). */
  readonly loginHost: string;
  /** The issuer of v2 tokens and of the v2 metadata, for a tenant id or the `{tenantid}` template. */
  v2Issuer(tenant: string): string;
  /** The issuer of v1 tokens and of the v1 metadata. */
  v1Issuer(tenant: string): string;
}

/**
 * The clouds, with each one's issuers as its metadata documents publish them (Microsoft's access-token
 * and national-clouds references; the Bot Framework SDK's token-issuer constants for US Government v1,
 * `https://login.microsoftonline.us/{tenant}/`, where a Microsoft Q&A answer names `sts.windows.net`:
 * the service takes whichever the tenant's v1 metadata names, so either works).
 */
export const CLOUDS: readonly Cloud[] = [
  {
    name: 'Azure (public)',
    loginHost: 'login.microsoftonline.com',
    v2Issuer: (t) => `https://login.microsoftonline.com/${t}/v2.0`,
    v1Issuer: (t) => `https://sts.windows.net/${t}/`,
  },
  {
    name: 'Azure US Government',
    loginHost: 'login.microsoftonline.us',
    v2Issuer: (t) => `https://login.microsoftonline.us/${t}/v2.0`,
    v1Issuer: (t) => `https://login.microsoftonline.us/${t}/`,
  },
  {
    name: 'Azure operated by 21Vianet',
    loginHost: 'login.chinacloudapi.cn',
    v2Issuer: (t) => `https://login.partner.microsoftonline.cn/${t}/v2.0`,
    v1Issuer: (t) => `https://sts.chinacloudapi.cn/${t}/`,
  },
];

/** A signing key and the `issuer` its v2 key-set entry carries (`undefined`: no such field). */
export interface KeySpec {
  readonly kid: string;
  readonly issuer?: unknown;
  /** false: held to sign with, never published. */
  readonly publish?: boolean;
}

interface HeldKey {
  readonly privateKey: CryptoKey;
  readonly publicJwk: JWK;
  readonly issuer?: unknown;
}

export interface TokenOptions {
  readonly kid?: string;
  /** Claims to set or, with `undefined`, remove. */
  readonly claims?: Record<string, unknown>;
}

export interface EntraProvider {
  readonly cloud: Cloud;
  /** What `AUTH_AUTHORITY_HOST` names for this provider. */
  readonly authorityHost: string;
  /** The tenant's v2 metadata URL, as lib/config derives it from the authority host. */
  metadataUrl(tenant: string): string;
  /** Every path requested, in order. */
  readonly requests: string[];
  /** Documents (the path after the tenant, e.g. `.well-known/openid-configuration`) that answer 503 while listed. */
  readonly failing: Set<string>;
  /**
   * Documents whose requests are never answered while listed: the connection stays open until the
   * client gives up (its timeout) or the provider stops. An outage that makes a caller wait.
   */
  readonly hanging: Set<string>;
  addKey(spec: KeySpec): Promise<void>;
  /** Stops publishing a key (it can still sign). */
  removeKey(kid: string): void;
  /** A v2 app-only access token of `tenant` for the API's application id `audience`. */
  v2Token(tenant: string, audience: string, client: string, options?: TokenOptions): Promise<string>;
  /** A v1 app-only access token of `tenant` for the App ID URI `audience`, as requested. */
  v1Token(tenant: string, audience: string, client: string, options?: TokenOptions): Promise<string>;
  stop(): Promise<void>;
}

export const DEFAULT_KID = 'entra-key-1';

/** Starts the provider with one key, published (as Entra does) for the cloud's `{tenantid}` v2 issuer. */
export async function startEntraProvider(cloud: Cloud): Promise<EntraProvider> {
  const keys = new Map<string, HeldKey>();
  const requests: string[] = [];
  const failing = new Set<string>();
  const hanging = new Set<string>();
  let base = '';
  const json = (body: unknown) => [200, JSON.stringify(body)] as const;
  const published = new Set<string>();
  const keySet = (withIssuers: boolean) => ({
    keys: [...keys.entries()]
      .filter(([kid]) => published.has(kid))
      .map(([, key]) => key)
      .map(({ publicJwk, issuer }) => ({ ...publicJwk, ...(withIssuers && issuer !== undefined ? { issuer } : {}) })),
  });

  const route = (path: string): readonly [number, string] => {
    const [, tenant, rest] = /^\/([^/]+)\/(.*)$/.exec(path) ?? [];
    if (tenant === undefined) return [404, ''];
    if (failing.has(rest)) return [503, ''];
    switch (rest) {
      case 'v2.0/.well-known/openid-configuration':
        return json({
          token_endpoint: `https://${cloud.loginHost}/${tenant}/oauth2/v2.0/token`,
          jwks_uri: `${base}/${tenant}/discovery/v2.0/keys`,
          issuer: cloud.v2Issuer(tenant),
          id_token_signing_alg_values_supported: ['RS256'],
          tenant_region_scope: null,
          cloud_instance_name: cloud.loginHost.replace(/^login\./, ''),
        });
      case '.well-known/openid-configuration':
        return json({
          token_endpoint: `https://${cloud.loginHost}/${tenant}/oauth2/token`,
          jwks_uri: `${base}/common/discovery/keys`,
          issuer: cloud.v1Issuer(tenant),
          id_token_signing_alg_values_supported: ['RS256'],
        });
      case 'discovery/v2.0/keys':
        return json(keySet(true));
      case 'discovery/keys':
        // v1 key sets name no issuers.
        return json(keySet(false));
      default:
        return [404, ''];
    }
  };

  const server: Server = createServer((req, res) => {
    const path = new URL(req.url ?? '/', 'http://local').pathname;
    requests.push(path);
    if (hanging.has(/^\/[^/]+\/(.*)$/.exec(path)?.[1] ?? '')) return;
    const [status, body] = route(path);
    res.writeHead(status, { 'content-type': 'application/json' }).end(body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as { port: number }).port}`;

  const addKey = async ({ kid, issuer, publish = true }: KeySpec): Promise<void> => {
    const { privateKey, publicKey } = await generateKeyPair('RS256');
    if (publish) published.add(kid);
    keys.set(kid, { privateKey, publicJwk: { ...(await exportJWK(publicKey)), kid, kty: 'RSA', use: 'sig', x5t: kid }, issuer });
  };
  await addKey({ kid: DEFAULT_KID, issuer: cloud.v2Issuer(TENANT_TEMPLATE) });

  const sign = async (claims: Record<string, unknown>, options: TokenOptions): Promise<string> => {
    const kid = options.kid ?? DEFAULT_KID;
    const key = keys.get(kid);
    if (key === undefined) throw new Error(`no key ${kid}`);
    const now = Math.floor(Date.now() / 1000);
    const payload: Record<string, unknown> = { iat: now, nbf: now, exp: now + 3600, ...claims, ...options.claims };
    for (const [name, value] of Object.entries(payload)) if (value === undefined) delete payload[name];
    return new SignJWT(payload).setProtectedHeader({ typ: 'JWT', alg: 'RS256', kid, x5t: kid }).sign(key.privateKey);
  };
  const common = (tenant: string, client: string) => ({
    aio: 'E2RgYJg', // opaque in real tokens
    idtyp: 'app',
    oid: randomUUID(),
    sub: client,
    rh: '0.AAAA',
    roles: ['Draws.Submit'],
    tid: tenant,
    uti: randomUUID().slice(0, 22),
  });

  return {
    cloud,
    authorityHost: base,
    metadataUrl: (tenant) => `${base}/${tenant}/v2.0/.well-known/openid-configuration`,
    requests,
    failing,
    hanging,
    addKey,
    removeKey: (kid) => {
      published.delete(kid);
    },
    v2Token: (tenant, audience, client, options = {}) =>
      sign({ ...common(tenant, client), aud: audience, iss: cloud.v2Issuer(tenant), azp: client, azpacr: '1', ver: '2.0' }, options),
    v1Token: (tenant, audience, client, options = {}) =>
      sign(
        { ...common(tenant, client), aud: audience, iss: cloud.v1Issuer(tenant), idp: cloud.v1Issuer(tenant), appid: client, appidacr: '1', ver: '1.0' },
        options,
      ),
    stop: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections(); // requests left hanging would otherwise hold the close open
      }),
  };
}
