/**
 * Proxies in front of a real Azurite, for the tests and the benchmark: faults Azurite cannot produce
 * on demand (a slow network, 503 answers, transactions that hang or land without their answer
 * reaching the service, storage that stops answering at all), counts of the storage calls that pass
 * through, and when the service closed the connections of the calls it gave up on.
 */
import { createServer as createHttpServer, request as httpRequest, type IncomingMessage, type ServerResponse } from 'node:http';
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
 */
export type FaultMode = 'pass' | 'busy' | 'holdCommit' | 'loseCommitAnswer' | 'blackhole';

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
  /**
   * Holds forwarded answers until this many requests are in flight at once (or 3 s have passed),
   * then opens for good: calls made in parallel are all seen together; calls in sequence never are.
   */
  gate: number;
  /** Requests seen, by kind. */
  readonly counts: { reads: number; commits: number; other: number };
  /** The most requests in flight at once; reset it to 0 to measure one exchange. */
  maxInFlight: number;
  /** Kinds in arrival order, each with how many requests were already answered then. */
  readonly arrivals: { kind: 'read' | 'commit' | 'other'; answeredBefore: number }[];
  /** TCP connections accepted so far, and how many are open now. */
  readonly connections: { opened: number; open: number };
  /** Requests seen and not yet answered or given up on (their connection closed). */
  readonly inFlight: number;
  /** Every request a `holdCommit`, `loseCommitAnswer` or `blackhole` mode left unanswered, in arrival order. */
  readonly unanswered: UnansweredRequest[];
}

const BUSY_BODY = storageErrorBody('ServerBusy', 'The server is busy.');

/** The JSON body Table Storage answers an error with. */
export function storageErrorBody(code: string, message: string): string {
  return JSON.stringify({ 'odata.error': { code, message: { lang: 'en-US', value: message } } });
}

/** HTTP proxy in front of storage whose behaviour a test switches with `mode`. */
export async function startFaultProxy(targetPort: number): Promise<FaultProxy> {
  const held: ServerResponse[] = [];
  const send = (req: IncomingMessage, onAnswer: (answer: IncomingMessage) => void) => {
    const upstream = httpRequest({ host: '127.0.0.1', port: targetPort, method: req.method, path: req.url, headers: req.headers }, onAnswer);
    upstream.on('error', () => undefined);
    req.pipe(upstream);
  };
  let inFlight = 0;
  let answered = 0;
  const gated: (() => void)[] = [];
  const server = createHttpServer((req, res) => {
    const commit = req.url?.includes('$batch') ?? false;
    const kind = commit ? 'commit' : req.method === 'GET' ? 'read' : 'other';
    proxy.counts[kind === 'read' ? 'reads' : kind === 'commit' ? 'commits' : 'other'] += 1;
    proxy.arrivals.push({ kind, answeredBefore: answered });
    proxy.maxInFlight = Math.max(proxy.maxInFlight, ++inFlight);
    res.on('close', () => {
      inFlight -= 1;
      answered += 1;
    });

    if (proxy.mode === 'busy') {
      req.resume();
      res.writeHead(503, { 'Content-Type': 'application/json;odata=minimalmetadata', 'x-ms-error-code': 'ServerBusy' });
      res.end(BUSY_BODY);
      return;
    }
    const hold = () => {
      const record: UnansweredRequest = { kind, arrivedAt: Date.now() };
      proxy.unanswered.push(record);
      req.socket.once('close', () => (record.closedAt = Date.now()));
      held.push(res);
    };
    if (proxy.mode === 'blackhole' || (commit && proxy.mode === 'holdCommit')) {
      hold();
      req.resume();
      return;
    }
    if (commit && proxy.mode === 'loseCommitAnswer') {
      hold();
      send(req, (answer) => answer.resume()); // it lands; the service never hears
      return;
    }
    send(req, (answer) => {
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
  });
  server.on('connection', (socket: Socket) => {
    proxy.connections.opened += 1;
    proxy.connections.open += 1;
    socket.once('close', () => (proxy.connections.open -= 1));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const proxy: FaultProxy = {
    port: (server.address() as { port: number }).port,
    mode: 'pass',
    gate: 0,
    counts: { reads: 0, commits: 0, other: 0 },
    maxInFlight: 0,
    arrivals: [],
    connections: { opened: 0, open: 0 },
    get inFlight() {
      return inFlight;
    },
    unanswered: [],
    close: () => {
      for (const res of held) res.destroy();
      server.closeAllConnections();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  return proxy;
}
