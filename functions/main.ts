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
import { SHUTDOWN_FLUSH_MS, TelemetryStartError, flushWithin, noTelemetry, startTelemetry, type Telemetry } from '../lib/telemetry';
import { createDependencies, createDrawRequestHandler, createMisconfiguredHandler } from './drawRequest';

type Started = { handler: HttpHandler; telemetry: Telemetry };

/** Telemetry as configured, or the reason it did not start: an instance that would be silent is misconfigured. */
function startConfigured(settings: Config['telemetry']): Telemetry | ConfigError {
  if (settings === undefined) return noTelemetry;
  try {
    return startTelemetry(settings);
  } catch (error) {
    if (!(error instanceof TelemetryStartError)) throw error;
    return new ConfigError([error.message]);
  }
}

/** Every invocation answers 500 naming the problems; telemetry still records them when its own settings are fine. */
function misconfigured(error: ConfigError): Started {
  // Once in the host's log at start-up; each invocation logs it again, under its own id.
  console.error(`DrawRequest: ${error.message}`);
  const telemetry = startConfigured(error.telemetry);
  if (telemetry instanceof ConfigError) console.error(`DrawRequest: ${telemetry.message}`);
  const recorder = telemetry instanceof ConfigError ? noTelemetry : telemetry;
  return { handler: createMisconfiguredHandler(error, recorder), telemetry: recorder };
}

function createHandler(): Started {
  let config: Config;
  try {
    config = loadConfig(process.env);
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    return misconfigured(error);
  }
  // Started before the first invocation so that it, too, is recorded with its dependencies (docs/contributing.md §5, telemetry).
  const telemetry = startConfigured(config.telemetry);
  if (telemetry instanceof ConfigError) return misconfigured(telemetry);
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
