/**
 * Stoplight Prism's validating proxy (the pinned @stoplight/prism-cli, run as its command line) in
 * front of a service: it forwards every exchange, checks the request and the response against
 * docs/openapi.yaml, and reports what breaks it in each response's `sl-violations` header.
 */
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { freePort } from '../../dev/azurite';
import { OPENAPI_PATH } from './contract';

export interface Violation {
  readonly location: string[];
  readonly severity: string;
  readonly code: string | number;
  readonly message: string;
}

export interface PrismProxy {
  /** The proxy's origin, to send requests to instead of the upstream's. */
  readonly origin: string;
  stop(): Promise<void>;
}

const CLI = join(__dirname, '..', '..', 'node_modules', '@stoplight', 'prism-cli', 'dist', 'index.js');

/** The violations Prism reported for one exchange (none: the header is absent). */
export function violationsOf(headers: Headers): Violation[] {
  const header = headers.get('sl-violations');
  return header === null ? [] : (JSON.parse(header) as Violation[]);
}

export async function startPrismProxy(upstreamOrigin: string, document = OPENAPI_PATH): Promise<PrismProxy> {
  const port = await freePort();
  const child = spawn(process.execPath, [CLI, 'proxy', document, upstreamOrigin, '--host', '127.0.0.1', '--port', String(port)], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  await new Promise<void>((resolve, reject) => {
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      if (output.includes('Prism is listening')) resolve();
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    child.once('exit', (code) => reject(new Error(`prism exited (${code}) before listening:\n${output}`)));
    // Generous: it loads and resolves the document first, on a possibly busy machine.
    setTimeout(() => reject(new Error(`prism did not start within 60 s:\n${output}`)), 60_000).unref();
  });
  return {
    origin: `http://127.0.0.1:${port}`,
    stop: async () => {
      child.kill('SIGTERM');
      await exited;
    },
  };
}
