/** The dev host as `npm start` runs it: the compiled entry in its own process (`npm test` builds first). */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { freePort } from '../../scripts/azurite';

export interface DevHostProcess {
  readonly url: string;
  readonly port: number;
  /** Everything it printed so far. */
  output(): string;
  /** SIGTERM, then its exit code. */
  stop(): Promise<number | null>;
}

export const DEV_HOST_ENTRY = join(__dirname, '..', '..', 'dist', 'scripts', 'devHost.js');

export async function spawnDevHost(env: Record<string, string> = {}): Promise<DevHostProcess> {
  if (!existsSync(DEV_HOST_ENTRY)) throw new Error(`${DEV_HOST_ENTRY} is missing: run \`npm run build\` (npm test does)`);
  const port = await freePort();
  const child = spawn(process.execPath, [DEV_HOST_ENTRY], {
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', PORT: String(port), ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (c: Buffer) => (output += c.toString()));
  child.stderr.on('data', (c: Buffer) => (output += c.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no "listening on" within 30 s:\n${output}`)), 30_000);
    const check = () => {
      if (output.includes('listening on')) {
        clearTimeout(timer);
        resolve();
      }
    };
    child.stdout.on('data', check);
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`dev host exited (${code}) before listening:\n${output}`));
    });
  });
  return {
    url: `http://127.0.0.1:${port}/DrawRequest`,
    port,
    output: () => output,
    stop: () => {
      if (child.exitCode === null) child.kill('SIGTERM');
      return exited;
    },
  };
}
