/**
 * An HTTP proxy in front of Azurite that counts storage calls, by kind. That the reads form one
 * parallel round is proven deterministically by tests/integration/storageCalls.test.ts.
 */
import { createServer, request as httpRequest } from 'node:http';

export interface CountingProxy {
  readonly port: number;
  /** Calls since the last reset. */
  calls(): number;
  /** Entity-group transactions since the last reset. */
  transactions(): number;
  reset(): void;
  close(): Promise<void>;
}

export async function startCountingProxy(targetPort: number): Promise<CountingProxy> {
  let calls = 0;
  let transactions = 0;
  const server = createServer((req, res) => {
    calls += 1;
    if (req.url?.includes('$batch')) transactions += 1;
    const upstream = httpRequest({ host: '127.0.0.1', port: targetPort, method: req.method, path: req.url, headers: req.headers }, (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    });
    upstream.on('error', () => res.destroy());
    req.pipe(upstream);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as { port: number }).port,
    calls: () => calls,
    transactions: () => transactions,
    reset: () => {
      calls = 0;
      transactions = 0;
    },
    close: () => {
      server.closeAllConnections();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
