/**
 * Safe retries with `Idempotency-Key`: the header's form, the hash that identifies a batch, and
 * the pure verdict on a keyed request given what storage holds for today. No I/O.
 *
 * The committed draw rows carry the key and the batch hash, and they are the truth: they land
 * atomically, so one matching row means the whole batch landed. A separate record per partner,
 * key and day (see TableStore.recordKey) finds a key reused for a batch naming other loans.
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

/** What a today's draw row says about the request that wrote it. */
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

export type RetryVerdict =
  /** The same partner already landed this batch under this key today: answer 204 again, write nothing. */
  | { readonly kind: 'replay'; readonly originalRequestId?: string }
  /** The key already named a different batch of this partner today. */
  | { readonly kind: 'reused' }
  /** Nothing recorded under this key for this batch: evaluate it as any other. */
  | { readonly kind: 'new' };

/**
 * How long into a business day a keyed retry of the previous day's batch is still taken for one. A
 * batch committed just before midnight whose answer was lost is retried after it, as partners are
 * told to (backoff up to a minute; after a 500, later): it must not land a second time.
 */
export const PREVIOUS_DAY_RETRY_MS = 60 * 60 * 1000;

/**
 * The business day whose rows a keyed request must also read: the previous one, during the first
 * PREVIOUS_DAY_RETRY_MS of a day; otherwise none. `dayOf` gives the business day of an instant.
 */
export function previousDayInWindow(now: Date, today: string, dayOf: (at: Date) => string): string | undefined {
  const windowStart = dayOf(new Date(now.getTime() - PREVIOUS_DAY_RETRY_MS));
  return windowStart === today ? undefined : windowStart;
}

/**
 * @param todayRows       today's draw rows for the batch's loans, by loan number
 * @param recordHash      the batch hash recorded under this partner's key today, if any
 * @param previousDayRows the previous day's rows for the batch's loans, in the first minutes of a day
 */
export function judgeRetry(
  batch: KeyedBatch,
  todayRows: Iterable<PriorDraw>,
  recordHash: string | undefined,
  previousDayRows: Iterable<PriorDraw> = [],
): RetryVerdict {
  const mine = (row: PriorDraw) => row.partnerId === batch.partnerId && row.idempotencyKey === batch.key;
  let reused = recordHash !== undefined && recordHash !== batch.hash;
  for (const row of todayRows) {
    if (!mine(row)) continue;
    if (row.batchHash === batch.hash) return { kind: 'replay', originalRequestId: row.requestId };
    reused = true;
  }
  // The previous day's rows can only prove a replay: on a new day the key is free for a new batch.
  for (const row of previousDayRows) {
    if (mine(row) && row.batchHash === batch.hash) return { kind: 'replay', originalRequestId: row.requestId };
  }
  return reused ? { kind: 'reused' } : { kind: 'new' };
}

export const KEY_REUSED: ElementError = { code: 'InvalidRequest', detail: DETAILS.idempotencyKeyReused };
