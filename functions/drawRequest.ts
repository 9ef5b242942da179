/**
 * POST /DrawRequest: wires the pieces and maps each outcome to its response. Reads top to
 * bottom in the order of checks of DESIGN §2: authentication, request shape, draw rules, commit.
 */
import type { HttpHandler, HttpRequest, HttpResponseInit, InvocationContext } from '@azure/functions';
import type { TokenCredential } from '@azure/core-auth';
import { Authenticator, type AuthFailure } from '../lib/auth';
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
  readonly now?: () => Date;
}

/** One set of long-lived pieces per instance: caches live as long as the instance. */
export function createDependencies(config: Config, options: WiringOptions = {}): DrawRequestDeps {
  const store = new TableStore(config.tables, options.timeouts ?? DEFAULT_TIMEOUTS, options.credential);
  const now = options.now ?? (() => new Date());
  return {
    config,
    store,
    authenticator: new Authenticator(config.auth, () => now().getTime()),
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

      // 2. Request shape, answered without touching loans or draws.
      const body = await readDrawRequests(request, config.maxBatchSize);
      if (!body.ok) {
        const partner = await caller;
        if (!partner.ok) return refusePartner(context, requestId, partner);
        return reject(context, requestId, body.errors, body.batchSize);
      }

      // 3. Draw rules, on one parallel round of point reads.
      const day = drawDay(now(), config.drawDayTimeZone);
      const loanNumbers = body.requests.map((r) => String(r.loanNumber));
      const [partner, state] = await Promise.all([caller, store.readBatchState(day, loanNumbers)]);
      if (!partner.ok) return refusePartner(context, requestId, partner);
      if (!state.ok) return storageFailed(context, requestId, state.failure);
      warnDataQuality(context, state.value);
      const verdict = applyDrawRules(body.requests, state.value.loans, state.value.drawnToday, partner.partnerId);
      if (!verdict.accepted) return reject(context, requestId, verdict.errors, body.requests.length);

      // 4. Atomic commit: the store enforces one draw per loan per day.
      const commit = await store.commitDraws(
        body.requests.map((r) => ({ loanNumber: r.loanNumber, amount: r.amount, requestor: r.requestor, batchIndex: r.index })),
        { day, partnerId: partner.partnerId, clientId: token.clientId, requestId, submittedAt: now() },
      );
      if (!commit.ok && 'conflictIndex' in commit) {
        return reject(context, requestId, [lostRace(body.requests[commit.conflictIndex])], body.requests.length);
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

function refuse(context: InvocationContext, requestId: string, failure: AuthFailure): HttpResponseInit {
  if (failure.kind === 'dependency') {
    context.error(`DrawRequest dependency failed: identity provider (${failure.code})`);
    return dependencyFailed(requestId);
  }
  context.warn(`DrawRequest unauthorized: ${failure.code}${failure.claim ? ` (claim ${failure.claim})` : ''}`);
  return unauthorized(requestId, failure.tokenSent);
}

function refusePartner(context: InvocationContext, requestId: string, partner: Exclude<PartnerResult, { ok: true }>): HttpResponseInit {
  if ('failure' in partner) return storageFailed(context, requestId, partner.failure);
  return refuse(context, requestId, { kind: 'unauthorized', code: partner.refused, tokenSent: true });
}

function storageFailed(context: InvocationContext, requestId: string, failure: StorageFailure): HttpResponseInit {
  const status = failure.status === undefined ? '' : ` status ${failure.status}`;
  const code = failure.storageCode === undefined ? '' : ` ${failure.storageCode}`;
  context.error(`DrawRequest dependency failed: table storage ${failure.operation} ${failure.code}${status}${code}`);
  return dependencyFailed(requestId);
}

function reject(context: InvocationContext, requestId: string, errors: readonly ElementError[], batchSize?: number): HttpResponseInit {
  const summary = errors.map((e) => `${e.index ?? '-'}:${e.loanNumber ?? '-'}:${e.code}`).join(' ');
  context.log(`DrawRequest rejected: ${summary}`);
  return badRequest(requestId, errors, batchSize);
}

function warnDataQuality(context: InvocationContext, state: BatchState): void {
  for (const [loanNumber, loan] of state.loans) {
    if (loan.availableCredit === undefined) context.warn(`Data quality: loan ${loanNumber} has no numeric AvailableCredit`);
  }
}
