/** What every client can rely on in an error response (docs/contract.md §2.1, §2.4). */
import { OUTCOME_UNKNOWN_DETAIL, RETRY_AFTER_SECONDS } from '../../lib/problem';
import type { Reply } from './harness';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

const GENERIC: Record<401 | 500 | 502, { title: string; detail: string }> = {
  401: { title: 'Unauthorized', detail: 'The request was not authenticated: a valid access token for a registered partner is required.' },
  500: { title: 'Internal Server Error', detail: 'The service failed unexpectedly; nothing was submitted. Quote the requestId to support.' },
  502: { title: 'Bad Gateway', detail: 'A service this API depends on is unavailable; nothing was submitted. Retry later.' },
};

function expectProblemHeaders(reply: Reply, status: number): void {
  expect(reply.status).toBe(status);
  expect(reply.headers['content-type']).toBe('application/problem+json');
  expect(reply.headers['x-request-id']).toMatch(UUID);
}

/** 401, 500 and 502: a generic body with no errors and nothing from inside the service. */
export function expectGenericProblem(reply: Reply, status: 401 | 500 | 502): void {
  expectProblemHeaders(reply, status);
  expect(reply.body).toEqual({ type: 'about:blank', status, ...GENERIC[status], requestId: reply.headers['x-request-id'] });
  // Nothing was submitted: a 502 says when to come back (docs/contract.md §2.5).
  expect(reply.headers['retry-after']).toBe(status === 502 ? String(RETRY_AFTER_SECONDS) : undefined);
  expect(reply.text).not.toMatch(/RestError|ECONNREFUSED|devstoreaccount1|AccountKey|at .+\.[jt]s:\d+/);
}

/**
 * 502 saying the batch may have been recorded, and how to learn which. Without `retryAfterSeconds`, a
 * commit storage may have applied: no Retry-After, not an invitation to resend blindly. With it, a keyed
 * batch in its key's grace: Retry-After the seconds until the outcome is known (contract §9).
 */
export function expectOutcomeUnknown(reply: Reply, retryAfterSeconds?: number): void {
  expectProblemHeaders(reply, 502);
  expect(reply.headers['retry-after']).toBe(retryAfterSeconds === undefined ? undefined : String(retryAfterSeconds));
  expect(reply.body).toEqual({
    type: 'about:blank',
    status: 502,
    title: 'Bad Gateway',
    detail: OUTCOME_UNKNOWN_DETAIL,
    requestId: reply.headers['x-request-id'],
  });
}

/** 400: the problem members; `errors` is for the caller to check. */
export function expectProblem400(reply: Reply): void {
  expectProblemHeaders(reply, 400);
  expect(reply.body).toMatchObject({ type: 'about:blank', title: 'Bad Request', status: 400, requestId: reply.headers['x-request-id'] });
}
