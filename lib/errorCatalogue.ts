/**
 * The error catalogue: every error a `400` can list, in one typed table. Each code with its exact
 * `error` name; each per-element rule of docs/contract.md §2.3, by name, in the order of checks; each
 * request-level error of §2.2 in the order they are checked; and their `detail` texts.
 *
 * The rest follows from it: lib/problem.ts derives ERROR_NAMES and DETAILS; lib/drawRules.ts checks the
 * storage rules in this order, one check per name; tests/unit/errorCatalogue.test.ts compares every
 * document that lists errors or rules with it, both ways. A new rule: docs/contributing.md §5.
 */
import { MAX_BATCH_SIZE_LIMIT } from './config';
import { LIMITS } from './limits';

/** Each code and its exact English name, in the order the documents list them (first use by a rule). */
export const ERRORS = [
  { code: 'InvalidRequest', error: 'Invalid Request' },
  { code: 'InvalidLoanNumber', error: 'Invalid Loan Number' },
  { code: 'InvalidAmount', error: 'Invalid Amount' },
  { code: 'InvalidAuthorization', error: 'Invalid Authorization' },
  { code: 'InvalidFundingInvestor', error: 'Invalid Funding Investor' },
  { code: 'PendingTransactionRequest', error: 'Pending Transaction Request' },
] as const;

export type ErrorCode = (typeof ERRORS)[number]['code'];

/** `code` → `error`, typed exactly (`ERROR_NAMES.InvalidAmount` is `'Invalid Amount'`). */
export type ErrorNames = { readonly [E in (typeof ERRORS)[number] as E['code']]: E['error'] };

/** The `detail` texts, so tests and docs quote the same words as responses. */
export const DETAILS = {
  contentType: 'Content-Type must be application/json',
  tooLarge: (maxBytes: number) => `the request body must be at most ${maxBytes} bytes`,
  unreadable: 'the request body could not be read as UTF-8 text',
  notJson: 'the request body is not valid JSON',
  notArray: 'the request body must be a JSON array of draw requests',
  batchSize: (max: number) => `the request body must be an array of 1 to ${max} draw requests`,
  tooDeep: (levels: number) => `the request body must not nest deeper than ${levels} levels`,
  notObject: 'a draw request must be a JSON object',
  tooManyKeys: (keys: number) => `a draw request, and any object in it, may have at most ${keys} keys`,
  missing: (field: string) => `${field} is required`,
  ambiguous: (field: string) => `more than one key names ${field} (keys are case-insensitive)`,
  requestor: 'requestor must be a string of 1 to 256 characters without control characters',
  loanNumberFormat: 'loanNumber must be a positive integer or a string of 1 to 16 digits',
  amountFormat: 'amount must be a number of at least 1.00 with at most 2 decimal places',
  loanNotFound: 'no loan with this loan number exists',
  notAuthorized: 'this loan cannot be drawn on by the caller',
  noFundingInvestor: 'the loan has no funding investor assigned',
  amountAboveCredit: "amount must be between 1.00 and the loan's available credit",
  alreadyToday: 'a draw request for this loan was already submitted today',
  duplicateInBatch: 'an earlier draw request in this batch names the same loan',
  idempotencyKeyForm: 'the Idempotency-Key header must be 1 to 128 visible ASCII characters',
  idempotencyKeyReused: 'this Idempotency-Key is bound to a different batch; send a new key with a new batch',
  idempotencyKeyExpired: 'this Idempotency-Key expired before this batch was recorded under it; send the batch with a new key',
  idempotencyKeyOutcomeForgotten:
    'this Idempotency-Key was taken over 48 hours ago and its batch is not found under it: whether it was recorded can no longer be told; ask the lender before sending it again',
} as const;

export type DetailKey = keyof typeof DETAILS;

type ParameterisedDetail = { [K in DetailKey]: (typeof DETAILS)[K] extends (arg: never) => string ? K : never }[DetailKey];

/** The argument each parameterised detail is quoted with in the documents: a limit, the default, or `<field>`. */
const DOCUMENTED_ARGUMENTS: { readonly [K in ParameterisedDetail]: Parameters<(typeof DETAILS)[K]>[0] } = {
  tooLarge: LIMITS.bodyBytes,
  batchSize: MAX_BATCH_SIZE_LIMIT,
  tooDeep: LIMITS.nestingDepth,
  tooManyKeys: LIMITS.keysPerObject,
  missing: '<field>',
  ambiguous: '<field>',
};

/** A detail as the documents quote it. */
export function documentedDetail(key: DetailKey): string {
  const detail: string | ((arg: never) => string) = DETAILS[key];
  if (typeof detail === 'string') return detail;
  return (detail as (arg: unknown) => string)(DOCUMENTED_ARGUMENTS[key as ParameterisedDetail]);
}

export interface ElementRule {
  /**
   * Its stable name: how documents, tests and code cite it. Never a number: a rule inserted before it
   * would shift its place (docs/decisions/0023-a-draw-rule-is-one-declaration.md).
   */
  readonly name: string;
  /**
   * What it is checked against: the element alone (lib/requestBody.ts, for the whole batch first), or
   * storage, the loan's `Loans` row and today's draws (lib/drawRules.ts, only once every element passed
   * the element rules). All element rules come before all storage rules.
   */
  readonly against: 'element' | 'storage';
  readonly code: ErrorCode;
  /** When it applies, in the partners' guide's words (the contract says it in full). */
  readonly when: string;
  /** Its `detail` texts, in the order the checks within the rule are made. */
  readonly details: readonly DetailKey[];
}

/** The per-element rules of docs/contract.md §2.3, in the order of checks: the first that applies wins. */
export const ELEMENT_RULES = [
  {
    name: 'element shape',
    against: 'element',
    code: 'InvalidRequest',
    when: 'not an object, a field missing, `requestor` invalid, a field named twice',
    details: ['notObject', 'tooManyKeys', 'ambiguous', 'missing', 'requestor'],
  },
  {
    name: 'loan number form',
    against: 'element',
    code: 'InvalidLoanNumber',
    when: '`loanNumber` not a positive whole number or digit string',
    details: ['loanNumberFormat'],
  },
  {
    name: 'amount form',
    against: 'element',
    code: 'InvalidAmount',
    when: '`amount` not a number, below 1, or more than 2 decimal places',
    details: ['amountFormat'],
  },
  { name: 'loan exists', against: 'storage', code: 'InvalidLoanNumber', when: 'no loan with that number', details: ['loanNotFound'] },
  // Before every rule that reads more of the loan: nothing about another partner's loan is revealed.
  { name: 'loan owner', against: 'storage', code: 'InvalidAuthorization', when: 'the loan is not yours', details: ['notAuthorized'] },
  {
    name: 'funding investor',
    against: 'storage',
    code: 'InvalidFundingInvestor',
    when: 'the loan has no funding investor assigned',
    details: ['noFundingInvestor'],
  },
  {
    name: 'available credit',
    against: 'storage',
    code: 'InvalidAmount',
    when: "`amount` above the loan's available credit",
    details: ['amountAboveCredit'],
  },
  {
    name: 'one draw a day',
    against: 'storage',
    code: 'PendingTransactionRequest',
    when: 'already drawn today, or named earlier in the same batch',
    details: ['alreadyToday', 'duplicateInBatch'],
  },
] as const satisfies readonly ElementRule[];

type CatalogueRule = (typeof ELEMENT_RULES)[number];
/** A rule's name, as the catalogue spells it: a misspelt name fails to compile. */
export type RuleName = CatalogueRule['name'];
/** The rules lib/drawRules.ts checks against storage. */
export type StorageRuleName = Extract<CatalogueRule, { against: 'storage' }>['name'];
/** The `detail` keys of rule `R`. */
export type DetailOf<R extends RuleName> = Extract<CatalogueRule, { name: R }>['details'][number];

/** The request-level errors of docs/contract.md §2.2 (code `InvalidRequest`, no `index`), in the order they are checked. */
export const REQUEST_ERRORS: readonly DetailKey[] = [
  'idempotencyKeyForm',
  'contentType',
  'tooLarge',
  'unreadable',
  'tooDeep',
  'tooManyKeys',
  'notJson',
  'notArray',
  'batchSize',
  'idempotencyKeyReused',
  'idempotencyKeyExpired',
  'idempotencyKeyOutcomeForgotten',
];

/** The rule named `name`. */
export function elementRule(name: RuleName): ElementRule {
  const found = ELEMENT_RULES.find((r) => r.name === name);
  if (found === undefined) throw new Error(`no rule "${name}" in the error catalogue`);
  return found;
}

/** The rules checked against storage, in the order of checks. */
export const STORAGE_RULES = ELEMENT_RULES.filter((r): r is Extract<CatalogueRule, { against: 'storage' }> => r.against === 'storage');
