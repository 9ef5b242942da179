/**
 * The handler end to end against real Azurite and real RS256 tokens: 204 and what is stored,
 * request-shape 400s, draw-rule 400s, case-insensitive keys, all-or-nothing.
 */
import { FIELDS_READ } from '../../lib/drawRules';
import { LOAN_FIELDS, type LoanColumnType } from '../../lib/loans';
import { CLIENT, Harness, OTHER_PARTNER, PARTNER, draw, todayUtc } from '../support/harness';
import { expectGenericProblem, expectProblem400 } from '../support/problems';

let h: Harness;
beforeAll(async () => {
  h = await Harness.start();
});
afterAll(() => h.stop());

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

describe('accepted batches', () => {
  test('one draw: 204 with X-Request-Id, no body, and exactly one pending row with the contract properties', async () => {
    const loan = await h.loan({ availableCredit: 500 });
    const reply = await h.post([{ loanNumber: loan, requestor: '  jane.doe@partner.example  ', amount: 125.5 }]);
    expect(reply.status).toBe(204);
    expect(reply.text).toBe('');
    expect(reply.headers['x-request-id']).toMatch(UUID);

    const rows = await h.drawsFor(loan);
    expect(rows).toHaveLength(1);
    const [row] = rows;
    expect(row).toMatchObject({
      partitionKey: todayUtc(),
      rowKey: String(loan),
      Amount: 125.5,
      Requestor: 'jane.doe@partner.example',
      PartnerId: PARTNER,
      ClientId: CLIENT,
      Status: 'Pending',
      RequestId: reply.headers['x-request-id'],
      BatchIndex: 0,
    });
    expect(Math.abs(Date.parse(row.SubmittedAt as string) - Date.now())).toBeLessThan(60_000);
    // Stored EDM types, as the loan-servicing system reads them.
    const raw = await h.rawDraw(todayUtc(), loan);
    expect(raw).toContain('"Amount":125.5,');
    expect(raw).toContain('"BatchIndex":0,');
    expect(raw).toContain('"SubmittedAt@odata.type":"Edm.DateTime"');
  });

  test('a whole-dollar amount is still stored as a Double', async () => {
    const loan = await h.loan();
    expect((await h.post([draw(loan, 100)])).status).toBe(204);
    expect(await h.rawDraw(todayUtc(), loan)).toContain('"Amount":100.0,');
  });

  test('a batch of several loans is recorded whole, each row with its batch index', async () => {
    const loans = [await h.loan(), await h.loan(), await h.loan()];
    const reply = await h.post(loans.map((l, i) => draw(l, 10 + i)));
    expect(reply.status).toBe(204);
    const rows = await h.drawsFor(...loans);
    expect(rows.map((r) => [r.rowKey, r.BatchIndex, r.Amount]).sort()).toEqual(loans.map((l, i) => [String(l), i, 10 + i]).sort());
  });

  test('keys are case-insensitive, loanNumber may be a digit string with leading zeros, unknown keys are not stored', async () => {
    const loan = await h.loan();
    const reply = await h.post([{ LOANNUMBER: `000${loan}`, Requestor: 'ops', AMOUNT: 1, note: 'ignored', RowKey: 'x' }]);
    expect(reply.status).toBe(204);
    const [row] = await h.drawsFor(loan);
    expect(row).toMatchObject({ rowKey: String(loan), Requestor: 'ops', Amount: 1 });
    expect(row).not.toHaveProperty('note');
  });

  test('an amount exactly equal to the available credit is accepted', async () => {
    const loan = await h.loan({ availableCredit: 750.5 });
    expect((await h.post([draw(loan, 750.5)])).status).toBe(204);
  });

  test('__proto__ and constructor keys reach no prototype', async () => {
    const loan = await h.loan();
    const text = `[{"__proto__":{"polluted":true},"constructor":{"prototype":{"polluted":true}},"loanNumber":${loan},"requestor":"r","amount":5}]`;
    expect((await h.post(text)).status).toBe(204);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(Object.prototype.hasOwnProperty.call(Object.prototype, 'polluted')).toBe(false);
  });

  test('deeply nested JSON is answered as a request-level shape error (400), not a crash', async () => {
    const reply = await h.post('['.repeat(20_000) + ']'.repeat(20_000));
    expectProblem400(reply);
    expect(reply.body.errors).toEqual([{ error: 'Invalid Request', code: 'InvalidRequest', detail: 'the request body must not nest deeper than 32 levels' }]);
  });

  test('content type with a charset parameter is accepted', async () => {
    const loan = await h.loan();
    expect((await h.post([draw(loan)], { headers: { 'content-type': 'application/json; charset=utf-8' } })).status).toBe(204);
  });
});

describe('request-level Invalid Request (nothing recorded)', () => {
  const cases: Array<[string, unknown, Record<string, string>, string]> = [
    ['wrong content type', '[]', { 'content-type': 'text/plain' }, 'Content-Type must be application/json'],
    ['no content type', '[]', { 'content-type': '' }, 'Content-Type must be application/json'],
    ['not JSON', '[{"loanNumber": 1,', {}, 'the request body is not valid JSON'],
    ['an object, not an array', '{"loanNumber":1}', {}, 'the request body must be a JSON array of draw requests'],
    ['an empty array', '[]', {}, 'the request body must be an array of 1 to 100 draw requests'],
    ['101 elements', JSON.stringify(Array.from({ length: 101 }, () => draw(1))), {}, 'the request body must be an array of 1 to 100 draw requests'],
    ['more than 256 KiB', `[${' '.repeat(256 * 1024)}]`, {}, 'the request body must be at most 262144 bytes'],
    ['a charset other than UTF-8', '[]', { 'content-type': 'application/json; charset=iso-8859-1' }, 'Content-Type must be application/json'],
  ];
  test.each(cases)('%s', async (_name, body, headers, detail) => {
    const before = (await h.draws()).length;
    const reply = await h.post(body, { headers });
    expectProblem400(reply);
    expect(reply.body.detail).toBe('The request was rejected; no draw request was submitted.');
    expect(reply.body.errors).toEqual([{ error: 'Invalid Request', code: 'InvalidRequest', detail }]);
    expect((await h.draws()).length).toBe(before);
  });
});

describe('the rules on the element alone: every failing element listed', () => {
  test('mixed batch lists each failing element once with its first failing rule', async () => {
    const good = await h.loan();
    const reply = await h.post([
      draw(good),
      { loanNumber: good, amount: 5 }, // 1: requestor missing
      { loanNumber: 'abc', requestor: 'r', amount: 0.5 }, // 2 beats 3
      { loanNumber: good, requestor: 'r', amount: 10.001 }, // 3
      'not an object', // 1
      { loanNumber: good, LoanNumber: good, requestor: 'r', amount: 5 }, // 1: ambiguous
    ]);
    expectProblem400(reply);
    expect(reply.body.detail).toBe('5 of 6 draw requests were rejected; none was submitted.');
    expect(reply.body.errors).toEqual([
      { index: 1, loanNumber: good, error: 'Invalid Request', code: 'InvalidRequest', pointer: '/1/requestor', detail: 'requestor is required' },
      {
        index: 2,
        error: 'Invalid Loan Number',
        code: 'InvalidLoanNumber',
        pointer: '/2/loanNumber',
        detail: 'loanNumber must be a positive integer or a string of 1 to 16 digits',
      },
      {
        index: 3,
        loanNumber: good,
        error: 'Invalid Amount',
        code: 'InvalidAmount',
        pointer: '/3/amount',
        detail: 'amount must be a number of at least 1.00 with at most 2 decimal places',
      },
      { index: 4, error: 'Invalid Request', code: 'InvalidRequest', pointer: '/4', detail: 'a draw request must be a JSON object' },
      {
        index: 5,
        error: 'Invalid Request',
        code: 'InvalidRequest',
        pointer: '/5/LoanNumber',
        detail: 'more than one key names loanNumber (keys are case-insensitive)',
      },
    ]);
    expect(await h.drawsFor(good)).toHaveLength(0);
  });

  test.each([
    [0.99, 'InvalidAmount'],
    [1, null],
    [1.001, 'InvalidAmount'],
    ['5', 'InvalidAmount'],
  ])('amount %p → %p', async (amount, code) => {
    const loan = await h.loan();
    const reply = await h.post([draw(loan, amount as number)]);
    if (code === null) {
      expect(reply.status).toBe(204);
    } else {
      expectProblem400(reply);
      expect(reply.body.errors.map((e: { code: string }) => e.code)).toEqual([code]);
      expect(await h.drawsFor(loan)).toHaveLength(0);
    }
  });
});

describe('the rules against storage', () => {
  test('every failing element is listed with the contract error, and nothing is recorded', async () => {
    const ok = await h.loan({ availableCredit: 100 });
    const others = await h.loan({ partnerId: OTHER_PARTNER });
    const noInvestor = await h.loan({ fundingInvestorId: undefined });
    const blankInvestor = await h.loan({ fundingInvestorId: '  ' });
    const small = await h.loan({ availableCredit: 99.99 });
    const drawnToday = await h.loan();
    expect((await h.post([draw(drawnToday, 5)])).status).toBe(204);
    const missing = 9_000_000_000_001;

    const reply = await h.post([
      draw(ok, 100), // exactly the credit: fine on its own
      draw(missing),
      draw(others),
      draw(noInvestor),
      draw(blankInvestor),
      draw(small, 100), // a cent above
      draw(drawnToday, 5),
      draw(ok, 1), // same loan earlier in the batch
    ]);
    expectProblem400(reply);
    expect(reply.body.detail).toBe('7 of 8 draw requests were rejected; none was submitted.');
    expect(reply.body.errors).toEqual([
      {
        index: 1,
        loanNumber: missing,
        error: 'Invalid Loan Number',
        code: 'InvalidLoanNumber',
        pointer: '/1/loanNumber',
        detail: 'no loan with this loan number exists',
      },
      {
        index: 2,
        loanNumber: others,
        error: 'Invalid Authorization',
        code: 'InvalidAuthorization',
        pointer: '/2/loanNumber',
        detail: 'this loan cannot be drawn on by the caller',
      },
      {
        index: 3,
        loanNumber: noInvestor,
        error: 'Invalid Funding Investor',
        code: 'InvalidFundingInvestor',
        detail: 'the loan has no funding investor assigned',
      },
      {
        index: 4,
        loanNumber: blankInvestor,
        error: 'Invalid Funding Investor',
        code: 'InvalidFundingInvestor',
        detail: 'the loan has no funding investor assigned',
      },
      {
        index: 5,
        loanNumber: small,
        error: 'Invalid Amount',
        code: 'InvalidAmount',
        pointer: '/5/amount',
        detail: "amount must be between 1.00 and the loan's available credit",
      },
      {
        index: 6,
        loanNumber: drawnToday,
        error: 'Pending Transaction Request',
        code: 'PendingTransactionRequest',
        pointer: '/6/loanNumber',
        detail: 'a draw request for this loan was already submitted today',
      },
      {
        index: 7,
        loanNumber: ok,
        error: 'Pending Transaction Request',
        code: 'PendingTransactionRequest',
        pointer: '/7/loanNumber',
        detail: 'an earlier draw request in this batch names the same loan',
      },
    ]);
    expect(await h.drawsFor(ok, others, noInvestor, blankInvestor, small)).toHaveLength(0);
    expect(await h.drawsFor(drawnToday)).toHaveLength(1);
  });

  test('a second identical post the same day is Pending Transaction Request', async () => {
    const loan = await h.loan();
    expect((await h.post([draw(loan)])).status).toBe(204);
    const again = await h.post([draw(loan)]);
    expectProblem400(again);
    expect(again.body.errors).toEqual([expect.objectContaining({ index: 0, loanNumber: loan, code: 'PendingTransactionRequest' })]);
    expect(await h.drawsFor(loan)).toHaveLength(1);
  });

  test('loans without numeric AvailableCredit have no credit, and on-call sees one data-quality warning naming them all', async () => {
    const [loan, other, fine] = [await h.loan(), await h.loan(), await h.loan()];
    for (const [n, credit] of [
      [loan, 'lots'],
      [other, undefined],
    ] as const)
      await h
        .table('loans')
        .upsertEntity(
          { partitionKey: String(n), rowKey: '', PartnerId: PARTNER, FundingInvestorId: 'I', ...(credit === undefined ? {} : { AvailableCredit: credit }) },
          'Replace',
        );
    const reply = await h.post([draw(loan, 1), draw(other, 1), draw(fine, 1)]);
    expectProblem400(reply);
    expect(reply.body.errors.map((e: { code: string }) => e.code)).toEqual(['InvalidAmount', 'InvalidAmount']);
    const warnings = h.logs.filter((l) => l.includes('Data quality: LoanWithoutCredit'));
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toContain(`loanNumbers=${loan},${other}`);
  });

  test('the store reads every loan field a rule declares from a real Loans row, each as its type', async () => {
    const SAMPLE: { readonly [T in LoanColumnType]: { readonly stored: unknown; readonly read: unknown } } = {
      String: { stored: 'declared', read: 'declared' },
      Double: { stored: { value: '12.5', type: 'Double' }, read: 12.5 },
    };
    const loan = String(await h.loan());
    const sample = (field: (typeof FIELDS_READ)[number]) => SAMPLE[LOAN_FIELDS[field].type];
    const columns = Object.fromEntries(FIELDS_READ.map((field) => [LOAN_FIELDS[field].column, sample(field).stored]));
    await h.table('loans').upsertEntity({ partitionKey: loan, rowKey: '', ...columns, NotARuleColumn: 'ignored' }, 'Replace');
    const state = await h.deps.store.readBatchState(todayUtc(), [loan]);
    expect(state.ok && state.value.loans.get(loan)).toStrictEqual(Object.fromEntries(FIELDS_READ.map((field) => [field, sample(field).read])));
  });

  test('AvailableCredit stored as Int32 or Int64 counts as credit', async () => {
    const int32 = await h.loan();
    const int64 = await h.loan();
    await h
      .table('loans')
      .upsertEntity({ partitionKey: String(int32), rowKey: '', PartnerId: PARTNER, FundingInvestorId: 'I', AvailableCredit: 300 }, 'Replace');
    await h
      .table('loans')
      .upsertEntity(
        { partitionKey: String(int64), rowKey: '', PartnerId: PARTNER, FundingInvestorId: 'I', AvailableCredit: { value: '300', type: 'Int64' } },
        'Replace',
      );
    expect((await h.post([draw(int32, 300), draw(int64, 300)])).status).toBe(204);
  });
});

describe('business day', () => {
  test('DRAW_DAY_TIMEZONE decides the partition: 03:00 UTC is still yesterday in New York', async () => {
    const fixed = new Date('2026-03-10T03:00:00Z');
    const ny = await Harness.start({ DRAW_DAY_TIMEZONE: 'America/New_York' }, { now: () => fixed });
    try {
      const loan = await ny.loan();
      expect((await ny.post([draw(loan)])).status).toBe(204);
      expect((await ny.drawsFor(loan)).map((r) => r.partitionKey)).toEqual(['2026-03-09']);
    } finally {
      await ny.stop();
    }
  });

  test('MAX_BATCH_SIZE lowers the batch limit', async () => {
    const small = await Harness.start({ MAX_BATCH_SIZE: '2' });
    try {
      const reply = await small.post([draw(1), draw(2), draw(3)]);
      expectProblem400(reply);
      expect(reply.body.errors[0].detail).toBe('the request body must be an array of 1 to 2 draw requests');
    } finally {
      await small.stop();
    }
  });
});

describe('a defect in the service', () => {
  test('is 500 problem+json with a generic detail: no stack, no error text; the stack goes to the log', async () => {
    const store = h.deps.store;
    const realRead = store.readBatchState.bind(store);
    // A fake only for what a real part cannot produce: a bug that throws.
    store.readBatchState = () => Promise.reject(new TypeError('Cannot read properties of undefined (secret-internal-detail)'));
    try {
      const loan = await h.loan();
      const reply = await h.post([draw(loan)]);
      expectGenericProblem(reply, 500);
      expect(reply.text).not.toContain('secret-internal-detail');
      expect(h.logs.join('\n')).toContain('DrawRequest failed: TypeError');
      expect(await h.drawsFor(loan)).toHaveLength(0);
    } finally {
      store.readBatchState = realRead;
    }
  });
});
