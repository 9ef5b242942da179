/**
 * POST /DrawRequest: wires the pieces and maps each outcome to its response. Reads top to
 * bottom in the order of checks of docs/contract.md §2: authentication, request shape, draw rules, commit;
 * with an Idempotency-Key, a retry of a batch that landed is answered before the draw rules.
 */
import type { HttpHandler, HttpRequest, HttpResponseInit, InvocationContext } from '@azure/functions';
import type { TokenCredential } from '@azure/identity';
import { Authenticator, type ProviderTimings } from '../lib/auth';
import type { Config, ConfigError } from '../lib/config';
import { applyDrawRules } from '../lib/drawRules';
import { InvocationOutcome } from '../lib/outcome';
import { PartnerDirectory, type PartnerResult } from '../lib/partners';
import { KEY_REUSED, batchHash, judgeRetry, previousDayInWindow, readIdempotencyKey, type KeyedBatch, type PriorDraw } from '../lib/idempotency';
import { DETAILS, type ElementError } from '../lib/problem';
import { readDrawRequests, type DrawRequest } from '../lib/requestBody';
import { DEFAULT_TIMEOUTS, TableStore, drawDay, type StoreResult, type StoreTimeouts } from '../lib/store';
import { noTelemetry, type Telemetry } from '../lib/telemetry';

export interface DrawRequestDeps {
  readonly config: Config;
  readonly authenticator: Authenticator;
  readonly partners: PartnerDirectory;
  readonly store: TableStore;
  readonly telemetry: Telemetry;
  readonly now: () => Date;
}

export interface WiringOptions {
  /** Managed identity for TABLES_ENDPOINT; unused with a connection string. */
  readonly credential?: TokenCredential;
  readonly timeouts?: StoreTimeouts;
  readonly providerTimings?: ProviderTimings;
  /** Started once per instance when a connection string is set (see functions/main.ts). */
  readonly telemetry?: Telemetry;
  readonly now?: () => Date;
}

/** One set of long-lived pieces per instance: caches live as long as the instance. */
export function createDependencies(config: Config, options: WiringOptions = {}): DrawRequestDeps {
  const store = new TableStore(config.tables, options.timeouts ?? DEFAULT_TIMEOUTS, options.credential);
  const now = options.now ?? (() => new Date());
  return {
    config,
    store,
    authenticator: new Authenticator(config.auth, () => now().getTime(), options.providerTimings),
    partners: new PartnerDirectory(store, () => now().getTime()),
    telemetry: options.telemetry ?? noTelemetry,
    now,
  };
}

export function createDrawRequestHandler(deps: DrawRequestDeps): HttpHandler {
  const { config, authenticator, partners, store, now, telemetry } = deps;

  async function handle(request: HttpRequest, outcome: InvocationOutcome): Promise<HttpResponseInit> {
    // 1. Authentication: a verified app token, then its client looked up as a partner.
    const token = await outcome.timed('auth', authenticator.verify(request.headers.get('authorization')));
    if (!token.ok) return outcome.refused(token.failure);
    outcome.clientId = token.clientId;
    // A client this instance already knows to refuse costs nothing more: no body read, no storage call.
    const refusal = partners.cachedRefusal(token.clientId);
    if (refusal !== undefined) return outcome.refusedClient(refusal);
    const caller = partners.resolve(token.clientId); // from cache, or read alongside step 3's reads
    caller.catch(() => undefined); // a defect there is answered where it is awaited, not as an unhandled rejection

    // 2. Request shape (the Idempotency-Key header, then the body), answered without touching loans or draws.
    const idempotency = readIdempotencyKey(request.headers);
    const body = idempotency.ok ? await readDrawRequests(request, config.maxBatchSize) : ({ ok: false, errors: [idempotency.error] } as const);
    if (!body.ok) {
      const partner = await outcome.timed('auth', caller);
      if (!partner.ok) return refusedPartner(outcome, partner);
      outcome.partnerId = partner.partnerId;
      outcome.batchSize = body.batchSize;
      return outcome.rejected(body.errors);
    }
    outcome.batchSize = body.requests.length;
    outcome.loanNumbers = body.requests.map((r) => r.loanNumber);
    outcome.idempotencyKey = idempotency.key;

    // 3. Draw rules, on one parallel round of point reads (and the key's record once the partner is known).
    // A keyed batch early in a day also reads the previous day's rows: a retry across midnight is a replay.
    const at = now();
    const day = drawDay(at, config.drawDayTimeZone);
    const previousDay = idempotency.key === undefined ? undefined : previousDayInWindow(at, day, (t) => drawDay(t, config.drawDayTimeZone));
    const loanNumbers = body.requests.map((r) => String(r.loanNumber));
    const [partner, state, keyRecord, previousDayRows] = await outcome.timed(
      'read',
      Promise.all([
        caller,
        store.readBatchState(day, loanNumbers),
        recordedHash(caller, day, idempotency.key),
        previousDay === undefined ? NO_ROWS : store.readDraws(previousDay, loanNumbers),
      ]),
    );
    if (!partner.ok) return refusedPartner(outcome, partner);
    outcome.partnerId = partner.partnerId;
    if (!state.ok) return outcome.storageFailed(state.failure);
    if (!keyRecord.ok) return outcome.storageFailed(keyRecord.failure);
    if (!previousDayRows.ok) return outcome.storageFailed(previousDayRows.failure);

    // A batch that already landed under its key is answered again, not evaluated again.
    const keyed = idempotency.key === undefined ? undefined : { key: idempotency.key, hash: batchHash(body.requests), partnerId: partner.partnerId };
    if (keyed !== undefined) {
      const retry = judgeRetry(keyed, state.value.drawnToday.values(), keyRecord.value, previousDayRows.value.values());
      if (retry.kind === 'replay') return outcome.replayed(retry.originalRequestId);
      if (retry.kind === 'reused') return outcome.rejected([KEY_REUSED]);
    }

    for (const [loanNumber, loan] of state.value.loans) {
      if (loan.availableCredit === undefined) outcome.dataQuality('LoanWithoutCredit', { loanNumber });
    }
    const verdict = applyDrawRules(body.requests, state.value.loans, state.value.drawnToday, partner.partnerId);
    if (!verdict.accepted) return outcome.rejected(verdict.errors);

    // 4. Atomic commit: the store enforces one draw per loan per day. A key's record is written alongside.
    const rows = body.requests.map((r) => ({ loanNumber: r.loanNumber, amount: r.amount, requestor: r.requestor, batchIndex: r.index }));
    const submittedAt = now();
    const [commit, recorded] = await outcome.timed(
      'commit',
      Promise.all([
        store.commitDraws(rows, { day, partnerId: partner.partnerId, clientId: token.clientId, requestId: outcome.requestId, submittedAt, retry: keyed }),
        keyed === undefined ? NOTHING_TO_RECORD : store.recordKey(day, keyed, outcome.requestId),
      ]),
    );
    if (!commit.ok && 'conflictIndex' in commit) {
      const lost = lostRace(body.requests[commit.conflictIndex]);
      return keyed === undefined ? outcome.rejected([lost]) : twinOrLostRace(outcome, keyed, day, loanNumbers, lost);
    }
    if (!commit.ok) return outcome.storageFailed(commit.failure);
    if (!recorded.ok) outcome.keyNotRecorded(recorded.failure);
    return outcome.accepted(day);
  }

  /** The batch hash recorded under the partner's key today; nothing to read without a key or a partner. */
  async function recordedHash(caller: Promise<PartnerResult>, day: string, key: string | undefined): Promise<StoreResult<string | undefined>> {
    if (key === undefined) return NOTHING_RECORDED;
    const partner = await caller;
    return partner.ok ? store.readKeyRecord(day, partner.partnerId, key) : NOTHING_RECORDED;
  }

  /**
   * A keyed batch lost the commit to an existing row. If that row is its own twin (the same batch
   * and key, sent concurrently), the batch landed: answer as a replay. Otherwise it lost a race.
   */
  async function twinOrLostRace(
    outcome: InvocationOutcome,
    keyed: KeyedBatch,
    day: string,
    loanNumbers: readonly string[],
    lost: ElementError,
  ): Promise<HttpResponseInit> {
    const state = await outcome.timed('read', store.readBatchState(day, loanNumbers));
    // Without the rows the answer is unknown; a retry with the same key will learn it.
    if (!state.ok) return outcome.storageFailed(state.failure);
    const retry = judgeRetry(keyed, state.value.drawnToday.values(), undefined);
    if (retry.kind === 'replay') return outcome.replayed(retry.originalRequestId);
    return outcome.rejected([retry.kind === 'reused' ? KEY_REUSED : lost]);
  }

  return async function drawRequest(request: HttpRequest, context: InvocationContext): Promise<HttpResponseInit> {
    return telemetry.inInvocation(context, async () => {
      const outcome = new InvocationOutcome(context, telemetry);
      try {
        return await handle(request, outcome);
      } catch (error) {
        return outcome.failed(error); // a thrown error is a defect
      }
    });
  };
}

/**
 * The handler of an instance whose settings are invalid (functions/main.ts): nothing is read or
 * checked, every invocation answers the generic 500 and logs the ConfigError's message.
 */
export function createMisconfiguredHandler(error: ConfigError, telemetry: Telemetry = noTelemetry): HttpHandler {
  return (_request, context) => telemetry.inInvocation(context, () => Promise.resolve(new InvocationOutcome(context, telemetry).misconfigured(error)));
}

const NOTHING_RECORDED: StoreResult<undefined> = { ok: true, value: undefined };
const NO_ROWS: StoreResult<ReadonlyMap<string, PriorDraw>> = { ok: true, value: new Map() };
const NOTHING_TO_RECORD: StoreResult<void> = NOTHING_RECORDED;

/** An unknown or inactive client is 401; a lookup that could not reach storage is 502. */
function refusedPartner(outcome: InvocationOutcome, partner: Exclude<PartnerResult, { ok: true }>): HttpResponseInit {
  return 'failure' in partner ? outcome.storageFailed(partner.failure) : outcome.refusedClient(partner.refused);
}

function lostRace(request: DrawRequest): ElementError {
  return {
    index: request.index,
    loanNumber: request.loanNumber,
    code: 'PendingTransactionRequest',
    pointer: request.pointers.loanNumber,
    detail: DETAILS.alreadyToday,
  };
}
