/**
 * The example client says what a partner does after each answer (docs/partners.md §5): after a refusal by
 * the rules, the corrected batch, or the unchanged one only under a new key; after a refusal about the key,
 * a new key; after a failure, the same file under the same key. It is copied into partners' projects, so it
 * names the service's texts itself: they are held to the service's here.
 */
import { KEY_OUTCOME_FORGOTTEN, KEY_REFUSALS, formatOutcome, type SubmitResult } from '../../examples/submit-draws';
import { DETAILS } from '../../lib/problem';

const base: SubmitResult = {
  outcome: 'rejected',
  exitCode: 1,
  url: 'https://draws.example/DrawRequest',
  idempotencyKey: 'k-1',
  status: 400,
  requestId: '9b1c3f7e-02aa-4c8e-b1f4-6a3e5d2c7f10',
  replay: false,
  attempts: 1,
  tokensFetched: 1,
  elements: [],
  requestErrors: [],
};

test("the key refusals it knows are the service's own texts", () => {
  expect([...KEY_REFUSALS].sort()).toEqual([DETAILS.idempotencyKeyReused, DETAILS.idempotencyKeyExpired].sort());
});

test('after a refusal by the rules: the corrected batch; the unchanged one only under a new key', () => {
  const rejected = { ...base, elements: [{ index: 0, loanNumber: '1001', amount: '800', status: 'rejected' as const, errors: [], result: 'Invalid Amount' }] };
  const text = formatOutcome(rejected);
  expect(text).toContain('Fix the rejected rows and send the corrected batch.');
  expect(text).toContain('answered this same 400 for 24 hours');
  expect(text).toContain('without --idempotency-key (a new key)');
});

test.each([...KEY_REFUSALS])('after "%s": the batch under a new key', (detail) => {
  const text = formatOutcome({ ...base, requestErrors: [{ error: 'Invalid Request', code: 'InvalidRequest', detail }] });
  expect(text).toContain('Send the batch again without --idempotency-key (a new run sends a new key).');
});

test('after "its outcome can no longer be told": not again until the lender has said (a new key could record it twice)', () => {
  expect(KEY_OUTCOME_FORGOTTEN).toBe(DETAILS.idempotencyKeyOutcomeForgotten);
  const text = formatOutcome({ ...base, requestErrors: [{ error: 'Invalid Request', code: 'InvalidRequest', detail: KEY_OUTCOME_FORGOTTEN }] });
  expect(text).toContain('Do not send this batch again until the lender has told you whether it was recorded.');
  expect(text).not.toContain('without --idempotency-key');
});

test("after a refusal of the request's shape: fix it", () => {
  const text = formatOutcome({ ...base, requestErrors: [{ error: 'Invalid Request', code: 'InvalidRequest', detail: DETAILS.notArray }] });
  expect(text).toContain('Fix the request error above and send the batch again.');
});
