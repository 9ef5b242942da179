/**
 * Tokens this instance has verified, so a partner sending the same token on every request (as
 * client-credentials clients do for its hour of life) is not signature-checked on every request.
 * An entry answers only while nothing that decided it can have changed: the same provider metadata,
 * the same key set (no fetch since, none in flight, still fresh for jose), and the token not yet
 * expired by the rule jose applies. Only accepted tokens are kept, under the token's SHA-256, never
 * the token itself.
 */
import { hash } from 'node:crypto';

export const MAX_VERIFIED_TOKENS = 1_000;

interface Entry<T> {
  readonly value: T;
  /** The provider metadata object the token was checked against. */
  readonly metadata: object;
  readonly keySetVersion: number;
  /** The token's exp claim, in seconds since the epoch. */
  readonly exp: number;
}

export class VerifiedTokens<T> {
  private readonly entries = new Map<string, Entry<T>>();

  constructor(
    /** jose's clockTolerance: a token counts as expired once exp <= now - tolerance. */
    private readonly clockToleranceSeconds: number,
    private readonly capacity = MAX_VERIFIED_TOKENS,
    private readonly nowSeconds: () => number = () => Math.floor(Date.now() / 1000),
  ) {}

  /** What `token` was verified as, if it still holds under this metadata and key set version. */
  get(token: string, metadata: object, keySetVersion: number | undefined): T | undefined {
    if (keySetVersion === undefined || this.entries.size === 0) return undefined;
    const id = digest(token);
    const entry = this.entries.get(id);
    if (entry === undefined) return undefined;
    if (entry.metadata === metadata && entry.keySetVersion === keySetVersion && entry.exp > this.nowSeconds() - this.clockToleranceSeconds) {
      return entry.value;
    }
    this.entries.delete(id);
    return undefined;
  }

  set(token: string, metadata: object, keySetVersion: number, exp: number, value: T): void {
    const id = digest(token);
    this.entries.delete(id); // re-inserted last: the oldest entry is evicted first
    if (this.entries.size >= this.capacity) this.entries.delete(this.entries.keys().next().value as string);
    this.entries.set(id, { value, metadata, keySetVersion, exp });
  }

  get size(): number {
    return this.entries.size;
  }
}

function digest(token: string): string {
  return hash('sha256', token, 'base64');
}
