import fc from 'fast-check';
import {
  PREVIOUS_DAY_RETRY_MS,
  batchHash,
  judgeRetry,
  keyRecordId,
  previousDayInWindow,
  readIdempotencyKey,
  type KeyedBatch,
  type PriorDraw,
} from '../../lib/idempotency';
import { drawDay } from '../../lib/store';
import { DETAILS } from '../../lib/problem';

const headers = (value?: string) => ({ get: (name: string) => (name.toLowerCase() === 'idempotency-key' && value !== undefined ? value : null) });

describe('readIdempotencyKey', () => {
  test('no header: no key', () => {
    expect(readIdempotencyKey(headers())).toEqual({ ok: true });
  });

  test('any 1–128 visible ASCII characters are a key, taken as sent', () => {
    fc.assert(
      fc.property(fc.string({ unit: fc.integer({ min: 0x21, max: 0x7e }).map((c) => String.fromCharCode(c)), minLength: 1, maxLength: 128 }), (key) => {
        expect(readIdempotencyKey(headers(key))).toEqual({ ok: true, key });
      }),
    );
  });

  test('anything else is a request-level Invalid Request', () => {
    const invalid = fc.oneof(
      fc.constant(''),
      fc.string({ minLength: 129, maxLength: 300 }).filter((s) => /^[\x21-\x7e]+$/.test(s)),
      fc
        .tuple(
          fc.string({ maxLength: 60 }),
          fc.oneof(fc.constant(' '), fc.constant('\t'), fc.constant('\x7f'), fc.constant('é'), fc.constant('\u0000')),
          fc.string({ maxLength: 60 }),
        )
        .map(([a, b, c]) => a + b + c),
    );
    fc.assert(
      fc.property(invalid, (value) => {
        expect(readIdempotencyKey(headers(value))).toEqual({ ok: false, error: { code: 'InvalidRequest', detail: DETAILS.idempotencyKeyForm } });
      }),
    );
  });
});

describe('batchHash', () => {
  const element = fc.record({
    loanNumber: fc.integer({ min: 1 }),
    amount: fc.integer({ min: 100, max: 10_000_00 }).map((c) => c / 100),
    requestor: fc.string({ minLength: 1 }),
  });

  test('is a SHA-256 hex digest', () => {
    expect(batchHash([{ loanNumber: 1, amount: 1, requestor: 'a' }])).toMatch(/^[0-9a-f]{64}$/);
  });

  test('depends on every canonical value and on order, not on how they were spelled', () => {
    fc.assert(
      fc.property(fc.array(element, { minLength: 1, maxLength: 5 }), fc.nat(), (batch, which) => {
        const i = which % batch.length;
        const respelled = batch.map((e) => ({ ...e, amount: Number(e.amount.toFixed(2)) }));
        expect(batchHash(respelled)).toBe(batchHash(batch));
        expect(batchHash(batch.map((e, j) => (j === i ? { ...e, loanNumber: e.loanNumber + 1 } : e)))).not.toBe(batchHash(batch));
        expect(batchHash(batch.map((e, j) => (j === i ? { ...e, amount: e.amount + 0.01 } : e)))).not.toBe(batchHash(batch));
        expect(batchHash(batch.map((e, j) => (j === i ? { ...e, requestor: `${e.requestor}x` } : e)))).not.toBe(batchHash(batch));
        if (batch.length > 1 && batchHash([batch[1]]) !== batchHash([batch[0]])) {
          expect(batchHash([batch[1], batch[0], ...batch.slice(2)])).not.toBe(batchHash(batch));
        }
      }),
    );
  });

  test('field boundaries cannot be shifted to forge the same hash', () => {
    expect(batchHash([{ loanNumber: 1, amount: 1, requestor: 'a","b' }])).not.toBe(
      batchHash([
        { loanNumber: 1, amount: 1, requestor: 'a' },
        { loanNumber: 1, amount: 1, requestor: 'b' },
      ]),
    );
  });
});

describe('keyRecordId', () => {
  test('is a valid RowKey whatever the key holds, and differs by partner and by key', () => {
    expect(keyRecordId('P', 'a/b\\c#d?e')).toMatch(/^[0-9a-f]{64}$/);
    expect(keyRecordId('P1', 'k')).not.toBe(keyRecordId('P2', 'k'));
    expect(keyRecordId('P', 'k1')).not.toBe(keyRecordId('P', 'k2'));
    expect(keyRecordId('P|', 'k')).not.toBe(keyRecordId('P', '|k'));
  });
});

describe('judgeRetry', () => {
  const batch: KeyedBatch = { key: 'K', hash: 'H', partnerId: 'P' };
  const row = (over: Partial<PriorDraw> = {}): PriorDraw => ({ partnerId: 'P', idempotencyKey: 'K', batchHash: 'H', requestId: 'r1', ...over });

  test.each<[string, PriorDraw[], string | undefined, ReturnType<typeof judgeRetry>]>([
    ['nothing today', [], undefined, { kind: 'new' }],
    [
      'rows of other submissions only',
      [row({ idempotencyKey: undefined, batchHash: undefined }), row({ idempotencyKey: 'other' })],
      undefined,
      { kind: 'new' },
    ],
    ['a row of this partner, key and batch', [row()], undefined, { kind: 'replay', originalRequestId: 'r1' }],
    [
      'one matching row among others (the batch landed atomically)',
      [row({ idempotencyKey: undefined }), row({ requestId: 'r9' })],
      'H',
      { kind: 'replay', originalRequestId: 'r9' },
    ],
    ['the record names this batch but no row landed', [], 'H', { kind: 'new' }],
    ['the record names another batch', [], 'other', { kind: 'reused' }],
    ['a row under this key with another batch', [row({ batchHash: 'other' })], undefined, { kind: 'reused' }],
    ["another partner's row under the same key and hash", [row({ partnerId: 'Q' })], undefined, { kind: 'new' }],
    ["another partner's row under the same key, and our record names this batch", [row({ partnerId: 'Q', batchHash: 'x' })], 'H', { kind: 'new' }],
  ])('%s', (_name, rows, recordHash, verdict) => {
    expect(judgeRetry(batch, rows, recordHash)).toEqual(verdict);
  });

  test.each<[string, PriorDraw[], PriorDraw[], string | undefined, ReturnType<typeof judgeRetry>]>([
    ["the previous day's row of this partner, key and batch", [], [row({ requestId: 'y1' })], undefined, { kind: 'replay', originalRequestId: 'y1' }],
    ["the previous day's row under this key with another batch: the key is free today", [], [row({ batchHash: 'other' })], undefined, { kind: 'new' }],
    ["another partner's row of the previous day", [], [row({ partnerId: 'Q' })], undefined, { kind: 'new' }],
    [
      'today reused, but the previous day holds this very batch: it landed, so a replay',
      [row({ batchHash: 'other' })],
      [row({ requestId: 'y1' })],
      undefined,
      { kind: 'replay', originalRequestId: 'y1' },
    ],
    ["today's match is answered first", [row({ requestId: 't1' })], [row({ requestId: 'y1' })], undefined, { kind: 'replay', originalRequestId: 't1' }],
    ["today's record of another batch, nothing landed", [], [row({ batchHash: 'other' })], 'other', { kind: 'reused' }],
  ])('%s', (_name, today, previousDay, recordHash, verdict) => {
    expect(judgeRetry(batch, today, recordHash, previousDay)).toEqual(verdict);
  });
});

describe('previousDayInWindow', () => {
  const dayIn = (zone: string) => (at: Date) => drawDay(at, zone);
  const window = (iso: string, zone = 'UTC') => previousDayInWindow(new Date(iso), drawDay(new Date(iso), zone), dayIn(zone));

  test('names the previous day during the first minutes of a day, and nothing after', () => {
    expect(window('2031-04-02T00:00:00Z')).toBe('2031-04-01');
    expect(window(new Date(Date.parse('2031-04-02T00:00:00Z') + PREVIOUS_DAY_RETRY_MS - 1).toISOString())).toBe('2031-04-01');
    expect(window(new Date(Date.parse('2031-04-02T00:00:00Z') + PREVIOUS_DAY_RETRY_MS).toISOString())).toBeUndefined();
    expect(window('2031-04-01T23:59:59.999Z')).toBeUndefined();
    expect(window('2031-04-01T12:00:00Z')).toBeUndefined();
  });

  test("follows the business day's zone, across a month, a year and a change of clocks", () => {
    expect(window('2031-11-20T05:00:30Z', 'America/New_York')).toBe('2031-11-19');
    expect(window('2031-11-20T00:00:30Z', 'America/New_York')).toBeUndefined(); // 19:00 local
    expect(window('2032-01-01T00:10:00Z')).toBe('2031-12-31');
    expect(window('2031-03-01T00:10:00Z')).toBe('2031-02-28');
    // New York springs forward at 02:00 on 2031-03-09: its midnight is still 05:00Z.
    expect(window('2031-03-09T05:30:00Z', 'America/New_York')).toBe('2031-03-08');
    expect(window('2031-03-09T07:30:00Z', 'America/New_York')).toBeUndefined();
  });
});
