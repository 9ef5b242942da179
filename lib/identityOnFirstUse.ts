/**
 * Managed-identity credentials that load lib/managedIdentity (and with it `@azure/identity` and
 * MSAL) when first asked for a token, not at start-up: nothing needs one before the first storage
 * call or the first telemetry export, and a cold start does not pay for loading them.
 */
import type { TokenCredential } from '@azure/identity';

type Identities = typeof import('./managedIdentity');

function onFirstUse(create: (identities: Identities) => TokenCredential): TokenCredential {
  let credential: TokenCredential | undefined;
  return {
    getToken: (scopes, options) => {
      // eslint-disable-next-line @typescript-eslint/no-require-imports
      credential ??= create(require('./managedIdentity') as Identities);
      return credential.getToken(scopes, options);
    },
  };
}

/** For TABLES_ENDPOINT (AZURE_CLIENT_ID selects a user-assigned identity). */
export const storageIdentity = (): TokenCredential => onFirstUse((identities) => identities.managedIdentity());

/** For Entra ingestion of telemetry: the user-assigned identity `clientId`, or the system-assigned one. */
export const ingestionIdentity = (clientId: string | undefined): TokenCredential => onFirstUse((identities) => identities.ingestionIdentity(clientId));
