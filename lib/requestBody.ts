/**
 * Raw request body → canonical draw requests, or the request/element errors of docs/contract.md §2.2
 * and §2.3's rules on the element alone. Pure apart from reading the body stream; touches no storage.
 */
import type { ErrorObject, ValidateFunction } from 'ajv';
import { parse as parseContentType } from 'content-type';
import { NUMBER_TEXT, canonicalLoanNumber, type WrittenNumbers } from './elementChecks';
import { JsonTokens, TOKEN } from './jsonTokens';
import { validate as generatedValidator } from './generated/validateElement';
import { LIMITS } from './limits';
import { DETAILS, type ElementError } from './problem';

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

/** Compiled from lib/elementSchema.ts at build time (`npm run generate`), not at each cold start. */
const validateElement = generatedValidator as unknown as ValidateFunction;
type Canonical = Partial<Record<Field, unknown>> & WrittenNumbers;

function escapePointer(key: string): string {
  return key.replace(/~/g, '~0').replace(/\//g, '~1');
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The longest field name: a longer key names no field, whatever its case. */
const LONGEST_FIELD = Math.max(...FIELDS.map((f) => f.length));
const NON_ASCII = /[^\x20-\x7E]/; // a field name is printable ASCII

/**
 * The field a key names, folding ASCII case only: `LOANNUMBER` names loanNumber, a look-alike Unicode
 * letter does not (`toLowerCase` alone would fold the Kelvin sign into `k`). Constant work per key:
 * a key longer than every field name is not folded at all (a 256 KiB key costs no more than a short one).
 */
export function fieldOfKey(key: string): Field | undefined {
  if (key.length > LONGEST_FIELD || NON_ASCII.test(key)) return undefined;
  return FIELD_BY_FOLDED_KEY.get(key.toLowerCase());
}

type ElementResult = { ok: true; request: DrawRequest } | { ok: false; error: ElementError };

/** Rule precedence for shape failures: element shape, loan number form, amount form (docs/contract.md §2.3). */
const RULE_OF_FIELD: Record<Field, 1 | 2 | 3> = { loanNumber: 2, requestor: 1, amount: 3 };

/** What the request text says of each element that JSON.parse cannot tell. */
interface ElementText {
  /**
   * The second key naming a field already named in the element (`"amount"` and `"Amount"`, or
   * `"amount"` twice, which JSON.parse would silently collapse to the last).
   */
  ambiguousKey?: string;
  /** The amount and loan number, when JSON numbers, exactly as written. */
  numbers?: { amount?: string; loanNumber?: string };
}

/**
 * What one pass over the text found: that it nests too deep to be read further, or its elements, and
 * the objects with more keys than the limit (refused before JSON.parse builds them): the indexes of the
 * elements holding them, or `root` for the body itself; and how many top-level elements it has.
 */
type Scan =
  | { readonly tooDeep: true }
  | {
      readonly tooDeep: false;
      readonly elements: ReadonlyMap<number, ElementText>;
      readonly crowded: ReadonlySet<number | 'root'>;
      readonly elementCount: number;
    };

/**
 * One flat pass over the JSON text, before it is parsed: stops at the nesting limit, and reads the
 * keys and number texts of each top-level element. Text that is not JSON is scanned all the same
 * (linearly); JSON.parse then refuses it.
 */
function scanElements(text: string): Scan {
  const found = new Map<number, ElementText>();
  const tokens = new JsonTokens(text);
  const open: number[] = []; // the containers we are inside (TOKEN.openArray or TOKEN.openObject)
  const keys: number[] = []; // keys so far of each object we are inside
  const crowded = new Set<number | 'root'>();
  let index = 0;
  let fields = new Set<Field>();
  let expectKey = false;
  let valueField: Field | undefined; // the field whose value comes next
  const inElement = () => open.length === 2 && open[0] === TOKEN.openArray && open[1] === TOKEN.openObject;
  const entry = (): ElementText => {
    let element = found.get(index);
    if (element === undefined) found.set(index, (element = {}));
    return element;
  };
  for (let kind = tokens.next(); kind !== TOKEN.end; kind = tokens.next()) {
    const fieldOfValue = valueField;
    valueField = undefined;
    switch (kind) {
      case TOKEN.openObject:
      case TOKEN.openArray:
        if (open.length === LIMITS.nestingDepth) return { tooDeep: true };
        open.push(kind);
        if (kind === TOKEN.openObject) keys.push(0);
        if (inElement()) fields = new Set();
        expectKey = kind === TOKEN.openObject;
        break;
      case TOKEN.closeObject:
      case TOKEN.closeArray:
        if (open.pop() === TOKEN.openObject) keys.pop();
        expectKey = false;
        break;
      case TOKEN.comma:
        if (open.length === 1) index += 1;
        expectKey = open[open.length - 1] === TOKEN.openObject;
        break;
      case TOKEN.colon:
        valueField = fieldOfValue;
        break;
      case TOKEN.string:
        if (expectKey && ++keys[keys.length - 1] > LIMITS.keysPerObject) crowded.add(open.length > 1 && open[0] === TOKEN.openArray ? index : 'root');
        else if (expectKey && inElement()) {
          const key = tokens.stringValue() ?? '';
          valueField = fieldOfKey(key);
          if (valueField !== undefined && fields.has(valueField)) entry().ambiguousKey ??= key;
          if (valueField !== undefined) fields.add(valueField);
        }
        expectKey = false;
        break;
      case TOKEN.number:
        // Its length is checked before it is read (lib/elementChecks.ts).
        if (fieldOfValue === 'amount' || fieldOfValue === 'loanNumber') (entry().numbers ??= {})[fieldOfValue] = tokens.raw();
        break;
      default:
        expectKey = false;
    }
  }
  return { tooDeep: false, elements: found, crowded, elementCount: index + 1 };
}

function checkElement(element: unknown, index: number, text: ElementText = {}): ElementResult {
  const at = (key?: string) => (key === undefined ? `/${index}` : `/${index}/${escapePointer(key)}`);
  if (!isPlainObject(element)) {
    return { ok: false, error: { index, code: 'InvalidRequest', pointer: at(), detail: DETAILS.notObject } };
  }
  // Map keys to canonical names into a prototype-less object: `__proto__` and friends never reach a prototype.
  const canonical = Object.create(null) as Canonical;
  canonical[NUMBER_TEXT] = text.numbers;
  const sentKey = Object.create(null) as Partial<Record<Field, string>>;
  for (const key of Object.keys(element)) {
    const field = fieldOfKey(key);
    if (field === undefined) continue; // unknown keys are ignored, never stored
    sentKey[field] = key;
    const value = element[key];
    canonical[field] = field === 'requestor' && typeof value === 'string' ? value.trim() : value;
  }
  const { ambiguousKey } = text;
  const ambiguousField = ambiguousKey === undefined ? undefined : fieldOfKey(ambiguousKey);
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

/** The end of `header` without its trailing spaces, tabs and semicolons (a loop: a regex anchored at `$` is quadratic). */
function endWithoutTrailingSeparators(header: string): number {
  let end = header.length;
  while (end > 0 && (header[end - 1] === ';' || header[end - 1] === ' ' || header[end - 1] === '\t')) end -= 1;
  return end;
}

/** True for `application/json` with any parameters, provided a charset, if given, is UTF-8. */
export function isJsonContentType(header: string | null | undefined): boolean {
  if (!header || header.length > LIMITS.contentTypeLength) return false;
  try {
    // An empty parameter list (`application/json;`) is allowed by RFC 9110; the parser is strict about it.
    const { type, parameters } = parseContentType(header.slice(0, endWithoutTrailingSeparators(header)));
    const charset = parameters.charset?.toLowerCase();
    return type === 'application/json' && (charset === undefined || charset === 'utf-8' || charset === 'utf8');
  } catch {
    return false;
  }
}

/** Pure: the body bytes → canonical requests or errors (the rules on the element alone, for the whole batch). */
export function parseDrawRequests(body: Uint8Array, maxBatchSize: number): BodyResult {
  if (body.byteLength > LIMITS.bodyBytes) return requestError(DETAILS.tooLarge(LIMITS.bodyBytes));
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(body); // a leading BOM is dropped
  } catch {
    return requestError(DETAILS.unreadable);
  }
  // The limits on the text's structure answer before JSON.parse builds what they bound.
  const scan = scanElements(text);
  if (scan.tooDeep) return requestError(DETAILS.tooDeep(LIMITS.nestingDepth));
  if (scan.crowded.size > 0) {
    const detail = DETAILS.tooManyKeys(LIMITS.keysPerObject);
    if (scan.crowded.has('root')) return requestError(detail);
    // Element errors, so the detail counts them as any other (docs/contract.md §2.4: "n of m").
    const errors = [...scan.crowded].map((index): ElementError => ({ index: index as number, code: 'InvalidRequest', pointer: `/${index}`, detail }));
    return { ok: false, errors, batchSize: scan.elementCount };
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return requestError(DETAILS.notJson);
  }
  if (!Array.isArray(parsed)) return requestError(DETAILS.notArray);
  if (parsed.length < 1 || parsed.length > maxBatchSize) return requestError(DETAILS.batchSize(maxBatchSize));

  const requests: DrawRequest[] = [];
  const errors: ElementError[] = [];
  parsed.forEach((element, index) => {
    const result = checkElement(element, index, scan.elements.get(index));
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
  if (Number.isFinite(declared) && declared > LIMITS.bodyBytes) return requestError(DETAILS.tooLarge(LIMITS.bodyBytes));
  let bytes: ArrayBuffer;
  try {
    bytes = await request.arrayBuffer();
  } catch {
    return requestError(DETAILS.unreadable);
  }
  return parseDrawRequests(new Uint8Array(bytes), maxBatchSize);
}
