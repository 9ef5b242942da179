import Ajv from 'ajv';
import fc from 'fast-check';
import { canonicalLoanNumber, decimalPlaces } from '../../lib/elementChecks';
import { ELEMENT_SCHEMA } from '../../lib/elementSchema';
import { fieldOfKey, isJsonContentType, parseDrawRequests, readDrawRequests, type BodyResult, type BodySource } from '../../lib/requestBody';
import { DETAILS, ERROR_NAMES, type ElementError } from '../../lib/problem';
import { LIMITS } from '../../lib/limits';

const VALID = { loanNumber: 1, requestor: 'a', amount: 5 };

const parseJson = (value: unknown, max = 100): BodyResult => parseDrawRequests(Buffer.from(JSON.stringify(value)), max);
const parseText = (text: string, max = 100): BodyResult => parseDrawRequests(Buffer.from(text, 'utf8'), max);

/** One-element body from raw JSON snippets for each field (undefined = key absent). */
function elementText(fields: { loanNumber?: string; requestor?: string; amount?: string }): string {
  const parts: string[] = [];
  if (fields.loanNumber !== undefined) parts.push(`"loanNumber":${fields.loanNumber}`);
  if (fields.requestor !== undefined) parts.push(`"requestor":${fields.requestor}`);
  if (fields.amount !== undefined) parts.push(`"amount":${fields.amount}`);
  return `[{${parts.join(',')}}]`;
}

const requestLevel = (detail: string): BodyResult => ({ ok: false, errors: [{ code: 'InvalidRequest', detail }] });
const oneElementError = (error: ElementError, batchSize = 1): BodyResult => ({ ok: false, errors: [error], batchSize });

describe('parseDrawRequests: request-level errors (no index)', () => {
  const validElement = JSON.stringify(VALID);

  /** A valid one-element body padded with spaces to exactly `bytes` bytes. */
  function paddedBody(bytes: number): Buffer {
    const head = `[${validElement}`;
    const body = Buffer.from(head + ' '.repeat(bytes - head.length - 1) + ']');
    expect(body.byteLength).toBe(bytes);
    return body;
  }

  test('the body limit is 256 KiB', () => {
    expect(LIMITS.bodyBytes).toBe(262144);
  });

  test('a body of exactly 262144 bytes is parsed', () => {
    const result = parseDrawRequests(paddedBody(262144), 100);
    expect(result.ok).toBe(true);
    if (result.ok) expect(result.requests).toHaveLength(1);
  });

  test('a body of 262145 bytes is rejected as too large', () => {
    expect(parseDrawRequests(paddedBody(262145), 100)).toStrictEqual(requestLevel(DETAILS.tooLarge(262144)));
    expect(DETAILS.tooLarge(262144)).toBe('the request body must be at most 262144 bytes');
  });

  test.each([
    ['a lone 0xFF byte inside a string', [0xff]],
    ['an overlong encoding of "/"', [0xc0, 0xaf]],
    ['a truncated 3-byte sequence', [0xe2, 0x82]],
    ['an encoded surrogate (CESU)', [0xed, 0xa0, 0x80]],
  ])('invalid UTF-8 (%s) → unreadable', (_name, bytes) => {
    const body = Buffer.concat([Buffer.from('[{"loanNumber":1,"requestor":"'), Buffer.from(bytes), Buffer.from('","amount":5}]')]);
    expect(parseDrawRequests(body, 100)).toStrictEqual(requestLevel(DETAILS.unreadable));
  });

  test.each([[''], ['['], ['[{"loanNumber":1'], ['undefined'], ['[1,]'], ['NaN'], ["[{'amount':1}]"], ['[] []']])('not JSON %p → notJson', (text) => {
    expect(parseText(text)).toStrictEqual(requestLevel(DETAILS.notJson));
  });

  test.each([['{}'], ['{"loanNumber":1,"requestor":"a","amount":5}'], ['"[]"'], ['5'], ['null'], ['true']])(
    'JSON that is not an array %p → notArray',
    (text) => {
      expect(parseText(text)).toStrictEqual(requestLevel(DETAILS.notArray));
    },
  );

  test('an empty array → batch size error', () => {
    expect(parseText('[]')).toStrictEqual(requestLevel(DETAILS.batchSize(100)));
    expect(DETAILS.batchSize(100)).toBe('the request body must be an array of 1 to 100 draw requests');
  });

  test.each([
    [100, 101],
    [3, 4],
    [1, 2],
  ])('with maxBatchSize %i, %i elements → batch size error naming the limit', (max, count) => {
    const body = Array.from({ length: count }, (_, i) => ({ ...VALID, loanNumber: i + 1 }));
    expect(parseJson(body, max)).toStrictEqual(requestLevel(DETAILS.batchSize(max)));
  });

  test.each([
    [100, 100],
    [3, 3],
    [1, 1],
  ])('with maxBatchSize %i, %i elements are accepted', (max, count) => {
    const body = Array.from({ length: count }, (_, i) => ({ ...VALID, loanNumber: i + 1 }));
    const result = parseJson(body, max);
    expect(result.ok).toBe(true);
    if (result.ok) expect(result.requests.map((r) => r.index)).toStrictEqual(body.map((_, i) => i));
  });

  test('the batch size limit is checked before the elements (101 invalid elements → one request-level error)', () => {
    expect(
      parseJson(
        Array.from({ length: 101 }, () => null),
        100,
      ),
    ).toStrictEqual(requestLevel(DETAILS.batchSize(100)));
  });

  test('a leading UTF-8 BOM is accepted', () => {
    const body = Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(JSON.stringify([VALID]))]);
    expect(parseDrawRequests(body, 100)).toStrictEqual({
      ok: true,
      requests: [{ index: 0, loanNumber: 1, requestor: 'a', amount: 5, amountCents: 500, pointers: { loanNumber: '/0/loanNumber', amount: '/0/amount' } }],
    });
  });

  test('surrounding whitespace is accepted', () => {
    expect(parseText(`\n\t ${JSON.stringify([VALID])} \r\n`).ok).toBe(true);
  });
});

describe('parseDrawRequests: valid elements', () => {
  test('returns canonical requests with index, trimmed requestor, cents and pointers', () => {
    const result = parseText('[{"loanNumber":"0042","requestor":"  Jane Doe\\n","amount":100.25},{"loanNumber":7,"requestor":"Bob","amount":1}]');
    expect(result).toStrictEqual({
      ok: true,
      requests: [
        { index: 0, loanNumber: 42, requestor: 'Jane Doe', amount: 100.25, amountCents: 10025, pointers: { loanNumber: '/0/loanNumber', amount: '/0/amount' } },
        { index: 1, loanNumber: 7, requestor: 'Bob', amount: 1, amountCents: 100, pointers: { loanNumber: '/1/loanNumber', amount: '/1/amount' } },
      ],
    });
  });

  test('unknown keys are ignored and do not appear on the result', () => {
    const result = parseText('[{"loanNumber":1,"requestor":"a","amount":5,"status":"Approved","partnerId":"evil","amountCents":1}]');
    expect(result).toStrictEqual({
      ok: true,
      requests: [{ index: 0, loanNumber: 1, requestor: 'a', amount: 5, amountCents: 500, pointers: { loanNumber: '/0/loanNumber', amount: '/0/amount' } }],
    });
  });
});

describe('parseDrawRequests: element shape', () => {
  test.each([
    ['null', null],
    ['an array', [VALID]],
    ['a string', 'x'],
    ['a number', 5],
    ['a boolean', true],
  ])('element that is %s → Invalid Request pointing at the element', (_name, element) => {
    expect(parseJson([VALID, element])).toStrictEqual(oneElementError({ index: 1, code: 'InvalidRequest', pointer: '/1', detail: DETAILS.notObject }, 2));
  });

  test.each([
    ['loanNumber', { requestor: 'a', amount: 5 }, undefined],
    ['requestor', { loanNumber: 1, amount: 5 }, 1],
    ['amount', { loanNumber: 1, requestor: 'a' }, 1],
  ])('missing %s → Invalid Request with pointer /0/<field> and "missing" detail', (field, element, loanNumber) => {
    const error: ElementError = {
      index: 0,
      ...(loanNumber === undefined ? {} : { loanNumber }),
      code: 'InvalidRequest',
      pointer: `/0/${field}`,
      detail: DETAILS.missing(field),
    };
    expect(parseJson([element])).toStrictEqual(oneElementError(error));
    expect(DETAILS.missing(field)).toBe(`${field} is required`);
  });

  test('an empty object → the first missing field in field order (loanNumber)', () => {
    expect(parseJson([{}])).toStrictEqual(
      oneElementError({ index: 0, code: 'InvalidRequest', pointer: '/0/loanNumber', detail: DETAILS.missing('loanNumber') }),
    );
  });

  test.each([
    ['plain', 'a', 'a'],
    ['trimmed', '  Jane  ', 'Jane'],
    ['trimmed of tabs and newlines', '\t\nJane\r\n', 'Jane'],
    ['256 chars', 'x'.repeat(256), 'x'.repeat(256)],
    ['256 chars after trimming 257+ raw chars', `   ${'x'.repeat(256)}\n\t`, 'x'.repeat(256)],
    ['256 emoji (512 UTF-16 units, 256 characters)', '😀'.repeat(256), '😀'.repeat(256)],
    ['non-ASCII letters', 'Jöhn Dœ 山田', 'Jöhn Dœ 山田'],
    ['inner spaces', 'a  b', 'a  b'],
  ])('requestor %s is accepted as its trimmed value', (_name, requestor, canonical) => {
    const result = parseJson([{ ...VALID, requestor }]);
    expect(result.ok).toBe(true);
    if (result.ok) expect(result.requests[0].requestor).toBe(canonical);
  });

  test.each([
    ['empty', ''],
    ['whitespace only', '   '],
    ['tabs/newlines only', '\t\r\n'],
    ['257 chars', 'x'.repeat(257)],
    ['257 emoji', '😀'.repeat(257)],
    ['BEL inside', 'a\u0007b'],
    ['NEL (U+0085) inside', 'a\u0085b'],
    ['NEL at the end (not whitespace, not trimmed)', 'ab\u0085'],
    ['TAB inside', 'a\tb'],
    ['newline inside', 'a\nb'],
    ['NUL inside', 'a\u0000b'],
    ['DEL', 'a\u007f'],
    ['a lone high surrogate', 'a\ud800'],
    ['a lone low surrogate inside', 'a\udc00b'],
    ['a number', 5],
    ['null', null],
    ['a boolean', true],
    ['an array', ['a']],
    ['an object', { name: 'a' }],
  ])('requestor %s → Invalid Request (with the usable loanNumber)', (_name, requestor) => {
    expect(parseJson([{ ...VALID, requestor }])).toStrictEqual(
      oneElementError({ index: 0, loanNumber: 1, code: 'InvalidRequest', pointer: '/0/requestor', detail: DETAILS.requestor }),
    );
  });

  test('requestor with a lone surrogate sent as a JSON escape → Invalid Request', () => {
    expect(parseText('[{"loanNumber":1,"requestor":"ab\\udfff","amount":5}]')).toStrictEqual(
      oneElementError({ index: 0, loanNumber: 1, code: 'InvalidRequest', pointer: '/0/requestor', detail: DETAILS.requestor }),
    );
  });
});

describe('parseDrawRequests: loan number form', () => {
  test.each([
    ['1', 1],
    ['"1"', 1],
    ['"0001"', 1],
    ['"0000000000000001"', 1],
    ['"1234567890123456"', 1234567890123456],
    ['"9007199254740991"', 9007199254740991],
    ['9007199254740991', 9007199254740991],
    ['1e3', 1000],
    ['1.0', 1],
    ['"0042"', 42],
  ])('loanNumber %s → %p', (json, canonical) => {
    const result = parseText(elementText({ loanNumber: json, requestor: '"a"', amount: '5' }));
    expect(result.ok).toBe(true);
    if (result.ok) expect(result.requests[0].loanNumber).toBe(canonical);
  });

  test.each([
    ['"00000000000000001"'],
    ['"12345678901234567"'],
    ['"9007199254740992"'],
    ['9007199254740992'],
    ['0'],
    ['"0"'],
    ['"0000"'],
    ['-1'],
    ['"-1"'],
    ['1.5'],
    ['"1.0"'],
    ['" 1"'],
    ['"1 "'],
    ['""'],
    ['"1e3"'],
    ['"+1"'],
    ['"0x1"'],
    ['"١"'],
    ['"１"'],
    ['1e400'],
    ['true'],
    ['null'],
    ['{}'],
    ['[1]'],
  ])('loanNumber %s → Invalid Loan Number without a loanNumber field', (json) => {
    expect(parseText(elementText({ loanNumber: json, requestor: '"a"', amount: '5' }))).toStrictEqual(
      oneElementError({ index: 0, code: 'InvalidLoanNumber', pointer: '/0/loanNumber', detail: DETAILS.loanNumberFormat }),
    );
  });
});

describe('parseDrawRequests: amount form', () => {
  test.each([
    ['1', 1, 100],
    ['1.00', 1, 100],
    ['1.5', 1.5, 150],
    ['100.25', 100.25, 10025],
    ['1.13', 1.13, 113],
    ['19.99', 19.99, 1999],
    ['4.35', 4.35, 435],
    ['1.01', 1.01, 101],
    ['0.0101e2', 1.01, 101],
    ['1.5e2', 150, 15000],
    ['12345678.9', 12345678.9, 1234567890],
    ['1e21', 1e21, 1e23],
  ])('amount %s → amount %p, amountCents %p', (json, amount, cents) => {
    const result = parseText(elementText({ loanNumber: '1', requestor: '"a"', amount: json }));
    expect(result.ok).toBe(true);
    if (result.ok) {
      expect(result.requests[0].amount).toBe(amount);
      expect(result.requests[0].amountCents).toBe(cents);
      expect(result.requests[0].amountCents).toBe(Math.round(amount * 100));
    }
  });

  test.each([
    ['0.99'],
    ['0'],
    ['-0'],
    ['-1'],
    ['100.255'],
    ['1.001'],
    ['1e-7'],
    ['0.30000000000000004'],
    ['3.3000000000000003'],
    ['"100"'],
    ['"1.00"'],
    ['null'],
    ['true'],
    ['1e400'],
    ['-1e400'],
    ['[5]'],
    ['{}'],
  ])('amount %s → Invalid Amount with the usable loanNumber', (json) => {
    expect(parseText(elementText({ loanNumber: '1', requestor: '"a"', amount: json }))).toStrictEqual(
      oneElementError({ index: 0, loanNumber: 1, code: 'InvalidAmount', pointer: '/0/amount', detail: DETAILS.amountFormat }),
    );
  });

  test('amount given as 0.1+0.2 computed in JS is rejected', () => {
    expect(parseJson([{ ...VALID, amount: 0.1 + 0.2 }])).toStrictEqual(
      oneElementError({ index: 0, loanNumber: 1, code: 'InvalidAmount', pointer: '/0/amount', detail: DETAILS.amountFormat }),
    );
  });
});

describe('parseDrawRequests: precedence of the rules on the element alone, inside an element', () => {
  test.each([
    [
      'missing requestor beats bad loanNumber and bad amount',
      { loanNumber: '"x"', amount: '0' },
      { index: 0, code: 'InvalidRequest', pointer: '/0/requestor', detail: DETAILS.missing('requestor') },
    ],
    [
      'invalid requestor beats bad loanNumber',
      { loanNumber: '"x"', requestor: '""', amount: '5' },
      { index: 0, code: 'InvalidRequest', pointer: '/0/requestor', detail: DETAILS.requestor },
    ],
    [
      'missing amount (element shape) beats bad loanNumber (loan number form)',
      { loanNumber: '0', requestor: '"a"' },
      { index: 0, code: 'InvalidRequest', pointer: '/0/amount', detail: DETAILS.missing('amount') },
    ],
    [
      'missing loanNumber beats invalid requestor (field order within element shape)',
      { requestor: '5', amount: '5' },
      { index: 0, code: 'InvalidRequest', pointer: '/0/loanNumber', detail: DETAILS.missing('loanNumber') },
    ],
    [
      'bad loanNumber beats bad amount',
      { loanNumber: '-3', requestor: '"a"', amount: '0.5' },
      { index: 0, code: 'InvalidLoanNumber', pointer: '/0/loanNumber', detail: DETAILS.loanNumberFormat },
    ],
    [
      'invalid requestor beats bad amount and keeps the usable loanNumber',
      { loanNumber: '"0009"', requestor: '"a\\u0007"', amount: '0.5' },
      { index: 0, loanNumber: 9, code: 'InvalidRequest', pointer: '/0/requestor', detail: DETAILS.requestor },
    ],
  ] as [string, Parameters<typeof elementText>[0], ElementError][])('%s', (_name, fields, error) => {
    expect(parseText(elementText(fields))).toStrictEqual(oneElementError(error));
  });
});

describe('fieldOfKey: ASCII case folding, constant work per key', () => {
  /** What folding means: every ASCII capital lowered, nothing else touched (the former per-capital callback). */
  const FOLDED = new Map([
    ['loannumber', 'loanNumber'],
    ['requestor', 'requestor'],
    ['amount', 'amount'],
  ]);
  const reference = (key: string) => FOLDED.get(key.replace(/[A-Z]/g, (c) => c.toLowerCase()));
  /** A field name with each letter kept, upper-cased or swapped for a look-alike, and maybe something after it. */
  const LOOK_ALIKE: Record<string, string> = { a: 'а', o: 'о', e: 'е', r: 'г', s: 'ſ', u: 'υ', m: 'ｍ', N: 'Ν', k: '\u212A' };
  const nearName = fc
    .tuple(fc.constantFrom('loanNumber', 'requestor', 'amount'), fc.array(fc.constantFrom('keep', 'upper', 'lower', 'look'), { minLength: 10, maxLength: 10 }))
    .chain(([name, ways]) =>
      fc
        .constantFrom('', ' ', 'x', '\u0307', 'İ')
        .map(
          (tail) => [...name].map((c, i) => ({ keep: c, upper: c.toUpperCase(), lower: c.toLowerCase(), look: LOOK_ALIKE[c] ?? c })[ways[i]]).join('') + tail,
        ),
    );

  test('names the same field as folding each ASCII capital, for field names in any case, with look-alikes, and any text', () => {
    const key = fc.oneof(nearName, fc.string({ unit: 'binary', maxLength: 12 }), fc.string({ unit: fc.constantFrom(...'AaMmOoUuNnTt'), maxLength: 11 }));
    fc.assert(
      fc.property(key, (k) => fieldOfKey(k) === reference(k)),
      { numRuns: 20_000 },
    );
  });

  test.each([
    ['аmount', 'a Cyrillic а'],
    ['AMOUNＴ', 'a fullwidth Ｔ'],
    ['requeſtor', 'a long s, which toUpperCase() turns into S'],
    ['amount\u0307', 'a combining dot'],
    ['LOANNUMBER ', 'a trailing space'],
  ])('%s (%s) names no field', (key) => {
    expect(fieldOfKey(key)).toBeUndefined();
  });

  test('a key longer than every field name names none, whatever it holds', () => {
    expect(fieldOfKey('A'.repeat(262_144))).toBeUndefined();
    expect(fieldOfKey(`AMOUNT${'\u212A'.repeat(5)}`)).toBeUndefined();
  });
});

describe('parseDrawRequests: case-insensitive keys', () => {
  test.each([
    ['LoanNumber', 'Requestor', 'Amount'],
    ['LOANNUMBER', 'REQUESTOR', 'AMOUNT'],
    ['loannumber', 'requestor', 'amount'],
    ['lOaNnUmBeR', 'rEqUeStOr', 'aMoUnT'],
  ])('keys %s/%s/%s are accepted and pointers use the keys as sent', (l, r, a) => {
    const result = parseText(`[{"${l}":"12","${r}":" Pat ","${a}":9.5}]`);
    expect(result).toStrictEqual({
      ok: true,
      requests: [{ index: 0, loanNumber: 12, requestor: 'Pat', amount: 9.5, amountCents: 950, pointers: { loanNumber: `/0/${l}`, amount: `/0/${a}` } }],
    });
  });

  test.each([
    [
      'LOANNUMBER',
      '[{"LOANNUMBER":"abc","requestor":"a","amount":5}]',
      { index: 0, code: 'InvalidLoanNumber', pointer: '/0/LOANNUMBER', detail: DETAILS.loanNumberFormat },
    ],
    [
      'Amount',
      '[{"loanNumber":1,"requestor":"a","Amount":0.5}]',
      { index: 0, loanNumber: 1, code: 'InvalidAmount', pointer: '/0/Amount', detail: DETAILS.amountFormat },
    ],
    [
      'REQUESTOR',
      '[{"loanNumber":1,"REQUESTOR":"","amount":5}]',
      { index: 0, loanNumber: 1, code: 'InvalidRequest', pointer: '/0/REQUESTOR', detail: DETAILS.requestor },
    ],
  ] as [string, string, ElementError][])('error pointer uses the key as sent (%s)', (_key, text, error) => {
    expect(parseText(text)).toStrictEqual(oneElementError(error));
  });

  test.each([
    ['amount', '"amount":5,"Amount":6'],
    ['amount', '"AMOUNT":5,"amount":5'],
    ['requestor', '"requestor":"a","Requestor":"a"'],
    ['loanNumber', '"loanNumber":1,"LoanNumber":1'],
  ])('two keys mapping to %s (%s) → Invalid Request "ambiguous"', (field, keys) => {
    const others = { loanNumber: '"loanNumber":1', requestor: '"requestor":"a"', amount: '"amount":5' } as Record<string, string>;
    const rest = Object.keys(others)
      .filter((f) => f !== field)
      .map((f) => others[f]);
    const result = parseText(`[{${[...rest, keys].join(',')}}]`);
    expect(result.ok).toBe(false);
    if (result.ok) return;
    expect(result.batchSize).toBe(1);
    expect(result.errors).toHaveLength(1);
    const [error] = result.errors;
    expect(error.index).toBe(0);
    expect(error.code).toBe('InvalidRequest');
    expect(ERROR_NAMES[error.code]).toBe('Invalid Request');
    expect(error.detail).toBe(DETAILS.ambiguous(field));
    // The pointer names the second key that claimed the field, as the partner spelled it.
    const secondKey = /,"([^"]+)":[^,]*$/.exec(keys)?.[1];
    expect(error.pointer).toBe(`/0/${secondKey}`);
  });

  test('ambiguous keys for a field beat a bad loanNumber (element shape before loan number form)', () => {
    expect(parseText('[{"loanNumber":"x","requestor":"a","amount":5,"AMOUNT":5}]')).toStrictEqual(
      oneElementError({ index: 0, code: 'InvalidRequest', pointer: '/0/AMOUNT', detail: DETAILS.ambiguous('amount') }),
    );
  });

  test('ambiguous loanNumber keys → no loanNumber on the error', () => {
    expect(parseText('[{"loanNumber":1,"LoanNumber":2,"requestor":"a","amount":5}]')).toStrictEqual(
      oneElementError({ index: 0, code: 'InvalidRequest', pointer: '/0/LoanNumber', detail: DETAILS.ambiguous('loanNumber') }),
    );
  });

  test('ambiguous amount keys still report the usable loanNumber (docs/contract.md §2.4: loanNumber present when the element had a usable one)', () => {
    expect(parseText('[{"loanNumber":1,"requestor":"a","amount":5,"Amount":6}]')).toStrictEqual(
      oneElementError({ index: 0, loanNumber: 1, code: 'InvalidRequest', pointer: '/0/Amount', detail: DETAILS.ambiguous('amount') }),
    );
  });

  test('ambiguous amount keys report the usable loanNumber even when it comes after them', () => {
    expect(parseText('[{"amount":5,"Amount":6,"AMOUNT":7,"LoanNumber":"0012","requestor":"a"}]')).toStrictEqual(
      oneElementError({ index: 0, loanNumber: 12, code: 'InvalidRequest', pointer: '/0/Amount', detail: DETAILS.ambiguous('amount') }),
    );
  });

  test('the same key twice ("amount" and "amount") is ambiguous too (docs/contract.md §2.2: two keys mapping to one field)', () => {
    const result = parseText('[{"loanNumber":1,"requestor":"a","amount":5,"amount":500}]');
    expect(result.ok).toBe(false);
    if (!result.ok) {
      expect(result.errors).toHaveLength(1);
      expect(result.errors[0]).toMatchObject({ index: 0, code: 'InvalidRequest', detail: DETAILS.ambiguous('amount') });
    }
  });

  test.each([
    ['Cyrillic А (U+0410) in AMOUNT', '\u0410MOUNT', 'amount'],
    ['fullwidth ＡＭＯＵＮＴ', 'ＡＭＯＵＮＴ', 'amount'],
    ['long s (U+017F) in requestor', 'reque\u017Ftor', 'requestor'],
    ['Cyrillic о (U+043E) in loanNumber', 'l\u043EanNumber', 'loanNumber'],
  ])('look-alike key (%s) is not mapped, so the field is missing', (_name, key, field) => {
    const element: Record<string, unknown> = { ...VALID };
    delete element[field];
    element[key] = (VALID as Record<string, unknown>)[field];
    const loanNumber = field === 'loanNumber' ? {} : { loanNumber: 1 };
    expect(parseJson([element])).toStrictEqual(
      oneElementError({ index: 0, ...loanNumber, code: 'InvalidRequest', pointer: `/0/${field}`, detail: DETAILS.missing(field) }),
    );
  });
});

describe('parseDrawRequests: prototype pollution', () => {
  afterEach(() => {
    delete (Object.prototype as Record<string, unknown>).polluted;
  });

  test('__proto__ and constructor keys are ignored and reach no prototype', () => {
    const result = parseText('[{"__proto__":{"polluted":1},"constructor":{"prototype":{"polluted":1}},"loanNumber":1,"requestor":"a","amount":5}]');
    expect(result).toStrictEqual({
      ok: true,
      requests: [{ index: 0, loanNumber: 1, requestor: 'a', amount: 5, amountCents: 500, pointers: { loanNumber: '/0/loanNumber', amount: '/0/amount' } }],
    });
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(Object.prototype.hasOwnProperty.call(Object.prototype, 'polluted')).toBe(false);
    if (result.ok) expect(Object.getPrototypeOf(result.requests[0])).toBe(Object.prototype);
  });

  test('a field hidden under __proto__ is not inherited (amount still missing)', () => {
    expect(parseText('[{"__proto__":{"amount":5},"loanNumber":1,"requestor":"a"}]')).toStrictEqual(
      oneElementError({ index: 0, loanNumber: 1, code: 'InvalidRequest', pointer: '/0/amount', detail: DETAILS.missing('amount') }),
    );
    expect(({} as Record<string, unknown>).amount).toBeUndefined();
  });
});

describe('parseDrawRequests: whole batch', () => {
  test('lists only failing elements, in index order, with batchSize = array length', () => {
    const result = parseJson([
      VALID,
      { ...VALID, loanNumber: 'x' },
      { ...VALID, loanNumber: 2 },
      { ...VALID, amount: 0.5 },
      null,
      { ...VALID, loanNumber: 3 },
      { loanNumber: 4, amount: 5 },
    ]);
    expect(result).toStrictEqual({
      ok: false,
      batchSize: 7,
      errors: [
        { index: 1, code: 'InvalidLoanNumber', pointer: '/1/loanNumber', detail: DETAILS.loanNumberFormat },
        { index: 3, loanNumber: 1, code: 'InvalidAmount', pointer: '/3/amount', detail: DETAILS.amountFormat },
        { index: 4, code: 'InvalidRequest', pointer: '/4', detail: DETAILS.notObject },
        { index: 6, loanNumber: 4, code: 'InvalidRequest', pointer: '/6/requestor', detail: DETAILS.missing('requestor') },
      ],
    });
  });

  test('a single bad element fails the whole batch (no requests are returned)', () => {
    const result = parseJson([VALID, VALID, { ...VALID, amount: 1.001 }]);
    expect(result).toStrictEqual(oneElementError({ index: 2, loanNumber: 1, code: 'InvalidAmount', pointer: '/2/amount', detail: DETAILS.amountFormat }, 3));
    expect('requests' in result).toBe(false);
  });

  test('duplicates are not a shape error (one draw a day is a rule against storage)', () => {
    const result = parseJson([VALID, VALID]);
    expect(result.ok).toBe(true);
    if (result.ok)
      expect(result.requests.map((r) => [r.index, r.loanNumber])).toStrictEqual([
        [0, 1],
        [1, 1],
      ]);
  });
});

describe('decimalPlaces / canonicalLoanNumber', () => {
  test.each([
    [1, 0],
    [1.5, 1],
    [100.25, 2],
    [100.255, 3],
    [1e-7, 7],
    [1.5e-7, 8],
    [1e21, 0],
    [1.25e21, 0],
    [-2.75, 2],
    [0.1 + 0.2, 17],
  ])('decimalPlaces(%p) = %p', (value, places) => {
    expect(decimalPlaces(value)).toBe(places);
  });

  test.each([
    [1, 1],
    ['0001', 1],
    ['9007199254740991', 9007199254740991],
    ['9007199254740992', undefined],
    [9007199254740992, undefined],
    ['00000000000000001', undefined],
    [0, undefined],
    [1.5, undefined],
    ['1e3', undefined],
    [null, undefined],
    [undefined, undefined],
    [true, undefined],
    [NaN, undefined],
    [Infinity, undefined],
  ])('canonicalLoanNumber(%p) = %p', (value, canonical) => {
    expect(canonicalLoanNumber(value)).toBe(canonical);
  });
});

describe('isJsonContentType', () => {
  test.each([
    ['application/json', true],
    ['Application/JSON', true],
    ['application/json; charset=utf-8', true],
    ['application/json;charset=UTF-8', true],
    ['application/json; charset="utf-8"', true],
    ['application/json; foo=bar', true],
    ['text/plain', false],
    ['text/json', false],
    ['application/jsonx', false],
    ['application/problem+json', false],
    ['application/json; charset=latin1', false],
    ['application/json; charset=utf-16', false],
    ['', false],
    ['garbage', false],
    ['application/json;', true], // an empty parameter list is allowed (RFC 9110)
    ['application/json; ;', true],
    ['application/json;\t ; \t', true],
    [`application/json${'; '.repeat(100)}`, true], // 216 characters
    [`application/json${'; '.repeat(200)}`, false], // over the 256-character limit: refused unread
    [`application/json${' '.repeat(240)}; charset=utf-8`, false],
    [null, false],
    [undefined, false],
  ])('%p → %p', (header, expectedResult) => {
    expect(isJsonContentType(header)).toBe(expectedResult);
  });
});

describe('readDrawRequests', () => {
  function fakeRequest(headers: Record<string, string>, body: string | Error) {
    const arrayBuffer = jest.fn((): Promise<ArrayBuffer> =>
      body instanceof Error ? Promise.reject(body) : Promise.resolve(Uint8Array.from(Buffer.from(body, 'utf8')).buffer),
    );
    const lower = Object.fromEntries(Object.entries(headers).map(([k, v]) => [k.toLowerCase(), v]));
    const source: BodySource = { headers: { get: (name: string) => lower[name.toLowerCase()] ?? null }, arrayBuffer };
    return { source, arrayBuffer };
  }

  const validBody = JSON.stringify([VALID]);

  test('a valid request is read and parsed', async () => {
    const { source, arrayBuffer } = fakeRequest({ 'Content-Type': 'application/json; charset=utf-8' }, validBody);
    expect(await readDrawRequests(source, 100)).toStrictEqual({
      ok: true,
      requests: [{ index: 0, loanNumber: 1, requestor: 'a', amount: 5, amountCents: 500, pointers: { loanNumber: '/0/loanNumber', amount: '/0/amount' } }],
    });
    expect(arrayBuffer).toHaveBeenCalledTimes(1);
  });

  test.each([
    ['text/plain', { 'Content-Type': 'text/plain' }],
    ['a missing content type', {}],
    ['a non-UTF-8 charset', { 'Content-Type': 'application/json; charset=latin1' }],
    ['a wrong content type and a huge Content-Length', { 'Content-Type': 'text/plain', 'Content-Length': '999999999' }],
  ])('%s → content type error without reading the body', async (_name, headers) => {
    const { source, arrayBuffer } = fakeRequest(headers, validBody);
    expect(await readDrawRequests(source, 100)).toStrictEqual(requestLevel(DETAILS.contentType));
    expect(arrayBuffer).not.toHaveBeenCalled();
  });

  test('a Content-Length above 262144 → too large without reading the body', async () => {
    const { source, arrayBuffer } = fakeRequest({ 'Content-Type': 'application/json', 'Content-Length': '262145' }, validBody);
    expect(await readDrawRequests(source, 100)).toStrictEqual(requestLevel(DETAILS.tooLarge(262144)));
    expect(arrayBuffer).not.toHaveBeenCalled();
  });

  test('a Content-Length of exactly 262144 is read', async () => {
    const { source, arrayBuffer } = fakeRequest({ 'Content-Type': 'application/json', 'Content-Length': '262144' }, validBody);
    expect((await readDrawRequests(source, 100)).ok).toBe(true);
    expect(arrayBuffer).toHaveBeenCalledTimes(1);
  });

  test('a body larger than 262144 bytes without Content-Length is still rejected after reading', async () => {
    const big = `[${JSON.stringify(VALID)}${' '.repeat(262144)}]`;
    const { source } = fakeRequest({ 'Content-Type': 'application/json' }, big);
    expect(await readDrawRequests(source, 100)).toStrictEqual(requestLevel(DETAILS.tooLarge(262144)));
  });

  test('an arrayBuffer that rejects → unreadable', async () => {
    const { source, arrayBuffer } = fakeRequest({ 'Content-Type': 'application/json' }, new Error('socket hang up'));
    expect(await readDrawRequests(source, 100)).toStrictEqual(requestLevel(DETAILS.unreadable));
    expect(arrayBuffer).toHaveBeenCalledTimes(1);
  });

  test('the maxBatchSize is passed through to parsing', async () => {
    const { source } = fakeRequest({ 'Content-Type': 'application/json' }, JSON.stringify([VALID, VALID, VALID]));
    expect(await readDrawRequests(source, 2)).toStrictEqual(requestLevel(DETAILS.batchSize(2)));
  });
});

describe('what only the request text shows', () => {
  const one = (amountText: string) => Buffer.from(`[{"loanNumber":1,"requestor":"r","amount":${amountText}}]`);

  test.each([
    ['1.0000000000000001', false], // JSON.parse rounds it to 1
    ['0.99999999999999999', false], // ... and this one to 1 as well
    ['100.10', true],
    ['1.000', true], // trailing zeros are not decimal places
    ['1.5e2', true],
    ['1.0005e1', false], // 10.005
    ['12345e-2', true],
    ['12345e-3', false],
  ])('amount written %s → accepted %p', (text, accepted) => {
    const result = parseDrawRequests(one(text), 100);
    if (accepted) {
      expect(result.ok).toBe(true);
    } else {
      expect(result).toEqual({
        ok: false,
        batchSize: 1,
        errors: [{ index: 0, loanNumber: 1, code: 'InvalidAmount', pointer: '/0/amount', detail: DETAILS.amountFormat }],
      });
    }
  });

  test('decimalPlaces reads written text', () => {
    expect(decimalPlaces('100.10')).toBe(1);
    expect(decimalPlaces('1.0000000000000001')).toBe(16);
    expect(decimalPlaces('1e-2')).toBe(2);
    expect(decimalPlaces('not a number')).toBe(Number.POSITIVE_INFINITY);
  });

  test('an amount key inside a nested object is not the element amount', () => {
    const result = parseDrawRequests(Buffer.from('[{"loanNumber":1,"requestor":"r","amount":5,"meta":{"amount":1.001,"amount":2}}]'), 100);
    expect(result.ok).toBe(true);
  });

  test('deep nesting is a request-level 400 before the text is parsed, not a stack overflow', () => {
    const tooDeep = { ok: false, errors: [{ code: 'InvalidRequest', detail: DETAILS.tooDeep(LIMITS.nestingDepth) }] };
    expect(parseDrawRequests(Buffer.from('['.repeat(100_000) + ']'.repeat(100_000)), 100)).toEqual(tooDeep);
    expect(parseDrawRequests(Buffer.from('['.repeat(100_000)), 100)).toEqual(tooDeep); // not JSON either: the limit answers first
  });

  /** One valid element whose ignored key `x` holds `levels` nested objects: the array and element are levels 1 and 2. */
  const nestedInside = (levels: number) =>
    parseDrawRequests(Buffer.from(`[{"loanNumber":1,"requestor":"r","amount":5,"x":${'{"a":'.repeat(levels)}1${'}'.repeat(levels)}}]`), 100);
  test(`nesting of exactly ${LIMITS.nestingDepth} levels is read; one more is refused`, () => {
    expect(nestedInside(LIMITS.nestingDepth - 2).ok).toBe(true);
    expect(nestedInside(LIMITS.nestingDepth - 1)).toEqual({ ok: false, errors: [{ code: 'InvalidRequest', detail: DETAILS.tooDeep(LIMITS.nestingDepth) }] });
  });
});

describe('input limits: what is longer than any valid value is refused before it is read', () => {
  const element = (extra: string) => Buffer.from(`[{"loanNumber":7,"requestor":"r","amount":5${extra}},{"loanNumber":8,"requestor":"r","amount":5}]`);
  const keys = (n: number) => Array.from({ length: n }, (_, i) => `,"k${i}":${i}`).join('');

  test(`an element with ${LIMITS.keysPerObject} keys is read; one more key makes it Invalid Request, answered before the body is parsed`, () => {
    expect(parseDrawRequests(element(keys(LIMITS.keysPerObject - 3)), 100).ok).toBe(true);
    const crowded = { code: 'InvalidRequest', detail: DETAILS.tooManyKeys(LIMITS.keysPerObject) };
    // Element errors counted as any other ("1 of 2", docs/contract.md §2.4).
    expect(parseDrawRequests(element(keys(LIMITS.keysPerObject - 2)), 100)).toEqual({
      ok: false,
      batchSize: 2,
      errors: [{ index: 0, pointer: '/0', ...crowded }],
    });
    // Every crowded element is named; the other elements' faults are not looked at yet.
    const three = Buffer.from(`[{"amount":"x"},{"loanNumber":1${keys(70)}},{"a":1${keys(80)}}]`);
    expect(parseDrawRequests(three, 100)).toEqual({
      ok: false,
      batchSize: 3,
      errors: [
        { index: 1, pointer: '/1', ...crowded },
        { index: 2, pointer: '/2', ...crowded },
      ],
    });
  });

  test('an object inside an element is held to the same limit; keys of different objects are not added up', () => {
    const crowded = { index: 0, code: 'InvalidRequest', pointer: '/0', detail: DETAILS.tooManyKeys(LIMITS.keysPerObject) };
    expect(parseDrawRequests(element(`,"meta":{${keys(LIMITS.keysPerObject + 1).slice(1)}}`), 100)).toEqual({ ok: false, batchSize: 2, errors: [crowded] });
    expect(parseDrawRequests(element(`,"meta":[${Array.from({ length: 100 }, () => `{${keys(60).slice(1)}}`).join(',')}]`), 100).ok).toBe(true);
    expect(parseDrawRequests(element(`,"meta":{${keys(LIMITS.keysPerObject).slice(1)}}`), 100).ok).toBe(true);
  });

  test('a body that is one object with too many keys is refused as a whole', () => {
    expect(parseDrawRequests(Buffer.from(`{${keys(LIMITS.keysPerObject + 1).slice(1)}}`), 100)).toEqual({
      ok: false,
      errors: [{ code: 'InvalidRequest', detail: DETAILS.tooManyKeys(LIMITS.keysPerObject) }],
    });
  });

  const one = (field: 'loanNumber' | 'amount', text: string) =>
    parseDrawRequests(Buffer.from(`[{"loanNumber":${field === 'loanNumber' ? text : 7},"requestor":"r","amount":${field === 'amount' ? text : 5}}]`), 100);
  const padded = (whole: string, length: number) => `${whole}.${'0'.repeat(length - whole.length - 1)}`;

  test(`an amount written in ${LIMITS.numberTextLength} characters is read; in one more it is Invalid Amount`, () => {
    expect(one('amount', padded('12', LIMITS.numberTextLength)).ok).toBe(true);
    expect(one('amount', padded('12', LIMITS.numberTextLength + 1))).toEqual({
      ok: false,
      batchSize: 1,
      errors: [{ index: 0, loanNumber: 7, code: 'InvalidAmount', pointer: '/0/amount', detail: DETAILS.amountFormat }],
    });
  });

  test(`a numeric loan number written in ${LIMITS.numberTextLength} characters is read; in one more it is Invalid Loan Number`, () => {
    const accepted = one('loanNumber', padded('1001', LIMITS.numberTextLength));
    expect(accepted.ok && accepted.requests[0].loanNumber).toBe(1001);
    expect(one('loanNumber', padded('1001', LIMITS.numberTextLength + 1))).toEqual({
      ok: false,
      batchSize: 1,
      errors: [{ index: 0, code: 'InvalidLoanNumber', pointer: '/0/loanNumber', detail: DETAILS.loanNumberFormat }],
    });
  });

  test('a 250 KB amount is Invalid Amount (it was once read by a quadratic regex)', () => {
    const result = one('amount', `1.${'0'.repeat(250_000)}1`);
    expect(!result.ok && result.errors[0].code).toBe('InvalidAmount');
  });
});

describe('decimalPlaces against the regex it replaced', () => {
  // The old implementation, fine on short text: it is the reference for what the one-pass reading must say.
  function reference(text: string): number {
    const match = /^-?\d+(?:\.(\d+))?(?:e([+-]?\d+))?$/i.exec(text);
    if (!match) return Number.POSITIVE_INFINITY;
    const fraction = (match[1] ?? '').replace(/0+$/, '').length;
    return Math.max(0, fraction - Number(match[2] ?? 0));
  }
  test('agrees on every text of number-like characters up to 12 long', () => {
    const numberish = fc.string({ unit: fc.constantFrom('0', '1', '5', '9', '.', 'e', 'E', '+', '-'), maxLength: 12 });
    fc.assert(
      fc.property(numberish, (text) => decimalPlaces(text) === reference(text)),
      { numRuns: 20_000 },
    );
  });
  test('agrees on every JSON number JavaScript writes', () => {
    fc.assert(
      fc.property(fc.double({ noNaN: true, noDefaultInfinity: true }), (n) => decimalPlaces(n) === reference(String(n))),
      { numRuns: 5_000 },
    );
  });
  test.each(['', '-', '.5', '1.', '1e', '1e+', '--1', '1.5.5', '1e5e5', ' 1', '1 ', '١'])('%p is not a number', (text) => {
    expect(decimalPlaces(text)).toBe(Number.POSITIVE_INFINITY);
  });
});

test('the element schema is valid JSON Schema (the generated validator does not re-validate it)', () => {
  const ajv = new Ajv({ strict: true });
  ajv.addKeyword({ keyword: 'loanNumberForm', schemaType: 'boolean' });
  ajv.addKeyword({ keyword: 'maxDecimalPlaces', schemaType: 'number' });
  expect(ajv.validateSchema(ELEMENT_SCHEMA)).toBe(true);
  expect(ajv.errors).toBeNull();
  expect(ajv.validateSchema({ ...ELEMENT_SCHEMA, required: 'loanNumber' })).toBe(false); // the check can fail
});
