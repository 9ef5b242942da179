import type { HttpResponseInit } from '@azure/functions';
import { ERRORS, type ErrorCode, type ErrorNames } from './errorCatalogue';

export { DETAILS, type ErrorCode } from './errorCatalogue';

/**
 * Each code's exact `error` name (docs/contract.md §2.3), derived from the error catalogue
 * (lib/errorCatalogue.ts), the only place that names errors. Partners match on `code`.
 */
export const ERROR_NAMES = Object.freeze(Object.fromEntries(ERRORS.map((e) => [e.code, e.error]))) as ErrorNames;

/** One rejected element (with `index`) or the request itself (without). */
export interface ElementError {
  readonly code: ErrorCode;
  readonly detail: string;
  readonly index?: number;
  readonly loanNumber?: number;
  readonly pointer?: string;
}

export const PROBLEM_CONTENT_TYPE = 'application/problem+json';

const TITLES: Record<number, string> = {
  400: 'Bad Request',
  401: 'Unauthorized',
  500: 'Internal Server Error',
  502: 'Bad Gateway',
};

const GENERIC_DETAILS: Record<number, string> = {
  401: 'The request was not authenticated: a valid access token for a registered partner is required.',
  500: 'The service failed unexpectedly; nothing was submitted. Quote the requestId to support.',
  502: 'A service this API depends on is unavailable; nothing was submitted. Retry later.',
};

/**
 * The 502 of a commit that storage may have applied (docs/contract.md §2.1): the one answer that
 * cannot say whether the batch was recorded, and says how to find out.
 */
export const OUTCOME_UNKNOWN_DETAIL =
  'Storage failed while the batch was being recorded; it may or may not have been recorded. Resend the same batch with the same Idempotency-Key to learn which; without a key, do not resend it blindly.';

function problem(
  status: number,
  requestId: string,
  detail: string,
  extra: Record<string, unknown> = {},
  headers: Record<string, string> = {},
): HttpResponseInit {
  return {
    status,
    headers: { 'Content-Type': PROBLEM_CONTENT_TYPE, 'X-Request-Id': requestId, ...headers },
    body: JSON.stringify({ type: 'about:blank', title: TITLES[status], status, detail, requestId, ...extra }),
  };
}

function errorEntry(e: ElementError): Record<string, unknown> {
  // Key order follows the contract's example so bodies read the same everywhere.
  const entry: Record<string, unknown> = {};
  if (e.index !== undefined) entry.index = e.index;
  if (e.loanNumber !== undefined) entry.loanNumber = e.loanNumber;
  entry.error = ERROR_NAMES[e.code];
  entry.code = e.code;
  if (e.pointer !== undefined) entry.pointer = e.pointer;
  entry.detail = e.detail;
  return entry;
}

/** 400: every rejected element listed, or one request-level error (no index). */
export function badRequest(requestId: string, errors: readonly ElementError[], batchSize?: number): HttpResponseInit {
  const rejected = new Set(errors.filter((e) => e.index !== undefined).map((e) => e.index)).size;
  const detail =
    batchSize === undefined || rejected === 0
      ? 'The request was rejected; no draw request was submitted.'
      : `${rejected} of ${batchSize} draw requests ${rejected === 1 ? 'was' : 'were'} rejected; none was submitted.`;
  return problem(400, requestId, detail, { errors: errors.map(errorEntry) });
}

/** 401: no reason is given to the caller; it goes to logs only. */
export function unauthorized(requestId: string, tokenSent: boolean): HttpResponseInit {
  const challenge = tokenSent ? 'Bearer error="invalid_token"' : 'Bearer';
  return problem(401, requestId, GENERIC_DETAILS[401], {}, { 'WWW-Authenticate': challenge });
}

/**
 * `Retry-After` (seconds) on a 502 that says nothing was submitted (docs/contract.md §2.5): the usual
 * cause under load is a throttled day partition (503 ServerBusy), whose budget is per second; 2 s is
 * the first step of the backoff Microsoft's Table storage checklist gives for ServerBusy, and lets a
 * second's budget refill after the work in flight (docs/decisions/0050-the-day-partition-is-the-ceiling-beyond-it-the-nothing.md).
 */
export const RETRY_AFTER_SECONDS = 2;

/**
 * 502: nothing was recorded, with `Retry-After`; or (`outcomeUnknown`) the batch may have been, without
 * it: a client that honours `Retry-After` by itself must not resend that one blindly, only with its key.
 */
export function dependencyFailed(requestId: string, outcomeUnknown = false): HttpResponseInit {
  if (outcomeUnknown) return problem(502, requestId, OUTCOME_UNKNOWN_DETAIL);
  return problem(502, requestId, GENERIC_DETAILS[502], {}, { 'Retry-After': String(RETRY_AFTER_SECONDS) });
}

/**
 * 502 for a keyed batch whose earlier attempt may still land (docs/contract.md §9): the outcome-unknown detail,
 * and `Retry-After` the seconds until it is worth asking again. Only a keyed request gets it, so a client that
 * resends by itself after `Retry-After` resends under the same key, which is safe.
 */
export function outcomePending(requestId: string, retryAfterSeconds: number): HttpResponseInit {
  return problem(502, requestId, OUTCOME_UNKNOWN_DETAIL, {}, { 'Retry-After': String(retryAfterSeconds) });
}

export function internalError(requestId: string): HttpResponseInit {
  return problem(500, requestId, GENERIC_DETAILS[500]);
}

/** 204; `replay` marks an answer repeated for a retried Idempotency-Key, with nothing written. */
export function accepted(requestId: string, replay = false): HttpResponseInit {
  return { status: 204, headers: replay ? { 'X-Request-Id': requestId, 'Idempotent-Replay': 'true' } : { 'X-Request-Id': requestId } };
}
