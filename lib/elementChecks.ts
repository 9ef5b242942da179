/**
 * The checks of one draw element that JSON Schema keywords cannot express, used by the element
 * schema's own keywords (lib/elementSchema.ts) and by the validator generated from it.
 * Every check here reads the partner's text once, left to right, after its length is capped.
 */
import { LIMITS } from './limits';

/** The numbers of an element as written in the request text, kept beside the parsed values. */
export const NUMBER_TEXT = Symbol('numberText');

export interface WrittenNumbers {
  [NUMBER_TEXT]?: { amount?: string; loanNumber?: string };
}

const isDigit = (code: number) => code >= 0x30 && code <= 0x39;

/** The index after the run of ASCII digits starting at `from`. */
function digitsEnd(text: string, from: number): number {
  let i = from;
  while (i < text.length && isDigit(text.charCodeAt(i))) i += 1;
  return i;
}

/**
 * Decimal places of a JSON number as written (`"100.10"` has 1, `"1.5e2"` has 0), or +Infinity for
 * text that is not one. A number given as a JS value is read in its shortest round-trip form.
 * Trailing zeros of the fraction do not count. One pass, no regex: a regex trimming trailing zeros
 * is quadratic in the length of the digit run.
 */
export function decimalPlaces(value: number | string): number {
  const text = typeof value === 'number' ? String(value) : value;
  let i = text.charCodeAt(0) === 0x2d ? 1 : 0; // '-'
  const integerEnd = digitsEnd(text, i);
  if (integerEnd === i) return Number.POSITIVE_INFINITY;
  i = integerEnd;
  let fraction = 0;
  if (text[i] === '.') {
    const start = i + 1;
    i = digitsEnd(text, start);
    if (i === start) return Number.POSITIVE_INFINITY;
    let significant = i;
    while (significant > start && text[significant - 1] === '0') significant -= 1;
    fraction = significant - start;
  }
  let exponent = 0;
  if (text[i] === 'e' || text[i] === 'E') {
    const sign = text[i + 1] === '-' || text[i + 1] === '+' ? 1 : 0;
    const start = i + 1 + sign;
    i = digitsEnd(text, start);
    if (i === start) return Number.POSITIVE_INFINITY;
    exponent = Number(text.slice(start, i)) * (text[start - 1] === '-' ? -1 : 1);
  }
  return i === text.length ? Math.max(0, fraction - exponent) : Number.POSITIVE_INFINITY;
}

/** Accepted loan number forms → the integer, or undefined. */
export function canonicalLoanNumber(value: unknown): number | undefined {
  if (typeof value === 'number') return Number.isSafeInteger(value) && value >= 1 ? value : undefined;
  if (typeof value === 'string' && value.length <= 16 && /^[0-9]{1,16}$/.test(value)) {
    const n = Number(value);
    return Number.isSafeInteger(n) && n >= 1 ? n : undefined;
  }
  return undefined;
}

/** A number written longer than any valid amount or loan number is refused before it is read. */
function writtenWithinLimit(element: WrittenNumbers | undefined, field: 'amount' | 'loanNumber'): boolean {
  return (element?.[NUMBER_TEXT]?.[field]?.length ?? 0) <= LIMITS.numberTextLength;
}

/** A loan number of an accepted form, not written longer than the limit. */
export function isLoanNumber(value: unknown, element: WrittenNumbers | undefined): boolean {
  return writtenWithinLimit(element, 'loanNumber') && canonicalLoanNumber(value) !== undefined;
}

/** At most `max` decimals, counted on the text as written: JSON.parse has already rounded 1.0000000000000001 to 1. */
export function withinDecimalPlaces(amount: number, element: WrittenNumbers | undefined, max: number): boolean {
  if (!Number.isFinite(amount) || !writtenWithinLimit(element, 'amount')) return false;
  return decimalPlaces(element?.[NUMBER_TEXT]?.amount ?? amount) <= max;
}
