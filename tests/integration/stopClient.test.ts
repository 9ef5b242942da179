/**
 * On-call's emergency stop (scripts/stopClient.cjs) against a real Azurite that serves TLS and checks the
 * bearer token it is given (its OAuth "basic": issuer, audience, lifetime), signed in as the Azure CLI is:
 * Azure Identity's AzureCliCredential asks the Azure CLI stand-in (tests/support/azStandIn.cjs) for a storage
 * token. A recording proxy in front of Azurite sees every request: the stop is one Insert Entity (a POST to
 * the stop list), after one read of the client's Partners row, whatever the Azure CLI's version; a client
 * already stopped is told by storage's answer, 409 and its code EntityAlreadyExists, never by its text.
 */
import { execFile } from 'node:child_process';
import type { ServerResponse } from 'node:http';
import { Agent } from 'node:https';
import { chmodSync, cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { TableClient } from '@azure/data-tables';
import { startAzurite, type Azurite } from '../../dev/azurite';
import { localCertificateAuthority, loopbackServerCertificate } from '../../dev/localCertificates';
import { storageErrorBody, startRecordingTlsProxy, type RecordingProxy } from '../support/storageProxies';

const ROOT = join(__dirname, '..', '..');
const ACCOUNT = 'devstoreaccount1';
const CLIENT = '0b9f3c52-1111-4222-8333-944455556666';
const PARTNER = 'PARTNER-001';

let dir: string;
let azurite: Azurite;
let proxy: RecordingProxy;
let agent: Agent;
let caPath: string;
let workspace: string;
beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'stop-client-'));
  const ca = await localCertificateAuthority(dir);
  const server = await loopbackServerCertificate(ca);
  writeFileSync(join(dir, 'key.pem'), server.key);
  writeFileSync(join(dir, 'cert.pem'), server.cert);
  caPath = ca.certPath;
  agent = new Agent({ ca: ca.cert });
  azurite = await startAzurite({ tls: { key: join(dir, 'key.pem'), cert: join(dir, 'cert.pem') } });
  proxy = await startRecordingTlsProxy(azurite.port, { key: server.key, cert: server.cert, ca: ca.cert });
  for (const name of ['Partners', 'StoppedClients']) await table(name).createTable();
  await table('Partners').createEntity({ partitionKey: CLIENT, rowKey: '', PartnerId: PARTNER, Active: true });
  // The repository as the stop-client workflow checks it out, dev bootstrapped (its account: Azurite's).
  workspace = join(dir, 'repo');
  cpSync(join(ROOT, 'scripts'), join(workspace, 'scripts'), { recursive: true });
  cpSync(join(ROOT, 'infra', 'env'), join(workspace, 'infra', 'env'), { recursive: true });
  const pipeline = JSON.parse(readFileSync(join(workspace, 'infra', 'env', 'dev.pipeline.json'), 'utf8')) as Record<string, unknown>;
  const filled = Object.fromEntries(Object.entries(pipeline).map(([k, v]) => [k, typeof v === 'string' && v.includes('REPLACE-WITH') ? `${k}-value` : v]));
  writeFileSync(join(workspace, 'infra', 'env', 'dev.pipeline.json'), JSON.stringify({ ...filled, storageAccountName: ACCOUNT, privateRunnerGroup: '' }));
  const bin = join(dir, 'bin');
  mkdirSync(bin);
  writeFileSync(join(bin, 'az'), `#!/bin/sh\nexec "${process.execPath}" "${join(ROOT, 'tests', 'support', 'azStandIn.cjs')}" "$@"\n`);
  chmodSync(join(bin, 'az'), 0o755);
});
afterAll(async () => {
  await proxy?.close();
  await azurite?.stop(true);
  rmSync(dir, { recursive: true, force: true });
});
beforeEach(() => {
  writeFileSync(join(dir, 'az-state.json'), JSON.stringify({ signedIn: { name: 'dev-stop-client', type: 'servicePrincipal' }, groups: [], deployments: {} }));
  rmSync(join(dir, 'az.log'), { force: true });
  proxy.requests.length = 0;
  proxy.intercept = undefined;
});

/** A table of Azurite, with the account key (what the test seeds and reads; the script has only its token). */
function table(name: string): TableClient {
  return TableClient.fromConnectionString(azurite.connectionString, name, { agent });
}
/** The stop list's row of a client, or undefined. */
async function stopRow(client: string): Promise<Record<string, unknown> | undefined> {
  try {
    return await table('StoppedClients').getEntity<Record<string, unknown>>(client, '');
  } catch {
    return undefined;
  }
}

/** scripts/stopClient.cjs for dev, through the proxy, signed in as the stop identity (the stand-in's). */
function stopClient(clientId: string): Promise<{ status: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [join(workspace, 'scripts', 'stopClient.cjs'), 'dev', clientId],
      {
        env: {
          PATH: `${join(dir, 'bin')}:${process.env.PATH ?? ''}`,
          AZ_STATE: join(dir, 'az-state.json'),
          AZ_LOG: join(dir, 'az.log'),
          NODE_EXTRA_CA_CERTS: caPath,
          NODE_PATH: join(ROOT, 'node_modules'),
          TABLES_ENDPOINT: `https://127.0.0.1:${proxy.port}/${ACCOUNT}`,
          GITHUB_RUN_ID: '4711',
          GITHUB_ACTOR: 'on-call',
        },
        encoding: 'utf8',
      },
      (error, stdout, stderr) => resolve({ status: error === null ? 0 : (error.code as number), stdout, stderr }),
    );
  });
}
const PARTNERS_READ = { method: 'GET', path: `/${ACCOUNT}/Partners(PartitionKey='${CLIENT}',RowKey='')` };
const STOP_INSERT = { method: 'POST', path: `/${ACCOUNT}/StoppedClients` };

test('the stop is exactly one request to the stop list, a POST (Insert Entity), after one read of the Partners row, with the Azure CLI’s token for storage', async () => {
  const result = await stopClient(CLIENT.toUpperCase());
  expect([result.status, result.stderr]).toEqual([0, '']);
  expect(result.stdout).toContain(`stopped: client ${CLIENT} (partner ${PARTNER}) in dev: on the stop list as stop 4711`);
  expect(proxy.requests).toEqual([PARTNERS_READ, STOP_INSERT]);
  expect(await stopRow(CLIENT)).toMatchObject({ partitionKey: CLIENT, rowKey: '', StopId: '4711', StoppedBy: 'on-call', StoppedAt: expect.any(Date) });
  // Signed in as the Azure CLI is: its one command for a token, as AzureCliCredential runs it.
  const az = readFileSync(join(dir, 'az.log'), 'utf8')
    .trim()
    .split('\n')
    .map((line) => (JSON.parse(line) as { args: string[]; as: string }).args.join(' '));
  expect(new Set(az)).toEqual(new Set(['account get-access-token --output json --resource https://storage.azure.com']));
});

test('a client already stopped: the same single POST, answered 409 EntityAlreadyExists, is "already stopped"; the first stop stays as it was', async () => {
  const first = await stopRow(CLIENT);
  expect(first).toBeDefined();
  const result = await stopClient(CLIENT);
  expect([result.status, result.stderr]).toEqual([0, '']);
  expect(result.stdout).toContain(`already stopped: client ${CLIENT} (partner ${PARTNER}) is on the stop list of dev; nothing changed`);
  expect(proxy.requests).toEqual([PARTNERS_READ, STOP_INSERT]);
  expect(await stopRow(CLIENT)).toEqual(first);
});

/** The insert answered by the proxy instead of Azurite (a fault Azurite cannot produce on demand). */
function answerInsert(answer: (res: ServerResponse) => void): void {
  proxy.intercept = (req, res) => {
    if (req.method !== 'POST') return false;
    answer(res);
    return true;
  };
}
/** The insert refused with this status, storage's error code and message. */
const refuseInsert = (status: number, code: string, message: string) =>
  answerInsert((res) => {
    res.writeHead(status, { 'Content-Type': 'application/json;odata=minimalmetadata;streaming=true;charset=utf-8', 'x-ms-error-code': code });
    res.end(storageErrorBody(code, message));
  });
/** Another client of a partner, with its Partners row. */
async function anotherClient(clientId: string, partnerId: string): Promise<string> {
  await table('Partners').createEntity({ partitionKey: clientId, rowKey: '', PartnerId: partnerId });
  return clientId;
}

test("storage's code decides, not its text: a 409 EntityAlreadyExists in other words is still already stopped; another 409 is not", async () => {
  refuseInsert(409, 'EntityAlreadyExists', 'Die Entität ist schon da.');
  const already = await stopClient(CLIENT);
  expect([already.status, already.stdout]).toEqual([0, expect.stringContaining('already stopped: client')]);
  refuseInsert(409, 'TableBeingDeleted', 'The specified entity already exists.');
  const other = await stopClient(CLIENT);
  expect(other.status).toBe(1);
  expect(other.stderr).toContain('409 TableBeingDeleted');
  expect(other.stderr).toContain(`client ${CLIENT} was not stopped; nothing changed`);
});

test('a client id that names no partner is refused after the one read; nothing is written', async () => {
  const unknown = '0f0f0f0f-1234-4abc-8def-0123456789ab';
  const result = await stopClient(unknown);
  expect(result.status).toBe(1);
  expect(result.stderr).toContain(`refused, nothing changed: ERR_STOP_NO_ROW: client ${unknown} has no Partners row in dev`);
  expect(proxy.requests).toEqual([{ method: 'GET', path: `/${ACCOUNT}/Partners(PartitionKey='${unknown}',RowKey='')` }]);
  expect(await stopRow(unknown)).toBeUndefined();
});

test('storage refusing the insert (403 AuthorizationPermissionMismatch: an identity without the stop-list role) names the fix; nothing changed', async () => {
  const other = await anotherClient('7d0e4a61-7777-4888-9999-aaaabbbbcccc', 'PARTNER-003');
  refuseInsert(403, 'AuthorizationPermissionMismatch', 'This request is not authorized to perform this operation using this permission.');
  const result = await stopClient(other);
  expect(result.status).toBe(1);
  expect(result.stderr).toContain('403 AuthorizationPermissionMismatch');
  expect(result.stderr).toContain('is this the stop identity, granted the stop list and a read of the Partners table');
  expect(result.stderr).toContain(`client ${other} was not stopped; nothing changed`);
  expect(await stopRow(other)).toBeUndefined();
});

test('no answer to the insert (the connection lost each time): the outcome is said to be unknown, and to run the stop again', async () => {
  const other = await anotherClient('5c2a9e10-dddd-4eee-8fff-000011112222', 'PARTNER-004');
  answerInsert((res) => res.socket?.destroy());
  const result = await stopClient(other);
  expect(result.status).toBe(1);
  expect(result.stderr).toContain(`whether client ${other} was stopped is not known: run the stop again (a client already stopped is reported so)`);
});
