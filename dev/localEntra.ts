/**
 * The dev host's identity provider: Microsoft Entra ID as partners' code meets it, on this machine.
 *
 * - Served over HTTPS (a certificate from the local CA of dev/localCertificates.ts), with the tenant's
 *   endpoints where Entra puts them: authority `{host}/{tenant}`, v2 metadata under
 *   `{authority}/v2.0/.well-known/openid-configuration` whose issuer is `{authority}/v2.0`, key set at
 *   `{authority}/discovery/v2.0/keys` (each key naming the `{tenantid}` issuer it signs for), token
 *   endpoint `{authority}/oauth2/v2.0/token`. MSAL and Azure Identity accept it as an authority: their
 *   issuer check wants the metadata's issuer on the authority's host.
 * - The token endpoint takes the client-credentials grant only, and checks what Entra checks: the
 *   client is registered, its secret (form or HTTP Basic) or its client assertion (a JWT signed with a
 *   registered certificate's key, for this token endpoint, by this client, in date), and a scope of
 *   `{App ID URI}/.default`; a client may also be given an expired secret, or no app role on the API
 *   (refused as the API's appRoleAssignmentRequired makes Entra refuse it). Refusals carry Entra's
 *   status, `error`, AADSTS code and body shape.
 * - Another tenant in the path is not found (AADSTS90002), in the metadata as at the token endpoint: that
 *   metadata refusal is what MSAL turns into `endpoints_resolution_error` for an authority whose endpoints
 *   it does not know (docs/partners.md §1.3).
 *
 * oauth2-mock-server keeps the signing keys and builds the RS256 tokens; this module is the routing and
 * the checks. For local use only.
 */
import { X509Certificate, createHash, randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:https';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { decodeProtectedHeader, errors as joseErrors, jwtVerify } from 'jose';
import { OAuth2Issuer } from 'oauth2-mock-server';
import { appOnlyClaims, tokenRequestFields } from './appTokens';

/** A registered client's credentials: a secret, certificates (PEM), or both. */
export interface ClientCredentials {
  readonly secret?: string;
  /** Secrets the application had, now past their end date: Entra names them expired (AADSTS7000222), not wrong. */
  readonly expiredSecrets?: readonly string[];
  readonly certificates?: readonly string[];
  /**
   * false: the client holds no app role on the API. The API's service principal requires one
   * (appRoleAssignmentRequired, as infra/modules/entraApi.bicep sets it), so Entra refuses to issue it a
   * token (AADSTS501051). Default true.
   */
  readonly assigned?: boolean;
}

export interface LocalEntraOptions {
  readonly tenantId: string;
  /** The API's App ID URI: scopes name it, and issued tokens carry it as `aud`. */
  readonly audience: string;
  /** App roles put in `roles`. */
  readonly roles?: readonly string[];
  readonly port: number;
  /**
   * The `https://host` clients reach it by, when that is not its own `https://127.0.0.1:<port>`: a test
   * that sends `login.microsoftonline.com` here (its certificate then names that host) so that the
   * libraries treat it as Entra itself. Endpoints, issuer and the client assertion's `aud` use it.
   */
  readonly authorityHost?: string;
  /** The HTTPS certificate and key (PEM). */
  readonly tls: { readonly key: string; readonly cert: string };
  readonly clients: Readonly<Record<string, ClientCredentials>>;
}

export interface LocalEntra {
  /** What MSAL's `authority` and Azure Identity's `authorityHost` + tenant name. */
  readonly authorityHost: string;
  readonly authority: string;
  readonly issuer: string;
  readonly openIdConfigUrl: string;
  readonly tokenUrl: string;
  /** The port it listens on, on 127.0.0.1 (where `authorityHost` must lead when that names another host). */
  readonly port: number;
  stop(): Promise<void>;
}

const ASSERTION_TYPE = 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer';
/** Entra's access tokens live 60 to 90 minutes; `expires_in` says so to the second. */
const TOKEN_LIFETIME_S = 3599;
/** Token requests are small forms: anything larger is refused before it is read. */
const MAX_FORM_BYTES = 64 * 1024;

export interface EntraRefusal {
  readonly status: number;
  readonly body: Record<string, unknown>;
}

/** Entra's refusal: `error`, an `error_description` opening with its AADSTS code, and the fields around it. */
export function entraError(status: number, error: string, code: number, description: string): EntraRefusal {
  const traceId = randomUUID();
  const correlationId = randomUUID();
  const timestamp = new Date()
    .toISOString()
    .replace('T', ' ')
    .replace(/\.\d+Z$/, 'Z');
  return {
    status,
    body: {
      error,
      error_description: `AADSTS${code}: ${description}\r\nTrace ID: ${traceId}\r\nCorrelation ID: ${correlationId}\r\nTimestamp: ${timestamp}`,
      error_codes: [code],
      timestamp,
      trace_id: traceId,
      correlation_id: correlationId,
      error_uri: `https://login.microsoftonline.com/error?code=${code}`,
    },
  };
}

const missing = (parameter: string) => entraError(400, 'invalid_request', 900144, `The request body must contain the following parameter: '${parameter}'.`);

const base64url = (bytes: Buffer) => bytes.toString('base64url');

/** The registered certificate a client assertion's header names (`x5t#S256`, else `x5t`). */
function certificateNamed(header: Record<string, unknown>, certificates: readonly string[]): X509Certificate | undefined {
  for (const pem of certificates) {
    const cert = new X509Certificate(pem);
    if (
      header['x5t#S256'] !== undefined
        ? header['x5t#S256'] === base64url(createHash('sha256').update(cert.raw).digest())
        : header.x5t === base64url(createHash('sha1').update(cert.raw).digest())
    )
      return cert;
  }
  return undefined;
}

/** Entra's verdict on a client assertion: undefined when it authenticates `clientId`. */
export async function assertionRefusal(
  assertion: string,
  clientId: string,
  certificates: readonly string[],
  tokenUrl: string,
): Promise<EntraRefusal | undefined> {
  let header: Record<string, unknown>;
  try {
    header = decodeProtectedHeader(assertion);
  } catch {
    return entraError(400, 'invalid_request', 50027, 'JWT token is invalid or malformed.');
  }
  const cert = certificateNamed(header, certificates);
  const named = header['x5t#S256'] ?? header.x5t;
  // Entra names the thumbprint in upper-case hex.
  const thumbprint = typeof named === 'string' ? Buffer.from(named, 'base64url').toString('hex').toUpperCase() : '';
  if (cert === undefined) {
    return entraError(
      401,
      'invalid_client',
      700027,
      `The certificate with identifier used to sign the client assertion is not registered on application. [Reason - The key was not found., Thumbprint of key used by client: '${thumbprint}']`,
    );
  }
  try {
    const { payload } = await jwtVerify(assertion, cert.publicKey, {
      algorithms: ['PS256', 'RS256'],
      requiredClaims: ['exp', 'iss', 'sub', 'aud'],
      clockTolerance: 300,
    });
    // Every failure to authenticate the client is invalid_client (RFC 6749 §5.2), as Entra answers it.
    if (payload.iss !== clientId || payload.sub !== clientId) {
      return entraError(401, 'invalid_client', 700021, "Client assertion application identifier doesn't match 'client_id' parameter.");
    }
    if (Array.isArray(payload.aud)) {
      return entraError(
        401,
        'invalid_client',
        5002741,
        `Number of audience values in the client assertion exceed maximum allowed. ${payload.aud.length} audience values provided, maximum allowed is 1.`,
      );
    }
    if (payload.aud !== tokenUrl) return entraError(401, 'invalid_client', 700023, 'Client assertion audience claim does not match Realm issuer.');
    return undefined;
  } catch (error) {
    if (error instanceof joseErrors.JWTExpired || (error instanceof joseErrors.JWTClaimValidationFailed && error.claim === 'nbf')) {
      return entraError(401, 'invalid_client', 700024, 'Client assertion is not within its valid time range.');
    }
    if (error instanceof joseErrors.JWSSignatureVerificationFailed || error instanceof joseErrors.JOSEAlgNotAllowed) {
      return entraError(401, 'invalid_client', 700027, 'Client assertion failed signature validation.');
    }
    return entraError(400, 'invalid_request', 50027, 'JWT token is invalid or malformed.');
  }
}

/** What Entra answers a client-credentials request with instead of a token, or undefined when it issues one. */
export async function tokenRefusal(
  fields: Map<string, string>,
  clients: Readonly<Record<string, ClientCredentials>>,
  audience: string,
  tokenUrl: string,
): Promise<EntraRefusal | undefined> {
  const grantType = fields.get('grant_type');
  if (grantType === undefined) return missing('grant_type');
  if (grantType !== 'client_credentials') {
    return entraError(
      400,
      'unsupported_grant_type',
      70003,
      `The app requested an unsupported grant type '${grantType}'. This provider issues app-only tokens.`,
    );
  }
  const clientId = fields.get('client_id');
  if (clientId === undefined) return missing('client_id');
  if (!Object.hasOwn(clients, clientId)) {
    return entraError(400, 'unauthorized_client', 700016, `Application with identifier '${clientId}' was not found in the directory.`);
  }
  const client = clients[clientId];
  const secret = fields.get('client_secret');
  const assertion = fields.get('client_assertion');
  if (assertion !== undefined) {
    if (fields.get('client_assertion_type') !== ASSERTION_TYPE) return missing('client_assertion_type');
    const refusal = await assertionRefusal(assertion, clientId, client.certificates ?? [], tokenUrl);
    if (refusal !== undefined) return refusal;
  } else if (secret === undefined) {
    return entraError(401, 'invalid_client', 7000216, "'client_assertion', 'client_secret' or 'request' is required for the 'client_credentials' grant type.");
  } else if (secret !== client.secret && client.expiredSecrets?.includes(secret)) {
    return entraError(
      401,
      'invalid_client',
      7000222,
      `The provided client secret keys for app '${clientId}' are expired. Visit the Azure portal to create new keys for your app: https://aka.ms/NewClientSecret, or consider using certificate credentials for added security: https://aka.ms/certCreds.`,
    );
  } else if (secret !== client.secret) {
    return entraError(
      401,
      'invalid_client',
      7000215,
      'Invalid client secret provided. Ensure the secret being sent in the request is the client secret value, not the client secret ID.',
    );
  }
  const scope = fields.get('scope')?.trim();
  if (scope === undefined || scope === '') return missing('scope');
  if (!scope.endsWith('/.default')) {
    return entraError(
      400,
      'invalid_scope',
      1002012,
      `The provided value for scope ${scope} is not valid. Client credential flows must have a scope value with /.default suffixed to the resource identifier (application ID URI).`,
    );
  }
  const resource = scope.slice(0, -'/.default'.length);
  if (resource !== audience.replace(/\/$/, '')) {
    return entraError(400, 'invalid_resource', 500011, `The resource principal named ${resource} was not found in the tenant.`);
  }
  if (client.assigned === false) {
    // invalid_grant, as Entra answers it for the client-credentials grant (a user's sign-in gets AADSTS50105 instead).
    return entraError(400, 'invalid_grant', 501051, `Application '${clientId}' is not assigned to a role for the application '${resource}'.`);
  }
  return undefined;
}

function readForm(req: IncomingMessage): Promise<URLSearchParams | undefined> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size <= MAX_FORM_BYTES) chunks.push(chunk);
    });
    req.on('end', () => resolve(size > MAX_FORM_BYTES ? undefined : new URLSearchParams(Buffer.concat(chunks).toString())));
    req.on('error', reject);
  });
}

function sendJson(res: ServerResponse, status: number, body: unknown): void {
  res
    .writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store, no-cache', pragma: 'no-cache' })
    .end(JSON.stringify(body));
}

export async function startLocalEntra(options: LocalEntraOptions): Promise<LocalEntra> {
  const tenant = options.tenantId.toLowerCase();
  const issuer = new OAuth2Issuer();
  await issuer.keys.generate('RS256');
  let authorityHost = '';
  const authority = () => `${authorityHost}/${tenant}`;
  const tokenUrl = () => `${authority()}/oauth2/v2.0/token`;

  const v2Metadata = () => ({
    token_endpoint: tokenUrl(),
    token_endpoint_auth_methods_supported: ['client_secret_post', 'private_key_jwt', 'client_secret_basic'],
    jwks_uri: `${authority()}/discovery/v2.0/keys`,
    response_modes_supported: ['query', 'fragment', 'form_post'],
    subject_types_supported: ['pairwise'],
    id_token_signing_alg_values_supported: ['RS256'],
    response_types_supported: ['code', 'id_token', 'code id_token', 'id_token token'],
    scopes_supported: ['openid', 'profile', 'email', 'offline_access'],
    issuer: `${authority()}/v2.0`,
    request_uri_parameter_supported: false,
    authorization_endpoint: `${authority()}/oauth2/v2.0/authorize`,
    end_session_endpoint: `${authority()}/oauth2/v2.0/logout`,
    tenant_region_scope: null,
    cloud_instance_name: 'local',
  });
  const v1Metadata = () => ({
    token_endpoint: `${authority()}/oauth2/token`,
    jwks_uri: `${authorityHost}/common/discovery/keys`,
    issuer: `${authority()}/`,
    authorization_endpoint: `${authority()}/oauth2/authorize`,
    id_token_signing_alg_values_supported: ['RS256'],
  });
  // Entra's v2 key set names, per key, the issuer it signs for, with the tenant left as a template.
  const keySet = (withIssuer: boolean) => ({
    keys: issuer.keys.toJSON().map((jwk) => ({ ...jwk, use: 'sig', ...(withIssuer ? { issuer: `${authorityHost}/{tenantid}/v2.0` } : {}) })),
  });

  const issueToken = async (clientId: string) =>
    issuer.buildToken({
      expiresIn: TOKEN_LIFETIME_S,
      scopesOrTransform: (_header, payload) =>
        Object.assign(payload, appOnlyClaims(clientId, { audience: options.audience, tenantId: tenant, roles: options.roles })),
    });

  const respond = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const path = new URL(req.url ?? '/', 'https://local').pathname;
    const [, pathTenant, rest] = /^\/([^/]+)\/(.+)$/.exec(path) ?? [];
    if (req.method === 'GET' && path === '/common/discovery/keys') return sendJson(res, 200, keySet(false));
    if (pathTenant === undefined) return sendJson(res, 404, {});
    if (pathTenant.toLowerCase() !== tenant) {
      // The token endpoint calls it invalid_request; the metadata and keys, invalid_tenant.
      const refusal = entraError(
        400,
        req.method === 'POST' ? 'invalid_request' : 'invalid_tenant',
        90002,
        `Tenant '${pathTenant}' not found. Check to make sure you have the correct tenant ID and are signing into the correct cloud.`,
      );
      return sendJson(res, refusal.status, refusal.body);
    }
    if (req.method === 'GET' && rest === 'v2.0/.well-known/openid-configuration') return sendJson(res, 200, v2Metadata());
    if (req.method === 'GET' && rest === '.well-known/openid-configuration') return sendJson(res, 200, v1Metadata());
    if (req.method === 'GET' && rest === 'discovery/v2.0/keys') return sendJson(res, 200, keySet(true));
    if (rest !== 'oauth2/v2.0/token') return sendJson(res, 404, {});
    if (req.method !== 'POST') return sendJson(res, 405, {});
    const form = await readForm(req);
    if (form === undefined) {
      const refusal = entraError(400, 'invalid_request', 90100, 'The request is too large.');
      return sendJson(res, refusal.status, refusal.body);
    }
    const fields = tokenRequestFields(form, req.headers.authorization);
    const refusal = await tokenRefusal(fields, options.clients, options.audience, tokenUrl());
    if (refusal !== undefined) return sendJson(res, refusal.status, refusal.body);
    const accessToken = await issueToken(fields.get('client_id') as string);
    return sendJson(res, 200, { token_type: 'Bearer', expires_in: TOKEN_LIFETIME_S, ext_expires_in: TOKEN_LIFETIME_S, access_token: accessToken });
  };

  const server: Server = createServer({ key: options.tls.key, cert: options.tls.cert }, (req, res) => {
    respond(req, res).catch(() => {
      if (!res.headersSent) sendJson(res, 500, entraError(500, 'server_error', 90033, 'A transient error has occurred.').body);
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, '127.0.0.1', resolve);
  });
  const { port } = server.address() as { port: number };
  authorityHost = options.authorityHost?.replace(/\/+$/, '') ?? `https://127.0.0.1:${port}`;
  issuer.url = `${authority()}/v2.0`;
  return {
    authorityHost,
    authority: authority(),
    issuer: issuer.url,
    openIdConfigUrl: `${authority()}/v2.0/.well-known/openid-configuration`,
    tokenUrl: tokenUrl(),
    port,
    stop: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
