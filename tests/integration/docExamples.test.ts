/**
 * Every example exchange of the documents, replayed against `npm start` (issue #33): the requests and
 * answers are read from the documents' fenced code blocks, never restated here, and each document's are
 * sent in its order to a dev host of its own, freshly started, with the dev host's own token (its local
 * Entra ID stand-in and the demo client's secret, fetched by the `curl` it prints). Each answer must have
 * the documented status, headers and body, member order included; only the per-request id (`requestId`,
 * `X-Request-Id`) may differ, and it must be a UUID that the body and the header agree on.
 *
 * What the documents hold:
 * - a request is an `http` block `POST <target>[ HTTP/1.1]`, headers, a blank line and the body as sent;
 *   its `Authorization` is a placeholder, replaced by the dev host's token; every other header is sent;
 * - its answer is the next block after it: an `http` block `HTTP/1.1 <status> <reason>` with headers and
 *   an optional JSON body, or a `json` block holding a problem body (its `status` is the status);
 * - a `json` problem body that follows no request illustrates a shape only and is not replayed.
 */
import { execFile } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { spawnDevHost, type DevHostProcess } from '../support/devHostProcess';

const run = promisify(execFile);
const ROOT = join(__dirname, '..', '..');
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
/** Documents are small; one far larger, or a block far longer, is a mistake to stop at, not to parse. */
const MAX_DOCUMENT_LINES = 5_000;
const MAX_BLOCK_LINES = 200;

interface Block {
  readonly file: string;
  /** 1-based line of the opening fence. */
  readonly line: number;
  readonly lang: string;
  readonly lines: readonly string[];
}

/** The fenced code blocks of a Markdown file, line by line (a fence is a line starting with three backticks). */
function fencedBlocks(file: string): Block[] {
  const lines = readFileSync(join(ROOT, file), 'utf8').split('\n');
  if (lines.length > MAX_DOCUMENT_LINES) throw new Error(`${file}: ${lines.length} lines, more than ${MAX_DOCUMENT_LINES}`);
  const blocks: Block[] = [];
  let open: { line: number; lang: string; lines: string[] } | undefined;
  lines.forEach((text, i) => {
    const fence = text.trimStart().startsWith('```');
    if (open === undefined) {
      if (fence) open = { line: i + 1, lang: text.trimStart().slice(3).trim(), lines: [] };
    } else if (fence) {
      blocks.push({ file, ...open });
      open = undefined;
    } else {
      if (open.lines.length === MAX_BLOCK_LINES) throw new Error(`${file}:${open.line}: a block of more than ${MAX_BLOCK_LINES} lines`);
      open.lines.push(text);
    }
  });
  if (open !== undefined) throw new Error(`${file}:${open.line}: a block that is never closed`);
  return blocks;
}

type Headers = ReadonlyArray<readonly [name: string, value: string]>;

/** An HTTP message as written: its first line, its headers, and its body (the lines after the first blank one). */
function httpMessage(block: Block): { start: string; headers: Headers; body: string } {
  const blank = block.lines.findIndex((l) => l.trim() === '');
  const head = blank === -1 ? block.lines : block.lines.slice(0, blank);
  const headers = head.slice(1).map((l): readonly [string, string] => {
    const colon = l.indexOf(':');
    if (colon < 1) throw new Error(`${block.file}:${block.line}: not a header line: ${l}`);
    return [l.slice(0, colon).trim(), l.slice(colon + 1).trim()];
  });
  return { start: head[0] ?? '', headers, body: blank === -1 ? '' : block.lines.slice(blank + 1).join('\n') };
}

interface DocRequest {
  readonly at: string;
  readonly headers: Headers;
  readonly body: string;
}

interface DocAnswer {
  readonly at: string;
  readonly status: number;
  /** The reason phrase, where the document writes a status line. */
  readonly reason?: string;
  readonly headers: Headers;
  /** The parsed JSON body, or undefined for none. */
  readonly body?: unknown;
}

interface Exchange {
  readonly request: DocRequest;
  readonly answer: DocAnswer;
}

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

function parseJson(text: string, at: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch (error) {
    throw new Error(`${at}: not JSON: ${String(error)}`, { cause: error });
  }
}

function requestOf(block: Block): DocRequest | undefined {
  if (block.lang !== 'http') return undefined;
  const at = `${block.file}:${block.line}`;
  const { start, headers, body } = httpMessage(block);
  const parts = start.split(' ');
  if (parts[0] !== 'POST') return undefined;
  if (parts.length > 3 || !parts[1].endsWith('/DrawRequest') || (parts.length === 3 && parts[2] !== 'HTTP/1.1')) {
    throw new Error(`${at}: a request line other than POST <…>/DrawRequest [HTTP/1.1]: ${start}`);
  }
  return { at, headers, body };
}

function answerOf(block: Block): DocAnswer | undefined {
  const at = `${block.file}:${block.line}`;
  if (block.lang === 'http') {
    const { start, headers, body } = httpMessage(block);
    if (!start.startsWith('HTTP/1.1 ')) return undefined;
    const status = Number(start.slice(9, 12));
    if (!Number.isInteger(status) || start[12] !== ' ') throw new Error(`${at}: not a status line: ${start}`);
    return { at, status, reason: start.slice(13), headers, body: body.trim() === '' ? undefined : parseJson(body, at) };
  }
  if (block.lang === 'json') {
    const body = parseJson(block.lines.join('\n'), at);
    if (!isRecord(body) || typeof body.status !== 'number' || typeof body.type !== 'string') return undefined; // not a whole problem body
    return { at, status: body.status, headers: [], body };
  }
  return undefined;
}

/** A document's exchanges in its order: each request with the block after it as its answer. */
function exchangesOf(file: string): Exchange[] {
  const blocks = fencedBlocks(file);
  const exchanges: Exchange[] = [];
  blocks.forEach((block, i) => {
    const request = requestOf(block);
    if (request === undefined) {
      // An `HTTP/1.1` answer must answer something; a JSON block that follows no request is not read.
      const orphan = block.lang === 'http' && (i === 0 || requestOf(blocks[i - 1]) === undefined) ? answerOf(block) : undefined;
      if (orphan !== undefined) throw new Error(`${orphan.at}: an answer that follows no request`);
      return;
    }
    const next = blocks[i + 1] as Block | undefined;
    const answer = next && answerOf(next);
    if (!answer) throw new Error(`${request.at}: a request whose next block is not its answer`);
    exchanges.push({ request, answer });
  });
  return exchanges;
}

/** README.md and docs/*.md: those with exchanges, and how many each has (so that none is lost by the parsing). */
const DOCUMENTS = ['README.md', ...readdirSync(join(ROOT, 'docs')).flatMap((f) => (f.endsWith('.md') ? [`docs/${f}`] : []))];
const EXPECTED: Record<string, number> = { 'README.md': 1, 'docs/partners.md': 2, 'docs/contract.md': 2 };

test('the documents with example exchanges are those replayed here, each with all of its exchanges', () => {
  const counts = Object.fromEntries(DOCUMENTS.map((f) => [f, exchangesOf(f).length]).filter(([, n]) => n !== 0));
  expect(counts).toEqual(EXPECTED);
});

/** The commands `npm start` prints: a `TOKEN=$(curl …)` from its Entra stand-in with the demo secret, and a `curl` posting a draw. */
function printedCommands(host: DevHostProcess): { token: string; post: string } {
  const lines = host.output().split('\n');
  const token = lines.find((l) => l.startsWith('TOKEN=$(curl '));
  const post = lines.find((l) => l.startsWith('curl ') && l.includes(host.url));
  if (token === undefined || post === undefined) throw new Error(`npm start printed no token and post commands:\n${host.output()}`);
  return { token, post };
}

async function tokenFrom(host: DevHostProcess): Promise<string> {
  const { stdout } = await run('sh', ['-c', `${printedCommands(host).token}\nprintf %s "$TOKEN"`]);
  expect(stdout.split('.')).toHaveLength(3); // a JWT, not an error body
  return stdout;
}

/** The body with its per-request id replaced, members kept in their order. */
function withoutRequestId(body: unknown): unknown {
  return isRecord(body) && 'requestId' in body ? { ...body, requestId: '<requestId>' } : body;
}

async function replay(host: DevHostProcess, token: string, { request, answer }: Exchange): Promise<void> {
  const headers = new Headers();
  for (const [name, value] of request.headers) {
    if (name.toLowerCase() === 'authorization') {
      expect(value.startsWith('Bearer ')).toBe(true);
      headers.set(name, `Bearer ${token}`);
    } else headers.set(name, value);
  }
  const response = await fetch(host.url, { method: 'POST', headers, body: request.body });
  const text = await response.text();
  const requestId = response.headers.get('x-request-id') ?? '';
  expect(requestId).toMatch(UUID);
  const got = {
    status: response.status,
    ...(answer.reason === undefined ? {} : { reason: response.statusText }),
    headers: Object.fromEntries(answer.headers.map(([name]) => [name, name.toLowerCase() === 'x-request-id' ? '<id>' : response.headers.get(name)])),
    body: withoutRequestId(text === '' ? undefined : JSON.parse(text)),
  };
  const documented = {
    status: answer.status,
    ...(answer.reason === undefined ? {} : { reason: answer.reason }),
    headers: Object.fromEntries(answer.headers.map(([name, value]) => [name, name.toLowerCase() === 'x-request-id' ? '<id>' : value])),
    body: withoutRequestId(answer.body),
  };
  expect(got).toEqual(documented);
  expect(JSON.stringify(got.body)).toBe(JSON.stringify(documented.body)); // members in the documented order too
  if (isRecord(answer.body) && 'requestId' in answer.body) expect((JSON.parse(text) as { requestId: unknown }).requestId).toBe(requestId);
}

describe.each(Object.keys(EXPECTED))('%s: its example exchanges against a freshly started `npm start`', (file) => {
  let exchanges: Exchange[] = [];
  try {
    exchanges = exchangesOf(file);
  } catch (error) {
    test('its example exchanges can be read', () => {
      throw error;
    });
  }
  let host: DevHostProcess;
  let token: string;

  /** The README's set-up, run before any exchange so that `-t` on one exchange still has it: its two outputs. */
  let printedRuns: { first: string; second: string } | undefined;
  /** How many of this document's exchanges have been sent: each test first sends those before it. */
  let sent = 0;

  beforeAll(async () => {
    host = await spawnDevHost();
    token = await tokenFrom(host);
    if (file === 'README.md') {
      const { token: getToken, post } = printedCommands(host);
      const first = (await run('sh', ['-c', `${getToken}\n${post}`])).stdout;
      const second = (await run('sh', ['-c', `${getToken}\n${post}`])).stdout;
      printedRuns = { first, second };
    }
  }, 60_000);
  afterAll(async () => {
    await host?.stop();
  });

  if (file === 'README.md') {
    test("set-up the README states: `npm start`'s printed curl, run twice, answers 204 and then 400 Pending Transaction Request", () => {
      const readme = readFileSync(join(ROOT, file), 'utf8').replace(/\s+/g, ' ');
      const section = readme.slice(readme.indexOf('## Example exchange'), readme.indexOf('```http'));
      expect(section).toContain('printed `curl` run twice');
      expect(readme).toContain('the first post answers `204`, the same post again answers `400 Pending Transaction Request`');
      const { first, second } = printedRuns ?? { first: '', second: '' };
      expect(first).toMatch(/^HTTP\/1\.1 204 No Content\r?\n/);
      expect(second).toMatch(/^HTTP\/1\.1 400 Bad Request\r?\n/);
      expect(second).toContain('"error":"Pending Transaction Request"');
    });
  }

  test.each(exchanges.map((e, i) => [`${e.request.at} → ${e.answer.at}`, i] as const))('%s', async (_, i) => {
    // The exchanges before this one are its set-up (a draw made, a loan pending): sent first if `-t` skipped them.
    while (sent < i) await replay(host, token, exchanges[sent++]);
    sent = i + 1;
    await replay(host, token, exchanges[i]);
  });
});
