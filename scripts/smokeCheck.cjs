#!/usr/bin/env node
// The deployment's smoke check (scripts/deploy.sh, step smoke; docs/deploy.md, "The smoke check").
// Without a token POST /DrawRequest must answer 401: the host is up, routes it and authenticates. With
// the smoke identity's token (SMOKE_TOKEN) it must answer the one 400 only the deployed settings can
// produce: Invalid Loan Number for a reserved loan no Loans row has (docs/contract.md §4.5). That needs
// the token accepted (tenant, audience, app role), the smoke partner's Partners row, and a read of the
// Partners, Loans, DrawRequests and IdempotencyKeys tables. No draw is ever recorded: the batch names the
// loan twice, so it is refused whatever storage holds ("one draw a day" for the second element, were the
// loan to exist). The refusal is marked under the request's key (docs/contract.md §9), a new key per
// request, so that no request is answered an earlier one's refusal; housekeeping removes the mark (§4.1).
//
// Usage: SMOKE_TOKEN=<token> node scripts/smokeCheck.cjs <function app url>
//   SMOKE_TOKEN          the smoke identity's access token; absent: only the check without a token runs
//   SMOKE_ATTEMPTS       answers waited for while the app starts (default 20)
//   SMOKE_RETRY_SECONDS  between them (default 15)
// Exit 0 when proven; 1 with the failure's code and the setting likely wrong; 2 on usage.
'use strict';

const { randomUUID } = require('node:crypto');

/** Reserved by the contract: no Loans row may have it, no draw can be recorded on it by this check. */
const LOAN_NUMBER = 9007199254740991;
/** Each request's key: new, so that it is judged on the tables as they are now, not answered an earlier refusal. */
const idempotencyKey = () => `deployment-smoke-check-${randomUUID()}`;
const BODY = JSON.stringify([0, 1].map(() => ({ loanNumber: LOAN_NUMBER, requestor: 'deployment smoke check', amount: 1 })));

/** What each failure means for the person reading the pipeline's log: the settings likely wrong, and where to look. */
const FAILURES = {
  SMOKE_NOT_UP: (a) =>
    `POST ${a.url}/DrawRequest never answered as the service does (last answer: ${a.status ?? 'none'}): the host is not running the package or does not route /DrawRequest; see the app's log stream and its last deployment`,
  SMOKE_UNAUTHENTICATED: (a) =>
    `POST ${a.url}/DrawRequest without a token answered ${a.status}, not 401: authentication is not running; nothing but a token may let a request through`,
  SMOKE_AUTH: () =>
    `with the smoke identity's token the service answered 401: it refused the token or its client. Likely wrong: AUTH_TENANT_ID or AUTH_AUDIENCE (parameters authTenantId, authAudiences; the API application's id), the smoke identity's grant of AUTH_REQUIRED_ROLE (authRequiredRole), or the smoke partner's Partners row (the partners step). Application Insights has the reason: customEvents "DrawRequestBatch", customDimensions.reason (docs/runbook.md)`,
  SMOKE_STORAGE: () =>
    `with the smoke identity's token the service answered 502: a dependency failed. Likely wrong: storage, that is TABLES_ENDPOINT, a table name (PARTNERS_TABLE, LOANS_TABLE, DRAWS_TABLE, IDEMPOTENCY_TABLE: a table that does not exist) or the app identity's table roles; or the identity provider's metadata (AUTH_AUTHORITY_HOST, AUTH_TENANT_ID). Application Insights has the reason (docs/runbook.md, outcome DependencyFailed)`,
  SMOKE_MISCONFIGURED: (a) =>
    `POST ${a.url}/DrawRequest answered 500: a setting is missing or malformed; the host's traces name it ("DrawRequest: …", reason Misconfigured)`,
  SMOKE_RECORDED: () =>
    `with the smoke identity's token the service answered 204: it recorded a batch that names loan ${LOAN_NUMBER} twice, which the draw rules must refuse. The deployed code is wrong: roll back (docs/deploy.md, Rollback) and remove today's DrawRequests rows with RowKey ${LOAN_NUMBER}`,
  SMOKE_UNEXPECTED: (a) =>
    `with the smoke identity's token the service answered ${a.status} ${a.text.slice(0, 500)}, not 400 Invalid Loan Number for loan ${LOAN_NUMBER} at index 0 and 1. A Loans row ${LOAN_NUMBER} must not exist (docs/contract.md §4.5)`,
};

/** The 400 of "loan exists" for both elements, as docs/contract.md §2.3–§2.4 give it. */
function isTheRefusal(answer) {
  if (answer.status !== 400 || !/^application\/problem\+json\b/i.test(answer.contentType)) return false;
  let problem;
  try {
    problem = JSON.parse(answer.text);
  } catch {
    return false;
  }
  const errors = problem?.errors;
  return (
    problem.status === 400 &&
    Array.isArray(errors) &&
    errors.length === 2 &&
    // loanNumber is present for "loan exists" (no such loan) and absent for "loan number form" (a malformed number): codes, not texts, decide.
    errors.every((e, i) => e.index === i && e.loanNumber === LOAN_NUMBER && e.code === 'InvalidLoanNumber' && e.pointer === `/${i}/loanNumber`)
  );
}

const succeeded = (status) => status !== undefined && status >= 200 && status < 300;

/** A verdict on one answer: PASS, or a failure code; `final` when asking again cannot change it. */
function judgeWithoutToken(answer) {
  if (answer.status === 401) return { code: 'PASS' };
  if (answer.status === 500) return { code: 'SMOKE_MISCONFIGURED' };
  // Read the body without a token: only a service that does not authenticate gets that far.
  if (answer.status === 400 || succeeded(answer.status)) return { code: 'SMOKE_UNAUTHENTICATED', final: true };
  return { code: 'SMOKE_NOT_UP' };
}

function judgeWithToken(answer) {
  if (isTheRefusal(answer)) return { code: 'PASS' };
  switch (answer.status) {
    case 204:
      return { code: 'SMOKE_RECORDED', final: true };
    case 400:
      return { code: 'SMOKE_UNEXPECTED', final: true };
    // 401 and 502 may pass: a new role grant or Partners row, or new table roles, take minutes to apply.
    case 401:
      return { code: 'SMOKE_AUTH' };
    case 502:
      return { code: 'SMOKE_STORAGE' };
    case 500:
      return { code: 'SMOKE_MISCONFIGURED' };
    default:
      return succeeded(answer.status) ? { code: 'SMOKE_UNEXPECTED', final: true } : { code: 'SMOKE_NOT_UP' };
  }
}

/** One POST; an answer without a status when none came. */
async function post(url, headers) {
  try {
    const response = await fetch(`${url}/DrawRequest`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', ...headers },
      body: BODY,
      signal: AbortSignal.timeout(30_000),
    });
    return { url, status: response.status, contentType: response.headers.get('content-type') ?? '', text: await response.text() };
  } catch {
    return { url, status: undefined, contentType: '', text: '' };
  }
}

async function attempt(url, token) {
  const anonymous = await post(url, {});
  const first = judgeWithoutToken(anonymous);
  if (first.code !== 'PASS' || token === undefined) return { ...first, answer: anonymous };
  const answer = await post(url, { Authorization: `Bearer ${token}`, 'Idempotency-Key': idempotencyKey() });
  return { ...judgeWithToken(answer), answer };
}

async function main() {
  const url = (process.argv[2] ?? '').replace(/\/+$/, '');
  if (!/^https?:\/\/[^/]+$/.test(url)) {
    process.stderr.write('usage: SMOKE_TOKEN=<token> node scripts/smokeCheck.cjs <function app url>\n');
    process.exit(2);
  }
  const token = process.env.SMOKE_TOKEN || undefined;
  const attempts = Math.max(1, Number(process.env.SMOKE_ATTEMPTS ?? 20) || 1);
  const pause = Number(process.env.SMOKE_RETRY_SECONDS ?? 15) || 0;
  let verdict = await attempt(url, token);
  for (let n = 2; n <= attempts && verdict.code !== 'PASS' && !verdict.final; n++) {
    console.log(`smoke check: ${verdict.code}, answered ${verdict.answer.status ?? 'nothing'} (attempt ${n - 1} of ${attempts}); waiting ${pause} s`);
    await new Promise((resolve) => setTimeout(resolve, pause * 1000));
    verdict = await attempt(url, token);
  }
  if (verdict.code !== 'PASS') {
    process.stderr.write(`smoke check failed (${verdict.code}): ${FAILURES[verdict.code](verdict.answer)}\n`);
    process.exit(1);
  }
  if (token === undefined) {
    console.log(
      `smoke check: POST ${url}/DrawRequest without a token answered 401. The deployed settings are NOT proven: no smoke token (docs/deploy.md, "The smoke check")`,
    );
    return;
  }
  console.log(
    `smoke check passed: without a token 401; with the smoke identity's token 400 Invalid Loan Number for reserved loan ${LOAN_NUMBER}: tenant, audience, app role, the Partners row and the four tables are as deployed; nothing was written`,
  );
}

void main();
