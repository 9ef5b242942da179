/**
 * Hostile and malformed bodies, generated with fast-check, against the handler with a real
 * Azurite: never a 500, every 400 is problem+json listing valid indexes only, nothing is written
 * by any 400, and no key of any body reaches Object.prototype.
 */
import fc from 'fast-check';
import { ERROR_NAMES } from '../../lib/problem';
import { Harness, PARTNER, OTHER_PARTNER, type Reply } from '../support/harness';

const DAY_ZERO = Date.parse('2033-01-01T12:00:00Z');
let runs = 0;
let h: Harness;
const loanNumbers: number[] = [];

beforeAll(async () => {
  // A new business day every 25 bodies, so seeded loans can be drawn again and 204s keep coming.
  h = await Harness.start({}, { now: () => new Date(DAY_ZERO + Math.floor(runs / 25) * 86_400_000) });
  const kinds = [
    { partnerId: PARTNER, availableCredit: 1_000_000, fundingInvestorId: 'INV-1' },
    { partnerId: PARTNER, availableCredit: 1_000_000, fundingInvestorId: 'INV-1' },
    { partnerId: PARTNER, availableCredit: 1_000_000, fundingInvestorId: 'INV-1' },
    { partnerId: PARTNER, availableCredit: 5, fundingInvestorId: 'INV-1' },
    { partnerId: PARTNER, availableCredit: 1_000_000, fundingInvestorId: '' },
    { partnerId: OTHER_PARTNER, availableCredit: 1_000_000, fundingInvestorId: 'INV-1' },
  ];
  for (let i = 0; i < 24; i++) loanNumbers.push(await h.loan(kinds[i % kinds.length]));
});
afterAll(() => h.stop());

/** JSON text written as is: numbers JavaScript cannot hold (`1e400`, `-0`), or any fragment. */
class Raw {
  constructor(readonly text: string) {}
}
/** An object written as its key/value pairs in order, so keys may repeat. */
class Pairs {
  constructor(readonly pairs: readonly (readonly [string, unknown])[]) {}
}

function serialize(value: unknown): string {
  if (value instanceof Raw) return value.text;
  if (value instanceof Pairs) return `{${value.pairs.map(([k, v]) => `${JSON.stringify(k)}:${serialize(v)}`).join(',')}}`;
  if (Array.isArray(value)) return `[${value.map(serialize).join(',')}]`;
  return JSON.stringify(value) ?? 'null';
}

const EDGE_NUMBERS = [
  '-0',
  '0',
  '1',
  '-1',
  '1e308',
  '1e400',
  '-1e400',
  '1e-400',
  '0.1',
  '0.30000000000000004',
  '9007199254740991',
  '9007199254740993',
  '1.005',
  '100.10',
  '1E2',
  '1.0000000000000001',
  '123456789012345678901234567890',
  '99.999',
  '1.00',
];

const anyString = fc.oneof(
  fc.string({ unit: 'binary', maxLength: 40 }),
  fc.string({ unit: fc.integer({ min: 0, max: 0x1f }).map((c) => String.fromCharCode(c)), maxLength: 5 }),
  fc.constantFrom('', ' ', '\u2028', '\ud800', 'a\u0000b', '١٢٣', '１２３', '𝟙𝟚𝟛', 'null', 'NaN', 'Infinity'),
  fc.integer({ min: 200, max: 70_000 }).map((n) => 'x'.repeat(n)),
);

const fieldName = fc
  .tuple(fc.constantFrom('loanNumber', 'requestor', 'amount'), fc.array(fc.boolean(), { minLength: 10, maxLength: 10 }))
  .map(([name, upper]) => [...name].map((c, i) => (upper[i] ? c.toUpperCase() : c.toLowerCase())).join(''));

const key = fc.oneof(
  { weight: 6, arbitrary: fieldName },
  { weight: 2, arbitrary: fc.constantFrom('__proto__', 'constructor', 'prototype', 'toString', 'hasOwnProperty', 'valueOf', '__defineGetter__') },
  { weight: 1, arbitrary: fc.string({ maxLength: 12 }) },
  { weight: 1, arbitrary: fc.constantFrom('loan_number', 'loanNumber ', 'ｌoanNumber', 'LOANNUMBER\u0000') },
);

const value = fc.oneof(
  { weight: 4, arbitrary: fc.nat().map(knownLoan) },
  { weight: 3, arbitrary: fc.constantFrom(...EDGE_NUMBERS).map((n) => new Raw(n)) },
  { weight: 2, arbitrary: fc.integer({ min: 1, max: 10_000 }).map((c) => c / 100) },
  { weight: 2, arbitrary: anyString },
  { weight: 1, arbitrary: fc.constantFrom('jane@partner.example', '  ops  ', '0001001', '00000000000000001') },
  { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 3 }) },
  { weight: 1, arbitrary: fc.constantFrom(null, true, false, [], {}) },
);

/** A loan number known to storage (seeded before any body is generated), as a number or a digit string with leading zeros. */
function knownLoan(i: number): number | string {
  const n = loanNumbers[i % loanNumbers.length];
  return i % 3 === 0 ? `00${n}` : n;
}

const plausible = fc.record({
  loanNumber: fc.nat().map(knownLoan),
  requestor: fc.constantFrom('jane.doe@partner.example', 'ops'),
  amount: fc.oneof(
    fc.integer({ min: 100, max: 100_000 }).map((c) => c / 100),
    fc.constantFrom(1, 10, 1_000_000),
  ),
});

const element = fc.oneof(
  { weight: 4, arbitrary: fc.array(fc.tuple(key, value), { maxLength: 6 }).map((pairs) => new Pairs(pairs)) },
  { weight: 3, arbitrary: plausible },
  { weight: 1, arbitrary: fc.tuple(plausible, key, value).map(([p, k, v]) => new Pairs([...Object.entries(p), [k, v]])) },
  { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 2 }) },
);

const body: fc.Arbitrary<string | Buffer> = fc.oneof(
  { weight: 8, arbitrary: fc.array(element, { minLength: 1, maxLength: 8 }).map(serialize) },
  { weight: 1, arbitrary: fc.array(plausible, { minLength: 95, maxLength: 110 }).map(serialize) },
  { weight: 1, arbitrary: fc.jsonValue().map(serialize) },
  { weight: 1, arbitrary: fc.integer({ min: 1, max: 20_000 }).map((n) => '['.repeat(n) + ']'.repeat(n)) },
  { weight: 1, arbitrary: fc.integer({ min: 1, max: 5_000 }).map((n) => `[${'{"a":'.repeat(n)}1${'}'.repeat(n)}]`) },
  { weight: 1, arbitrary: fc.uint8Array({ maxLength: 64 }).map((bytes) => Buffer.from(bytes)) },
  { weight: 1, arbitrary: fc.tuple(fc.array(element, { minLength: 1, maxLength: 3 }), fc.nat()).map(([els, cut]) => serialize(els).slice(0, cut % 40)) },
);

const contentType = fc.oneof(
  { weight: 12, arbitrary: fc.constant('application/json') },
  { weight: 1, arbitrary: fc.constantFrom('application/json; charset=utf-8', 'text/plain', 'application/json; charset=latin1', '', 'application/xml') },
);

const protoNames = () => Object.getOwnPropertyNames(Object.prototype).sort();
const PROTO_BEFORE = protoNames();
const CODES = new Set(Object.keys(ERROR_NAMES));

/** What a partner can rely on in any 400, given the body that was sent. */
function expectWellFormed400(reply: Reply, sent: string | Buffer): void {
  expect(reply.headers['content-type']).toBe('application/problem+json');
  expect(reply.body).toMatchObject({ type: 'about:blank', title: 'Bad Request', status: 400, requestId: reply.headers['x-request-id'] });
  const errors: { index?: number; code: string; error: string; pointer?: string; detail: string }[] = reply.body.errors;
  expect(errors.length).toBeGreaterThan(0);
  let length: number | undefined;
  try {
    const parsed: unknown = JSON.parse(sent.toString());
    if (Array.isArray(parsed)) length = parsed.length;
  } catch {
    length = undefined;
  }
  const indexes = errors.filter((e) => e.index !== undefined).map((e) => e.index as number);
  if (indexes.length < errors.length) {
    expect(errors).toHaveLength(1); // a request-level error stands alone
  }
  for (const e of errors) {
    expect(CODES.has(e.code)).toBe(true);
    expect(e.error).toBe(ERROR_NAMES[e.code as keyof typeof ERROR_NAMES]);
    expect(typeof e.detail).toBe('string');
    if (e.index !== undefined) {
      expect(length).toBeDefined();
      expect(Number.isInteger(e.index) && e.index >= 0 && e.index < (length as number)).toBe(true);
    }
    if (e.pointer !== undefined) expect(e.pointer === `/${e.index}` || e.pointer.startsWith(`/${e.index}/`)).toBe(true);
  }
  expect(new Set(indexes).size).toBe(indexes.length); // one error per element
  expect(indexes).toEqual([...indexes].sort((a, b) => a - b));
}

test('5,000 generated bodies: never a 500, well-formed 400s, nothing written by a 400, Object.prototype untouched', async () => {
  const accepted = new Map<string, number>(); // request id → elements in the batch
  const statuses: Record<number, number> = {};
  await fc.assert(
    fc.asyncProperty(body, contentType, async (sent, type) => {
      runs += 1;
      const reply = await h.post(sent, { headers: { 'content-type': type } });
      statuses[reply.status] = (statuses[reply.status] ?? 0) + 1;
      expect([204, 400]).toContain(reply.status);
      if (reply.status === 204) accepted.set(reply.headers['x-request-id'], JSON.parse(sent.toString()).length);
      else expectWellFormed400(reply, sent);
      expect(protoNames()).toEqual(PROTO_BEFORE);
      expect(({} as Record<string, unknown>).loanNumber).toBeUndefined();
    }),
    { numRuns: 5_000 },
  );

  // Every stored row was written by a 204, and every 204 wrote its whole batch.
  const rows = await h.draws();
  const byRequest = new Map<string, number>();
  for (const row of rows) byRequest.set(row.RequestId as string, (byRequest.get(row.RequestId as string) ?? 0) + 1);
  expect(new Set(byRequest.keys())).toEqual(new Set(accepted.keys()));
  for (const [requestId, count] of accepted) expect(byRequest.get(requestId)).toBe(count);

  // The generators reach every part of the handler: shape errors, rule errors and acceptance.
  expect(statuses[204]).toBeGreaterThan(50);
  expect(statuses[400]).toBeGreaterThan(2_000);
}, 300_000);
