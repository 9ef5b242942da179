/**
 * Development host (docs/contributing.md §2): serves the same exported handler the Functions runtime calls,
 * turning Node HTTP requests into @azure/functions HttpRequest objects. With no settings it
 * embeds Azurite (seeded with demo rows) and a local OpenID provider; every setting given in the
 * environment replaces its embedded default.
 */
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { format } from 'node:util';
import { HttpRequest, InvocationContext, type HttpHandler, type LogLevel } from '@azure/functions';
import { DefaultAzureCredential } from '@azure/identity';
import { ConfigError, loadConfig, type Settings } from '../lib/config';
import { LIMITS } from '../lib/limits';
import { TelemetryStartError, noTelemetry, startTelemetry } from '../lib/telemetry';
import { createDependencies, createDrawRequestHandler } from '../functions/drawRequest';
import { startAzurite } from './azurite';
import { DEMO_CERTIFICATE_CLIENT, DEMO_CLIENT_SECRETS, DEMO_LOANS, DEMO_PARTNERS, DEMO_TENANT_ID, seedDemo } from './demoData';
import { DEFAULT_CERTIFICATES_DIR, clientCertificate, fetchTrusting, localCertificateAuthority, loopbackServerCertificate } from './localCertificates';
import { startLocalEntra, type ClientCredentials } from './localEntra';

export const DEMO_AUDIENCE = 'api://draw-request-service';
const ROUTE = '/drawrequest'; // Functions routes match case-insensitively

export type Log = (line: string) => void;

/** How long log lines wait to be written together. */
const LOG_FLUSH_MS = 50;

/**
 * Log lines are written to stdout together, at most LOG_FLUSH_MS after the first of them, rather
 * than one write per line: on a pipe each write is a system call that wakes the reader, and under
 * load those writes cost the host more CPU than the handler's own code (bench/results.md). What is
 * pending is written synchronously when the process exits.
 */
export function batchedStdout(): Log {
  let pending: string[] = [];
  let timer: NodeJS.Timeout | undefined;
  const flush = () => {
    timer = undefined;
    if (pending.length === 0) return;
    const text = `${pending.join('\n')}\n`;
    pending = [];
    process.stdout.write(text);
  };
  process.on('exit', flush);
  return (line) => {
    pending.push(line);
    timer ??= setTimeout(flush, LOG_FLUSH_MS).unref();
  };
}

/** The embedded Entra stand-in, as a partner's client is configured for it. */
export interface EmbeddedIdentity {
  /** Azure Identity's `authorityHost`. */
  readonly authorityHost: string;
  readonly tenantId: string;
  /** MSAL's `authority`: the authority host and the tenant. */
  readonly authority: string;
  readonly tokenUrl: string;
  /** The scope a client asks for: the API's App ID URI with `/.default`. */
  readonly scope: string;
  /** The local CA that issued the provider's HTTPS certificate (NODE_EXTRA_CA_CERTS, curl --cacert). */
  readonly caCertPath: string;
  /** The demo client that may also sign in with a certificate, and that certificate's files. */
  readonly certificateClient: {
    readonly clientId: string;
    readonly keyPath: string;
    readonly certPath: string;
    /** Key and certificate in one file (Azure Identity's `certificatePath`). */
    readonly combinedPath: string;
    readonly thumbprintSha256: string;
  };
}

export interface DevHost {
  readonly url: string;
  /** The embedded identity provider, when one runs. */
  readonly identity?: EmbeddedIdentity;
  readonly embeddedStorage: boolean;
  stop(): Promise<void>;
}

export interface DevHostOptions {
  /** Where the local CA and the demo client certificate are kept (default `.local/certificates`). */
  readonly certificatesDir?: string;
}

function isSet(env: Settings, name: string): boolean {
  return (env[name] ?? '').trim() !== '';
}

function readBody(req: IncomingMessage): Promise<Buffer> {
  // Keep one byte past the limit: enough for the handler to answer "too large", no more in memory.
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      if (size > LIMITS.bodyBytes) return;
      chunks.push(chunk);
      size += chunk.length;
    });
    req.on('end', () => resolve(Buffer.concat(chunks).subarray(0, LIMITS.bodyBytes + 1)));
    req.on('error', reject);
  });
}

function traceParentOf(req: IncomingMessage): string {
  const incoming = req.headers.traceparent;
  if (typeof incoming === 'string' && /^00-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$/.test(incoming)) return incoming;
  // randomUUID draws from a prefetched pool, where randomBytes asks the system on every call.
  const traceId = randomUUID().replaceAll('-', '');
  const parentId = randomUUID().replaceAll('-', '').slice(0, 16);
  return `00-${traceId}-${parentId}-01`;
}

function headersOf(req: IncomingMessage): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(req.headers)) {
    if (value !== undefined) headers[name] = Array.isArray(value) ? value.join(', ') : value;
  }
  return headers;
}

/** Serves `handler` at POST /DrawRequest on 127.0.0.1:`port` (0 = any free port). */
export async function serveHandler(handler: HttpHandler, port: number, log: Log): Promise<Server> {
  let base = '';
  const server = createServer((req, res) => {
    void respond(handler, req, res, base, log);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', resolve);
  });
  base = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  return server;
}

async function respond(handler: HttpHandler, req: IncomingMessage, res: ServerResponse, base: string, log: Log): Promise<void> {
  try {
    // The listening address, not the Host header, is the base: a malformed Host must not break the request.
    const url = new URL(req.url ?? '/', base);
    if (url.pathname.toLowerCase() !== ROUTE) {
      res.writeHead(404).end();
      return;
    }
    if (req.method !== 'POST') {
      res.writeHead(405, { Allow: 'POST' }).end();
      return;
    }
    const body = await readBody(req);
    const request = new HttpRequest({ method: 'POST', url: url.href, headers: headersOf(req), body: { bytes: body } });
    const context = new InvocationContext({
      invocationId: randomUUID(),
      functionName: 'DrawRequest',
      // As the Functions host does: continue the caller's W3C trace, or start one.
      traceContext: { traceParent: traceParentOf(req) },
      logHandler: (level: LogLevel, ...args: unknown[]) => log(`[${level}] ${format(...args)}`),
    });
    const response = await handler(request, context);
    const headers = (response.headers ?? {}) as Record<string, string>;
    res.writeHead(response.status ?? 200, headers).end(typeof response.body === 'string' ? response.body : undefined);
  } catch (error) {
    log(`[error] dev host: ${(error as Error).stack ?? String(error)}`);
    if (!res.headersSent) res.writeHead(500).end();
  }
}

/**
 * The Entra stand-in of dev/localEntra.ts on HTTPS (a certificate from the kept local CA), with the
 * demo clients' secrets and the demo partner's kept certificate registered. The service reaches it with
 * a fetch that trusts the local CA (and Node's own roots), as a partner's process does with
 * NODE_EXTRA_CA_CERTS; nothing global to the process changes.
 */
async function startEmbeddedIdentity(
  audience: string,
  role: string | undefined,
  hostPort: number,
  certificatesDir: string,
): Promise<{ identity: EmbeddedIdentity; providerFetch: typeof fetch; stop(): Promise<void> }> {
  const ca = await localCertificateAuthority(certificatesDir);
  const [clientCert, tls] = await Promise.all([clientCertificate(DEMO_CERTIFICATE_CLIENT, certificatesDir), loopbackServerCertificate(ca)]);
  const clients: Record<string, ClientCredentials> = {};
  for (const [clientId, secret] of Object.entries(DEMO_CLIENT_SECRETS)) {
    clients[clientId] = { secret, ...(clientId === DEMO_CERTIFICATE_CLIENT ? { certificates: [clientCert.cert] } : {}) };
  }
  const { keyPath, certPath, combinedPath, thumbprintSha256 } = clientCert;
  const provider = await startLocalEntra({
    tenantId: DEMO_TENANT_ID,
    audience,
    roles: role ? [role] : undefined,
    tls,
    clients,
    // Next to the host (7072 by default), so clients such as examples/submit-draws.ts find it without being told.
    port: hostPort === 0 ? 0 : (hostPort % 65535) + 1,
  });
  const trusting = fetchTrusting(ca.cert);
  return {
    identity: {
      authorityHost: provider.authorityHost,
      tenantId: DEMO_TENANT_ID,
      authority: provider.authority,
      tokenUrl: provider.tokenUrl,
      scope: `${audience.replace(/\/$/, '')}/.default`,
      caCertPath: ca.certPath,
      certificateClient: { clientId: DEMO_CERTIFICATE_CLIENT, keyPath, certPath, combinedPath, thumbprintSha256 },
    },
    providerFetch: trusting.fetch,
    stop: async () => {
      await provider.stop();
      await trusting.close();
    },
  };
}

/** Starts the host with `env` over the embedded defaults. */
export async function startDevHost(env: Settings, log: Log = console.log, options: DevHostOptions = {}): Promise<DevHost> {
  const settings: Settings = { ...env };
  const stops: Array<() => Promise<void>> = [];
  const stop = async () => {
    for (const s of stops.reverse()) await s().catch(() => undefined);
  };
  try {
    const port = Number(settings.PORT?.trim() || 7071);
    if (!Number.isInteger(port) || port < 0 || port > 65535) throw new ConfigError([`PORT must be a port number from 0 to 65535 (got "${settings.PORT}")`]);
    const embeddedStorage = !isSet(settings, 'TABLES_CONNECTION_STRING') && !isSet(settings, 'TABLES_ENDPOINT');
    if (embeddedStorage) {
      const azurite = await startAzurite();
      stops.push(() => azurite.stop());
      settings.TABLES_CONNECTION_STRING = azurite.connectionString;
    }
    let identity: EmbeddedIdentity | undefined;
    let providerFetch: typeof fetch | undefined;
    if (!isSet(settings, 'AUTH_OPENID_CONFIG_URL') && !isSet(settings, 'AUTH_TENANT_ID')) {
      if (!isSet(settings, 'AUTH_AUDIENCE')) settings.AUTH_AUDIENCE = DEMO_AUDIENCE;
      const audience = (settings.AUTH_AUDIENCE as string).split(',')[0].trim();
      const provider = await startEmbeddedIdentity(audience, settings.AUTH_REQUIRED_ROLE?.trim(), port, options.certificatesDir ?? DEFAULT_CERTIFICATES_DIR);
      stops.push(() => provider.stop());
      // Configured as a deployment is: a tenant and its authority host, the metadata found from them.
      identity = provider.identity;
      providerFetch = provider.providerFetch;
      settings.AUTH_TENANT_ID = provider.identity.tenantId;
      settings.AUTH_AUTHORITY_HOST = provider.identity.authorityHost;
    }
    const config = loadConfig(settings);
    if (embeddedStorage) await seedDemo(settings.TABLES_CONNECTION_STRING as string, config.tables);
    const credential = config.tables.endpoint !== undefined ? new DefaultAzureCredential() : undefined;
    const telemetry = config.telemetry === undefined ? noTelemetry : startTelemetry(config.telemetry);
    stops.push(() => telemetry.flush());
    const handler = createDrawRequestHandler(createDependencies(config, { credential, telemetry, providerFetch }));
    const server = await serveHandler(handler, port, log);
    stops.push(
      () =>
        new Promise<void>((resolve) => {
          server.close(() => resolve());
          server.closeAllConnections(); // keep-alive clients must not hold the shutdown open
        }),
    );
    const listening = (server.address() as { port: number }).port;
    return { url: `http://127.0.0.1:${listening}/DrawRequest`, identity, embeddedStorage, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}

/** The ready-to-paste commands for the demo setup: curl and a POSIX shell, nothing else. */
export function demoCommands(host: DevHost): string {
  const client = DEMO_PARTNERS[0].clientId;
  const { identity } = host;
  const getToken = identity
    ? `TOKEN=$(curl -s --cacert ${identity.caCertPath} -X POST ${identity.tokenUrl} -d grant_type=client_credentials -d client_id=${client} -d client_secret=${DEMO_CLIENT_SECRETS[client]} -d scope=${identity.scope} | sed -E 's/.*"access_token":"([^"]+)".*/\\1/')`
    : 'TOKEN=<an access token from your identity provider>';
  const post = `curl -sS -i -X POST ${host.url} -H "Authorization: Bearer $TOKEN" -H "Content-Type: application/json" -d '[{"loanNumber":1001,"requestor":"jane.doe@partner.example","amount":250.00}]'`;
  return `${getToken}\n${post}`;
}

/** How a partner's client is pointed at the embedded provider: MSAL, Azure Identity, and the files to trust and sign with. */
export function describeIdentity(identity: EmbeddedIdentity): string {
  const cert = identity.certificateClient;
  return [
    'Local Entra ID stand-in (HTTPS):',
    `  authority ${identity.authority} (MSAL: knownAuthorities ["${new URL(identity.authorityHost).host}"])`,
    `  authorityHost ${identity.authorityHost}, tenant ${identity.tenantId} (Azure Identity: disableInstanceDiscovery true)`,
    `  token endpoint ${identity.tokenUrl}, scope ${identity.scope}`,
    `  its certificate authority: ${identity.caCertPath}`,
    `    trust it with NODE_EXTRA_CA_CERTS=${identity.caCertPath} (Node.js) or curl --cacert ${identity.caCertPath}`,
    `  client ${cert.clientId} may also sign in with its certificate: key ${cert.keyPath}, certificate ${cert.certPath}`,
    `    (both in ${cert.combinedPath}), SHA-256 thumbprint ${cert.thumbprintSha256}`,
  ].join('\n');
}

function describeDemoData(): string {
  const partners = DEMO_PARTNERS.map(
    (p) => `  client ${p.clientId} (secret ${DEMO_CLIENT_SECRETS[p.clientId]}) -> partner ${p.partnerId}${p.active ? '' : ' (inactive)'}`,
  );
  const loans = DEMO_LOANS.map(
    (l) => `  loan ${l.loanNumber}: partner ${l.partnerId}, credit ${l.availableCredit.toFixed(2)}, investor ${l.fundingInvestorId ?? '(none)'}`,
  );
  return ['Demo partners (Partners table):', ...partners, 'Demo loans (Loans table):', ...loans].join('\n');
}

async function main(): Promise<void> {
  let host: DevHost;
  try {
    host = await startDevHost(process.env, batchedStdout());
  } catch (error) {
    console.error(
      error instanceof ConfigError || error instanceof TelemetryStartError ? error.message : `Start-up failed: ${(error as Error).stack ?? String(error)}`,
    );
    process.exit(1);
  }
  if (host.embeddedStorage) console.log(describeDemoData());
  if (host.identity) console.log(`\n${describeIdentity(host.identity)}`);
  console.log(`\nTry it (a second identical post answers 400 Pending Transaction Request):\n\n${demoCommands(host)}\n`);
  console.log(`listening on ${host.url}`);
  const shutdown = () => {
    void host.stop().then(() => process.exit(0));
  };
  process.once('SIGINT', shutdown);
  process.once('SIGTERM', shutdown);
}

if (require.main === module) void main();
