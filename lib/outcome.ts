/**
 * How one invocation ended: the response the caller gets, and what on-call gets (a log line and
 * the telemetry record). One place, so every answer is explained the same way.
 */
import type { HttpResponseInit, InvocationContext } from '@azure/functions';
import type { AuthFailure, UnauthorizedCode } from './auth';
import type { ConfigError } from './config';
import { PENDING_RETRY_MAX_SECONDS } from './idempotency';
import { RETRY_AFTER_SECONDS, accepted, badRequest, dependencyFailed, internalError, outcomePending, unauthorized, type ElementError } from './problem';
import type { StorageFailure } from './store';
import {
  COMMIT_OUTCOME_UNKNOWN,
  KEY_OUTCOME_PENDING,
  MISCONFIGURED,
  REFUSED_BEFORE,
  type BatchRecord,
  type DataQualityDimension,
  type DataQualityIssue,
  type Outcome,
  type Telemetry,
} from './telemetry';

type Phase = 'auth' | 'read' | 'commit';

/** `operation [code] [status n] [storage code]`: what on-call needs of a storage failure, never a message. */
function describeFailure(failure: StorageFailure, withCode = true): string {
  const status = failure.status === undefined ? '' : ` status ${failure.status}`;
  const code = failure.storageCode === undefined ? '' : ` ${failure.storageCode}`;
  return `${failure.operation}${withCode ? ` ${failure.code}` : ''}${status}${code}`;
}

/** One rejected element, as the log states it: everything needed to explain it, no requestor value. */
function elementLine(e: ElementError): string {
  return `index ${e.index ?? '-'} loan ${e.loanNumber ?? '-'} ${e.code} ${e.pointer ?? '-'}: ${e.detail}`;
}

export class InvocationOutcome {
  private readonly started = performance.now();
  private readonly durations: { auth?: number; read?: number; commit?: number } = {};
  clientId?: string;
  partnerId?: string;
  batchSize?: number;
  /** The batch's loan numbers, once its shape is valid. */
  loanNumbers?: readonly number[];
  idempotencyKey?: string;
  /**
   * The request carried a well-formed `Idempotency-Key`: an earlier request with it may have recorded the
   * batch, so a storage failure of this one does not say nothing was submitted (docs/contract.md §2.1).
   */
  sentKey = false;

  constructor(
    private readonly context: InvocationContext,
    private readonly telemetry: Telemetry,
  ) {}

  get requestId(): string {
    return this.context.invocationId;
  }

  /** Awaits `work`, adding its duration to the phase. */
  async timed<T>(phase: Phase, work: Promise<T>): Promise<T> {
    const start = performance.now();
    try {
      return await work;
    } finally {
      this.durations[phase] = (this.durations[phase] ?? 0) + (performance.now() - start);
    }
  }

  refused(failure: AuthFailure): HttpResponseInit {
    if (failure.kind === 'dependency') {
      this.context.error(`DrawRequest dependency failed: identity provider (${failure.code})`);
      this.finish('DependencyFailed', failure.code, 'identity-provider');
      return dependencyFailed(this.requestId);
    }
    const claim = failure.claim ? ` (claim ${failure.claim})` : '';
    const client = this.clientId === undefined ? '' : ` client ${this.clientId}`;
    this.context.warn(`DrawRequest unauthorized: ${failure.code}${claim}${client}`);
    this.finish('Unauthorized', failure.code, failure.claim);
    return unauthorized(this.requestId, failure.tokenSent);
  }

  /** The token was good but its client is not an active partner. */
  refusedClient(code: UnauthorizedCode): HttpResponseInit {
    if (code === 'ERR_AUTH_PARTNER_UNNAMED') this.dataQuality('PartnerWithoutId', { clientId: this.clientId ?? '' });
    return this.refused({ kind: 'unauthorized', code, tokenSent: true });
  }

  storageFailed(failure: StorageFailure): HttpResponseInit {
    this.context.error(`DrawRequest dependency failed: table storage ${describeFailure(failure)}`);
    this.finish('DependencyFailed', failure.code, describeFailure(failure, false));
    // With a key, "nothing was submitted" would be untrue of the batch whenever an earlier request with the
    // key recorded it: the outcome-unknown answer, as after a commit storage may have applied.
    return this.sentKey ? this.unknownAnswer() : dependencyFailed(this.requestId);
  }

  /**
   * The outcome-unknown 502: with `Retry-After` only to a request with a key, whose resend under it is safe
   * and tells the outcome (docs/contract.md §2.5); without a key it must not be resent blindly.
   */
  private unknownAnswer(): HttpResponseInit {
    return this.sentKey ? outcomePending(this.requestId, RETRY_AFTER_SECONDS) : dependencyFailed(this.requestId, true);
  }

  /**
   * A commit storage may have applied: the partner is told the batch may have been recorded, and
   * on-call counts these apart (reason CommitOutcomeUnknown), since each needs the partner's retry or a look.
   */
  outcomeUnknown(failure: StorageFailure): HttpResponseInit {
    const detail = describeFailure(failure);
    this.context.error(`DrawRequest outcome unknown: table storage ${detail}; the batch may have been recorded`);
    this.finish('DependencyFailed', COMMIT_OUTCOME_UNKNOWN, detail);
    return this.unknownAnswer();
  }

  /**
   * A keyed batch not found in its key's day while an earlier attempt of it may still land (docs/contract.md
   * §9): the partner is told the outcome is not known yet, and when to ask again: when it will be known, at
   * most a grace's length (PENDING_RETRY_MAX_SECONDS) ahead. `refused`: this attempt did not commit because the
   * loan rules refuse the batch now (logged and recorded as a 400's elements are); the loans may allow it again.
   */
  outcomePending(day: string, settlesAt: number, now: number, refused: readonly ElementError[] = []): HttpResponseInit {
    const until = new Date(settlesAt).toISOString();
    const why = refused.length === 0 ? 'is past its 24 hours' : `is bound to it, but the loans refuse it now (${refused.map(elementLine).join('; ')})`;
    this.context.warn(
      `DrawRequest outcome not known yet: Idempotency-Key ${this.idempotencyKey} of partner ${this.partnerId} ${why} and its batch is not in ${day}; an earlier attempt may land until ${until}`,
    );
    this.finish('DependencyFailed', KEY_OUTCOME_PENDING, `day ${day} until ${until}`, refused);
    return outcomePending(this.requestId, Math.min(PENDING_RETRY_MAX_SECONDS, Math.max(1, Math.ceil((settlesAt - now) / 1000))));
  }

  /** A 400; `refusedBy` names the earlier request whose refusal of this batch under its key is answered again. */
  rejected(errors: readonly ElementError[], refusedBy?: string): HttpResponseInit {
    // Everything needed to explain the 400 to the partner; requestor values and tokens are not included.
    const lines = errors.map(elementLine);
    const again = refusedBy === undefined ? '' : ` (Idempotency-Key ${this.idempotencyKey}: the refusal of request ${refusedBy}, answered again)`;
    this.context.log(`DrawRequest rejected for partner ${this.partnerId}${again}: ${lines.join('; ')}`);
    this.finish('Rejected', refusedBy === undefined ? undefined : REFUSED_BEFORE, refusedBy, errors);
    return badRequest(this.requestId, errors, this.batchSize);
  }

  accepted(day: string): HttpResponseInit {
    this.context.log(`DrawRequest accepted: ${this.batchSize} draw(s) for partner ${this.partnerId} on ${day}`);
    this.finish('Accepted');
    return accepted(this.requestId);
  }

  /** A retry of a batch that landed earlier under the same Idempotency-Key: nothing was written now. */
  replayed(originalRequestId: string | undefined): HttpResponseInit {
    this.context.log(
      `DrawRequest replayed: Idempotency-Key ${this.idempotencyKey} of partner ${this.partnerId} already landed this batch (request ${originalRequestId ?? 'unknown'})`,
    );
    this.finish('Replayed', undefined, originalRequestId);
    return accepted(this.requestId, true);
  }

  /** A defect: its type and stack go to the log, never to the caller. */
  failed(error: unknown): HttpResponseInit {
    this.context.error(`DrawRequest failed: ${(error as Error)?.stack ?? String(error)}`);
    this.finish('Failed', (error as Error)?.name ?? 'Error');
    return internalError(this.requestId);
  }

  /**
   * The instance's settings are invalid (functions/main.ts): nothing was attempted. The log names
   * each bad setting (ConfigError messages never hold a secret value); the caller gets the generic 500.
   */
  misconfigured(error: ConfigError): HttpResponseInit {
    this.context.error(`DrawRequest failed: this instance is misconfigured. ${error.message}`);
    this.finish('Failed', MISCONFIGURED, error.problems.join('; '));
    return internalError(this.requestId);
  }

  dataQuality(issue: DataQualityIssue, properties: { readonly [K in DataQualityDimension]?: string }): void {
    this.context.warn(
      `Data quality: ${issue} ${Object.entries(properties)
        .map(([k, v]) => `${k}=${v}`)
        .join(' ')}`,
    );
    this.telemetry.dataQuality(issue, { requestId: this.requestId, ...properties });
  }

  private finish(outcome: Outcome, reason?: string, reasonDetail?: string, errors: readonly ElementError[] = []): void {
    const record: BatchRecord = {
      requestId: this.requestId,
      outcome,
      clientId: this.clientId,
      partnerId: this.partnerId,
      batchSize: this.batchSize,
      loanNumbers: this.loanNumbers,
      idempotencyKey: this.idempotencyKey,
      reason,
      reasonDetail,
      errors,
      durations: { ...this.durations, total: performance.now() - this.started },
    };
    this.telemetry.batch(record);
  }
}
