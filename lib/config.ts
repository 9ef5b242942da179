/**
 * Settings (docs/contract.md §5) → one typed, validated Config, read once at start-up.
 * A missing or malformed setting is a ConfigError naming it: `npm start` refuses to start, and the
 * deployed function answers every invocation 500 with the message in its log (functions/main.ts).
 */
import { TableServiceClient } from '@azure/data-tables';

/** Every setting the service reads, in one place (docs, infra and tests derive from it). */
export const SETTING_NAMES = [
  'AUTH_TENANT_ID',
  'AUTH_AUTHORITY_HOST',
  'AUTH_OPENID_CONFIG_URL',
  'AUTH_AUDIENCE',
  'AUTH_ALLOWED_ISSUERS',
  'AUTH_REQUIRED_ROLE',
  'AUTH_PARTNER_CLAIM',
  'AUTH_CLOCK_TOLERANCE_SECONDS',
  'AUTH_ALGORITHMS',
  'TABLES_ENDPOINT',
  'TABLES_CONNECTION_STRING',
  'PARTNERS_TABLE',
  'LOANS_TABLE',
  'DRAWS_TABLE',
  'IDEMPOTENCY_TABLE',
  'STOPPED_CLIENTS_TABLE',
  'DRAW_DAY_TIMEZONE',
  'MAX_BATCH_SIZE',
  'APPLICATIONINSIGHTS_CONNECTION_STRING',
  'APPLICATIONINSIGHTS_AUTHENTICATION_STRING',
  'TELEMETRY_SAMPLING_PERCENTAGE',
] as const;

export type SettingName = (typeof SETTING_NAMES)[number];
export type Settings = Partial<Record<string, string | undefined>>;

export interface AuthConfig {
  readonly tenantId?: string;
  readonly openIdConfigUrl: string;
  readonly audiences: readonly string[];
  /** Explicit issuer list; when absent, issuers come from the metadata (and tenant). */
  readonly allowedIssuers?: readonly string[];
  readonly requiredRole?: string;
  /** Claim naming the client; when absent, `azp` then `appid`. */
  readonly partnerClaim?: string;
  readonly clockToleranceSeconds: number;
  readonly algorithms: readonly string[];
}

export interface TablesConfig {
  readonly endpoint?: string;
  readonly connectionString?: string;
  readonly partnersTable: string;
  readonly loansTable: string;
  readonly drawsTable: string;
  /** Idempotency-Key records: which batch each partner's key named, per day. */
  readonly idempotencyTable: string;
  /** The stop list: a row here refuses that client, whatever its Partners row says (docs/contract.md §3.3). */
  readonly stoppedClientsTable: string;
}

export interface Config {
  readonly auth: AuthConfig;
  readonly tables: TablesConfig;
  readonly drawDayTimeZone: string;
  readonly maxBatchSize: number;
  readonly telemetry?: {
    readonly connectionString: string;
    /** Share of dependency traces kept (0–1); events and traces are always kept. */
    readonly samplingRatio: number;
    /**
     * Entra ID ingestion (the resource has local auth off): send with a managed identity's token.
     * `clientId` names a user-assigned identity; absent, the system-assigned one.
     */
    readonly entraIngestion?: { readonly clientId?: string };
  };
}

export const MAX_BATCH_SIZE_LIMIT = 100; // one entity-group transaction holds at most 100 rows

/** Asymmetric algorithms only: a shared-secret (HS*) or `none` algorithm must never be accepted. */
const ALLOWED_ALGORITHMS = new Set(['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA']);
const GUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const TABLE_NAME = /^[A-Za-z][A-Za-z0-9]{2,62}$/;
const LOOPBACK_HOSTS = new Set(['localhost', '127.0.0.1', '[::1]']);

export type ConfigErrorCode = 'ERR_CONFIG_INVALID';

/** Start-up failure: lists every problem, each naming its setting (never a secret value). */
export class ConfigError extends Error {
  readonly code: ConfigErrorCode = 'ERR_CONFIG_INVALID';
  constructor(
    readonly problems: readonly string[],
    /** The telemetry settings when they themselves are valid, so a misconfigured instance still reports (functions/main.ts). */
    readonly telemetry?: Config['telemetry'],
  ) {
    super(`Invalid settings:\n  - ${problems.join('\n  - ')}`);
    this.name = 'ConfigError';
  }
}

/** https, or http only to this machine (a local OpenID provider). */
export function isSecureOrLoopbackUrl(url: URL): boolean {
  return url.protocol === 'https:' || (url.protocol === 'http:' && LOOPBACK_HOSTS.has(url.hostname));
}

function parseUrl(value: string): URL | undefined {
  try {
    return new URL(value);
  } catch {
    return undefined;
  }
}

function isTimeZone(value: string): boolean {
  if (value === 'UTC') return true; // the default needs no time-zone data (see drawDay)
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: value });
    return true;
  } catch {
    return false;
  }
}

/** The table endpoint a connection string names, or undefined when it is not one (never echoes it). */
function tableEndpointOf(connectionString: string): URL | undefined {
  try {
    return new URL(TableServiceClient.fromConnectionString(connectionString, { allowInsecureConnection: true }).url);
  } catch {
    return undefined;
  }
}

function list(value: string | undefined): string[] | undefined {
  if (value === undefined) return undefined;
  const items = value
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
  return items.length > 0 ? items : undefined;
}

/** A setting's trimmed value. An empty value means unset: App Service and local.settings files often carry empty values. */
function valueOf(env: Settings, name: string): string | undefined {
  const v = env[name]?.trim();
  return v === undefined || v === '' ? undefined : v;
}

export function loadConfig(env: Settings = process.env): Config {
  const problems: string[] = [];
  const get = (name: SettingName): string | undefined => valueOf(env, name);
  const integer = (name: SettingName, fallback: number, min: number, max: number): number => {
    const raw = get(name);
    if (raw === undefined) return fallback;
    if (!/^\d+$/.test(raw) || Number(raw) < min || Number(raw) > max) {
      problems.push(`${name} must be a whole number from ${min} to ${max} (got "${raw}")`);
      return fallback;
    }
    return Number(raw);
  };
  const url = (name: SettingName, raw: string | undefined, secure: boolean): string | undefined => {
    if (raw === undefined) return undefined;
    const parsed = parseUrl(raw);
    if (!parsed || !['https:', 'http:'].includes(parsed.protocol)) {
      problems.push(`${name} must be an absolute http(s) URL`);
      return undefined;
    }
    if (secure && !isSecureOrLoopbackUrl(parsed)) {
      problems.push(`${name} must use https (http is allowed only for localhost)`);
      return undefined;
    }
    return raw;
  };

  // --- auth ---
  // GUIDs are compared exactly (tid) and built into the issuer URL, and Entra writes them in lower case.
  const tenantId = get('AUTH_TENANT_ID')?.toLowerCase();
  if (tenantId !== undefined && !GUID.test(tenantId)) {
    problems.push("AUTH_TENANT_ID must be the tenant id, a GUID (it is compared with the token's tid)");
  }
  const authorityHost = url('AUTH_AUTHORITY_HOST', get('AUTH_AUTHORITY_HOST') ?? 'https://login.microsoftonline.com', true);
  let openIdConfigUrl = url('AUTH_OPENID_CONFIG_URL', get('AUTH_OPENID_CONFIG_URL'), true);
  if (openIdConfigUrl === undefined && get('AUTH_OPENID_CONFIG_URL') === undefined) {
    if (tenantId === undefined) {
      problems.push('AUTH_TENANT_ID is required unless AUTH_OPENID_CONFIG_URL is set');
    } else if (authorityHost !== undefined) {
      openIdConfigUrl = `${authorityHost.replace(/\/+$/, '')}/${tenantId}/v2.0/.well-known/openid-configuration`;
    }
  }
  const audiences = list(get('AUTH_AUDIENCE'));
  if (audiences === undefined) problems.push('AUTH_AUDIENCE is required (comma-separated accepted audiences)');
  const algorithms = list(get('AUTH_ALGORITHMS')) ?? ['RS256'];
  const badAlgorithms = algorithms.filter((a) => !ALLOWED_ALGORITHMS.has(a));
  if (badAlgorithms.length > 0) {
    problems.push(`AUTH_ALGORITHMS may list only ${[...ALLOWED_ALGORITHMS].join(', ')} (got ${badAlgorithms.join(', ')})`);
  }
  const allowedIssuers = list(get('AUTH_ALLOWED_ISSUERS'));
  const clockToleranceSeconds = integer('AUTH_CLOCK_TOLERANCE_SECONDS', 60, 0, 300);

  // --- tables ---
  const endpointRaw = get('TABLES_ENDPOINT');
  const connectionString = get('TABLES_CONNECTION_STRING');
  if (endpointRaw !== undefined && connectionString !== undefined) {
    problems.push('set only one of TABLES_ENDPOINT or TABLES_CONNECTION_STRING, not both');
  } else if (endpointRaw === undefined && connectionString === undefined) {
    problems.push('one of TABLES_ENDPOINT (managed identity) or TABLES_CONNECTION_STRING is required');
  }
  const endpoint = url('TABLES_ENDPOINT', endpointRaw, true);
  if (connectionString !== undefined) {
    const tables = tableEndpointOf(connectionString);
    if (tables === undefined) problems.push('TABLES_CONNECTION_STRING is not a storage connection string with a table endpoint');
    else if (!isSecureOrLoopbackUrl(tables)) problems.push('TABLES_CONNECTION_STRING must use https (http is allowed only for localhost)');
  }
  const tableName = (name: SettingName, fallback: string): string => {
    const value = get(name) ?? fallback;
    if (!TABLE_NAME.test(value)) problems.push(`${name} must be a table name: a letter, then 2 to 62 letters or digits`);
    return value;
  };
  const partnersTable = tableName('PARTNERS_TABLE', 'Partners');
  const loansTable = tableName('LOANS_TABLE', 'Loans');
  const drawsTable = tableName('DRAWS_TABLE', 'DrawRequests');
  const idempotencyTable = tableName('IDEMPOTENCY_TABLE', 'IdempotencyKeys');
  const stoppedClientsTable = tableName('STOPPED_CLIENTS_TABLE', 'StoppedClients');

  // --- rules ---
  const drawDayTimeZone = get('DRAW_DAY_TIMEZONE') ?? 'UTC';
  if (!isTimeZone(drawDayTimeZone)) problems.push(`DRAW_DAY_TIMEZONE must be an IANA time zone such as UTC or America/New_York (got "${drawDayTimeZone}")`);
  const maxBatchSize = integer('MAX_BATCH_SIZE', MAX_BATCH_SIZE_LIMIT, 1, MAX_BATCH_SIZE_LIMIT);

  // --- telemetry ---
  const beforeTelemetry = problems.length;
  const appInsights = get('APPLICATIONINSIGHTS_CONNECTION_STRING');
  const connection = appInsights === undefined ? undefined : normalConnectionString(appInsights, problems);
  const samplingPercentage = integer('TELEMETRY_SAMPLING_PERCENTAGE', 100, 0, 100);
  const entraIngestion = authenticationString(get('APPLICATIONINSIGHTS_AUTHENTICATION_STRING'), problems);
  if (appInsights !== undefined) unsupportedTelemetrySettings(env, problems);

  const telemetry =
    appInsights === undefined || problems.length > beforeTelemetry
      ? undefined
      : { connectionString: connection as string, samplingRatio: samplingPercentage / 100, ...(entraIngestion && { entraIngestion }) };

  if (problems.length > 0) throw new ConfigError(problems, telemetry);
  return {
    auth: {
      tenantId,
      openIdConfigUrl: openIdConfigUrl as string,
      audiences: audiences as string[],
      allowedIssuers,
      requiredRole: get('AUTH_REQUIRED_ROLE'),
      partnerClaim: get('AUTH_PARTNER_CLAIM'),
      clockToleranceSeconds,
      algorithms,
    },
    tables: { endpoint, connectionString, partnersTable, loansTable, drawsTable, idempotencyTable, stoppedClientsTable },
    drawDayTimeZone,
    maxBatchSize,
    telemetry,
  };
}

/** Propagators the package carries (the OpenTelemetry defaults): OTEL_PROPAGATORS may name only these. */
const CARRIED_PROPAGATORS = new Set(['tracecontext', 'baggage', 'none']);

/**
 * Variables the Application Insights SDK (applicationinsights, @azure/monitor-opentelemetry and the
 * OpenTelemetry and Azure SDK packages under them) reads that would switch telemetry or a part of it off,
 * drop, truncate or delay what it records, send it elsewhere, or reach a part the package does not carry
 * (a stand-in of scripts/bundlePlugins.ts). Each is refused by name when set, with why: an instance so set
 * up is misconfigured, loudly, rather than quietly blind. The whole table, honoured ones included, is in
 * docs/contributing.md §9; tests/integration/telemetry.test.ts fails on a variable the
 * SDK reads that the table does not list.
 */
export const REFUSED_TELEMETRY_SETTINGS: Readonly<Record<string, string>> = Object.fromEntries(
  (
    [
      [
        'telemetry is configured in code (docs/contract.md §10), and the package carries only what that uses',
        'APPLICATIONINSIGHTS_CONFIGURATION_CONTENT',
        'APPLICATIONINSIGHTS_CONFIGURATION_FILE',
      ],
      [
        'the browser SDK loader is not in the package (any value turns it on, and the SDK would then not start)',
        'APPLICATIONINSIGHTS_WEB_INSTRUMENTATION_ENABLED',
      ],
      [
        'the browser SDK loader is not in the package',
        'APPLICATIONINSIGHTS_WEB_INSTRUMENTATION_CONNECTION_STRING',
        'APPLICATIONINSIGHTS_WEB_INSTRUMENTATION_SOURCE',
      ],
      ["the SDK's own diagnostics must reach the host's log, where on-call reads them", 'APPLICATIONINSIGHTS_LOG_DESTINATION', 'APPLICATIONINSIGHTS_LOGDIR'],
      ['it switches off part of what Application Insights keeps', 'APPLICATIONINSIGHTS_METRICS_TO_LOGANALYTICS_ENABLED'],
      ["it switches off the SDK's counts of items sent, dropped and retried, which go to this service's own resource", 'APPLICATIONINSIGHTS_SDKSTATS_DISABLED'],
      ['it turns instrumentations off by the 2.x rules, which nothing here tests with these options', 'APPLICATION_INSIGHTS_NO_DIAGNOSTIC_CHANNEL'],
      ['it turns off instrumentations by name: dependencies would be missing', 'APPLICATION_INSIGHTS_NO_PATCH_MODULES'],
      [
        'the SDK already sends neither its standard metrics (Application Insights computes them from the records) nor its resource metric: it would switch nothing off, and reads as if it did',
        'APPLICATION_INSIGHTS_NO_STANDARD_METRICS',
        'APPLICATIONINSIGHTS_OPENTELEMETRY_RESOURCE_METRIC_DISABLED',
      ],
      [
        "the Azure SDK's per-call spans are already off (Table Storage is recorded per round): it would switch nothing off, and reads as if it did",
        'AZURE_TRACING_DISABLED',
        'azure_tracing_disabled',
        'AZURE_HTTP_TRACING_CHILDREN_DISABLED',
        'azure_http_tracing_children_disabled',
      ],
      ['it turns the OpenTelemetry SDK off: nothing would be recorded', 'OTEL_SDK_DISABLED'],
      ['dependencies are sampled by TELEMETRY_SAMPLING_PERCENTAGE; this would override it (always_off drops them all)', 'OTEL_TRACES_SAMPLER'],
      ['dependencies are sampled by TELEMETRY_SAMPLING_PERCENTAGE; this would override it', 'OTEL_TRACES_SAMPLER_ARG'],
      [
        'telemetry goes to Application Insights only: the package carries no other exporter',
        'OTEL_TRACES_EXPORTER',
        'OTEL_LOGS_EXPORTER',
        'OTEL_METRICS_EXPORTER',
      ],
      [
        'telemetry goes to Application Insights only: the package carries no OTLP exporter',
        'OTEL_EXPORTER_OTLP_PROTOCOL',
        'OTEL_EXPORTER_OTLP_TRACES_PROTOCOL',
        'OTEL_EXPORTER_OTLP_LOGS_PROTOCOL',
        'OTEL_EXPORTER_OTLP_METRICS_PROTOCOL',
        'OTEL_EXPORTER_OTLP_METRICS_ENDPOINT',
        'OTEL_EXPORTER_OTLP_METRICS_DEFAULT_HISTOGRAM_AGGREGATION',
      ],
      ['an experimental SDK feature this package is not tested with', 'OTEL_NODE_EXPERIMENTAL_SDK_METRICS'],
      ['it would drop dimensions of what the service records', 'OTEL_ATTRIBUTE_COUNT_LIMIT'],
      ['it would truncate dimensions of what the service records', 'OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT'],
      ['it would drop attributes of dependencies', 'OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT'],
      ['it would truncate attributes of dependencies', 'OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT'],
      ['it would drop span events (exceptions of dependencies)', 'OTEL_SPAN_EVENT_COUNT_LIMIT'],
      ['it would drop span links', 'OTEL_SPAN_LINK_COUNT_LIMIT'],
      ['it would drop attributes of span events', 'OTEL_SPAN_ATTRIBUTE_PER_EVENT_COUNT_LIMIT'],
      ['it would drop attributes of span links', 'OTEL_SPAN_ATTRIBUTE_PER_LINK_COUNT_LIMIT'],
      ['it would drop dimensions of events and traces', 'OTEL_LOGRECORD_ATTRIBUTE_COUNT_LIMIT'],
      ['it would truncate dimensions of events and traces', 'OTEL_LOGRECORD_ATTRIBUTE_VALUE_LENGTH_LIMIT'],
      [
        'batching of dependencies is tuned in code (a wrong value drops or delays them)',
        'OTEL_BSP_SCHEDULE_DELAY',
        'OTEL_BSP_EXPORT_TIMEOUT',
        'OTEL_BSP_MAX_QUEUE_SIZE',
        'OTEL_BSP_MAX_EXPORT_BATCH_SIZE',
      ],
      [
        'batching of events and traces is tuned in code (a wrong value drops or delays them)',
        'OTEL_BLRP_SCHEDULE_DELAY',
        'OTEL_BLRP_EXPORT_TIMEOUT',
        'OTEL_BLRP_MAX_QUEUE_SIZE',
        'OTEL_BLRP_MAX_EXPORT_BATCH_SIZE',
      ],
      ['metric export is tuned in code', 'OTEL_METRIC_EXPORT_INTERVAL', 'OTEL_METRIC_EXPORT_TIMEOUT'],
      [
        'the service reaches Application Insights, storage and the identity provider directly (or through the VNet): a proxy is not supported',
        ...['HTTP_PROXY', 'HTTPS_PROXY', 'ALL_PROXY', 'NO_PROXY'].flatMap((name) => [name, name.toLowerCase()]),
      ],
    ] as [string, ...string[]][]
  ).flatMap(([why, ...names]) => names.map((name) => [name, why])),
);

/**
 * Settings the Application Insights SDK would read to switch telemetry or part of it off, or to use parts
 * the package does not carry (docs/contributing.md §9, docs/decisions/0062-every-telemetry-variable-is-honoured-or-refused-by-name.md). Refused by name, so that an
 * instance set up that way is misconfigured, loudly, rather than silent or half-started.
 */
function unsupportedTelemetrySettings(env: Settings, problems: string[]): void {
  const propagators = list(valueOf(env, 'OTEL_PROPAGATORS'))?.filter((p) => !CARRIED_PROPAGATORS.has(p.toLowerCase()));
  if (propagators !== undefined && propagators.length > 0)
    problems.push(`OTEL_PROPAGATORS may list only tracecontext, baggage or none: the package carries no other propagator (got ${propagators.join(', ')})`);
  for (const [name, why] of Object.entries(REFUSED_TELEMETRY_SETTINGS)) if (valueOf(env, name) !== undefined) problems.push(`${name} is not supported: ${why}`);
  // Honoured, in the forms the SDK accepts: any other fails its start (which would be refused anyway, less clearly).
  const azureLogLevel = valueOf(env, 'AZURE_LOG_LEVEL');
  if (azureLogLevel !== undefined && !AZURE_LOG_LEVELS.has(azureLogLevel))
    problems.push(`AZURE_LOG_LEVEL must be one of ${[...AZURE_LOG_LEVELS].join(', ')} (got "${azureLogLevel}")`);
  const detectors = valueOf(env, 'OTEL_NODE_RESOURCE_DETECTORS');
  if (detectors !== undefined && !detectors.split(',').every((d) => RESOURCE_DETECTORS.has(d)))
    problems.push(`OTEL_NODE_RESOURCE_DETECTORS must list, comma-separated without spaces, only ${[...RESOURCE_DETECTORS].join(', ')}`);
}

const AZURE_LOG_LEVELS = new Set(['verbose', 'info', 'warning', 'error']);
/** What @azure/monitor-opentelemetry accepts (it reports anything else as an error, not trimming spaces). */
const RESOURCE_DETECTORS = new Set([
  'env',
  'host',
  'os',
  'process',
  'serviceinstance',
  'azure_aks',
  'azure_app_service',
  'azure_functions',
  'azure_vm',
  'all',
  'none',
]);

/**
 * An Application Insights connection string: `Key=value` pairs separated by `;`, with an
 * `InstrumentationKey` that is a GUID (without one the exporter cannot start, and the SDK swallows
 * that: telemetry would be silent), and endpoints, when given, that are https URLs (http only to this
 * machine). Returned as the SDK parses without complaint: pairs trimmed, no empty ones, the key in lower
 * case (the exporter's check is case-sensitive). Never echoes the value.
 */
function normalConnectionString(value: string, problems: string[]): string | undefined {
  const NAME = 'APPLICATIONINSIGHTS_CONNECTION_STRING';
  const pairs = settingPairs(value);
  if (pairs === undefined) {
    problems.push(
      `${NAME} must be an Application Insights connection string: Key=value pairs separated by ";" (InstrumentationKey=<GUID>;IngestionEndpoint=https://…)`,
    );
    return undefined;
  }
  const parts = new Map(pairs.map(([name, v]) => [name.toLowerCase(), v]));
  const key = parts.get('instrumentationkey');
  const secure = (url: string) => {
    const parsed = parseUrl(url);
    return parsed !== undefined && isSecureOrLoopbackUrl(parsed);
  };
  const before = problems.length;
  if (key === undefined || !GUID.test(key)) problems.push(`${NAME} must carry InstrumentationKey=<GUID> (the component's instrumentation key)`);
  if ([...parts].some(([name, url]) => name.endsWith('endpoint') && !secure(url)))
    problems.push(`${NAME}: its endpoints must be https URLs (http is allowed only for localhost)`);
  if (problems.length > before) return undefined;
  return pairs.map(([name, v]) => `${name}=${name.toLowerCase() === 'instrumentationkey' ? v.toLowerCase() : v}`).join(';');
}

/** `Key=value` pairs separated by `;` (Microsoft's connection and authentication strings), trimmed, empty parts skipped; undefined when a part is not one such pair. */
function settingPairs(value: string): (readonly [string, string])[] | undefined {
  const pairs = value
    .split(';')
    .filter((part) => part.trim() !== '')
    .map((part) => part.split('=').map((side) => side.trim()));
  return pairs.every((pair) => pair.length === 2 && pair[0] !== '') ? pairs.map(([name, v]) => [name, v] as const) : undefined;
}

/**
 * `Authorization=AAD` with an optional `ClientId=<guid>` (Microsoft's format for the Functions host and
 * the App Insights agent); the SDK's TelemetryClient does not read it itself, so the service does.
 */
function authenticationString(value: string | undefined, problems: string[]): { clientId?: string } | undefined {
  if (value === undefined) return undefined;
  const pairs = settingPairs(value);
  const parts = new Map(pairs?.map(([name, v]) => [name.toLowerCase(), v]));
  const clientId = parts.get('clientid');
  const valid =
    pairs !== undefined &&
    parts.get('authorization')?.toUpperCase() === 'AAD' &&
    [...parts.keys()].every((k) => k === 'authorization' || k === 'clientid') &&
    (clientId === undefined || GUID.test(clientId));
  if (!valid) {
    problems.push('APPLICATIONINSIGHTS_AUTHENTICATION_STRING must be "Authorization=AAD" or "Authorization=AAD;ClientId=<managed identity client id>"');
    return undefined;
  }
  return clientId === undefined ? {} : { clientId: clientId.toLowerCase() };
}
