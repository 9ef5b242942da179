/**
 * The tokens of a JSON text, for the one flat pass over a request body before it is parsed. Each
 * next() moves past whitespace and one token in a loop over character codes: no regex, no recursion
 * (deep nesting cannot exhaust the stack) and no string built per character, so a body of any shape
 * costs time linear in its length, with a small constant. It does not validate: JSON.parse does.
 */

/** Kinds of token: punctuation and strings are their first character's code. */
export const TOKEN = {
  openArray: 0x5b, // [
  closeArray: 0x5d, // ]
  openObject: 0x7b, // {
  closeObject: 0x7d, // }
  comma: 0x2c, // ,
  colon: 0x3a, // :
  string: 0x22, // "
  number: -2,
  /** true, false, null, or any other character. */
  other: -3,
  end: -1,
} as const;

const BACKSLASH = 0x5c;
const PUNCTUATION = new Set<number>([TOKEN.openArray, TOKEN.closeArray, TOKEN.openObject, TOKEN.closeObject, TOKEN.comma, TOKEN.colon]);

const isWhitespace = (c: number) => c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d;
const isDigit = (c: number) => c >= 0x30 && c <= 0x39;
const isNumberPart = (c: number) => isDigit(c) || c === 0x2e || c === 0x2b || c === 0x2d || c === 0x65 || c === 0x45; // . + - e E
const isLetter = (c: number) => (c >= 0x61 && c <= 0x7a) || (c >= 0x41 && c <= 0x5a);

export class JsonTokens {
  /** The current token is text.slice(start, end). */
  private start = 0;
  private end = 0;

  constructor(private readonly text: string) {}

  /** Moves to the next token and says its kind (a TOKEN value). */
  next(): number {
    const { text } = this;
    let i = this.end;
    while (i < text.length && isWhitespace(text.charCodeAt(i))) i += 1;
    this.start = i;
    if (i === text.length) {
      this.end = i;
      return TOKEN.end;
    }
    const c = text.charCodeAt(i);
    let kind: number;
    if (c === TOKEN.string) {
      kind = TOKEN.string;
      i += 1;
      while (i < text.length && text.charCodeAt(i) !== TOKEN.string) i += text.charCodeAt(i) === BACKSLASH ? 2 : 1;
      i = Math.min(i + 1, text.length); // past the closing quote (an unterminated string ends the text)
    } else if (isDigit(c) || c === 0x2d) {
      kind = TOKEN.number;
      do i += 1;
      while (i < text.length && isNumberPart(text.charCodeAt(i)));
    } else if (PUNCTUATION.has(c)) {
      kind = c;
      i += 1;
    } else {
      kind = TOKEN.other;
      do i += 1;
      while (i < text.length && isLetter(text.charCodeAt(i)));
    }
    this.end = i;
    return kind;
  }

  /** The current token as written: a slice of the text, not a copy. */
  raw(): string {
    return this.text.slice(this.start, this.end);
  }

  /** The current string token's value, decoded as JSON.parse decodes it; undefined if it is not a JSON string. */
  stringValue(): string | undefined {
    try {
      const value: unknown = JSON.parse(this.raw());
      return typeof value === 'string' ? value : undefined;
    } catch {
      return undefined;
    }
  }
}
