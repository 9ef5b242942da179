/** What a caller and on-call see when a token is accepted or refused (docs/contract.md §3, §10). */
import { draw, type Harness, type Reply } from './harness';
import { expectGenericProblem } from './problems';

/** 401 with the generic body; `WWW-Authenticate` says `invalid_token` when a token was sent. */
export function expect401(reply: Reply, tokenSent: boolean): void {
  expectGenericProblem(reply, 401);
  expect(reply.headers['www-authenticate']).toBe(tokenSent ? 'Bearer error="invalid_token"' : 'Bearer');
}

/**
 * The refusal's telemetry record: outcome Unauthorized, `reason` the stable code and `reasonDetail`
 * the failing claim, for `reason` written as in the log: `ERR_AUTH_CLAIM (claim aud)` or `ERR_AUTH_EXPIRED`.
 */
export function expectRefusalRecorded(x: Harness, reply: Reply, reason: string): void {
  const [, code, claim] = /^(ERR_AUTH_[A-Z_]+)(?: \(claim ([^)]+)\))?$/.exec(reason) ?? [];
  expect(code).toBeDefined();
  const record = x.recordOf(reply);
  expect(record).toMatchObject({ outcome: 'Unauthorized', reason: code, errors: [] });
  expect(record?.reasonDetail).toBe(claim);
}

/**
 * Posts a valid draw with `authorization` as the raw header value; expects 401, nothing stored, and
 * the reason (`CODE` or `CODE (claim X)`, exactly) in the log and the telemetry record.
 */
export async function expectRefused(x: Harness, authorization: string | null, reason: string, tokenSent = true): Promise<Reply> {
  const loan = await x.loan();
  const headers: Record<string, string> = authorization === null ? {} : { authorization };
  const before = x.logs.length;
  const reply = await x.post([draw(loan)], { token: null, headers });
  expect401(reply, tokenSent);
  expect(await x.drawsFor(loan)).toHaveLength(0);
  const logged = x.logs.slice(before).flatMap((line) => /unauthorized: (.*?)(?: client \S+)?$/.exec(line)?.[1] ?? []);
  expect(logged).toEqual([reason]);
  expectRefusalRecorded(x, reply, reason);
  return reply;
}

/** Posts a valid draw with `token`: 204 and the draw stored. */
export async function expectAccepted(x: Harness, token: string): Promise<void> {
  const loan = await x.loan();
  const reply = await x.post([draw(loan)], { token });
  expect(reply.status).toBe(204);
  expect(await x.drawsFor(loan)).toHaveLength(1);
}
