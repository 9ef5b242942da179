/**
 * A local OpenID provider (oauth2-mock-server) that issues Entra-like app-only tokens: RS256, metadata
 * and JWKS over HTTP, and a client-credentials token endpoint that issues a token to anyone. The tests'
 * provider, where the identity provider is not what is under test; `npm start` runs the stricter
 * Entra-like one of dev/localEntra.ts.
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

/** The claims of a Microsoft Entra v2 client-credentials access token for `clientId`, beyond iss, iat, exp and nbf. */
export function appOnlyClaims(clientId: string | undefined, options: Pick<OidcProviderOptions, 'audience' | 'tenantId' | 'roles'>): Record<string, unknown> {
  return {
    aud: options.audience,
    sub: clientId,
    azp: clientId,
    idtyp: 'app',
    ver: '2.0',
    ...(options.tenantId === undefined ? {} : { tid: options.tenantId }),
    ...(options.roles === undefined ? {} : { roles: [...options.roles] }),
  };
}

/** The client id of a token request: HTTP Basic, else the `client_id` form field. */
function requestingClient(req: IncomingMessage & { body?: Record<string, unknown> }): string | undefined {
  const basic = /^Basic ([A-Za-z0-9+/=]{1,4096})$/i.exec(req.headers.authorization ?? '');
  if (basic) return decodeURIComponent(Buffer.from(basic[1], 'base64').toString().split(':')[0]);
  return typeof req.body?.client_id === 'string' ? req.body.client_id : undefined;
}

export async function startOidcProvider(options: OidcProviderOptions): Promise<OidcProvider> {
  const server = new OAuth2Server();
  await server.issuer.keys.generate('RS256');
  server.service.on('beforeTokenSigning', (token: MutableToken, req: IncomingMessage) => {
    delete token.payload.scope;
    Object.assign(token.payload, appOnlyClaims(requestingClient(req), options));
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
