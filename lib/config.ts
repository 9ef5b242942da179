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

  // --- rules ---
  const drawDayTimeZone = get('DRAW_DAY_TIMEZONE') ?? 'UTC';
  if (!isTimeZone(drawDayTimeZone)) problems.push(`DRAW_DAY_TIMEZONE must be an IANA time zone such as UTC or America/New_York (got "${drawDayTimeZone}")`);
  const maxBatchSize = integer('MAX_BATCH_SIZE', MAX_BATCH_SIZE_LIMIT, 1, MAX_BATCH_SIZE_LIMIT);

  // --- telemetry ---
  const beforeTelemetry = problems.length;
  const appInsights = get('APPLICATIONINSIGHTS_CONNECTION_STRING');
  if (appInsights !== undefined && !/(^|;)\s*(InstrumentationKey|IngestionEndpoint)=/i.test(appInsights)) {
    problems.push('APPLICATIONINSIGHTS_CONNECTION_STRING must be an Application Insights connection string (InstrumentationKey=…;IngestionEndpoint=…)');
  }
  const samplingPercentage = integer('TELEMETRY_SAMPLING_PERCENTAGE', 100, 0, 100);
  const entraIngestion = authenticationString(get('APPLICATIONINSIGHTS_AUTHENTICATION_STRING'), problems);
  if (appInsights !== undefined) unsupportedTelemetrySettings(env, problems);

  const telemetry =
    appInsights === undefined || problems.length > beforeTelemetry
      ? undefined
      : { connectionString: appInsights, samplingRatio: samplingPercentage / 100, ...(entraIngestion && { entraIngestion }) };

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
    tables: { endpoint, connectionString, partnersTable, loansTable, drawsTable, idempotencyTable },
    drawDayTimeZone,
    maxBatchSize,
    telemetry,
  };
}

/** Propagators the package carries (the OpenTelemetry defaults): OTEL_PROPAGATORS may name only these. */
const CARRIED_PROPAGATORS = new Set(['tracecontext', 'baggage', 'none']);

/**
 * Settings the Application Insights SDK would read to use parts the package does not carry (exporters,
 * propagators, live metrics and instrumentations left out of the bundle: docs/decisions.md, "The package
 * is one bundle"). Refused by name, so that an instance set up that way is misconfigured, loudly, rather
 * than half-started.
 */
function unsupportedTelemetrySettings(env: Settings, problems: string[]): void {
  const propagators = list(valueOf(env, 'OTEL_PROPAGATORS'))?.filter((p) => !CARRIED_PROPAGATORS.has(p.toLowerCase()));
  if (propagators !== undefined && propagators.length > 0)
    problems.push(`OTEL_PROPAGATORS may list only tracecontext, baggage or none: the package carries no other propagator (got ${propagators.join(', ')})`);
  for (const name of ['APPLICATIONINSIGHTS_CONFIGURATION_CONTENT', 'APPLICATIONINSIGHTS_CONFIGURATION_FILE'])
    if (valueOf(env, name) !== undefined)
      problems.push(`${name} is not supported: telemetry is configured in code (docs/contract.md §10), and the package carries only what that uses`);
}

/**
 * `Authorization=AAD` with an optional `ClientId=<guid>` (Microsoft's format for the Functions host and
 * the App Insights agent); the SDK's TelemetryClient does not read it itself, so the service does.
 */
function authenticationString(value: string | undefined, problems: string[]): { clientId?: string } | undefined {
  if (value === undefined) return undefined;
  const parts = new Map(
    value
      .split(';')
      .filter((part) => part.trim() !== '')
      .map((part) => {
        const [key, ...rest] = part.split('=');
        return [key.trim().toLowerCase(), rest.join('=').trim()] as const;
      }),
  );
  const clientId = parts.get('clientid');
  const valid =
    parts.get('authorization')?.toUpperCase() === 'AAD' &&
    [...parts.keys()].every((k) => k === 'authorization' || k === 'clientid') &&
    (clientId === undefined || GUID.test(clientId));
  if (!valid) {
    problems.push('APPLICATIONINSIGHTS_AUTHENTICATION_STRING must be "Authorization=AAD" or "Authorization=AAD;ClientId=<managed identity client id>"');
    return undefined;
  }
  return clientId === undefined ? {} : { clientId: clientId.toLowerCase() };
}
