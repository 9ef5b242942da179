/**
 * Table Storage as on-call reads it (docs/decisions/0059-one-dependency-per-storage-round.md):
 * one dependency per storage round a request makes (the partner read, the batch's read round, the key's
 * read, the key take, the commit, a day's rows), and one more per storage call that failed, with its
 * status, storage error code, table, partition and row. The Azure SDK's own spans (an operation span,
 * an HTTP span and, for a read, a page span per call: about 500 records for a batch of 100) are never
 * started: the store's clients have no tracing policy (lib/store.ts) and the SDK's tracing is its no-op
 * (lib/telemetry.ts withoutAzureSdkTracing).
 *
 * Only built when telemetry is on (lib/store.ts): without it nothing would be recorded, and the round's
 * context and its pipeline policy would only cost CPU.
 *
 * Recording never fails the round it describes: every recording step is guarded.
 */
import type { TableServiceClientOptions } from '@azure/data-tables';
import { SpanKind, SpanStatusCode, context as otelContext, createContextKey, trace, type Attributes, type Context } from '@opentelemetry/api';

type PipelinePolicy = NonNullable<TableServiceClientOptions['additionalPolicies']>[number]['policy'];

/** What a failed round reports (lib/store.ts StorageFailure, without the dependency on it). */
export interface RoundFailure {
  readonly code: string;
  readonly status?: number;
  readonly storageCode?: string;
}

export interface RoundSpec {
  /** The TableStore method: readPartner, readBatchState, readDraws, readKeyRecord, takeKey, markRefused, commitDraws. */
  readonly operation: string;
  readonly tables: readonly string[];
  /** The HTTP method of the round's calls (a round's dependency is an HTTP dependency of the account). */
  readonly method: 'GET' | 'POST' | 'PUT';
  /** Error answers the logic handles, as `status storageCode` (a take's 409 EntityAlreadyExists …): not failures. */
  readonly expected?: ReadonlySet<string>;
  /** The one entity a write is about, when its URL does not name it (an insert, a transaction's partition). */
  readonly entity?: { readonly partitionKey: string; readonly rowKey?: string };
}

/**
 * Failed calls recorded one by one per round; the round counts them all. A round of 200 reads to an
 * account that resets every connection would otherwise cost 200 records: the first ten show what failed.
 */
export const MAX_FAILED_CALLS_RECORDED = 10;

/** The dimensions of the storage dependencies (lib/telemetry.ts TELEMETRY_FIELDS.dependencyDimensions). */
export type StorageDimension =
  'operation' | 'tables' | 'calls' | 'failedCalls' | 'abandonedCalls' | 'statuses' | 'failure' | 'storageCode' | 'table' | 'partitionKey' | 'rowKey';

interface FailedCall {
  readonly method: string;
  readonly table?: string;
  readonly partitionKey?: string;
  readonly rowKey?: string;
  /** The HTTP status, or the network error's code / the error's name when no answer came. */
  readonly result: string | number;
  readonly storageCode?: string;
  readonly start: number;
  readonly end: number;
}

class Round {
  calls = 0;
  failedCalls = 0;
  /** Calls ended by the round's own deadline (its signal): the round's timeout, not failures of their own. */
  abandonedCalls = 0;
  readonly statuses: Record<string, number> = {};
  readonly failed: FailedCall[] = [];
  closed = false;

  constructor(readonly spec: RoundSpec) {}

  /** One call's answer (`status` undefined: none came). */
  answered(
    request: { url: string; method: string; abortSignal?: { readonly aborted: boolean } },
    status: number | undefined,
    code: string | undefined,
    start: number,
  ): void {
    if (this.closed) return; // a call given up on, ending after its round was recorded
    if (status === undefined && request.abortSignal?.aborted === true) {
      this.abandonedCalls += 1;
      return;
    }
    const result = status ?? code ?? 'Error';
    this.statuses[result] = (this.statuses[result] ?? 0) + 1;
    const failed = status === undefined || (status >= 400 && !(this.spec.expected?.has(`${status} ${code}`) ?? false));
    if (!failed) return;
    this.failedCalls += 1;
    if (this.failed.length >= MAX_FAILED_CALLS_RECORDED) return;
    const at = where(request.url, this.spec);
    this.failed.push({ method: request.method, ...at, result, storageCode: status === undefined ? undefined : code, start, end: Date.now() });
  }
}

/** The table, partition and row a call's URL names (a point query's filter, or an entity path), else the round's entity. */
function where(url: string, spec: RoundSpec): Pick<FailedCall, 'table' | 'partitionKey' | 'rowKey'> {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return { table: spec.tables[0], ...spec.entity };
  }
  const last = decodeURIComponent(parsed.pathname.split('/').pop() ?? '');
  const table = /^([A-Za-z][A-Za-z0-9]*)(\(|$)/.exec(last)?.[1] ?? spec.tables[0];
  const text = `${last} ${parsed.searchParams.get('$filter') ?? ''}`;
  // OData quotes a key in single quotes, doubling any inside it.
  const key = (name: string) => new RegExp(`${name}(?: eq |=)'((?:[^']|'')*)'`).exec(text)?.[1]?.replace(/''/g, "'");
  const partitionKey = key('PartitionKey');
  const rowKey = key('RowKey');
  return partitionKey === undefined ? { table, ...spec.entity } : { table, partitionKey, rowKey };
}

/**
 * Where a call finds its round: a key of the OpenTelemetry context the round's work runs in (the SDK's
 * AsyncLocalStorage context manager carries it to the pipeline policy). An AsyncLocalStorage of our own
 * would be a second store for Node to copy into every promise the storage SDK creates (200 calls per
 * batch of 100), for the same reach.
 */
const ROUND = createContextKey('draw-request-service storage round');

/** The result code on-call groups by: an HTTP status, or what stood for one when no answer came. */
function resultOf(round: Round, failure: RoundFailure | undefined): string | number | undefined {
  if (failure !== undefined) return failure.status ?? failure.storageCode ?? failure.code;
  const seen = Object.entries(round.statuses).sort((a, b) => b[1] - a[1]);
  return seen.length === 0 ? undefined : Number.isNaN(Number(seen[0][0])) ? seen[0][0] : Number(seen[0][0]);
}

export class StorageTelemetry {
  /** Where the storage dependencies point: the account's host (the Application Map's Table Storage node). */
  private readonly target: string;

  constructor(accountUrl: string) {
    this.target = new URL(accountUrl).host;
  }

  /**
   * Sees every HTTP attempt of a call (position `perRetry`: each retry too), its status or the error
   * that stood for one, for the round it belongs to. Outside a round it only passes the call on.
   */
  readonly policy: PipelinePolicy = {
    name: 'storageRoundTelemetry',
    sendRequest: async (request, next) => {
      const round = otelContext.active().getValue(ROUND) as Round | undefined;
      if (round === undefined || round.closed) return next(request);
      const start = Date.now();
      round.calls += 1;
      try {
        const response = await next(request);
        safely(() => round.answered(request, response.status, response.headers.get('x-ms-error-code') ?? undefined, start));
        return response;
      } catch (error) {
        const e = error as { statusCode?: number; code?: string; name?: string } | null;
        safely(() => round.answered(request, e?.statusCode, e?.code ?? e?.name, start));
        throw error;
      }
    },
  };

  /**
   * Runs one storage round and records it: one dependency, and one per failed call, children of the
   * invocation's trace. `failureOf` says whether the round's result is a failure (not an answer the
   * logic handles).
   */
  async round<T>(spec: RoundSpec, work: () => Promise<T>, failureOf: (result: T) => RoundFailure | undefined): Promise<T> {
    const parent = otelContext.active();
    const round = new Round(spec);
    const start = Date.now();
    const started = performance.now();
    let outcome: { result: T } | undefined;
    try {
      outcome = { result: await otelContext.with(parent.setValue(ROUND, round), work) };
      return outcome.result;
    } finally {
      round.closed = true;
      const end = start + (performance.now() - started);
      // A defect thrown out of the round (answered 500 elsewhere) is recorded as the round's failure too.
      safely(() => this.record(parent, round, start, end, outcome === undefined ? { code: 'Defect' } : failureOf(outcome.result)));
    }
  }

  private record(parent: Context, round: Round, start: number, end: number, failure: RoundFailure | undefined): void {
    if (round.calls === 0 && failure === undefined) return; // nothing was asked of storage
    const { spec } = round;
    const tracer = trace.getTracer('draw-request-service');
    const attributes: Attributes & { [K in StorageDimension]?: string | number } = {
      'http.request.method': spec.method,
      'server.address': this.target,
      operation: spec.operation,
      tables: spec.tables.join(','),
      calls: round.calls,
      failedCalls: round.failedCalls,
      statuses: JSON.stringify(round.statuses),
    };
    const result = resultOf(round, failure);
    if (result !== undefined) attributes['http.response.status_code'] = result;
    if (round.abandonedCalls > 0) attributes.abandonedCalls = round.abandonedCalls;
    if (failure !== undefined) {
      attributes.failure = failure.code;
      if (failure.storageCode !== undefined) attributes.storageCode = failure.storageCode;
    }
    const span = tracer.startSpan(`${spec.operation} ${spec.tables.join('+')}`, { kind: SpanKind.CLIENT, startTime: start, attributes }, parent);
    if (failure !== undefined) span.setStatus({ code: SpanStatusCode.ERROR, message: failure.code });
    const inRound = trace.setSpan(parent, span);
    for (const call of round.failed) {
      const callAttributes: Attributes & { [K in StorageDimension]?: string } = {
        'http.request.method': call.method,
        'server.address': this.target,
        'http.response.status_code': call.result,
        operation: spec.operation,
      };
      if (call.table !== undefined) callAttributes.table = call.table;
      if (call.partitionKey !== undefined) callAttributes.partitionKey = call.partitionKey;
      if (call.rowKey !== undefined) callAttributes.rowKey = call.rowKey;
      if (call.storageCode !== undefined) callAttributes.storageCode = call.storageCode;
      const child = tracer.startSpan(
        `${call.method} ${call.table ?? spec.tables.join('+')}`,
        { kind: SpanKind.CLIENT, startTime: call.start, attributes: callAttributes },
        inRound,
      );
      child.setStatus({ code: SpanStatusCode.ERROR });
      child.end(Math.max(call.start, call.end));
    }
    span.end(end);
  }
}

let faulted = false;
/** Recording must never fail a storage call: a fault is logged once, and recording goes on without it. */
function safely(record: () => void): void {
  try {
    record();
  } catch (error) {
    if (faulted) return;
    faulted = true;
    console.error(`DrawRequest storage telemetry: recording failed: ${error instanceof Error ? `${error.name}: ${error.message}` : String(error)}`);
  }
}
