import { DRAW_RULES, applyDrawRules, creditCents, type Loan } from '../../lib/drawRules';
import { parseDrawRequests, type DrawRequest } from '../../lib/requestBody';
import { STORAGE_RULES, elementRule, type DetailOf, type RuleName } from '../../lib/errorCatalogue';
import { DETAILS, type ElementError } from '../../lib/problem';

const PARTNER = 'partner-a';

/** A canonical request as parseDrawRequests produces it (amountCents = Math.round(amount * 100)). */
function req(index: number, loanNumber: number, amount: number, amountCents = Math.round(amount * 100)): DrawRequest {
  return {
    index,
    loanNumber,
    requestor: 'Pat',
    amount,
    amountCents,
    pointers: { loanNumber: `/${index}/loanNumber`, amount: `/${index}/amount` },
  };
}

function loan(overrides: Partial<Record<keyof Loan, unknown>> = {}): Loan {
  return { partnerId: PARTNER, availableCredit: 1000, fundingInvestorId: 'investor-1', ...overrides } as Loan;
}

function loans(entries: Record<string, Loan>): Map<string, Loan> {
  return new Map(Object.entries(entries));
}

function run(requests: DrawRequest[], loanMap: Map<string, Loan>, drawnToday: string[] = [], partnerId = PARTNER) {
  return applyDrawRules(requests, loanMap, new Set(drawnToday), partnerId);
}

/** The code of the rule named `rule` and its detail `key`, from the error catalogue. */
function ruleError<R extends RuleName>(rule: R, key: DetailOf<R>): Pick<ElementError, 'code' | 'detail'> {
  return { code: elementRule(rule).code, detail: DETAILS[key] as string };
}

/** The exact errors the contract documents for each rule, for element `index` on loan `loanNumber`. */
const expected = {
  notFound: (index: number, loanNumber: number): ElementError => ({
    index,
    loanNumber,
    pointer: `/${index}/loanNumber`,
    ...ruleError('loan exists', 'loanNotFound'),
  }),
  notAuthorized: (index: number, loanNumber: number): ElementError => ({
    index,
    loanNumber,
    pointer: `/${index}/loanNumber`,
    ...ruleError('loan owner', 'notAuthorized'),
  }),
  noInvestor: (index: number, loanNumber: number): ElementError => ({
    index,
    loanNumber,
    ...ruleError('funding investor', 'noFundingInvestor'),
  }),
  aboveCredit: (index: number, loanNumber: number): ElementError => ({
    index,
    loanNumber,
    pointer: `/${index}/amount`,
    ...ruleError('available credit', 'amountAboveCredit'),
  }),
  alreadyToday: (index: number, loanNumber: number): ElementError => ({
    index,
    loanNumber,
    pointer: `/${index}/loanNumber`,
    ...ruleError('one draw a day', 'alreadyToday'),
  }),
  duplicate: (index: number, loanNumber: number): ElementError => ({
    index,
    loanNumber,
    pointer: `/${index}/loanNumber`,
    ...ruleError('one draw a day', 'duplicateInBatch'),
  }),
};

describe('applyDrawRules: each rule alone', () => {
  test('an all-valid batch is accepted', () => {
    const verdict = run([req(0, 1, 10), req(1, 2, 1000), req(2, 3, 1)], loans({ 1: loan(), 2: loan(), 3: loan() }));
    expect(verdict).toStrictEqual({ accepted: true });
  });

  test('loan exists: no loan with that number → Invalid Loan Number with pointer to loanNumber', () => {
    expect(run([req(0, 42, 10)], loans({ 43: loan() }))).toStrictEqual({ accepted: false, errors: [expected.notFound(0, 42)] });
  });

  test('loan exists: the loan map is keyed by the decimal string without leading zeros', () => {
    expect(run([req(0, 7, 10)], loans({ '007': loan() }))).toStrictEqual({ accepted: false, errors: [expected.notFound(0, 7)] });
    expect(run([req(0, 7, 10)], loans({ '7': loan() }))).toStrictEqual({ accepted: true });
  });

  test.each([
    ['another partner', 'partner-b'],
    ['partner id differing only in case', 'PARTNER-A'],
    ['missing partnerId on the loan', undefined],
    ['empty partnerId on the loan', ''],
  ])('loan owner: %s → Invalid Authorization with pointer to loanNumber', (_name, partnerId) => {
    expect(run([req(0, 5, 10)], loans({ 5: loan({ partnerId }) }))).toStrictEqual({
      accepted: false,
      errors: [expected.notAuthorized(0, 5)],
    });
  });

  test.each([
    ['missing', undefined],
    ['empty', ''],
    ['whitespace-only', '   '],
    ['tab/newline only', '\t\n'],
  ])('funding investor: %s → Invalid Funding Investor without pointer', (_name, fundingInvestorId) => {
    const verdict = run([req(0, 6, 10)], loans({ 6: loan({ fundingInvestorId }) }));
    expect(verdict).toStrictEqual({ accepted: false, errors: [expected.noInvestor(0, 6)] });
    if (!verdict.accepted) expect('pointer' in verdict.errors[0]).toBe(false);
  });

  test('funding investor: a non-blank funding investor passes', () => {
    expect(run([req(0, 6, 10)], loans({ 6: loan({ fundingInvestorId: ' x ' }) }))).toStrictEqual({ accepted: true });
  });

  test('available credit: amount above credit → Invalid Amount with pointer to amount', () => {
    expect(run([req(0, 8, 1000.01)], loans({ 8: loan({ availableCredit: 1000 }) }))).toStrictEqual({
      accepted: false,
      errors: [expected.aboveCredit(0, 8)],
    });
  });

  test('one draw a day: a draw already submitted today → Pending Transaction Request (already today)', () => {
    expect(run([req(0, 9, 10)], loans({ 9: loan() }), ['9'])).toStrictEqual({
      accepted: false,
      errors: [expected.alreadyToday(0, 9)],
    });
  });

  test('one draw a day: draws today for other loans do not matter', () => {
    expect(run([req(0, 9, 10)], loans({ 9: loan() }), ['90', '19', '09'])).toStrictEqual({ accepted: true });
  });
});

describe('applyDrawRules: what an element refused reveals', () => {
  // Which rule comes first is tested for every pair in tests/unit/errorPrecedence.test.ts, from the catalogue.
  test("no information about another partner's loan leaks: the error has only index, loanNumber, code, pointer, detail", () => {
    const verdict = run([req(0, 3, 10)], loans({ 3: loan({ partnerId: 'x', availableCredit: 1, fundingInvestorId: '' }) }));
    expect(verdict).toStrictEqual({ accepted: false, errors: [expected.notAuthorized(0, 3)] });
  });

  test('loan owner comes before every rule that reads more of the loan (contract §2.3)', () => {
    const owner = STORAGE_RULES.findIndex((r) => r.name === 'loan owner');
    const readsMore = STORAGE_RULES.filter((r) => DRAW_RULES[r.name].reads.some((field) => field !== 'partnerId'));
    expect({ beforeLoanOwner: readsMore.filter((r) => STORAGE_RULES.indexOf(r) < owner).map((r) => r.name) }).toEqual({ beforeLoanOwner: [] });
    expect(readsMore.length).toBeGreaterThan(0);
  });
});

describe('applyDrawRules: available credit, its boundaries in integer cents', () => {
  test.each([
    ['amount exactly equal to credit', 1000, 1000, true],
    ['one cent above credit', 1000, 1000.01, false],
    ['one cent below credit', 1000, 999.99, true],
    ['credit 750.5 vs 750.50', 750.5, 750.5, true],
    ['credit 750.5 vs 750.51', 750.5, 750.51, false],
    ['credit 750.5 vs 750.49', 750.5, 750.49, true],
    ['credit 0', 0, 1, false],
    ['negative credit', -5, 1, false],
    ['credit undefined, amount 1', undefined, 1, false],
    ['credit undefined, huge amount', undefined, 1e9, false],
    ['credit NaN (non-numeric)', NaN, 1, false],
    ['credit as a numeric string (non-numeric property)', '1000', 1, false],
    ['credit null', null, 1, false],
    ['credit 1.13 (×100 is 112.999…) vs 1.13', 1.13, 1.13, true],
    ['credit 19.99 (×100 is 1998.999…) vs 19.99', 19.99, 19.99, true],
    ['credit 4.35 (×100 is 434.999…) vs 4.35', 4.35, 4.35, true],
    ['credit 4.35 vs 4.36', 4.35, 4.36, false],
    ['credit 1.1+2.2 (float noise) vs 3.30', 1.1 + 2.2, 3.3, true],
    ['credit 1.1+2.2 (float noise) vs 3.31', 1.1 + 2.2, 3.31, false],
    ['credit 0.1+0.2 dollars vs 30 cents', 0.1 + 0.2, 0.3, true],
    ['credit 0.1+0.2 dollars vs 31 cents', 0.1 + 0.2, 0.31, false],
    ['large credit 12345678.9 vs equal amount', 12345678.9, 12345678.9, true],
    ['large credit 12345678.9 vs one cent more', 12345678.9, 12345678.91, false],
  ])('%s (credit %p, amount %p) → accepted=%p', (_name, availableCredit, amount, ok) => {
    const verdict = run([req(0, 11, amount)], loans({ 11: loan({ availableCredit }) }));
    expect(verdict).toStrictEqual(ok ? { accepted: true } : { accepted: false, errors: [expected.aboveCredit(0, 11)] });
  });

  test('compares amountCents, not the float amount', () => {
    // amount says 2000 dollars but the canonical cents say 10.00: the rules use cents.
    expect(run([req(0, 11, 2000, 1000)], loans({ 11: loan({ availableCredit: 10 }) }))).toStrictEqual({ accepted: true });
    expect(run([req(0, 11, 1, 1001)], loans({ 11: loan({ availableCredit: 10 }) }))).toStrictEqual({
      accepted: false,
      errors: [expected.aboveCredit(0, 11)],
    });
  });

  test('a credit with a fractional cent (750.505) does not allow 750.51, which is above it (docs/contract.md §2.3)', () => {
    const verdict = run([req(0, 11, 750.51)], loans({ 11: loan({ availableCredit: 750.505 }) }));
    expect(verdict).toStrictEqual({ accepted: false, errors: [expected.aboveCredit(0, 11)] });
  });

  test('a credit with a fractional cent (750.505) allows 750.50', () => {
    expect(run([req(0, 11, 750.5)], loans({ 11: loan({ availableCredit: 750.505 }) }))).toStrictEqual({ accepted: true });
  });
});

describe('creditCents', () => {
  test.each([
    [1000, 100000],
    [750.5, 75050],
    [1.13, 113],
    [19.99, 1999],
    [0.1 + 0.2, 30],
    [0, 0],
    [-5, -500],
    [undefined, 0],
    [NaN, 0],
    [Infinity, 0],
  ])('availableCredit %p → %p cents', (availableCredit, cents) => {
    expect(creditCents({ availableCredit })).toBe(cents);
  });
});

describe('applyDrawRules: one draw a day (today vs same batch)', () => {
  test('the first occurrence in the batch is not pending, every later one is (duplicate in batch)', () => {
    expect(run([req(0, 4, 10), req(1, 4, 10), req(2, 5, 10), req(3, 4, 10)], loans({ 4: loan(), 5: loan() }))).toStrictEqual({
      accepted: false,
      errors: [expected.duplicate(1, 4), expected.duplicate(3, 4)],
    });
  });

  test('a later occurrence is pending even when the first occurrence was rejected for another rule', () => {
    expect(run([req(0, 4, 5000), req(1, 4, 10)], loans({ 4: loan() }))).toStrictEqual({
      accepted: false,
      errors: [expected.aboveCredit(0, 4), expected.duplicate(1, 4)],
    });
  });

  test('already drawn today takes the "already today" detail for every occurrence', () => {
    expect(run([req(0, 4, 10), req(1, 4, 10)], loans({ 4: loan() }), ['4'])).toStrictEqual({
      accepted: false,
      errors: [expected.alreadyToday(0, 4), expected.alreadyToday(1, 4)],
    });
  });

  test('duplicates are detected on the canonical loan number ("0007" and 7 are the same loan)', () => {
    const parsed = parseDrawRequests(
      Buffer.from(
        JSON.stringify([
          { loanNumber: '0007', requestor: 'a', amount: 5 },
          { loanNumber: 7, requestor: 'b', amount: 6 },
        ]),
      ),
      100,
    );
    if (!parsed.ok) throw new Error('fixture did not parse');
    expect(run([...parsed.requests], loans({ 7: loan() }))).toStrictEqual({
      accepted: false,
      errors: [expected.duplicate(1, 7)],
    });
  });
});

describe('applyDrawRules: whole batch', () => {
  test('every failing element is listed, in index order, each with exactly one error', () => {
    const loanMap = loans({
      1: loan(),
      2: loan({ partnerId: 'other' }),
      3: loan({ fundingInvestorId: '' }),
      4: loan({ availableCredit: 5 }),
      5: loan(),
      6: loan(),
    });
    const requests = [
      req(0, 1, 10), // ok
      req(1, 99, 10), // loan exists
      req(2, 2, 10), // loan owner
      req(3, 3, 10), // funding investor
      req(4, 4, 10), // available credit
      req(5, 5, 10), // one draw a day (today)
      req(6, 1, 10), // one draw a day (duplicate of index 0)
      req(7, 6, 10), // ok
    ];
    expect(run(requests, loanMap, ['5'])).toStrictEqual({
      accepted: false,
      errors: [
        expected.notFound(1, 99),
        expected.notAuthorized(2, 2),
        expected.noInvestor(3, 3),
        expected.aboveCredit(4, 4),
        expected.alreadyToday(5, 5),
        expected.duplicate(6, 1),
      ],
    });
  });

  test('pointers use the keys as the partner spelled them', () => {
    const parsed = parseDrawRequests(
      Buffer.from('[{"LOANNUMBER":5,"requestor":"a","AMOUNT":50},{"LoanNumber":6,"requestor":"a","Amount":50},{"loannumber":5,"requestor":"a","amount":1}]'),
      100,
    );
    if (!parsed.ok) throw new Error('fixture did not parse');
    expect(run([...parsed.requests], loans({ 5: loan({ availableCredit: 10 }) }))).toStrictEqual({
      accepted: false,
      errors: [
        { index: 0, loanNumber: 5, code: 'InvalidAmount', pointer: '/0/AMOUNT', detail: DETAILS.amountAboveCredit },
        { index: 1, loanNumber: 6, code: 'InvalidLoanNumber', pointer: '/1/LoanNumber', detail: DETAILS.loanNotFound },
        { index: 2, loanNumber: 5, code: 'PendingTransactionRequest', pointer: '/2/loannumber', detail: DETAILS.duplicateInBatch },
      ],
    });
  });

  test('is pure: same inputs give the same verdict and inputs are not mutated', () => {
    const requests = [req(0, 1, 10), req(1, 1, 10)];
    const loanMap = loans({ 1: loan() });
    const drawn = new Set<string>(['2']);
    const first = applyDrawRules(requests, loanMap, drawn, PARTNER);
    const second = applyDrawRules(requests, loanMap, drawn, PARTNER);
    expect(second).toStrictEqual(first);
    expect(first).toStrictEqual({ accepted: false, errors: [expected.duplicate(1, 1)] });
    expect([...drawn]).toStrictEqual(['2']);
    expect([...loanMap.keys()]).toStrictEqual(['1']);
    expect(requests).toStrictEqual([req(0, 1, 10), req(1, 1, 10)]);
  });

  test('an empty batch is accepted (nothing to reject)', () => {
    expect(run([], loans({}))).toStrictEqual({ accepted: true });
  });
});
