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
import { ERRORS, type ErrorCode } from './errorCatalogue';
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
 * The longest `Retry-After` of a keyed batch whose outcome is not known yet: a grace's length, the longest
 * wait for an outcome that only time settles (docs/contract.md §2.5, §9).
 */
export const PENDING_RETRY_MAX_SECONDS = KEY_GRACE_MS / 1000;

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
 * How long draw rows are surely kept as written (docs/contract.md §4): within it, a read of the key's day that
 * finds no row of its batch proves the batch was never recorded. After it the loan-servicing system may have
 * removed or rewritten them, so "not found" proves nothing, and the answer says so.
 */
export const ROWS_KEPT_MS = 48 * 60 * 60 * 1000;

/** When the key's batch is settled for good: no attempt of it can land after this. */
export function settledAt(takenAt: Date): number {
  return takenAt.getTime() + KEY_LIFETIME_MS + KEY_GRACE_MS;
}

/**
 * How long a refusal of a batch under a key stands (docs/contract.md §9): the same batch under the same key
 * is answered the same `400` for as long as the key would have bound it, so that an attempt of it still on
 * its way (sent before the refusal was answered) cannot record it afterwards.
 */
export const REFUSAL_LIFETIME_MS = KEY_LIFETIME_MS;

/**
 * The most instances' clocks may differ while the key's promises hold
 * (docs/decisions/0046-instances-clocks-are-their-own.md). A commit starts before halfway through the grace by its instance's clock, leaves within its
 * deadline (StoreTimeouts.commitMs, 5 s) and is carried out by storage within its server timeout (30 s,
 * Microsoft's maximum for inserts): it lands within COMMIT_LANDS_WITHIN_MS of starting. Another instance
 * declares the outcome final at the grace's end by its own clock: the second half of the grace less that
 * time is what their clocks may differ by.
 */
export const COMMIT_LANDS_WITHIN_MS = 35_000;
export const CLOCK_TOLERANCE_MS = KEY_GRACE_MS / 2 - COMMIT_LANDS_WITHIN_MS;

/** One element error of a refusal as stored (docs/contract.md §4.1): replayed with the resend's own spelling. */
export interface StoredError {
  readonly index?: number;
  readonly code: ErrorCode;
  /** The field the pointer names, read again from the resend (keys are case-insensitive, so spellings differ). */
  readonly field?: PointerField;
  readonly detail: string;
}

/** Fields a rule's pointer can name (the draw rules point at the loan number or the amount, or at nothing). */
export type PointerField = keyof DrawRequest['pointers'];

/**
 * The row a batch has under its key (docs/contract.md §4.1): it took the key (the day it is recorded under,
 * kept when another batch takes the key over), or it was refused, with the refusal's errors.
 */
export type BatchMark =
  | { readonly kind: 'taken'; readonly record: KeyRecord }
  | { readonly kind: 'refused'; readonly errors: readonly StoredError[]; readonly requestId: string; readonly refusedAt: Date };

/** A row as read, with the ETag a write over it must match; `undefined` contents when the row is unreadable. */
export interface Versioned<T> {
  readonly value?: T;
  readonly etag: string;
}

/** What storage holds for a partner's key and one batch: the key's holder (RowKey ""), and the batch's own row. */
export interface KeyState {
  readonly holder?: Versioned<KeyRecord>;
  readonly own?: Versioned<BatchMark>;
}

export const NO_KEY_STATE: KeyState = {};

export type KeyVerdict =
  /** Nothing binds the key for this batch: the batch may take the key once the draw rules accept it. */
  | { readonly kind: 'free' }
  /** This batch was refused under the key, and the refusal stands: the same answer again. */
  | { readonly kind: 'refused'; readonly errors: readonly StoredError[]; readonly requestId: string }
  /** Taken by this very batch: its rows in the key's day decide, and a new attempt completes it in that day. */
  | { readonly kind: 'mine'; readonly day: string; readonly takenAt: Date }
  /** Taken by this batch, its lifetime over and its grace not: a replay if it landed, else not known yet. */
  | { readonly kind: 'expiring'; readonly day: string; readonly takenAt: Date }
  /**
   * Taken by this batch, grace over: a replay if it landed in the key's day; else it never will. Whether it
   * never did is `known` while its rows are surely kept (ROWS_KEPT_MS). A batch that took its key is never
   * judged anew under it: its take answers for it for good.
   */
  | { readonly kind: 'expired'; readonly day: string; readonly known: boolean }
  /** Taken by another batch: whether that batch landed, or can never land, decides (see settleHeld). */
  | { readonly kind: 'held'; readonly holder: KeyRecord };

/** A verdict for a batch that holds no binding of its own under the key. */
export type UnboundVerdict = Extract<KeyVerdict, { kind: 'free' | 'refused' | 'held' }>;

/**
 * What a key's rows mean for this batch; `now` is when the request was judged. The batch's own binding
 * (the holder's, or the one kept in its own row after another batch took the key over) comes first: its
 * rows in its day decide, and its own take's lifetime. Without one, a standing refusal of this batch; then
 * the holder: another batch binds the key until its grace ends. An unreadable row binds nothing.
 */
export function judgeKey(batch: KeyedBatch, state: KeyState, now: Date): KeyVerdict {
  const holder = state.holder?.value;
  const own = state.own?.value;
  const binding = holder?.hash === batch.hash ? holder : own?.kind === 'taken' ? own.record : undefined;
  if (binding === undefined) return judgeUnbound(batch, state, now);
  const age = now.getTime() - binding.takenAt.getTime();
  if (age < KEY_LIFETIME_MS) return { kind: 'mine', day: binding.day, takenAt: binding.takenAt };
  if (now.getTime() < settledAt(binding.takenAt)) return { kind: 'expiring', day: binding.day, takenAt: binding.takenAt };
  return { kind: 'expired', day: binding.day, known: age < ROWS_KEPT_MS };
}

function judgeUnbound(batch: KeyedBatch, state: KeyState, now: Date): UnboundVerdict {
  const holder = state.holder?.value;
  const own = state.own?.value;
  if (own?.kind === 'refused' && now.getTime() < own.refusedAt.getTime() + REFUSAL_LIFETIME_MS)
    return { kind: 'refused', errors: own.errors, requestId: own.requestId };
  if (holder !== undefined && holder.hash !== batch.hash && now.getTime() < settledAt(holder.takenAt)) return { kind: 'held', holder };
  return { kind: 'free' };
}

/** A refusal's errors as stored: each with the field its pointer names in this request, rather than the pointer. */
export function storedErrors(errors: readonly ElementError[], requests: readonly Pick<DrawRequest, 'pointers'>[]): StoredError[] {
  return errors.map((e) => {
    const pointers = e.index === undefined ? undefined : requests[e.index]?.pointers;
    const field = pointers === undefined ? undefined : (Object.keys(pointers) as PointerField[]).find((f) => pointers[f] === e.pointer);
    return { index: e.index, code: e.code, field, detail: e.detail };
  });
}

/** A stored refusal's errors as this request answers them: its own loan numbers and pointers (the same batch). */
export function replayedErrors(stored: readonly StoredError[], requests: readonly Pick<DrawRequest, 'loanNumber' | 'pointers'>[]): ElementError[] {
  return stored.map((e) => {
    const request = e.index === undefined ? undefined : requests[e.index];
    const pointer = request === undefined || e.field === undefined ? undefined : request.pointers[e.field];
    return {
      code: e.code,
      detail: e.detail,
      ...(e.index === undefined ? {} : { index: e.index }),
      ...(request === undefined ? {} : { loanNumber: request.loanNumber }),
      ...(pointer === undefined ? {} : { pointer }),
    };
  });
}

/** Stored errors as text (a JSON array of `[index, code, field, detail]`, null where absent). */
export function encodeErrors(errors: readonly StoredError[]): string {
  return JSON.stringify(errors.map((e) => [e.index ?? null, e.code, e.field ?? null, e.detail]));
}

const ERROR_CODES: ReadonlySet<string> = new Set(ERRORS.map((e) => e.code));
const POINTER_FIELDS: ReadonlySet<string> = new Set<PointerField>(['loanNumber', 'amount']);

/** Stored errors read back; undefined when the text is not what encodeErrors writes (the row is then unreadable). */
export function decodeErrors(text: string): StoredError[] | undefined {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (!Array.isArray(parsed) || parsed.length === 0) return undefined;
  const errors: StoredError[] = [];
  for (const entry of parsed) {
    if (!Array.isArray(entry) || entry.length !== 4) return undefined;
    const [index, code, field, detail] = entry as unknown[];
    if (index !== null && !(Number.isInteger(index) && (index as number) >= 0)) return undefined;
    if (typeof code !== 'string' || !ERROR_CODES.has(code)) return undefined;
    if (field !== null && !(typeof field === 'string' && POINTER_FIELDS.has(field))) return undefined;
    if (typeof detail !== 'string') return undefined;
    errors.push({
      code: code as ErrorCode,
      detail,
      ...(index === null ? {} : { index: index as number }),
      ...(field === null ? {} : { field: field as PointerField }),
    });
  }
  return errors;
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
export const KEY_OUTCOME_FORGOTTEN: ElementError = { code: 'InvalidRequest', detail: DETAILS.idempotencyKeyOutcomeForgotten };
