/**
 * Integration harness: a real Azurite (child process, over HTTP), a real local OpenID provider
 * (metadata and JWKS over HTTP, RS256 keys), and the real handler built from real settings.
 */
import { HttpRequest, InvocationContext, type HttpHandler, type HttpResponseInit } from '@azure/functions';
import { TableClient, type TableEntityResult } from '@azure/data-tables';
import { createDefaultHttpClient, createHttpHeaders, createPipelineRequest } from '@azure/core-rest-pipeline';
import { randomUUID } from 'node:crypto';
import { loadConfig, type Config, type Settings } from '../../lib/config';
import { createDependencies, createDrawRequestHandler, type DrawRequestDeps } from '../../functions/drawRequest';
import type { StoreTimeouts } from '../../lib/store';
import type { ProviderTimings } from '../../lib/auth';
import type { TokenCredential } from '@azure/identity';
import { startAzurite, type Azurite } from '../../dev/azurite';
import { createTables, putLoan, putPartner, tableClient, type DemoLoan } from '../../dev/demoData';
import { startOidcProvider, type OidcProvider } from '../../dev/oidcProvider';
import type { BatchRecord, Telemetry } from '../../lib/telemetry';
import { connectionStringVia, startFaultProxy, type FaultProxy } from './storageProxies';
import { contractViolations } from './contract';

export const AUDIENCE = 'api://draw-request-tests';
export const TENANT = '11111111-2222-3333-4444-555555555555';
export const CLIENT = 'partner-app-1';
export const PARTNER = 'PARTNER-A';
export const OTHER_CLIENT = 'partner-app-2';
export const OTHER_PARTNER = 'PARTNER-B';

export interface Reply {
  readonly status: number;
  readonly headers: Record<string, string>;
  readonly text: string;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  readonly body: any;
}

export interface PostOptions {
  /** Bearer token; `null` sends no Authorization header. Defaults to a valid token for CLIENT. */
  readonly token?: string | null;
  readonly headers?: Record<string, string>;
}

export type Claims = Record<string, unknown>;

export interface HarnessOptions {
  /** UNHURRIED_TIMEOUTS unless given. */
  readonly timeouts?: StoreTimeouts;
  /** Keep Azurite's data on disk here, so it survives a restart. */
  readonly location?: string;
  /** The handler's clock (business day, caches); real time by default. */
  readonly now?: () => Date;
  readonly providerTimings?: ProviderTimings;
  /** For TABLES_ENDPOINT settings. */
  readonly credential?: TokenCredential;
}

/**
 * The storage time bounds of every handler a test builds without its own: far above what a starved test
 * process waits. A test that is not about deadlines must not fail because the machine is busy: at load 7 on
 * 2 cores a single read to Azurite took over 5 s, so the production bounds (DEFAULT_TIMEOUTS, 2 s per attempt)
 * expired and healthy storage was answered 502. Tests of the bounds set their own (storageDeadlines.test.ts).
 * Below Jest's 30 s per test, so a call that never ends still fails as a 502 the test can explain.
 */
export const UNHURRIED_TIMEOUTS: StoreTimeouts = { attemptMs: 20_000, readMs: 25_000, commitMs: 25_000 };

let loanCounter = 100_000 + Math.floor(Math.random() * 1_000_000) * 10;

/** A loan number no other test in this process uses. */
export function nextLoanNumber(): number {
  loanCounter += 1;
  return loanCounter;
}

/** Converts what a handler returned into what a client over HTTP would see. */
export function toReply(response: HttpResponseInit): Reply {
  const headers: Record<string, string> = {};
  for (const [k, v] of Object.entries((response.headers ?? {}) as Record<string, string>)) headers[k.toLowerCase()] = v;
  const text = typeof response.body === 'string' ? response.body : '';
  return { status: response.status ?? 200, headers, text, body: text === '' ? undefined : JSON.parse(text) };
}

/** Telemetry that only hands each invocation's record to `sink`: what the handler would have sent. */
export function recordingTelemetry(sink: (record: BatchRecord) => void): Telemetry {
  return {
    inInvocation: (_invocation, work) => work(),
    batch: (record) => void sink(record),
    dataQuality: () => undefined,
    flush: () => Promise.resolve(),
  };
}

/** POSTs `body` (JSON-encoded unless bytes or text) to `handler` as the Functions host would, with a new invocation id. */
export async function invoke(
  handler: HttpHandler,
  body: unknown,
  headers: Record<string, string>,
  logHandler: (level: string, ...args: unknown[]) => void = () => undefined,
): Promise<Reply> {
  const bytes = Buffer.isBuffer(body) ? body : Buffer.from(typeof body === 'string' ? body : JSON.stringify(body));
  const request = new HttpRequest({
    method: 'POST',
    url: 'http://localhost/DrawRequest',
    headers: { 'content-type': 'application/json', ...headers },
    body: { bytes },
  });
  const context = new InvocationContext({ invocationId: randomUUID(), functionName: 'DrawRequest', logHandler });
  return toReply(await handler(request, context));
}

export class Harness {
  readonly logs: string[] = [];
  /**
   * What the handler gave telemetry, one record per invocation. The SDK's export of these records
   * is tested end to end in telemetry.test.ts; here they show each answer's recorded reason.
   */
  readonly records: BatchRecord[] = [];
  handler!: HttpHandler;
  deps!: DrawRequestDeps;
  config!: Config;
  private defaultToken?: string;
  private readonly proxies: FaultProxy[] = [];

  private constructor(
    public azurite: Azurite,
    readonly provider: OidcProvider,
    readonly settings: Settings,
    private readonly location?: string,
  ) {}

  /** Starts Azurite and the provider, creates the tables, seeds two partners, builds the handler. */
  static async start(overrides: Settings = {}, options: HarnessOptions = {}): Promise<Harness> {
    const azurite = await startAzurite({ location: options.location });
    const provider = await startOidcProvider({ audience: AUDIENCE, tenantId: TENANT });
    const settings: Settings = {
      AUTH_OPENID_CONFIG_URL: provider.openIdConfigUrl,
      AUTH_AUDIENCE: AUDIENCE,
      TABLES_CONNECTION_STRING: azurite.connectionString,
      ...overrides,
    };
    const harness = new Harness(azurite, provider, settings, options.location);
    harness.rebuild(options);
    await harness.seedBasics();
    return harness;
  }

  /** A fresh handler instance (new caches), as a new Functions instance would have. */
  rebuild(options: HarnessOptions = {}, settings: Settings = this.settings): void {
    this.config = loadConfig(settings);
    this.deps = createDependencies(this.config, {
      timeouts: UNHURRIED_TIMEOUTS,
      telemetry: recordingTelemetry((record) => this.records.push(record)),
      ...options,
    });
    this.handler = createDrawRequestHandler(this.deps);
  }

  /**
   * A fault proxy in front of this harness's storage, and a fresh handler that reaches storage only
   * through it; the proxy closes with the harness.
   */
  async behindProxy(options: HarnessOptions = {}): Promise<FaultProxy> {
    const proxy = await startFaultProxy(this.azurite.port);
    this.proxies.push(proxy);
    this.rebuild(options, this.settingsVia(proxy.port));
    return proxy;
  }

  /** These settings with storage reached through a proxy listening on `port`. */
  settingsVia(port: number): Settings {
    return { ...this.settings, TABLES_CONNECTION_STRING: connectionStringVia(this.azurite.connectionString, this.azurite.port, port) };
  }

  /** The telemetry record of the invocation that answered `reply`. */
  recordOf(reply: Reply): BatchRecord | undefined {
    return this.records.find((r) => r.requestId === reply.headers['x-request-id']);
  }

  async seedBasics(): Promise<void> {
    await createTables(this.azurite.connectionString, this.config.tables);
    await putPartner(this.table('partners'), { clientId: CLIENT, partnerId: PARTNER });
    await putPartner(this.table('partners'), { clientId: OTHER_CLIENT, partnerId: OTHER_PARTNER, active: true });
  }

  table(which: 'partners' | 'loans' | 'draws' | 'stops'): TableClient {
    const { partnersTable, loansTable, drawsTable, stoppedClientsTable } = this.config.tables;
    const name = { partners: partnersTable, loans: loansTable, draws: drawsTable, stops: stoppedClientsTable }[which];
    return tableClient(this.azurite.connectionString, name);
  }

  /** Seeds a new loan of PARTNER (overridable) and returns its number. */
  async loan(props: Partial<DemoLoan> = {}): Promise<number> {
    const loan: DemoLoan = { loanNumber: nextLoanNumber(), partnerId: PARTNER, availableCredit: 1000, fundingInvestorId: 'INV-1', ...props };
    await putLoan(this.table('loans'), loan);
    return loan.loanNumber;
  }

  /** An RS256 token signed by the provider's key, Entra app-token shaped; `undefined` removes a claim. */
  async token(claims: Claims = {}, expiresIn = 3600): Promise<string> {
    return this.provider.server.issuer.buildToken({
      expiresIn,
      scopesOrTransform: (_header, payload) => {
        Object.assign(payload, { aud: AUDIENCE, sub: CLIENT, azp: CLIENT, idtyp: 'app', tid: TENANT, roles: ['Draws.Submit'] }, claims);
        for (const [k, v] of Object.entries(payload)) if (v === undefined) delete payload[k];
      },
    });
  }

  async post(body: unknown, options: PostOptions = {}): Promise<Reply> {
    const token = options.token === undefined ? (this.defaultToken ??= await this.token()) : options.token;
    const headers: Record<string, string> = { ...options.headers };
    if (token !== null) headers.authorization = `Bearer ${token}`;
    const reply = await invoke(this.handler, body, headers, (level, ...args) => this.logs.push(`[${level}] ${args.map(String).join(' ')}`));
    // Every answer any integration test receives must match the partner contract.
    expect(
      contractViolations(
        reply,
        Object.keys(headers).some((h) => h.toLowerCase() === 'idempotency-key'),
      ),
    ).toEqual([]);
    return reply;
  }

  /**
   * One draws row exactly as storage returns it with full metadata: shows the stored EDM types
   * (a Double is written `100.0`, an Int32 `0`), which the SDK's typed reads blur.
   */
  async rawDraw(day: string, loanNumber: number): Promise<string> {
    const client = this.table('draws');
    const request = createPipelineRequest({
      url: `${client.url}/${this.config.tables.drawsTable}(PartitionKey='${day}',RowKey='${loanNumber}')`,
      allowInsecureConnection: true,
      headers: createHttpHeaders({ Accept: 'application/json;odata=fullmetadata', 'x-ms-version': '2019-02-02', DataServiceVersion: '3.0' }),
    });
    return (await client.pipeline.sendRequest(createDefaultHttpClient(), request)).bodyAsText ?? '';
  }

  /** Stops storage (cleanly, so an on-disk Azurite keeps its data). */
  async stopStorage(): Promise<void> {
    await this.azurite.stop();
  }

  /** Starts storage again on the same port (and folder, when on disk). */
  async startStorage(): Promise<void> {
    this.azurite = await startAzurite({ port: this.azurite.port, location: this.location });
  }

  /** Every row in the draws table. */
  async draws(): Promise<TableEntityResult<Record<string, unknown>>[]> {
    const rows: TableEntityResult<Record<string, unknown>>[] = [];
    for await (const row of this.table('draws').listEntities<Record<string, unknown>>()) rows.push(row);
    return rows;
  }

  /** Rows for these loan numbers, across all days. */
  async drawsFor(...loanNumbers: number[]): Promise<TableEntityResult<Record<string, unknown>>[]> {
    const wanted = new Set(loanNumbers.map(String));
    return (await this.draws()).filter((r) => wanted.has(r.rowKey as string));
  }

  async stop(): Promise<void> {
    await Promise.allSettled([...this.proxies.map((p) => p.close()), this.azurite.stop(true), this.provider.stop()]);
  }
}

/** A valid single-element batch for `loanNumber`. */
export function draw(loanNumber: number | string, amount = 100, requestor = 'jane.doe@partner.example'): Record<string, unknown> {
  return { loanNumber, requestor, amount };
}

/** Today's business date in UTC, as the default DRAW_DAY_TIMEZONE defines it. */
export function todayUtc(): string {
  return new Date().toISOString().slice(0, 10);
}
