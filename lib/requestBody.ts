/**
 * Raw request body → canonical draw requests, or the request/element errors of
 * DESIGN §2.2–2.3 rules 1–3. Pure apart from reading the body stream; touches no storage.
 */
import Ajv, { type ErrorObject } from 'ajv';
import { parse as parseContentType } from 'content-type';
import { visit } from 'jsonc-parser';
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

/** Digits after the decimal point in the shortest representation that round-trips. */
export function decimalPlaces(value: number): number {
  const [mantissa, exponent = '0'] = String(Math.abs(value)).toLowerCase().split('e');
  const fraction = mantissa.split('.')[1]?.length ?? 0;
  return Math.max(0, fraction - Number(exponent));
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
const ajv = new Ajv({ allErrors: true, strict: true });
ajv.addKeyword({
  keyword: 'loanNumberForm',
  schemaType: 'boolean',
  validate: (_schema: boolean, data: unknown) => canonicalLoanNumber(data) !== undefined,
  errors: false,
});
ajv.addKeyword({
  keyword: 'maxDecimalPlaces',
  type: 'number',
  schemaType: 'number',
  validate: (max: number, data: number) => Number.isFinite(data) && decimalPlaces(data) <= max,
  errors: false,
});
const validateElement = ajv.compile({
  type: 'object',
  required: ['loanNumber', 'requestor', 'amount'],
  properties: {
    loanNumber: { loanNumberForm: true },
    // Already trimmed; no control characters and no unpaired surrogates (they cannot be stored faithfully).
    requestor: { type: 'string', minLength: 1, maxLength: 256, pattern: '^[^\\p{Cc}\\p{Cs}]*$' },
    amount: { type: 'number', minimum: 1, maxDecimalPlaces: 2 },
  },
});

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

/**
 * Keys an element's object names more than once in the JSON text itself (`"amount":1,"amount":2`).
 * JSON.parse keeps the last silently; other parsers keep the first, so such an element is ambiguous.
 */
function repeatedKeysByElement(text: string): Map<number, string> {
  const seen = new Map<number, Set<string>>();
  const repeated = new Map<number, string>();
  visit(text, {
    onObjectProperty: (key, _offset, _length, _line, _column, pathSupplier) => {
      const path = pathSupplier();
      if (path.length !== 1 || typeof path[0] !== 'number') return; // only a draw request's own keys
      const index = path[0];
      const keys = seen.get(index) ?? new Set<string>();
      seen.set(index, keys);
      if (keys.has(key) && FIELD_BY_FOLDED_KEY.has(foldKey(key)) && !repeated.has(index)) repeated.set(index, key);
      keys.add(key);
    },
  });
  return repeated;
}

function checkElement(element: unknown, index: number, repeatedKey: string | undefined): ElementResult {
  const at = (key?: string) => (key === undefined ? `/${index}` : `/${index}/${escapePointer(key)}`);
  if (!isPlainObject(element)) {
    return { ok: false, error: { index, code: 'InvalidRequest', pointer: at(), detail: DETAILS.notObject } };
  }
  // Map keys to canonical names into a prototype-less object: `__proto__` and friends never reach a prototype.
  const canonical: Partial<Record<Field, unknown>> = Object.create(null);
  const sentKey: Partial<Record<Field, string>> = Object.create(null);
  let ambiguous: { field: Field; key: string } | undefined =
    repeatedKey === undefined ? undefined : { field: FIELD_BY_FOLDED_KEY.get(foldKey(repeatedKey)) as Field, key: repeatedKey };
  for (const key of Object.keys(element)) {
    const field = FIELD_BY_FOLDED_KEY.get(foldKey(key));
    if (field === undefined) continue; // unknown keys are ignored, never stored
    if (sentKey[field] !== undefined) {
      ambiguous ??= { field, key };
      continue;
    }
    sentKey[field] = key;
    const value = element[key];
    canonical[field] = field === 'requestor' && typeof value === 'string' ? value.trim() : value;
  }
  const loanNumber = ambiguous?.field === 'loanNumber' ? undefined : canonicalLoanNumber(canonical.loanNumber);
  const withLoan = loanNumber === undefined ? {} : { loanNumber };
  if (ambiguous !== undefined) {
    const { field, key } = ambiguous;
    return { ok: false, error: { index, ...withLoan, code: 'InvalidRequest', pointer: at(key), detail: DETAILS.ambiguous(field) } };
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
    const { type, parameters } = parseContentType(header);
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

  const repeated = repeatedKeysByElement(text);
  const requests: DrawRequest[] = [];
  const errors: ElementError[] = [];
  parsed.forEach((element, index) => {
    const result = checkElement(element, index, repeated.get(index));
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
