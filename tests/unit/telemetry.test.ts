import { ConfigError, loadConfig } from '../../lib/config';
import { eventOf, noTelemetry, type BatchRecord } from '../../lib/telemetry';

const base: BatchRecord = { requestId: 'r-1', outcome: 'Rejected', errors: [], durations: { total: 12.5 } };

test('the event counts error codes and rejected elements, and keeps durations as measurements', () => {
  const { properties, measurements } = eventOf({
    ...base,
    partnerId: 'P',
    clientId: 'C',
    batchSize: 4,
    durations: { auth: 1, read: 2, total: 5 },
    errors: [
      { index: 0, code: 'InvalidAmount', detail: 'd' },
      { index: 2, code: 'InvalidAmount', detail: 'd' },
      { index: 3, loanNumber: 7, code: 'PendingTransactionRequest', detail: 'd' },
    ],
  });
  expect(properties).toEqual({
    requestId: 'r-1',
    outcome: 'Rejected',
    partnerId: 'P',
    clientId: 'C',
    errorCodes: '{"InvalidAmount":2,"PendingTransactionRequest":1}',
  });
  expect(measurements).toEqual({ totalMs: 5, authMs: 1, readMs: 2, batchSize: 4, rejectedCount: 3 });
});

test('absent dimensions are left out, not sent empty', () => {
  expect(eventOf({ ...base, outcome: 'Unauthorized', reason: 'ERR_AUTH_EXPIRED' })).toEqual({
    properties: { requestId: 'r-1', outcome: 'Unauthorized', reason: 'ERR_AUTH_EXPIRED' },
    measurements: { totalMs: 12.5, rejectedCount: 0 },
  });
});

test('a replay names its key and the request that landed the batch', () => {
  expect(eventOf({ ...base, outcome: 'Replayed', partnerId: 'P', idempotencyKey: 'k-1', reasonDetail: 'r-0', batchSize: 2 }).properties).toEqual({
    requestId: 'r-1',
    outcome: 'Replayed',
    partnerId: 'P',
    idempotencyKey: 'k-1',
    reasonDetail: 'r-0',
  });
});

test('without a connection string nothing is recorded and the invocation just runs', async () => {
  await expect(noTelemetry.inInvocation({} as never, () => Promise.resolve(42))).resolves.toBe(42);
  expect(
    loadConfig({ AUTH_OPENID_CONFIG_URL: 'https://idp.example/', AUTH_AUDIENCE: 'a', TABLES_CONNECTION_STRING: 'UseDevelopmentStorage=true' }).telemetry,
  ).toBeUndefined();
});

test.each([
  [
    { APPLICATIONINSIGHTS_CONNECTION_STRING: 'not-a-connection-string' },
    /APPLICATIONINSIGHTS_CONNECTION_STRING must be an Application Insights connection string/,
  ],
  [
    { APPLICATIONINSIGHTS_CONNECTION_STRING: 'InstrumentationKey=x', TELEMETRY_SAMPLING_PERCENTAGE: '101' },
    /TELEMETRY_SAMPLING_PERCENTAGE must be a whole number from 0 to 100/,
  ],
])('telemetry settings are checked at start-up: %p', (settings, message) => {
  const env = { AUTH_OPENID_CONFIG_URL: 'https://idp.example/', AUTH_AUDIENCE: 'a', TABLES_CONNECTION_STRING: 'UseDevelopmentStorage=true', ...settings };
  expect(() => loadConfig(env)).toThrow(ConfigError);
  expect(() => loadConfig(env)).toThrow(message);
});
