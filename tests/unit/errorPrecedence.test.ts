/**
 * The catalogue's ORDER tied to the code, not only to the documents (docs/contract.md §2.2–§2.3): for
 * every pair of element rules i < j that can both apply to one element, the element gets rule i's code
 * and detail; for every pair of request-level errors the body reader decides, a request breaking both
 * gets the earlier one. Pairs are generated from lib/errorCatalogue.ts, so a rule or error added there
 * without a way to break it here fails. Also a frozen list of what partners match on.
 */
import { applyDrawRules, type Loan } from '../../lib/drawRules';
import { DETAILS, ELEMENT_RULES, ERRORS, REQUEST_ERRORS, elementRule, type DetailKey } from '../../lib/errorCatalogue';
import { LIMITS } from '../../lib/limits';
import { parseDrawRequests, readDrawRequests, type BodySource } from '../../lib/requestBody';

const PARTNER = 'partner-a';

test('partner-visible codes and names are frozen (a change here is a breaking change for partners)', () => {
  expect(ERRORS.map((e) => [e.code, e.error])).toEqual([
    ['InvalidRequest', 'Invalid Request'],
    ['InvalidLoanNumber', 'Invalid Loan Number'],
    ['InvalidAmount', 'Invalid Amount'],
    ['InvalidAuthorization', 'Invalid Authorization'],
    ['InvalidFundingInvestor', 'Invalid Funding Investor'],
    ['PendingTransactionRequest', 'Pending Transaction Request'],
  ]);
  expect(ELEMENT_RULES.map((r) => [r.rule, r.code])).toEqual([
    [1, 'InvalidRequest'],
    [2, 'InvalidLoanNumber'],
    [3, 'InvalidAmount'],
    [4, 'InvalidLoanNumber'],
    [5, 'InvalidAuthorization'],
    [6, 'InvalidFundingInvestor'],
    [7, 'InvalidAmount'],
    [8, 'PendingTransactionRequest'],
  ]);
});

describe('element rules: the first that applies wins (contract §2.3)', () => {
  /** One element (fields as JSON text), the loan it names, and what else the batch and today hold. */
  interface Case {
    readonly fields: Readonly<Record<string, string>>;
    readonly loan: Loan | undefined;
    readonly drawnToday: boolean;
    /** An earlier element in the batch names the same loan. */
    readonly earlier: boolean;
  }
  const BASE: Case = {
    fields: { loanNumber: '1001', requestor: '"Pat"', amount: '10' },
    loan: { partnerId: PARTNER, availableCredit: 1000, fundingInvestorId: 'investor-1' },
    drawnToday: false,
    earlier: false,
  };

  /** A way to break one rule with one of its details; each changes a different part of the case. */
  interface Breaker {
    readonly rule: number;
    readonly detail: DetailKey;
    readonly text: string;
    readonly apply: (c: Case) => Case;
  }
  const withFields = (c: Case, fields: Record<string, string | undefined>): Case => {
    const merged: Record<string, string> = {};
    for (const [k, v] of Object.entries({ ...c.fields, ...fields })) if (v !== undefined) merged[k] = v;
    return { ...c, fields: merged };
  };
  const withLoan = (c: Case, loan: Partial<Record<keyof Loan, unknown>>): Case => ({ ...c, loan: { ...c.loan, ...loan } as Loan });
  const manyKeys = Object.fromEntries(Array.from({ length: LIMITS.keysPerObject }, (_, i) => [`k${i}`, '0']));
  const BREAKERS: readonly Breaker[] = [
    // notObject is left out: an element that is not an object has no field or loan to break as well.
    { rule: 1, detail: 'tooManyKeys', text: DETAILS.tooManyKeys(LIMITS.keysPerObject), apply: (c) => withFields(c, manyKeys) },
    { rule: 1, detail: 'ambiguous', text: DETAILS.ambiguous('requestor'), apply: (c) => withFields(c, { Requestor: '"Pat"' }) },
    { rule: 1, detail: 'missing', text: DETAILS.missing('requestor'), apply: (c) => withFields(c, { requestor: undefined }) },
    { rule: 1, detail: 'requestor', text: DETAILS.requestor, apply: (c) => withFields(c, { requestor: '""' }) },
    { rule: 2, detail: 'loanNumberFormat', text: DETAILS.loanNumberFormat, apply: (c) => withFields(c, { loanNumber: '"10a1"' }) },
    { rule: 3, detail: 'amountFormat', text: DETAILS.amountFormat, apply: (c) => withFields(c, { amount: '10.555' }) },
    { rule: 4, detail: 'loanNotFound', text: DETAILS.loanNotFound, apply: (c) => ({ ...c, loan: undefined }) },
    { rule: 5, detail: 'notAuthorized', text: DETAILS.notAuthorized, apply: (c) => withLoan(c, { partnerId: 'partner-b' }) },
    { rule: 6, detail: 'noFundingInvestor', text: DETAILS.noFundingInvestor, apply: (c) => withLoan(c, { fundingInvestorId: undefined }) },
    // Credit below the amount (rather than a larger amount), so it combines with rule 3's amount.
    { rule: 7, detail: 'amountAboveCredit', text: DETAILS.amountAboveCredit, apply: (c) => withLoan(c, { availableCredit: 5 }) },
    { rule: 8, detail: 'alreadyToday', text: DETAILS.alreadyToday, apply: (c) => ({ ...c, drawnToday: true }) },
    { rule: 8, detail: 'duplicateInBatch', text: DETAILS.duplicateInBatch, apply: (c) => ({ ...c, earlier: true }) },
  ];
  const name = (b: Breaker) => `${b.rule}:${b.detail}`;

  /**
   * Pairs that cannot both apply to one element: a loan number that is not a number, or names no loan,
   * names no loan with an owner, an investor or a credit, and has no draw today.
   */
  const EXCLUSIVE = new Set(
    ['2:loanNumberFormat', '4:loanNotFound'].flatMap((a) =>
      ['5:notAuthorized', '6:noFundingInvestor', '7:amountAboveCredit', '8:alreadyToday'].map((b) => `${a} ${b}`),
    ),
  );

  /** The error the code gives the case's element: body reader for rules 1–3, then the draw rules. */
  function errorOf(c: Case) {
    const element = (f: Readonly<Record<string, string>>) =>
      `{${Object.entries(f)
        .map(([k, v]) => `"${k}":${v}`)
        .join(',')}}`;
    const elements = [element(c.fields)];
    if (c.earlier) elements.unshift(element({ loanNumber: c.fields.loanNumber ?? '1001', requestor: '"Sam"', amount: '1' }));
    const index = elements.length - 1;
    const body = parseDrawRequests(Buffer.from(`[${elements.join(',')}]`), 100);
    let errors;
    if (!body.ok) errors = body.errors;
    else {
      const loans = new Map(c.loan === undefined ? [] : [['1001', c.loan]]);
      const verdict = applyDrawRules(body.requests, loans, new Set(c.drawnToday ? ['1001'] : []), PARTNER);
      errors = verdict.accepted ? [] : verdict.errors;
    }
    const mine = errors.find((e) => e.index === index);
    return mine && { code: mine.code, detail: mine.detail };
  }
  const expected = (b: Breaker) => ({ code: elementRule(b.rule).code, detail: b.text });

  test('every rule can be broken here, with details of that rule', () => {
    expect([...new Set(BREAKERS.map((b) => b.rule))]).toEqual(ELEMENT_RULES.map((r) => r.rule));
    for (const b of BREAKERS) expect(elementRule(b.rule).details).toContain(b.detail);
    expect(errorOf(BASE)).toBeUndefined();
  });

  test.each(BREAKERS.map((b) => [name(b), b] as const))('%s alone gives its code and detail', (_, b) => {
    expect(errorOf(b.apply(BASE))).toEqual(expected(b));
  });

  const PAIRS = BREAKERS.flatMap((first) =>
    BREAKERS.filter((second) => second.rule > first.rule && !EXCLUSIVE.has(`${name(first)} ${name(second)}`)).map(
      (second) => [`${name(first)} and ${name(second)}`, first, second] as const,
    ),
  );

  test('every pair of rules i < j is tested or excluded', () => {
    const covered = new Set(PAIRS.map(([, a, b]) => `${a.rule} ${b.rule}`));
    const all = ELEMENT_RULES.flatMap((a) => ELEMENT_RULES.filter((b) => b.rule > a.rule).map((b) => `${a.rule} ${b.rule}`));
    const onlyExclusive = all.filter((p) => !covered.has(p));
    expect(onlyExclusive).toEqual(['2 5', '2 6', '2 7', '4 5', '4 6', '4 7']);
  });

  test.each(PAIRS)('%s: the earlier rule wins', (_, first, second) => {
    // Either order of applying: each changes a different part of the case.
    expect(errorOf(first.apply(second.apply(BASE)))).toEqual(expected(first));
    expect(errorOf(second.apply(first.apply(BASE)))).toEqual(expected(first));
  });
});

describe('request-level errors: the earliest that applies wins (contract §2.2)', () => {
  const MAX = 2;
  /** A request as the body reader sees it: headers, and a body described by its shape. */
  interface Shape {
    contentType?: string;
    contentLength?: string;
    badUtf8?: boolean;
    deep?: boolean;
    root?: 'array' | 'object';
    manyKeys?: boolean;
    truncated?: boolean;
    elements?: number;
  }
  const VALID = '{"loanNumber":1,"requestor":"a","amount":5}';

  function body(s: Shape): Buffer {
    const deep = '['.repeat(LIMITS.nestingDepth) + ']'.repeat(LIMITS.nestingDepth);
    let text: string;
    if (s.root === 'object') {
      const keys = Array.from({ length: s.manyKeys ? LIMITS.keysPerObject + 1 : 1 }, (_, i) => `"k${i}":0`);
      if (s.deep) keys.push(`"deep":${deep}`);
      text = `{${keys.join(',')}}`;
    } else {
      const elements = Array.from({ length: s.elements ?? 1 }, () => VALID);
      if (s.deep) elements.push(deep);
      text = `[${elements.join(',')}]`;
    }
    if (s.truncated) text = text.slice(0, -1);
    const bytes = Buffer.from(text, 'utf8');
    return s.badUtf8 ? Buffer.concat([Buffer.from([0xff]), bytes]) : bytes;
  }

  function read(s: Shape) {
    const headers: Record<string, string> = { 'content-type': s.contentType ?? 'application/json' };
    if (s.contentLength !== undefined) headers['content-length'] = s.contentLength;
    const bytes = body(s);
    const source: BodySource = {
      headers: { get: (n: string) => headers[n.toLowerCase()] ?? null },
      arrayBuffer: () => Promise.resolve(Uint8Array.from(bytes).buffer),
    };
    return readDrawRequests(source, MAX);
  }

  /**
   * How to break each error the body reader decides. Left out: idempotencyKeyForm, read from the headers
   * before the body reader is called (functions/drawRequest.ts), and idempotencyKeyReused/Expired,
   * decided after storage reads, once the body is known to be good.
   */
  const BREAKS: { readonly [K in DetailKey]?: { readonly text: string; readonly shape: Shape } } = {
    contentType: { text: DETAILS.contentType, shape: { contentType: 'text/plain' } },
    tooLarge: { text: DETAILS.tooLarge(LIMITS.bodyBytes), shape: { contentLength: String(LIMITS.bodyBytes + 1) } },
    unreadable: { text: DETAILS.unreadable, shape: { badUtf8: true } },
    tooDeep: { text: DETAILS.tooDeep(LIMITS.nestingDepth), shape: { deep: true } },
    tooManyKeys: { text: DETAILS.tooManyKeys(LIMITS.keysPerObject), shape: { root: 'object', manyKeys: true } },
    notJson: { text: DETAILS.notJson, shape: { truncated: true } },
    notArray: { text: DETAILS.notArray, shape: { root: 'object' } },
    batchSize: { text: DETAILS.batchSize(MAX), shape: { root: 'array', elements: MAX + 1 } },
  };
  const NOT_BY_THE_BODY_READER: readonly DetailKey[] = ['idempotencyKeyForm', 'idempotencyKeyReused', 'idempotencyKeyExpired'];
  const checked = REQUEST_ERRORS.filter((key) => !NOT_BY_THE_BODY_READER.includes(key));
  const breakOf = (key: DetailKey) => {
    const found = BREAKS[key];
    if (found === undefined) throw new Error(`no way to break ${key} here: add one to BREAKS`);
    return found;
  };
  /** Two shapes combine when they set no property to different values. */
  const combined = (a: Shape, b: Shape): Shape | undefined => {
    for (const k of Object.keys(a) as (keyof Shape)[]) if (k in b && a[k] !== b[k]) return undefined;
    return { ...a, ...b };
  };

  test('every request-level error is broken here or left out with a reason', () => {
    expect(REQUEST_ERRORS.filter((key) => !NOT_BY_THE_BODY_READER.includes(key) && BREAKS[key] === undefined)).toEqual([]);
  });

  test.each(checked)('%s alone', async (key) => {
    expect(await read(breakOf(key).shape)).toEqual({ ok: false, errors: [{ code: 'InvalidRequest', detail: breakOf(key).text }] });
  });

  const PAIRS = checked.flatMap((first, i) =>
    checked.slice(i + 1).flatMap((second) => {
      const shape = combined(breakOf(first).shape, breakOf(second).shape);
      return shape === undefined ? [] : [[`${first} and ${second}`, first, shape] as const];
    }),
  );

  test('only the pairs that cannot share one body are left out', () => {
    const all = checked.flatMap((first, i) => checked.slice(i + 1).map((second) => `${first} and ${second}`));
    expect(all.filter((p) => !PAIRS.some(([n]) => n === p))).toEqual(['tooManyKeys and batchSize', 'notArray and batchSize']);
  });

  test.each(PAIRS)('%s: the earlier wins', async (_, first, shape) => {
    expect(await read(shape)).toEqual({ ok: false, errors: [{ code: 'InvalidRequest', detail: breakOf(first).text }] });
  });
});
