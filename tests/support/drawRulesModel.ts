/**
 * A straightforward reading of the storage rules of docs/contract.md §2.3, written independently of
 * lib/drawRules.ts: the oracle the rules (and the handler) are checked against with generated inputs.
 * The catalogue (lib/errorCatalogue.ts) gives the rules' order and codes; the model reads each rule
 * itself, by its name, so a rule the catalogue has and the model does not fails every model test by name.
 */
import fc from 'fast-check';
import { DETAILS, STORAGE_RULES, type DetailOf, type ErrorCode, type StorageRuleName } from '../../lib/errorCatalogue';

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

/** What the model knows about one element when it judges it. */
interface Element {
  readonly request: ModelRequest;
  readonly loan: ModelLoan | undefined;
  readonly partnerId: string;
  readonly drawnToday: boolean;
  /** An earlier element of the batch names the same loan. */
  readonly earlier: boolean;
}

/** The model's reading of each storage rule: the detail it gives an element it applies to. */
export const MODEL_RULES: { readonly [R in StorageRuleName]: (e: Element) => DetailOf<R> | undefined } = {
  'loan exists': (e) => (e.loan === undefined ? 'loanNotFound' : undefined),
  'loan owner': (e) => (e.loan?.partnerId === e.partnerId ? undefined : 'notAuthorized'),
  'funding investor': (e) => ((e.loan?.fundingInvestorId ?? '').trim().length === 0 ? 'noFundingInvestor' : undefined),
  'available credit': (e) => (e.request.amountCents > (e.loan?.creditCents ?? 0) ? 'amountAboveCredit' : undefined),
  'one draw a day': (e) => (e.drawnToday ? 'alreadyToday' : e.earlier ? 'duplicateInBatch' : undefined),
};

/** The error the model gives an element: its rule, code and detail text. */
export interface ModelVerdict {
  readonly rule: StorageRuleName;
  readonly code: ErrorCode;
  readonly detail: string;
}

/** The dollars stored as AvailableCredit for a model loan; undefined when it has none. */
export function creditDollars(loan: ModelLoan): number | undefined {
  return loan.creditCents === undefined ? undefined : (loan.creditCents + loan.creditFraction) / 100;
}

/** The `Loans` row (docs/contract.md §4) that holds a model loan: its columns as the Tables SDK reads them, absent ones left out. */
export function loanRow(loan: ModelLoan): Record<string, string | number | boolean> {
  const row: Record<string, string | number | boolean> = {};
  if (loan.partnerId !== undefined) row.PartnerId = loan.partnerId;
  const credit = creditDollars(loan);
  if (credit !== undefined) row.AvailableCredit = credit;
  if (loan.fundingInvestorId !== undefined) row.FundingInvestorId = loan.fundingInvestorId;
  return row;
}

/** Each element's error, or undefined when it passes; the batch is accepted when all pass. */
export function modelVerdicts(
  requests: readonly ModelRequest[],
  loans: ReadonlyMap<number, ModelLoan>,
  drawnToday: ReadonlySet<number>,
  partnerId: string,
): (ModelVerdict | undefined)[] {
  return requests.map((request, i) => {
    const element: Element = {
      request,
      loan: loans.get(request.loanNumber),
      partnerId,
      drawnToday: drawnToday.has(request.loanNumber),
      earlier: requests.slice(0, i).some((r) => r.loanNumber === request.loanNumber),
    };
    for (const { name, code } of STORAGE_RULES) {
      const reading = MODEL_RULES[name] as ((e: Element) => keyof typeof DETAILS | undefined) | undefined;
      if (reading === undefined) throw new Error(`the model does not know the catalogue's rule "${name}": add its reading to MODEL_RULES`);
      const detail = reading(element);
      if (detail !== undefined) return { rule: name, code, detail: DETAILS[detail] as string };
    }
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
