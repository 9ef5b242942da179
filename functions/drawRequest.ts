/**
 * POST /DrawRequest: wires the pieces and maps each outcome to its response. Reads top to
 * bottom in the order of checks of DESIGN §2: authentication, request shape, draw rules, commit.
 */
import type { HttpHandler, HttpRequest, HttpResponseInit, InvocationContext } from '@azure/functions';
import type { TokenCredential } from '@azure/identity';
import { Authenticator, type AuthFailure, type ProviderTimings } from '../lib/auth';
import type { Config } from '../lib/config';
import { applyDrawRules } from '../lib/drawRules';
import { PartnerDirectory, type PartnerResult } from '../lib/partners';
import { DETAILS, accepted, badRequest, dependencyFailed, internalError, unauthorized, type ElementError } from '../lib/problem';
import { readDrawRequests, type DrawRequest } from '../lib/requestBody';
import { DEFAULT_TIMEOUTS, TableStore, drawDay, type BatchState, type StorageFailure, type StoreTimeouts } from '../lib/store';

export interface DrawRequestDeps {
  readonly config: Config;
  readonly authenticator: Authenticator;
  readonly partners: PartnerDirectory;
  readonly store: TableStore;
  readonly now: () => Date;
}

export interface WiringOptions {
  /** Managed identity for TABLES_ENDPOINT; unused with a connection string. */
  readonly credential?: TokenCredential;
  readonly timeouts?: StoreTimeouts;
  readonly providerTimings?: ProviderTimings;
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
    now,
  };
}

export function createDrawRequestHandler(deps: DrawRequestDeps): HttpHandler {
  const { config, authenticator, partners, store, now } = deps;

  return async function drawRequest(request: HttpRequest, context: InvocationContext): Promise<HttpResponseInit> {
    const requestId = context.invocationId;
    try {
      // 1. Authentication: a verified app token, then its client looked up as a partner.
      const token = await authenticator.verify(request.headers.get('authorization'));
      if (!token.ok) return refuse(context, requestId, token.failure);
      const caller = partners.resolve(token.clientId); // from cache, or read alongside step 3's reads
      caller.catch(() => undefined); // a defect there is answered where it is awaited, not as an unhandled rejection

      // 2. Request shape, answered without touching loans or draws.
      const body = await readDrawRequests(request, config.maxBatchSize);
      if (!body.ok) {
        const partner = await caller;
        if (!partner.ok) return refusePartner(context, requestId, token.clientId, partner);
        return reject(context, requestId, partner.partnerId, body.errors, body.batchSize);
      }

      // 3. Draw rules, on one parallel round of point reads.
      const day = drawDay(now(), config.drawDayTimeZone);
      const loanNumbers = body.requests.map((r) => String(r.loanNumber));
      const [partner, state] = await Promise.all([caller, store.readBatchState(day, loanNumbers)]);
      if (!partner.ok) return refusePartner(context, requestId, token.clientId, partner);
      if (!state.ok) return storageFailed(context, requestId, state.failure);
      warnDataQuality(context, state.value);
      const verdict = applyDrawRules(body.requests, state.value.loans, state.value.drawnToday, partner.partnerId);
      if (!verdict.accepted) return reject(context, requestId, partner.partnerId, verdict.errors, body.requests.length);

      // 4. Atomic commit: the store enforces one draw per loan per day.
      const commit = await store.commitDraws(
        body.requests.map((r) => ({ loanNumber: r.loanNumber, amount: r.amount, requestor: r.requestor, batchIndex: r.index })),
        { day, partnerId: partner.partnerId, clientId: token.clientId, requestId, submittedAt: now() },
      );
      if (!commit.ok && 'conflictIndex' in commit) {
        return reject(context, requestId, partner.partnerId, [lostRace(body.requests[commit.conflictIndex])], body.requests.length);
      }
      if (!commit.ok) return storageFailed(context, requestId, commit.failure);
      context.log(`DrawRequest accepted: ${body.requests.length} draw(s) for partner ${partner.partnerId} on ${day}`);
      return accepted(requestId);
    } catch (error) {
      // A thrown error is a defect. Log its type and stack, never the request.
      context.error(`DrawRequest failed: ${(error as Error)?.stack ?? String(error)}`);
      return internalError(requestId);
    }
  };
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

function refuse(context: InvocationContext, requestId: string, failure: AuthFailure, clientId?: string): HttpResponseInit {
  if (failure.kind === 'dependency') {
    context.error(`DrawRequest dependency failed: identity provider (${failure.code})`);
    return dependencyFailed(requestId);
  }
  const claim = failure.claim ? ` (claim ${failure.claim})` : '';
  context.warn(`DrawRequest unauthorized: ${failure.code}${claim}${clientId === undefined ? '' : ` client ${clientId}`}`);
  return unauthorized(requestId, failure.tokenSent);
}

function refusePartner(
  context: InvocationContext,
  requestId: string,
  clientId: string,
  partner: Exclude<PartnerResult, { ok: true }>,
): HttpResponseInit {
  if ('failure' in partner) return storageFailed(context, requestId, partner.failure);
  return refuse(context, requestId, { kind: 'unauthorized', code: partner.refused, tokenSent: true }, clientId);
}

function storageFailed(context: InvocationContext, requestId: string, failure: StorageFailure): HttpResponseInit {
  const status = failure.status === undefined ? '' : ` status ${failure.status}`;
  const code = failure.storageCode === undefined ? '' : ` ${failure.storageCode}`;
  context.error(`DrawRequest dependency failed: table storage ${failure.operation} ${failure.code}${status}${code}`);
  return dependencyFailed(requestId);
}

function reject(
  context: InvocationContext,
  requestId: string,
  partnerId: string,
  errors: readonly ElementError[],
  batchSize?: number,
): HttpResponseInit {
  // Everything needed to explain the 400 to the partner; requestor values and tokens are not included.
  const lines = errors.map(
    (e) => `index ${e.index ?? '-'} loan ${e.loanNumber ?? '-'} ${e.code} ${e.pointer ?? '-'}: ${e.detail}`,
  );
  context.log(`DrawRequest rejected for partner ${partnerId}: ${lines.join('; ')}`);
  return badRequest(requestId, errors, batchSize);
}

function warnDataQuality(context: InvocationContext, state: BatchState): void {
  for (const [loanNumber, loan] of state.loans) {
    if (loan.availableCredit === undefined) context.warn(`Data quality: loan ${loanNumber} has no numeric AvailableCredit`);
  }
}
