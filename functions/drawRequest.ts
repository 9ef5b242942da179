/**
 * POST /DrawRequest: wires the pieces and maps each outcome to its response. Reads top to
 * bottom in the order of checks of docs/contract.md §2: authentication, request shape, draw rules, commit;
 * with an Idempotency-Key, a retry of a batch that landed is answered before the draw rules, and the
 * key is taken before the commit (docs/contract.md §9).
 */
import type { HttpHandler, HttpRequest, HttpResponseInit, InvocationContext } from '@azure/functions';
import type { TokenCredential } from '@azure/identity';
import { Authenticator, type ProviderTimings } from '../lib/auth';
import type { Config, ConfigError } from '../lib/config';
import { applyDrawRules } from '../lib/drawRules';
import { InvocationOutcome } from '../lib/outcome';
import { PartnerDirectory, type PartnerResult } from '../lib/partners';
import { batchHash, readIdempotencyKey } from '../lib/idempotency';
import { KeyedBatches, type BatchPlan } from '../lib/keyedBatch';
import { DETAILS, type ElementError } from '../lib/problem';
import { readDrawRequests, type DrawRequest } from '../lib/requestBody';
import { DEFAULT_TIMEOUTS, TableStore, drawDay, type HeldKey, type StoreResult, type StoreTimeouts } from '../lib/store';
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
  /** How the identity provider is reached (default: the global fetch); the dev host's trusts its local CA. */
  readonly providerFetch?: typeof fetch;
}

/** One set of long-lived pieces per instance: caches live as long as the instance. */
export function createDependencies(config: Config, options: WiringOptions = {}): DrawRequestDeps {
  const recording = options.telemetry !== undefined && options.telemetry !== noTelemetry;
  const store = new TableStore(config.tables, options.timeouts ?? DEFAULT_TIMEOUTS, options.credential, recording);
  const now = options.now ?? (() => new Date());
  return {
    config,
    store,
    authenticator: new Authenticator(config.auth, () => now().getTime(), options.providerTimings, options.providerFetch),
    partners: new PartnerDirectory(store, () => now().getTime()),
    telemetry: options.telemetry ?? noTelemetry,
    now,
  };
}

export function createDrawRequestHandler(deps: DrawRequestDeps): HttpHandler {
  const { config, authenticator, partners, store, now, telemetry } = deps;
  const keyedBatches = new KeyedBatches(store, now);

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
    const at = now();
    const today = drawDay(at, config.drawDayTimeZone);
    const loanNumbers = body.requests.map((r) => String(r.loanNumber));
    const [partner, state, held] = await outcome.timed(
      'read',
      Promise.all([caller, store.readBatchState(today, loanNumbers), keyRecordOf(caller, idempotency.key)]),
    );
    if (!partner.ok) return refusedPartner(outcome, partner);
    outcome.partnerId = partner.partnerId;
    if (!state.ok) return outcome.storageFailed(state.failure);
    if (!held.ok) return outcome.storageFailed(held.failure);

    // A keyed batch is recorded under the business day its key was taken, and answered again, not
    // evaluated again, once it landed there; a key bound to another batch refuses it.
    const keyed = idempotency.key === undefined ? undefined : { key: idempotency.key, hash: batchHash(body.requests), partnerId: partner.partnerId };
    let plan: BatchPlan = { day: today, drawn: state.value.drawnToday };
    if (keyed !== undefined) {
      const keyPlan = await keyedBatches.plan(outcome, keyed, held.value, at, plan, loanNumbers);
      if ('response' in keyPlan) return keyPlan.response;
      plan = keyPlan;
    }

    // One warning per request, however many of its loans lack credit: a batch of 100 is not 100 records.
    const withoutCredit = [...state.value.loans].filter(([, loan]) => loan.availableCredit === undefined).map(([loanNumber]) => loanNumber);
    if (withoutCredit.length > 0) outcome.dataQuality('LoanWithoutCredit', { loanNumbers: withoutCredit.join(',') });
    // A batch that holds its key passed the rules when it took it: a later attempt completes that
    // submission as it was accepted, and storage decides (a loan drawn meanwhile is a lost race).
    if (plan.takenAt === undefined) {
      const verdict = applyDrawRules(body.requests, state.value.loans, plan.drawn, partner.partnerId);
      if (!verdict.accepted) return outcome.rejected(verdict.errors);
    }

    // 4. A keyed batch takes its key first: from then on every attempt of it commits the same rows to
    // the same day's partition, where storage lets one land. Then the atomic commit.
    const taken = keyed === undefined ? { day: plan.day } : await keyedBatches.take(outcome, keyed, plan, loanNumbers, at);
    if ('response' in taken) return taken.response;
    const { day } = taken;
    const rows = body.requests.map((r) => ({ loanNumber: r.loanNumber, amount: r.amount, requestor: r.requestor, batchIndex: r.index }));
    const commit = await outcome.timed(
      'commit',
      store.commitDraws(rows, { day, partnerId: partner.partnerId, clientId: token.clientId, requestId: outcome.requestId, submittedAt: now(), retry: keyed }),
    );
    if (!commit.ok && 'conflictIndex' in commit) {
      const lost = lostRace(body.requests[commit.conflictIndex]);
      return keyed === undefined ? outcome.rejected([lost]) : keyedBatches.lostCommit(outcome, keyed, day, loanNumbers, lost);
    }
    if (!commit.ok) return commit.outcomeUnknown ? outcome.outcomeUnknown(commit.failure) : outcome.storageFailed(commit.failure);
    return outcome.accepted(day);
  }

  /** The record of the partner's key; nothing to read without a key or a partner. */
  async function keyRecordOf(caller: Promise<PartnerResult>, key: string | undefined): Promise<StoreResult<HeldKey | undefined>> {
    if (key === undefined) return NOTHING_HELD;
    const partner = await caller;
    return partner.ok ? store.readKeyRecord(partner.partnerId, key) : NOTHING_HELD;
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

const NOTHING_HELD: StoreResult<undefined> = { ok: true, value: undefined };

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
