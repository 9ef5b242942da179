import {
  accepted,
  badRequest,
  dependencyFailed,
  DETAILS,
  ERROR_NAMES,
  internalError,
  OUTCOME_UNKNOWN_DETAIL,
  PROBLEM_CONTENT_TYPE,
  RETRY_AFTER_SECONDS,
  unauthorized,
  type ElementError,
  type ErrorCode,
} from '../../lib/problem';
import type { HttpResponseInit } from '@azure/functions';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

const RID = '0f8e7d6c-5b4a-3928-1706-f5e4d3c2b1a0';

function bodyOf(response: HttpResponseInit): Record<string, unknown> {
  expect(typeof response.body).toBe('string');
  return JSON.parse(response.body as string) as Record<string, unknown>;
}

describe('PROBLEM_CONTENT_TYPE', () => {
  test('problem content type is application/problem+json', () => {
    expect(PROBLEM_CONTENT_TYPE).toBe('application/problem+json');
  });
});

describe('badRequest (docs/contract.md §2.4)', () => {
  const contractExample: ElementError[] = [
    { index: 0, loanNumber: 1002, code: 'InvalidAmount', pointer: '/0/amount', detail: DETAILS.amountAboveCredit },
    { index: 2, loanNumber: 1003, code: 'PendingTransactionRequest', detail: DETAILS.alreadyToday },
  ];

  test('reproduces the contract example byte for byte (apart from requestId)', () => {
    const response = badRequest(RID, contractExample, 3);
    expect(response.status).toBe(400);
    expect(response.headers).toStrictEqual({ 'Content-Type': 'application/problem+json', 'X-Request-Id': RID });
    expect(response.body).toBe(
      JSON.stringify({
        type: 'about:blank',
        title: 'Bad Request',
        status: 400,
        detail: '2 of 3 draw requests were rejected; none was submitted.',
        requestId: RID,
        errors: [
          {
            index: 0,
            loanNumber: 1002,
            error: 'Invalid Amount',
            code: 'InvalidAmount',
            pointer: '/0/amount',
            detail: "amount must be between 1.00 and the loan's available credit",
          },
          {
            index: 2,
            loanNumber: 1003,
            error: 'Pending Transaction Request',
            code: 'PendingTransactionRequest',
            detail: 'a draw request for this loan was already submitted today',
          },
        ],
      }),
    );
  });

  test('top-level keys are exactly type, title, status, detail, requestId, errors in that order', () => {
    expect(Object.keys(bodyOf(badRequest(RID, contractExample, 3)))).toStrictEqual(['type', 'title', 'status', 'detail', 'requestId', 'errors']);
  });

  test('singular wording for one rejected element', () => {
    const body = bodyOf(badRequest(RID, [{ index: 0, code: 'InvalidRequest', pointer: '/0', detail: DETAILS.notObject }], 1));
    expect(body.detail).toBe('1 of 1 draw requests was rejected; none was submitted.');
  });

  test('plural wording counts rejected elements against the batch size', () => {
    const errors: ElementError[] = [1, 4, 7].map((index) => ({ index, code: 'InvalidAmount', detail: DETAILS.amountFormat }));
    expect(bodyOf(badRequest(RID, errors, 10)).detail).toBe('3 of 10 draw requests were rejected; none was submitted.');
  });

  test.each([
    ['no batch size', undefined],
    ['a batch size but only request-level errors', 5],
  ])('request-level error with %s has the generic detail and an entry without index', (_name, batchSize) => {
    const response = badRequest(RID, [{ code: 'InvalidRequest', detail: DETAILS.notJson }], batchSize);
    expect(response.status).toBe(400);
    expect(response.headers).toStrictEqual({ 'Content-Type': 'application/problem+json', 'X-Request-Id': RID });
    const body = bodyOf(response);
    expect(body).toStrictEqual({
      type: 'about:blank',
      title: 'Bad Request',
      status: 400,
      detail: 'The request was rejected; no draw request was submitted.',
      requestId: RID,
      errors: [{ error: 'Invalid Request', code: 'InvalidRequest', detail: DETAILS.notJson }],
    });
    expect(Object.keys((body.errors as object[])[0])).toStrictEqual(['error', 'code', 'detail']);
  });

  test.each<[string, ElementError, string[]]>([
    [
      'all keys',
      { index: 0, loanNumber: 5, code: 'InvalidAmount', pointer: '/0/amount', detail: 'd' },
      ['index', 'loanNumber', 'error', 'code', 'pointer', 'detail'],
    ],
    ['no loanNumber', { index: 3, code: 'InvalidLoanNumber', pointer: '/3/loanNumber', detail: 'd' }, ['index', 'error', 'code', 'pointer', 'detail']],
    ['no pointer', { index: 1, loanNumber: 9, code: 'InvalidFundingInvestor', detail: 'd' }, ['index', 'loanNumber', 'error', 'code', 'detail']],
    ['index only', { index: 0, code: 'InvalidRequest', detail: 'd' }, ['index', 'error', 'code', 'detail']],
  ])('error entry with %s keeps the documented key order and omits absent keys', (_name, error, keys) => {
    const [entry] = bodyOf(badRequest(RID, [error], 4)).errors as Record<string, unknown>[];
    expect(Object.keys(entry)).toStrictEqual(keys);
    for (const key of keys) expect(entry[key]).not.toBeUndefined();
    expect(entry.error).toBe(ERROR_NAMES[error.code]);
  });

  test.each(Object.entries(ERROR_NAMES) as [ErrorCode, string][])('code %s is reported with error text "%s"', (code, text) => {
    const [entry] = bodyOf(badRequest(RID, [{ index: 0, loanNumber: 1, code, detail: 'x' }], 1)).errors as Record<string, unknown>[];
    expect(entry).toStrictEqual({ index: 0, loanNumber: 1, error: text, code, detail: 'x' });
  });

  test('errors keep the order they were given in', () => {
    const errors: ElementError[] = [
      { index: 0, code: 'InvalidRequest', detail: 'a' },
      { index: 1, code: 'InvalidLoanNumber', detail: 'b' },
      { index: 5, code: 'InvalidAmount', detail: 'c' },
    ];
    const body = bodyOf(badRequest(RID, errors, 6));
    expect((body.errors as { index: number }[]).map((e) => e.index)).toStrictEqual([0, 1, 5]);
    expect(body.detail).toBe('3 of 6 draw requests were rejected; none was submitted.');
  });
});

describe('unauthorized (docs/contract.md §2.1, 401)', () => {
  const DETAIL_401 = 'The request was not authenticated: a valid access token for a registered partner is required.';

  test.each([
    [false, 'Bearer'],
    [true, 'Bearer error="invalid_token"'],
  ])('tokenSent=%s → WWW-Authenticate exactly %s, no errors', (tokenSent, challenge) => {
    const response = unauthorized(RID, tokenSent);
    expect(response.status).toBe(401);
    expect(response.headers).toStrictEqual({
      'Content-Type': 'application/problem+json',
      'X-Request-Id': RID,
      'WWW-Authenticate': challenge,
    });
    const body = bodyOf(response);
    expect(body).toStrictEqual({ type: 'about:blank', title: 'Unauthorized', status: 401, detail: DETAIL_401, requestId: RID });
    expect(Object.keys(body)).toStrictEqual(['type', 'title', 'status', 'detail', 'requestId']);
  });
});

describe('dependencyFailed / internalError (502 / 500)', () => {
  test.each([
    [
      'dependencyFailed',
      dependencyFailed,
      502,
      'Bad Gateway',
      'A service this API depends on is unavailable; nothing was submitted. Retry later.',
      { 'Retry-After': '2' },
    ],
    [
      'internalError',
      internalError,
      500,
      'Internal Server Error',
      'The service failed unexpectedly; nothing was submitted. Quote the requestId to support.',
      {},
    ],
  ])('%s → status %i, generic detail, no errors', (_name, make, status, title, detail, extraHeaders) => {
    const response = make(RID);
    expect(response.status).toBe(status);
    expect(response.headers).toStrictEqual({ 'Content-Type': 'application/problem+json', 'X-Request-Id': RID, ...extraHeaders });
    const body = bodyOf(response);
    expect(body).toStrictEqual({ type: 'about:blank', title, status, detail, requestId: RID });
    expect(Object.keys(body)).toStrictEqual(['type', 'title', 'status', 'detail', 'requestId']);
  });
});

describe('dependencyFailed with an unknown outcome (502)', () => {
  test('says the batch may have been recorded and how to learn which, in the words docs/contract.md §2.4 fixes', () => {
    const response = dependencyFailed(RID, true);
    expect(response.status).toBe(502);
    // No Retry-After: a client that honours it by itself must not resend this batch blindly.
    expect(response.headers).toStrictEqual({ 'Content-Type': 'application/problem+json', 'X-Request-Id': RID });
    const body = bodyOf(response);
    expect(body).toStrictEqual({ type: 'about:blank', title: 'Bad Gateway', status: 502, detail: OUTCOME_UNKNOWN_DETAIL, requestId: RID });
    expect(OUTCOME_UNKNOWN_DETAIL).toMatch(/may or may not have been recorded/);
    expect(OUTCOME_UNKNOWN_DETAIL).toMatch(/same Idempotency-Key/);
    expect(OUTCOME_UNKNOWN_DETAIL).not.toMatch(/nothing was submitted/);
    expect(readFileSync(join(__dirname, '..', '..', 'docs', 'contract.md'), 'utf8')).toContain(`\`${OUTCOME_UNKNOWN_DETAIL}\``);
  });
});

describe('Retry-After on the 502 that says nothing was submitted', () => {
  test('a small whole number of seconds, documented in the contract, the partner document and the partners guide', () => {
    expect(Number.isInteger(RETRY_AFTER_SECONDS)).toBe(true);
    expect(RETRY_AFTER_SECONDS).toBeGreaterThanOrEqual(1);
    expect(RETRY_AFTER_SECONDS).toBeLessThanOrEqual(5);
    const read = (file: string) => readFileSync(join(__dirname, '..', '..', 'docs', file), 'utf8');
    expect(read('contract.md')).toMatch(new RegExp(`\\| \`Retry-After\` \\|[^\\n]*\`${RETRY_AFTER_SECONDS}\``));
    expect(read('partners.md')).toContain(`Retry-After: ${RETRY_AFTER_SECONDS}`);
    expect(read('openapi.yaml')).toContain('Retry-After');
  });
});

describe('accepted (204)', () => {
  test('has status 204, X-Request-Id and no body', () => {
    const response = accepted(RID);
    expect(response).toStrictEqual({ status: 204, headers: { 'X-Request-Id': RID } });
    expect('body' in response).toBe(false);
  });

  test('a replay adds Idempotent-Replay: true and still has no body', () => {
    expect(accepted(RID, true)).toStrictEqual({ status: 204, headers: { 'X-Request-Id': RID, 'Idempotent-Replay': 'true' } });
  });
});
