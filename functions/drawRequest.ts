/**
 * POST /DrawRequest: wires the pieces and maps each outcome to its response. Reads top to
 * bottom in the order of checks of DESIGN §2: authentication, request shape, draw rules, commit.
 */
import type { HttpHandler, HttpRequest, HttpResponseInit, InvocationContext } from '@azure/functions';
import type { TokenCredential } from '@azure/identity';
import { Authenticator, type ProviderTimings } from '../lib/auth';
import type { Config } from '../lib/config';
import { applyDrawRules } from '../lib/drawRules';
import { InvocationOutcome } from '../lib/outcome';
import { PartnerDirectory, type PartnerResult } from '../lib/partners';
import { DETAILS, type ElementError } from '../lib/problem';
import { readDrawRequests, type DrawRequest } from '../lib/requestBody';
import { DEFAULT_TIMEOUTS, TableStore, drawDay, type StoreTimeouts } from '../lib/store';
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
    const caller = partners.resolve(token.clientId); // from cache, or read alongside step 3's reads
    caller.catch(() => undefined); // a defect there is answered where it is awaited, not as an unhandled rejection

    // 2. Request shape, answered without touching loans or draws.
    const body = await readDrawRequests(request, config.maxBatchSize);
    if (!body.ok) {
      const partner = await outcome.timed('auth', caller);
        if (!partner.ok) return refusedPartner(outcome, partner);
      outcome.partnerId = partner.partnerId;
      outcome.batchSize = body.batchSize;
      return outcome.rejected(body.errors);
    }
    outcome.batchSize = body.requests.length;

    // 3. Draw rules, on one parallel round of point reads.
    const day = drawDay(now(), config.drawDayTimeZone);
    const loanNumbers = body.requests.map((r) => String(r.loanNumber));
    const [partner, state] = await outcome.timed('read', Promise.all([caller, store.readBatchState(day, loanNumbers)]));
    if (!partner.ok) return refusedPartner(outcome, partner);
    outcome.partnerId = partner.partnerId;
    if (!state.ok) return outcome.storageFailed(state.failure);
    for (const [loanNumber, loan] of state.value.loans) {
      if (loan.availableCredit === undefined) outcome.dataQuality('LoanWithoutCredit', { loanNumber });
    }
    const verdict = applyDrawRules(body.requests, state.value.loans, state.value.drawnToday, partner.partnerId);
    if (!verdict.accepted) return outcome.rejected(verdict.errors);

    // 4. Atomic commit: the store enforces one draw per loan per day.
    const commit = await outcome.timed(
      'commit',
      store.commitDraws(
        body.requests.map((r) => ({ loanNumber: r.loanNumber, amount: r.amount, requestor: r.requestor, batchIndex: r.index })),
        { day, partnerId: partner.partnerId, clientId: token.clientId, requestId: outcome.requestId, submittedAt: now() },
      ),
    );
    if (!commit.ok && 'conflictIndex' in commit) return outcome.rejected([lostRace(body.requests[commit.conflictIndex])]);
    if (!commit.ok) return outcome.storageFailed(commit.failure);
    return outcome.accepted(day);
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
