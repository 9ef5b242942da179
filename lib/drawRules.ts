/**
 * The lender's draw rules (docs/contract.md §2.3 rows 4–8): a pure function of the batch, the loans
 * read from storage, today's existing draws and the caller's partner id. No I/O, no clock.
 */
import { DETAILS, type ElementError } from './problem';
import type { DrawRequest } from './requestBody';

/** A loan as read from the Loans table (absent properties stay undefined). */
export interface Loan {
  readonly partnerId?: string;
  /** Dollars; undefined when the row has no numeric AvailableCredit (then there is no credit). */
  readonly availableCredit?: number;
  readonly fundingInvestorId?: string;
}

export type RulesVerdict = { readonly accepted: true } | { readonly accepted: false; readonly errors: readonly ElementError[] };

/**
 * Credit in whole cents, rounded down: a fraction of a cent is not credit. The product is first
 * cleared of binary floating-point noise (1.13 × 100 is 112.99999999999999, which is 113 cents).
 * A loan without numeric credit has none.
 */
export function creditCents(loan: Loan): number {
  const credit = loan.availableCredit;
  if (typeof credit !== 'number' || !Number.isFinite(credit)) return 0;
  return Math.floor(Number((credit * 100).toFixed(6)));
}

/**
 * Every element gets at most one error, the first rule that applies, in contract order.
 * @param loans      loans by canonical loan number (decimal string); missing = no such loan
 * @param drawnToday loan numbers that already have a draw row for today's business date (a set, or a map keyed by them)
 */
export function applyDrawRules(
  requests: readonly DrawRequest[],
  loans: ReadonlyMap<string, Loan>,
  drawnToday: Pick<ReadonlySet<string>, 'has'>,
  partnerId: string,
): RulesVerdict {
  const errors: ElementError[] = [];
  const seen = new Set<string>();
  for (const request of requests) {
    const key = String(request.loanNumber);
    const pending = drawnToday.has(key) ? DETAILS.alreadyToday : seen.has(key) ? DETAILS.duplicateInBatch : undefined;
    const error = firstBrokenRule(request, loans.get(key), pending, partnerId);
    seen.add(key);
    if (error) errors.push(error);
  }
  return errors.length > 0 ? { accepted: false, errors } : { accepted: true };
}

function firstBrokenRule(
  request: DrawRequest,
  loan: Loan | undefined,
  /** Why the loan already has a pending draw, if it has one. */
  pending: string | undefined,
  partnerId: string,
): ElementError | undefined {
  const { index, loanNumber, pointers } = request;
  const fail = (code: ElementError['code'], detail: string, pointer?: string): ElementError =>
    pointer === undefined ? { index, loanNumber, code, detail } : { index, loanNumber, code, pointer, detail };

  if (loan === undefined) return fail('InvalidLoanNumber', DETAILS.loanNotFound, pointers.loanNumber);
  // Nothing further about someone else's loan is revealed.
  if (loan.partnerId !== partnerId) return fail('InvalidAuthorization', DETAILS.notAuthorized, pointers.loanNumber);
  if (loan.fundingInvestorId === undefined || loan.fundingInvestorId.trim() === '') {
    return fail('InvalidFundingInvestor', DETAILS.noFundingInvestor);
  }
  if (request.amountCents > creditCents(loan)) return fail('InvalidAmount', DETAILS.amountAboveCredit, pointers.amount);
  if (pending !== undefined) return fail('PendingTransactionRequest', pending, pointers.loanNumber);
  return undefined;
}
