/**
 * A local OpenID provider (oauth2-mock-server) that issues Entra-like app-only tokens:
 * RS256, served metadata and JWKS over HTTP, and a client-credentials token endpoint.
 * Used by `npm start` when no real issuer is configured, and by the tests.
 *
 * Given its clients, its token endpoint refuses what Entra refuses, in Entra's error shape, so that a
 * local run catches the mistakes partners make: an unknown client, a missing or wrong secret, no
 * scope, a scope without `/.default`, or another resource's scope.
 */
import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { OAuth2Server, type MutableResponse, type MutableToken } from 'oauth2-mock-server';

export interface OidcProviderOptions {
  /** `aud` of issued tokens. */
  readonly audience: string;
  /** `tid` of issued tokens, when given. */
  readonly tenantId?: string;
  /** App roles put in `roles`. */
  readonly roles?: readonly string[];
  readonly port?: number;
  /**
   * Client id → client secret. When given, the token endpoint checks them and the scope (which must be
   * `<audience>/.default`), as Entra does; when absent, it issues a token to anyone (the tests' provider).
   */
  readonly clients?: Readonly<Record<string, string>>;
}

export interface OidcProvider {
  readonly server: OAuth2Server;
  readonly issuer: string;
  readonly openIdConfigUrl: string;
  readonly tokenUrl: string;
  stop(): Promise<void>;
}

type TokenRequest = IncomingMessage & { body?: Record<string, unknown> };

/** The client id and secret of a token request: HTTP Basic, else the `client_id` and `client_secret` form fields. */
function requestingClient(req: TokenRequest): { id?: string; secret?: string } {
  const basic = /^Basic (.+)$/i.exec(req.headers.authorization ?? '');
  if (basic) {
    const [id, secret] = Buffer.from(basic[1], 'base64').toString().split(':').map(decodeURIComponent);
    return { id, secret };
  }
  const field = (name: string) => (typeof req.body?.[name] === 'string' ? req.body[name] : undefined);
  return { id: field('client_id'), secret: field('client_secret') };
}

/** Entra's refusal: `error`, an `error_description` opening with its AADSTS code, and the fields around it. */
function entraError(status: number, error: string, code: number, description: string): MutableResponse {
  const traceId = randomUUID();
  const correlationId = randomUUID();
  const timestamp = new Date()
    .toISOString()
    .replace('T', ' ')
    .replace(/\.\d+Z$/, 'Z');
  return {
    statusCode: status,
    body: {
      error,
      error_description: `AADSTS${code}: ${description} Trace ID: ${traceId} Correlation ID: ${correlationId} Timestamp: ${timestamp}`,
      error_codes: [code],
      timestamp,
      trace_id: traceId,
      correlation_id: correlationId,
      error_uri: `https://login.microsoftonline.com/error?code=${code}`,
    },
  };
}

/** What Entra would answer instead of a token, or nothing when it would issue one. */
function entraRefusal(req: TokenRequest, clients: Readonly<Record<string, string>>, audience: string): MutableResponse | undefined {
  const client = requestingClient(req);
  if (client.id === undefined || !Object.hasOwn(clients, client.id)) {
    return entraError(400, 'unauthorized_client', 700016, `Application with identifier '${client.id ?? ''}' was not found in the directory.`);
  }
  if (client.secret === undefined) {
    return entraError(401, 'invalid_client', 7000216, "'client_assertion', 'client_secret' or 'request' is required for the 'client_credentials' grant type.");
  }
  if (client.secret !== clients[client.id]) {
    return entraError(
      401,
      'invalid_client',
      7000215,
      'Invalid client secret provided. Ensure the secret being sent in the request is the client secret value, not the client secret ID.',
    );
  }
  const scope = req.body?.scope;
  if (typeof scope !== 'string' || scope.trim() === '')
    return entraError(400, 'invalid_request', 900144, "The request body must contain the following parameter: 'scope'.");
  if (!scope.endsWith('/.default')) {
    return entraError(
      400,
      'invalid_scope',
      1002012,
      `The provided value for scope ${scope} is not valid. Client credential flows must have a scope value with /.default suffixed to the resource identifier (application ID URI).`,
    );
  }
  const resource = scope.slice(0, -'/.default'.length);
  if (resource !== audience && resource !== audience.replace(/\/$/, '')) {
    return entraError(400, 'invalid_resource', 500011, `The resource principal named ${resource} was not found in the tenant.`);
  }
  return undefined;
}

export async function startOidcProvider(options: OidcProviderOptions): Promise<OidcProvider> {
  const server = new OAuth2Server();
  await server.issuer.keys.generate('RS256');
  server.service.on('beforeTokenSigning', (token: MutableToken, req: IncomingMessage) => {
    const clientId = requestingClient(req).id;
    // Shape of a Microsoft Entra v2 client-credentials access token.
    delete token.payload.scope;
    Object.assign(token.payload, {
      aud: options.audience,
      sub: clientId,
      azp: clientId,
      idtyp: 'app',
      ...(options.tenantId === undefined ? {} : { tid: options.tenantId }),
      ...(options.roles === undefined ? {} : { roles: [...options.roles] }),
    });
  });
  const { clients } = options;
  if (clients !== undefined) {
    server.service.on('beforeResponse', (response: MutableResponse, req: TokenRequest) => {
      const refusal = entraRefusal(req, clients, options.audience);
      if (refusal !== undefined) Object.assign(response, refusal);
    });
  }
  await server.start(options.port ?? 0, '127.0.0.1');
  const issuer = server.issuer.url as string;
  return {
    server,
    issuer,
    openIdConfigUrl: `${issuer}/.well-known/openid-configuration`,
    tokenUrl: `${issuer}/token`,
    stop: () => server.stop(),
  };
}
