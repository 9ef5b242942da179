/**
 * An HTTP proxy in front of a real Azurite that decides, for each storage request, what the network
 * and the storage account do with it: the faults of docs/contract.md §4.4 and §9 that Azurite cannot
 * produce on demand, chosen per request by the generated histories (tests/support/histories.ts).
 */
import { createServer, request as httpRequest, type IncomingMessage, type ServerResponse } from 'node:http';
import { storageErrorBody, transactionCost } from './storageProxies';

/**
 * - `pass`: forwarded, answered.
 * - `delay`: forwarded after `ms`, answered (past the service's deadline nobody is listening any more).
 * - `hold`: kept until the service gives up on it (its connection closes), then forwarded `ms` later:
 *   a request that reaches storage after its answer was already given.
 * - `status`: answered 503 ServerBusy or 500 InternalError at once, not forwarded.
 * - `applyThen500`: forwarded and applied, then answered 500 OperationTimedOut, which Azure Storage
 *   documents as "may or may not have succeeded".
 * - `resetBefore`: the connection is reset; nothing is forwarded.
 * - `dropAnswer`: forwarded and applied; the connection is reset instead of the answer.
 */
export type Fault =
  | { readonly kind: 'pass' }
  | { readonly kind: 'delay'; readonly ms: number }
  | { readonly kind: 'hold'; readonly ms: number }
  | { readonly kind: 'status'; readonly status: 500 | 503 }
  | { readonly kind: 'applyThen500' }
  | { readonly kind: 'resetBefore' }
  | { readonly kind: 'dropAnswer' };

/**
 * `commit`: an entity-group transaction of draws; `read`: a GET; `write`: any other request (a write of a
 * key's rows, a transaction in its key table, whose names end in `Keys` in every table set the tests use;
 * a single entity's insert, update, delete).
 */
export type StorageRequestKind = 'read' | 'commit' | 'write';

/** The table a transaction writes to: that of its first operation. */
function transactionTable(body: Buffer): string | undefined {
  const first = transactionCost(body.toString('utf8')).keys().next();
  return first.done ? undefined : first.value.split('/')[0];
}

export interface ChaosProxy {
  readonly port: number;
  /** Chooses each request's fault when it arrives, from its kind and its path and query (percent-decoded). */
  decide: (kind: StorageRequestKind, path: string) => Fault;
  /** Faults applied, by kind of request, for a history's summary. */
  readonly applied: Record<string, number>;
  /** Resolves once every request that arrived has been answered, dropped or forwarded and finished. */
  idle(): Promise<void>;
  /** Resolves once every request in the proxy now has reached storage or been dropped (later ones may still come). */
  drained(): Promise<void>;
  /** Commits (transactions of draws) in the proxy now: not yet answered, dropped, or forwarded and finished. */
  readonly commitsInside: number;
  close(): Promise<void>;
}

const HOLD_CAP_MS = 5_000;

const STATUS_ANSWERS = {
  503: { code: 'ServerBusy', body: storageErrorBody('ServerBusy', 'The server is busy.') },
  500: { code: 'InternalError', body: storageErrorBody('InternalError', 'The server encountered an internal error.') },
} as const;

const TIMED_OUT = storageErrorBody('OperationTimedOut', 'The operation may or may not have succeeded.');

function answerError(res: ServerResponse, status: number, code: string, body: string): void {
  if (res.destroyed) return;
  res.writeHead(status, { 'Content-Type': 'application/json;odata=minimalmetadata', 'x-ms-error-code': code });
  res.end(body);
}

export async function startChaosProxy(targetPort: number): Promise<ChaosProxy> {
  let pending = 0;
  let commitsInside = 0;
  let waiters: (() => void)[] = [];
  const settle = () => {
    pending -= 1;
    if (pending === 0) for (const wake of waiters.splice(0)) wake();
  };

  /** Sends the buffered request to storage; resolves with its answer (status, headers, body), or undefined on a network error. */
  const forward = (req: IncomingMessage, body: Buffer) =>
    new Promise<{ status: number; headers: IncomingMessage['headers']; body: Buffer } | undefined>((resolve) => {
      const upstream = httpRequest({ host: '127.0.0.1', port: targetPort, method: req.method, path: req.url, headers: req.headers }, (answer) => {
        const chunks: Buffer[] = [];
        answer.on('data', (c: Buffer) => chunks.push(c));
        answer.on('end', () => resolve({ status: answer.statusCode ?? 502, headers: answer.headers, body: Buffer.concat(chunks) }));
        answer.on('error', () => resolve(undefined));
      });
      upstream.on('error', () => resolve(undefined));
      upstream.end(body);
    });

  const relay = (res: ServerResponse, answer: { status: number; headers: IncomingMessage['headers']; body: Buffer } | undefined) => {
    if (res.destroyed) return;
    if (answer === undefined) {
      res.destroy();
      return;
    }
    res.writeHead(answer.status, answer.headers);
    res.end(answer.body);
  };

  const handle = async (req: IncomingMessage, res: ServerResponse, body: Buffer): Promise<void> => {
    const table = req.url?.includes('$batch') ? (transactionTable(body) ?? '?') : undefined;
    const kind: StorageRequestKind = table === undefined ? (req.method === 'GET' ? 'read' : 'write') : /Keys\d*$/.test(table) ? 'write' : 'commit';
    // A transaction's path names no table: its table is given after it.
    const fault = proxy.decide(kind, `${decodeURIComponent(req.url ?? '')}${table === undefined ? '' : ` ${table}`}`);
    if (kind === 'commit') {
      commitsInside += 1;
      try {
        return await apply(req, res, body, kind, fault);
      } finally {
        commitsInside -= 1;
      }
    }
    return apply(req, res, body, kind, fault);
  };

  const apply = async (req: IncomingMessage, res: ServerResponse, body: Buffer, kind: StorageRequestKind, fault: Fault): Promise<void> => {
    const label = `${kind}:${fault.kind}`;
    proxy.applied[label] = (proxy.applied[label] ?? 0) + 1;
    switch (fault.kind) {
      case 'pass':
        return relay(res, await forward(req, body));
      case 'delay':
        await new Promise((r) => setTimeout(r, fault.ms));
        return relay(res, await forward(req, body));
      case 'hold': {
        // The service's deadline closes the connection; a request whose caller never gives up goes on after the cap.
        await new Promise<void>((resolve) => {
          const cap = setTimeout(resolve, HOLD_CAP_MS);
          res.once('close', () => {
            clearTimeout(cap);
            resolve();
          });
        });
        await new Promise((r) => setTimeout(r, fault.ms));
        return relay(res, await forward(req, body));
      }
      case 'status': {
        const answer = STATUS_ANSWERS[fault.status];
        return answerError(res, fault.status, answer.code, answer.body);
      }
      case 'applyThen500':
        await forward(req, body);
        return answerError(res, 500, 'OperationTimedOut', TIMED_OUT);
      case 'resetBefore':
        res.destroy();
        return;
      case 'dropAnswer':
        await forward(req, body);
        res.destroy();
        return;
    }
  };

  /** Requests in the proxy now, each settled once it was answered, forwarded or given up. */
  const inProxy = new Set<Promise<void>>();
  const server = createServer((req, res) => {
    pending += 1;
    let done = () => undefined as void;
    const own = new Promise<void>((resolve) => (done = resolve));
    inProxy.add(own);
    const settleOwn = () => {
      inProxy.delete(own);
      done();
      settle();
    };
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('error', () => undefined);
    res.on('error', () => undefined);
    req.on('end', () => {
      handle(req, res, Buffer.concat(chunks)).then(settleOwn, (error: unknown) => {
        settleOwn();
        throw error;
      });
    });
    req.on('aborted', () => {
      // The body never arrived whole: nothing can be forwarded.
      if (!req.complete) settleOwn();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));

  const proxy: ChaosProxy = {
    port: (server.address() as { port: number }).port,
    decide: () => ({ kind: 'pass' }),
    applied: {},
    idle: () => (pending === 0 ? Promise.resolve() : new Promise<void>((resolve) => waiters.push(resolve))),
    drained: () => Promise.all([...inProxy]).then(() => undefined),
    get commitsInside() {
      return commitsInside;
    },
    close: () => {
      server.closeAllConnections();
      waiters = [];
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  return proxy;
}
