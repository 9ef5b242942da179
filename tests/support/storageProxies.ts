/**
 * Proxies in front of a real Azurite, for the tests and the benchmark: faults Azurite cannot produce
 * on demand (a slow network, 503 answers, transactions that hang or land without their answer
 * reaching the service, storage that stops answering at all), counts of the storage calls that pass
 * through, and when the service closed the connections of the calls it gave up on; and a proxy that
 * throttles each partition at an entity rate, as Table Storage does (startThrottlingProxy).
 */
import { createServer as createHttpServer, request as httpRequest, type IncomingMessage, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer, request as httpsRequest } from 'node:https';
import { randomUUID } from 'node:crypto';
import { createConnection, createServer, type Socket } from 'node:net';

export interface Proxy {
  readonly port: number;
  close(): Promise<void>;
}

/** The same storage account reached through a proxy's port. */
export function connectionStringVia(connectionString: string, storagePort: number, proxyPort: number): string {
  return connectionString.replace(`:${storagePort}/`, `:${proxyPort}/`);
}

export interface DelayProxy extends Proxy {
  /** Milliseconds every chunk waits, each way; 0 forwards at once. */
  delayMs: number;
}

/** TCP proxy that delays every chunk in both directions, keeping their order. */
export async function startDelayProxy(targetPort: number, delayMs = 0): Promise<DelayProxy> {
  const sockets = new Set<Socket>();
  const forward = (from: Socket, to: Socket) => {
    let due = 0; // chunks leave in order even when the delay changes
    from.on('data', (chunk) => {
      due = Math.max(Date.now() + proxy.delayMs, due);
      setTimeout(() => to.destroyed || to.write(chunk), due - Date.now());
    });
    from.on('close', () => setTimeout(() => to.destroy(), Math.max(0, due - Date.now())));
    from.on('error', () => to.destroy());
  };
  const server = createServer((client) => {
    const upstream = createConnection({ host: '127.0.0.1', port: targetPort });
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on('close', () => sockets.delete(s));
    }
    forward(client, upstream);
    forward(upstream, client);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const proxy: DelayProxy = {
    port: (server.address() as { port: number }).port,
    delayMs,
    close: () => {
      for (const s of sockets) s.destroy();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  return proxy;
}

/**
 * - `pass`: forwards everything.
 * - `busy`: answers every request 503 ServerBusy, as a throttled storage account does.
 * - `holdCommit`: forwards reads; holds entity-group transactions unanswered.
 * - `loseCommitAnswer`: forwards transactions to storage (so they land) but never answers them.
 * - `blackhole`: holds every request unanswered, reads included, as a storage account that has stopped
 *   answering but still accepts connections.
 * - `stallOnCommitAnswer`: forwards transactions (so they land) and relays storage's answer, then holds
 *   this whole process up for `stallMs`, as a machine that stops running the service just as storage
 *   answers: its deadline falls due before it reads the answer.
 */
export type FaultMode = 'pass' | 'busy' | 'holdCommit' | 'loseCommitAnswer' | 'blackhole' | 'stallOnCommitAnswer';

/** A request the proxy left unanswered, and when the client gave up on it by closing its connection. */
export interface UnansweredRequest {
  readonly kind: 'read' | 'commit' | 'other';
  /** Date.now() when it arrived. */
  readonly arrivedAt: number;
  /** Date.now() when its connection closed; the proxy never closes one itself before `close()`. */
  closedAt?: number;
}

export interface FaultProxy extends Proxy {
  mode: FaultMode;
  /** How long `stallOnCommitAnswer` holds the process up. */
  stallMs: number;
  /**
   * Holds forwarded answers until this many requests are in flight at once (or 3 s have passed),
   * then opens for good: calls made in parallel are all seen together; calls in sequence never are.
   */
  gate: number;
  /** Requests seen, by kind. */
  readonly counts: { reads: number; commits: number; other: number };
  /** The most requests in flight at once; reset it to 0 to measure one exchange. */
  maxInFlight: number;
  /** Kinds in arrival order, each with its table and how many requests were already answered then. */
  readonly arrivals: { kind: 'read' | 'commit' | 'other'; table: string; answeredBefore: number }[];
  /** TCP connections accepted so far, and how many are open now. */
  readonly connections: { opened: number; open: number };
  /** Requests seen and not yet answered or given up on (their connection closed). */
  readonly inFlight: number;
  /** Every request a `holdCommit`, `loseCommitAnswer` or `blackhole` mode left unanswered, in arrival order. */
  readonly unanswered: UnansweredRequest[];
  /**
   * Tables whose queries storage answers first with no rows and a continuation, as Table Storage may ("Query
   * Timeout and Pagination": "It is possible for a query to return no results but to still return a
   * continuation header"): the query gets an empty page with `x-ms-continuation-NextPartitionKey` and
   * `-NextRowKey`; the request that follows them is forwarded without them, so storage answers it whole.
   */
  emptyFirstPages: ReadonlySet<string>;
  /** How many empty pages with a continuation the proxy answered. */
  emptyPagesAnswered: number;
}

/** The JSON body Table Storage answers an error with. */
export function storageErrorBody(code: string, message: string): string {
  return JSON.stringify({ 'odata.error': { code, message: { lang: 'en-US', value: message } } });
}

/**
 * Table Storage's answer to a throttled request, as its "Common REST API error codes" page lists it:
 * 503 ServerBusy, "The server is currently unable to receive requests. Please retry your request."
 * (https://learn.microsoft.com/rest/api/storageservices/common-rest-api-error-codes). Azure sends no
 * Retry-After with it; the SDK's exponential retry is what spaces the retries of reads.
 */
export const THROTTLED_MESSAGE = 'The server is currently unable to receive requests. Please retry your request.';

/** 503 ServerBusy with Table Storage's headers and JSON error, as a throttled account answers. */
export function answerServerBusy(req: IncomingMessage, res: ServerResponse): void {
  res.writeHead(503, {
    'Content-Type': 'application/json;odata=minimalmetadata;streaming=true;charset=utf-8',
    'x-ms-error-code': 'ServerBusy',
    'x-ms-request-id': randomUUID(),
    'x-ms-version': req.headers['x-ms-version'] ?? '2019-02-02',
    Date: new Date().toUTCString(),
  });
  res.end(storageErrorBody('ServerBusy', THROTTLED_MESSAGE));
}

/** A query's page with no rows and a continuation, in Table Storage's JSON and headers (its tokens are opaque). */
function answerEmptyPage(req: IncomingMessage, res: ServerResponse, table: string): void {
  res.writeHead(200, {
    'Content-Type': 'application/json;odata=minimalmetadata;streaming=true;charset=utf-8',
    'x-ms-request-id': randomUUID(),
    'x-ms-version': req.headers['x-ms-version'] ?? '2019-02-02',
    'x-ms-continuation-NextPartitionKey': '1!12!ZW1wdHlwYWdl',
    'x-ms-continuation-NextRowKey': '1!0!',
    Date: new Date().toUTCString(),
  });
  res.end(JSON.stringify({ 'odata.metadata': `http://storage/$metadata#${table}`, value: [] }));
}

/** HTTP proxy in front of storage whose behaviour a test switches with `mode`. */
export async function startFaultProxy(targetPort: number): Promise<FaultProxy> {
  const held: ServerResponse[] = [];
  const send = (req: IncomingMessage, body: Buffer, onAnswer: (answer: IncomingMessage) => void) => {
    const upstream = httpRequest({ host: '127.0.0.1', port: targetPort, method: req.method, path: req.url, headers: req.headers }, onAnswer);
    upstream.on('error', () => undefined);
    upstream.end(body);
  };
  let inFlight = 0;
  let answered = 0;
  const gated: (() => void)[] = [];
  const server = createHttpServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => handle(req, res, Buffer.concat(chunks)));
  });
  const handle = (req: IncomingMessage, res: ServerResponse, body: Buffer) => {
    // A transaction of draws is the commit; one in a key table (names ending in `Keys`) writes a key's rows.
    const commit = (req.url?.includes('$batch') ?? false) && !/Keys\d*\//.test([...transactionCost(body.toString('utf8')).keys()][0] ?? '');
    const kind = commit ? 'commit' : req.method === 'GET' ? 'read' : 'other';
    proxy.counts[kind === 'read' ? 'reads' : kind === 'commit' ? 'commits' : 'other'] += 1;
    // The path's first segment: `/devstoreaccount1/Partners()?…` names the table Partners.
    const table = /^\/[^/]+\/([^/(?]+)/.exec(req.url ?? '')?.[1] ?? '';
    proxy.arrivals.push({ kind, table, answeredBefore: answered });
    proxy.maxInFlight = Math.max(proxy.maxInFlight, ++inFlight);
    res.on('close', () => {
      inFlight -= 1;
      answered += 1;
    });

    if (proxy.mode === 'busy') {
      answerServerBusy(req, res);
      return;
    }
    if (req.method === 'GET' && proxy.emptyFirstPages.has(table) && /(\$|%24)filter=/.test(req.url ?? '')) {
      const url = new URL(req.url ?? '', 'http://storage');
      if (!url.searchParams.has('NextPartitionKey')) {
        proxy.emptyPagesAnswered += 1;
        answerEmptyPage(req, res, table);
        return;
      }
      url.searchParams.delete('NextPartitionKey');
      url.searchParams.delete('NextRowKey');
      req.url = `${url.pathname}${url.search}`;
    }
    const hold = () => {
      const record: UnansweredRequest = { kind, arrivedAt: Date.now() };
      proxy.unanswered.push(record);
      req.socket.once('close', () => (record.closedAt = Date.now()));
      held.push(res);
    };
    if (proxy.mode === 'blackhole' || (commit && proxy.mode === 'holdCommit')) {
      hold();
      return;
    }
    if (commit && proxy.mode === 'stallOnCommitAnswer') {
      send(req, body, (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
        // After the pipe's own 'end' listener: the answer is written to the service's socket, then nothing runs.
        answer.once('end', () => Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, proxy.stallMs));
      });
      return;
    }
    if (commit && proxy.mode === 'loseCommitAnswer') {
      hold();
      send(req, body, (answer) => answer.resume()); // it lands; the service never hears
      return;
    }
    send(req, body, (answer) => {
      const release = () => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      };
      if (inFlight >= proxy.gate) {
        proxy.gate = 0; // opens once
        for (const waiting of gated.splice(0)) waiting();
        release();
        return;
      }
      gated.push(release);
      setTimeout(() => {
        const at = gated.indexOf(release);
        if (at >= 0) gated.splice(at, 1)[0]();
      }, 3_000);
    });
  };
  // Idle connections stay open until the service closes them: Node's server would close them after 5 s, and
  // on a busy machine the pause between two of a test's requests is longer (connections.opened then counts
  // the proxy's closing, not the service's).
  server.keepAliveTimeout = 0;
  server.on('connection', (socket: Socket) => {
    proxy.connections.opened += 1;
    proxy.connections.open += 1;
    socket.once('close', () => (proxy.connections.open -= 1));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const proxy: FaultProxy = {
    port: (server.address() as { port: number }).port,
    mode: 'pass',
    stallMs: 0,
    gate: 0,
    counts: { reads: 0, commits: 0, other: 0 },
    maxInFlight: 0,
    arrivals: [],
    connections: { opened: 0, open: 0 },
    get inFlight() {
      return inFlight;
    },
    unanswered: [],
    emptyFirstPages: new Set(),
    emptyPagesAnswered: 0,
    close: () => {
      for (const res of held) res.destroy();
      server.closeAllConnections();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  return proxy;
}

export interface ThrottleOptions {
  /**
   * Entity operations per second each partition (table and PartitionKey) accepts. Azure's documented
   * target is 2,000 entities per second for a single table partition of 1 KiB entities ("Scalability
   * and performance targets for Table storage",
   * https://learn.microsoft.com/azure/storage/tables/scalability-targets).
   */
  readonly ratePerSecond: number;
  /** The most a partition accepts at once after being idle (the bucket's size); one second's rate by default. */
  readonly burst?: number;
}

/** What one partition was asked for. */
export interface PartitionLoad {
  /** Entity operations forwarded to storage, and refused with 503. */
  accepted: number;
  refused: number;
  /** Requests forwarded, and refused. */
  requests: number;
  refusedRequests: number;
}

export interface ThrottlingProxy extends Proxy {
  ratePerSecond: number;
  burst: number;
  /** By `<table>/<PartitionKey>`, every partition that was charged. */
  readonly partitions: ReadonlyMap<string, PartitionLoad>;
  /** One partition's load (zeros when it was never asked for). */
  load(table: string, partitionKey: string): PartitionLoad;
  /**
   * Point reads: attempts seen, refused, forwarded; and how many distinct entities were refused at
   * least once and later read (a retry that got through).
   */
  readonly reads: { attempts: number; refused: number; forwarded: number; retriedThenServed: number };
  /** Entity-group transactions: attempts, refused, forwarded, and the operations they carried. */
  readonly transactions: { attempts: number; refused: number; forwarded: number; operations: number };
  /** Requests forwarded without a charge: table management, and queries that are not point reads. */
  readonly uncharged: number;
  /** Forgets every count (the partitions' budgets stay as they are). */
  resetCounts(): void;
}

/** An OData string literal's content: quotes doubled inside. */
const LITERAL = "'((?:[^']|'')*)'";
const POINT_FILTER = new RegExp(`^\\s*\\(?\\s*PartitionKey eq ${LITERAL}\\s*\\)?\\s+and\\s+\\(?\\s*RowKey eq ${LITERAL}\\s*\\)?\\s*$`);
const KEYS_IN_PATH = new RegExp(`^PartitionKey=${LITERAL},RowKey=${LITERAL}$`);
const unquote = (literal: string) => literal.replace(/''/g, "'");

/** The table and keys a request's path names: `/<account>/<Table>(…)` (Azurite) or `/<Table>(…)` (Azure). */
function addressOf(path: string): { table: string; keys?: { partitionKey: string; rowKey: string } } | undefined {
  const last = decodeURIComponent(path.split('?')[0].split('/').pop() ?? '');
  const match = /^([A-Za-z][A-Za-z0-9]*)(?:\((.*)\))?$/.exec(last);
  if (match === null || match[1] === 'Tables') return undefined;
  const keys = KEYS_IN_PATH.exec(match[2] ?? '');
  return { table: match[1], keys: keys === null ? undefined : { partitionKey: unquote(keys[1]), rowKey: unquote(keys[2]) } };
}

/** A cost: entity operations per partition (`<table>/<PartitionKey>`). */
type Cost = Map<string, number>;

/**
 * The operations of an entity-group transaction (a multipart/mixed body whose changeset holds one
 * HTTP request per operation): each one's table, and its PartitionKey from its URL or its JSON body.
 */
export function transactionCost(body: string): Cost {
  const cost: Cost = new Map();
  let pending: { table: string; partitionKey?: string } | undefined;
  const settle = () => {
    if (pending === undefined) return;
    const key = `${pending.table}/${pending.partitionKey ?? '?'}`;
    cost.set(key, (cost.get(key) ?? 0) + 1);
    pending = undefined;
  };
  for (const line of body.split(/\r?\n/)) {
    const operation = /^(?:POST|PUT|MERGE|PATCH|DELETE|GET) (\S+) HTTP\/1\.1$/.exec(line);
    if (operation !== null) {
      settle();
      const address = addressOf(new URL(operation[1], 'http://storage').pathname);
      pending = { table: address?.table ?? '?', partitionKey: address?.keys?.partitionKey };
      continue;
    }
    if (pending !== undefined && pending.partitionKey === undefined && line.startsWith('{')) {
      try {
        const entity = JSON.parse(line) as { PartitionKey?: unknown };
        if (typeof entity.PartitionKey === 'string') pending.partitionKey = entity.PartitionKey;
      } catch {
        // not an entity: charged to partition '?'
      }
    }
  }
  settle();
  return cost;
}

/**
 * HTTP proxy in front of storage that throttles as Table Storage does: every partition (table and
 * PartitionKey) has a budget of entity operations per second, a token bucket of `burst` refilled at
 * `ratePerSecond`. What is charged, as Microsoft documents the targets ("Performance and scalability
 * checklist for Table storage": the per-partition target counts entities, and "the table scalability
 * targets ... relate to the number of entities scanned, and not the number of entities returned";
 * an entity-group transaction is one billed transaction of up to 100 operations):
 *
 * - a point read (a GET whose `$filter` is `PartitionKey eq … and RowKey eq …`, or of
 *   `Table(PartitionKey='…',RowKey='…')`): 1 entity of its partition;
 * - an insert (POST to the table, the PartitionKey in its JSON body) and an update, merge or delete
 *   of one entity: 1;
 * - an entity-group transaction (`$batch`): 1 per operation of its changeset, to each operation's partition.
 *
 * A request is admitted while every partition it charges has budget left (more than 0), and its whole
 * cost is taken, which may leave the partition in debt until the refill covers it: a transaction of 100
 * is not starved by single reads that each fit, and over any T seconds a partition accepts at most
 * `burst + ratePerSecond × T` plus one request's cost. A refused request is answered 503 ServerBusy
 * with Table Storage's headers and JSON error, and is not forwarded. Queries that are not point reads
 * and table management are forwarded uncharged (this service makes none on its request path).
 */
export async function startThrottlingProxy(targetPort: number, options: ThrottleOptions): Promise<ThrottlingProxy> {
  const buckets = new Map<string, { tokens: number; at: number }>();
  const partitions = new Map<string, PartitionLoad>();
  const refusedReads = new Set<string>();
  const servedAfterRefusal = new Set<string>();

  const budget = (key: string, now: number) => {
    let bucket = buckets.get(key);
    if (bucket === undefined) {
      bucket = { tokens: proxy.burst, at: now };
      buckets.set(key, bucket);
    }
    bucket.tokens = Math.min(proxy.burst, bucket.tokens + ((now - bucket.at) * proxy.ratePerSecond) / 1000);
    bucket.at = now;
    return bucket;
  };
  const noLoad = (): PartitionLoad => ({ accepted: 0, refused: 0, requests: 0, refusedRequests: 0 });
  const loadOf = (key: string) => {
    let load = partitions.get(key);
    if (load === undefined) {
      load = noLoad();
      partitions.set(key, load);
    }
    return load;
  };
  /** Charges `cost` if every partition in it has budget; false (and counted as refused) otherwise. */
  const admit = (cost: Cost): boolean => {
    const now = performance.now();
    const admitted = [...cost.keys()].every((key) => budget(key, now).tokens > 0);
    for (const [key, entities] of cost) {
      const load = loadOf(key);
      if (admitted) {
        budget(key, now).tokens -= entities;
        load.accepted += entities;
        load.requests += 1;
      } else {
        load.refused += entities;
        load.refusedRequests += 1;
      }
    }
    return admitted;
  };

  const forward = (req: IncomingMessage, res: ServerResponse, body?: Buffer) => {
    const upstream = httpRequest({ host: '127.0.0.1', port: targetPort, method: req.method, path: req.url, headers: req.headers }, (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    });
    upstream.on('error', () => res.destroy());
    if (body === undefined) req.pipe(upstream);
    else upstream.end(body);
  };

  const server = createHttpServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://storage');
    const address = addressOf(url.pathname);
    if (req.method === 'GET') {
      const point = address?.keys ?? pointFilter(url.searchParams.get('$filter'));
      if (address === undefined || point === undefined) {
        proxy.uncharged += 1;
        forward(req, res);
        return;
      }
      const key = `${address.table}/${point.partitionKey}`;
      const entity = `${key}/${point.rowKey}`;
      proxy.reads.attempts += 1;
      if (!admit(new Map([[key, 1]]))) {
        proxy.reads.refused += 1;
        refusedReads.add(entity);
        req.resume();
        answerServerBusy(req, res);
        return;
      }
      proxy.reads.forwarded += 1;
      if (refusedReads.has(entity) && !servedAfterRefusal.has(entity)) {
        servedAfterRefusal.add(entity);
        proxy.reads.retriedThenServed += 1;
      }
      forward(req, res);
      return;
    }
    // Writes: the body names the partition of an insert and every operation of a transaction.
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      let cost: Cost | undefined;
      const isTransaction = url.pathname.endsWith('/$batch');
      if (isTransaction) cost = transactionCost(body.toString('utf8'));
      else if (address?.keys !== undefined) cost = new Map([[`${address.table}/${address.keys.partitionKey}`, 1]]);
      else if (address !== undefined && req.method === 'POST') {
        try {
          const entity = JSON.parse(body.toString('utf8')) as { PartitionKey?: unknown };
          if (typeof entity.PartitionKey === 'string') cost = new Map([[`${address.table}/${entity.PartitionKey}`, 1]]);
        } catch {
          cost = undefined;
        }
      }
      if (cost === undefined) {
        proxy.uncharged += 1;
        forward(req, res, body);
        return;
      }
      if (isTransaction) {
        proxy.transactions.attempts += 1;
        proxy.transactions.operations += [...cost.values()].reduce((a, b) => a + b, 0);
      }
      if (!admit(cost)) {
        if (isTransaction) proxy.transactions.refused += 1;
        answerServerBusy(req, res);
        return;
      }
      if (isTransaction) proxy.transactions.forwarded += 1;
      forward(req, res, body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));

  const proxy = {
    port: (server.address() as { port: number }).port,
    ratePerSecond: options.ratePerSecond,
    burst: options.burst ?? options.ratePerSecond,
    partitions,
    load: (table: string, partitionKey: string): PartitionLoad => ({
      ...(partitions.get(`${table}/${partitionKey}`) ?? noLoad()),
    }),
    reads: { attempts: 0, refused: 0, forwarded: 0, retriedThenServed: 0 },
    transactions: { attempts: 0, refused: 0, forwarded: 0, operations: 0 },
    uncharged: 0,
    resetCounts: () => {
      partitions.clear();
      refusedReads.clear();
      servedAfterRefusal.clear();
      Object.assign(proxy.reads, { attempts: 0, refused: 0, forwarded: 0, retriedThenServed: 0 });
      Object.assign(proxy.transactions, { attempts: 0, refused: 0, forwarded: 0, operations: 0 });
      proxy.uncharged = 0;
    },
    close: () => {
      server.closeAllConnections();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  return proxy;
}

/** The keys of a point-read `$filter`; undefined for any other filter. */
function pointFilter(filter: string | null): { partitionKey: string; rowKey: string } | undefined {
  const match = filter === null ? null : POINT_FILTER.exec(filter);
  return match === null ? undefined : { partitionKey: unquote(match[1]), rowKey: unquote(match[2]) };
}

export interface RecordingProxy extends Proxy {
  /** Every request that reached the proxy, in order: its method and path (decoded, without the query). */
  readonly requests: Array<{ readonly method: string; readonly path: string }>;
  /** Answers a request itself, instead of storage, when it returns true (a fault Azurite cannot produce). */
  intercept?: (req: IncomingMessage, res: ServerResponse) => boolean;
}

/**
 * A TLS proxy in front of an Azurite that serves HTTPS (a bearer token travels over TLS only): records each
 * request, then forwards it as it came. `tls` is the proxy's key and certificate and the CA Azurite's is from.
 */
export async function startRecordingTlsProxy(targetPort: number, tls: { key: string; cert: string; ca: string }): Promise<RecordingProxy> {
  const server = createHttpsServer({ key: tls.key, cert: tls.cert }, (req, res) => {
    proxy.requests.push({ method: req.method ?? '', path: decodeURIComponent(new URL(req.url ?? '', 'https://storage').pathname) });
    if (proxy.intercept?.(req, res) === true) {
      req.resume();
      return;
    }
    const upstream = httpsRequest({ host: '127.0.0.1', port: targetPort, method: req.method, path: req.url, headers: req.headers, ca: tls.ca }, (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    });
    upstream.on('error', () => res.destroy());
    req.pipe(upstream);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const proxy: RecordingProxy = {
    port: (server.address() as { port: number }).port,
    requests: [],
    close: () => {
      server.closeAllConnections();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  return proxy;
}
