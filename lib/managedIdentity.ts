/**
 * Managed-identity credentials, in a module of its own: `@azure/identity` (with MSAL) is a third of
 * the deployable bundle, and only deployments that use it load it, when they first need a token
 * (scripts/bundle.ts builds this file apart; lib/identityOnFirstUse.ts requires it on demand).
 */
import { DefaultAzureCredential, ManagedIdentityCredential, type TokenCredential } from '@azure/identity';

/** For TABLES_ENDPOINT. AZURE_CLIENT_ID selects a user-assigned identity. */
export function managedIdentity(): TokenCredential {
  return new DefaultAzureCredential();
}

/** For Entra ingestion of telemetry: the user-assigned identity `clientId`, or the system-assigned one. */
export function ingestionIdentity(clientId: string | undefined): TokenCredential {
  return clientId === undefined ? new ManagedIdentityCredential() : new ManagedIdentityCredential({ clientId });
}
