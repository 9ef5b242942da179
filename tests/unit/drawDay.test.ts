import fc from 'fast-check';
import { drawDay } from '../../lib/store';

/** The day as a fresh formatter gives it: what drawDay must answer whatever it remembers. */
const formats = new Map<string, Intl.DateTimeFormat>();
const reference = (at: Date, timeZone: string) => {
  if (!formats.has(timeZone)) formats.set(timeZone, new Intl.DateTimeFormat('en-CA', { timeZone, year: 'numeric', month: '2-digit', day: '2-digit' }));
  return formats.get(timeZone)?.format(at);
};

// Whole-hour, half-hour and 45-minute offsets, and zones with daylight saving (Lord Howe shifts by 30 minutes).
const ZONES = ['UTC', 'America/New_York', 'Europe/London', 'Asia/Kolkata', 'Asia/Kathmandu', 'Pacific/Chatham', 'Australia/Lord_Howe', 'America/St_Johns'];

test("minute by minute across midnight and daylight-saving changes, in every zone, the day is the formatter's", () => {
  const starts = [
    '2026-03-07T12:00:00Z',
    '2026-03-28T12:00:00Z',
    '2026-04-04T12:00:00Z',
    '2026-10-03T12:00:00Z',
    '2026-10-31T12:00:00Z',
    '2026-12-31T00:00:00Z',
  ];
  const wrong: string[] = [];
  for (const start of starts) {
    for (let minute = 0; minute < 48 * 60; minute += 1) {
      for (const offset of [0, 59_999]) {
        const at = new Date(Date.parse(start) + minute * 60_000 + offset);
        for (const zone of ZONES) if (drawDay(at, zone) !== reference(at, zone)) wrong.push(`${at.toISOString()} ${zone}`);
      }
    }
  }
  expect(wrong).toEqual([]);
});

test("any instant, in any order, to the millisecond: the day is the formatter's", () => {
  const instant = fc.integer({ min: Date.parse('2000-01-01T00:00:00Z'), max: Date.parse('2100-01-01T00:00:00Z') });
  fc.assert(
    fc.property(fc.array(fc.tuple(instant, fc.constantFrom(...ZONES)), { minLength: 1, maxLength: 20 }), (calls) => {
      for (const [ms, zone] of calls) expect(drawDay(new Date(ms), zone)).toBe(reference(new Date(ms), zone));
    }),
    { numRuns: 2_000 },
  );
});

test("instants one millisecond apart on either side of a zone's midnight", () => {
  // 2026-11-22 00:00 in New York (UTC-5) is 05:00 UTC.
  const midnight = Date.parse('2026-11-22T05:00:00Z');
  expect(drawDay(new Date(midnight - 1), 'America/New_York')).toBe('2026-11-21');
  expect(drawDay(new Date(midnight), 'America/New_York')).toBe('2026-11-22');
  expect(drawDay(new Date(midnight - 1), 'America/New_York')).toBe('2026-11-21');
});
