/**
 * Azurite's Table service as a child process: the real Table Storage API on this machine,
 * for `npm start`, the tests and the benchmark. In memory and without telemetry (no internet here).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** Azurite's well-known development account (public, documented by Microsoft; not a secret). */
const DEV_ACCOUNT = 'devstoreaccount1';
const DEV_KEY = 'Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==';

export interface Azurite {
  readonly port: number;
  readonly pid: number;
  readonly connectionString: string;
  /** Stops the process: SIGINT lets Azurite close cleanly (and save to disk); `abrupt` kills it. */
  stop(abrupt?: boolean): Promise<void>;
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

export function connectionStringFor(port: number, protocol: 'http' | 'https' = 'http'): string {
  return `DefaultEndpointsProtocol=${protocol};AccountName=${DEV_ACCOUNT};AccountKey=${DEV_KEY};TableEndpoint=${protocol}://127.0.0.1:${port}/${DEV_ACCOUNT};`;
}

export interface AzuriteOptions {
  /** Port to listen on; a free one when omitted. */
  readonly port?: number;
  /** Keep data on disk in this folder (so it survives a restart) instead of in memory. */
  readonly location?: string;
  /**
   * Serve HTTPS with this key and certificate (PEM files) and accept Microsoft Entra bearer tokens besides
   * the account key (Azurite's OAuth "basic": issuer, audience and lifetime checked, not the signature).
   */
  readonly tls?: { readonly key: string; readonly cert: string };
}

/**
 * Starts Azurite Table and resolves once it accepts requests. A free port it chose itself may be taken
 * by another process before Azurite listens on it: then it tries another, twice at most.
 */
export async function startAzurite(options: AzuriteOptions = {}): Promise<Azurite> {
  for (let attempt = 1; ; attempt += 1) {
    try {
      return await startAzuriteOn(options.port ?? (await freePort()), options);
    } catch (error) {
      if (options.port !== undefined || attempt === 3) throw error;
    }
  }
}

async function startAzuriteOn(chosen: number, options: AzuriteOptions): Promise<Azurite> {
  const workDir = mkdtempSync(join(tmpdir(), 'azurite-')); // Azurite may write debug files to its cwd
  const main = require.resolve('azurite/dist/src/table/main.js');
  const persistence = options.location === undefined ? ['--inMemoryPersistence'] : ['--location', options.location];
  const tls = options.tls === undefined ? [] : ['--cert', options.tls.cert, '--key', options.tls.key, '--oauth', 'basic'];
  const child: ChildProcess = spawn(
    process.execPath,
    [main, ...persistence, ...tls, '--disableTelemetry', '--skipApiVersionCheck', '--silent', '--tableHost', '127.0.0.1', '--tablePort', String(chosen)],
    { cwd: workDir, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let output = '';
  await new Promise<void>((resolve, reject) => {
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      if (output.includes('successfully started')) resolve();
    };
    child.stdout?.on('data', onData);
    child.stderr?.on('data', onData);
    child.once('exit', (code) => {
      rmSync(workDir, { recursive: true, force: true });
      reject(new Error(`Azurite exited (${code}) before starting: ${output.trim()}`));
    });
  });
  child.removeAllListeners('exit');
  return {
    port: chosen,
    pid: child.pid as number,
    connectionString: connectionStringFor(chosen, options.tls === undefined ? 'http' : 'https'),
    stop: (abrupt = false) =>
      new Promise<void>((resolve) => {
        const done = () => {
          rmSync(workDir, { recursive: true, force: true });
          resolve();
        };
        if (child.exitCode !== null || child.signalCode !== null) return done();
        child.once('exit', done);
        child.kill(abrupt ? 'SIGKILL' : 'SIGINT');
      }),
  };
}
