import { HttpRequest, InvocationContext } from '@azure/functions';
import { createMisconfiguredHandler } from '../../functions/drawRequest';
import { ConfigError, loadConfig } from '../../lib/config';
import { internalError } from '../../lib/problem';
import {
  MISCONFIGURED,
  REJECTED_ELEMENTS_MAX_CHARS,
  SHUTDOWN_FLUSH_MS,
  eventOf,
  flushWithin,
  noTelemetry,
  rejectedElementsOf,
  startTelemetry,
  type BatchRecord,
  type Telemetry,
} from '../../lib/telemetry';

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
    rejectedElements: '0::InvalidAmount,2::InvalidAmount,3:7:PendingTransactionRequest',
  });
  expect(measurements).toEqual({ totalMs: 5, authMs: 1, readMs: 2, batchSize: 4, rejectedCount: 3 });
});

test('the rejected elements of the largest batch, at their longest, fit in one dimension; a longer list is cut at an entry and says how many are left out', () => {
  const worst = Array.from({ length: 100 }, (_, i) => ({
    index: i,
    loanNumber: 9_007_199_254_740_991,
    code: 'PendingTransactionRequest' as const,
    detail: 'd',
  }));
  const listed = rejectedElementsOf(worst) as string;
  expect(listed.split(',')).toHaveLength(100);
  expect(listed.length).toBeLessThan(REJECTED_ELEMENTS_MAX_CHARS);
  const many = rejectedElementsOf([...worst, ...worst, ...worst]) as string;
  expect(many.length).toBeLessThanOrEqual(REJECTED_ELEMENTS_MAX_CHARS);
  const entries = many.split(',');
  expect(entries.at(-1)).toBe(`+${300 - (entries.length - 1)}`);
  expect(entries.slice(0, -1).every((e) => /^\d+:\d+:PendingTransactionRequest$/.test(e))).toBe(true);
});

test("a request-level 400 has no element entries: its detail is the event's reasonDetail", () => {
  const { properties } = eventOf({ ...base, errors: [{ code: 'InvalidRequest', detail: 'the request body is not valid JSON' }] });
  expect(properties).toEqual(expect.objectContaining({ reasonDetail: 'the request body is not valid JSON', errorCodes: '{"InvalidRequest":1}' }));
  expect(properties).not.toHaveProperty('rejectedElements');
});

test("the batch's loan numbers, comma-separated, so that on-call finds a loan's draws", () => {
  expect(eventOf({ ...base, outcome: 'Accepted', loanNumbers: [1001, 42, 1001] }).properties.loanNumbers).toBe('1001,42,1001');
  expect(eventOf({ ...base, outcome: 'Rejected', loanNumbers: [] }).properties).not.toHaveProperty('loanNumbers');
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

test('a misconfigured instance answers 500 and records each invocation as Failed with reason Misconfigured and the settings at fault', async () => {
  const records: BatchRecord[] = [];
  const telemetry = { ...noTelemetry, batch: (record: BatchRecord) => void records.push(record) };
  let error: ConfigError | undefined;
  try {
    loadConfig({ AUTH_OPENID_CONFIG_URL: 'https://idp.example/', TABLES_CONNECTION_STRING: 'UseDevelopmentStorage=true' });
  } catch (thrown) {
    error = thrown as ConfigError;
  }
  const logged: string[] = [];
  const context = new InvocationContext({
    invocationId: 'inv-1',
    functionName: 'DrawRequest',
    logHandler: (level, ...args) => logged.push(`[${level}] ${args.join(' ')}`),
  });
  const request = new HttpRequest({ method: 'POST', url: 'http://localhost/DrawRequest', body: { string: '[]' } });
  const response = await createMisconfiguredHandler(error as ConfigError, telemetry)(request, context);
  expect(response).toEqual(internalError('inv-1'));
  expect(logged).toEqual([
    expect.stringMatching(/^\[error\] DrawRequest failed: this instance is misconfigured\. Invalid settings:\n {2}- AUTH_AUDIENCE is required/),
  ]);
  expect(records).toEqual([
    expect.objectContaining({
      requestId: 'inv-1',
      outcome: 'Failed',
      reason: MISCONFIGURED,
      reasonDetail: 'AUTH_AUDIENCE is required (comma-separated accepted audiences)',
    }),
  ]);
  expect(eventOf(records[0]).properties).toEqual({
    requestId: 'inv-1',
    outcome: 'Failed',
    reason: 'Misconfigured',
    reasonDetail: 'AUTH_AUDIENCE is required (comma-separated accepted audiences)',
  });
});

describe('the flush at shutdown (functions/main.ts appTerminate hook)', () => {
  const flushing = (flush: () => Promise<void>): Telemetry => ({ ...noTelemetry, flush });
  const sent = flushing(() => new Promise((resolve) => setTimeout(resolve, 10)));
  const stuck = flushing(() => new Promise(() => undefined));
  const refused = flushing(() => Promise.reject(new Error('ingestion refused')));

  test('is bounded below the 5 s the host waits after WorkerTerminate', () => {
    expect(SHUTDOWN_FLUSH_MS).toBeLessThan(5_000);
  });

  test('resolves true once the exporter has sent what it held', async () => {
    expect(await flushWithin(sent, 1_000)).toBe(true);
  });

  test('gives up at its bound on an exporter that never finishes, and never rejects', async () => {
    const started = Date.now();
    expect(await flushWithin(stuck, 50)).toBe(false);
    expect(Date.now() - started).toBeLessThan(1_000);
    expect(await flushWithin(refused, 1_000)).toBe(false);
  });
});

describe('a recording that throws (an SDK fault) never fails the invocation it describes', () => {
  // A fault the real SDK does not produce on demand: its client made to throw.
  test('batch and dataQuality return normally; the first failure is logged once, naming the error', () => {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const { TelemetryClient } = require('applicationinsights') as typeof import('applicationinsights');
    const trackEvent = jest.spyOn(TelemetryClient.prototype, 'trackEvent').mockImplementation(() => {
      throw new TypeError('exporter gone');
    });
    const trackTrace = jest.spyOn(TelemetryClient.prototype, 'trackTrace').mockImplementation(() => {
      throw new TypeError('exporter gone');
    });
    const logged = jest.spyOn(console, 'error').mockImplementation(() => undefined);
    try {
      const telemetry = startTelemetry({
        connectionString: 'InstrumentationKey=00000000-0000-4000-8000-000000000000;IngestionEndpoint=https://127.0.0.1:9/',
        samplingRatio: 1,
      });
      expect(() => telemetry.batch({ ...base, errors: [{ index: 0, code: 'InvalidAmount', detail: 'd' }] })).not.toThrow();
      expect(() => telemetry.batch(base)).not.toThrow();
      expect(() => telemetry.dataQuality('LoanWithoutCredit', { loanNumbers: '1' })).not.toThrow();
      expect(trackEvent).toHaveBeenCalledTimes(2);
      expect(trackTrace).toHaveBeenCalledTimes(1);
      expect(logged.mock.calls).toEqual([[expect.stringMatching(/^DrawRequest telemetry: recording failed.*TypeError: exporter gone$/)]]);
    } finally {
      trackEvent.mockRestore();
      trackTrace.mockRestore();
      logged.mockRestore();
    }
  });
});
