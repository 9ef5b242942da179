/**
 * Table Storage (docs/contract.md §4): point reads of partners, loans and today's draws, and the
 * atomic commit of a batch. Every failure comes back as a value with a stable code.
 */
import { RestError, TableClient, odata, type TableEntity, type TableEntityResult, type TransactionAction } from '@azure/data-tables';
import type { TokenCredential } from '@azure/identity';
import { setMaxListeners } from 'node:events';
import { Agent as HttpAgent } from 'node:http';
import { Agent as HttpsAgent } from 'node:https';
import type { TablesConfig } from './config';
import { FIELDS_READ } from './drawRules';
import { keyRecordId, type BatchMark, type KeyRecord, type KeyState, type PriorDraw, type StoredError, type Versioned } from './idempotency';
import { loanColumns, loanOf, type Loan } from './loans';
import { batchMark, drawEntity, keyRecord, partnerRecord, priorDraw, refusalColumns, takeRows } from './tableRows';
import { StorageTelemetry, type RoundSpec } from './storageTelemetry';

export type StorageFailureCode =
  | 'ERR_STORAGE_UNREACHABLE' // network error: refused, reset, DNS
  | 'ERR_STORAGE_TIMEOUT' // no answer within the time bound
  | 'ERR_STORAGE_TABLE_MISSING' // the table does not exist: a deployment problem
  | 'ERR_STORAGE_REJECTED' // the service answered an error status (5xx, throttling, 403 …)
  | 'ERR_STORAGE_CREDENTIAL' // managed identity token could not be obtained
  | 'ERR_STORAGE_FAILED'; // any other error raised by the storage client (its name is kept)

export interface StorageFailure {
  readonly code: StorageFailureCode;
  readonly operation: string;
  /** HTTP status from storage, when it answered. */
  readonly status?: number;
  /** The storage error code (e.g. ServerBusy) or the error's name, never its message. */
  readonly storageCode?: string;
}

export type StoreResult<T> = { readonly ok: true; readonly value: T } | { readonly ok: false; readonly failure: StorageFailure };

export interface PartnerRecord {
  readonly partnerId?: string;
  readonly active: boolean;
}

/** What the partner lookup reads of one client: its Partners row, and whether it is on the stop list. */
export interface PartnerLookup {
  /** Undefined when the client has no Partners row. */
  readonly partner?: PartnerRecord;
  /** A StoppedClients row exists for the client (docs/contract.md §3.3): refused whatever its row says. */
  readonly stopped: boolean;
}

export interface BatchState {
  /** Loans that exist, by loan number (decimal string). */
  readonly loans: ReadonlyMap<string, Loan>;
  /** Today's draw rows for the batch's loans, by loan number: who wrote them, under which key. */
  readonly drawnToday: ReadonlyMap<string, PriorDraw>;
}

export interface DrawRow {
  readonly loanNumber: number;
  readonly amount: number;
  readonly requestor: string;
  readonly batchIndex: number;
}

export interface CommitContext {
  readonly day: string;
  readonly partnerId: string;
  readonly clientId: string;
  readonly requestId: string;
  readonly submittedAt: Date;
  /** Recorded on every row when the request carried an Idempotency-Key. */
  readonly retry?: { readonly key: string; readonly hash: string };
  /**
   * The last moment (ms, this instance's clock) the transaction may be started: past it nothing is sent
   * (`late`). Checked where the transaction is sent, under the commit's deadline, so that a commit lands
   * within a bounded time of the check (lib/idempotency.ts COMMIT_LANDS_WITHIN_MS).
   */
  readonly startBy?: number;
}

/**
 * A failed commit either surely wrote nothing, or may have been applied by storage (`outcomeUnknown`:
 * no answer, a connection lost after the request left, a timeout, a 5xx other than 503).
 */
export type CommitResult =
  | { readonly ok: true }
  | { readonly ok: false; readonly conflictIndex: number }
  | { readonly ok: false; readonly late: true }
  | { readonly ok: false; readonly failure: StorageFailure; readonly outcomeUnknown: boolean };

/**
 * A write to a key's rows: done; `changed`, when another request wrote them since they were read (an insert
 * that found its row, a replace whose ETag no longer matches or whose row is gone); or a failure.
 */
export type KeyWriteResult = { readonly ok: true } | { readonly ok: false; readonly changed: true } | { readonly ok: false; readonly failure: StorageFailure };

/** A refusal to record in a batch's own row under its key. */
export interface Refusal {
  readonly errors: readonly StoredError[];
  readonly requestId: string;
  readonly refusedAt: Date;
}

/**
 * Time bounds: a dead or slow storage account answers 502 within seconds, not minutes, and the calls
 * given up on close their connections then, so a stall cannot drain the pool (MAX_STORAGE_CONNECTIONS).
 */
export interface StoreTimeouts {
  /**
   * Per HTTP attempt of a read or of the key record, until the answer's headers arrive. The SDK does
   * not retry an attempt that ran out of it (its retry policy passes the AbortError straight up):
   * only error answers and network errors are retried.
   */
  readonly attemptMs: number;
  /** Whole read round, retries included. */
  readonly readMs: number;
  /** The commit (one attempt, never retried: see commitDraws), and the key record alongside it. */
  readonly commitMs: number;
}

/**
 * Connections to the storage account, shared by the clients of every table. Enough for the largest
 * request's reads to be in flight at once (two per element of a batch of 100, a partner and a key
 * record): the read round stays one round trip (tests/integration/storageCalls.test.ts holds every
 * answer until all of a batch of 100's reads have arrived).
 */
export const MAX_STORAGE_CONNECTIONS = 256;

/**
 * The name of @azure/core-rest-pipeline's per-call tracing policy (its `tracingPolicyName`), removed
 * from the store's clients. tests/unit/sdkTracing.test.ts checks that a new TableClient still has a
 * policy of that name, so an SDK that renamed it fails there instead of quietly keeping the policy.
 */
export const SDK_TRACING_POLICY = 'tracingPolicy';

/**
 * One keep-alive agent for the account. The SDK's default gives each client an agent of its own,
 * without a limit: concurrent batches of 100 opened hundreds of connections at once, and closed
 * all but 256 idle ones per client afterwards, so the next ones paid for new connections; bursts
 * of them overflowed the listener's backlog (a dropped SYN costs a full second: the bench's tail
 * latencies). Reused, bounded connections also keep an instance within its outbound (SNAT) ports.
 */
export function storageAgent(accountUrl: string): HttpAgent {
  const options = { keepAlive: true, maxSockets: MAX_STORAGE_CONNECTIONS, maxFreeSockets: MAX_STORAGE_CONNECTIONS };
  return new URL(accountUrl).protocol === 'https:' ? new HttpsAgent(options) : new HttpAgent(options);
}

/**
 * The columns each point read asks for ($select): only what the rules and the retry check use. A loan's
 * are those its rules declare (lib/drawRules.ts), so a rule's field cannot be left unread.
 */
export const LOAN_COLUMNS = loanColumns(FIELDS_READ);
export const DRAW_COLUMNS = ['PartnerId', 'IdempotencyKey', 'BatchHash', 'RequestId'];
export const KEY_COLUMNS = ['PartnerId', 'IdempotencyKey', 'BatchHash', 'Day', 'LoanNumbers', 'RequestId', 'TakenAt'];
/** A batch's own row under its key also says which it is, and a refusal's errors and time (docs/contract.md §4.1). */
export const BATCH_ROW_COLUMNS = [...KEY_COLUMNS, 'State', 'Errors', 'RefusedAt'];
/** The key's rows come from one query, so each says which it is ($select returns only what it names). */
const KEY_STATE_COLUMNS = ['RowKey', ...BATCH_ROW_COLUMNS];

export const DEFAULT_TIMEOUTS: StoreTimeouts = { attemptMs: 2_000, readMs: 5_000, commitMs: 5_000 };

/**
 * Per time zone: its formatter (building one costs far more than using it) and the last day worked
 * out, with the minute it was worked out for. Zones in use today are offset from UTC by whole
 * minutes, so the day can only change at a minute boundary: one formatting per minute, not per request.
 */
const dayFormats = new Map<string, { readonly format: Intl.DateTimeFormat; minute: number; day: string }>();

/** Business date `YYYY-MM-DD` of `now` in the IANA zone that defines "per day". */
export function drawDay(now: Date, timeZone: string): string {
  // UTC, the default, without Intl: loading ICU's time-zone data costs a cold start about 15 ms.
  if (timeZone === 'UTC') return now.toISOString().slice(0, 10);
  const minute = Math.floor(now.getTime() / 60_000);
  let zone = dayFormats.get(timeZone);
  if (zone === undefined) {
    zone = { format: new Intl.DateTimeFormat('en-US', { timeZone, year: 'numeric', month: '2-digit', day: '2-digit' }), minute: Number.NaN, day: '' };
    dayFormats.set(timeZone, zone);
  }
  if (zone.minute !== minute) {
    const parts = zone.format.formatToParts(now);
    const part = (type: string) => parts.find((p) => p.type === type)?.value;
    zone.day = `${part('year')}-${part('month')}-${part('day')}`;
    zone.minute = minute;
  }
  return zone.day;
}

/** What an operation that ran past its deadline fails with (classified ERR_STORAGE_TIMEOUT). */
class DeadlineExceeded extends Error {
  override readonly name = 'TimeoutError';
}

/**
 * `work` under a deadline of `ms`: one AbortController and one timer per operation. `work` hands the
 * signal to every SDK call it makes; when it fires, the SDK destroys each pending request's socket
 * (the pool opens a fresh one for the next call) and the call rejects with an AbortError. Without it
 * a call given up on kept its connection: the commit, whose per-attempt timeout the SDK ignores,
 * until storage answered. The race answers at the deadline even if a layer does not heed the signal.
 */
async function withDeadline<T>(ms: number, work: (signal: AbortSignal) => Promise<T>): Promise<T> {
  const controller = new AbortController();
  // The SDK adds a listener per HTTP call in flight (200 for a batch of 100's reads): not a leak.
  setMaxListeners(0, controller.signal);
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      const reason = new DeadlineExceeded(`no answer within ${ms} ms`);
      reject(reason);
      controller.abort(reason);
    }, ms);
  });
  try {
    return await Promise.race([work(controller.signal), expired]);
  } catch (error) {
    controller.abort(); // a failed operation's other calls (the rest of a read round) are of no use: free their connections
    throw error;
  } finally {
    clearTimeout(timer);
  }
}

/** The service's error code (ResourceNotFound, EntityAlreadyExists …): in the body's details, or on the error for transactions. */
function storageErrorCode(error: RestError): string | undefined {
  return (error.details as { errorCode?: string } | undefined)?.errorCode ?? error.code;
}

/** Errors that mean a bug in this code rather than a failing dependency. */
const DEFECTS = [TypeError, RangeError, ReferenceError, SyntaxError];

function classify(error: unknown, operation: string): StorageFailure {
  if (error instanceof RestError) {
    const storageCode = storageErrorCode(error);
    if (error.statusCode === undefined) {
      // No answer: the socket's error code (ECONNREFUSED, ECONNRESET, ENOTFOUND, ETIMEDOUT …).
      return { code: error.code === 'ETIMEDOUT' ? 'ERR_STORAGE_TIMEOUT' : 'ERR_STORAGE_UNREACHABLE', operation, storageCode: error.code };
    }
    if (storageCode === 'TableNotFound') return { code: 'ERR_STORAGE_TABLE_MISSING', operation, status: error.statusCode, storageCode };
    return { code: 'ERR_STORAGE_REJECTED', operation, status: error.statusCode, storageCode };
  }
  if (DEFECTS.some((type) => error instanceof type)) throw error; // a defect, answered 500
  const name = (error as { name?: string } | null)?.name ?? 'Error';
  // AbortError: an attempt's timeout or the deadline's signal ended the call (the SDK raises its own
  // AbortError class, not the one @azure/abort-controller exports, so the name is what is shared);
  // TimeoutError: the deadline itself (withDeadline).
  if (name === 'AbortError' || name === 'TimeoutError') return { code: 'ERR_STORAGE_TIMEOUT', operation };
  // DefaultAzureCredential raises AggregateAuthenticationError, CredentialUnavailableError, AuthenticationError.
  if (/Credential|Authentication/.test(name)) return { code: 'ERR_STORAGE_CREDENTIAL', operation, storageCode: name };
  return { code: 'ERR_STORAGE_FAILED', operation, storageCode: name };
}

/**
 * The answers to a write of a key's rows that mean another request wrote them since they were read: an
 * insert that found its row, a replace whose ETag no longer matches, a replace of a row that is gone (nothing
 * removes key rows, docs/contract.md §4.1; judged again all the same). Any other error is a storage failure.
 */
const CHANGED = new Set(['409 EntityAlreadyExists', '412 UpdateConditionNotSatisfied', '404 ResourceNotFound']);

/** Network errors that mean the connection was never made, so the request never left. */
const NEVER_SENT = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH']);

/**
 * Whether a write that failed this way may still have been applied by storage: yes unless the
 * request never left (no connection, no credential, no table) or storage refused it with a status that
 * means it was not carried out (4xx, or 503 ServerBusy). Azure Storage documents a 500 (OperationTimedOut,
 * InternalError) as "may or may not have succeeded"; a lost connection or a timeout tells nothing.
 */
export function mayHaveApplied(failure: StorageFailure): boolean {
  switch (failure.code) {
    case 'ERR_STORAGE_CREDENTIAL':
    case 'ERR_STORAGE_TABLE_MISSING':
      return false;
    case 'ERR_STORAGE_UNREACHABLE':
      return !NEVER_SENT.has(failure.storageCode ?? '');
    case 'ERR_STORAGE_REJECTED':
      return failure.status === undefined || (failure.status >= 500 && failure.status !== 503);
    case 'ERR_STORAGE_TIMEOUT':
    case 'ERR_STORAGE_FAILED':
      return true;
  }
}

/** An insert of a row not read, or a replace of the version read: one request wins, the others learn `changed`. */
function writeOver(entity: TableEntity, read: Versioned<unknown> | undefined): TransactionAction {
  return read === undefined ? ['create', entity] : ['update', entity, 'Replace', { etag: read.etag }];
}

/**
 * What the service asks of storage (docs/contract.md §4.3): the request's reads, the key's writes and the
 * commit. TableStore does it against Table Storage; tests/support/memoryStore.ts holds the same rows in
 * memory for the exhaustive exploration, and tests/integration/storeContract.test.ts runs one suite on both.
 */
export type Store = Pick<TableStore, 'readPartner' | 'readBatchState' | 'readDraws' | 'commitDraws' | 'readKeyState' | 'takeKey' | 'markRefused'>;

export class TableStore {
  private readonly partners: TableClient;
  private readonly stops: TableClient;
  private readonly loans: TableClient;
  private readonly draws: TableClient;
  private readonly drawsCommit: TableClient;
  private readonly keys: TableClient;
  /** The read rounds, as telemetry names them: built once, not per request. */
  private readonly reads: Readonly<Record<'readPartner' | 'readBatchState' | 'readDraws' | 'readKeyRecord', RoundSpec>>;
  private readonly drawsTable: string;
  private readonly keysTable: string;
  /** Absent when telemetry is off: no round context, no pipeline policy (lib/storageTelemetry.ts). */
  private readonly telemetry?: StorageTelemetry;

  constructor(
    config: TablesConfig,
    private readonly timeouts: StoreTimeouts = DEFAULT_TIMEOUTS,
    credential?: TokenCredential,
    recordRounds = false,
    /** The instance's clock, for a commit's `startBy`. */
    private readonly now: () => Date = () => new Date(),
  ) {
    const retrying = { retryOptions: { maxRetries: 2, retryDelayInMs: 100, maxRetryDelayInMs: 500 } };
    // A transaction is not idempotent: a retry after a lost answer would report our own rows as a conflict.
    const once = { retryOptions: { maxRetries: 0 } };
    const account =
      config.connectionString === undefined ? (config.endpoint as string) : TableClient.fromConnectionString(config.connectionString, 'probe').url;
    const agent = storageAgent(account);
    const read = (operation: keyof TableStore['reads'], ...tables: string[]): RoundSpec => ({ operation, tables, method: 'GET' });
    this.reads = {
      readPartner: read('readPartner', config.partnersTable, config.stoppedClientsTable),
      readBatchState: read('readBatchState', config.loansTable, config.drawsTable),
      readDraws: read('readDraws', config.drawsTable),
      readKeyRecord: read('readKeyRecord', config.idempotencyTable),
    };
    this.drawsTable = config.drawsTable;
    this.keysTable = config.idempotencyTable;
    this.telemetry = recordRounds ? new StorageTelemetry(account) : undefined;
    const telemetry = this.telemetry === undefined ? {} : { additionalPolicies: [{ policy: this.telemetry.policy, position: 'perRetry' as const }] };
    const connect = (table: string, options: object): TableClient => {
      if (config.connectionString !== undefined) {
        // The settings allow a plain-http endpoint only on this machine (Azurite).
        return TableClient.fromConnectionString(config.connectionString, table, { ...options, allowInsecureConnection: true });
      }
      if (credential === undefined) throw new Error('TableStore needs a credential when TABLES_ENDPOINT is used');
      return new TableClient(config.endpoint as string, table, credential, options);
    };
    const client = (table: string, clientOptions: object): TableClient => {
      const made = connect(table, { ...clientOptions, ...telemetry, agent });
      // Storage is recorded per round (lib/storageTelemetry.ts), never per call: the SDK's per-call HTTP
      // span policy would only parse each call's URL and start a span that records nothing.
      made.pipeline.removePolicy({ name: SDK_TRACING_POLICY });
      return made;
    };
    this.partners = client(config.partnersTable, retrying);
    this.stops = client(config.stoppedClientsTable, retrying);
    this.loans = client(config.loansTable, retrying);
    this.draws = client(config.drawsTable, retrying);
    this.drawsCommit = client(config.drawsTable, once);
    this.keys = client(config.idempotencyTable, retrying);
  }

  /** Point reads of one client's Partners row and its stop-list row, in parallel: one round. */
  async readPartner(clientId: string): Promise<StoreResult<PartnerLookup>> {
    return this.guard(this.reads.readPartner, this.timeouts.readMs, async (signal) => {
      const [row, stop] = await Promise.all([
        this.pointRead(signal, this.partners, clientId, '', ['PartnerId', 'Active']),
        this.pointRead(signal, this.stops, clientId, '', ['PartitionKey']),
      ]);
      // Absent means active; any value other than true (a string "false", 0 …) fails closed.
      const partner = row === undefined ? undefined : partnerRecord(row);
      return { partner, stopped: stop !== undefined };
    });
  }

  /** One parallel round of point reads: the batch's loans and today's draw rows for them. */
  async readBatchState(day: string, loanNumbers: readonly string[]): Promise<StoreResult<BatchState>> {
    const unique = [...new Set(loanNumbers)];
    return this.guard(this.reads.readBatchState, this.timeouts.readMs, async (signal) => {
      const [loanRows, drawRows] = await Promise.all([
        Promise.all(unique.map((n) => this.pointRead(signal, this.loans, n, '', LOAN_COLUMNS))),
        Promise.all(unique.map((n) => this.pointRead(signal, this.draws, day, n, DRAW_COLUMNS))),
      ]);
      const loans = new Map<string, Loan>();
      const drawnToday = new Map<string, PriorDraw>();
      unique.forEach((n, i) => {
        const loan = loanRows[i];
        if (loan !== undefined) loans.set(n, loanOf(loan, FIELDS_READ));
        const draw = drawRows[i];
        if (draw !== undefined) drawnToday.set(n, priorDraw(draw));
      });
      return { loans, drawnToday };
    });
  }

  /**
   * One day's draw rows for these loans, by loan number: the rows of the day a keyed batch's key was
   * taken, when that is not today, or of the loans of the batch that holds a key (lib/idempotency.ts).
   */
  async readDraws(day: string, loanNumbers: readonly string[]): Promise<StoreResult<ReadonlyMap<string, PriorDraw>>> {
    const unique = [...new Set(loanNumbers)];
    return this.guard(this.reads.readDraws, this.timeouts.readMs, async (signal) => {
      const rows = await Promise.all(unique.map((n) => this.pointRead(signal, this.draws, day, n, DRAW_COLUMNS)));
      const draws = new Map<string, PriorDraw>();
      unique.forEach((n, i) => {
        const row = rows[i];
        if (row !== undefined) draws.set(n, priorDraw(row));
      });
      return draws;
    });
  }

  /**
   * Inserts every row in one entity-group transaction in the day's partition: all or nothing.
   * The store, not the earlier read, enforces one draw per loan per day: an existing row fails the
   * whole transaction with 409, naming the first failing action's index.
   *
   * Only the deadline's signal bounds it: submitTransaction builds its HTTP request from the options'
   * top level (abortSignal, timeout) and ignores requestOptions; its one attempt is the operation.
   */
  async commitDraws(rows: readonly DrawRow[], context: CommitContext): Promise<CommitResult> {
    // Synchronously with the call: nothing can come between this check and the deadline's start.
    if (context.startBy !== undefined && this.now().getTime() >= context.startBy) return { ok: false, late: true };
    const actions: TransactionAction[] = rows.map((row) => ['create', drawEntity(row, context)]);
    if (this.telemetry === undefined) return this.commit(rows, actions);
    const spec: RoundSpec = { operation: 'commitDraws', tables: [this.drawsTable], method: 'POST', entity: { partitionKey: context.day } };
    // A conflict is an answer the logic handles (the 400 names the element), not a failure.
    return this.telemetry.round(
      spec,
      () => this.commit(rows, actions),
      (result) => ('failure' in result ? result.failure : undefined),
    );
  }

  private async commit(rows: readonly DrawRow[], actions: TransactionAction[]): Promise<CommitResult> {
    try {
      await withDeadline(this.timeouts.commitMs, (abortSignal) => this.drawsCommit.submitTransaction(actions, { abortSignal }));
      return { ok: true };
    } catch (error) {
      if (error instanceof RestError && error.statusCode === 409 && storageErrorCode(error) === 'EntityAlreadyExists') {
        const index = /^(\d+):/.exec(error.message)?.[1];
        if (index !== undefined && Number(index) < rows.length) return { ok: false, conflictIndex: rows[Number(index)].batchIndex };
      }
      const failure = classify(error, 'commitDraws');
      return { ok: false, failure, outcomeUnknown: mayHaveApplied(failure) };
    }
  }

  /**
   * What storage holds for a partner's key and one batch under it (docs/contract.md §4.1): the key's holder
   * (RowKey "") and the batch's own row (RowKey its hash), each with its ETag. One query within the key's
   * partition: one request, like a point read.
   */
  async readKeyState(partnerId: string, key: string, hash: string): Promise<StoreResult<KeyState>> {
    return this.guard(this.reads.readKeyRecord, this.timeouts.readMs, async (signal) => {
      const filter = odata`PartitionKey eq ${keyRecordId(partnerId, key)} and (RowKey eq '' or RowKey eq ${hash})`;
      const pages = this.keys
        .listEntities<Record<string, unknown>>({ ...this.attempt(signal), queryOptions: { filter, select: KEY_STATE_COLUMNS } })
        .byPage({ maxPageSize: 2 });
      let holder: Versioned<KeyRecord> | undefined;
      let own: Versioned<BatchMark> | undefined;
      // Storage may answer a query in several pages, an empty one included: all of them, two rows at most.
      for await (const page of pages) {
        for (const row of page) {
          if (row.rowKey === '') holder = { value: keyRecord(row), etag: row.etag };
          else if (row.rowKey === hash) own = { value: batchMark(row), etag: row.etag };
        }
      }
      return { holder, own };
    });
  }

  /**
   * Takes a key for a batch in one transaction of the key's partition: the key's holder (RowKey "") becomes
   * this batch, and the batch's own row records its take (kept when another batch takes the key over later).
   * Each row is inserted if it was not read, or replaced matching the ETag it was read with: of requests
   * judging the same rows one wins, and the others learn `changed` (the caller reads the rows again).
   * Retried like a read: a retry after a lost answer finds its own rows (`changed`), and the re-read shows them.
   */
  async takeKey(record: KeyRecord, read: KeyState): Promise<KeyWriteResult> {
    const partitionKey = keyRecordId(record.partnerId, record.key);
    const [holder, own] = takeRows(record);
    return this.writeKeyRows('takeKey', partitionKey, [writeOver({ partitionKey, ...holder }, read.holder), writeOver({ partitionKey, ...own }, read.own)]);
  }

  /**
   * Records that a batch was refused under its key, in the batch's own row, before the refusal is answered
   * (docs/contract.md §9): inserted if the row was not read, or replaced matching its ETag. A take of the
   * same batch judged on the rows as they were fails (`changed`), so the refusal is never contradicted; a
   * take that came first makes this write fail, and the caller reads the rows again.
   */
  async markRefused(
    batch: { readonly partnerId: string; readonly key: string; readonly hash: string },
    refusal: Refusal,
    read: KeyState,
  ): Promise<KeyWriteResult> {
    const partitionKey = keyRecordId(batch.partnerId, batch.key);
    const row = { partitionKey, rowKey: batch.hash, ...refusalColumns(batch, refusal) };
    return this.writeKeyRows('markRefused', partitionKey, [writeOver(row, read.own)]);
  }

  /** One transaction on a key's rows, under the commit's bound. */
  private writeKeyRows(operation: 'takeKey' | 'markRefused', partitionKey: string, actions: TransactionAction[]): Promise<KeyWriteResult> {
    const spec: RoundSpec = { operation, tables: [this.keysTable], method: 'POST', expected: CHANGED, entity: { partitionKey } };
    return this.conditionalWrite(spec, (abortSignal) => this.keys.submitTransaction(actions, { abortSignal }));
  }

  /** A write conditional on what was read: the answers of CHANGED are `changed`, not failures. */
  private async conditionalWrite(spec: RoundSpec, write: (signal: AbortSignal) => Promise<unknown>): Promise<KeyWriteResult> {
    const result = await this.guard(spec, this.timeouts.commitMs, async (signal) => {
      try {
        await write(signal);
        return true;
      } catch (error) {
        if (error instanceof RestError && CHANGED.has(`${error.statusCode} ${storageErrorCode(error)}`)) return false;
        throw error;
      }
    });
    if (!result.ok) return result;
    return result.value ? { ok: true } : { ok: false, changed: true };
  }

  /**
   * A point query (PartitionKey and RowKey both fixed): like getEntity, but a missing row is an empty 200
   * rather than a 404, so the normal "no draw yet today" is not a failed dependency and an exception in
   * telemetry on every accepted request. Storage may answer a query with no rows and a continuation
   * ("Query Timeout and Pagination"): the pages are followed, within the operation's deadline, until a
   * row or the end, so an empty first page never reads as "no row" (a stopped client served, a loan missing).
   */
  private async pointRead(
    signal: AbortSignal,
    client: TableClient,
    partitionKey: string,
    rowKey: string,
    select: string[],
  ): Promise<TableEntityResult<Record<string, unknown>> | undefined> {
    const filter = odata`PartitionKey eq ${partitionKey} and RowKey eq ${rowKey}`;
    const pages = client.listEntities<Record<string, unknown>>({ ...this.attempt(signal), queryOptions: { filter, select } }).byPage({ maxPageSize: 1 });
    for await (const page of pages) if (page.length > 0) return page[0];
    return undefined;
  }

  /**
   * Options for each SDK call of an operation: the operation's deadline, and a bound per HTTP attempt
   * (requestOptions.timeout becomes the pipeline request's timeout, whose expiry destroys the socket).
   */
  private attempt(abortSignal: AbortSignal) {
    return { abortSignal, requestOptions: { timeout: this.timeouts.attemptMs } };
  }

  /** `work` under a deadline of `boundMs`, every failure a value; one storage round for telemetry. */
  private guard<T>(spec: RoundSpec, boundMs: number, work: (signal: AbortSignal) => Promise<T>): Promise<StoreResult<T>> {
    const run = async (): Promise<StoreResult<T>> => {
      try {
        return { ok: true, value: await withDeadline(boundMs, work) };
      } catch (error) {
        return { ok: false, failure: classify(error, spec.operation) };
      }
    };
    if (this.telemetry === undefined) return run();
    return this.telemetry.round(spec, run, (result) => (result.ok ? undefined : result.failure));
  }
}
