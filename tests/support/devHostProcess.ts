/**
 * The dev host as `npm start` runs it: the compiled entry in its own process. Used by the tests,
 * the soak and the benchmark, which all need a real process to send HTTP to and measure.
 */
import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { freePort } from '../../dev/azurite';

export interface DevHostProcess {
  /** `http://127.0.0.1:<port>/DrawRequest`, as the host printed it. */
  readonly url: string;
  readonly pid: number;
  /** What it printed, up to the first 64 KiB (a long run prints far more; the start is what is read). */
  output(): string;
  /** Lines it logged at error level, and the first few of them. */
  errorLines(): number;
  errorSamples(): readonly string[];
  /** SIGTERM (SIGKILL after 10 s), then its exit code. */
  stop(): Promise<number | null>;
}

const KEPT_OUTPUT = 64 * 1024;
const KEPT_ERROR_SAMPLES = 10;

/** dist/dev/devHost.js, from this file compiled (dist/tests/support/, for the bench) or as a source run by ts-jest. */
export function devHostEntry(): string {
  const candidates = [join(__dirname, '..', '..', 'dev', 'devHost.js'), join(__dirname, '..', '..', 'dist', 'dev', 'devHost.js')];
  const found = candidates.find((c) => existsSync(c));
  if (found === undefined) throw new Error(`the built dev host is missing (looked for ${candidates.join(', ')}): run \`npm run build\` (npm test does)`);
  return found;
}

/**
 * Starts the dev host with only these settings (plus PATH and HOME) and waits for `listening on`.
 * `nodeArgs` go to Node itself (`--cpu-prof`, for the benchmark).
 */
export async function spawnDevHost(env: Record<string, string> = {}, entry = devHostEntry(), nodeArgs: readonly string[] = []): Promise<DevHostProcess> {
  const child = spawn(process.execPath, [...nodeArgs, entry], {
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', PORT: '0', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  // Read everything it prints (a full pipe would block it); keep only the start and the error lines.
  let output = '';
  let partial = '';
  let errorLines = 0;
  const errorSamples: string[] = [];
  const onOutput = (chunk: Buffer) => {
    const text = chunk.toString();
    if (output.length < KEPT_OUTPUT) output += text;
    const lines = (partial + text).split('\n');
    partial = lines.pop() ?? '';
    for (const line of lines) {
      if (!line.startsWith('[error]')) continue;
      errorLines += 1;
      if (errorSamples.length < KEPT_ERROR_SAMPLES) errorSamples.push(line.slice(0, 300));
    }
  };
  child.stdout.on('data', onOutput);
  child.stderr.on('data', onOutput);
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`dev host: no "listening on" within 30 s:\n${output}`));
    }, 30_000);
    const check = () => {
      const match = /listening on (\S+)/.exec(output);
      if (!match) return;
      clearTimeout(timer);
      child.stdout.off('data', check);
      resolve(match[1]);
    };
    child.stdout.on('data', check);
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`dev host exited (${code}) before listening:\n${output}`));
    });
  });
  return {
    url,
    pid: child.pid as number,
    output: () => output,
    errorLines: () => errorLines,
    errorSamples: () => errorSamples,
    stop: async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      const code = await exited;
      clearTimeout(timer);
      return code;
    },
  };
}

/**
 * The dev host on a port given as `npm start` is given one (PORT, not 0), so that its embedded provider
 * takes the next port as it does on a developer's machine. Either port may be taken by another
 * listener between the probe and the start: then other ports are tried.
 */
export async function spawnDevHostOnFreePort(env: Record<string, string> = {}): Promise<{ host: DevHostProcess; port: number }> {
  for (let attempt = 1; ; attempt += 1) {
    const port = await freePort();
    try {
      return { host: await spawnDevHost({ ...env, PORT: String(port) }), port };
    } catch (error) {
      if (attempt === 3 || !String(error).includes('EADDRINUSE')) throw error;
    }
  }
}

/** CPU time (user + system) a process has used so far, in ms, from /proc (Linux; 10 ms resolution). */
export function cpuMs(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  const ticks = Number(fields[11]) + Number(fields[12]); // utime and stime, fields 14 and 15 of stat
  return (ticks * 1000) / 100; // USER_HZ is 100 on Linux
}

/** VmRSS of a process in MB, from /proc (Linux); NaN where unreadable. */
export function rssMb(pid: number): number {
  try {
    const match = /^VmRSS:\s+(\d+)\s+kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return match ? Number(match[1]) / 1024 : Number.NaN;
  } catch {
    return Number.NaN;
  }
}
