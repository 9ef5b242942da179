/**
 * The keyed path of a batch (docs/contract.md §9), between the reads of step 3 and the commit of step 4:
 * what its key's rows mean for it (a replay, a refusal, an outcome not known yet, or the day to record it
 * under), then the draw rules when the key is free for it, and the write that makes the answer hold: the
 * take before a commit, the refusal's mark before a `400`. The pure verdicts are in idempotency.ts; this
 * module adds the storage reads and writes they call for.
 *
 * Every write here is conditional on the rows as read. When another request wrote them meanwhile, the
 * rows are read again and the batch judged again: so the answer given is always the one storage kept.
 */
import type { HttpResponseInit } from '@azure/functions';
import {
  KEY_EXPIRED,
  KEY_OUTCOME_FORGOTTEN,
  KEY_REUSED,
  judgeKey,
  lastCommitStart,
  recordedRow,
  replayedErrors,
  settleHeld,
  settledAt,
  storedErrors,
  type KeyRecord,
  type KeyState,
  type KeyedBatch,
  type KeyVerdict,
  type PriorDraw,
  type UnboundVerdict,
} from './idempotency';
import type { InvocationOutcome } from './outcome';
import type { ElementError } from './problem';
import type { DrawRequest } from './requestBody';
import type { KeyWriteResult, Store } from './store';

/** A keyed batch and what its request read in step 3. */
export interface KeyedRequest {
  readonly batch: KeyedBatch;
  readonly requests: readonly DrawRequest[];
  /** The loan numbers, in the batch's order (decimal text). */
  readonly loanNumbers: readonly string[];
  /** Today's business day, and today's rows of the batch's loans as read in step 3. */
  readonly today: string;
  readonly drawnToday: ReadonlyMap<string, PriorDraw>;
  /** When the reads of step 3 started: the batch is judged, and takes its key, as of then. */
  readonly at: Date;
  /**
   * The draw rules on step 3's reads: the errors, or none when the batch passes. `completing`: the loan rules
   * alone, for a batch that holds its key (today's draws do not concern a commit into its key's day, where
   * storage decides one draw a day).
   */
  readonly evaluate: (completing?: boolean) => readonly ElementError[] | undefined;
}

/** Answered here, or a plan to go on with. */
export type Planned<T> = T | { readonly response: HttpResponseInit };

/** The key a batch holds once it may commit: the day to commit into, and since when it holds it. */
export interface HeldFor {
  readonly day: string;
  readonly takenAt: Date;
}

/**
 * How often a batch is judged again after another request wrote its key's rows meanwhile. Each write that
 * beats it settles something (a twin took or refused the key, another batch took it), so a second judgement
 * nearly always ends it; the bound only keeps a pathological stream of writers from holding a request.
 */
const MAX_JUDGEMENTS = 4;

export class KeyedBatches {
  constructor(
    private readonly store: Store,
    private readonly now: () => Date,
  ) {}

  /**
   * Decides a keyed batch on its key's rows as read in step 3: answered here (a replay, a refusal, not known
   * yet, a storage failure), or the day and take to commit under, its key taken.
   */
  async decide(outcome: InvocationOutcome, request: KeyedRequest, read: KeyState): Promise<Planned<HeldFor>> {
    const landedToday = recordedRow(request.batch, request.drawnToday.values());
    if (landedToday !== undefined) return { response: outcome.replayed(landedToday.requestId) };
    let state = read;
    let at = request.at;
    for (let judged = 1; ; judged++) {
      const step = await this.judge(outcome, request, state, at);
      if (step !== CHANGED) return step;
      // Another request wrote the key's rows since they were read: read them again and judge on them.
      if (judged === MAX_JUDGEMENTS)
        return { response: outcome.storageFailed({ code: 'ERR_STORAGE_FAILED', operation: 'readKeyRecord', storageCode: 'KeyContended' }) };
      at = this.now();
      const again = await outcome.timed('read', this.store.readKeyState(request.batch.partnerId, request.batch.key, request.batch.hash));
      if (!again.ok) return { response: outcome.storageFailed(again.failure) };
      state = again.value;
    }
  }

  /**
   * A commit whose outcome is not known yet because it was not started in time: its key's batch may still
   * land until the grace ends (the commit's `startBy` was lastCommitStart).
   */
  late(outcome: InvocationOutcome, held: HeldFor): HttpResponseInit {
    return this.pending(outcome, held.day, held.takenAt);
  }

  /** The last moment a commit of a batch holding its key since `takenAt` may start. */
  startBy(held: HeldFor): number {
    return lastCommitStart(held.takenAt);
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

  /** One judgement of the batch on its key's rows: an answer, a plan, or CHANGED when a write found the rows changed. */
  private async judge(outcome: InvocationOutcome, request: KeyedRequest, state: KeyState, at: Date): Promise<Planned<HeldFor> | typeof CHANGED> {
    const verdict: KeyVerdict = judgeKey(request.batch, state, at);
    if (verdict.kind === 'free' || verdict.kind === 'refused' || verdict.kind === 'held') return this.unbound(outcome, request, state, verdict);

    // The key is this batch's: its rows in the key's day decide, as read after `at`, so that past the grace
    // it is a read that shows whether any attempt landed (none can land any more). Step 3 read today's
    // after `request.at`; another day, or a judgement again later (a write found the key's rows changed,
    // and an attempt may have landed since step 3), is read now. The key's day can be today after its 24
    // hours: a day of 25 hours, when clocks go back.
    if (verdict.day !== request.today || at.getTime() !== request.at.getTime()) {
      const read = await outcome.timed('read', this.store.readDraws(verdict.day, request.loanNumbers));
      if (!read.ok) return { response: outcome.storageFailed(read.failure) };
      const landed = recordedRow(request.batch, read.value.values());
      if (landed !== undefined) return { response: outcome.replayed(landed.requestId) };
    }
    // Not found after the grace: never recorded, while its rows are surely kept; after that, not known. Either
    // way no attempt can land any more, and the batch is never judged anew under the key.
    if (verdict.kind === 'expired') return { response: outcome.rejected([verdict.known ? KEY_EXPIRED : KEY_OUTCOME_FORGOTTEN]) };
    if (verdict.kind === 'expiring') return { response: this.pending(outcome, verdict.day, verdict.takenAt) };
    // It holds its key: this attempt completes that submission in the key's day, if the loans still allow it
    // (a loan moved to another partner, or its credit drawn down, since the take). When they do not, an
    // earlier attempt accepted as the loans were may still land: not known yet, until the key settles.
    const refused = request.evaluate(true);
    if (refused !== undefined) return { response: this.pending(outcome, verdict.day, verdict.takenAt, refused) };
    return { day: verdict.day, takenAt: verdict.takenAt };
  }

  /** A batch without a binding of its own: its standing refusal, another batch holding the key, or free. */
  private async unbound(
    outcome: InvocationOutcome,
    request: KeyedRequest,
    state: KeyState,
    verdict: UnboundVerdict,
  ): Promise<Planned<HeldFor> | typeof CHANGED> {
    if (verdict.kind === 'refused') return { response: outcome.rejected(replayedErrors(verdict.errors, request.requests), verdict.requestId) };
    if (verdict.kind === 'held') {
      const settled = await this.settle(outcome, verdict.holder);
      if ('response' in settled) return settled;
      if (!settled.never) return this.refuse(outcome, request, state, [KEY_REUSED]);
    }
    // Free: the draw rules decide, on step 3's reads of today. A refusal is marked before it is answered; an
    // acceptance takes the key, for today's business day and as of the reads.
    const errors = request.evaluate();
    if (errors !== undefined) return this.refuse(outcome, request, state, errors);
    const record: KeyRecord = {
      ...request.batch,
      day: request.today,
      loanNumbers: [...new Set(request.loanNumbers)],
      requestId: outcome.requestId,
      takenAt: request.at,
    };
    const taken = await outcome.timed('commit', this.store.takeKey(record, state));
    if (!taken.ok) return this.afterWrite(outcome, taken);
    return { day: record.day, takenAt: record.takenAt };
  }

  /**
   * A refusal under a key is recorded in the batch's own row before it is answered, so that no attempt
   * of the same batch judged on the rows as they were can take the key afterwards, and a later one is
   * answered the same (docs/contract.md §9).
   */
  private async refuse(
    outcome: InvocationOutcome,
    request: KeyedRequest,
    state: KeyState,
    errors: readonly ElementError[],
  ): Promise<Planned<HeldFor> | typeof CHANGED> {
    const refusal = { errors: storedErrors(errors, request.requests), requestId: outcome.requestId, refusedAt: this.now() };
    const marked = await outcome.timed('commit', this.store.markRefused(request.batch, refusal, state));
    if (!marked.ok) return this.afterWrite(outcome, marked);
    return { response: outcome.rejected(errors) };
  }

  private afterWrite(outcome: InvocationOutcome, failed: Exclude<KeyWriteResult, { ok: true }>): Planned<never> | typeof CHANGED {
    return 'changed' in failed ? CHANGED : { response: outcome.storageFailed(failed.failure) };
  }

  /** Held by another batch: free only when that batch can never land. */
  private async settle(outcome: InvocationOutcome, holder: KeyRecord): Promise<Planned<{ readonly never: boolean }>> {
    const rows = await outcome.timed('read', this.store.readDraws(holder.day, holder.loanNumbers));
    if (!rows.ok) return { response: outcome.storageFailed(rows.failure) };
    return { never: settleHeld(holder, rows.value.values()) === 'never' };
  }

  /** An earlier attempt of the key's batch may still land: not known yet, and when it will be; `refused`, why this one did not commit. */
  private pending(outcome: InvocationOutcome, day: string, takenAt: Date, refused?: readonly ElementError[]): HttpResponseInit {
    return outcome.outcomePending(day, settledAt(takenAt), this.now().getTime(), refused);
  }
}

/** A judgement's write found the key's rows changed since they were read. */
const CHANGED = Symbol('changed');
