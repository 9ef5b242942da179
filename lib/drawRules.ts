/**
 * The lender's draw rules checked against storage (docs/contract.md §2.3): a pure function of the
 * batch, the loans read from storage, today's existing draws and the caller's partner id. No I/O, no clock.
 *
 * Each rule is one declaration under its name in the error catalogue (lib/errorCatalogue.ts), which
 * fixes their order and their errors: the loan fields its check reads, the field its error points at,
 * and the check. The store reads exactly the fields the rules declare (FIELDS_READ); a check sees no other.
 */
import { DETAILS, STORAGE_RULES, type DetailOf, type StorageRuleName } from './errorCatalogue';
import type { Loan, LoanField } from './loans';
import type { ElementError } from './problem';
import type { DrawRequest } from './requestBody';

export type { Loan } from './loans';

/** What a check is given about one element. */
export interface Subject<F extends LoanField> {
  readonly request: DrawRequest;
  /** Whether the loan has a `Loans` row; when it has none, every field is undefined. */
  readonly exists: boolean;
  /** The fields the rule declares, and no others. */
  readonly loan: Pick<Loan, F>;
  readonly partnerId: string;
  /** Why the loan already has a pending draw, if it has one. */
  readonly pending?: 'alreadyToday' | 'duplicateInBatch';
}

type StorageDetail = DetailOf<StorageRuleName>;

export interface DrawRule<F extends LoanField, D extends StorageDetail> {
  /** The loan fields (lib/loans.ts) the check reads. */
  readonly reads: readonly F[];
  /** The element's field the error points at; none when no field of the request is at fault. */
  readonly pointer?: 'loanNumber' | 'amount';
  /** The rule's `detail` when it applies to the element; undefined when the element passes it. */
  readonly check: (subject: Subject<F>) => D | undefined;
}

/** A rule whose check is typed by what it declares: reading an undeclared field fails to compile. */
const rule = <D extends StorageDetail, F extends LoanField = never>(declaration: DrawRule<F, D>): DrawRule<F, D> => declaration;

/**
 * Credit in whole cents, rounded down: a fraction of a cent is not credit. The product is first
 * cleared of binary floating-point noise (1.13 × 100 is 112.99999999999999, which is 113 cents).
 * A loan without numeric credit has none.
 */
export function creditCents(loan: Pick<Loan, 'availableCredit'>): number {
  const credit = loan.availableCredit;
  if (typeof credit !== 'number' || !Number.isFinite(credit)) return 0;
  return Math.floor(Number((credit * 100).toFixed(6)));
}

/** Each storage rule of the catalogue, by name; a name without its rule here fails to compile. */
export const DRAW_RULES: { readonly [R in StorageRuleName]: DrawRule<LoanField, DetailOf<R>> } = {
  'loan exists': rule({ reads: [], pointer: 'loanNumber', check: ({ exists }) => (exists ? undefined : 'loanNotFound') }),
  'loan owner': rule({
    reads: ['partnerId'],
    pointer: 'loanNumber',
    check: ({ loan, partnerId }) => (loan.partnerId === partnerId ? undefined : 'notAuthorized'),
  }),
  'funding investor': rule({
    reads: ['fundingInvestorId'],
    check: ({ loan }) => ((loan.fundingInvestorId ?? '').trim() === '' ? 'noFundingInvestor' : undefined),
  }),
  'available credit': rule({
    reads: ['availableCredit'],
    pointer: 'amount',
    check: ({ request, loan }) => (request.amountCents > creditCents(loan) ? 'amountAboveCredit' : undefined),
  }),
  'one draw a day': rule({ reads: [], pointer: 'loanNumber', check: ({ pending }) => pending }),
};

/** The storage rules in the catalogue's order, each with its code. */
const ORDER = STORAGE_RULES.map(({ name, code }) => {
  const declared = DRAW_RULES[name] as DrawRule<LoanField, StorageDetail> | undefined;
  // The type already requires it; this names the rule where tests run without type checks.
  if (declared === undefined) throw new Error(`the catalogue's rule "${name}" has no check in DRAW_RULES (lib/drawRules.ts)`);
  return { code, ...declared };
});

/** The loan fields the rules read: what the store selects from each `Loans` row. */
export const FIELDS_READ: readonly LoanField[] = [...new Set(ORDER.flatMap((r) => r.reads))];

const NO_LOAN: Loan = {};

/** The rules' verdict on a batch: accepted, or each rejected element's error. */
export type RulesVerdict = { readonly accepted: true } | { readonly accepted: false; readonly errors: readonly ElementError[] };

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
    const loan = loans.get(key);
    const pending = drawnToday.has(key) ? 'alreadyToday' : seen.has(key) ? 'duplicateInBatch' : undefined;
    seen.add(key);
    const subject: Subject<LoanField> = { request, exists: loan !== undefined, loan: loan ?? NO_LOAN, partnerId, pending };
    for (const { code, pointer, check } of ORDER) {
      const detail = check(subject);
      if (detail === undefined) continue;
      const { index, loanNumber } = request;
      errors.push(
        pointer === undefined
          ? { index, loanNumber, code, detail: DETAILS[detail] }
          : { index, loanNumber, code, pointer: request.pointers[pointer], detail: DETAILS[detail] },
      );
      break;
    }
  }
  return errors.length > 0 ? { accepted: false, errors } : { accepted: true };
}
