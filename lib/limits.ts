/**
 * Every bound on what a request may send, in one place. Each is checked before the work it bounds,
 * so request-controlled data meets at most linear work (docs/decisions/0017-every-bound-on-a-request-is-in-one-module-and-checked.md).
 */
export const LIMITS = {
  /** Raw request body. */
  bodyBytes: 256 * 1024,
  /** The bearer token itself. */
  tokenBytes: 8 * 1024,
  /** The Authorization header as sent: a token at its limit, its scheme and some spacing. */
  authorizationLength: 8 * 1024 + 64,
  /** `application/json; charset=utf-8` is 31 characters. */
  contentTypeLength: 256,
  idempotencyKeyLength: 128,
  /**
   * The text of an amount or a numeric loan number as written. A loan number has at most 16 digits and
   * an amount of at most 2 decimals about as many; the rest is room for zeros a formatter may add.
   */
  numberTextLength: 32,
  /**
   * Keys of one JSON object: a draw element has three fields, and room for keys a partner's system adds
   * (ignored); objects inside ignored values are held to it too, as JSON.parse builds them all.
   */
  keysPerObject: 64,
  /** Containers inside containers: the array is level 1, an element 2; values of ignored keys may nest. */
  nestingDepth: 32,
} as const;
