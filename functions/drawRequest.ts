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
import { NO_KEY_STATE, batchHash, readIdempotencyKey, type KeyState } from '../lib/idempotency';
import { KeyedBatches, type HeldFor } from '../lib/keyedBatch';
import { DETAILS, type ElementError } from '../lib/problem';
import { readDrawRequests, type DrawRequest } from '../lib/requestBody';
import { DEFAULT_TIMEOUTS, TableStore, drawDay, type Store, type StoreResult, type StoreTimeouts } from '../lib/store';
import { noTelemetry, type Telemetry } from '../lib/telemetry';

export interface DrawRequestDeps {
  readonly config: Config;
  readonly authenticator: Authenticator;
  readonly partners: PartnerDirectory;
  readonly store: Store;
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
  const now = options.now ?? (() => new Date());
  const store = new TableStore(config.tables, options.timeouts ?? DEFAULT_TIMEOUTS, options.credential, recording, now);
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
    outcome.sentKey = idempotency.key !== undefined; // a malformed key binds nothing: its request's 502 is the plain one
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

    // 3. Draw rules, on one parallel round of point reads (and the key's rows once the partner is known).
    const at = now();
    const today = drawDay(at, config.drawDayTimeZone);
    const loanNumbers = body.requests.map((r) => String(r.loanNumber));
    const hash = idempotency.key === undefined ? undefined : batchHash(body.requests);
    const [partner, state, keyState] = await outcome.timed(
      'read',
      Promise.all([caller, store.readBatchState(today, loanNumbers), keyStateOf(caller, idempotency.key, hash)]),
    );
    if (!partner.ok) return refusedPartner(outcome, partner);
    outcome.partnerId = partner.partnerId;
    if (!state.ok) return outcome.storageFailed(state.failure);
    if (!keyState.ok) return outcome.storageFailed(keyState.failure);

    let warned = false;
    const evaluate = (completing = false): readonly ElementError[] | undefined => {
      // One warning per request that applies the rules, however many of its loans lack credit and however often it is judged.
      const withoutCredit = warned ? [] : [...state.value.loans].filter(([, loan]) => loan.availableCredit === undefined).map(([loanNumber]) => loanNumber);
      if (withoutCredit.length > 0) outcome.dataQuality('LoanWithoutCredit', { loanNumbers: withoutCredit.join(',') });
      warned = true;
      const verdict = applyDrawRules(body.requests, state.value.loans, completing ? NONE_DRAWN : state.value.drawnToday, partner.partnerId);
      return verdict.accepted ? undefined : verdict.errors;
    };
    // Unkeyed: the rules decide, for today. Keyed: the key's rows decide first (a batch recorded or refused
    // under it is answered again; one holding it completes its submission if the loans still allow it); a batch
    // free to take the key is judged by the rules, and takes the key, or marks its refusal, before the answer.
    const keyed = hash === undefined ? undefined : { key: idempotency.key as string, hash, partnerId: partner.partnerId };
    let held: HeldFor = { day: today, takenAt: at };
    if (keyed === undefined) {
      const errors = evaluate();
      if (errors !== undefined) return outcome.rejected(errors);
    } else {
      const decided = await keyedBatches.decide(
        outcome,
        { batch: keyed, requests: body.requests, loanNumbers, today, drawnToday: state.value.drawnToday, at, evaluate },
        keyState.value,
      );
      if ('response' in decided) return decided.response;
      held = decided;
    }

    // 4. The atomic commit, into the key's day for a keyed batch (every attempt of it commits the same rows to
    // the same partition, where storage lets one land), and not started past its key's cutoff.
    const rows = body.requests.map((r) => ({ loanNumber: r.loanNumber, amount: r.amount, requestor: r.requestor, batchIndex: r.index }));
    const commit = await outcome.timed(
      'commit',
      store.commitDraws(rows, {
        day: held.day,
        partnerId: partner.partnerId,
        clientId: token.clientId,
        requestId: outcome.requestId,
        submittedAt: now(),
        retry: keyed,
        startBy: keyed === undefined ? undefined : keyedBatches.startBy(held),
      }),
    );
    if (!commit.ok && 'late' in commit) return keyedBatches.late(outcome, held);
    if (!commit.ok && 'conflictIndex' in commit) {
      const lost = lostRace(body.requests[commit.conflictIndex]);
      return keyed === undefined ? outcome.rejected([lost]) : keyedBatches.lostCommit(outcome, keyed, held.day, loanNumbers, lost);
    }
    if (!commit.ok) return commit.outcomeUnknown ? outcome.outcomeUnknown(commit.failure) : outcome.storageFailed(commit.failure);
    return outcome.accepted(held.day);
  }

  /** The key's rows for this batch; nothing to read without a key or a partner. */
  async function keyStateOf(caller: Promise<PartnerResult>, key: string | undefined, hash: string | undefined): Promise<StoreResult<KeyState>> {
    if (key === undefined || hash === undefined) return NOTHING_HELD;
    const partner = await caller;
    return partner.ok ? store.readKeyState(partner.partnerId, key, hash) : NOTHING_HELD;
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

const NOTHING_HELD: StoreResult<KeyState> = { ok: true, value: NO_KEY_STATE };
const NONE_DRAWN: ReadonlySet<string> = new Set();

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
