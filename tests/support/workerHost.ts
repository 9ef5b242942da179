/**
 * A test stand-in for the Azure Functions host: it drives the real Node.js language worker over
 * gRPC the way the host does (vendor/azure-functions-nodejs-worker/README.md): it listens on 127.0.0.1,
 * starts the worker with the host's arguments, environment and working directory, and exchanges
 * StreamingMessages on FunctionRpc.EventStream: init, functions metadata, load, invocations with
 * RpcHttp, terminate. What the .NET host adds beyond that (routing, function keys, host.json) is not
 * here. The worker's own `rpcLog` messages and output are kept for the tests to read.
 */
import { loadPackageDefinition, Server, ServerCredentials, type ServerDuplexStream } from '@grpc/grpc-js';
import { loadSync } from '@grpc/proto-loader';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';

// tests/support/ from the sources (Jest), dist/tests/support/ once compiled (the bench).
const ROOT = existsSync(join(__dirname, '..', '..', 'package.json')) ? resolve(__dirname, '..', '..') : resolve(__dirname, '..', '..', '..');
const WORKER_ENTRY = join('dist', 'src', 'nodejsWorker.js');
/** What the host announces; any 4.x host version behaves the same for this protocol. */
const HOST_VERSION = '4.1037.0.0';
const MAX_MESSAGE = 2147483647;
const REPLY_TIMEOUT_MS = 20_000;

/**
 * The worker's arguments before the host's: its entry, or, on a Node major the entry's own list refuses
 * (the vendored 3.9.1 lists v14 to v22), tests/support/unlistedNodeEntry.cjs loading the same bundle.
 */
function entryArguments(workerDir: string, node: string): string[] {
  const entry = join(workerDir, WORKER_ENTRY);
  const major = majors.get(node) ?? spawnSync(node, ['-p', 'process.versions.node.split(".")[0]'], { encoding: 'utf8' }).stdout.trim();
  majors.set(node, major);
  const listed = /supportedVersions = \[([^\]]*)\]/.exec(readFileSync(entry, 'utf8'))?.[1].includes(`'v${major}'`) ?? true;
  return listed ? [entry] : [join(ROOT, 'tests', 'support', 'unlistedNodeEntry.cjs'), join(workerDir, 'dist', 'src', 'worker-bundle.js')];
}
const majors = new Map<string, string>();

/** The worker the repository carries (its README says which build it is and how to update it). */
export const VENDORED_WORKER_DIR = join(ROOT, 'vendor', 'azure-functions-nodejs-worker');
/**
 * The host–worker protocol this host speaks, from the vendored worker's sources: a worker built for
 * the host (such as Core Tools' workers/node) ships without them.
 */
const PROTOS_DIR = join(VENDORED_WORKER_DIR, 'protos');

/**
 * The worker folder: FUNCTIONS_NODE_WORKER_DIR when set (to try another build, such as Core Tools'
 * workers/node), else the vendored one. A folder without the worker is an error, not a skip: these
 * tests are the only ones that run the shipped package as Azure runs it.
 */
export function findWorkerDir(env: NodeJS.ProcessEnv = process.env): string {
  const dir = env.FUNCTIONS_NODE_WORKER_DIR?.trim() || VENDORED_WORKER_DIR;
  if (existsSync(join(dir, WORKER_ENTRY))) return dir;
  throw new Error(
    `No Azure Functions Node.js worker in ${dir} (no ${WORKER_ENTRY}). ` +
      (dir === VENDORED_WORKER_DIR
        ? 'The repository carries it: restore vendor/azure-functions-nodejs-worker from git.'
        : 'FUNCTIONS_NODE_WORKER_DIR must name a worker folder; unset it to use the vendored worker.'),
  );
}

// Messages as @grpc/proto-loader gives them (camelCase fields, enums as names, oneof name in `content`).
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Message = Record<string, any>;

export interface RpcLogEntry {
  readonly level: string;
  /** The function's name for its invocations' lines, else the worker's own category. */
  readonly category: string;
  /** `User` (the app) or `System` (the worker). */
  readonly logCategory: string;
  readonly message: string;
  readonly invocationId?: string;
}

export interface FunctionMetadata {
  readonly name: string;
  readonly functionId: string;
  /** `rawBindings`, parsed. */
  readonly bindings: Record<string, unknown>[];
  readonly raw: Message;
}

export interface InvokeRequest {
  readonly method: string;
  readonly url: string;
  readonly headers?: Record<string, string>;
  readonly body?: Buffer | string;
  readonly traceParent?: string;
}

export interface InvokeReply {
  /** Generated for the call, as the host does; the function sees it as `context.invocationId`. */
  readonly invocationId: string;
  readonly status: number;
  /** Lower-case names. */
  readonly headers: Record<string, string>;
  readonly body: Buffer;
  /** The invocation's StatusResult: a `Failure` is answered 500 with no body by the host. */
  readonly result: Message;
}

export interface WorkerHostOptions {
  /** The function app folder: package.json, host.json and what `main` loads. */
  readonly appDir: string;
  /** App settings: the worker's whole environment, with FUNCTIONS_WORKER_RUNTIME and AzureWebJobsScriptRoot. */
  readonly settings: Record<string, string>;
  readonly workerDir?: string;
  /**
   * Node.js options, as the app setting `languageWorkers__node__arguments` gives them: the host splits
   * its value on whitespace and puts the parts on the node command line before the worker script
   * (`node <arguments> <worker script> <worker arguments> --host …`).
   */
  readonly nodeArgs?: readonly string[];
  /** The node executable (default: this process's). */
  readonly node?: string;
}

export class WorkerHost {
  readonly logs: RpcLogEntry[] = [];
  /** The worker process's stdout and stderr, which the real host copies to its own log. */
  output = '';
  private stream?: ServerDuplexStream<Message, Message>;
  private readonly waiting = new Map<string, { resolve: (m: Message) => void; reject: (e: Error) => void }>();
  private functions: FunctionMetadata[] = [];
  private readonly exited: Promise<number | null>;

  private constructor(
    private readonly server: Server,
    private readonly child: ChildProcess,
    readonly workerDir: string,
    readonly appDir: string,
  ) {
    child.stdout?.on('data', (chunk: Buffer) => (this.output += chunk.toString()));
    child.stderr?.on('data', (chunk: Buffer) => (this.output += chunk.toString()));
    this.exited = new Promise((resolve) => child.once('exit', (code) => resolve(code)));
    void this.exited.then((code) => {
      for (const [key, waiter] of this.waiting) waiter.reject(new Error(`the worker exited (${code}) while ${key} was awaited:\n${this.output}`));
      this.waiting.clear();
      this.server.forceShutdown();
    });
  }

  /** Listens, starts the worker and resolves once it has opened the stream (startStream). */
  static async start(options: WorkerHostOptions): Promise<WorkerHost> {
    const workerDir = options.workerDir ?? findWorkerDir();
    const definition = loadSync(join(PROTOS_DIR, 'FunctionRpc.proto'), {
      includeDirs: [PROTOS_DIR],
      enums: String,
      longs: Number,
      defaults: true,
      oneofs: true,
    });
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    const rpc = (loadPackageDefinition(definition) as any).AzureFunctionsRpcMessages.FunctionRpc;
    const server = new Server({ 'grpc.max_receive_message_length': MAX_MESSAGE, 'grpc.max_send_message_length': MAX_MESSAGE });
    let connect: (stream: ServerDuplexStream<Message, Message>) => void = () => undefined;
    const connected = new Promise<ServerDuplexStream<Message, Message>>((resolve) => (connect = resolve));
    server.addService(rpc.service, { EventStream: (stream: ServerDuplexStream<Message, Message>) => connect(stream) });
    const port = await new Promise<number>((resolve, reject) =>
      server.bindAsync('127.0.0.1:0', ServerCredentials.createInsecure(), (error, bound) => (error ? reject(error) : resolve(bound))),
    );

    const workerId = randomUUID();
    const requestId = randomUUID();
    const uri = `http://127.0.0.1:${port}/`;
    // The arguments the host passes: the legacy ones, then the same again as --functions-* (README, step 1).
    const args = [
      ...['--host', '127.0.0.1', '--port', String(port), '--workerId', workerId, '--requestId', requestId, '--grpcMaxMessageLength', String(MAX_MESSAGE)],
      ...['--functions-uri', uri, '--functions-worker-id', workerId, '--functions-request-id', requestId],
      ...['--functions-grpc-max-message-length', String(MAX_MESSAGE)],
    ];
    const node = options.node ?? process.execPath;
    const child = spawn(node, [...(options.nodeArgs ?? []), ...entryArguments(workerDir, node), ...args], {
      cwd: options.appDir,
      env: { ...options.settings, FUNCTIONS_WORKER_RUNTIME: 'node', AzureWebJobsScriptRoot: options.appDir },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const host = new WorkerHost(server, child, workerDir, options.appDir);
    const stream = await Promise.race([connected, host.exited.then((code) => Promise.reject(new Error(`the worker exited (${code}):\n${host.output}`)))]);
    host.attach(stream);
    const start = await host.reply('startStream');
    if (start.startStream.workerId !== workerId) throw new Error(`startStream from worker ${start.startStream.workerId}, expected ${workerId}`);
    return host;
  }

  /** workerInitRequest: the worker loads the app's `main` here. */
  async init(): Promise<Message> {
    const capabilities = { MultiStream: '10' };
    this.send({ workerInitRequest: { hostVersion: HOST_VERSION, capabilities, workerDirectory: this.workerDir, functionAppDirectory: this.appDir } });
    return (await this.reply('workerInitResponse')).workerInitResponse as Message;
  }

  /** functionsMetadataRequest: the functions the app registered, with their bindings parsed. */
  async metadata(): Promise<{ response: Message; functions: FunctionMetadata[] }> {
    this.send({ functionsMetadataRequest: { functionAppDirectory: this.appDir } });
    const response = (await this.reply('functionMetadataResponse')).functionMetadataResponse;
    this.functions = (response.functionMetadataResults as Message[]).map((raw) => ({
      name: raw.name,
      functionId: raw.functionId,
      bindings: (raw.rawBindings as string[]).map((b) => JSON.parse(b) as Record<string, unknown>),
      raw,
    }));
    return { response, functions: this.functions };
  }

  /** functionLoadRequest for each function of the last metadata(); the load responses. */
  async load(): Promise<Message[]> {
    const responses: Message[] = [];
    for (const f of this.functions) {
      this.send({ functionLoadRequest: { functionId: f.functionId, metadata: f.raw } });
      responses.push((await this.reply(`functionLoadResponse ${f.functionId}`)).functionLoadResponse);
    }
    return responses;
  }

  /** An invocationRequest carrying `request` as RpcHttp, to the function named `functionName`. */
  async invoke(request: InvokeRequest, functionName = 'DrawRequest'): Promise<InvokeReply> {
    const target = this.functions.find((f) => f.name === functionName);
    if (target === undefined) throw new Error(`no function ${functionName} was indexed and loaded`);
    const trigger = target.bindings.find((b) => b.type === 'httpTrigger');
    const invocationId = randomUUID();
    const nullable = (entries: Iterable<[string, string]>) => Object.fromEntries([...entries].map(([k, v]) => [k, { value: v }]));
    const headers = Object.entries(request.headers ?? {}).map(([k, v]) => [k.toLowerCase(), v] as [string, string]);
    const http = {
      method: request.method,
      url: request.url,
      nullableHeaders: nullable(headers),
      nullableQuery: nullable(new URL(request.url).searchParams),
      nullableParams: {},
      identities: [],
      body: { bytes: Buffer.from(request.body ?? '') },
    };
    this.send({
      invocationRequest: {
        invocationId,
        functionId: target.functionId,
        inputData: [{ name: trigger?.name, data: { http } }],
        triggerMetadata: {},
        traceContext: { traceParent: request.traceParent ?? '', traceState: '', attributes: {} },
      },
    });
    const response = (await this.reply(`invocationResponse ${invocationId}`)).invocationResponse;
    if (response.result.status !== 'Success') return { invocationId, status: 500, headers: {}, body: Buffer.alloc(0), result: response.result };
    const out = response.returnValue?.http ?? {};
    const replyHeaders = Object.fromEntries(Object.entries((out.headers ?? {}) as Record<string, string>).map(([k, v]) => [k.toLowerCase(), v]));
    return { invocationId, status: Number(out.statusCode || 200), headers: replyHeaders, body: Buffer.from(out.body?.bytes ?? []), result: response.result };
  }

  /**
   * workerTerminate with this grace period; resolves with the exit code. As the host does, the
   * process is killed when it outlives the grace period (the code is then null).
   */
  async terminate(gracePeriodMs: number): Promise<number | null> {
    this.send({ workerTerminate: { gracePeriod: { seconds: Math.floor(gracePeriodMs / 1000), nanos: (gracePeriodMs % 1000) * 1e6 } } });
    const timer = setTimeout(() => this.child.kill('SIGKILL'), gracePeriodMs);
    try {
      return await this.exited;
    } finally {
      clearTimeout(timer);
    }
  }

  /** The worker's process id (the benchmark reads its CPU time and memory from /proc). */
  get pid(): number {
    return this.child.pid as number;
  }

  /** The worker process's resident set now, MiB (Linux: /proc). */
  rssMiB(): number {
    return this.memoryMiB('VmRSS');
  }

  /** The worker process's peak resident set so far (VmHWM), MiB. */
  peakRssMiB(): number {
    return this.memoryMiB('VmHWM');
  }

  private memoryMiB(field: 'VmRSS' | 'VmHWM'): number {
    const status = readFileSync(`/proc/${this.child.pid}/status`, 'utf8');
    return Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1]) / 1024;
  }

  /** Kills the worker (no-op when it has exited) and stops listening. */
  async kill(): Promise<void> {
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill('SIGKILL');
    await this.exited;
  }

  private attach(stream: ServerDuplexStream<Message, Message>): void {
    this.stream = stream;
    stream.on('data', (message: Message) => {
      const content = message.content as string;
      if (content === 'rpcLog') {
        const log = message.rpcLog as Message;
        this.logs.push({
          level: log.level,
          category: log.category,
          logCategory: log.logCategory,
          message: log.message,
          invocationId: log.invocationId || undefined,
        });
        return;
      }
      const body = message[content] as Message;
      const key =
        content === 'invocationResponse' ? `${content} ${body.invocationId}` : content === 'functionLoadResponse' ? `${content} ${body.functionId}` : content;
      const waiter = this.waiting.get(key);
      this.waiting.delete(key);
      waiter?.resolve(message);
    });
    stream.on('error', () => undefined); // the worker going away ends the test through `exited`
  }

  private send(message: Message): void {
    if (this.stream === undefined) throw new Error('the worker has not opened its stream');
    this.stream.write({ requestId: randomUUID(), ...message });
  }

  /** The next message of this kind (and invocation or function id), within REPLY_TIMEOUT_MS. */
  private reply(key: string): Promise<Message> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiting.delete(key);
        reject(new Error(`no ${key} from the worker within ${REPLY_TIMEOUT_MS} ms:\n${this.output}`));
      }, REPLY_TIMEOUT_MS);
      this.waiting.set(key, {
        resolve: (m) => {
          clearTimeout(timer);
          resolve(m);
        },
        reject: (e) => {
          clearTimeout(timer);
          reject(e);
        },
      });
    });
  }
}
