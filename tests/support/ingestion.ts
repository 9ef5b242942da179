/**
 * A local Application Insights ingestion endpoint: HTTPS (the exporter upgrades http to https)
 * with a self-signed certificate for 127.0.0.1, recording every envelope it is sent.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { generate } from 'selfsigned';

export interface Envelope {
  readonly name: string;
  readonly time: string;
  readonly iKey?: string;
  readonly tags: Record<string, string>;
  readonly data: {
    readonly baseType: string;
    readonly baseData: Record<string, unknown> & { properties?: Record<string, string>; measurements?: Record<string, number> };
  };
}

export interface Ingestion {
  /** Connection string pointing the exporter here. */
  readonly connectionString: string;
  /** PEM file to give the client process as NODE_EXTRA_CA_CERTS. */
  readonly caFile: string;
  readonly envelopes: Envelope[];
  /** Every request body exactly as received (decompressed), to search for what must never be sent. */
  readonly rawBodies: string[];
  /** The Authorization header of every request to /track ('' when none). */
  readonly authorizations: string[];
  stop(): Promise<void>;
}

export async function startIngestion(): Promise<Ingestion> {
  const pems = await generate([{ name: 'commonName', value: '127.0.0.1' }], {
    keySize: 2048,
    extensions: [{ name: 'subjectAltName', altNames: [{ type: 7, ip: '127.0.0.1' }] }],
  });
  const dir = mkdtempSync(join(tmpdir(), 'ingestion-'));
  const caFile = join(dir, 'ca.pem');
  writeFileSync(caFile, pems.cert);
  const envelopes: Envelope[] = [];
  const rawBodies: string[] = [];
  const authorizations: string[] = [];
  const server: Server = createServer({ key: pems.private, cert: pems.cert }, (req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      let body = Buffer.concat(chunks);
      if (/gzip/i.test(String(req.headers['content-encoding'] ?? ''))) body = gunzipSync(body);
      const text = body.toString('utf8');
      rawBodies.push(text);
      let received = 0;
      if (req.url?.includes('/track')) {
        authorizations.push(String(req.headers.authorization ?? ''));
        const parsed = text.trim().startsWith('[')
          ? (JSON.parse(text) as Envelope[])
          : text
              .split('\n')
              .filter(Boolean)
              .map((l) => JSON.parse(l) as Envelope);
        envelopes.push(...parsed);
        received = parsed.length;
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ itemsReceived: received, itemsAccepted: received, errors: [] }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  return {
    connectionString: `InstrumentationKey=00000000-0000-4000-8000-000000000000;IngestionEndpoint=https://127.0.0.1:${port}/;LiveEndpoint=https://127.0.0.1:${port}/`,
    caFile,
    envelopes,
    rawBodies,
    authorizations,
    stop: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => {
          rmSync(dir, { recursive: true, force: true });
          resolve();
        });
      }),
  };
}

/** Envelopes of one kind: EventData, MessageData (traces), RemoteDependencyData, RequestData, ExceptionData. */
export function ofType(envelopes: readonly Envelope[], baseType: string): Envelope[] {
  return envelopes.filter((e) => e.data?.baseType === baseType);
}
