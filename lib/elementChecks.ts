/**
 * The checks of one draw element that JSON Schema keywords cannot express, used by the element
 * schema's own keywords (lib/elementSchema.ts) and by the validator generated from it.
 */

/** The amount as written in the request text, kept beside the parsed value for the decimals check. */
export const AMOUNT_TEXT = Symbol('amountText');

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

/** At most `max` decimals, counted on the text as written: JSON.parse has already rounded 1.0000000000000001 to 1. */
export function withinDecimalPlaces(amount: number, element: { [AMOUNT_TEXT]?: string } | undefined, max: number): boolean {
  return Number.isFinite(amount) && decimalPlaces(element?.[AMOUNT_TEXT] ?? amount) <= max;
}
