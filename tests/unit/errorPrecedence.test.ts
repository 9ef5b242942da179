/**
 * The catalogue's ORDER tied to the code, not only to the documents (docs/contract.md §2.2–§2.3): for
 * every pair of element rules that can both apply to one element, the element gets the earlier rule's
 * code and detail; for every pair of request-level errors the body reader decides, a request breaking
 * both gets the earlier one. Pairs are generated from lib/errorCatalogue.ts, so a rule or error added
 * there without a way to break it here fails. Also frozen lists of what partners match on.
 */
import { applyDrawRules, type Loan } from '../../lib/drawRules';
import { DETAILS, ELEMENT_RULES, ERRORS, REQUEST_ERRORS, elementRule, type DetailKey, type DetailOf, type RuleName } from '../../lib/errorCatalogue';
import { LIMITS } from '../../lib/limits';
import type { LoanField } from '../../lib/loans';
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
});

test('the rules partners know keep their order, what they are checked against and their codes (a new rule may come between any two; removing or moving one is a breaking change)', () => {
  const FROZEN = [
    ['element shape', 'element', 'InvalidRequest'],
    ['loan number form', 'element', 'InvalidLoanNumber'],
    ['amount form', 'element', 'InvalidAmount'],
    ['loan exists', 'storage', 'InvalidLoanNumber'],
    ['loan owner', 'storage', 'InvalidAuthorization'],
    ['funding investor', 'storage', 'InvalidFundingInvestor'],
    ['available credit', 'storage', 'InvalidAmount'],
    ['one draw a day', 'storage', 'PendingTransactionRequest'],
  ];
  const frozen = new Set(FROZEN.map(([name]) => name));
  expect(ELEMENT_RULES.filter((r) => frozen.has(r.name)).map((r) => [r.name, r.against, r.code])).toEqual(FROZEN);
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

  /**
   * What breaking a rule changes in the case: element fields (undefined removes one), the loan (null:
   * no loan; otherwise some of its fields), a draw today, an earlier element naming the loan.
   */
  interface Change {
    readonly fields?: Readonly<Record<string, string | undefined>>;
    readonly loan?: Readonly<Partial<Record<LoanField, unknown>>> | null;
    readonly drawnToday?: true;
    readonly earlier?: true;
  }
  /** A way to break rule `R` with one of its details. */
  interface Breaker<R extends RuleName> {
    readonly detail: DetailOf<R>;
    readonly text: string;
    readonly change: Change;
  }
  const manyKeys = Object.fromEntries(Array.from({ length: LIMITS.keysPerObject }, (_, i) => [`k${i}`, '0']));
  /** Every rule of the catalogue, by name: a rule without a way to break it here fails to compile, and the first test names it. */
  const BREAKERS: { readonly [R in RuleName]: readonly Breaker<R>[] } = {
    // notObject is left out: an element that is not an object has no field or loan to break as well.
    'element shape': [
      { detail: 'tooManyKeys', text: DETAILS.tooManyKeys(LIMITS.keysPerObject), change: { fields: manyKeys } },
      { detail: 'ambiguous', text: DETAILS.ambiguous('requestor'), change: { fields: { Requestor: '"Pat"' } } },
      { detail: 'missing', text: DETAILS.missing('requestor'), change: { fields: { requestor: undefined } } },
      { detail: 'requestor', text: DETAILS.requestor, change: { fields: { requestor: '""' } } },
    ],
    'loan number form': [{ detail: 'loanNumberFormat', text: DETAILS.loanNumberFormat, change: { fields: { loanNumber: '"10a1"' } } }],
    'amount form': [{ detail: 'amountFormat', text: DETAILS.amountFormat, change: { fields: { amount: '10.555' } } }],
    'loan exists': [{ detail: 'loanNotFound', text: DETAILS.loanNotFound, change: { loan: null } }],
    'loan owner': [{ detail: 'notAuthorized', text: DETAILS.notAuthorized, change: { loan: { partnerId: 'partner-b' } } }],
    'funding investor': [{ detail: 'noFundingInvestor', text: DETAILS.noFundingInvestor, change: { loan: { fundingInvestorId: undefined } } }],
    // Credit below the amount (rather than a larger amount), so it combines with a malformed amount.
    'available credit': [{ detail: 'amountAboveCredit', text: DETAILS.amountAboveCredit, change: { loan: { availableCredit: 5 } } }],
    'one draw a day': [
      { detail: 'alreadyToday', text: DETAILS.alreadyToday, change: { drawnToday: true } },
      { detail: 'duplicateInBatch', text: DETAILS.duplicateInBatch, change: { earlier: true } },
    ],
  };
  const ALL = ELEMENT_RULES.flatMap((r, place) => {
    const breakers: readonly { readonly detail: DetailKey; readonly text: string; readonly change: Change }[] = BREAKERS[r.name] ?? [];
    return breakers.map((b) => ({ ...b, rule: r.name, place }));
  });
  type Placed = (typeof ALL)[number];
  const name = (b: Placed) => `${b.rule}:${b.detail}`;

  function apply(c: Case, { fields, loan, drawnToday, earlier }: Change): Case {
    const merged: Record<string, string> = {};
    for (const [k, v] of Object.entries({ ...c.fields, ...fields })) if (v !== undefined) merged[k] = v;
    return {
      fields: merged,
      loan: loan === undefined ? c.loan : loan === null ? undefined : ({ ...c.loan, ...loan } as Loan),
      drawnToday: drawnToday ?? c.drawnToday,
      earlier: earlier ?? c.earlier,
    };
  }

  /** The parts of the case a change sets: `field:<key>`, `loan` (its existence), `loan:<field>`, `today`, `earlier`. */
  function parts({ fields, loan, drawnToday, earlier }: Change): string[] {
    return [
      ...Object.keys(fields ?? {}).map((k) => `field:${k}`),
      ...(loan === null ? ['loan'] : Object.keys(loan ?? {}).map((f) => `loan:${f}`)),
      ...(drawnToday ? ['today'] : []),
      ...(earlier ? ['earlier'] : []),
    ];
  }
  /** Two changes combine when neither sets a part the other sets, or a field of a loan the other removes. */
  const clash = (a: Change, b: Change) => parts(a).some((p) => parts(b).some((q) => p === q || `${p}:`.startsWith(`${q}:`) || `${q}:`.startsWith(`${p}:`)));

  /** The error the code gives the case's element: the body reader for the element rules, then the draw rules. */
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
  const expected = (b: Placed) => ({ code: elementRule(b.rule).code, detail: b.text });

  test('every rule of the catalogue can be broken here, with details of that rule', () => {
    expect({ noWayToBreak: ELEMENT_RULES.map((r) => r.name).filter((rule) => !ALL.some((b) => b.rule === rule)) }).toEqual({ noWayToBreak: [] });
    for (const b of ALL) expect(elementRule(b.rule).details).toContain(b.detail);
    expect(errorOf(BASE)).toBeUndefined();
  });

  test.each(ALL.map((b) => [name(b), b] as const))('%s alone gives its code and detail', (_, b) => {
    expect(errorOf(apply(BASE, b.change))).toEqual(expected(b));
  });

  const LATER = ALL.flatMap((first) => ALL.filter((second) => second.place > first.place).map((second) => [first, second] as const));
  const PAIRS = LATER.filter(([first, second]) => !clash(first.change, second.change)).map(
    ([first, second]) => [`${name(first)} and ${name(second)}`, first, second] as const,
  );

  test('every pair of rules is tested, but a missing loan with a field of that loan', () => {
    const left = LATER.filter(([first, second]) => clash(first.change, second.change));
    const noLoanAndItsField = ([a, b]: readonly [Placed, Placed]) => [a, b].some((x) => x.change.loan === null) && [a, b].some((x) => x.change.loan);
    expect(left.filter((pair) => !noLoanAndItsField(pair)).map(([a, b]) => `${name(a)} and ${name(b)}`)).toEqual([]);
  });

  test.each(PAIRS)('%s: the earlier rule wins', (_, first, second) => {
    // Either order of applying: each changes a different part of the case.
    expect(errorOf(apply(apply(BASE, second.change), first.change))).toEqual(expected(first));
    expect(errorOf(apply(apply(BASE, first.change), second.change))).toEqual(expected(first));
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
  const NOT_BY_THE_BODY_READER: readonly DetailKey[] = [
    'idempotencyKeyForm',
    'idempotencyKeyReused',
    'idempotencyKeyExpired',
    'idempotencyKeyOutcomeForgotten',
  ];
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
