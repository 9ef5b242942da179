/**
 * A local OpenID provider (oauth2-mock-server) that issues Entra-like app-only tokens:
 * RS256, served metadata and JWKS over HTTP, and a client-credentials token endpoint.
 * Used by `npm start` when no real issuer is configured, and by the tests.
 */
import type { IncomingMessage } from 'node:http';
import { OAuth2Server, type MutableToken } from 'oauth2-mock-server';

export interface OidcProviderOptions {
  /** `aud` of issued tokens. */
  readonly audience: string;
  /** `tid` of issued tokens, when given. */
  readonly tenantId?: string;
  /** App roles put in `roles`. */
  readonly roles?: readonly string[];
  readonly port?: number;
}

export interface OidcProvider {
  readonly server: OAuth2Server;
  readonly issuer: string;
  readonly openIdConfigUrl: string;
  readonly tokenUrl: string;
  stop(): Promise<void>;
}

/** The client id of a token request: HTTP Basic user name, else the `client_id` form field. */
function requestingClient(req: IncomingMessage & { body?: Record<string, unknown> }): string | undefined {
  const basic = /^Basic (.+)$/i.exec(req.headers.authorization ?? '');
  if (basic) return decodeURIComponent(Buffer.from(basic[1], 'base64').toString().split(':')[0]);
  const fromBody = req.body?.client_id;
  return typeof fromBody === 'string' ? fromBody : undefined;
}

export async function startOidcProvider(options: OidcProviderOptions): Promise<OidcProvider> {
  const server = new OAuth2Server();
  await server.issuer.keys.generate('RS256');
  server.service.on('beforeTokenSigning', (token: MutableToken, req: IncomingMessage) => {
    const clientId = requestingClient(req);
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
