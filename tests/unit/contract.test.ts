/**
 * docs/openapi.yaml and the partners' guide against the code's responses (their lists of errors
 * against the error catalogue: tests/unit/errorCatalogue.test.ts).
 */
import type { HttpResponseInit } from '@azure/functions';
import fc from 'fast-check';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { readIdempotencyKey } from '../../lib/idempotency';
import { isLoanNumber } from '../../lib/elementChecks';
import { parseDrawRequests } from '../../lib/requestBody';
import { ERROR_NAMES, accepted, badRequest, dependencyFailed, internalError, outcomePending, unauthorized } from '../../lib/problem';
import { contractViolations, requestValidator, schemaValidator, openApi } from '../support/contract';
import { toReply } from '../support/harness';

const doc = openApi();
const RID = '0f8e2a6c-5b1d-4c3e-9a7f-2d4b6e8f0a1c';
const read = (file: string) => readFileSync(join(__dirname, '..', '..', file), 'utf8');

describe('every response the code can build matches the document', () => {
  test.each<[string, HttpResponseInit]>([
    ['204', accepted(RID)],
    ['204 replay', accepted(RID, true)],
    ['400 per element', badRequest(RID, [{ index: 0, loanNumber: 7, code: 'InvalidAmount', pointer: '/0/amount', detail: 'd' }], 2)],
    ['400 request-level', badRequest(RID, [{ code: 'InvalidRequest', detail: 'd' }])],
    ...Object.keys(ERROR_NAMES).map((code): [string, HttpResponseInit] => [
      `400 ${code}`,
      badRequest(RID, [{ index: 3, code: code as keyof typeof ERROR_NAMES, detail: 'd' }], 4),
    ]),
    ['401 without a token', unauthorized(RID, false)],
    ['401 with a token', unauthorized(RID, true)],
    ['500', internalError(RID)],
    ['502', dependencyFailed(RID)],
    ['502 outcome unknown', dependencyFailed(RID, true)],
  ])('%s', (_name, response) => {
    expect(contractViolations(toReply(response))).toEqual([]);
  });

  test.each([1, 600])('502 outcome not known yet, Retry-After %i, to a keyed request', (seconds) => {
    expect(contractViolations(toReply(outcomePending(RID, seconds)), true)).toEqual([]);
  });

  test('an outcome-unknown Retry-After beyond the grace is refused', () => {
    expect(contractViolations(toReply(outcomePending(RID, 601)), true).join('\n')).toMatch(/at most the 600 s/);
  });
});

describe('the validator refuses what partners were not promised', () => {
  const ok400 = toReply(badRequest(RID, [{ index: 0, code: 'InvalidAmount', detail: 'd' }], 1));
  test.each([
    ['an undocumented status', { ...toReply(accepted(RID)), status: 418 }, /418 is not documented/],
    ['a 204 with a body', { ...toReply(accepted(RID)), text: '{}' }, /no body/],
    ['no X-Request-Id', { ...toReply(accepted(RID)), headers: {} }, /X-Request-Id is required/],
    [
      'Idempotent-Replay other than true',
      { ...toReply(accepted(RID)), headers: { 'x-request-id': RID, 'idempotent-replay': 'false' } },
      /Idempotent-Replay must be true/,
    ],
    ['a wrong error name for a code', { ...ok400, text: ok400.text.replace('Invalid Amount', 'Invalid Loan Number') }, /body\/errors\/0/],
    ['an unknown code', { ...ok400, text: ok400.text.replace(/"code":"InvalidAmount"/, '"code":"Nope"') }, /body\/errors\/0\/code/],
    ['a negative index', { ...ok400, text: ok400.text.replace('"index":0', '"index":-1') }, /body\/errors\/0\/index/],
    [
      'a 502 that leaks errors',
      { ...toReply(dependencyFailed(RID)), text: JSON.stringify({ ...JSON.parse(toReply(dependencyFailed(RID)).text), errors: [] }) },
      /additional properties/,
    ],
    [
      'a nothing-submitted 502 without Retry-After',
      { ...toReply(dependencyFailed(RID)), headers: { 'content-type': 'application/problem+json', 'x-request-id': RID } },
      /must carry Retry-After/,
    ],
    [
      'an outcome-unknown 502 with Retry-After to a request without a key',
      { ...toReply(dependencyFailed(RID, true)), headers: { ...toReply(dependencyFailed(RID, true)).headers, 'retry-after': '2' } },
      /must not carry Retry-After unless its request had an Idempotency-Key/,
    ],
    [
      'a nothing-submitted 502 with a Retry-After other than 2',
      { ...toReply(dependencyFailed(RID)), headers: { ...toReply(dependencyFailed(RID)).headers, 'retry-after': '600' } },
      /must carry Retry-After: 2/,
    ],
    [
      'a Retry-After that is not whole seconds',
      { ...toReply(dependencyFailed(RID)), headers: { ...toReply(dependencyFailed(RID)).headers, 'retry-after': 'soon' } },
      /whole number/,
    ],
    ['Retry-After on a 400', { ...ok400, headers: { ...ok400.headers, 'retry-after': '2' } }, /retry-after is not documented for 400/],
    [
      'plain JSON instead of problem+json',
      { ...ok400, headers: { ...ok400.headers, 'content-type': 'application/json' } },
      /content type application\/json is not documented/,
    ],
  ])('%s', (_name, reply, message) => {
    expect(contractViolations(reply).join('\n')).toMatch(message);
  });
});

describe('the document agrees with the code on Idempotency-Key', () => {
  const pattern = new RegExp(doc.components.parameters.IdempotencyKey.schema.pattern);
  test('a value matches the documented pattern exactly when the service accepts it as a key', () => {
    fc.assert(
      fc.property(
        fc.oneof(fc.string({ maxLength: 140 }), fc.string({ unit: 'binary', maxLength: 20 }), fc.string({ minLength: 120, maxLength: 135 })),
        (value) => {
          expect(readIdempotencyKey({ get: () => value }).ok).toBe(pattern.test(value));
        },
      ),
    );
  });

  test('the replay header and the key parameter are documented where partners look', () => {
    const partners = read('docs/partners.md');
    expect(partners).toContain('Idempotency-Key');
    expect(partners).toContain('Idempotent-Replay: true');
    expect(doc.paths['/DrawRequest'].post.responses['204'].headers['Idempotent-Replay']).toBeDefined();
  });
});

test('the examples in the document are valid responses', () => {
  const responses = doc.paths['/DrawRequest'].post.responses;
  let checked = 0;
  for (const [status, response] of Object.entries<{ content?: Record<string, { example?: unknown; examples?: Record<string, { value: unknown }> }> }>(
    responses,
  )) {
    for (const [type, media] of Object.entries(response.content ?? {})) {
      const examples = media.examples ? Object.values(media.examples).map((e) => e.value) : [media.example];
      for (const example of examples) {
        const headers: Record<string, string> = { 'content-type': type, 'x-request-id': RID };
        if (status === '401') headers['www-authenticate'] = 'Bearer';
        if (status === '502' && /nothing was submitted/.test((example as { detail: string }).detail)) headers['retry-after'] = '2';
        expect(contractViolations({ status: Number(status), headers, text: JSON.stringify(example) })).toEqual([]);
        checked += 1;
      }
    }
  }
  expect(checked).toBeGreaterThanOrEqual(7);
});

describe('every example in the document validates against the schema it illustrates', () => {
  test('request examples, against the request body schema', () => {
    const validate = requestValidator();
    const examples = Object.entries<{ value: unknown }>(doc.paths['/DrawRequest'].post.requestBody.content['application/json'].examples);
    expect(examples.map(([name]) => name)).toEqual(expect.arrayContaining(['canonical', 'digits']));
    for (const [name, example] of examples)
      expect({ name, valid: validate(example.value), errors: validate.errors ?? null }).toEqual({ name, valid: true, errors: null });
  });

  test('schema examples, against their own schema', () => {
    let checked = 0;
    for (const [name, schema] of Object.entries<{ examples?: unknown[] }>(doc.components.schemas)) {
      const validate = schemaValidator(`#/components/schemas/${name}`);
      for (const example of schema.examples ?? []) {
        expect({ name, example, valid: validate(example) }).toEqual({ name, example, valid: true });
        checked += 1;
      }
    }
    expect(checked).toBeGreaterThanOrEqual(4);
  });
});

describe('the document agrees with the code on loan numbers and requestors', () => {
  test('a loan number, as a number or as digits, is valid for the document exactly when the service reads it', () => {
    const validate = schemaValidator('#/components/schemas/LoanNumber');
    const digits = fc.oneof(
      fc.stringMatching(/^[0-9]{1,17}$/),
      fc.bigInt({ min: 9007199254740980n, max: 9007199254741000n }).map((n) => n.toString()),
      fc.tuple(fc.integer({ min: 0, max: 3 }), fc.bigInt({ min: 1n, max: 9007199254740992n })).map(([zeros, n]) => '0'.repeat(zeros) + n.toString()),
    );
    const numbers = fc.oneof(fc.integer({ min: -5, max: 5 }), fc.constantFrom(9007199254740991, 9007199254740992, 1.5));
    fc.assert(
      fc.property(fc.oneof(digits, numbers), (value) => {
        expect({ value, document: validate(value) }).toEqual({ value, document: isLoanNumber(value, undefined) });
      }),
      { numRuns: 2000 },
    );
  });

  test('a requestor is valid for the document exactly when the service accepts it (unpaired surrogates aside, as the document says)', () => {
    const validate = schemaValidator('#/components/schemas/Requestor');
    const accepted = (requestor: string) => parseDrawRequests(Buffer.from(JSON.stringify([{ loanNumber: 1, requestor, amount: 5 }])), 100).ok;
    const blank = fc.constantFrom(' ', '\t', '\n', '\r', '\u000b', '\u000c', '\u00a0', '\u2028', '\u3000', '\ufeff');
    const text = fc.oneof(
      fc.string({ unit: 'binary', maxLength: 300 }),
      fc
        .tuple(fc.string({ unit: blank, maxLength: 4 }), fc.integer({ min: 0, max: 258 }), fc.string({ unit: blank, maxLength: 4 }))
        .map(([before, n, after]) => `${before}${'r'.repeat(n)}${after}`),
      fc
        .tuple(
          fc.string({ maxLength: 5 }),
          fc.integer({ min: 0, max: 0x10ffff }).map((c) => String.fromCodePoint(c)),
          fc.string({ maxLength: 5 }),
        )
        .map((parts) => parts.join('')),
    );
    fc.assert(
      fc.property(
        text.filter((value) => !/\p{Cs}/u.test(value)),
        (value) => {
          expect({ value, document: validate(value) }).toEqual({ value, document: accepted(value) });
        },
      ),
      { numRuns: 3000 },
    );
  });
});
