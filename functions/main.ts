/**
 * Entry point the Functions host loads (package.json `main`). Settings are read and checked here,
 * once. The function is registered whatever they are: with an invalid setting every invocation
 * answers 500 and logs which setting is wrong (docs/contract.md §2.1). An entry that threw instead
 * would register nothing, and the host would answer 404 with the reason only in the worker's output.
 *
 * When the host stops the worker (WorkerTerminate: scale-in, a new deployment, a restart), the
 * telemetry still buffered is sent before the process exits, within the host's grace period.
 */
import { app, type HttpHandler } from '@azure/functions';
import { ConfigError, loadConfig, type Config } from '../lib/config';
import { storageIdentity } from '../lib/identityOnFirstUse';
import { SHUTDOWN_FLUSH_MS, flushWithin, noTelemetry, startTelemetry, type Telemetry } from '../lib/telemetry';
import { createDependencies, createDrawRequestHandler, createMisconfiguredHandler } from './drawRequest';

function createHandler(): { handler: HttpHandler; telemetry: Telemetry } {
  let config: Config;
  try {
    config = loadConfig(process.env);
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    // Once in the host's log at start-up; each invocation logs it again, under its own id.
    console.error(`DrawRequest: ${error.message}`);
    // Telemetry still records the 500s, unless its own settings are the invalid ones.
    const telemetry = error.telemetry === undefined ? noTelemetry : startTelemetry(error.telemetry);
    return { handler: createMisconfiguredHandler(error, telemetry), telemetry };
  }
  // Started before the first invocation so that it, too, is recorded with its dependencies (README: cold start).
  const telemetry = config.telemetry === undefined ? noTelemetry : startTelemetry(config.telemetry);
  // Managed identity only when no connection string is used, loaded when the first storage call asks for a token.
  const credential = config.tables.endpoint !== undefined ? storageIdentity() : undefined;
  return { handler: createDrawRequestHandler(createDependencies(config, { credential, telemetry })), telemetry };
}

const { handler, telemetry } = createHandler();

app.http('DrawRequest', {
  route: 'DrawRequest',
  methods: ['POST'],
  authLevel: 'anonymous', // the bearer token is the only gate
  handler,
});

// The worker runs this on WorkerTerminate and then exits: without it, what the exporter has buffered
// since its last export (it sends on a timer) would be lost. Bounded: the host kills the worker after
// its grace period.
app.hook.appTerminate(async () => {
  await flushWithin(telemetry, SHUTDOWN_FLUSH_MS);
});
