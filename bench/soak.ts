/**
 * Soak: a fixed number of concurrent clients post mixed valid and invalid traffic to the
 * dev host, run as `npm start` runs it (the built `dist/dev/devHost.js` in its own process),
 * against its own in-memory Azurite and local OpenID provider. Then it proves, from the answers and
 * from every row in storage:
 *
 * - no 500 and no 502 (nothing is unhealthy here), and every answer is the one its kind expects;
 * - every accepted draw is stored exactly once, by the 204 that landed it (its `RequestId`);
 * - nothing is stored that was not accepted (rejected batches, all-or-nothing, replays);
 * - a retried `Idempotency-Key` batch is answered `Idempotent-Replay: true` and writes nothing;
 * - the dev host's memory (VmRSS) after a short warm-up and at the end stays within a bound.
 *
 * `node dist/bench/soak.js [seconds=60] [concurrency=8]` prints the report and exits non-zero if
 * any property fails (`npm run soak -- 10 4`). tests/integration/soak.test.ts runs it under Jest.
 */
import type { TableEntityResult } from '@azure/data-tables';
import { startAzurite, type Azurite } from '../dev/azurite';
import { createTables, putLoan, putPartner, tableClient, tableSettings, tablesNamed } from '../dev/demoData';
import { devHostEntry, rssMb, spawnDevHost, type DevHostProcess } from '../tests/support/devHostProcess';
import { startOidcProvider, type OidcProvider } from '../dev/oidcProvider';
import { benchToken } from './benchToken';
import { percentile } from './stats';

export interface SoakOptions {
  /** How long traffic runs (the warm-up included). */
  readonly durationMs: number;
  /** Clients posting in parallel, each waiting for its answer before its next request. */
  readonly concurrency: number;
  readonly log?: (line: string) => void;
  /** Seed of the clients' choices (batch sizes, amounts, spellings, variants); fixed by default. */
  readonly seed?: number;
  /** When the start RSS is read: this far into the traffic. Default min(5 s, duration / 6). */
  readonly warmupMs?: number;
  /** Largest accepted RSS growth from start to end, in MB. Default 150. */
  readonly rssGrowthLimitMb?: number;
  /** The built dev host; found next to this file or in dist/ by default. */
  readonly devHostEntry?: string;
  /** More environment for the dev host (e.g. NODE_OPTIONS to diagnose its memory). */
  readonly devHostEnv?: Record<string, string>;
}

/** What each request was meant to show. */
export const KINDS = ['valid', 'repeat', 'keyed', 'replay', 'invalid', 'foreign', 'unauthorized'] as const;
export type Kind = (typeof KINDS)[number];

export interface SoakReport {
  /** Every property held (the CLI's exit status). */
  readonly ok: boolean;
  readonly durationMs: number;
  readonly concurrency: number;
  readonly seed: number;
  readonly requests: number;
  readonly requestsPerSecond: number;
  /** Answers by HTTP status; 0 counts requests that got no answer (network error or 30 s timeout). */
  readonly statuses: Record<string, number>;
  readonly byKind: Record<Kind, { readonly requests: number; readonly statuses: Record<string, number> }>;
  readonly latencyMs: { readonly p50: number; readonly p95: number; readonly p99: number; readonly max: number };
  /** Throughput and median latency per 10 s of traffic: a soak should not slow down as it goes. */
  readonly windows: ReadonlyArray<{ readonly fromS: number; readonly requests: number; readonly p50Ms: number }>;
  /** Draws answered 204 (not replays): loans that must be in storage. */
  readonly acceptedDraws: number;
  /** Loans named only by rejected requests: loans that must not be in storage. */
  readonly rejectedOnlyLoans: number;
  readonly keyedBatches: number;
  /** Rows in the draws table (all partitions) at the end. */
  readonly rows: number;
  /** Keys with rows in the Idempotency-Key table at the end (each a holder and its batch's row). */
  readonly keyRecords: number;
  readonly violationCount: number;
  /** The first 10 violations. */
  readonly violations: readonly string[];
  readonly rss: { readonly startMb: number; readonly endMb: number; readonly peakMb: number; readonly startAtMs: number; readonly limitMb: number };
  /** Dev host log lines at error level (a 500 or a 502 logs one). */
  readonly devHostErrorLines: number;
  readonly devHostExitCode: number | null;
  readonly notes: readonly string[];
}

const CLIENT = 'soak-partner-app';
const PARTNER = 'PARTNER-SOAK';
const OTHER_CLIENT = 'soak-other-app';
const OTHER_PARTNER = 'PARTNER-SOAK-OTHER';
const UNKNOWN_CLIENT = 'soak-unregistered-app';
const AUDIENCE = 'api://draw-request-soak';
const TABLES = tablesNamed('Soak');
const CREDIT = 1000;
const INVESTOR = 'INV-SOAK';
const FOREIGN_LOANS = 20;
const REQUEST_TIMEOUT_MS = 30_000;
const MAX_LISTED = 10;
const WINDOW_MS = 10_000;

/**
 * The deterministic cycle each client walks, starting at its own offset: half of the steps land
 * draws (fresh, then repeated, and keyed then retried), half are rejections.
 */
const CYCLE = ['fresh', 'repeat', 'keyed', 'invalid', 'foreign', 'fresh', 'unauthorized', 'keyed', 'invalid', 'repeat'] as const;
type Step = (typeof CYCLE)[number];

const INVALID_VARIANTS = ['notJson', 'wrongContentType', 'subCentAmount', 'missingRequestor', 'unknownLoan', 'overCredit'] as const;
const TOKEN_VARIANTS = ['expired', 'garbage', 'wrongAudience', 'unregisteredClient', 'tampered', 'none'] as const;

/** mulberry32: small, fast, and the same sequence for the same seed. */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

interface Answer {
  readonly status: number;
  readonly requestId?: string;
  readonly headers: Headers;

  readonly body?: { readonly errors?: unknown };
  readonly text: string;
}

interface Accepted {
  readonly requestId: string;
  readonly amount: number;
  readonly requestor: string;
  readonly batchIndex: number;
  readonly key?: string;
}

interface Element {
  readonly loanNumber: number;
  readonly amount: number;
  readonly requestor: string;
}

const round = (n: number, digits = 1) => Math.round(n * 10 ** digits) / 10 ** digits;

export async function runSoak(options: SoakOptions): Promise<SoakReport> {
  const log = options.log ?? (() => undefined);
  const seed = options.seed ?? 20240604;
  const warmupMs = options.warmupMs ?? Math.min(5_000, Math.floor(options.durationMs / 6));
  const limitMb = options.rssGrowthLimitMb ?? 150;
  const entry = options.devHostEntry ?? devHostEntry();

  const violations: string[] = [];
  const violation = (text: string) => violations.push(text);
  const notes: string[] = [];

  let azurite: Azurite | undefined;
  let provider: OidcProvider | undefined;
  let host: DevHostProcess | undefined;
  let devHostExitCode: number | null;
  try {
    // Storage and identity of our own, the tables, the partners, and loans of another partner.
    [azurite, provider] = await Promise.all([startAzurite(), startOidcProvider({ audience: AUDIENCE })]);
    const connection = azurite.connectionString;
    await createTables(connection, TABLES);
    const partners = tableClient(connection, TABLES.partnersTable);
    const loans = tableClient(connection, TABLES.loansTable);
    await Promise.all([
      putPartner(partners, { clientId: CLIENT, partnerId: PARTNER, active: true }),
      putPartner(partners, { clientId: OTHER_CLIENT, partnerId: OTHER_PARTNER }),
    ]);
    let loanCounter = 10_000_000;
    const nextLoan = () => ++loanCounter;
    const foreignLoans = Array.from({ length: FOREIGN_LOANS }, () => nextLoan());
    await Promise.all(
      foreignLoans.map((n) => putLoan(loans, { loanNumber: n, partnerId: OTHER_PARTNER, availableCredit: CREDIT, fundingInvestorId: INVESTOR })),
    );
    log(`azurite on port ${azurite.port}, provider ${provider.issuer}`);

    // Tokens are minted once: signing is the client's cost, not the service's.
    const soakProvider = provider;
    const token = (claims: Record<string, unknown>, expiresIn = 3600) =>
      benchToken(soakProvider, AUDIENCE, CLIENT, { roles: ['Draws.Submit'], ...claims }, expiresIn);
    const good = await token({});
    const goodClaims = JSON.parse(Buffer.from(good.split('.')[1], 'base64url').toString()) as Record<string, unknown>;
    const tamperedPayload = Buffer.from(JSON.stringify({ ...goodClaims, azp: OTHER_CLIENT })).toString('base64url');
    const badTokens: Record<(typeof TOKEN_VARIANTS)[number], string | null> = {
      expired: await token({}, -600), // past the 60 s clock tolerance
      garbage: 'not-a-jwt',
      wrongAudience: await token({ aud: 'api://someone-else' }),
      unregisteredClient: await token({ sub: UNKNOWN_CLIENT, azp: UNKNOWN_CLIENT }),
      tampered: good
        .split('.')
        .map((part, i) => (i === 1 ? tamperedPayload : part))
        .join('.'),
      none: null,
    };

    host = await spawnDevHost(
      {
        TABLES_CONNECTION_STRING: connection,
        AUTH_OPENID_CONFIG_URL: provider.openIdConfigUrl,
        AUTH_AUDIENCE: AUDIENCE,
        ...tableSettings(TABLES),
        ...options.devHostEnv,
      },
      entry,
    );
    const url = host.url;
    log(`dev host pid ${host.pid} listening on ${url}; RSS ${round(rssMb(host.pid))} MB`);

    // What was asked and answered.
    const statuses: Record<string, number> = {};
    const byKind = Object.fromEntries(KINDS.map((k) => [k, { requests: 0, statuses: {} }])) as SoakReport['byKind'];
    const latencies: number[] = [];
    const timeline: Array<[number, number]> = []; // [ms since traffic start, latency]
    const requestIds = new Map<string, Kind>();
    const accepted = new Map<number, Accepted>(); // loan → the 204 that landed it
    const rejectedLoans = new Set<number>(); // loans named by requests that must not land
    const keyedBatches = new Map<string, string>(); // key → request id of its first 204
    let requests = 0;

    const describe = (kind: Kind, answer: Answer) => `${kind} ${answer.requestId ?? '(no X-Request-Id)'}: ${answer.status} ${answer.text.slice(0, 300)}`;

    async function post(kind: Kind, body: string, headers: Record<string, string>, bearer: string | null): Promise<Answer> {
      const all: Record<string, string> = { 'content-type': 'application/json', ...headers };
      if (bearer !== null) all.authorization = `Bearer ${bearer}`;
      const started = performance.now();
      let answer: Answer;
      try {
        const response = await fetch(url, { method: 'POST', headers: all, body, signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) });
        const text = await response.text();
        let parsed: Answer['body'];
        try {
          parsed = text === '' ? undefined : (JSON.parse(text) as Answer['body']);
        } catch {
          parsed = undefined;
        }
        answer = { status: response.status, requestId: response.headers.get('x-request-id') ?? undefined, headers: response.headers, body: parsed, text };
      } catch (error) {
        answer = { status: 0, headers: new Headers(), text: `no answer: ${(error as Error).name} ${(error as Error).message}` };
      }
      const took = performance.now() - started;
      latencies.push(took);
      timeline.push([Date.now() - trafficStart, took]);
      requests += 1;
      statuses[answer.status] = (statuses[answer.status] ?? 0) + 1;
      const k = byKind[kind] as { requests: number; statuses: Record<string, number> };
      k.requests += 1;
      k.statuses[answer.status] = (k.statuses[answer.status] ?? 0) + 1;
      if (answer.status === 0 || answer.status === 500 || answer.status === 502) violation(describe(kind, answer));
      else if (answer.requestId === undefined) violation(`${kind}: ${answer.status} without X-Request-Id`);
      else if (requestIds.has(answer.requestId))
        violation(`${kind}: X-Request-Id ${answer.requestId} already answered a ${requestIds.get(answer.requestId)} request`);
      else requestIds.set(answer.requestId, kind);
      return answer;
    }

    /** 204, no body; a replay is marked, a first answer is not. */
    function expectAccepted(kind: Kind, answer: Answer, replay: boolean): boolean {
      const marked = answer.headers.get('idempotent-replay');
      if (answer.status !== 204 || answer.text !== '' || (replay ? marked !== 'true' : marked !== null)) {
        if (answer.status !== 0 && answer.status !== 500 && answer.status !== 502)
          violation(`expected 204${replay ? ' with Idempotent-Replay: true' : ''}; ${describe(kind, answer)} (replay header ${marked})`);
        return false;
      }
      return true;
    }

    /** 400 problem+json whose errors are exactly these (index, code) pairs; request-level when index is undefined. */
    function expect400(kind: Kind, answer: Answer, expected: ReadonlyArray<{ index?: number; code: string }>): void {
      if (answer.status === 0 || answer.status === 500 || answer.status === 502) return; // already recorded
      const errors = answer.body?.errors as Array<{ index?: number; code?: string }> | undefined;
      const got = (errors ?? []).map((e) => `${e.index ?? '-'}:${e.code}`).join(',');
      const want = expected.map((e) => `${e.index ?? '-'}:${e.code}`).join(',');
      if (answer.status !== 400 || answer.headers.get('content-type') !== 'application/problem+json' || got !== want) {
        violation(`expected 400 [${want}]; ${describe(kind, answer)}`);
      }
    }

    function expect401(kind: Kind, answer: Answer): void {
      if (answer.status === 0 || answer.status === 500 || answer.status === 502) return;
      if (answer.status !== 401 || !/^Bearer\b/.test(answer.headers.get('www-authenticate') ?? '') || answer.body?.errors !== undefined) {
        violation(`expected 401 with WWW-Authenticate: Bearer; ${describe(kind, answer)}`);
      }
    }

    /** Fresh loans of our partner, upserted just before they are posted. */
    async function freshLoans(count: number): Promise<number[]> {
      const numbers = Array.from({ length: count }, () => nextLoan());
      await Promise.all(numbers.map((n) => putLoan(loans, { loanNumber: n, partnerId: PARTNER, availableCredit: CREDIT, fundingInvestorId: INVESTOR })));
      return numbers;
    }

    /** The JSON text of a batch, in one of several spellings the contract accepts. */
    function spell(elements: readonly Element[], random: () => number): string {
      return JSON.stringify(
        elements.map((e) => {
          const style = Math.floor(random() * 3);
          if (style === 0) return { loanNumber: e.loanNumber, requestor: e.requestor, amount: e.amount };
          if (style === 1) return { LoanNumber: String(e.loanNumber), Requestor: `  ${e.requestor} `, AMOUNT: e.amount, note: 'ignored' };
          return { amount: e.amount, loannumber: `000${e.loanNumber}`, REQUESTOR: e.requestor };
        }),
      );
    }

    function elementsFor(numbers: readonly number[], random: () => number, worker: number): Element[] {
      return numbers.map((loanNumber) => ({
        loanNumber,
        amount: (100 + Math.floor(random() * (CREDIT * 100 - 99))) / 100, // 1.00 … 1000.00
        requestor: `soak.client${worker}@partner.example`,
      }));
    }

    function landed(elements: readonly Element[], requestId: string, key?: string): void {
      elements.forEach((e, batchIndex) => {
        if (accepted.has(e.loanNumber)) violation(`loan ${e.loanNumber} accepted twice: ${accepted.get(e.loanNumber)?.requestId} and ${requestId}`);
        accepted.set(e.loanNumber, { requestId, amount: e.amount, requestor: e.requestor, batchIndex, key });
        rejectedLoans.delete(e.loanNumber);
      });
    }

    function refused(numbers: readonly number[]): void {
      for (const n of numbers) if (!accepted.has(n)) rejectedLoans.add(n);
    }

    let keyCounter = 0;
    let trafficStart = Date.now();

    async function step(name: Step, worker: number, random: () => number): Promise<void> {
      const size = 1 + Math.floor(random() * 5);
      switch (name) {
        case 'fresh':
        case 'repeat': {
          const elements = elementsFor(await freshLoans(size), random, worker);
          const body = spell(elements, random);
          const first = await post('valid', body, {}, good);
          if (!expectAccepted('valid', first, false)) return refused(elements.map((e) => e.loanNumber));
          landed(elements, first.requestId as string);
          if (name === 'fresh') return;
          // (b) The same batch again, without a key: every element already drawn today.
          const again = await post('repeat', body, {}, good);
          expect400(
            'repeat',
            again,
            elements.map((_, index) => ({ index, code: 'PendingTransactionRequest' })),
          );
          return;
        }
        case 'keyed': {
          // (c) A keyed batch, then its exact retry: the retry is a replay that writes nothing.
          const elements = elementsFor(await freshLoans(size), random, worker);
          const body = spell(elements, random);
          const key = `soak-${seed}-${worker}-${++keyCounter}`;
          const first = await post('keyed', body, { 'Idempotency-Key': key }, good);
          if (!expectAccepted('keyed', first, false)) return refused(elements.map((e) => e.loanNumber));
          landed(elements, first.requestId as string, key);
          keyedBatches.set(key, first.requestId as string);
          const retry = await post('replay', body, { 'Idempotency-Key': key }, good);
          expectAccepted('replay', retry, true);
          return;
        }
        case 'invalid': {
          // (d) Refused by the rules on the element alone (storage untouched) or against storage (loan exists, available credit).
          const variant = INVALID_VARIANTS[Math.floor(random() * INVALID_VARIANTS.length)];
          const needsLoan = variant === 'subCentAmount' || variant === 'missingRequestor' || variant === 'overCredit' || variant === 'wrongContentType';
          const [loanNumber] = needsLoan ? await freshLoans(1) : [nextLoan()];
          refused([loanNumber]);
          const requestor = `soak.client${worker}@partner.example`;
          const cases: Record<
            (typeof INVALID_VARIANTS)[number],
            { body: string; headers?: Record<string, string>; errors: Array<{ index?: number; code: string }> }
          > = {
            notJson: { body: `[{"loanNumber": ${loanNumber}, "requestor": "${requestor}", "amount": 10`, errors: [{ code: 'InvalidRequest' }] },
            wrongContentType: {
              body: JSON.stringify([{ loanNumber, requestor, amount: 10 }]),
              headers: { 'content-type': 'text/plain' },
              errors: [{ code: 'InvalidRequest' }],
            },
            subCentAmount: { body: JSON.stringify([{ loanNumber, requestor, amount: 0.001 }]), errors: [{ index: 0, code: 'InvalidAmount' }] },
            missingRequestor: { body: JSON.stringify([{ loanNumber, amount: 10 }]), errors: [{ index: 0, code: 'InvalidRequest' }] },
            unknownLoan: { body: JSON.stringify([{ loanNumber, requestor, amount: 10 }]), errors: [{ index: 0, code: 'InvalidLoanNumber' }] },
            overCredit: { body: JSON.stringify([{ loanNumber, requestor, amount: CREDIT + 0.01 }]), errors: [{ index: 0, code: 'InvalidAmount' }] },
          };
          const chosen = cases[variant];
          expect400('invalid', await post('invalid', chosen.body, chosen.headers ?? {}, good), chosen.errors);
          return;
        }
        case 'foreign': {
          // (e) One loan of another partner among fresh loans of ours: the whole batch is refused.
          const own = elementsFor(await freshLoans(size - 1), random, worker);
          const foreignAt = Math.floor(random() * size);
          const foreign: Element = {
            loanNumber: foreignLoans[Math.floor(random() * foreignLoans.length)],
            amount: 10,
            requestor: `soak.client${worker}@partner.example`,
          };
          const elements = [...own.slice(0, foreignAt), foreign, ...own.slice(foreignAt)];
          refused(elements.map((e) => e.loanNumber));
          expect400('foreign', await post('foreign', spell(elements, random), {}, good), [{ index: foreignAt, code: 'InvalidAuthorization' }]);
          return;
        }
        case 'unauthorized': {
          // (f) A bad, expired, foreign-audience, unregistered, tampered or missing token.
          const variant = TOKEN_VARIANTS[Math.floor(random() * TOKEN_VARIANTS.length)];
          const [loanNumber] = await freshLoans(1);
          refused([loanNumber]);
          expect401(
            'unauthorized',
            await post('unauthorized', JSON.stringify([{ loanNumber, requestor: 'x@partner.example', amount: 10 }]), {}, badTokens[variant]),
          );
          return;
        }
      }
    }

    // Traffic: `concurrency` clients, each walking the cycle from its own offset until the deadline.
    const dayAtStart = new Date().toISOString().slice(0, 10);
    const started = Date.now();
    trafficStart = started;
    const deadline = started + options.durationMs;
    let rssStart = Number.NaN;
    let rssPeak = rssMb(host.pid);
    const samples: number[] = [];
    const hostPid = host.pid;
    const sampler = setInterval(() => {
      const now = rssMb(hostPid);
      samples.push(now);
      if (now > rssPeak) rssPeak = now;
      if (samples.length % 10 === 0) {
        const elapsed = (Date.now() - started) / 1000;
        log(`${Math.round(elapsed)} s: ${requests} requests (${round(requests / elapsed)}/s), ${accepted.size} draws accepted, RSS ${round(now)} MB`);
      }
    }, 1_000);
    const warmup = setTimeout(() => {
      rssStart = rssMb(hostPid);
      log(`warm-up done after ${warmupMs} ms: RSS ${round(rssStart)} MB`);
    }, warmupMs);
    const workers = Array.from({ length: options.concurrency }, async (_, worker) => {
      const random = prng(seed + worker * 7919);
      for (let i = worker; Date.now() < deadline; i += 1) {
        try {
          await step(CYCLE[i % CYCLE.length], worker, random);
        } catch (error) {
          violation(`client ${worker}: ${(error as Error).stack ?? String(error)}`);
        }
      }
    });
    await Promise.all(workers);
    const elapsedMs = Date.now() - started;
    clearInterval(sampler);
    clearTimeout(warmup);
    if (Number.isNaN(rssStart)) rssStart = samples[0] ?? Number.NaN;
    const rssEnd = rssMb(host.pid);
    if (rssEnd > rssPeak) rssPeak = rssEnd;
    const dayAtEnd = new Date().toISOString().slice(0, 10);
    if (dayAtEnd !== dayAtStart)
      notes.push(`the UTC day changed during the soak (${dayAtStart} → ${dayAtEnd}): a repeat across midnight is accepted, not Pending`);

    // The dev host is done (stopped, its last log lines written); its log says whether it logged any error.
    devHostExitCode = await host.stop();
    const devHostErrorLines = host.errorLines();
    for (const line of host.errorSamples()) notes.push(`dev host: ${line}`);
    host = undefined;
    if (devHostExitCode !== 0) violation(`dev host exited with ${devHostExitCode} on SIGTERM`);

    // Storage: every row, all partitions.
    const rows: TableEntityResult<Record<string, unknown>>[] = [];
    for await (const row of tableClient(connection, TABLES.drawsTable).listEntities<Record<string, unknown>>()) rows.push(row);
    const keyRows: TableEntityResult<Record<string, unknown>>[] = [];
    for await (const row of tableClient(connection, TABLES.idempotencyTable).listEntities<Record<string, unknown>>()) keyRows.push(row);

    const rowsByLoan = new Map<number, TableEntityResult<Record<string, unknown>>[]>();
    for (const row of rows) {
      const loan = Number(row.rowKey);
      rowsByLoan.set(loan, [...(rowsByLoan.get(loan) ?? []), row]);
    }
    for (const [loan, want] of accepted) {
      const found = rowsByLoan.get(loan) ?? [];
      if (found.length !== 1) {
        violation(`accepted loan ${loan} (request ${want.requestId}) has ${found.length} rows`);
        continue;
      }
      const row = found[0];
      const expected: Record<string, unknown> = {
        RequestId: want.requestId,
        Amount: want.amount,
        Requestor: want.requestor,
        PartnerId: PARTNER,
        ClientId: CLIENT,
        Status: 'Pending',
        BatchIndex: want.batchIndex,
        IdempotencyKey: want.key,
      };
      const wrong = Object.entries(expected).filter(([name, value]) => row[name] !== value);
      if (wrong.length > 0)
        violation(
          `row of loan ${loan}: ${wrong.map(([name, value]) => `${name} ${JSON.stringify(row[name])} instead of ${JSON.stringify(value)}`).join(', ')}`,
        );
    }
    for (const [loan, found] of rowsByLoan) {
      if (!accepted.has(loan))
        violation(
          `loan ${loan} has ${found.length} row(s) (request ${String(found[0].RequestId)}) but was never accepted${rejectedLoans.has(loan) ? ' (only refused)' : ''}`,
        );
    }
    if (rows.length !== accepted.size) violation(`${rows.length} draw rows for ${accepted.size} accepted draws`);

    // A key's rows (contract §4.1): its holder and the batch's own Taken row, each naming the request whose
    // 204 landed the batch; replays added none.
    const rowsByKey = new Map<string, TableEntityResult<Record<string, unknown>>[]>();
    for (const row of keyRows) rowsByKey.set(row.IdempotencyKey as string, [...(rowsByKey.get(row.IdempotencyKey as string) ?? []), row]);
    for (const [key, requestId] of keyedBatches) {
      const found = rowsByKey.get(key) ?? [];
      const holder = found.find((r) => r.rowKey === '');
      const own = found.filter((r) => r.rowKey !== '');
      if (holder === undefined) violation(`no Idempotency-Key holder for ${key}`);
      else if (holder.RequestId !== requestId) violation(`Idempotency-Key ${key} held by request ${String(holder.RequestId)}, not ${requestId}`);
      if (own.length !== 1 || own[0].State !== 'Taken' || own[0].RequestId !== requestId || own[0].rowKey !== holder?.BatchHash)
        violation(
          `Idempotency-Key ${key}: ${own.length} batch row(s) (${own.map((r) => `${String(r.State)} by ${String(r.RequestId)}`).join(', ')}), not one Taken by ${requestId}`,
        );
    }
    for (const key of rowsByKey.keys()) if (!keyedBatches.has(key)) violation(`Idempotency-Key ${key} has rows but no keyed batch landed under it`);
    // Memory.
    if (!(rssEnd <= rssStart + limitMb)) violation(`dev host RSS grew from ${round(rssStart)} MB to ${round(rssEnd)} MB (limit +${limitMb} MB)`);
    for (const kind of KINDS) if (byKind[kind].requests === 0) notes.push(`no ${kind} request was sent (run longer)`);

    const sorted = [...latencies].sort((a, b) => a - b);
    const windows: Array<{ fromS: number; requests: number; p50Ms: number }> = [];
    const windowCount = Math.max(1, Math.floor(elapsedMs / WINDOW_MS)); // the last one takes the remainder
    for (let i = 0; i < windowCount; i += 1) {
      const [from, to] = [i * WINDOW_MS, i === windowCount - 1 ? Infinity : (i + 1) * WINDOW_MS];
      const inWindow = timeline
        .filter(([at]) => at >= from && at < to)
        .map(([, took]) => took)
        .sort((a, b) => a - b);
      windows.push({ fromS: from / 1000, requests: inWindow.length, p50Ms: round(percentile(inWindow, 50)) });
    }
    return {
      ok: violations.length === 0,
      durationMs: elapsedMs,
      concurrency: options.concurrency,
      seed,
      requests,
      requestsPerSecond: round(requests / (elapsedMs / 1000)),
      statuses,
      byKind,
      latencyMs: {
        p50: round(percentile(sorted, 50)),
        p95: round(percentile(sorted, 95)),
        p99: round(percentile(sorted, 99)),
        max: round(sorted[sorted.length - 1] ?? 0),
      },
      windows,
      acceptedDraws: accepted.size,
      rejectedOnlyLoans: rejectedLoans.size,
      keyedBatches: keyedBatches.size,
      rows: rows.length,
      keyRecords: rowsByKey.size,
      violationCount: violations.length,
      violations: violations.slice(0, MAX_LISTED),
      rss: { startMb: round(rssStart), endMb: round(rssEnd), peakMb: round(rssPeak), startAtMs: warmupMs, limitMb },
      devHostErrorLines,
      devHostExitCode,
      notes,
    };
  } finally {
    if (host !== undefined) await host.stop().catch(() => undefined);
    await Promise.allSettled([azurite?.stop(true), provider?.stop()]);
  }
}

/** The report as printed by the CLI. */
export function formatReport(report: SoakReport): string {
  const counts = (statuses: Record<string, number>) =>
    Object.entries(statuses)
      .sort(([a], [b]) => Number(a) - Number(b))
      .map(([status, n]) => `${status}: ${n}`)
      .join(', ');
  const lines = [
    `soak ${report.ok ? 'PASSED' : 'FAILED'}: ${round(report.durationMs / 1000)} s, concurrency ${report.concurrency}, seed ${report.seed}`,
    `requests: ${report.requests} (${report.requestsPerSecond}/s); statuses ${counts(report.statuses)}`,
    ...KINDS.map((k) => `  ${k.padEnd(12)} ${String(report.byKind[k].requests).padStart(7)}  ${counts(report.byKind[k].statuses)}`),
    `latency ms: p50 ${report.latencyMs.p50}, p95 ${report.latencyMs.p95}, p99 ${report.latencyMs.p99}, max ${report.latencyMs.max}`,
    `per 10 s: ${report.windows.map((w) => `${w.requests} req p50 ${w.p50Ms} ms`).join(' | ')}`,
    `storage: ${report.rows} draw rows for ${report.acceptedDraws} accepted draws; ${report.rejectedOnlyLoans} refused loans with no row expected; ` +
      `${report.keyRecords} keys with rows for ${report.keyedBatches} keyed batches`,
    `dev host RSS: ${report.rss.startMb} MB after ${report.rss.startAtMs} ms warm-up, ${report.rss.endMb} MB at the end (peak ${report.rss.peakMb} MB, limit +${report.rss.limitMb} MB)`,
    `dev host: ${report.devHostErrorLines} error log lines, exit code ${report.devHostExitCode} on SIGTERM`,
    `violations: ${report.violationCount}`,
    ...report.violations.map((v) => `  - ${v}`),
    ...report.notes.map((n) => `note: ${n}`),
  ];
  return lines.join('\n');
}

async function main(): Promise<void> {
  const [secondsArg, concurrencyArg] = process.argv.slice(2);
  const seconds = secondsArg === undefined ? 60 : Number(secondsArg);
  const concurrency = concurrencyArg === undefined ? 8 : Number(concurrencyArg);
  if (!(seconds > 0) || !Number.isInteger(concurrency) || concurrency < 1) {
    console.error('usage: node dist/bench/soak.js [seconds=60] [concurrency=8]');
    process.exit(2);
  }
  const report = await runSoak({ durationMs: seconds * 1000, concurrency, log: (line) => console.log(line) });
  console.log(formatReport(report));
  process.exit(report.ok ? 0 : 1);
}

if (require.main === module) {
  main().catch((error) => {
    console.error(`soak failed to run: ${(error as Error).stack ?? String(error)}`);
    process.exit(1);
  });
}
