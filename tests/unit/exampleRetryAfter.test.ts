/**
 * The partner example client's reading of `Retry-After` (examples/submit-draws.ts): RFC 9110 §10.2.3's
 * two forms, the HTTP-date in §5.6.7's three formats, and the wait it makes of them. The waits
 * themselves, against a server, are in tests/integration/example.test.ts.
 */
import { MAX_RETRY_WAIT_MS, parseHttpDate, retryAfterMs, retryWaitMs } from '../../examples/submit-draws';

const NOV_6_1994 = Date.UTC(1994, 10, 6, 8, 49, 37);
const NOW = Date.UTC(2026, 10, 26, 12, 0, 0);

describe('parseHttpDate', () => {
  test.each([
    ['IMF-fixdate', 'Sun, 06 Nov 1994 08:49:37 GMT'],
    ['the obsolete RFC 850 form', 'Sunday, 06-Nov-94 08:49:37 GMT'],
    ["asctime's form", 'Sun Nov  6 08:49:37 1994'],
  ])('%s', (_form, text) => {
    expect(parseHttpDate(text, NOW)).toBe(NOV_6_1994);
  });

  test('an RFC 850 year more than 50 years ahead is the latest past year with those digits', () => {
    expect(new Date(parseHttpDate('Thursday, 01-Jan-76 00:00:00 GMT', NOW) as number).getUTCFullYear()).toBe(2076);
    expect(new Date(parseHttpDate('Friday, 01-Jan-77 00:00:00 GMT', NOW) as number).getUTCFullYear()).toBe(1977);
  });

  test.each([
    ['a date that does not exist', 'Wed, 31 Feb 2026 00:00:00 GMT'],
    ['an hour past 23', 'Thu, 26 Nov 2026 24:00:00 GMT'],
    ['another zone', 'Thu, 26 Nov 2026 12:00:00 +0000'],
    ['lower-case', 'thu, 26 nov 2026 12:00:00 gmt'],
    ['ISO 8601', '2026-11-26T12:00:00Z'],
    ['words', 'tomorrow'],
  ])('not an HTTP-date: %s', (_name, text) => {
    expect(parseHttpDate(text, NOW)).toBeUndefined();
  });
});

describe('retryAfterMs', () => {
  test('delay-seconds', () => {
    expect(retryAfterMs('2', null, NOW)).toBe(2000);
    expect(retryAfterMs('0', null, NOW)).toBe(0);
    expect(retryAfterMs(' 120 ', null, NOW)).toBe(120_000);
  });

  test("an HTTP-date, from the answer's own Date: this machine's clock does not count", () => {
    expect(retryAfterMs('Thu, 26 Nov 2026 12:00:05 GMT', 'Thu, 26 Nov 2026 12:00:00 GMT', NOW + 60_000)).toBe(5000);
  });

  test("an HTTP-date without a valid Date: from this machine's clock; one already passed is no wait", () => {
    expect(retryAfterMs('Thu, 26 Nov 2026 12:00:05 GMT', null, NOW)).toBe(5000);
    expect(retryAfterMs('Thu, 26 Nov 2026 12:00:05 GMT', 'yesterday', NOW)).toBe(5000);
    expect(retryAfterMs('Thu, 26 Nov 2026 11:59:00 GMT', null, NOW)).toBe(0);
  });

  test.each([[null], [''], ['-1'], ['1.5'], ['2 s'], ['2, 3'], ['soon']])('none, or not valid: %p', (value) => {
    expect(retryAfterMs(value, null, NOW)).toBeUndefined();
  });
});

describe('retryWaitMs', () => {
  test("no Retry-After: the client's own backoff", () => {
    expect(retryWaitMs(1000, undefined, 0)).toBe(1000);
    expect(retryWaitMs(2000, undefined, 1)).toBe(2000);
  });

  test("the service's Retry-After: 2: at least 2 s, then twice it on the next failure", () => {
    expect(retryWaitMs(1000, 2000, 0)).toBe(2000);
    expect(retryWaitMs(2000, 2000, 1)).toBe(4000);
  });

  test('never less than the backoff, never more than a minute', () => {
    expect(retryWaitMs(1000, 0, 0)).toBe(1000);
    expect(retryWaitMs(1000, 3_600_000, 0)).toBe(MAX_RETRY_WAIT_MS);
    expect(retryWaitMs(1000, 40_000, 1)).toBe(MAX_RETRY_WAIT_MS);
    expect(retryAfterMs('99999999999999999999', null, NOW)).toBeGreaterThan(MAX_RETRY_WAIT_MS);
    expect(retryWaitMs(1000, retryAfterMs('99999999999999999999', null, NOW), 0)).toBe(MAX_RETRY_WAIT_MS);
  });
});
