/**
 * Entry point the Functions host loads (package.json `main`). Settings are read and checked
 * here, once: a bad setting fails start-up with a message naming it, not the first request.
 */
import { app } from '@azure/functions';
import type { TokenCredential } from '@azure/identity';
import { loadConfig } from '../lib/config';
import { noTelemetry, startTelemetry } from '../lib/telemetry';
import { createDependencies, createDrawRequestHandler } from './drawRequest';

const config = loadConfig(process.env);
// Started before the first invocation so that it, too, is recorded with its dependencies (README: cold start).
const telemetry = config.telemetry === undefined ? noTelemetry : startTelemetry(config.telemetry);
// Managed identity (AZURE_CLIENT_ID selects a user-assigned one) only when no connection string is
// used. `@azure/identity` is a large part of what a cold start would load, and nothing needs it
// before the first storage call asks for a token: it is loaded then.
const credential = config.tables.endpoint !== undefined ? managedIdentityOnFirstUse() : undefined;

function managedIdentityOnFirstUse(): TokenCredential {
  let credential: TokenCredential | undefined;
  return {
    getToken: (scopes, options) => {
      // eslint-disable-next-line @typescript-eslint/no-require-imports
      credential ??= (require('../lib/managedIdentity') as typeof import('../lib/managedIdentity')).managedIdentity();
      return credential.getToken(scopes, options);
    },
  };
}

app.http('DrawRequest', {
  route: 'DrawRequest',
  methods: ['POST'],
  authLevel: 'anonymous', // the bearer token is the only gate
  handler: createDrawRequestHandler(createDependencies(config, { credential, telemetry })),
});
