/**
 * Safe retries with `Idempotency-Key`: the header's form, the hash that identifies a batch, and
 * the pure verdicts on a keyed request given what storage holds. No I/O.
 *
 * The committed draw rows carry the key and the batch hash, and they are the truth: they land
 * atomically, so one matching row means the whole batch landed. A record per partner and key
 * (TableStore.takeKey), taken before the commit, binds the key to one batch and one business day,
 * so every attempt of that batch writes the same rows of the same partition and storage lets at
 * most one of them land (docs/contract.md §9).
 */
import { createHash } from 'node:crypto';
import { LIMITS } from './limits';
import { DETAILS, type ElementError } from './problem';
import type { DrawRequest } from './requestBody';

export const IDEMPOTENCY_KEY_HEADER = 'Idempotency-Key';
export const IDEMPOTENT_REPLAY_HEADER = 'Idempotent-Replay';

/** 1–128 visible ASCII characters (no space, no control characters). */
const KEY_FORM = /^[\x21-\x7E]{1,128}$/;

export type KeyResult = { readonly ok: true; readonly key?: string } | { readonly ok: false; readonly error: ElementError; readonly key?: undefined };

/** Absent header: no key. Present but malformed (empty too): a request-level Invalid Request. */
export function readIdempotencyKey(headers: { get(name: string): string | null }): KeyResult {
  const value = headers.get(IDEMPOTENCY_KEY_HEADER);
  if (value === null) return { ok: true };
  if (value.length > LIMITS.idempotencyKeyLength || !KEY_FORM.test(value))
    return { ok: false, error: { code: 'InvalidRequest', detail: DETAILS.idempotencyKeyForm } };
  return { ok: true, key: value };
}

/**
 * SHA-256 (hex) of the batch in canonical form: the canonical values of each element, in order.
 * Key spelling, whitespace, unknown keys, `"0042"` vs `42` and `10.0` vs `10` do not change it;
 * the order of elements does (it is recorded as BatchIndex).
 */
export function batchHash(requests: readonly Pick<DrawRequest, 'loanNumber' | 'amount' | 'requestor'>[]): string {
  const canonical = JSON.stringify(requests.map((r) => [r.loanNumber, r.amount, r.requestor]));
  return createHash('sha256').update(canonical).digest('hex');
}

/**
 * RowKey of a key record: a hash, because keys may hold characters a RowKey cannot (`/ \ # ?`)
 * and two partners may pick the same key.
 */
export function keyRecordId(partnerId: string, key: string): string {
  return createHash('sha256')
    .update(JSON.stringify([partnerId, key]))
    .digest('hex');
}

/** What a draw row says about the request that wrote it. */
export interface PriorDraw {
  readonly partnerId?: string;
  readonly idempotencyKey?: string;
  readonly batchHash?: string;
  readonly requestId?: string;
}

export interface KeyedBatch {
  readonly key: string;
  readonly hash: string;
  readonly partnerId: string;
}

/**
 * The record of a partner's key (docs/contract.md §4.1): which batch took it, and the business day
 * that batch is recorded under, whichever day its attempts arrive on.
 */
export interface KeyRecord {
  readonly partnerId: string;
  readonly key: string;
  readonly hash: string;
  /** The business day the batch is recorded under: the day its key was taken. */
  readonly day: string;
  /** The batch's distinct loan numbers (decimal text), so that another batch can tell whether it can still land. */
  readonly loanNumbers: readonly string[];
  /** The request that took the key. */
  readonly requestId: string;
  readonly takenAt: Date;
}

/**
 * How long a key stays bound to its batch after it was taken: a fixed time, whatever side of
 * midnight a retry lands on.
 */
export const KEY_LIFETIME_MS = 24 * 60 * 60 * 1000;

/**
 * After the lifetime, how long until no attempt of the key's batch can still land. An attempt judged just
 * before the lifetime ended may still be committing into the key's day, its transaction may reach storage
 * late, and instances' clocks differ. Inside the grace an unrecorded batch's outcome is not known yet;
 * after it, its key's day is final (docs/contract.md §9).
 */
export const KEY_GRACE_MS = 10 * 60 * 1000;

/**
 * The latest moment, by this instance's clock, at which an attempt may start committing a batch under a
 * key taken at `takenAt`: halfway through the grace. An attempt judged inside the lifetime that stalled
 * (a slow read, a paused process) past it does not commit; the other half of the grace covers a commit
 * already started (bounded at seconds, StoreTimeouts) and the difference between instances' clocks.
 */
export function lastCommitStart(takenAt: Date): number {
  return takenAt.getTime() + KEY_LIFETIME_MS + KEY_GRACE_MS / 2;
}

/**
 * How long a key's record and its batch's rows are kept as written (docs/contract.md §4, §4.1): until
 * then a read of the key's day that finds no row of the batch proves it was never recorded. After it the
 * rows may have been removed, so "not found" proves nothing and the key is forgotten.
 */
export const KEY_MEMORY_MS = 48 * 60 * 60 * 1000;

/** When the key's batch is settled for good: no attempt of it can land after this. */
export function settledAt(takenAt: Date): number {
  return takenAt.getTime() + KEY_LIFETIME_MS + KEY_GRACE_MS;
}

export type KeyVerdict =
  /** No record that binds: the batch may take the key once the draw rules accept it. */
  | { readonly kind: 'free' }
  /** Taken by this very batch: its rows in the key's day decide, and a new attempt completes it in that day. */
  | { readonly kind: 'mine'; readonly day: string; readonly takenAt: Date }
  /** Taken by this batch, its lifetime over and its grace not: a replay if it landed, else not known yet. */
  | { readonly kind: 'expiring'; readonly day: string; readonly takenAt: Date }
  /**
   * Taken by this batch, grace over: a replay if it landed in the key's day; else it never will (expired),
   * or, once the key is `forgotten` (KEY_MEMORY_MS), nothing can be told and the batch is a new submission.
   */
  | { readonly kind: 'expired'; readonly day: string; readonly forgotten: boolean }
  /** Taken by another batch: whether that batch landed, or can never land, decides (see settleHeld). */
  | { readonly kind: 'held' };

/**
 * What a key's record means for this batch; `now` is when the request was judged. An unreadable record
 * (`undefined` with a record present) binds nothing and is replaced like an expired one. Past the grace
 * the key binds nothing for another batch; for its own batch it still names the day to look in, so
 * that a late retry finds its rows rather than records the batch again (for as long as they are kept).
 */
export function judgeKey(batch: KeyedBatch, record: KeyRecord | undefined, now: Date): KeyVerdict {
  if (record === undefined) return { kind: 'free' };
  const age = now.getTime() - record.takenAt.getTime();
  const settled = now.getTime() >= settledAt(record.takenAt);
  if (record.hash !== batch.hash) return settled ? { kind: 'free' } : { kind: 'held' };
  if (age < KEY_LIFETIME_MS) return { kind: 'mine', day: record.day, takenAt: record.takenAt };
  if (!settled) return { kind: 'expiring', day: record.day, takenAt: record.takenAt };
  return { kind: 'expired', day: record.day, forgotten: age >= KEY_MEMORY_MS };
}

/** The row, among these, that this batch recorded under its key (the rows land atomically: one proves all). */
export function recordedRow(batch: KeyedBatch, rows: Iterable<PriorDraw>): PriorDraw | undefined {
  for (const row of rows) {
    if (row.partnerId === batch.partnerId && row.idempotencyKey === batch.key && row.batchHash === batch.hash) return row;
  }
  return undefined;
}

/**
 * Whether the batch that holds a key landed, can never land, or may still: judged from its day's
 * rows of its loans. A row written by anything else on one of its loans makes its transaction fail
 * whenever it arrives (one draw per loan per day, §4.2), so that batch can never be recorded.
 */
export function settleHeld(record: KeyRecord, rows: Iterable<PriorDraw>): 'recorded' | 'never' | 'unsettled' {
  const holder: KeyedBatch = { key: record.key, hash: record.hash, partnerId: record.partnerId };
  const all = [...rows];
  if (recordedRow(holder, all) !== undefined) return 'recorded';
  return all.length > 0 ? 'never' : 'unsettled';
}

export const KEY_REUSED: ElementError = { code: 'InvalidRequest', detail: DETAILS.idempotencyKeyReused };
export const KEY_EXPIRED: ElementError = { code: 'InvalidRequest', detail: DETAILS.idempotencyKeyExpired };
