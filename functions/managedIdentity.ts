/**
 * The managed-identity credential, in a module of its own: `@azure/identity` (with MSAL) is a third
 * of the deployable bundle, and only deployments that use TABLES_ENDPOINT load it (scripts/bundle.ts
 * builds it as a separate file that functions/main.ts requires on demand).
 */
import { DefaultAzureCredential, type TokenCredential } from '@azure/identity';

/** AZURE_CLIENT_ID selects a user-assigned identity. */
export function managedIdentity(): TokenCredential {
  return new DefaultAzureCredential();
}
