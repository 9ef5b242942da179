/**
 * A local OpenID provider (oauth2-mock-server) that issues Entra-like app-only tokens: RS256, metadata
 * and JWKS over HTTP, and a client-credentials token endpoint that issues a token to anyone. The tests'
 * provider, where the identity provider is not what is under test; `npm start` runs the stricter
 * Entra-like one of dev/localEntra.ts.
 */
import type { IncomingMessage } from 'node:http';
import { OAuth2Server, type MutableToken } from 'oauth2-mock-server';
import { appOnlyClaims, tokenRequestFields, type AppTokenClaims } from './appTokens';

export interface OidcProviderOptions extends AppTokenClaims {
  readonly port?: number;
}

export interface OidcProvider {
  readonly server: OAuth2Server;
  readonly issuer: string;
  readonly openIdConfigUrl: string;
  readonly tokenUrl: string;
  stop(): Promise<void>;
}

export async function startOidcProvider(options: OidcProviderOptions): Promise<OidcProvider> {
  const server = new OAuth2Server();
  await server.issuer.keys.generate('RS256');
  server.service.on('beforeTokenSigning', (token: MutableToken, req: IncomingMessage & { body?: Record<string, unknown> }) => {
    delete token.payload.scope;
    // The form as express parsed it, with HTTP Basic credentials read as the Entra stand-in reads them.
    const body = req.body ?? {};
    const form = new URLSearchParams(Object.entries(body).filter((entry): entry is [string, string] => typeof entry[1] === 'string'));
    Object.assign(token.payload, appOnlyClaims(tokenRequestFields(form, req.headers.authorization).get('client_id'), options));
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
