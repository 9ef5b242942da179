/** A token for a demo partner from the dev host's embedded provider, asked for as a partner asks Entra. */
import { DEMO_CLIENT_SECRETS, DEMO_PARTNERS } from '../../dev/demoData';
import type { DevHost } from '../../dev/devHost';

export async function demoToken(host: DevHost, clientId = DEMO_PARTNERS[0].clientId): Promise<string> {
  const response = await fetch(host.tokenUrl as string, {
    method: 'POST',
    body: new URLSearchParams({
      grant_type: 'client_credentials',
      client_id: clientId,
      client_secret: DEMO_CLIENT_SECRETS[clientId],
      scope: host.scope as string,
    }),
  });
  if (response.status !== 200) throw new Error(`token endpoint answered ${response.status}: ${await response.text()}`);
  return ((await response.json()) as { access_token: string }).access_token;
}
