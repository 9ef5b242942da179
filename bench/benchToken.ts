/** An app-only token for a benchmark's client, signed by the local provider (minted once: signing is the client's cost). */
import type { OidcProvider } from '../dev/oidcProvider';

export function benchToken(provider: OidcProvider, audience: string, client: string, claims: Record<string, unknown> = {}, expiresIn = 3600): Promise<string> {
  return provider.server.issuer.buildToken({
    expiresIn,
    scopesOrTransform: (_header, payload) => {
      delete payload.scope;
      Object.assign(payload, { aud: audience, sub: client, azp: client, idtyp: 'app' }, claims);
    },
  });
}
