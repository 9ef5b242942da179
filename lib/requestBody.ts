/**
 * Raw request body → canonical draw requests, or the request/element errors of
 * DESIGN §2.2–2.3 rules 1–3. Pure apart from reading the body stream; touches no storage.
 */
import Ajv, { type ErrorObject } from 'ajv';
import { parse as parseContentType } from 'content-type';
import * as jsonc from 'jsonc-parser';
import { DETAILS, type ElementError } from './problem';

export const MAX_BODY_BYTES = 256 * 1024;

/** One accepted-shape element, in canonical form. */
export interface DrawRequest {
  readonly index: number;
  readonly loanNumber: number;
  readonly requestor: string;
  /** Dollars as sent (at most 2 decimals). */
  readonly amount: number;
  /** The same amount in integer cents, which is what the rules compare. */
  readonly amountCents: number;
  /** JSON Pointers to the keys as the partner spelled them, for error reports. */
  readonly pointers: { readonly loanNumber: string; readonly amount: string };
}

export type BodyResult =
  | { readonly ok: true; readonly requests: readonly DrawRequest[] }
  | { readonly ok: false; readonly errors: readonly ElementError[]; readonly batchSize?: number };

type Field = 'loanNumber' | 'requestor' | 'amount';
const FIELDS: readonly Field[] = ['loanNumber', 'requestor', 'amount'];
const FIELD_BY_FOLDED_KEY = new Map<string, Field>(FIELDS.map((f) => [f.toLowerCase(), f]));

/**
 * Decimal places of a JSON number as written (`"100.10"` has 1, `"1.5e2"` has 0). A number given as
 * a JS value is read in its shortest round-trip form. Trailing zeros of the fraction do not count.
 */
export function decimalPlaces(value: number | string): number {
  const match = /^-?\d+(?:\.(\d+))?(?:e([+-]?\d+))?$/i.exec(typeof value === 'number' ? String(value) : value);
  if (!match) return Number.POSITIVE_INFINITY;
  const fraction = (match[1] ?? '').replace(/0+$/, '').length;
  return Math.max(0, fraction - Number(match[2] ?? 0));
}

/** Accepted loan number forms → the integer, or undefined. */
export function canonicalLoanNumber(value: unknown): number | undefined {
  if (typeof value === 'number') return Number.isSafeInteger(value) && value >= 1 ? value : undefined;
  if (typeof value === 'string' && /^[0-9]{1,16}$/.test(value)) {
    const n = Number(value);
    return Number.isSafeInteger(n) && n >= 1 ? n : undefined;
  }
  return undefined;
}

// Compiled once per instance: the schema is the same for every request.
// The schema below is fixed code, checked by the unit tests; validating it against the JSON Schema
// meta-schema at every start would compile that meta-schema too (about 30 ms of each cold start).
const ajv = new Ajv({ allErrors: true, strict: true, validateSchema: false });
ajv.addKeyword({
  keyword: 'loanNumberForm',
  schemaType: 'boolean',
  validate: (_schema: boolean, data: unknown) => canonicalLoanNumber(data) !== undefined,
  errors: false,
});
/** The amount as written in the request text, kept beside the parsed value for the decimals check. */
const AMOUNT_TEXT = Symbol('amountText');
type Canonical = Partial<Record<Field, unknown>> & { [AMOUNT_TEXT]?: string };

ajv.addKeyword({
  keyword: 'maxDecimalPlaces',
  type: 'number',
  schemaType: 'number',
  // Checked on the text: JSON.parse has already rounded 1.0000000000000001 to 1.
  validate: (max: number, data: number, _schema?: unknown, cxt?: { parentData?: Canonical }) =>
    Number.isFinite(data) && decimalPlaces(cxt?.parentData?.[AMOUNT_TEXT] ?? data) <= max,
  errors: false,
});
/** The element schema after key mapping (exported for the test that checks it against the meta-schema). */
export const ELEMENT_SCHEMA = {
  type: 'object',
  required: ['loanNumber', 'requestor', 'amount'],
  properties: {
    loanNumber: { loanNumberForm: true },
    // Already trimmed; no control characters and no unpaired surrogates (they cannot be stored faithfully).
    requestor: { type: 'string', minLength: 1, maxLength: 256, pattern: '^[^\\p{Cc}\\p{Cs}]*$' },
    amount: { type: 'number', minimum: 1, maxDecimalPlaces: 2 },
  },
} as const;
const validateElement = ajv.compile(ELEMENT_SCHEMA);

function escapePointer(key: string): string {
  return key.replace(/~/g, '~0').replace(/\//g, '~1');
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** ASCII-only case folding: `LOANNUMBER` matches, a look-alike Unicode letter does not. */
function foldKey(key: string): string {
  return key.replace(/[A-Z]/g, (c) => c.toLowerCase());
}

type ElementResult = { ok: true; request: DrawRequest } | { ok: false; error: ElementError };

/** Rule precedence for shape failures (DESIGN §2.3 rows 1–3). */
const RULE_OF_FIELD: Record<Field, 1 | 2 | 3> = { loanNumber: 2, requestor: 1, amount: 3 };

/** What the request text says of each element that JSON.parse cannot tell. */
interface ElementText {
  /**
   * The second key naming a field already named in the element (`"amount"` and `"Amount"`, or
   * `"amount"` twice, which JSON.parse would silently collapse to the last).
   */
  ambiguousKey?: string;
  /** The amount number exactly as written. */
  amountText?: string;
}

// jsonc-parser declares SyntaxKind as a const enum; it also exports it at run time, which is what is read here.
const Token = (jsonc as unknown as { SyntaxKind: Record<'OpenBraceToken' | 'CloseBraceToken' | 'OpenBracketToken' | 'CloseBracketToken' | 'CommaToken' | 'ColonToken' | 'StringLiteral' | 'NumericLiteral' | 'EOF', number> }).SyntaxKind;

/**
 * One flat pass over the (already valid) JSON text with a scanner, not a recursive parser, so deep
 * nesting cannot exhaust the stack. Reads the keys and amount text of each top-level element.
 */
function scanElements(text: string): Map<number, ElementText> {
  const found = new Map<number, ElementText>();
  const scanner = jsonc.createScanner(text, true);
  const open: number[] = []; // kinds of the containers we are inside
  let index = 0;
  let fields = new Set<Field>();
  let expectKey = false;
  let valueField: Field | undefined; // the field whose value comes next
  const inElement = () => open.length === 2 && open[0] === Token.OpenBracketToken && open[1] === Token.OpenBraceToken;
  const entry = (): ElementText => {
    if (!found.has(index)) found.set(index, {});
    return found.get(index) as ElementText;
  };
  for (let kind = scanner.scan(); kind !== Token.EOF; kind = scanner.scan()) {
    const fieldOfValue = valueField;
    valueField = undefined;
    switch (kind) {
      case Token.OpenBraceToken:
      case Token.OpenBracketToken:
        open.push(kind);
        if (inElement()) fields = new Set();
        expectKey = kind === Token.OpenBraceToken;
        break;
      case Token.CloseBraceToken:
      case Token.CloseBracketToken:
        open.pop();
        expectKey = false;
        break;
      case Token.CommaToken:
        if (open.length === 1) index += 1;
        expectKey = open[open.length - 1] === Token.OpenBraceToken;
        break;
      case Token.ColonToken:
        valueField = fieldOfValue;
        break;
      case Token.StringLiteral:
        if (expectKey && inElement()) {
          const key = scanner.getTokenValue();
          valueField = FIELD_BY_FOLDED_KEY.get(foldKey(key));
          if (valueField !== undefined && fields.has(valueField)) entry().ambiguousKey ??= key;
          if (valueField !== undefined) fields.add(valueField);
        }
        expectKey = false;
        break;
      case Token.NumericLiteral:
        if (fieldOfValue === 'amount') entry().amountText = scanner.getTokenValue();
        break;
      default:
        expectKey = false;
    }
  }
  return found;
}

function checkElement(element: unknown, index: number, text: ElementText = {}): ElementResult {
  const at = (key?: string) => (key === undefined ? `/${index}` : `/${index}/${escapePointer(key)}`);
  if (!isPlainObject(element)) {
    return { ok: false, error: { index, code: 'InvalidRequest', pointer: at(), detail: DETAILS.notObject } };
  }
  // Map keys to canonical names into a prototype-less object: `__proto__` and friends never reach a prototype.
  const canonical: Canonical = Object.create(null);
  canonical[AMOUNT_TEXT] = text.amountText;
  const sentKey: Partial<Record<Field, string>> = Object.create(null);
  for (const key of Object.keys(element)) {
    const field = FIELD_BY_FOLDED_KEY.get(foldKey(key));
    if (field === undefined) continue; // unknown keys are ignored, never stored
    sentKey[field] = key;
    const value = element[key];
    canonical[field] = field === 'requestor' && typeof value === 'string' ? value.trim() : value;
  }
  const { ambiguousKey } = text;
  const ambiguousField = ambiguousKey === undefined ? undefined : FIELD_BY_FOLDED_KEY.get(foldKey(ambiguousKey));
  const loanNumber = ambiguousField === 'loanNumber' ? undefined : canonicalLoanNumber(canonical.loanNumber);
  const withLoan = loanNumber === undefined ? {} : { loanNumber };
  if (ambiguousKey !== undefined && ambiguousField !== undefined) {
    return { ok: false, error: { index, ...withLoan, code: 'InvalidRequest', pointer: at(ambiguousKey), detail: DETAILS.ambiguous(ambiguousField) } };
  }

  if (!validateElement(canonical)) {
    const failures = (validateElement.errors ?? []).map((e) => failureOf(e));
    failures.sort((a, b) => a.rule - b.rule || FIELDS.indexOf(a.field) - FIELDS.indexOf(b.field));
    const { rule, field, missing } = failures[0];
    const pointer = at(sentKey[field] ?? field);
    const error: ElementError =
      missing || rule === 1
        ? { index, ...withLoan, code: 'InvalidRequest', pointer, detail: missing ? DETAILS.missing(field) : DETAILS.requestor }
        : rule === 2
          ? { index, code: 'InvalidLoanNumber', pointer, detail: DETAILS.loanNumberFormat }
          : { index, ...withLoan, code: 'InvalidAmount', pointer, detail: DETAILS.amountFormat };
    return { ok: false, error };
  }
  const amount = canonical.amount as number;
  return {
    ok: true,
    request: {
      index,
      loanNumber: loanNumber as number,
      requestor: canonical.requestor as string,
      amount,
      amountCents: Math.round(amount * 100),
      pointers: { loanNumber: at(sentKey.loanNumber), amount: at(sentKey.amount) },
    },
  };
}

function failureOf(e: ErrorObject): { rule: 1 | 2 | 3; field: Field; missing: boolean } {
  if (e.keyword === 'required') {
    return { rule: 1, field: (e.params as { missingProperty: Field }).missingProperty, missing: true };
  }
  const field = e.instancePath.slice(1) as Field;
  return { rule: RULE_OF_FIELD[field], field, missing: false };
}

function requestError(detail: string): BodyResult {
  return { ok: false, errors: [{ code: 'InvalidRequest', detail }] };
}

/** True for `application/json` with any parameters, provided a charset, if given, is UTF-8. */
export function isJsonContentType(header: string | null | undefined): boolean {
  if (!header) return false;
  try {
    // An empty parameter list (`application/json;`) is allowed by RFC 9110; the parser is strict about it.
    const { type, parameters } = parseContentType(header.replace(/[\s;]+$/, ''));
    const charset = parameters.charset?.toLowerCase();
    return type === 'application/json' && (charset === undefined || charset === 'utf-8' || charset === 'utf8');
  } catch {
    return false;
  }
}

/** Pure: the body bytes → canonical requests or errors (rules 1–3 for the whole batch). */
export function parseDrawRequests(body: Uint8Array, maxBatchSize: number): BodyResult {
  if (body.byteLength > MAX_BODY_BYTES) return requestError(DETAILS.tooLarge(MAX_BODY_BYTES));
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(body); // a leading BOM is dropped
  } catch {
    return requestError(DETAILS.unreadable);
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return requestError(DETAILS.notJson);
  }
  if (!Array.isArray(parsed)) return requestError(DETAILS.notArray);
  if (parsed.length < 1 || parsed.length > maxBatchSize) return requestError(DETAILS.batchSize(maxBatchSize));

  const elementTexts = scanElements(text);
  const requests: DrawRequest[] = [];
  const errors: ElementError[] = [];
  parsed.forEach((element, index) => {
    const result = checkElement(element, index, elementTexts.get(index));
    if (result.ok) requests.push(result.request);
    else errors.push(result.error);
  });
  return errors.length > 0 ? { ok: false, errors, batchSize: parsed.length } : { ok: true, requests };
}

/** Minimal view of the request this module needs (the Functions HttpRequest satisfies it). */
export interface BodySource {
  readonly headers: { get(name: string): string | null };
  arrayBuffer(): Promise<ArrayBuffer>;
}

/** Checks the headers before reading, then parses. */
export async function readDrawRequests(request: BodySource, maxBatchSize: number): Promise<BodyResult> {
  if (!isJsonContentType(request.headers.get('content-type'))) return requestError(DETAILS.contentType);
  const declared = Number(request.headers.get('content-length'));
  if (Number.isFinite(declared) && declared > MAX_BODY_BYTES) return requestError(DETAILS.tooLarge(MAX_BODY_BYTES));
  let bytes: ArrayBuffer;
  try {
    bytes = await request.arrayBuffer();
  } catch {
    return requestError(DETAILS.unreadable);
  }
  return parseDrawRequests(new Uint8Array(bytes), maxBatchSize);
}
