/**
 * A straightforward reading of docs/contract.md §2.3 rows 4–8, written independently of lib/drawRules.ts:
 * the oracle the rules (and the handler) are checked against with generated inputs.
 */
import fc from 'fast-check';
import type { ErrorCode } from '../../lib/errorCatalogue';

export interface ModelLoan {
  readonly partnerId?: string;
  /** Credit as whole cents plus a fraction of a cent below 1, which never counts. */
  readonly creditCents?: number;
  readonly creditFraction: number;
  readonly fundingInvestorId?: string;
}

export interface ModelRequest {
  readonly loanNumber: number;
  readonly amountCents: number;
}

/** The codes rules 4–8 can give (the model names them itself; a code the catalogue does not know fails to compile). */
export type ModelCode = Exclude<ErrorCode, 'InvalidRequest'>;

/** The dollars stored as AvailableCredit for a model loan; undefined when it has none. */
export function creditDollars(loan: ModelLoan): number | undefined {
  return loan.creditCents === undefined ? undefined : (loan.creditCents + loan.creditFraction) / 100;
}

/** Each element's error code, or undefined when it passes; the batch is accepted when all pass. */
export function modelVerdicts(
  requests: readonly ModelRequest[],
  loans: ReadonlyMap<number, ModelLoan>,
  drawnToday: ReadonlySet<number>,
  partnerId: string,
): (ModelCode | undefined)[] {
  return requests.map((request, i) => {
    const loan = loans.get(request.loanNumber);
    if (loan === undefined) return 'InvalidLoanNumber';
    if (loan.partnerId !== partnerId) return 'InvalidAuthorization';
    if (loan.fundingInvestorId === undefined || loan.fundingInvestorId.trim().length === 0) return 'InvalidFundingInvestor';
    if (request.amountCents > (loan.creditCents ?? 0)) return 'InvalidAmount';
    const earlier = requests.slice(0, i).some((r) => r.loanNumber === request.loanNumber);
    if (drawnToday.has(request.loanNumber) || earlier) return 'PendingTransactionRequest';
    return undefined;
  });
}

/** A world of a few loans, so batches often repeat a loan and hit every rule. */
export const scenario = (partners: readonly string[], loanNumbers: readonly number[]) =>
  fc
    .record({
      partnerId: fc.constantFrom(...partners),
      loans: fc.array(
        fc.record({
          loanNumber: fc.constantFrom(...loanNumbers),
          partnerId: fc.option(fc.constantFrom(...partners), { nil: undefined }),
          creditCents: fc.option(fc.integer({ min: 0, max: 500_00 }), { nil: undefined, freq: 6 }),
          creditFraction: fc.oneof(fc.constant(0), fc.constantFrom(0.5, 0.99, 0.01)),
          fundingInvestorId: fc.option(fc.constantFrom('INV-1', 'INV-2', '', '   '), { nil: undefined, freq: 4 }),
        }),
        { maxLength: loanNumbers.length },
      ),
      drawnToday: fc.uniqueArray(fc.constantFrom(...loanNumbers), { maxLength: 2 }),
      requests: fc.array(
        fc.record({
          loanNumber: fc.constantFrom(...loanNumbers),
          amountCents: fc.oneof(fc.integer({ min: 100, max: 600_00 }), fc.constantFrom(100, 5_000, 10_000, 50_000)),
          /** Half the time the amount sits on the loan's credit: one cent below, at, or one cent above. */
          nearCredit: fc.option(fc.constantFrom(-1, 0, 1), { nil: undefined, freq: 2 }),
        }),
        { minLength: 1, maxLength: 12 },
      ),
    })
    .map(({ requests, ...world }) => {
      const credit = new Map(world.loans.map((l) => [l.loanNumber, l.creditCents]));
      return {
        ...world,
        requests: requests.map(({ loanNumber, amountCents, nearCredit }) => {
          const cents = credit.get(loanNumber);
          const near = nearCredit === undefined || cents === undefined ? amountCents : Math.max(100, cents + nearCredit);
          return { loanNumber, amountCents: near };
        }),
      };
    });
