/**
 * Worst-case requests against the input limits (lib/limits.ts): bodies just under the body limit,
 * and headers as long as an HTTP server lets through, each shaped to make one step of reading a
 * request do as much work as the bytes allow. Used by tests/integration/hostileLoad.test.ts (in
 * process) and by `npm run bench` (through the dev host).
 */
import { LIMITS } from '../../lib/limits';
import type { ErrorCode } from '../../lib/problem';

/** What every ordinary draw of the tests and the bench asks for. */
export const ORDINARY_DRAW = { requestor: 'draws@partner.example', amount: 12.34 } as const;

/** A valid batch: one ordinary draw per loan. */
export function ordinaryBody(loanNumbers: readonly number[]): Buffer {
  return Buffer.from(JSON.stringify(loanNumbers.map((loanNumber) => ({ loanNumber, ...ORDINARY_DRAW }))));
}

export interface HostileRequest {
  readonly name: string;
  readonly body: Buffer;
  /** Sent in place of the ordinary ones (Content-Type, Idempotency-Key). */
  readonly headers?: Record<string, string>;
  /** The answer of a service that keeps its limits: a 400 and its first error's code. */
  readonly expected: { readonly status: 400; readonly code: ErrorCode };
}

/**
 * A header value that fits, beside a bearer token and the other headers, in Node's default 16 KiB
 * of request headers (the dev host's limit). The Functions host in Azure (Kestrel) allows 32 KiB.
 */
export const HTTP_HEADER_CHARS = 12 * 1024;

/** How many `unitBytes` fit in the body limit beside `fixed`. */
function room(fixed: string, unitBytes = 1): number {
  return Math.floor((LIMITS.bodyBytes - Buffer.byteLength(fixed)) / unitBytes);
}

/** Marks where a template takes what a builder repeats: no JSON text holds it. */
const HOLE = '\0';

/** Members of the ordinary draw, as raw JSON text, replaced. */
type Replace = { loanNumber?: string; requestor?: string; amount?: string };
/** A one-element batch of one loan: the ordinary draw with some members replaced, then `extra` members. */
type Batch = (replace: Replace, extra?: string) => string;

function batchText(loanNumber: number, replace: Replace, extra = ''): string {
  const members = { loanNumber: String(loanNumber), requestor: JSON.stringify(ORDINARY_DRAW.requestor), amount: String(ORDINARY_DRAW.amount), ...replace };
  const text = Object.entries(members).map(([key, value]) => `"${key}":${value}`);
  return `[{${text.join(',')}${extra}}]`;
}

/** The template with its HOLE filled with as many `unit`s as the body limit leaves room for. */
function filled(template: string, unit: string): Buffer {
  return Buffer.from(template.replace(HOLE, () => unit.repeat(room(template.replace(HOLE, ''), unit.length))));
}

/**
 * Every worst case, for a caller of a registered partner; the first is the amount the old decimals
 * check took over a minute for. `loanNumber` must name no loan: a body whose shape is accepted is
 * then refused by the draw rules, so no worst-case request writes anything. `headerChars` is the
 * length of the header attacks (longer than HTTP_HEADER_CHARS only in process).
 */
export function hostileRequests(loanNumber: number, headerChars = HTTP_HEADER_CHARS): HostileRequest[] {
  const batch: Batch = (replace, extra) => batchText(loanNumber, replace, extra);
  const refused = (code: ErrorCode) => ({ status: 400, code }) as const;
  return [
    // The old decimals check trimmed trailing zeros with a regex: quadratic in a run of zeros that ends in 1.
    { name: 'amount 1.000…0001', body: filled(batch({ amount: `1.${HOLE}1` }), '0'), expected: refused('InvalidAmount') },
    { name: 'amount 1.000…000', body: filled(batch({ amount: `1.${HOLE}` }), '0'), expected: refused('InvalidAmount') },
    { name: 'amount 1e+000…002', body: filled(batch({ amount: `1e+${HOLE}2` }), '0'), expected: refused('InvalidAmount') },
    { name: 'loanNumber n.000…0001', body: filled(batch({ loanNumber: `${loanNumber}.${HOLE}1` }), '0'), expected: refused('InvalidLoanNumber') },
    // Unknown keys are not read: the element is accepted, and its loan does not exist.
    { name: 'unknown key 1.000…0001', body: filled(batch({}, `,"note":1.${HOLE}1`), '0'), expected: refused('InvalidLoanNumber') },
    manyKeys(batch),
    deepNesting(batch),
    { name: 'whitespace between all tokens', body: spaced(batch({})), expected: refused('InvalidLoanNumber') },
    { name: 'requestor of spaces', body: filled(batch({ requestor: `"${HOLE}"` }), ' '), expected: refused('InvalidRequest') },
    // Both headers are read before the body, which is then not read at all.
    {
      name: `Content-Type of ${headerChars.toLocaleString('en')} characters: application/json; ; …x`,
      body: ordinaryBody([loanNumber]),
      // A run of separators not at the end: the old trim of trailing separators was quadratic in it.
      headers: { 'content-type': `application/json${'; '.repeat(Math.floor((headerChars - 'application/json'.length - 1) / 2))}x` },
      expected: refused('InvalidRequest'),
    },
    {
      name: `Idempotency-Key of ${headerChars.toLocaleString('en')} characters`,
      body: ordinaryBody([loanNumber]),
      headers: { 'idempotency-key': 'k'.repeat(headerChars) },
      expected: refused('InvalidRequest'),
    },
  ];
}

/** One element with as many distinct unknown keys (`,"k0000":0`, 10 bytes each) as fit. */
function manyKeys(batch: Batch): HostileRequest {
  const count = room(batch({}), 10);
  const keys = Array.from({ length: count }, (_, i) => `,"k${i.toString(36).padStart(4, '0')}":0`);
  return { name: `${count.toLocaleString('en')} unknown keys`, body: Buffer.from(batch({}, keys.join(''))), expected: { status: 400, code: 'InvalidRequest' } };
}

/** `[[[…]]]` as deep as fits, as the value of an unknown key. */
function deepNesting(batch: Batch): HostileRequest {
  const levels = room(batch({}, ',"nest":'), 2);
  const body = Buffer.from(batch({}, `,"nest":${'['.repeat(levels)}${']'.repeat(levels)}`));
  return { name: `${levels.toLocaleString('en')} levels of nesting in an unknown key`, body, expected: { status: 400, code: 'InvalidRequest' } };
}

/** The same JSON with the room left spread, as JSON whitespace, over the gaps between its tokens. */
function spaced(text: string): Buffer {
  const tokens = text.match(/"(?:[^"\\]|\\.)*"|[^\s"[\]{}:,]+|[[\]{}:,]/g) ?? [];
  const perGap = Math.floor(room(text) / (tokens.length - 1));
  return Buffer.from(tokens.join(' \t\r\n'.repeat(Math.ceil(perGap / 4)).slice(0, perGap)));
}
