import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { STAND_IN_PATHS } from '../../scripts/bundlePlugins';
import { ConfigError, REFUSED_TELEMETRY_SETTINGS, SETTING_NAMES, loadConfig, type Settings } from '../../lib/config';

const TENANT = '72f988bf-86f1-41af-91ab-2d7cd011db47';
const DERIVED_URL = `https://login.microsoftonline.com/${TENANT}/v2.0/.well-known/openid-configuration`;
const MINIMAL: Settings = {
  AUTH_TENANT_ID: TENANT,
  AUTH_AUDIENCE: 'api://draw-requests',
  TABLES_CONNECTION_STRING: 'UseDevelopmentStorage=true',
};

const withEnv = (overrides: Settings): Settings => ({ ...MINIMAL, ...overrides });

/** The ConfigError loadConfig throws for `env` (fails the test if it does not throw one). */
function configError(env: Settings): ConfigError {
  let thrown: unknown;
  try {
    loadConfig(env);
  } catch (error) {
    thrown = error;
  }
  expect(thrown).toBeInstanceOf(ConfigError);
  const error = thrown as ConfigError;
  expect(error).toBeInstanceOf(Error);
  expect(error.code).toBe('ERR_CONFIG_INVALID');
  expect(error.name).toBe('ConfigError');
  for (const problem of error.problems) expect(error.message).toContain(problem);
  return error;
}

describe('loadConfig: valid settings', () => {
  test('minimal settings give the documented defaults', () => {
    expect(loadConfig(MINIMAL)).toEqual({
      auth: {
        tenantId: TENANT,
        openIdConfigUrl: DERIVED_URL,
        audiences: ['api://draw-requests'],
        allowedIssuers: undefined,
        requiredRole: undefined,
        partnerClaim: undefined,
        clockToleranceSeconds: 60,
        algorithms: ['RS256'],
      },
      tables: {
        endpoint: undefined,
        connectionString: 'UseDevelopmentStorage=true',
        partnersTable: 'Partners',
        loansTable: 'Loans',
        drawsTable: 'DrawRequests',
        idempotencyTable: 'IdempotencyKeys',
        stoppedClientsTable: 'StoppedClients',
      },
      drawDayTimeZone: 'UTC',
      maxBatchSize: 100,
      telemetry: undefined,
    });
  });

  test('an upper-case tenant GUID is accepted and kept in lower case, as Entra writes tid', () => {
    const config = loadConfig(withEnv({ AUTH_TENANT_ID: TENANT.toUpperCase() }));
    expect(config.auth.tenantId).toBe(TENANT);
    expect(config.auth.openIdConfigUrl).toBe(DERIVED_URL);
  });

  test('AUTH_OPENID_CONFIG_URL alone works without a tenant', () => {
    const url = 'https://idp.example.com/.well-known/openid-configuration';
    const config = loadConfig({ AUTH_OPENID_CONFIG_URL: url, AUTH_AUDIENCE: 'x', TABLES_CONNECTION_STRING: 'UseDevelopmentStorage=true' });
    expect(config.auth.openIdConfigUrl).toBe(url);
    expect(config.auth.tenantId).toBeUndefined();
  });

  test('AUTH_OPENID_CONFIG_URL overrides the derived URL when a tenant is also set', () => {
    const url = 'https://idp.example.com/custom/openid-configuration';
    const config = loadConfig(withEnv({ AUTH_OPENID_CONFIG_URL: url }));
    expect(config.auth.openIdConfigUrl).toBe(url);
    expect(config.auth.tenantId).toBe(TENANT);
  });

  test.each([
    ['https://login.microsoftonline.us', `https://login.microsoftonline.us/${TENANT}/v2.0/.well-known/openid-configuration`],
    ['https://login.microsoftonline.us/', `https://login.microsoftonline.us/${TENANT}/v2.0/.well-known/openid-configuration`],
    ['http://localhost:9000', `http://localhost:9000/${TENANT}/v2.0/.well-known/openid-configuration`],
  ])('AUTH_AUTHORITY_HOST %p → metadata URL %p', (host, url) => {
    expect(loadConfig(withEnv({ AUTH_AUTHORITY_HOST: host })).auth.openIdConfigUrl).toBe(url);
  });

  test.each([
    ['http://127.0.0.1:1234/.well-known/openid-configuration'],
    ['http://localhost/.well-known/openid-configuration'],
    ['http://localhost:8080/tenant/v2.0/.well-known/openid-configuration'],
    ['http://[::1]:9000/.well-known/openid-configuration'],
  ])('loopback http AUTH_OPENID_CONFIG_URL %p is accepted', (url) => {
    expect(loadConfig(withEnv({ AUTH_TENANT_ID: undefined, AUTH_OPENID_CONFIG_URL: url })).auth.openIdConfigUrl).toBe(url);
  });

  test('TABLES_ENDPOINT alone is used for managed identity', () => {
    const endpoint = 'https://acct.table.core.windows.net';
    const config = loadConfig(withEnv({ TABLES_CONNECTION_STRING: undefined, TABLES_ENDPOINT: endpoint }));
    expect(config.tables.endpoint).toBe(endpoint);
    expect(config.tables.connectionString).toBeUndefined();
  });

  test('optional settings are passed through', () => {
    const config = loadConfig(
      withEnv({
        AUTH_REQUIRED_ROLE: 'Draws.Submit',
        AUTH_PARTNER_CLAIM: 'appid',
        AUTH_ALLOWED_ISSUERS: 'https://a.example/, https://b.example/',
        AUTH_ALGORITHMS: 'RS256, ES256 ,PS256',
        AUTH_CLOCK_TOLERANCE_SECONDS: '0',
        PARTNERS_TABLE: 'PartnersDev',
        LOANS_TABLE: 'Lns',
        DRAWS_TABLE: 'a'.repeat(63),
        IDEMPOTENCY_TABLE: 'Keys2',
        STOPPED_CLIENTS_TABLE: 'Stops2',
        DRAW_DAY_TIMEZONE: 'America/New_York',
        MAX_BATCH_SIZE: '1',
        APPLICATIONINSIGHTS_CONNECTION_STRING: 'InstrumentationKey=00000000-0000-0000-0000-000000000000',
        TELEMETRY_SAMPLING_PERCENTAGE: '25',
      }),
    );
    expect(config.auth.requiredRole).toBe('Draws.Submit');
    expect(config.auth.partnerClaim).toBe('appid');
    expect(config.auth.allowedIssuers).toEqual(['https://a.example/', 'https://b.example/']);
    expect(config.auth.algorithms).toEqual(['RS256', 'ES256', 'PS256']);
    expect(config.auth.clockToleranceSeconds).toBe(0);
    expect(config.tables).toEqual({
      endpoint: undefined,
      connectionString: 'UseDevelopmentStorage=true',
      partnersTable: 'PartnersDev',
      loansTable: 'Lns',
      drawsTable: 'a'.repeat(63),
      idempotencyTable: 'Keys2',
      stoppedClientsTable: 'Stops2',
    });
    expect(config.drawDayTimeZone).toBe('America/New_York');
    expect(config.maxBatchSize).toBe(1);
    expect(config.telemetry).toEqual({ connectionString: 'InstrumentationKey=00000000-0000-0000-0000-000000000000', samplingRatio: 0.25 });
  });

  test.each([
    ['1', 1],
    ['100', 100],
    [' 50 ', 50],
    ['', 100],
    ['   ', 100],
  ])('MAX_BATCH_SIZE %p → %p', (value, size) => {
    expect(loadConfig(withEnv({ MAX_BATCH_SIZE: value })).maxBatchSize).toBe(size);
  });

  test('comma lists are trimmed and empty items dropped', () => {
    expect(loadConfig(withEnv({ AUTH_AUDIENCE: ' a , b ' })).auth.audiences).toEqual(['a', 'b']);
    expect(loadConfig(withEnv({ AUTH_AUDIENCE: 'a,,b,' })).auth.audiences).toEqual(['a', 'b']);
  });

  test('empty and whitespace values mean unset', () => {
    const config = loadConfig({
      AUTH_TENANT_ID: TENANT,
      AUTH_AUTHORITY_HOST: '',
      AUTH_OPENID_CONFIG_URL: '  ',
      AUTH_AUDIENCE: 'aud',
      AUTH_ALLOWED_ISSUERS: '',
      AUTH_REQUIRED_ROLE: ' ',
      AUTH_PARTNER_CLAIM: '',
      AUTH_CLOCK_TOLERANCE_SECONDS: '',
      AUTH_ALGORITHMS: ' ',
      TABLES_ENDPOINT: '',
      TABLES_CONNECTION_STRING: 'UseDevelopmentStorage=true',
      PARTNERS_TABLE: '',
      LOANS_TABLE: ' ',
      DRAWS_TABLE: '',
      DRAW_DAY_TIMEZONE: '',
      MAX_BATCH_SIZE: '',
      APPLICATIONINSIGHTS_CONNECTION_STRING: '',
    });
    // Exactly what the minimal settings give: every empty or blank value counted as unset.
    expect(config).toEqual(loadConfig(withEnv({ AUTH_AUDIENCE: 'aud' })));
  });

  test('an empty AUTH_TENANT_ID with an AUTH_OPENID_CONFIG_URL is fine', () => {
    const url = 'https://idp.example.com/.well-known/openid-configuration';
    const config = loadConfig(withEnv({ AUTH_TENANT_ID: '', AUTH_OPENID_CONFIG_URL: url }));
    expect(config.auth.tenantId).toBeUndefined();
    expect(config.auth.openIdConfigUrl).toBe(url);
  });

  test('an empty TABLES_CONNECTION_STRING with an endpoint is fine', () => {
    const config = loadConfig(withEnv({ TABLES_CONNECTION_STRING: '', TABLES_ENDPOINT: 'https://acct.table.core.windows.net' }));
    expect(config.tables.connectionString).toBeUndefined();
    expect(config.tables.endpoint).toBe('https://acct.table.core.windows.net');
  });
});

describe('loadConfig: each malformed or missing setting fails start-up naming it', () => {
  test.each([
    ['missing AUTH_AUDIENCE', { AUTH_AUDIENCE: undefined }, 'AUTH_AUDIENCE'],
    ['empty AUTH_AUDIENCE', { AUTH_AUDIENCE: '' }, 'AUTH_AUDIENCE'],
    ['AUTH_AUDIENCE of only commas', { AUTH_AUDIENCE: ' , ,' }, 'AUTH_AUDIENCE'],
    ['neither tenant nor metadata URL', { AUTH_TENANT_ID: undefined }, 'AUTH_TENANT_ID'],
    ['whitespace tenant and no metadata URL', { AUTH_TENANT_ID: '   ' }, 'AUTH_TENANT_ID'],
    ['non-GUID tenant (domain name)', { AUTH_TENANT_ID: 'contoso.onmicrosoft.com' }, 'AUTH_TENANT_ID'],
    ['non-GUID tenant (braces)', { AUTH_TENANT_ID: `{${TENANT}}` }, 'AUTH_TENANT_ID'],
    ['non-GUID tenant (common)', { AUTH_TENANT_ID: 'common' }, 'AUTH_TENANT_ID'],
    [
      'http non-loopback AUTH_OPENID_CONFIG_URL',
      { AUTH_TENANT_ID: undefined, AUTH_OPENID_CONFIG_URL: 'http://idp.example.com/.well-known/openid-configuration' },
      'AUTH_OPENID_CONFIG_URL',
    ],
    [
      'http non-loopback AUTH_OPENID_CONFIG_URL even with a tenant',
      { AUTH_OPENID_CONFIG_URL: 'http://10.0.0.5/.well-known/openid-configuration' },
      'AUTH_OPENID_CONFIG_URL',
    ],
    ['relative AUTH_OPENID_CONFIG_URL', { AUTH_OPENID_CONFIG_URL: '/.well-known/openid-configuration' }, 'AUTH_OPENID_CONFIG_URL'],
    ['ftp AUTH_OPENID_CONFIG_URL', { AUTH_OPENID_CONFIG_URL: 'ftp://idp.example.com/x' }, 'AUTH_OPENID_CONFIG_URL'],
    ['http non-loopback AUTH_AUTHORITY_HOST', { AUTH_AUTHORITY_HOST: 'http://login.example.com' }, 'AUTH_AUTHORITY_HOST'],
    ['both TABLES_ENDPOINT and TABLES_CONNECTION_STRING', { TABLES_ENDPOINT: 'https://acct.table.core.windows.net' }, 'TABLES_ENDPOINT'],
    ['neither TABLES_ENDPOINT nor TABLES_CONNECTION_STRING', { TABLES_CONNECTION_STRING: undefined }, 'TABLES_CONNECTION_STRING'],
    ['whitespace-only TABLES_CONNECTION_STRING', { TABLES_CONNECTION_STRING: '  ' }, 'TABLES_CONNECTION_STRING'],
    ['http non-loopback TABLES_ENDPOINT', { TABLES_CONNECTION_STRING: undefined, TABLES_ENDPOINT: 'http://acct.table.core.windows.net' }, 'TABLES_ENDPOINT'],
    ['TABLES_ENDPOINT not a URL', { TABLES_CONNECTION_STRING: undefined, TABLES_ENDPOINT: 'acct' }, 'TABLES_ENDPOINT'],
    ['MAX_BATCH_SIZE 0', { MAX_BATCH_SIZE: '0' }, 'MAX_BATCH_SIZE'],
    ['MAX_BATCH_SIZE 101', { MAX_BATCH_SIZE: '101' }, 'MAX_BATCH_SIZE'],
    ['MAX_BATCH_SIZE abc', { MAX_BATCH_SIZE: 'abc' }, 'MAX_BATCH_SIZE'],
    ['MAX_BATCH_SIZE 1.5', { MAX_BATCH_SIZE: '1.5' }, 'MAX_BATCH_SIZE'],
    ['MAX_BATCH_SIZE -1', { MAX_BATCH_SIZE: '-1' }, 'MAX_BATCH_SIZE'],
    ['MAX_BATCH_SIZE 1e2', { MAX_BATCH_SIZE: '1e2' }, 'MAX_BATCH_SIZE'],
    ['DRAW_DAY_TIMEZONE Mars/Base', { DRAW_DAY_TIMEZONE: 'Mars/Base' }, 'DRAW_DAY_TIMEZONE'],
    ['AUTH_ALGORITHMS HS256', { AUTH_ALGORITHMS: 'HS256' }, 'AUTH_ALGORITHMS'],
    ['AUTH_ALGORITHMS none', { AUTH_ALGORITHMS: 'none' }, 'AUTH_ALGORITHMS'],
    ['AUTH_ALGORITHMS RS256,HS256', { AUTH_ALGORITHMS: 'RS256,HS256' }, 'AUTH_ALGORITHMS'],
    ['AUTH_CLOCK_TOLERANCE_SECONDS -1', { AUTH_CLOCK_TOLERANCE_SECONDS: '-1' }, 'AUTH_CLOCK_TOLERANCE_SECONDS'],
    ['AUTH_CLOCK_TOLERANCE_SECONDS abc', { AUTH_CLOCK_TOLERANCE_SECONDS: 'abc' }, 'AUTH_CLOCK_TOLERANCE_SECONDS'],
    ['AUTH_CLOCK_TOLERANCE_SECONDS 1.5', { AUTH_CLOCK_TOLERANCE_SECONDS: '1.5' }, 'AUTH_CLOCK_TOLERANCE_SECONDS'],
    ['PARTNERS_TABLE ab (too short)', { PARTNERS_TABLE: 'ab' }, 'PARTNERS_TABLE'],
    ['LOANS_TABLE 1abc (starts with a digit)', { LOANS_TABLE: '1abc' }, 'LOANS_TABLE'],
    ['DRAWS_TABLE bad-name (hyphen)', { DRAWS_TABLE: 'bad-name' }, 'DRAWS_TABLE'],
    ['DRAWS_TABLE of 64 characters', { DRAWS_TABLE: 'a'.repeat(64) }, 'DRAWS_TABLE'],
    ['IDEMPOTENCY_TABLE with an underscore', { IDEMPOTENCY_TABLE: 'Idem_Keys' }, 'IDEMPOTENCY_TABLE'],
    ['STOPPED_CLIENTS_TABLE with a space', { STOPPED_CLIENTS_TABLE: 'Stopped Clients' }, 'STOPPED_CLIENTS_TABLE'],
  ] as [string, Settings, string][])('%s → ConfigError naming %s', (_name, overrides, setting) => {
    const error = configError(withEnv(overrides));
    expect(error.problems).toHaveLength(1);
    expect(error.problems[0]).toContain(setting);
    expect(error.message).toContain(setting);
  });

  test('several problems at once are all listed', () => {
    const error = configError({
      AUTH_TENANT_ID: 'not-a-guid',
      MAX_BATCH_SIZE: '0',
      DRAW_DAY_TIMEZONE: 'Mars/Base',
      AUTH_ALGORITHMS: 'none',
      AUTH_CLOCK_TOLERANCE_SECONDS: 'abc',
      LOANS_TABLE: 'bad-name',
    });
    const named = [
      'AUTH_TENANT_ID',
      'AUTH_AUDIENCE',
      'TABLES_CONNECTION_STRING',
      'MAX_BATCH_SIZE',
      'DRAW_DAY_TIMEZONE',
      'AUTH_ALGORITHMS',
      'AUTH_CLOCK_TOLERANCE_SECONDS',
      'LOANS_TABLE',
    ];
    expect(error.problems).toHaveLength(named.length);
    for (const setting of named) {
      expect(error.problems.filter((p) => p.includes(setting)).length).toBeGreaterThanOrEqual(1);
      expect(error.message).toContain(setting);
    }
  });

  test('an empty environment lists the three required settings', () => {
    const error = configError({});
    expect(error.problems).toHaveLength(3);
    expect(error.problems.some((p) => p.startsWith('AUTH_TENANT_ID'))).toBe(true);
    expect(error.problems.some((p) => p.startsWith('AUTH_AUDIENCE'))).toBe(true);
    expect(error.problems.some((p) => p.includes('TABLES_ENDPOINT') && p.includes('TABLES_CONNECTION_STRING'))).toBe(true);
  });

  test('the problem quotes the rejected value for numbers and time zones', () => {
    expect(configError(withEnv({ MAX_BATCH_SIZE: '101' })).problems[0]).toContain('"101"');
    expect(configError(withEnv({ DRAW_DAY_TIMEZONE: 'Mars/Base' })).problems[0]).toContain('"Mars/Base"');
  });
});

describe('loadConfig: TABLES_CONNECTION_STRING is checked without being echoed', () => {
  test.each([
    ['garbage-secret-value', 'TABLES_CONNECTION_STRING is not a storage connection string with a table endpoint'],
    ['AccountName=acct;AccountKey=c2VjcmV0LWtleQ==', 'TABLES_CONNECTION_STRING is not a storage connection string with a table endpoint'],
    [
      'DefaultEndpointsProtocol=http;AccountName=acct;AccountKey=c2VjcmV0LWtleQ==;EndpointSuffix=core.windows.net',
      'TABLES_CONNECTION_STRING must use https (http is allowed only for localhost)',
    ],
  ])('%p', (connectionString, problem) => {
    const error = configError(withEnv({ TABLES_CONNECTION_STRING: connectionString }));
    expect(error.problems).toEqual([problem]);
    expect(error.message).not.toContain('secret');
    expect(error.message).not.toContain('c2VjcmV0LWtleQ');
  });

  test.each([
    'UseDevelopmentStorage=true',
    'DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=c2VjcmV0LWtleQ==;EndpointSuffix=core.windows.net',
    'DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey=c2VjcmV0LWtleQ==;TableEndpoint=http://127.0.0.1:10002/devstoreaccount1;',
  ])('%p is accepted', (connectionString) => {
    expect(loadConfig(withEnv({ TABLES_CONNECTION_STRING: connectionString })).tables.connectionString).toBe(connectionString);
  });
});

describe('the settings list is one place', () => {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const example = (require('../../local.settings.example.json') as { Values: Record<string, string> }).Values;

  test('local.settings.example.json lists every setting the code reads', () => {
    expect(Object.keys(example)).toEqual(expect.arrayContaining([...SETTING_NAMES]));
  });

  // The example points at nothing (no endpoint, tenant or audience a reader would have to un-learn):
  // every value it gives is the service's own default, and what is left empty is what must be filled in.
  test('local.settings.example.json gives only defaults: with the required settings filled in, it changes nothing', () => {
    const required = {
      AUTH_TENANT_ID: '11111111-2222-3333-4444-555555555555',
      AUTH_AUDIENCE: 'api://draw-request-service',
      TABLES_ENDPOINT: 'https://account.table.core.windows.net',
    };
    expect(loadConfig({ ...example, ...required })).toEqual(loadConfig(required));
  });

  test('local.settings.example.json as it stands is refused, naming what to fill in', () => {
    expect(() => loadConfig(example)).toThrow(
      new ConfigError([
        'AUTH_TENANT_ID is required unless AUTH_OPENID_CONFIG_URL is set',
        'AUTH_AUDIENCE is required (comma-separated accepted audiences)',
        'one of TABLES_ENDPOINT (managed identity) or TABLES_CONNECTION_STRING is required',
      ]),
    );
  });

  test('the contract documents every setting', () => {
    const contract = readFileSync(join(__dirname, '..', '..', 'docs', 'contract.md'), 'utf8');
    for (const name of SETTING_NAMES) expect(contract).toContain(`\`${name}\``);
  });
});

describe('APPLICATIONINSIGHTS_AUTHENTICATION_STRING (Entra ingestion)', () => {
  const env = (value: string) => ({
    AUTH_OPENID_CONFIG_URL: 'https://idp.example/',
    AUTH_AUDIENCE: 'a',
    TABLES_CONNECTION_STRING: 'UseDevelopmentStorage=true',
    APPLICATIONINSIGHTS_CONNECTION_STRING: 'InstrumentationKey=00000000-0000-0000-0000-000000000000',
    APPLICATIONINSIGHTS_AUTHENTICATION_STRING: value,
  });
  test.each([
    ['ClientId=11111111-2222-3333-4444-555555555555;Authorization=AAD', { clientId: '11111111-2222-3333-4444-555555555555' }],
    ['Authorization=AAD;ClientId=AAAAAAAA-BBBB-4CCC-8DDD-EEEEEEEEEEEE', { clientId: 'aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee' }],
    ['Authorization=AAD', {}],
    ['authorization=aad;', {}],
  ])('%s is a managed identity for ingestion', (value, expected) => {
    expect(loadConfig(env(value)).telemetry?.entraIngestion).toEqual(expected);
  });
  test('unset: no Entra ingestion', () => {
    expect(loadConfig(env('')).telemetry?.entraIngestion).toBeUndefined();
  });
  test.each(['Authorization=Key', 'ClientId=not-a-guid;Authorization=AAD', 'Authorization=AAD;Secret=x'])('%s fails start-up, naming the setting', (value) => {
    expect(() => loadConfig(env(value))).toThrow(/APPLICATIONINSIGHTS_AUTHENTICATION_STRING must be/);
  });
});

describe('a ConfigError keeps the telemetry settings when they are valid (a misconfigured instance still reports its 500s)', () => {
  const appInsights = 'InstrumentationKey=00000000-0000-0000-0000-000000000000';

  test('another setting at fault: the telemetry settings are kept', () => {
    const error = configError(withEnv({ AUTH_AUDIENCE: undefined, APPLICATIONINSIGHTS_CONNECTION_STRING: appInsights, TELEMETRY_SAMPLING_PERCENTAGE: '50' }));
    expect(error.telemetry).toEqual({ connectionString: appInsights, samplingRatio: 0.5 });
  });

  test.each([
    ['the connection string', { APPLICATIONINSIGHTS_CONNECTION_STRING: 'not-one' }],
    ['the sampling percentage', { APPLICATIONINSIGHTS_CONNECTION_STRING: appInsights, TELEMETRY_SAMPLING_PERCENTAGE: '101' }],
    ['the authentication string', { APPLICATIONINSIGHTS_CONNECTION_STRING: appInsights, APPLICATIONINSIGHTS_AUTHENTICATION_STRING: 'Authorization=Key' }],
    ['none: no connection string', {}],
  ] as [string, Settings][])('%s at fault: no telemetry', (_what, overrides) => {
    expect(configError(withEnv({ AUTH_AUDIENCE: undefined, ...overrides })).telemetry).toBeUndefined();
  });
});

describe('no problem echoes the value of a setting that may hold a secret (the message is logged on every invocation)', () => {
  test.each([
    ['APPLICATIONINSIGHTS_CONNECTION_STRING', 'Ingestion=secret-marker-1'],
    ['APPLICATIONINSIGHTS_AUTHENTICATION_STRING', 'Authorization=AAD;ClientSecret=secret-marker-2'],
    ['TABLES_CONNECTION_STRING', 'AccountName=a;AccountKey=secret-marker-3'],
  ])('%s', (setting, value) => {
    const error = configError(
      withEnv({
        [setting]: value,
        ...(setting.startsWith('APPLICATIONINSIGHTS_AUTH') && {
          APPLICATIONINSIGHTS_CONNECTION_STRING: 'InstrumentationKey=00000000-0000-4000-8000-000000000000',
        }),
      }),
    );
    expect(error.problems).toEqual([expect.stringContaining(setting)]);
    expect(error.message).not.toContain('secret-marker');
  });
});

describe('telemetry settings that would need parts the package does not carry are refused by name', () => {
  const appInsights = 'InstrumentationKey=00000000-0000-0000-0000-000000000000';

  test.each([
    [{ OTEL_PROPAGATORS: 'b3' }, /OTEL_PROPAGATORS may list only tracecontext, baggage or none: .*\(got b3\)/],
    [{ OTEL_PROPAGATORS: 'tracecontext,jaeger,b3multi' }, /\(got jaeger, b3multi\)/],
    [{ APPLICATIONINSIGHTS_CONFIGURATION_CONTENT: '{"enableLiveMetrics":true}' }, /APPLICATIONINSIGHTS_CONFIGURATION_CONTENT is not supported/],
    [{ APPLICATIONINSIGHTS_CONFIGURATION_FILE: '/home/site/applicationinsights.json' }, /APPLICATIONINSIGHTS_CONFIGURATION_FILE is not supported/],
  ] as [Settings, RegExp][])('%p', (overrides, message) => {
    const error = configError(withEnv({ APPLICATIONINSIGHTS_CONNECTION_STRING: appInsights, ...overrides }));
    expect(error.problems).toEqual([expect.stringMatching(message)]);
    expect(error.telemetry).toBeUndefined(); // the SDK is not started with them
  });

  test.each(['tracecontext,baggage', 'TraceContext', 'none', ''])('OTEL_PROPAGATORS=%p is accepted', (value) => {
    expect(loadConfig(withEnv({ APPLICATIONINSIGHTS_CONNECTION_STRING: appInsights, OTEL_PROPAGATORS: value })).telemetry).toBeDefined();
  });

  test('without a connection string no SDK is loaded, and they do not matter', () => {
    expect(() => loadConfig(withEnv({ OTEL_PROPAGATORS: 'b3', APPLICATIONINSIGHTS_CONFIGURATION_CONTENT: '{}', OTEL_SDK_DISABLED: 'true' }))).not.toThrow();
  });

  // Values that would switch telemetry off or reach a stand-in; any non-empty value is refused alike.
  const EXAMPLES: Record<string, string> = {
    OTEL_SDK_DISABLED: 'true',
    OTEL_TRACES_SAMPLER: 'always_off',
    APPLICATIONINSIGHTS_WEB_INSTRUMENTATION_ENABLED: 'false',
  };
  test.each(Object.keys(REFUSED_TELEMETRY_SETTINGS))('%s, set, is refused by name with why, and the SDK is not started', (name) => {
    const error = configError(withEnv({ APPLICATIONINSIGHTS_CONNECTION_STRING: appInsights, [name]: EXAMPLES[name] ?? '1' }));
    expect(error.problems).toEqual([`${name} is not supported: ${REFUSED_TELEMETRY_SETTINGS[name]}`]);
    expect(error.telemetry).toBeUndefined();
  });
});

describe('APPLICATIONINSIGHTS_CONNECTION_STRING must carry a valid InstrumentationKey (without one the SDK starts silent)', () => {
  const key = '0f1e2d3c-4b5a-4978-8695-a4b3c2d1e0f9';
  test.each([
    [`InstrumentationKey=${key}`, `InstrumentationKey=${key}`],
    [
      `InstrumentationKey=${key};IngestionEndpoint=https://westeurope-5.in.applicationinsights.azure.com/;LiveEndpoint=https://westeurope.livediagnostics.monitor.azure.com/;ApplicationId=1a2b`,
      `InstrumentationKey=${key};IngestionEndpoint=https://westeurope-5.in.applicationinsights.azure.com/;LiveEndpoint=https://westeurope.livediagnostics.monitor.azure.com/;ApplicationId=1a2b`,
    ],
    // What the SDK would report as an error (spaces, a trailing ";") or refuse (an upper-case key) is passed to it normalised.
    [
      ` instrumentationkey = ${key.toUpperCase()} ; EndpointSuffix=applicationinsights.azure.cn;`,
      `instrumentationkey=${key};EndpointSuffix=applicationinsights.azure.cn`,
    ],
    [`InstrumentationKey=${key};IngestionEndpoint=http://127.0.0.1:4318/`, `InstrumentationKey=${key};IngestionEndpoint=http://127.0.0.1:4318/`],
  ])('%s is accepted, and given to the SDK as %s', (value, given) => {
    expect(loadConfig(withEnv({ APPLICATIONINSIGHTS_CONNECTION_STRING: value })).telemetry?.connectionString).toBe(given);
  });

  test.each([
    ['AZURE_LOG_LEVEL', 'debug', /AZURE_LOG_LEVEL must be one of verbose, info, warning, error/],
    ['AZURE_LOG_LEVEL', 'WARNING', /AZURE_LOG_LEVEL must be one of/],
    ['OTEL_NODE_RESOURCE_DETECTORS', 'env, host', /OTEL_NODE_RESOURCE_DETECTORS must list/],
    ['OTEL_NODE_RESOURCE_DETECTORS', 'gcp', /OTEL_NODE_RESOURCE_DETECTORS must list/],
  ])('honoured %s=%p in a form the SDK would fail on is refused by name', (name, value, message) => {
    expect(configError(withEnv({ APPLICATIONINSIGHTS_CONNECTION_STRING: `InstrumentationKey=${key}`, [name]: value })).problems).toEqual([
      expect.stringMatching(message),
    ]);
  });
  test.each([
    ['AZURE_LOG_LEVEL', 'warning'],
    ['OTEL_NODE_RESOURCE_DETECTORS', 'env,host,azure_functions'],
  ])('%s=%p is accepted', (name, value) => {
    expect(loadConfig(withEnv({ APPLICATIONINSIGHTS_CONNECTION_STRING: `InstrumentationKey=${key}`, [name]: value })).telemetry).toBeDefined();
  });
  test.each([
    ['IngestionEndpoint=https://westeurope-5.in.applicationinsights.azure.com/', /must carry InstrumentationKey=<GUID>/],
    ['InstrumentationKey=;IngestionEndpoint=https://in.example/', /must carry InstrumentationKey=<GUID>/],
    ['InstrumentationKey=my-key', /must carry InstrumentationKey=<GUID>/],
    [`InstrumentationKey=${key};IngestionEndpoint=http://in.example/`, /endpoints must be https URLs/],
    [`InstrumentationKey=${key};IngestionEndpoint=in.example`, /endpoints must be https URLs/],
    [`InstrumentationKey=${key};garbage`, /Key=value pairs separated by ";"/],
    [`InstrumentationKey=${key};IngestionEndpoint=https://in.example/?a=b`, /Key=value pairs separated by ";"/],
  ])('%s is refused, naming what is wrong', (value, message) => {
    const error = configError(withEnv({ APPLICATIONINSIGHTS_CONNECTION_STRING: value }));
    expect(error.problems).toEqual([expect.stringMatching(message)]);
    expect(error.problems[0]).toMatch(/^APPLICATIONINSIGHTS_CONNECTION_STRING/);
    expect(error.telemetry).toBeUndefined();
  });
});

describe('stand-ins are unreachable: every setting through which bundled code could use one is refused by name (scripts/bundlePlugins.ts STAND_IN_PATHS)', () => {
  const appInsights = 'InstrumentationKey=00000000-0000-4000-8000-000000000000';
  const reached = STAND_IN_PATHS.flatMap((path) => path.reachedBy.map((setting) => [setting, path.importer] as const));

  test('the settings listed', () => {
    expect(new Set(reached.map(([setting]) => setting.split('=')[0]))).toEqual(
      new Set([
        'OTEL_PROPAGATORS',
        'APPLICATIONINSIGHTS_CONFIGURATION_CONTENT',
        'APPLICATIONINSIGHTS_CONFIGURATION_FILE',
        'APPLICATIONINSIGHTS_WEB_INSTRUMENTATION_ENABLED',
      ]),
    );
  });

  test.each(reached)('%s (reaching a stand-in through %s) is refused, naming it, and the SDK is not started', (setting) => {
    const at = setting.indexOf('=');
    const name = setting.slice(0, at);
    const error = configError(withEnv({ APPLICATIONINSIGHTS_CONNECTION_STRING: appInsights, [name]: setting.slice(at + 1) }));
    expect(error.problems).toEqual([expect.stringMatching(new RegExp(`^${name} `))]);
    expect(error.telemetry).toBeUndefined();
  });

  test('a path no setting reaches says why', () => {
    for (const path of STAND_IN_PATHS) expect(path.why.length).toBeGreaterThan(20);
  });
});
