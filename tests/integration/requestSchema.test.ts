/**
 * The request schema of docs/openapi.yaml against the live handler. The schema is canonical (one
 * spelling of each field, which generators understand); the service also reads keys in any letter
 * case. So: everything the document accepts, the service accepts; what the service accepts and the
 * document refuses differs from an accepted body only in the case of its keys. Bodies go to both: the
 * document's validator (ajv, JSON Schema 2020-12) and the handler with real Azurite and real tokens.
 * Each body names fresh loans with enough credit, so the service's answer turns on shape alone: 204
 * accepted, 400 refused. Besides a table of variants, bodies are generated from the schema itself
 * (the requestor from the document's own pattern) and every one must be recorded.
 */
import fc from 'fast-check';
import { requestValidator, openApi } from '../support/contract';
import { Harness } from '../support/harness';

let h: Harness;
beforeAll(async () => {
  h = await Harness.start();
}, 60_000);
afterAll(() => h?.stop());

const REQUESTOR = 'jane.doe@partner.example';
/** A body made for fresh loans (the same day's second draw on a loan would be refused for another reason). */
type Body = (loans: number[]) => unknown;

/** The document's request examples, with their loan numbers replaced by fresh loans of the same form. */
function documentExamples(): [string, Body][] {
  const examples = openApi().paths['/DrawRequest'].post.requestBody.content['application/json'].examples as Record<
    string,
    { value: Record<string, unknown>[] }
  >;
  return Object.entries(examples).map(([name, { value }]) => [
    `the document's example ${name}`,
    (loans) =>
      value.map((element, i) =>
        Object.fromEntries(
          Object.entries(element).map(([k, v]) => [
            k,
            k.toLowerCase() === 'loannumber' ? (typeof v === 'string' ? String(loans[i]).padStart(v.length, '0') : loans[i]) : v,
          ]),
        ),
      ),
  ]);
}

const VARIANTS: [string, Body][] = [
  ['canonical keys', ([n]) => [{ loanNumber: n, requestor: REQUESTOR, amount: 10 }]],
  ['PascalCase keys', ([n]) => [{ LoanNumber: n, Requestor: REQUESTOR, Amount: 10 }]],
  ['upper-case keys', ([n]) => [{ LOANNUMBER: n, REQUESTOR: REQUESTOR, AMOUNT: 10 }]],
  ['mixed case keys', ([n]) => [{ lOaNnUmBeR: n, rEqUeStOr: REQUESTOR, aMoUnT: 10 }]],
  ['lower-case keys', ([n]) => [{ loannumber: n, requestor: REQUESTOR, amount: 10 }]],
  ['an unknown extra key', ([n]) => [{ loanNumber: n, requestor: REQUESTOR, amount: 10, note: 'x' }]],
  ['loanNumber a digit string', ([n]) => [{ loanNumber: String(n), requestor: REQUESTOR, amount: 10 }]],
  ['loanNumber a digit string with leading zeros', ([n]) => [{ loanNumber: String(n).padStart(16, '0'), requestor: REQUESTOR, amount: 10 }]],
  ['loanNumber 17 digits with leading zeros', ([n]) => [{ loanNumber: String(n).padStart(17, '0'), requestor: REQUESTOR, amount: 10 }]],
  ['loanNumber "0"', () => [{ loanNumber: '0', requestor: REQUESTOR, amount: 10 }]],
  ['loanNumber of zeros', () => [{ loanNumber: '0000', requestor: REQUESTOR, amount: 10 }]],
  ['loanNumber with a sign', ([n]) => [{ loanNumber: `+${n}`, requestor: REQUESTOR, amount: 10 }]],
  ['loanNumber with spaces', ([n]) => [{ loanNumber: ` ${n}`, requestor: REQUESTOR, amount: 10 }]],
  ['loanNumber 0', () => [{ loanNumber: 0, requestor: REQUESTOR, amount: 10 }]],
  ['loanNumber negative', ([n]) => [{ loanNumber: -n, requestor: REQUESTOR, amount: 10 }]],
  ['loanNumber fractional', ([n]) => [{ loanNumber: n + 0.5, requestor: REQUESTOR, amount: 10 }]],
  ['loanNumber null', () => [{ loanNumber: null, requestor: REQUESTOR, amount: 10 }]],
  ['no loanNumber key in any case', () => [{ requestor: REQUESTOR, amount: 10 }]],
  ['no requestor key in any case', ([n]) => [{ LoanNumber: n, Amount: 10 }]],
  ['no amount key in any case', ([n]) => [{ LOANNUMBER: n, REQUESTOR: REQUESTOR }]],
  ['a key with a look-alike letter (Cyrillic а)', ([n]) => [{ loanNumber: n, requestor: REQUESTOR, аmount: 10 }]],
  ['amount a string', ([n]) => [{ loanNumber: n, requestor: REQUESTOR, Amount: '10' }]],
  ['amount below 1', ([n]) => [{ loanNumber: n, requestor: REQUESTOR, amount: 0.5 }]],
  ['requestor empty', ([n]) => [{ loanNumber: n, requestor: '', amount: 10 }]],
  ['requestor of 257 characters', ([n]) => [{ loanNumber: n, requestor: 'r'.repeat(257), amount: 10 }]],
  ['requestor of 256 characters with spaces around', ([n]) => [{ loanNumber: n, requestor: `  ${'r'.repeat(256)}\t `, amount: 10 }]],
  ['requestor of 257 characters with spaces around', ([n]) => [{ loanNumber: n, requestor: ` ${'r'.repeat(257)} `, amount: 10 }]],
  ['requestor of spaces only', ([n]) => [{ loanNumber: n, requestor: '   ', amount: 10 }]],
  ['requestor with a control character inside', ([n]) => [{ loanNumber: n, requestor: 'jane\u0007doe', amount: 10 }]],
  ['requestor with a C1 control character inside', ([n]) => [{ loanNumber: n, requestor: 'jane\u0085doe', amount: 10 }]],
  ['requestor with non-ASCII letters and an emoji', ([n]) => [{ loanNumber: n, requestor: 'Zoë Ångström 🙂', amount: 10 }]],
  ['loanNumber above the largest safe integer, 16 digits', () => [{ loanNumber: '9007199254740992', requestor: REQUESTOR, amount: 10 }]],
  [
    'an element of 64 keys',
    ([n]) => [{ loanNumber: n, requestor: REQUESTOR, amount: 10, ...Object.fromEntries(Array.from({ length: 61 }, (_, i) => [`k${i}`, i])) }],
  ],
  [
    'an element of 65 keys',
    ([n]) => [{ loanNumber: n, requestor: REQUESTOR, amount: 10, ...Object.fromEntries(Array.from({ length: 62 }, (_, i) => [`k${i}`, i])) }],
  ],
  ['requestor a number', ([n]) => [{ loanNumber: n, REQUESTOR: 7, amount: 10 }]],
  ['an element that is not an object', () => [[1, 'x', 10]]],
  ['an empty batch', () => []],
  [
    'two elements in different spellings',
    ([n, m]) => [
      { loanNumber: n, requestor: REQUESTOR, amount: 10 },
      { LOANNUMBER: String(m), Requestor: REQUESTOR, AMOUNT: 20 },
    ],
  ],
];

/** The body with every key that names a field in another letter case spelt canonically. */
function canonicalKeys(body: unknown): unknown {
  if (!Array.isArray(body)) return body;
  const canonical: Record<string, string> = { loannumber: 'loanNumber', requestor: 'requestor', amount: 'amount' };
  return body.map((element: unknown) =>
    element !== null && typeof element === 'object' && !Array.isArray(element)
      ? Object.fromEntries(Object.entries(element).map(([k, v]) => [canonical[k.toLowerCase()] ?? k, v]))
      : element,
  );
}

describe('everything the document accepts, the service accepts; the rest differs only in the case of keys', () => {
  const validate = requestValidator();

  test.each([...documentExamples(), ...VARIANTS])('%s', async (_name, body) => {
    const sent = body([await h.loan(), await h.loan()]);
    const reply = await h.post(sent);
    expect([204, 400]).toContain(reply.status);
    const service = reply.status === 204 ? 'accepts' : 'refuses';
    // What the document accepts the service accepts; with keys spelt canonically they agree exactly.
    const asSent = validate(sent) ? 'accepts' : 'refuses';
    const canonically = validate(canonicalKeys(sent)) ? 'accepts' : 'refuses';
    expect({ service, canonically, errors: reply.body?.errors }).toEqual({ service, canonically: service, errors: reply.body?.errors });
    if (asSent === 'accepts') expect(service).toBe('accepts');
  });

  // The differences the document names in words: a schema of the parsed value cannot count decimals
  // as written, see an unpaired surrogate the same way in every validator, or a field named twice in
  // two cases (the canonical schema refuses every other case anyway).
  test.each([
    ['an amount with 3 decimals as written', (n: number) => `[{"loanNumber":${n},"requestor":"r","amount":10.005}]`],
    ['an amount written 10.10 is 2 decimals, accepted by both', (n: number) => `[{"loanNumber":${n},"requestor":"r","amount":10.10}]`],
    ['a requestor with an unpaired surrogate', (n: number) => `[{"loanNumber":${n},"requestor":"a\\ud800b","amount":10}]`],
  ])('%s: as the document says', async (name, text) => {
    const raw = text(await h.loan());
    const reply = await h.post(Buffer.from(raw));
    const document = validate(JSON.parse(raw)) ? 'accepts' : 'refuses';
    expect({ document, status: reply.status }).toEqual({ document: 'accepts', status: name.includes('accepted by both') ? 204 : 400 });
  });

  test('two spellings of one field: the service refuses it as ambiguous, the document refuses the non-canonical key', async () => {
    const n = await h.loan();
    const sent = [{ loanNumber: n, LoanNumber: n, requestor: REQUESTOR, amount: 10 }];
    expect(validate(sent)).toBe(false);
    const reply = await h.post(sent);
    expect(reply.status).toBe(400);
    expect(reply.body.errors).toEqual([expect.objectContaining({ code: 'InvalidRequest', index: 0 })]);
    expect(openApi().components.schemas.DrawRequest.description).toContain('two spellings of one field in one\nelement make it Invalid Request');
  });
});

describe('bodies generated from the schema are all recorded', () => {
  const validate = requestValidator();
  const schemas = openApi().components.schemas as Record<string, { pattern?: string; oneOf?: { pattern?: string }[] }>;
  const requestorPattern = new RegExp(schemas.Requestor.pattern as string, 'u');

  /** One element for loan `n`: the loan number in one of its schema forms, a requestor from the document's pattern, an amount within credit. */
  const element = (n: number) =>
    fc.record({
      loanNumber: fc.oneof(
        fc.constant<number | string>(n),
        fc.integer({ min: String(n).length, max: 16 }).map((width) => String(n).padStart(width, '0')),
      ),
      requestor: fc.stringMatching(requestorPattern, { size: 'medium' }),
      amount: fc.integer({ min: 100, max: 100_000 }).map((cents) => cents / 100),
      extra: fc.dictionary(
        fc.string({ minLength: 1, maxLength: 12 }).filter((k) => !['loannumber', 'requestor', 'amount', '__proto__'].includes(k.toLowerCase())),
        fc.jsonValue({ maxDepth: 2 }),
        { maxKeys: 4 },
      ),
    });

  test('every generated batch is valid for the document and answered 204 with every draw stored', async () => {
    const loans = await Promise.all(Array.from({ length: 40 * 3 }, () => h.loan({ availableCredit: 1000 })));
    let run = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 3 }).chain((size) => fc.tuple(...Array.from({ length: size }, (_, i) => element(loans[run * 3 + i])))),
        async (elements) => {
          const body = elements.map(({ extra, ...fields }) => ({ ...extra, ...fields }));
          run += 1;
          expect({ body, valid: validate(body), errors: validate.errors ?? null }).toEqual({ body, valid: true, errors: null });
          const reply = await h.post(body);
          expect({ status: reply.status, errors: reply.body?.errors }).toEqual({ status: 204, errors: undefined });
          expect(await h.drawsFor(...body.map((e) => Number(e.loanNumber)))).toHaveLength(body.length);
        },
      ),
      { numRuns: 40 },
    );
  });
});
