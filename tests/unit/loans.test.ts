/** A stored `Loans` row → the loan the rules see (lib/loans.ts): each declared field read as its type, nothing else. */
import { FIELDS_READ } from '../../lib/drawRules';
import { LOAN_FIELDS, loanColumns, loanOf, type LoanColumnType, type LoanField } from '../../lib/loans';

test('every loan field is read by some rule (a field no rule reads is not selected, so it would always be undefined)', () => {
  expect(Object.keys(LOAN_FIELDS).filter((field) => !FIELDS_READ.includes(field as LoanField))).toEqual([]);
});

test('the columns of fields are their Loans columns, in the order given', () => {
  expect(loanColumns(['fundingInvestorId', 'partnerId'])).toEqual(['FundingInvestorId', 'PartnerId']);
});

/** A field of each type, so that each reader is tested. */
const OF_TYPE: { readonly [T in LoanColumnType]: LoanField } = { String: 'partnerId', Double: 'availableCredit' };

test.each([
  ['String', 'P-1', 'P-1'],
  ['String', '', ''],
  ['String', 12, undefined],
  ['String', true, undefined],
  ['Double', 750.5, 750.5],
  ['Double', 300, 300], // an Int32
  ['Double', 300n, 300], // an Int64, which the SDK reads as a bigint
  ['Double', Number.NaN, undefined],
  ['Double', Number.POSITIVE_INFINITY, undefined],
  ['Double', '1000', undefined],
  ['Double', null, undefined],
] as const)('a %s column holding %p is read as %p', (type, stored, read) => {
  const field = OF_TYPE[type];
  expect(loanOf({ [LOAN_FIELDS[field].column]: stored }, [field])).toStrictEqual({ [field]: read });
});

test('only the fields asked for are read; other columns of the row are ignored', () => {
  const row = { PartnerId: 'P-1', AvailableCredit: 10, FundingInvestorId: 'I', Frozen: true, Notes: 'x' };
  expect(loanOf(row, ['partnerId'])).toStrictEqual({ partnerId: 'P-1' });
  expect(loanOf({}, ['partnerId', 'availableCredit'])).toStrictEqual({ partnerId: undefined, availableCredit: undefined });
});
