/**
 * Request-controlled text of any length meets at most linear work. Generated hostile requests (long
 * numbers, long and repeated headers, many keys, deep nesting, long runs of whitespace and
 * separators, mixed with ordinary draws; bodies up to and just past the size limit) each get the
 * answer lib/limits.ts calls for, never a 500, write nothing unless accepted, and block the event
 * loop for less than STALL_BUDGET_MS. Then: a caller refused by its token, or by a refusal this
 * instance already holds, costs no storage call and no read of its body.
 */
import { HttpRequest, InvocationContext, type HttpRequestInit } from '@azure/functions';
import fc from 'fast-check';
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { LIMITS } from '../../lib/limits';
import { DETAILS, type ErrorCode } from '../../lib/problem';
import { putPartner } from '../../dev/demoData';
import type { FaultProxy } from '../support/storageProxies';
import { contractViolations } from '../support/contract';
import { leastStall } from '../support/eventLoopStall';
import { Harness, draw, toReply, type Reply } from '../support/harness';

/**
 * The longest a request may block the event loop: 100 ms for bodies up to 256 KiB. The costliest text
 * (an element of some 20,000 keys, which JSON.parse builds before its count refuses it) takes about
 * 15 ms; quadratic work on text of the generated lengths stalls for seconds. (50 ms was once missed by
 * 1 ms, the least of five attempts, on a machine running two jest workers and a benchmark.)
 */
const STALL_BUDGET_MS = 100;
/** Runs per family of hostile input: the whole file takes about 25 s alone on a 2-core machine. */
const RUNS = 150;

let h: Harness;
let token: string; // a valid token of the seeded partner, for Authorization values built around it
/** Request ids of the 204s that wrote draws; no other request may have written a row. */
const accepted = new Set<string>();
/** The statuses the current family's first answers had. */
const statuses = new Set<number>();

beforeAll(async () => {
  h = await Harness.start();
  token = await h.token();
});
afterAll(() => h.stop());

// ---------------------------------------------------------------------------------------------
// What a request calls for

/** One element's verdict: accepted, a known error code at its index, a request-level 400, or either answer. */
/** `crowded`: more keys than the limit, refused with the other crowded elements before the body is parsed. */
type ElementVerdict = 'valid' | 'any' | 'request' | 'crowded' | ErrorCode;

type Expected =
  | { readonly kind: 'status'; readonly status: 204 | 401 }
  | { readonly kind: 'any' } // 204 or 400: the text alone does not say which
  | { readonly kind: 'rejected' } // 400, of one kind or another
  | { readonly kind: 'request'; readonly detail?: string } // one request-level Invalid Request
  | { readonly kind: 'elements'; readonly codes: ReadonlyMap<number, ErrorCode>; readonly valid: readonly number[]; readonly exact?: boolean };

const ANY: Expected = { kind: 'any' };
const REJECTED: Expected = { kind: 'rejected' };
const request = (detail?: string): Expected => ({ kind: 'request', detail });

/** An element of a batch; each is given a fresh loan of the partner, with credit for an ordinary draw. */
interface Piece {
  readonly label: string;
  render(loan: number): { text: string; verdict: ElementVerdict };
}

interface Body {
  readonly label: string;
  readonly loans: number;
  render(loans: readonly number[]): { text: string; expected: Expected };
}

/** Headers of a request; `pass` leaves the answer to the body. */
interface HeaderCase {
  readonly label: string;
  apply(token: string, unique: string): { headers: Record<string, string>; token?: null; verdict: 'pass' | Expected };
}

/** A request: fast-check prints its labels, not its (up to 256 KiB) text. */
interface Case {
  readonly body: Body;
  readonly header: HeaderCase;
}

function combine(verdicts: readonly ElementVerdict[]): Expected {
  const crowded = verdicts.flatMap((v, i) => (v === 'crowded' ? [i] : []));
  // Too deep is found first, crowded elements next, text that is not JSON last: which answers depends on the request-level fault.
  if (verdicts.includes('request')) return crowded.length > 0 ? REJECTED : request();
  if (crowded.length > 0) return { kind: 'elements', codes: new Map(crowded.map((i) => [i, 'InvalidRequest'])), valid: [], exact: true };
  const codes = new Map<number, ErrorCode>();
  verdicts.forEach((v, i) => v !== 'valid' && v !== 'any' && v !== 'request' && v !== 'crowded' && codes.set(i, v));
  const valid = verdicts.flatMap((v, i) => (v === 'valid' ? [i] : []));
  if (codes.size > 0) return { kind: 'elements', codes, valid };
  return valid.length === verdicts.length ? { kind: 'status', status: 204 } : ANY;
}

/** The first thing the handler checks decides: Authorization, Idempotency-Key or Content-Type, then the body's size, then the body. */
function expectedFor(header: 'pass' | Expected, bodyBytes: number, body: Expected): Expected {
  if (header !== 'pass') return header;
  return bodyBytes > LIMITS.bodyBytes ? request(DETAILS.tooLarge(LIMITS.bodyBytes)) : body;
}

function expectAnswer(reply: Reply, expected: Expected): void {
  switch (expected.kind) {
    case 'status':
      expect(reply.status).toBe(expected.status);
      return;
    case 'any':
      expect([204, 400]).toContain(reply.status);
      return;
    case 'rejected':
      expect(reply.status).toBe(400);
      return;
    case 'request':
      expect(reply.status).toBe(400);
      expect(reply.body.errors).toHaveLength(1);
      expect(reply.body.errors[0]).toMatchObject({ code: 'InvalidRequest', ...(expected.detail === undefined ? {} : { detail: expected.detail }) });
      expect(reply.body.errors[0].index).toBeUndefined();
      return;
    case 'elements': {
      expect(reply.status).toBe(400);
      const errors: { index?: number; code: string }[] = reply.body.errors;
      for (const [index, code] of expected.codes) expect(errors.find((e) => e.index === index)?.code).toBe(code);
      for (const index of expected.valid) expect(errors.find((e) => e.index === index)).toBeUndefined();
      if (expected.exact === true) expect(errors).toHaveLength(expected.codes.size);
    }
  }
}

/** Sends the case, measures its stall (see tests/support/eventLoopStall.ts) and checks the answer. */
async function check(c: Case): Promise<void> {
  const loans = await Promise.all(Array.from({ length: c.body.loans }, () => h.loan()));
  const { text, expected: fromBody } = c.body.render(loans);
  const { headers, token: bearer, verdict } = c.header.apply(token, randomUUID());
  const expected = expectedFor(verdict, Buffer.byteLength(text), fromBody);
  // The least of up to 5 runs: a neighbour's burst on a shared 2-core machine passes, linear-or-worse work on this text does not.
  const { results, stallMs } = await leastStall(() => h.post(text, { headers, token: bearer }), STALL_BUDGET_MS, 5);
  for (const reply of results) {
    expect(reply.status).not.toBe(500);
    if (reply.status === 204 && reply.headers['idempotent-replay'] === undefined) accepted.add(reply.headers['x-request-id']);
  }
  statuses.add(results[0].status);
  expect(stallMs).toBeLessThan(STALL_BUDGET_MS);
  expectAnswer(results[0], expected); // the later runs, if any, met what the first one wrote
}

// ---------------------------------------------------------------------------------------------
// Generators

/** 10 to `max` (at most 100,000), evenly on a log scale, shrinking towards 10. */
const logSize = (max = 100_000) => fc.integer({ min: 10, max: Math.floor(10 * Math.log10(max)) }).map((t) => Math.round(10 ** (t / 10)));
const repeatTo = (unit: string, length: number) => unit.repeat(Math.ceil(length / unit.length));

/** An element's text from its keys and their values' JSON texts, in order: keys may repeat, numbers stay as written. */
function elementText(fields: readonly (readonly [string, string])[], gap = ''): string {
  return `{${gap}${fields.map(([k, v]) => `${JSON.stringify(k)}${gap}:${gap}${v}`).join(`${gap},${gap}`)}${gap}}`;
}

/** An ordinary draw's fields (see harness `draw`), with `changes` (JSON texts) in place or added. */
function drawFields(loan: number, changes: Record<string, string> = {}): [string, string][] {
  return Object.entries({ ...Object.fromEntries(Object.entries(draw(loan)).map(([k, v]) => [k, JSON.stringify(v)])), ...changes });
}

const piece = (label: string, render: Piece['render']): Piece => ({ label, render });
const ORDINARY = piece('draw', (loan) => ({ text: elementText(drawFields(loan)), verdict: 'valid' }));

function batch(pieces: readonly Piece[], gap = ''): Body {
  return {
    label: `[${pieces.map((p) => p.label).join(', ')}]${gap === '' ? '' : ` spaced by ${gap.length} × ${JSON.stringify(gap[0])}`}`,
    loans: pieces.length,
    render(loans) {
      const rendered = pieces.map((p, i) => p.render(loans[i]));
      const text = `[${gap}${rendered.map((r) => r.text).join(`${gap},${gap}`)}${gap}]`;
      return { text, expected: combine(rendered.map((r) => r.verdict)) };
    },
  };
}

/** Hostile elements mixed with ordinary draws. */
const batchOf = (hostile: fc.Arbitrary<Piece>) =>
  fc.array(fc.oneof({ weight: 2, arbitrary: hostile }, { weight: 1, arbitrary: fc.constant(ORDINARY) }), { minLength: 1, maxLength: 5 }).map((p) => batch(p));

interface LongNumber {
  readonly label: string;
  /** JSON forbids leading zeros. */
  readonly valid: boolean;
  /** The number's text with this integer part. */
  text(integer: string): string;
}

/** 10 to 100,000 digits: as an integer, a fraction, an exponent or both; runs of zeros, with or without a digit after them. */
const longNumber: fc.Arbitrary<LongNumber> = fc
  .record({
    digits: logSize(),
    shape: fc.constantFrom('integer', 'fraction', 'exponent', 'fraction and exponent'),
    // Mostly zeros then a 1: what a trailing-zero strip anchored at the end backtracks over.
    fill: fc.oneof({ weight: 3, arbitrary: fc.constant('0') }, { weight: 1, arbitrary: fc.constant('7') }),
    last: fc.oneof({ weight: 2, arbitrary: fc.constant('1') }, { weight: 1, arbitrary: fc.constant('') }),
    lead: fc.oneof({ weight: 4, arbitrary: fc.constant('') }, { weight: 1, arbitrary: fc.constant('00') }),
  })
  .map(({ digits, shape, fill, last, lead }) => {
    const run = fill.repeat(digits) + last;
    const half = fill.repeat(Math.ceil(digits / 2)) + last;
    const tail = { integer: run, fraction: `.${run}`, exponent: `e${run}`, 'fraction and exponent': `.${half}e-${'0'.repeat(Math.floor(digits / 2))}2` }[shape];
    return {
      label: `${lead === '' ? '' : 'leading zeros, '}${shape} of ${digits} × ${fill}${last === '' ? '' : ' then 1'}`,
      valid: lead === '',
      text: (integer: string) => lead + integer + tail,
    };
  });

/**
 * A long number as the amount (twice as often: its decimals are counted on the text as written), the
 * loan number (its integer part the loan's), an ignored key's value, or the element itself.
 */
const numberPiece: fc.Arbitrary<Piece> = fc.tuple(fc.constantFrom('amount', 'amount', 'loanNumber', 'note', 'element'), longNumber).map(([field, n]) =>
  piece(`${field}: ${n.label}`, (loan) => {
    if (field === 'element') return { text: n.text('1'), verdict: n.valid ? 'InvalidRequest' : 'request' };
    const text = n.text(field === 'loanNumber' ? String(loan) : field === 'amount' ? '10' : '1');
    const tooLong = text.length > LIMITS.numberTextLength;
    const verdict = !n.valid ? 'request' : field === 'note' ? 'valid' : !tooLong ? 'any' : field === 'amount' ? 'InvalidAmount' : 'InvalidLoanNumber';
    return { text: elementText(drawFields(loan, { [field]: text })), verdict };
  }),
);

const numbersBody: fc.Arbitrary<Body> = fc.oneof(
  { weight: 4, arbitrary: batchOf(numberPiece) },
  { weight: 1, arbitrary: longNumber.map((n) => ({ label: `body: ${n.label}`, loans: 0, render: () => ({ text: n.text('1'), expected: request() }) })) },
);

/**
 * Letters as partners' systems send them: lower case, capitals (which keys fold), mixed, and non-ASCII
 * letters (look-alikes of field names' letters, a letter whose case changes its length, a title-case
 * digraph and the Kelvin sign, which Unicode lower-cases to an ASCII `k`).
 */
const LETTER_CASES = ['lower case', 'capitals', 'mixed case', 'non-ASCII'] as const;
type LetterCase = (typeof LETTER_CASES)[number];
const NON_ASCII: Record<string, string> = { a: 'а', o: 'ö', e: 'É', s: 'ß', k: '\u212A', d: 'ǅ', x: 'Ｘ' };
function inCase(letters: LetterCase, text: string): string {
  if (letters === 'capitals') return text.toUpperCase();
  if (letters === 'mixed case') return [...text].map((c, i) => (i % 2 === 0 ? c.toUpperCase() : c)).join('');
  if (letters === 'non-ASCII') return text.replace(/[aoeskdx]/g, (c) => NON_ASCII[c]);
  return text;
}
/** Runs of letters in keys and values: capitals, alternating case, non-ASCII letters. */
const LETTERS = ['A', 'aB', 'É', 'ǅ', '\u212A'];

/** Keys beside the three fields: distinct, one key repeated, keys of separators, or all in one nested object (held to the same limit). */
const keysPiece: fc.Arbitrary<Piece> = fc
  .record({
    count: fc.oneof(fc.integer({ min: LIMITS.keysPerObject - 8, max: LIMITS.keysPerObject + 2 }), logSize(30_000)),
    form: fc.constantFrom('distinct', 'repeated', 'separators', 'nested'),
    first: fc.boolean(),
    letters: fc.constantFrom(...LETTER_CASES),
  })
  .map(({ count, form, first, letters }) =>
    piece(`${count} ${form} keys in ${letters}${first ? ' first' : ''}`, (loan) => {
      const keys = Array.from({ length: count }, (_, i) =>
        inCase(letters, form === 'repeated' ? 'x' : form === 'separators' ? `,:${i.toString(36)}` : `k${i.toString(36)}`),
      );
      const extra: [string, string][] = form === 'nested' ? [['x', elementText(keys.map((k) => [k, '0']))]] : keys.map((k) => [k, '0']);
      const fields = first ? [...extra, ...drawFields(loan)] : [...drawFields(loan), ...extra];
      const verdict = (form === 'nested' ? count : fields.length) > LIMITS.keysPerObject ? 'crowded' : 'valid';
      return { text: elementText(fields), verdict };
    }),
  );

/** A draw whose field names are in capitals or mixed case (the same fields), or spelled with non-ASCII look-alikes (none of them). */
const fieldNamesPiece: fc.Arbitrary<Piece> = fc.constantFrom(...LETTER_CASES).map((letters) =>
  piece(`field names in ${letters}`, (loan) => ({
    text: elementText(drawFields(loan).map(([k, v]) => [inCase(letters, k), v])),
    verdict: letters === 'non-ASCII' ? 'InvalidRequest' : 'valid', // the requestor is missing: element shape
  })),
);

/** The array is level 1 and an element level 2. */
const depthPiece: fc.Arbitrary<Piece> = fc
  .tuple(fc.constantFrom('array value', 'object value', 'array element', 'unclosed'), fc.oneof(fc.integer({ min: 26, max: 34 }), logSize()))
  .map(([form, levels]) =>
    piece(`${form} ${levels} deep`, (loan) => {
      // Object levels take 6 bytes each: past 40,000 they would only test the size limit.
      const m = form === 'object value' ? Math.min(levels, 40_000) : levels;
      switch (form) {
        case 'array value':
        case 'object value': {
          const value = form === 'array value' ? '['.repeat(m) + ']'.repeat(m) : `${'{"a":'.repeat(m)}0${'}'.repeat(m)}`;
          return { text: elementText(drawFields(loan, { x: value })), verdict: 2 + m > LIMITS.nestingDepth ? 'request' : 'valid' };
        }
        case 'array element':
          return { text: '['.repeat(m) + ']'.repeat(m), verdict: 1 + m > LIMITS.nestingDepth ? 'request' : 'InvalidRequest' };
        default:
          return { text: '['.repeat(m), verdict: 'request' };
      }
    }),
  );

const WHITESPACE = [' ', '\t', '\n', '\r\n', ' \t'];
const whitespace = (max: number) => fc.tuple(fc.constantFrom(...WHITESPACE), logSize(max)).map(([unit, n]) => repeatTo(unit, n));
const SEPARATORS = [',', ':', ', ', ': ', ',:', ' , '];

/** Whitespace between every token of a draw; separators in its requestor, an ignored value or an ignored key. */
const spacingPiece: fc.Arbitrary<Piece> = fc.oneof(
  whitespace(30_000).map((gap) => piece(`draw spaced by ${gap.length}`, (loan) => ({ text: elementText(drawFields(loan), gap), verdict: 'valid' }))),
  fc.tuple(fc.constantFrom('requestor', 'note', 'key'), fc.constantFrom(...SEPARATORS, ...LETTERS), logSize(250_000)).map(([where, unit, n]) =>
    piece(`${n} × ${JSON.stringify(unit)} in ${where}`, (loan) => {
      const run = `jane${repeatTo(unit, n)}doe`;
      if (where === 'key') return { text: elementText([...drawFields(loan), [run, '0']]), verdict: 'valid' };
      const verdict = where === 'note' || run.trim().length <= 256 ? 'valid' : 'InvalidRequest'; // requestor: 1 to 256 characters
      return { text: elementText(drawFields(loan, { [where]: JSON.stringify(run) })), verdict };
    }),
  ),
);

/**
 * A few ordinary draws padded with whitespace to a few bytes under, at or just past the size limit. A few:
 * storage calls for a full batch of 100 block the loop for 50–100 ms here by themselves, whatever the text.
 */
const nearLimit: fc.Arbitrary<Body> = fc
  .record({ count: fc.integer({ min: 1, max: 10 }), over: fc.integer({ min: -16, max: 4 }), unit: fc.constantFrom(...WHITESPACE) })
  .map(({ count, over, unit }) => ({
    label: `${count} draws padded to ${over} bytes past the limit with ${JSON.stringify(unit)}`,
    loans: count,
    render(loans) {
      const draws = loans.map((l) => elementText(drawFields(l))).join(',');
      const text = `[${repeatTo(unit, LIMITS.bodyBytes).slice(0, LIMITS.bodyBytes + over - draws.length - 2)}${draws}]`;
      return { text, expected: over > 0 ? request(DETAILS.tooLarge(LIMITS.bodyBytes)) : { kind: 'status', status: 204 } };
    },
  }));

/** One draw with a key (ignored) or requestor of letters filling the body to a few bytes under, at or past the size limit. */
const longLetters: fc.Arbitrary<Body> = fc
  .record({ where: fc.constantFrom('key', 'requestor', 'note'), unit: fc.constantFrom(...LETTERS), over: fc.integer({ min: -16, max: 4 }) })
  .map(({ where, unit, over }) => ({
    label: `a ${where} of ${JSON.stringify(unit)} to ${over} bytes past the limit`,
    loans: 1,
    render([loan]) {
      const withRun = (run: string) =>
        `[${elementText(where === 'key' ? [...drawFields(loan), [run, '0']] : drawFields(loan, { [where]: JSON.stringify(run) }))}]`;
      const room = LIMITS.bodyBytes + over - Buffer.byteLength(withRun(''));
      // As many characters of the unit as fill the room in UTF-8 (a unit may take 2 or 3 bytes a character).
      const length = Math.floor((room * unit.length) / Buffer.byteLength(unit));
      const text = withRun(repeatTo(unit, length).slice(0, length));
      const verdict: Expected =
        where === 'requestor' ? { kind: 'elements', codes: new Map([[0, 'InvalidRequest']]), valid: [] } : { kind: 'status', status: 204 };
      return { text, expected: Buffer.byteLength(text) > LIMITS.bodyBytes ? request(DETAILS.tooLarge(LIMITS.bodyBytes)) : verdict };
    },
  }));

const spacingBody: fc.Arbitrary<Body> = fc.oneof(
  { weight: 3, arbitrary: batchOf(spacingPiece) },
  { weight: 1, arbitrary: fc.tuple(fc.array(spacingPiece, { minLength: 1, maxLength: 3 }), whitespace(50_000)).map(([p, gap]) => batch(p, gap)) },
  { weight: 1, arbitrary: nearLimit },
  { weight: 1, arbitrary: longLetters },
);

const ORDINARY_HEADERS: HeaderCase = { label: 'ordinary headers', apply: () => ({ headers: {}, verdict: 'pass' }) };
const header = (label: string, apply: HeaderCase['apply']): HeaderCase => ({ label, apply });

/** `application/json` followed by a long run of separators, spaces, tabs or parameters, and something after it. */
const contentType: fc.Arbitrary<HeaderCase> = fc
  .record({
    base: fc.constantFrom('application/json', 'application/json; charset=utf-8', 'APPLICATION/JSON', 'Application/Json; Charset=UTF-8'),
    unit: fc.constantFrom(';', ' ', '\t', '; ', ';\t', ' ;', '; a=b', '; charset=utf-8', ',', ':', '; CHARSET=UTF-8', 'A', 'É', '; É=ß'),
    length: fc.oneof(fc.integer({ min: 1, max: LIMITS.contentTypeLength }), logSize()), // half of them about the limit
    tail: fc.constantFrom('', 'x', 'charset=utf-8', '; charset=utf-8', '=', ','),
  })
  .map(({ base, unit, length, tail }) => {
    const value = base + repeatTo(unit, length) + tail;
    // A header's surrounding whitespace is not part of its value.
    const verdict = value.trim().length > LIMITS.contentTypeLength ? request(DETAILS.contentType) : ANY;
    return header(`Content-Type: ${base} + ${length} × ${JSON.stringify(unit)} + ${JSON.stringify(tail)}`, () => ({
      headers: { 'content-type': value },
      verdict,
    }));
  });

const REFUSED: Expected = { kind: 'status', status: 401 };
const spacesAndTabs = fc.tuple(fc.constantFrom(' ', '\t', ' \t'), logSize()).map(([unit, n]) => repeatTo(unit, n));
const bearer = (label: string, value: (token: string) => string, refused: (value: string) => boolean = () => true) =>
  header(`Authorization: ${label}`, (t) => {
    const v = value(t);
    return { headers: { authorization: v }, token: null, verdict: refused(v) ? REFUSED : 'pass' };
  });

/** Long runs of spaces and tabs, long tokens, `Bearer` again and again: refused, unless a valid token is within the length limit. */
const authorization: fc.Arbitrary<HeaderCase> = fc.oneof(
  fc.tuple(fc.constantFrom('Bearer', 'BEARER', 'bEaReR'), spacesAndTabs).map(([scheme, run]) =>
    bearer(
      `${scheme}, ${run.length} spaces/tabs, a valid token`,
      (t) => `${scheme}${run}${t}`,
      (v) => v.length > LIMITS.authorizationLength,
    ),
  ),
  spacesAndTabs.map((run) => bearer(`Bearer and ${run.length} spaces/tabs`, () => `Bearer${run}`)),
  fc.integer({ min: 2, max: 2_000 }).map((k) => bearer(`${k} × Bearer, a valid token`, (t) => `${'Bearer '.repeat(k)}${t}`)),
  fc.integer({ min: 2, max: 20 }).map((k) => bearer(`${k} × Bearer and a valid token, comma-separated`, (t) => Array(k).fill(`Bearer ${t}`).join(', '))),
  fc
    .tuple(fc.constantFrom(...SEPARATORS), logSize())
    .map(([unit, n]) => bearer(`a valid token and ${n} × ${JSON.stringify(unit)}`, (t) => `Bearer ${t}${repeatTo(unit, n)}`)),
  fc
    .tuple(fc.constantFrom('A', 'aB', 'É', 'ÿß'), logSize())
    .map(([unit, n]) => bearer(`a ${n}-character token of ${unit}`, () => `Bearer ${repeatTo(unit, n)}`)),
  logSize().map((n) => bearer(`a JWT of three ${n}-character parts`, () => `Bearer eyJ${'A'.repeat(n)}.${'B'.repeat(n)}.${'C'.repeat(n)}`)),
);

/** A key unique to the request followed by a long run; or that key again and again, as a repeated header arrives. */
const idempotencyKey: fc.Arbitrary<HeaderCase> = fc
  .oneof(
    fc
      .tuple(
        fc.constantFrom('k', ',', ':', ',:', ' ', '\t', ', ', 'K', 'aB', 'É', 'ß'),
        fc.oneof(fc.integer({ min: 1, max: LIMITS.idempotencyKeyLength }), logSize()),
      )
      .map(([unit, n]) => [`key + ${n} × ${JSON.stringify(unit)}`, (u: string) => `${u}${repeatTo(unit, n)}x`] as const),
    fc.integer({ min: 1, max: 3_000 }).map((k) => [`${k} × key, comma-separated`, (u: string) => Array(k).fill(u).join(', ')] as const),
  )
  .map(([label, value]) =>
    header(`Idempotency-Key: ${label}`, (_t, unique) => {
      const key = value(unique);
      const valid = key.length <= LIMITS.idempotencyKeyLength && /^[\x21-\x7E]+$/.test(key);
      return { headers: { 'idempotency-key': key }, verdict: valid ? 'pass' : request(DETAILS.idempotencyKeyForm) };
    }),
  );

const depthBody = batchOf(depthPiece);
const keysBody = batchOf(fc.oneof(keysPiece, fieldNamesPiece));
const anyBody = fc.oneof(numbersBody, keysBody, depthBody, spacingBody);

function cases(body: fc.Arbitrary<Body>, headers: fc.Arbitrary<HeaderCase> = fc.constant(ORDINARY_HEADERS)): fc.Arbitrary<Case> {
  return fc.tuple(body, headers).map(([b, hd]) => ({ body: b, header: hd, [fc.toStringMethod]: () => `${hd.label}; ${b.label}` }));
}

// ---------------------------------------------------------------------------------------------
// Properties

test.each<[string, fc.Arbitrary<Case>]>([
  ['long numbers in amount, loanNumber, ignored keys and as the body', cases(numbersBody)],
  ['many keys in an element', cases(keysBody)],
  ['deep nesting', cases(depthBody)],
  ['long runs of whitespace and separators; bodies at and just past the size limit', cases(spacingBody)],
  ['long and repeated Content-Type', cases(anyBody, contentType)],
  ['long and repeated Authorization', cases(anyBody, authorization)],
  ['long and repeated Idempotency-Key', cases(anyBody, idempotencyKey)],
])(
  '%s: the expected answer, never a 500, nothing written unless accepted, a short stall',
  async (_family, arbitrary) => {
    statuses.clear();
    // A failure is reported as found, not shrunk: each shrinking step would replay a stall of seconds.
    await fc.assert(fc.asyncProperty(arbitrary, check), { numRuns: RUNS, endOnFailure: true });
    expect(statuses.size).toBeGreaterThan(1); // the generators reach past the first check
    const strays = (await h.draws()).filter((row) => !accepted.has(row.RequestId as string));
    expect(strays).toEqual([]);
  },
  120_000,
);

// ---------------------------------------------------------------------------------------------
// Refused callers

/** The handler's answer to a request built here rather than by `h.post`. */
async function invoke(request: HttpRequest): Promise<Reply> {
  const context = new InvocationContext({ invocationId: randomUUID(), functionName: 'DrawRequest', logHandler: () => undefined });
  const reply = toReply(await h.handler(request, context));
  expect(contractViolations(reply)).toEqual([]);
  return reply;
}

/** A request whose body is a stream, as the Functions host hands one over when it streams bodies. */
function streamed(bearerToken: string, body: ReadableStream<Uint8Array>): HttpRequest {
  const nativeRequest = new Request('http://localhost/DrawRequest', {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${bearerToken}` },
    body,
    duplex: 'half',
  });
  return new HttpRequest({ nativeRequest } as unknown as HttpRequestInit); // `nativeRequest` is the library's own, undeclared
}

describe('refused callers', () => {
  let proxy: FaultProxy;
  const UNKNOWN = 'unknown-app';
  const INACTIVE = 'inactive-app';
  beforeAll(async () => {
    await putPartner(h.table('partners'), { clientId: INACTIVE, partnerId: 'PARTNER-Z', active: false });
    proxy = await h.behindProxy(); // storage only through the proxy; an empty partner cache
  });
  const storageCalls = () => ({ ...proxy.counts });

  test.each([
    ['an unknown client', UNKNOWN],
    ['an inactive partner', INACTIVE],
  ])(
    '%s: refused once from storage, then with no storage call whatever it sends',
    async (_name, clientId) => {
      const bearerToken = await h.token({ azp: clientId, sub: clientId });
      const before = storageCalls();
      // `[]` names no loan: only the client's Partners and stop-list rows are read, in one round
      expect((await h.post([], { token: bearerToken })).status).toBe(401);
      expect(storageCalls()).toEqual({ ...before, reads: before.reads + 2 });

      const loan = await h.loan(); // seeded directly, not through the proxy
      const refused = storageCalls();
      const requests: [string | Buffer | unknown[], Record<string, string>][] = [
        [[draw(loan)], {}],
        [[draw(loan)], { 'idempotency-key': randomUUID() }],
        ['not JSON', {}], // a 400 if it were read
        [`[{"loanNumber":${loan},"requestor":"jane","amount":1.${'0'.repeat(20_000)}1}]`, {}],
        ['['.repeat(100_000), {}],
        [Buffer.alloc(LIMITS.bodyBytes + 1, ' '), {}],
        [[draw(loan)], { 'content-type': `application/json${';'.repeat(50_000)}x` }],
      ];
      for (const [body, headers] of requests) expect((await h.post(body, { token: bearerToken, headers })).status).toBe(401);
      expect(storageCalls()).toEqual(refused);
    },
    60_000,
  );

  test('a refused caller’s body is never read: 401 while its stream is still open, or after it failed', async () => {
    const callers = [
      ['a client refused before', await h.token({ azp: UNKNOWN, sub: UNKNOWN })],
      ['an expired token', await h.token({}, -3600)],
      ['a malformed token', 'not-a-jwt'],
    ] as const;
    expect((await h.post([], { token: callers[0][1] })).status).toBe(401); // the refusal is held
    const before = storageCalls();
    for (const [caller, bearerToken] of callers) {
      for (const failing of [false, true]) {
        let controller: ReadableStreamDefaultController<Uint8Array> | undefined;
        const body = new ReadableStream<Uint8Array>({
          start: (c) => {
            controller = c;
            c.enqueue(Buffer.from('[{"loanNumber":'));
          },
          pull: (c) => (failing ? c.error(new Error('connection reset')) : undefined), // else: the body never ends
        });
        const request = streamed(bearerToken, body);
        const reply = await Promise.race([invoke(request), sleep(2_000, 'no answer within 2 s', { ref: false })]);
        const seen = { caller, stream: failing ? 'failing' : 'endless', answer: typeof reply === 'string' ? reply : reply.status, bodyRead: request.bodyUsed };
        expect(seen).toEqual({ caller, stream: seen.stream, answer: 401, bodyRead: false });
        controller?.error(new Error('test over')); // frees a reader left waiting, if any
      }
    }
    expect(storageCalls()).toEqual(before);
  });
});
