/** A token for a demo partner from the dev host's embedded provider, asked for as a partner asks Entra. */
import { DEMO_CLIENT_SECRETS, DEMO_PARTNERS } from '../../dev/demoData';
import type { DevHost } from '../../dev/devHost';
import { trustingFetch } from './localCa';

/** Over HTTPS, trusting the dev host's local CA. */
export async function demoToken(host: DevHost, clientId = DEMO_PARTNERS[0].clientId): Promise<string> {
  const identity = host.identity;
  if (identity === undefined) throw new Error('the dev host runs no embedded provider');
  const response = await trustingFetch(identity.caCertPath)(identity.tokenUrl, {
    method: 'POST',
    body: new URLSearchParams({
      grant_type: 'client_credentials',
      client_id: clientId,
      client_secret: DEMO_CLIENT_SECRETS[clientId],
      scope: identity.scope,
    }),
  });
  if (response.status !== 200) throw new Error(`token endpoint answered ${response.status}: ${await response.text()}`);
  return ((await response.json()) as { access_token: string }).access_token;
}
