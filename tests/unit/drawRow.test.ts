/**
 * A draw row exactly as the SDK puts it on the wire in the commit's $batch body: each property with
 * the EDM type the loan-servicing system reads (a whole amount is still a Double). A local HTTP
 * server poses as the table endpoint and captures the request.
 */
import { createServer, type IncomingMessage, type Server } from 'node:http';
import { TableStore, type CommitContext, type DrawRow } from '../../lib/store';
import { connectionStringFor } from '../../dev/azurite';

interface Captured {
  readonly method?: string;
  readonly url?: string;
  readonly contentType?: string;
  readonly body: string;
}

let server: Server;
let port: number;
const captured: Captured[] = [];

beforeAll(async () => {
  server = createServer((req: IncomingMessage, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      captured.push({ method: req.method, url: req.url, contentType: req.headers['content-type'], body: Buffer.concat(chunks).toString('utf8') });
      // 202 with no sub-responses: the SDK takes the transaction as applied.
      res.writeHead(202).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as { port: number }).port;
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

function store(): TableStore {
  return new TableStore({
    connectionString: connectionStringFor(port), // Azurite's well-known development account, on this server's port
    partnersTable: 'Partners',
    loansTable: 'Loans',
    drawsTable: 'DrawRequests',
    idempotencyTable: 'IdempotencyKeys',
    stoppedClientsTable: 'StoppedClients',
  });
}

/** The entity JSON of each changeset part (one per row), parsed, with the request line it came with. */
function changesetEntities(body: string): { requestLine: string; entity: unknown }[] {
  const boundary = /^content-type: multipart\/mixed; boundary=(changeset_[0-9a-f-]+)\r$/im.exec(body)?.[1];
  expect(boundary).toBeDefined();
  return body
    .split(`--${boundary}`)
    .filter((part) => /^content-type: application\/http\r$/im.test(part))
    .map((part) => {
      const [head, json] = part.split(/\r\n\r\n(?=\{)/);
      const requestLine = head.split('\r\n').find((line) => /^[A-Z]+ http/.test(line)) ?? '';
      return { requestLine, entity: JSON.parse(json.trim()) };
    });
}

const CONTEXT: CommitContext = {
  day: '2026-05-04',
  partnerId: 'PARTNER-A',
  clientId: 'partner-app-1',
  requestId: '6f1c2a9e-3b7d-4c8e-9f10-2a3b4c5d6e7f',
  submittedAt: new Date('2026-05-04T13:45:06.789Z'),
};

/** The columns every row of a commit under CONTEXT carries, as sent. */
const COMMON = {
  PartitionKey: '2026-05-04',
  PartnerId: 'PARTNER-A',
  ClientId: 'partner-app-1',
  Status: 'Pending',
  SubmittedAt: '2026-05-04T13:45:06.789Z',
  'SubmittedAt@odata.type': 'Edm.DateTime',
  RequestId: '6f1c2a9e-3b7d-4c8e-9f10-2a3b4c5d6e7f',
};

test('each row of the commit is sent with numbers as JSON numbers and their EDM types', async () => {
  const rows: DrawRow[] = [
    { loanNumber: 1234567, amount: 100, requestor: 'jane.doe@partner.example', batchIndex: 0 },
    { loanNumber: 7654321, amount: 12.5, requestor: 'john.roe@partner.example', batchIndex: 3 },
  ];
  captured.length = 0;
  expect(await store().commitDraws(rows, CONTEXT)).toEqual({ ok: true });

  expect(captured).toHaveLength(1);
  const [request] = captured;
  expect(request.method).toBe('POST');
  expect(request.url).toBe('/devstoreaccount1/$batch');
  expect(request.contentType).toMatch(/^multipart\/mixed; boundary=batch_/);
  const parts = changesetEntities(request.body);
  expect(parts.map((p) => p.requestLine)).toEqual([
    `POST http://127.0.0.1:${port}/devstoreaccount1/DrawRequests HTTP/1.1`,
    `POST http://127.0.0.1:${port}/devstoreaccount1/DrawRequests HTTP/1.1`,
  ]);
  expect(parts.map((p) => p.entity)).toEqual([
    {
      ...COMMON,
      RowKey: '1234567',
      Amount: 100,
      'Amount@odata.type': 'Edm.Double',
      Requestor: 'jane.doe@partner.example',
      BatchIndex: 0,
      'BatchIndex@odata.type': 'Edm.Int32',
    },
    {
      ...COMMON,
      RowKey: '7654321',
      Amount: 12.5,
      'Amount@odata.type': 'Edm.Double',
      Requestor: 'john.roe@partner.example',
      BatchIndex: 3,
      'BatchIndex@odata.type': 'Edm.Int32',
    },
  ]);
  // As text too: a number, not the string "100" (which the service would have to convert).
  expect(request.body).toContain('"Amount":100,"Amount@odata.type":"Edm.Double"');
});

test("a keyed batch's rows also carry the key and the batch hash, as strings", async () => {
  const rows: DrawRow[] = [{ loanNumber: 1234567, amount: 250.75, requestor: 'jane.doe@partner.example', batchIndex: 0 }];
  captured.length = 0;
  const retry = { key: 'order-2026-05-04-001', hash: 'c2hhMjU2LWJhdGNoLWhhc2g' };
  expect(await store().commitDraws(rows, { ...CONTEXT, retry })).toEqual({ ok: true });

  expect(changesetEntities(captured[0].body).map((p) => p.entity)).toEqual([
    {
      ...COMMON,
      RowKey: '1234567',
      Amount: 250.75,
      'Amount@odata.type': 'Edm.Double',
      Requestor: 'jane.doe@partner.example',
      BatchIndex: 0,
      'BatchIndex@odata.type': 'Edm.Int32',
      IdempotencyKey: 'order-2026-05-04-001',
      BatchHash: 'c2hhMjU2LWJhdGNoLWhhc2g',
    },
  ]);
});
