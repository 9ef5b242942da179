/**
 * Application Insights (applicationinsights v3, on OpenTelemetry) for on-call: one
 * `DrawRequestBatch` event per invocation (its rejected elements in it), data-quality warnings,
 * one dependency per Table Storage round and per failed storage call (lib/storageTelemetry.ts), and
 * the identity provider's calls, all carrying the invocation's operation id. Never a token, secret,
 * connection string or request body.
 */
import { useInstrumenter, type Instrumenter } from '@azure/core-tracing';
import type { InvocationContext } from '@azure/functions';
import { ROOT_CONTEXT, SpanKind, SpanStatusCode, context as otelContext, diag, trace } from '@opentelemetry/api';
import type { TelemetryClient } from 'applicationinsights';
import { hostname } from 'node:os';
import { ingestionIdentity } from './identityOnFirstUse';
import type { ElementError } from './problem';
import type { StorageDimension } from './storageTelemetry';

export type Outcome = 'Accepted' | 'Replayed' | 'Rejected' | 'Unauthorized' | 'DependencyFailed' | 'Failed';

/** Everything on-call needs to explain one invocation. */
export interface BatchRecord {
  readonly requestId: string;
  readonly outcome: Outcome;
  readonly clientId?: string;
  readonly partnerId?: string;
  readonly batchSize?: number;
  /** The batch's loan numbers once its shape was valid: on-call finds a loan's draws by them. */
  readonly loanNumbers?: readonly number[];
  /** The partner's Idempotency-Key, when sent (a partner-chosen identifier, not a secret). */
  readonly idempotencyKey?: string;
  /**
   * Stable code of a 401/502/500 (ERR_AUTH_EXPIRED, ERR_STORAGE_TIMEOUT …, the error's name for a defect,
   * MISCONFIGURED for an instance with invalid settings, COMMIT_OUTCOME_UNKNOWN for a commit storage may
   * have applied, KEY_OUTCOME_PENDING for a key's batch whose outcome is not known yet; REFUSED_BEFORE for a 400 answered again): the reason the caller is not told.
   */
  readonly reason?: string;
  /** The failing claim or storage operation; for a replay the request id that landed the batch; for MISCONFIGURED the settings' problems; for COMMIT_OUTCOME_UNKNOWN the operation, code and status. */
  readonly reasonDetail?: string;
  readonly errors: readonly ElementError[];
  /** Milliseconds per phase. */
  readonly durations: { readonly auth?: number; readonly read?: number; readonly commit?: number; readonly total: number };
}

/** The reason of every 500 from an instance whose settings are invalid (docs/runbook.md). */
export const MISCONFIGURED = 'Misconfigured';
/** The reason of a 502 whose commit storage may have applied: the batch may have been recorded (docs/contract.md §2.1). */
export const COMMIT_OUTCOME_UNKNOWN = 'CommitOutcomeUnknown';
/**
 * The reason of a 502 for a keyed batch in its key's grace, not found in the key's day: an earlier attempt
 * may still land, so its outcome is not known yet (docs/contract.md §9).
 */
export const KEY_OUTCOME_PENDING = 'KeyOutcomePending';
/**
 * The reason of a 400 answered again: the same batch was refused under the same key less than 24 hours ago
 * (docs/contract.md §9); its reasonDetail is the request that was refused first.
 */
export const REFUSED_BEFORE = 'RefusedBefore';

export type DataQualityIssue = 'LoanWithoutCredit' | 'PartnerWithoutId';

/**
 * Every custom dimension and measurement the service writes, by item. The runbook's queries, the alert
 * rules and the workbook may name only these (tests/unit/kql.test.ts checks them against this list).
 */
export const TELEMETRY_FIELDS = {
  /** Of the `DrawRequestBatch` event. */
  eventDimensions: [
    'requestId',
    'outcome',
    'partnerId',
    'clientId',
    'idempotencyKey',
    'loanNumbers',
    'reason',
    'reasonDetail',
    'errorCodes',
    'rejectedElements',
  ],
  eventMeasurements: ['totalMs', 'rejectedCount', 'batchSize', 'authMs', 'readMs', 'commitMs'],
  /** Of each `Data quality` trace. */
  dataQualityDimensions: ['issue', 'requestId', 'loanNumbers', 'clientId'],
  /** Of the Table Storage dependencies: a round (`calls` …) or a failed call (`table`, `partitionKey` …). */
  dependencyDimensions: [
    'operation',
    'tables',
    'calls',
    'failedCalls',
    'abandonedCalls',
    'statuses',
    'failure',
    'storageCode',
    'table',
    'partitionKey',
    'rowKey',
  ] satisfies readonly StorageDimension[],
} as const;

type EventDimension = (typeof TELEMETRY_FIELDS.eventDimensions)[number];
type EventMeasurement = (typeof TELEMETRY_FIELDS.eventMeasurements)[number];
export type DataQualityDimension = (typeof TELEMETRY_FIELDS.dataQualityDimensions)[number];

export interface Telemetry {
  /** Runs an invocation inside its trace, so what it records carries the invocation's operation id. */
  inInvocation<T>(invocation: InvocationContext, work: () => Promise<T>): Promise<T>;
  batch(record: BatchRecord): void;
  dataQuality(issue: DataQualityIssue, properties: { readonly [K in DataQualityDimension]?: string }): void;
  flush(): Promise<void>;
}

export const EVENT_NAME = 'DrawRequestBatch';

/** No connection string: nothing is loaded or sent. */
export const noTelemetry: Telemetry = {
  inInvocation: (_invocation, work) => work(),
  batch: () => undefined,
  dataQuality: () => undefined,
  flush: () => Promise.resolve(),
};

/**
 * How long the flush at shutdown may take. On WorkerTerminate the Functions host gives the worker a
 * grace period of 5 s before it kills the process (WorkerConstants.WorkerTerminateGracePeriodInSeconds
 * in the host; the message carries it, but the worker does not pass it to appTerminate hooks), and the
 * worker still has to end its stream and exit after the hooks: 4 s leaves it a second.
 */
export const SHUTDOWN_FLUSH_MS = 4_000;

/**
 * Sends what is buffered, giving up after `withinMs`; resolves either way, and never rejects (a hook
 * that threw would keep the worker from exiting until the host kills it). Whether it finished in time.
 */
export async function flushWithin(telemetry: Telemetry, withinMs: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<false>((resolve) => {
    timer = setTimeout(() => resolve(false), withinMs);
    timer.unref();
  });
  try {
    return await Promise.race([telemetry.flush().then(() => true), timedOut]);
  } catch {
    return false;
  } finally {
    clearTimeout(timer);
  }
}

const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;

/** The invocation's W3C trace context (set by the Functions host), as an OpenTelemetry context. */
function invocationTrace(invocation: InvocationContext) {
  const match = TRACEPARENT.exec(invocation.traceContext?.traceParent ?? '');
  if (!match) return undefined;
  return trace.setSpanContext(ROOT_CONTEXT, { traceId: match[1], spanId: match[2], traceFlags: parseInt(match[3], 16), isRemote: true });
}

/**
 * The longest `rejectedElements` written: Application Insights cuts a dimension at 8,192 characters.
 * A batch's worst case (100 elements, each `99:<16-digit loan>:PendingTransactionRequest,`) is about
 * 4,600; a longer list (only if the batch limit grew) ends with `+N` for the entries left out.
 */
export const REJECTED_ELEMENTS_MAX_CHARS = 8_000;

/**
 * The rejected elements as `index:loanNumber:code`, comma-separated (the loan number empty when the
 * element had none that could be read): what on-call needs of each, in one dimension of the event
 * rather than a record per element. Pointer and detail are in the partner's 400 and the host's log line.
 */
export function rejectedElementsOf(errors: readonly ElementError[]): string | undefined {
  const entries = errors.filter((e) => e.index !== undefined).map((e) => `${e.index}:${e.loanNumber ?? ''}:${e.code}`);
  if (entries.length === 0) return undefined;
  let text = '';
  for (const [i, entry] of entries.entries()) {
    const next = text === '' ? entry : `${text},${entry}`;
    // Room is kept for the `,+N` that ends a cut list.
    if (next.length > REJECTED_ELEMENTS_MAX_CHARS - 8) return `${text},+${entries.length - i}`;
    text = next;
  }
  return text;
}

/** Dimensions of the batch event: plain strings; counts and durations as measurements. */
export function eventOf(record: BatchRecord): { properties: Record<string, string>; measurements: Record<string, number> } {
  const counts: Record<string, number> = {};
  for (const e of record.errors) counts[e.code] = (counts[e.code] ?? 0) + 1;
  const properties: { [K in EventDimension]?: string } = { requestId: record.requestId, outcome: record.outcome };
  if (record.partnerId !== undefined) properties.partnerId = record.partnerId;
  if (record.clientId !== undefined) properties.clientId = record.clientId;
  if (record.idempotencyKey !== undefined) properties.idempotencyKey = record.idempotencyKey;
  // Comma-separated (at most 100 numbers of at most 16 digits: well under a dimension's 8,192 characters).
  if (record.loanNumbers !== undefined && record.loanNumbers.length > 0) properties.loanNumbers = record.loanNumbers.join(',');
  if (record.reason !== undefined) properties.reason = record.reason;
  if (record.reasonDetail !== undefined) properties.reasonDetail = record.reasonDetail;
  else {
    // A request-level 400 (not JSON, too large …): its detail, a fixed text of lib/problem.ts DETAILS.
    const requestErrors = record.errors.filter((e) => e.index === undefined);
    if (requestErrors.length > 0) properties.reasonDetail = requestErrors.map((e) => e.detail).join('; ');
  }
  if (record.errors.length > 0) properties.errorCodes = JSON.stringify(counts);
  const rejected = rejectedElementsOf(record.errors);
  if (rejected !== undefined) properties.rejectedElements = rejected;
  const measurements: { [K in EventMeasurement]?: number } = {
    totalMs: record.durations.total,
    rejectedCount: new Set(record.errors.map((e) => e.index)).size,
  };
  if (record.batchSize !== undefined) measurements.batchSize = record.batchSize;
  if (record.durations.auth !== undefined) measurements.authMs = record.durations.auth;
  if (record.durations.read !== undefined) measurements.readMs = record.durations.read;
  if (record.durations.commit !== undefined) measurements.commitMs = record.durations.commit;
  return { properties, measurements };
}

export interface TelemetryOptions {
  readonly connectionString: string;
  /** Share of operations whose dependencies are kept, 0–1; events and traces are always kept. */
  readonly samplingRatio: number;
  /** Send with a managed identity's Entra token (resources with local auth off). */
  readonly entraIngestion?: { readonly clientId?: string };
}

export type TelemetryStartErrorCode = 'ERR_TELEMETRY_START';

/**
 * The SDK did not start. `TelemetryClient.initialize()` catches its own start-up errors and reports them
 * only to OpenTelemetry's diagnostic log; every recording after it would throw or go nowhere, silently
 * for on-call. The instance treats it as an invalid setting instead (functions/main.ts).
 */
export class TelemetryStartError extends Error {
  readonly code: TelemetryStartErrorCode = 'ERR_TELEMETRY_START';
  constructor(readonly cause: string) {
    super(
      `the Application Insights SDK did not start (${cause}): check APPLICATIONINSIGHTS_CONNECTION_STRING and the APPLICATIONINSIGHTS_*/OTEL_* settings (docs/contributing.md §9, "Telemetry settings")`,
    );
    this.name = 'TelemetryStartError';
  }
}

/**
 * `client.initialize()`, and a TelemetryStartError when it swallowed a failure: it reported an error on
 * OpenTelemetry's diagnostic channel (watched during the call, since the SDK removes the OpenTelemetry
 * globals, and with them any diagnostic logger, while it starts), its log API, which every track call
 * uses, is missing (applicationinsights 3.x sets it last; the telemetry suite runs the package under the
 * worker, so an SDK upgrade that renames it fails there, loudly), or no provider was registered.
 */
function initializeOrThrow(client: TelemetryClient): void {
  const reported: string[] = [];
  const report = diag.error;
  diag.error = (message, ...args) => {
    reported.push(String(message));
    report(message, ...args);
  };
  try {
    client.initialize();
  } catch (error) {
    reported.push(error instanceof Error ? `${error.name}: ${error.message}` : String(error));
  } finally {
    diag.error = report;
  }
  if (reported.length > 0) throw new TelemetryStartError(reported.join('; '));
  if ((client as unknown as { _logApi?: unknown })._logApi === undefined)
    throw new TelemetryStartError('TelemetryClient.initialize() left the client without its log API');
  // OpenTelemetry's global registry, shared by every copy of its API: a disabled or half-started SDK
  // leaves no tracer or logger provider there, and every recording goes to a no-op, without an error.
  const registry = globalThis as { [key: symbol]: { trace?: unknown } | undefined };
  if (registry[Symbol.for('opentelemetry.js.api.1')]?.trace === undefined || registry[Symbol.for('io.opentelemetry.js.api.logs')] === undefined)
    throw new TelemetryStartError('no OpenTelemetry tracer or logger provider was registered');
}

/**
 * Puts back the Azure SDK's own no-op tracing, which `azureSdk: { enabled: false }` asks for. The distro
 * (@azure/monitor-opentelemetry 1.20) installs its OpenTelemetry bridge into @azure/core-tracing after
 * start whatever that option says (its `ensureAzureSdkTracingBridge`; the fix, Azure/azure-sdk-for-js
 * pull request 39935, is not released): every storage call would then start a span and switch the
 * OpenTelemetry context twice, CPU on each of a batch's 201 calls for spans nobody records. With no
 * instrumenter set, @azure/core-tracing uses its built-in no-op one (`getInstrumenter`). The telemetry
 * suite proves it in the package: no span of the SDK's reaches the ingestion endpoint.
 */
function withoutAzureSdkTracing(): void {
  (useInstrumenter as (instrumenter: Instrumenter | undefined) => void)(undefined);
}

/**
 * Starts the SDK and returns the recorder. Only when configured: in the package the SDK is part of the
 * bundle, and starting it is telemetry's share of a cold start (bench/results.md); from node_modules (the
 * `tsc` output) it takes many times longer. Call once per instance, before the first invocation, so the
 * first one is captured with its dependencies.
 */
export function startTelemetry(options: TelemetryOptions): Telemetry {
  // The SDK's own usage reports go to Microsoft, not to this resource: not ours to send.
  // (APPLICATIONINSIGHTS_STATSBEAT_DISABLED alone only drops some of them; APPLICATION_INSIGHTS_NO_STATSBEAT stops them.)
  process.env.APPLICATIONINSIGHTS_STATSBEAT_DISABLED ??= 'true';
  process.env.APPLICATION_INSIGHTS_NO_STATSBEAT ??= 'true';
  // The exporter's `_OTELRESOURCE_` metric: the instance's resource attributes again, about 650 bytes with
  // every export (each call of sparse traffic is an export of its own), read by nobody: the role and the
  // instance are on every record. Refused as a setting (lib/config.ts), so this is the only value it has.
  process.env.APPLICATIONINSIGHTS_OPENTELEMETRY_RESOURCE_METRIC_DISABLED = 'true';
  // The distro sets the Azure SDK's logger to `warning` when AZURE_LOG_LEVEL is unset, and every commit
  // then writes "The baseUri option for SDK Clients has been deprecated" (@azure/data-tables builds a
  // client per transaction) to the host's log: a line per batch that tells on-call nothing. Errors still
  // print; an AZURE_LOG_LEVEL that is set wins (docs/contributing.md §9).
  process.env.AZURE_LOG_LEVEL ??= 'error';
  // cloud_RoleName on-call filters by: the function app's name in Azure.
  process.env.OTEL_SERVICE_NAME ??= process.env.WEBSITE_SITE_NAME ?? 'draw-request-service';
  // cloud_RoleInstance is the host's name, which the exporter asks the system for once per record unless the
  // resource names the instance: named once here, the same value (an OTEL_RESOURCE_ATTRIBUTES naming it wins).
  const resource = process.env.OTEL_RESOURCE_ATTRIBUTES ?? '';
  if (!/(^|,)\s*service\.instance\.id\s*=/.test(resource))
    process.env.OTEL_RESOURCE_ATTRIBUTES = [resource, `service.instance.id=${hostname()}`].filter((a) => a !== '').join(',');
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const { TelemetryClient: Client, KnownSeverityLevel } = require('applicationinsights') as typeof import('applicationinsights');
  const client: TelemetryClient = new Client(options.connectionString);
  client.config.samplingPercentage = options.samplingRatio * 100;
  client.config.enableAutoCollectRequests = false; // the Functions host already records every request
  // Both off, or the shim turns the http instrumentation back on (to ignore one direction only).
  client.config.enableAutoCollectDependencies = false;
  client.config.enableAutoCollectPerformance = false; // the host reports performance counters
  client.config.enableAutoCollectConsole = false;
  client.config.enableAutoCollectExternalLoggers = false; // no bunyan or winston here (and not in the bundle)
  client.config.azureMonitorOpenTelemetryOptions = {
    tracesPerSecond: 0, // the SDK's default keeps only 5 traces/s; sample by ratio instead
    enableLiveMetrics: false,
    // No alert, tile or query reads the SDK's standard metrics, and Application Insights computes the same
    // from the records themselves when they do not say they were counted ("the Application Insights back
    // end still populates the new metrics by aggregating the events received"): a histogram per span, a
    // counter per log record, a marker of 56 bytes on each and an export a minute, unread
    // (docs/decisions/0222-telemetry-nobody-reads.md).
    enableStandardMetrics: false,
    // Table Storage is recorded per round (lib/storageTelemetry.ts) and the identity provider by
    // tracedFetch: nothing needs the SDK's per-call spans, and the http instrumentation is not in the
    // package (scripts/bundlePlugins.ts NOT_SHIPPED).
    instrumentationOptions: {
      http: { enabled: false },
      azureSdk: { enabled: false },
      mongoDb: { enabled: false },
      mySql: { enabled: false },
      postgreSql: { enabled: false },
      redis: { enabled: false },
      redis4: { enabled: false },
    },
  };
  // Loaded when the exporter first asks for a token, after start-up.
  if (options.entraIngestion !== undefined) client.config.aadTokenCredential = ingestionIdentity(options.entraIngestion.clientId);
  initializeOrThrow(client);
  withoutAzureSdkTracing();

  // Recording must never fail the invocation it describes: an SDK fault (a throwing exporter, a
  // half-started client) is logged once to the host's log, and recording goes on without it.
  let faulted = false;
  const safely = (record: () => void): void => {
    try {
      record();
    } catch (error) {
      if (faulted) return;
      faulted = true;
      console.error(
        `DrawRequest telemetry: recording failed, invocations go on unrecorded where it fails: ${error instanceof Error ? `${error.name}: ${error.message}` : String(error)}`,
      );
    }
  };

  return {
    inInvocation: (invocation, work) => {
      const parent = invocationTrace(invocation);
      return parent === undefined ? work() : otelContext.with(parent, work);
    },
    batch: (record) =>
      safely(() => {
        const { properties, measurements } = eventOf(record);
        // The rejected elements are in the event (rejectedElements): a refused batch of 100 is one record, not 101.
        client.trackEvent({ name: EVENT_NAME, properties, measurements });
      }),
    dataQuality: (issue, properties) =>
      safely(() => client.trackTrace({ message: `Data quality: ${issue}`, severity: KnownSeverityLevel.Warning, properties: { issue, ...properties } })),
    flush: () => client.flush(),
  };
}

/**
 * fetch, recorded as an HTTP dependency of the current invocation (an OpenTelemetry client span;
 * a no-op when telemetry is off). Used for the identity provider's metadata and keys.
 */
export function tracedFetch(dependency: string, fetchImpl: typeof fetch = (input, init) => fetch(input, init)): typeof fetch {
  return async (input, init) => {
    const url = new URL(input instanceof Request ? input.url : String(input));
    const tracer = trace.getTracer('draw-request-service');
    return tracer.startActiveSpan(
      `GET ${url.pathname}`,
      {
        kind: SpanKind.CLIENT,
        attributes: {
          'http.request.method': 'GET',
          'url.full': url.href,
          'server.address': url.hostname,
          'server.port': Number(url.port || (url.protocol === 'https:' ? 443 : 80)),
          'peer.service': dependency,
        },
      },
      async (span) => {
        try {
          const response = await fetchImpl(input, init);
          span.setAttribute('http.response.status_code', response.status);
          if (response.status >= 400) span.setStatus({ code: SpanStatusCode.ERROR });
          return response;
        } catch (error) {
          span.setStatus({ code: SpanStatusCode.ERROR, message: (error as Error).name });
          throw error;
        } finally {
          span.end();
        }
      },
    );
  };
}
