/**
 * The deployment's smoke check (scripts/smokeCheck.cjs) against the real service: the handler built from
 * real settings, real Azurite tables and a real OpenID provider's RS256 tokens (tests/support/harness.ts),
 * served over HTTP. The check passes only when the token, the smoke partner's Partners row and the tables
 * are as deployed, fails naming the likely setting when one is not, and never leaves a row behind.
 * (The pipeline tests run the same check through scripts/deploy.sh against a contract stand-in.)
 */
import { spawn } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { putLoan, putPartner, tableClient } from '../../dev/demoData';
import { Harness, TENANT, invoke } from '../support/harness';

const ROOT = join(__dirname, '..', '..');
/** docs/contract.md §4.5: the loan and the partner reserved for the smoke check. */
const SMOKE_LOAN = 9007199254740991;
const SMOKE_PARTNER = 'DEPLOY-SMOKE-CHECK';
/** The smoke identity's client id: the environment's deploying identity. */
const SMOKE_CLIENT = 'deploy-identity-client-id';
const ROLE = 'DrawRequest.Submit';

let h: Harness;
let server: Server;
let url: string;

beforeAll(async () => {
  h = await Harness.start({ AUTH_TENANT_ID: TENANT, AUTH_REQUIRED_ROLE: ROLE });
  await putPartner(h.table('partners'), { clientId: SMOKE_CLIENT, partnerId: SMOKE_PARTNER });
  // The host's part: POST /DrawRequest handed to the function, whatever handler the test has built.
  server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const headers = Object.fromEntries(Object.entries(request.headers).map(([k, v]) => [k, String(v)]));
      invoke(h.handler, Buffer.concat(chunks), headers).then(
        (reply) => response.writeHead(reply.status, reply.headers).end(reply.text),
        () => response.writeHead(500).end(),
      );
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await new Promise((resolve) => server?.close(resolve));
  await h?.stop();
});
afterEach(() => h.rebuild());

/** The smoke identity's token as Entra issues it for the API: app-only, the API's audience, the tenant, the role. */
const smokeToken = (claims: Record<string, unknown> = {}) => h.token({ azp: SMOKE_CLIENT, sub: SMOKE_CLIENT, roles: [ROLE], ...claims });

function smokeCheck(token: string): Promise<{ status: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, [join(ROOT, 'scripts', 'smokeCheck.cjs'), url], {
    env: { PATH: process.env.PATH ?? '', SMOKE_TOKEN: token, SMOKE_ATTEMPTS: '2', SMOKE_RETRY_SECONDS: '0' },
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  return new Promise((resolve) => child.on('close', (status) => resolve({ status, stdout, stderr })));
}
const failureCode = (stderr: string) => /^smoke check failed \((SMOKE_[A-Z_]+)\): /m.exec(stderr)?.[1];

async function rows(table: string): Promise<unknown[]> {
  const found: unknown[] = [];
  for await (const row of tableClient(h.azurite.connectionString, table).listEntities()) found.push(row);
  return found;
}

test('the deployed settings: 401 without a token, then 400 Invalid Loan Number for the reserved loan at index 0 and 1; no draw recorded, the refusal marked under its own key', async () => {
  const before = { draws: await rows(h.config.tables.drawsTable), keys: await rows(h.config.tables.idempotencyTable) };
  const result = await smokeCheck(await smokeToken());
  expect(result.stderr).toBe('');
  expect(result.status).toBe(0);
  expect(result.stdout).toContain('smoke check passed');
  // The answer the check judged came from reads of every table, under a key of its own.
  const smoke = h.records.filter((r) => r.partnerId === SMOKE_PARTNER);
  expect(smoke.map((r) => [r.outcome, r.loanNumbers])).toEqual([['Rejected', [SMOKE_LOAN, SMOKE_LOAN]]]);
  expect(smoke[0].idempotencyKey).toMatch(/^deployment-smoke-check-[0-9a-f-]{36}$/);
  expect(await rows(h.config.tables.drawsTable)).toEqual(before.draws);
  // The one row written: the refusal's mark under that key (contract §9), which housekeeping removes.
  const written = (await rows(h.config.tables.idempotencyTable)).filter((r) => !before.keys.some((b) => JSON.stringify(b) === JSON.stringify(r)));
  expect(written).toEqual([expect.objectContaining({ PartnerId: SMOKE_PARTNER, IdempotencyKey: smoke[0].idempotencyKey, State: 'Refused' })]);
});

test('each check is judged on the tables as they are: a second check right after the first is not answered its refusal', async () => {
  expect((await smokeCheck(await smokeToken())).status).toBe(0);
  await putLoan(h.table('loans'), { loanNumber: SMOKE_LOAN, partnerId: SMOKE_PARTNER, availableCredit: 1000, fundingInvestorId: 'INV-1' });
  try {
    expect(failureCode((await smokeCheck(await smokeToken())).stderr)).toBe('SMOKE_UNEXPECTED');
  } finally {
    await h.table('loans').deleteEntity(String(SMOKE_LOAN), '');
  }
});

test("a token of another tenant (AUTH_TENANT_ID is not the token's): 401, naming the auth settings", async () => {
  const result = await smokeCheck(await smokeToken({ tid: '99999999-8888-4777-8666-555555555555' }));
  expect(result.status).toBe(1);
  expect(failureCode(result.stderr)).toBe('SMOKE_AUTH');
});

test('a token without the app role (the grant missing): 401, naming the auth settings', async () => {
  const result = await smokeCheck(await smokeToken({ roles: [] }));
  expect(failureCode(result.stderr)).toBe('SMOKE_AUTH');
});

test('no Partners row for the smoke identity: 401, naming the auth settings and the row', async () => {
  const result = await smokeCheck(await smokeToken({ azp: 'a-client-the-partners-step-never-wrote' }));
  expect(failureCode(result.stderr)).toBe('SMOKE_AUTH');
  expect(result.stderr).toContain("the smoke partner's Partners row");
});

test.each([
  ['PARTNERS_TABLE', 'Partner'],
  ['LOANS_TABLE', 'Loan'],
  ['DRAWS_TABLE', 'DrawRequest'],
  ['IDEMPOTENCY_TABLE', 'IdempotencyKey'],
])('%s naming a table the account does not have: 502, naming storage', async (setting, table) => {
  h.rebuild({}, { ...h.settings, [setting]: table });
  const result = await smokeCheck(await smokeToken());
  expect(failureCode(result.stderr)).toBe('SMOKE_STORAGE');
});

test('even were the reserved loan to exist and be the smoke partner’s with credit, nothing is recorded: the check fails instead', async () => {
  await putLoan(h.table('loans'), { loanNumber: SMOKE_LOAN, partnerId: SMOKE_PARTNER, availableCredit: 1000, fundingInvestorId: 'INV-1' });
  try {
    const result = await smokeCheck(await smokeToken());
    expect(failureCode(result.stderr)).toBe('SMOKE_UNEXPECTED');
    expect(result.stderr).toContain('PendingTransactionRequest'); // "one draw a day" for the second element: the batch was refused
    expect(await h.drawsFor(SMOKE_LOAN)).toEqual([]);
  } finally {
    await h.table('loans').deleteEntity(String(SMOKE_LOAN), '');
  }
});
