/**
 * A loan as the draw rules see it: the `Loans` columns a rule may read (docs/contract.md §4), each with
 * the EDM type it is read as, and how a stored row becomes a Loan. The store selects only the columns
 * the rules declare (lib/drawRules.ts).
 */

/** What a stored value of each EDM type a rule reads becomes: any other stored type, or none, is undefined. */
const READERS = {
  String: (value: unknown): string | undefined => (typeof value === 'string' ? value : undefined),
  /** Int32 and Int64 (which the SDK reads as a bigint) count as a Double too. */
  Double: (value: unknown): number | undefined =>
    typeof value === 'bigint' ? Number(value) : typeof value === 'number' && Number.isFinite(value) ? value : undefined,
};

export type LoanColumnType = keyof typeof READERS;

/** Each field of a Loan: the `Loans` column it is read from, and as which type. */
export const LOAN_FIELDS = {
  partnerId: { column: 'PartnerId', type: 'String' },
  /** Dollars; undefined when the row has no numeric AvailableCredit (then there is no credit). */
  availableCredit: { column: 'AvailableCredit', type: 'Double' },
  fundingInvestorId: { column: 'FundingInvestorId', type: 'String' },
} as const satisfies Readonly<Record<string, { readonly column: string; readonly type: LoanColumnType }>>;

export type LoanField = keyof typeof LOAN_FIELDS;

/** A loan as read from the Loans table: a field absent from the row, or stored as another type, is undefined. */
export type Loan = { readonly [F in LoanField]?: Exclude<ReturnType<(typeof READERS)[(typeof LOAN_FIELDS)[F]['type']]>, undefined> };

/** The `Loans` columns that hold `fields`, for a read's `$select`. */
export function loanColumns(fields: readonly LoanField[]): string[] {
  return fields.map((field) => LOAN_FIELDS[field].column);
}

/** The Loan a stored row holds: each of `fields` read from its column as its type. */
export function loanOf(row: Readonly<Record<string, unknown>>, fields: readonly LoanField[]): Loan {
  const loan: { [F in LoanField]?: unknown } = {};
  for (const field of fields) {
    const { column, type } = LOAN_FIELDS[field];
    loan[field] = READERS[type](row[column]);
  }
  return loan as Loan;
}
