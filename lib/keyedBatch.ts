/**
 * The keyed path of a batch (docs/contract.md §9), between the reads of step 3 and the commit of step 4:
 * what its key's record means for it (a replay, a refusal, an outcome not known yet, or the day to record
 * it under), taking the key, and what a lost commit means for it. The pure verdicts are in idempotency.ts;
 * this module adds the storage reads and writes they call for.
 */
import type { HttpResponseInit } from '@azure/functions';
import {
  KEY_EXPIRED,
  KEY_REUSED,
  judgeKey,
  lastCommitStart,
  recordedRow,
  settleHeld,
  settledAt,
  type KeyRecord,
  type KeyedBatch,
  type PriorDraw,
} from './idempotency';
import type { InvocationOutcome } from './outcome';
import type { ElementError } from './problem';
import type { HeldKey, TableStore } from './store';

/**
 * Where a batch is recorded: the business day and that day's rows of its loans; for a keyed batch free
 * to take its key, over which record (its ETag); `takenAt` when the batch already holds its key.
 */
export interface BatchPlan {
  readonly day: string;
  readonly drawn: ReadonlyMap<string, PriorDraw>;
  readonly take?: { readonly over?: string };
  readonly takenAt?: Date;
}

/** Answered here, or a plan to go on with. */
export type Planned<T> = T | { readonly response: HttpResponseInit };

/** The key a batch holds once step 4 has taken it: the day to commit into, and since when. */
export interface HeldFor {
  readonly day: string;
  readonly takenAt: Date;
}

export class KeyedBatches {
  constructor(
    private readonly store: TableStore,
    private readonly now: () => Date,
  ) {}

  /**
   * What a keyed batch does given its key's record, judged at `at`: the replay when it landed, a refusal
   * when another batch holds the key or its own key expired unrecorded, "not known yet" inside the grace;
   * else the day to record it under, and whether it takes the key or completes the submission holding it.
   */
  async plan(
    outcome: InvocationOutcome,
    keyed: KeyedBatch,
    held: HeldKey | undefined,
    at: Date,
    todays: BatchPlan,
    loanNumbers: readonly string[],
  ): Promise<Planned<BatchPlan>> {
    const landedToday = recordedRow(keyed, todays.drawn.values());
    if (landedToday !== undefined) return { response: outcome.replayed(landedToday.requestId) };
    const verdict = judgeKey(keyed, held?.record, at);
    if (verdict.kind === 'free') return { ...todays, take: { over: held?.etag } };
    if (verdict.kind === 'held') return this.heldByAnother(outcome, held as Required<HeldKey>, todays);

    // The key is this batch's: its rows in the key's day decide. This read starts after `at`, so past the
    // grace it is the fresh read that shows whether any attempt landed (none can land any more).
    let rows = todays.drawn; // already searched for this batch's rows above
    if (verdict.day !== todays.day) {
      const read = await outcome.timed('read', this.store.readDraws(verdict.day, loanNumbers));
      if (!read.ok) return { response: outcome.storageFailed(read.failure) };
      const landed = recordedRow(keyed, read.value.values());
      if (landed !== undefined) return { response: outcome.replayed(landed.requestId) };
      rows = read.value;
    }
    // Not found after the grace: never recorded, while the rows are surely kept; after that, not known,
    // and the batch is a new submission under the key, as under a key whose record was removed.
    if (verdict.kind === 'expired') return verdict.forgotten ? { ...todays, take: { over: held?.etag } } : { response: outcome.rejected([KEY_EXPIRED]) };
    if (verdict.kind === 'expiring') return { response: this.pending(outcome, verdict.day, verdict.takenAt) };
    return { day: verdict.day, drawn: rows, takenAt: verdict.takenAt };
  }

  /**
   * Step 4's first half: takes the key for this batch and its business day, unless it holds it already.
   * Taken meanwhile by a twin of this batch: the twin's day, where at most one of the two lands. By
   * another batch: the key is bound to it. Then, whoever took it, a commit that could land after the
   * key's grace is not started (lastCommitStart).
   */
  async take(outcome: InvocationOutcome, keyed: KeyedBatch, plan: BatchPlan, loanNumbers: readonly string[], at: Date): Promise<Planned<HeldFor>> {
    const held = plan.takenAt !== undefined ? { day: plan.day, takenAt: plan.takenAt } : await this.takeNow(outcome, keyed, plan, loanNumbers, at);
    if ('response' in held) return held;
    if (this.now().getTime() >= lastCommitStart(held.takenAt)) return { response: this.pending(outcome, held.day, held.takenAt) };
    return held;
  }

  /**
   * A keyed batch lost the commit to an existing row. If that row is its own twin's (the same batch
   * and key, sent concurrently or retried), the batch landed: answer as a replay. Otherwise it lost a race.
   */
  async lostCommit(outcome: InvocationOutcome, keyed: KeyedBatch, day: string, loanNumbers: readonly string[], lost: ElementError): Promise<HttpResponseInit> {
    const rows = await outcome.timed('read', this.store.readDraws(day, loanNumbers));
    // Without the rows nobody can say whether the twin recorded the batch; a retry with the key will.
    if (!rows.ok) return outcome.outcomeUnknown(rows.failure);
    const landed = recordedRow(keyed, rows.value.values());
    return landed === undefined ? outcome.rejected([lost]) : outcome.replayed(landed.requestId);
  }

  /** Held by another batch: free only when that batch can never land. */
  private async heldByAnother(outcome: InvocationOutcome, { record: holder, etag }: Required<HeldKey>, todays: BatchPlan): Promise<Planned<BatchPlan>> {
    const rows = await outcome.timed('read', this.store.readDraws(holder.day, holder.loanNumbers));
    if (!rows.ok) return { response: outcome.storageFailed(rows.failure) };
    if (settleHeld(holder, rows.value.values()) !== 'never') return { response: outcome.rejected([KEY_REUSED]) };
    return { ...todays, take: { over: etag } };
  }

  private async takeNow(outcome: InvocationOutcome, keyed: KeyedBatch, plan: BatchPlan, loanNumbers: readonly string[], at: Date): Promise<Planned<HeldFor>> {
    const record: KeyRecord = { ...keyed, day: plan.day, loanNumbers: [...new Set(loanNumbers)], requestId: outcome.requestId, takenAt: at };
    const taken = await outcome.timed('commit', this.store.takeKey(record, plan.take?.over));
    if (taken.ok) return { day: plan.day, takenAt: at };
    if ('failure' in taken) return { response: outcome.storageFailed(taken.failure) };
    const current = await outcome.timed('read', this.store.readKeyRecord(keyed.partnerId, keyed.key));
    if (!current.ok) return { response: outcome.storageFailed(current.failure) };
    const winner = current.value?.record;
    // Removed between the take and the re-read (housekeeping of an old record): nothing was sent to be
    // recorded, and a resend takes the key afresh. Not "bound to a different batch", which nothing showed.
    if (winner === undefined) return { response: outcome.storageFailed({ code: 'ERR_STORAGE_FAILED', operation: 'takeKey', storageCode: 'KeyRecordRemoved' }) };
    if (winner.hash !== keyed.hash) return { response: outcome.rejected([KEY_REUSED]) };
    return { day: winner.day, takenAt: winner.takenAt };
  }

  /** An earlier attempt of the key's batch may still land: not known yet, and when it will be. */
  private pending(outcome: InvocationOutcome, day: string, takenAt: Date): HttpResponseInit {
    return outcome.outcomePending(day, settledAt(takenAt), this.now().getTime());
  }
}
