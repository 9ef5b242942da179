/**
 * Calling client id → registered, active partner id, not on the stop list (docs/contract.md §3), cached
 * per instance for at most five minutes. A storage failure is a dependency failure (502), never a refusal (401).
 */
import type { UnauthorizedCode } from './auth';
import type { PartnerLookup, StorageFailure, StoreResult } from './store';

export const PARTNER_CACHE_TTL_MS = 5 * 60 * 1000;
const MAX_CACHED_PARTNERS = 10_000;

export type PartnerResult =
  | { readonly ok: true; readonly partnerId: string }
  | { readonly ok: false; readonly refused: UnauthorizedCode }
  | { readonly ok: false; readonly failure: StorageFailure };

export interface PartnerSource {
  readPartner(clientId: string): Promise<StoreResult<PartnerLookup>>;
}

export class PartnerDirectory {
  private readonly cache = new Map<string, { readonly expires: number; readonly result: PartnerResult }>();
  private readonly inFlight = new Map<string, Promise<PartnerResult>>();

  constructor(
    private readonly source: PartnerSource,
    private readonly now: () => number = Date.now,
  ) {}

  /** Every outcome is a value; it rejects only on a defect. Answers from cache without I/O when it can. */
  resolve(clientId: string): Promise<PartnerResult> {
    const cached = this.cached(clientId);
    if (cached !== undefined) return Promise.resolve(cached);
    let pending = this.inFlight.get(clientId);
    if (pending === undefined) {
      pending = this.lookup(clientId).finally(() => this.inFlight.delete(clientId));
      this.inFlight.set(clientId, pending);
    }
    return pending;
  }

  /**
   * The refusal this instance holds for the client (unknown, inactive, unnamed), if any: such a caller
   * is answered before its request is read, and costs no storage call.
   */
  cachedRefusal(clientId: string): UnauthorizedCode | undefined {
    const cached = this.cached(clientId);
    return cached !== undefined && 'refused' in cached ? cached.refused : undefined;
  }

  private cached(clientId: string): PartnerResult | undefined {
    const entry = this.cache.get(clientId);
    return entry !== undefined && entry.expires > this.now() ? entry.result : undefined;
  }

  private async lookup(clientId: string): Promise<PartnerResult> {
    const read = await this.source.readPartner(clientId);
    if (!read.ok) return { ok: false, failure: read.failure }; // not cached: the next request asks again
    const { partner: row, stopped } = read.value;
    // The stop list first: on-call's stop holds whatever the Partners row says (docs/contract.md §3.3).
    const result: PartnerResult = stopped
      ? { ok: false, refused: 'ERR_AUTH_STOPPED_CLIENT' }
      : row === undefined
        ? { ok: false, refused: 'ERR_AUTH_UNKNOWN_CLIENT' }
        : !row.active
          ? { ok: false, refused: 'ERR_AUTH_INACTIVE_CLIENT' }
          : row.partnerId === undefined || row.partnerId.trim() === ''
            ? { ok: false, refused: 'ERR_AUTH_PARTNER_UNNAMED' }
            : { ok: true, partnerId: row.partnerId };
    if (this.cache.size >= MAX_CACHED_PARTNERS) this.cache.delete(this.cache.keys().next().value as string);
    this.cache.delete(clientId); // re-inserted last: the oldest entry is evicted first
    this.cache.set(clientId, { expires: this.now() + PARTNER_CACHE_TTL_MS, result });
    return result;
  }
}
