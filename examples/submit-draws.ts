/**
 * Partner example client (docs/partners.md): submits a batch of draw requests from a JSON or CSV
 * file and prints what happened to each one.
 *
 *   npm run example -- examples/draws.json
 *   npm run example -- examples/draws.csv --idempotency-key 7c1e7a52-3f0d-4d8e-a0c4-1b2f9c6d5e40
 *
 * 1. Gets an access token with the OAuth 2.0 client-credentials flow: with a certificate (a signed client
 *    assertion, as docs/partners.md recommends) or with a client secret.
 * 2. POSTs the batch to `{base}/DrawRequest` with an `Idempotency-Key` (a new UUID per run unless given).
 * 3. Retries as the partners' guide says (§5–6): 502 (and 503/504 from a gateway in front), network
 *    errors and timeouts with backoff (1 s, then 2 s) and the same key; an answer's `Retry-After` (seconds
 *    or an HTTP-date) is waited at least, doubled on each later failure, never beyond a minute; 401 once
 *    with a new token; 400 never.
 * 4. Prints one row per draw request, plus request-level errors and the `X-Request-Id`.
 *    Exit code: 0 on 204, 1 on 400, 2 on anything else.
 *
 * Only Node built-ins: copy this file into your own project as a starting point.
 */
import { X509Certificate, constants, createHash, createPrivateKey, randomUUID, sign } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { extname } from 'node:path';

// ---------------------------------------------------------------------------------------------
// Input files
// ---------------------------------------------------------------------------------------------

/** A draw request as a CSV row becomes: loanNumber kept as the digit string written. */
export interface CsvDrawRequest {
  loanNumber: string;
  requestor: string;
  amount: number;
}

/** A batch ready to send: the exact body, and its elements for the report. */
export interface DrawBatch {
  readonly source: string;
  readonly format: 'json' | 'csv';
  /** The request body: a JSON file's text as written, or the CSV rows as JSON. */
  readonly body: string;
  readonly draws: readonly unknown[];
}

/** The input file cannot be used (nothing was sent). */
export class DrawFileError extends Error {
  override name = 'DrawFileError';
}

export interface CsvRecord {
  /** Line on which the record starts, from 1. */
  readonly line: number;
  readonly fields: string[];
}

/**
 * RFC 4180 CSV: comma-separated fields; a field may be double-quoted, and then holds commas, line
 * breaks and `""` for one `"`. Records end with CRLF, LF or CR. Spaces or tabs around a quoted field
 * are ignored; a `"` inside an unquoted field is an error (quote the field and double the `"`).
 * Blank lines are skipped. A leading byte-order mark is ignored.
 */
export function parseCsv(text: string): CsvRecord[] {
  const records: CsvRecord[] = [];
  const n = text.length;
  let i = text.charCodeAt(0) === 0xfeff ? 1 : 0;
  let line = 1;
  const isBlank = (c: string | undefined) => c === ' ' || c === '\t';
  while (i < n) {
    const start = line;
    const fields: string[] = [];
    let quoted = false;
    for (;;) {
      let j = i;
      while (isBlank(text[j])) j++;
      if (text[j] === '"') {
        quoted = true;
        const opened = line;
        let value = '';
        j++;
        for (;;) {
          if (j >= n) throw new DrawFileError(`line ${opened}: a quoted field is not closed (missing ")`);
          const c = text[j];
          if (c === '"') {
            if (text[j + 1] === '"') {
              value += '"';
              j += 2;
              continue;
            }
            j++;
            break;
          }
          if (c === '\n' || (c === '\r' && text[j + 1] !== '\n')) line++;
          value += c;
          j++;
        }
        while (isBlank(text[j])) j++;
        if (j < n && text[j] !== ',' && text[j] !== '\r' && text[j] !== '\n') {
          throw new DrawFileError(`line ${line}: unexpected ${JSON.stringify(text[j])} after a closing quote (a " inside a quoted field is written "")`);
        }
        fields.push(value);
      } else {
        j = i;
        while (j < n && text[j] !== ',' && text[j] !== '\r' && text[j] !== '\n') {
          if (text[j] === '"') throw new DrawFileError(`line ${line}: a " inside an unquoted field; quote the whole field and write the " as ""`);
          j++;
        }
        fields.push(text.slice(i, j));
      }
      i = j;
      if (text[i] === ',') {
        i++;
        continue;
      }
      if (text[i] === '\r') i += text[i + 1] === '\n' ? 2 : 1;
      else if (text[i] === '\n') i++;
      line++;
      break;
    }
    const blank = !quoted && fields.length === 1 && fields[0].trim() === '';
    if (!blank) records.push({ line: start, fields });
  }
  return records;
}

const CSV_COLUMNS = ['loanNumber', 'requestor', 'amount'] as const;
const DECIMAL = /^[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?$/;

/**
 * A CSV file of draw requests: a header row naming loanNumber, requestor and amount (any letter
 * case, any order; other columns are ignored), then one row per draw request. loanNumber is kept
 * as the string written (trimmed), requestor as written, amount becomes a JSON number.
 */
export function drawsFromCsv(text: string): CsvDrawRequest[] {
  const [header, ...rows] = parseCsv(text);
  if (header === undefined) throw new DrawFileError('the file is empty: it needs a header row loanNumber,requestor,amount and a row per draw request');
  const position = new Map<string, number>();
  header.fields.forEach((name, index) => {
    const column = CSV_COLUMNS.find((c) => c.toLowerCase() === name.trim().toLowerCase());
    if (column === undefined) return;
    if (position.has(column)) throw new DrawFileError(`line ${header.line}: the header names ${column} twice`);
    position.set(column, index);
  });
  const missing = CSV_COLUMNS.filter((c) => !position.has(c));
  if (missing.length > 0)
    throw new DrawFileError(`line ${header.line}: the header row must name loanNumber, requestor and amount (missing: ${missing.join(', ')})`);
  if (rows.length === 0) throw new DrawFileError('no draw requests: the file has a header row only');
  return rows.map(({ line, fields }) => {
    if (fields.length !== header.fields.length) {
      throw new DrawFileError(`line ${line}: ${fields.length} fields, but the header has ${header.fields.length}`);
    }
    const field = (column: (typeof CSV_COLUMNS)[number]) => fields[position.get(column) as number];
    const amount = field('amount').trim();
    if (!DECIMAL.test(amount))
      throw new DrawFileError(
        `line ${line}: amount ${JSON.stringify(field('amount'))} is not a number (write dollars like 250.00, no currency sign or thousands separator)`,
      );
    return { loanNumber: field('loanNumber').trim(), requestor: field('requestor'), amount: Number(amount) };
  });
}

/** Reads a `.json` file (an array of draw requests, sent exactly as written) or a `.csv` file. */
export async function parseDrawFile(path: string): Promise<DrawBatch> {
  const format = extname(path).toLowerCase();
  if (format !== '.json' && format !== '.csv') throw new DrawFileError(`${path}: the file name must end in .json or .csv`);
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    throw new DrawFileError(`${path}: cannot read the file (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`);
  }
  if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
  try {
    if (format === '.csv') {
      const draws = drawsFromCsv(text);
      return { source: path, format: 'csv', body: JSON.stringify(draws), draws };
    }
    let draws: unknown;
    try {
      draws = JSON.parse(text);
    } catch (error) {
      throw new DrawFileError(`not valid JSON (${(error as Error).message})`);
    }
    if (!Array.isArray(draws)) throw new DrawFileError('the file must hold a JSON array of draw requests');
    // The text as written, not re-serialized: the service judges amounts and keys as written.
    return { source: path, format: 'json', body: text, draws };
  } catch (error) {
    if (error instanceof DrawFileError) throw new DrawFileError(`${path}: ${error.message}`);
    throw error;
  }
}

// ---------------------------------------------------------------------------------------------
// Configuration
// ---------------------------------------------------------------------------------------------

export interface ClientConfig {
  /** The service's base URL; the batch goes to `{baseUrl}/DrawRequest`. */
  readonly baseUrl: string;
  readonly tokenUrl: string;
  readonly clientId: string;
  /** How the client proves who it is: a certificate when one is configured, else the secret. */
  readonly clientSecret?: string;
  readonly clientCertificate?: ClientCertificate;
  readonly scope: string;
  /** Per HTTP attempt. */
  readonly timeoutMs: number;
  /** Waits before the 2nd, 3rd, … attempt after a 502 or no answer; its length + 1 is the number of attempts. */
  readonly retryDelaysMs: readonly number[];
  /** The fetch to send with (default: the global one), for an application with its own TLS or proxy settings. */
  readonly fetch?: typeof fetch;
}

/** A certificate registered on the client application, and its private key (both PEM). */
export interface ClientCertificate {
  readonly certificate: string;
  readonly privateKey: string;
}

/** Matches `npm start`: its dev host port, demo client, its embedded Entra stand-in's tenant, and the API audience. */
export const DEFAULTS = {
  baseUrl: 'http://127.0.0.1:7071',
  clientId: 'demo-partner',
  /** The demo client's secret at npm start's embedded provider; used only for a token URL on this machine. */
  localClientSecret: 'local-demo',
  localTenantId: '00000000-0000-4000-8000-0000000d3a05',
  scope: 'api://draw-request-service/.default',
  timeoutSeconds: 120, // above the service's worst-case answer time (docs/partners.md §8)
  retryDelaysMs: [1000, 2000],
} as const;

export const ENV_HELP = `Settings (environment variables; empty means unset):
  DRAWS_BASE_URL        service base URL (default ${DEFAULTS.baseUrl}); the batch goes to {base}/DrawRequest
  DRAWS_TOKEN_URL       OAuth 2.0 token endpoint (default for a base URL on this machine: npm start's embedded
                        provider on the port after it, https://127.0.0.1:7072/${DEFAULTS.localTenantId}/oauth2/v2.0/token;
                        Node.js trusts its certificate when NODE_EXTRA_CA_CERTS names the CA file npm start prints);
                        with Entra ID, https://login.microsoftonline.com/<tenant>/oauth2/v2.0/token
  DRAWS_TENANT_ID       Entra tenant id: sets DRAWS_TOKEN_URL to the tenant's v2.0 token endpoint when that is unset
  DRAWS_CLIENT_ID       your client (application) id (default ${DEFAULTS.clientId})
  DRAWS_CLIENT_CERTIFICATE      PEM file with the certificate registered on your application (and its private key,
                                unless DRAWS_CLIENT_CERTIFICATE_KEY names another file): signs a client assertion
  DRAWS_CLIENT_CERTIFICATE_KEY  PEM file with that certificate's private key
  DRAWS_CLIENT_SECRET   your client secret, when no certificate is set (default ${DEFAULTS.localClientSecret}, for a token URL on this machine only)
  DRAWS_SCOPE           scope to ask for (default ${DEFAULTS.scope})
  DRAWS_IDEMPOTENCY_KEY Idempotency-Key to send (default: a new UUID per run); --idempotency-key wins
  DRAWS_TIMEOUT_SECONDS per-attempt timeout (default ${DEFAULTS.timeoutSeconds})`;

/** The configuration is unusable (nothing was sent). */
export class ConfigurationError extends Error {
  override name = 'ConfigurationError';
}

function isLoopback(url: URL): boolean {
  return ['127.0.0.1', 'localhost', '[::1]'].includes(url.hostname);
}

function httpUrl(name: string, value: string): URL {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new ConfigurationError(`${name} is not a URL: ${value}`);
  }
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && isLoopback(url))) {
    throw new ConfigurationError(`${name} must be an https URL (http only to this machine): ${value}`);
  }
  return url;
}

/**
 * `npm start`'s embedded provider listens on the port after the host's (7072 next to 7071): for a
 * base URL on this machine, that is where the token endpoint is. Elsewhere there is no default.
 */
function embeddedTokenUrl(baseUrl: string): string | undefined {
  const base = new URL(baseUrl);
  if (!isLoopback(base) || base.protocol !== 'http:') return undefined;
  const port = Number(base.port || 80);
  return `https://${base.hostname}:${(port % 65535) + 1}/${DEFAULTS.localTenantId}/oauth2/v2.0/token`;
}

function readPem(setting: string, path: string, label: 'CERTIFICATE' | 'PRIVATE KEY'): string {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    throw new ConfigurationError(`${setting}: cannot read ${path} (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`);
  }
  if (!text.includes(`-----BEGIN ${label}-----`) && !(label === 'PRIVATE KEY' && /-----BEGIN [A-Z ]*PRIVATE KEY-----/.test(text))) {
    throw new ConfigurationError(`${setting}: ${path} holds no PEM ${label.toLowerCase()}`);
  }
  return text;
}

/** The certificate and key named by DRAWS_CLIENT_CERTIFICATE(_KEY), checked to belong together. */
function certificateFromEnv(certificatePath: string | undefined, keyPath: string | undefined): ClientCertificate | undefined {
  if (certificatePath === undefined) {
    if (keyPath !== undefined) throw new ConfigurationError('DRAWS_CLIENT_CERTIFICATE_KEY is set without DRAWS_CLIENT_CERTIFICATE');
    return undefined;
  }
  const certificate = readPem('DRAWS_CLIENT_CERTIFICATE', certificatePath, 'CERTIFICATE');
  const privateKey =
    keyPath === undefined
      ? readPem('DRAWS_CLIENT_CERTIFICATE', certificatePath, 'PRIVATE KEY')
      : readPem('DRAWS_CLIENT_CERTIFICATE_KEY', keyPath, 'PRIVATE KEY');
  try {
    if (!new X509Certificate(certificate).checkPrivateKey(createPrivateKey(privateKey)))
      throw new ConfigurationError("the private key is not the certificate's");
  } catch (error) {
    throw new ConfigurationError(`DRAWS_CLIENT_CERTIFICATE: ${error instanceof ConfigurationError ? error.message : `unusable (${(error as Error).message})`}`);
  }
  return { certificate, privateKey };
}

/**
 * A client assertion (RFC 7523) as Microsoft's libraries build one: PS256, the certificate named by its
 * SHA-256 thumbprint (`x5t#S256`), for this token endpoint, from and about this client, for 10 minutes.
 */
export function clientAssertion(clientId: string, tokenUrl: string, credential: ClientCertificate, now = Date.now()): string {
  const thumbprint = createHash('sha256').update(new X509Certificate(credential.certificate).raw).digest('base64url');
  const issuedAt = Math.floor(now / 1000);
  const part = (value: object) => Buffer.from(JSON.stringify(value)).toString('base64url');
  const signingInput = `${part({ alg: 'PS256', typ: 'JWT', 'x5t#S256': thumbprint })}.${part({
    aud: tokenUrl,
    iss: clientId,
    sub: clientId,
    jti: randomUUID(),
    iat: issuedAt,
    nbf: issuedAt,
    exp: issuedAt + 600,
  })}`;
  const signature = sign('sha256', Buffer.from(signingInput), {
    key: createPrivateKey(credential.privateKey),
    padding: constants.RSA_PKCS1_PSS_PADDING,
    saltLength: 32,
  });
  return `${signingInput}.${signature.toString('base64url')}`;
}

/** Client settings from `DRAWS_*` environment variables over {@link DEFAULTS}. */
export function configFromEnv(env: Record<string, string | undefined>): ClientConfig {
  const get = (name: string) => {
    const value = env[name]?.trim();
    return value === undefined || value === '' ? undefined : value;
  };
  const baseUrl = get('DRAWS_BASE_URL') ?? DEFAULTS.baseUrl;
  httpUrl('DRAWS_BASE_URL', baseUrl);
  const tenant = get('DRAWS_TENANT_ID');
  const tokenUrl =
    get('DRAWS_TOKEN_URL') ??
    (tenant === undefined ? embeddedTokenUrl(baseUrl) : `https://login.microsoftonline.com/${encodeURIComponent(tenant)}/oauth2/v2.0/token`);
  if (tokenUrl === undefined) {
    throw new ConfigurationError(
      'DRAWS_TOKEN_URL is not set. Against Entra ID, set DRAWS_TENANT_ID or ' + 'DRAWS_TOKEN_URL=https://login.microsoftonline.com/<tenant>/oauth2/v2.0/token.',
    );
  }
  const token = httpUrl('DRAWS_TOKEN_URL', tokenUrl);
  const clientCertificate = certificateFromEnv(get('DRAWS_CLIENT_CERTIFICATE'), get('DRAWS_CLIENT_CERTIFICATE_KEY'));
  const clientSecret =
    clientCertificate !== undefined ? undefined : (get('DRAWS_CLIENT_SECRET') ?? (isLoopback(token) ? DEFAULTS.localClientSecret : undefined));
  if (clientCertificate === undefined && clientSecret === undefined) {
    throw new ConfigurationError(
      'set DRAWS_CLIENT_CERTIFICATE (preferred) or DRAWS_CLIENT_SECRET: one is required for a token endpoint other than this machine',
    );
  }
  const timeoutText = get('DRAWS_TIMEOUT_SECONDS');
  const timeoutSeconds = timeoutText === undefined ? DEFAULTS.timeoutSeconds : Number(timeoutText);
  if (!(timeoutSeconds > 0 && timeoutSeconds <= 600))
    throw new ConfigurationError(`DRAWS_TIMEOUT_SECONDS must be a number of seconds from 1 to 600 (got "${timeoutText}")`);
  return {
    baseUrl,
    tokenUrl,
    clientId: get('DRAWS_CLIENT_ID') ?? DEFAULTS.clientId,
    ...(clientCertificate === undefined ? { clientSecret } : { clientCertificate }),
    scope: get('DRAWS_SCOPE') ?? DEFAULTS.scope,
    timeoutMs: timeoutSeconds * 1000,
    retryDelaysMs: DEFAULTS.retryDelaysMs,
  };
}

/** `{base}/DrawRequest`; a base that already ends in /DrawRequest is used as it is. */
export function drawRequestUrl(baseUrl: string): string {
  const url = new URL(baseUrl);
  if (!/\/drawrequest$/i.test(url.pathname)) url.pathname = `${url.pathname.replace(/\/+$/, '')}/DrawRequest`;
  return url.href;
}

const IDEMPOTENCY_KEY = /^[!-~]{1,128}$/;

// ---------------------------------------------------------------------------------------------
// Submitting
// ---------------------------------------------------------------------------------------------

/** One entry of a 400 body's `errors` (docs/openapi.yaml ElementError). */
export interface ProblemError {
  readonly index?: number;
  readonly loanNumber?: number;
  readonly error: string;
  readonly code: string;
  readonly pointer?: string;
  readonly detail: string;
}

export interface Problem {
  readonly title?: string;
  readonly status?: number;
  readonly detail?: string;
  readonly requestId?: string;
  readonly errors?: readonly ProblemError[];
}

export type ElementStatus = 'accepted' | 'replayed' | 'rejected' | 'not submitted';

export interface ElementOutcome {
  readonly index: number;
  /** As sent, for display (`-` when absent). */
  readonly loanNumber: string;
  readonly amount: string;
  readonly status: ElementStatus;
  /** Its errors from a 400 (one, per the contract). */
  readonly errors: readonly ProblemError[];
  /** The table's result column. */
  readonly result: string;
}

export interface SubmitResult {
  /** accepted: 204; rejected: 400; failed: anything else (or no answer, or no token). */
  readonly outcome: 'accepted' | 'rejected' | 'failed';
  readonly exitCode: 0 | 1 | 2;
  readonly url: string;
  readonly idempotencyKey: string;
  /** HTTP status of the final answer; absent when there was none. */
  readonly status?: number;
  readonly requestId?: string;
  /** The 204 carried `Idempotent-Replay: true`: an earlier request with this key recorded the batch. */
  readonly replay: boolean;
  /** POST attempts made. */
  readonly attempts: number;
  /** Access tokens obtained (2 when a 401 made it renew). */
  readonly tokensFetched: number;
  readonly elements: readonly ElementOutcome[];
  /** 400 errors about the request itself (no `index`). */
  readonly requestErrors: readonly ProblemError[];
  /** The problem+json body of a non-204 answer. */
  readonly problem?: Problem;
  /** Why the batch failed, in words (for `outcome` failed). */
  readonly failure?: string;
}

export interface SubmitOptions extends ClientConfig {
  readonly batch: DrawBatch;
  /** Send this key; a new UUID when absent. */
  readonly idempotencyKey?: string;
  /** Progress lines (retries, token renewal); nothing when absent. */
  readonly log?: (line: string) => void;
}

/** The token endpoint did not give a token. */
class TokenError extends Error {}

const RETRYABLE_STATUSES = new Set([502, 503, 504]);

/** The request-level 400s about the key itself (docs/partners.md §5): this batch needs a new key. */
export const KEY_REFUSALS: ReadonlySet<string> = new Set([
  'this Idempotency-Key is bound to a different batch; send a new key with a new batch',
  'this Idempotency-Key expired before this batch was recorded under it; send the batch with a new key',
]);

/**
 * The request-level 400 for a key taken over 48 hours ago whose batch is not found (docs/contract.md §9):
 * whether it was recorded can no longer be told, so resending it under a new key could record it twice.
 */
export const KEY_OUTCOME_FORGOTTEN =
  'this Idempotency-Key was taken over 48 hours ago and its batch is not found under it: whether it was recorded can no longer be told; ask the lender before sending it again';

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * The longest this client waits before a retry, whatever a `Retry-After` asks: the end of the backoff
 * docs/partners.md §6 gives ("up to a minute"). A larger value (a gateway's, or a malformed one) must not
 * hold a run for hours; after the attempts run out the client says how to retry later with the same key.
 */
export const MAX_RETRY_WAIT_MS = 60_000;

const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];
const TIME = '(\\d{2}):(\\d{2}):(\\d{2})';
const MONTH = `(${MONTHS.join('|')})`;
/** RFC 9110 §5.6.7's three forms: IMF-fixdate, the obsolete RFC 850 date and asctime's. */
const IMF_FIXDATE = new RegExp(`^(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun), (\\d{2}) ${MONTH} (\\d{4}) ${TIME} GMT$`);
const RFC850_DATE = new RegExp(`^(?:Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday), (\\d{2})-${MONTH}-(\\d{2}) ${TIME} GMT$`);
const ASCTIME_DATE = new RegExp(`^(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) ${MONTH} ([ \\d]\\d) ${TIME} (\\d{4})$`);

/** An HTTP-date (RFC 9110 §5.6.7) as ms since the epoch; undefined for anything else, an impossible date included. */
export function parseHttpDate(text: string, now = Date.now()): number | undefined {
  let parts: { day: string; month: string; year: number; hour: string; minute: string; second: string } | undefined;
  let m = IMF_FIXDATE.exec(text);
  if (m !== null) parts = { day: m[1], month: m[2], year: Number(m[3]), hour: m[4], minute: m[5], second: m[6] };
  else if ((m = RFC850_DATE.exec(text)) !== null) {
    // A two-digit year more than 50 years ahead is the latest past year with those digits (RFC 9110 §5.6.7).
    const thisYear = new Date(now).getUTCFullYear();
    let year = thisYear - (thisYear % 100) + Number(m[3]);
    if (year > thisYear + 50) year -= 100;
    parts = { day: m[1], month: m[2], year, hour: m[4], minute: m[5], second: m[6] };
  } else if ((m = ASCTIME_DATE.exec(text)) !== null) {
    parts = { day: m[2].trim(), month: m[1], year: Number(m[6]), hour: m[3], minute: m[4], second: m[5] };
  }
  if (parts === undefined) return undefined;
  const month = MONTHS.indexOf(parts.month);
  const [day, hour, minute, second] = [parts.day, parts.hour, parts.minute, parts.second].map(Number);
  // 60 is a leap second; Date folds it into the next minute.
  if (hour > 23 || minute > 59 || second > 60) return undefined;
  const date = new Date(Date.UTC(parts.year, month, day, hour, minute, second));
  date.setUTCFullYear(parts.year); // Date.UTC maps years 0–99 to 1900–1999
  return date.getUTCDate() === day && date.getUTCMonth() === month ? date.getTime() : undefined;
}

/**
 * How long a `Retry-After` field (RFC 9110 §10.2.3) asks to wait, in ms: delay-seconds, or an HTTP-date
 * less the answer's own `Date` (its clock, not this machine's, which may be off; this machine's when the
 * answer has no valid `Date`). Undefined when there is none or it is not valid; 0 for a date passed.
 */
export function retryAfterMs(retryAfter: string | null, date: string | null, now = Date.now()): number | undefined {
  const value = retryAfter?.trim();
  if (value === undefined || value === '') return undefined;
  if (/^\d+$/.test(value)) return Math.min(Number(value) * 1000, Number.MAX_SAFE_INTEGER);
  const at = parseHttpDate(value, now);
  if (at === undefined) return undefined;
  const sent = date === null ? undefined : parseHttpDate(date.trim(), now);
  return Math.max(0, at - (sent ?? now));
}

/**
 * The wait before the retry after the `failure`th transient failure (from 0): the backoff, or, when the
 * answer said `Retry-After`, at least that, doubled on each later failure (docs/partners.md §6: "wait at
 * least that long, longer as failures repeat"; 2 s then 4 s for the service's `Retry-After: 2`). Never
 * more than MAX_RETRY_WAIT_MS.
 */
export function retryWaitMs(backoffMs: number, retryAfter: number | undefined, failure: number): number {
  if (retryAfter === undefined) return backoffMs;
  return Math.min(MAX_RETRY_WAIT_MS, Math.max(backoffMs, retryAfter * 2 ** failure));
}

/** TLS failures that mean "no trusted chain", as Node.js names them. */
const UNTRUSTED_CERTIFICATE = new Set([
  'SELF_SIGNED_CERT_IN_CHAIN',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
]);

function isUntrusted(error: unknown): boolean {
  const code = (error as { cause?: { code?: unknown } } | undefined)?.cause?.code;
  return typeof code === 'string' && UNTRUSTED_CERTIFICATE.has(code);
}

/** "connect ECONNREFUSED 127.0.0.1:7071", "no answer within the timeout": what a person can act on. */
function describeNetworkError(error: unknown): string {
  const e = error as Error & { cause?: { code?: string; message?: string } };
  if (e?.name === 'TimeoutError' || e?.name === 'AbortError') return 'no answer within the timeout';
  const cause = e?.cause;
  if (isUntrusted(error)) {
    return `${cause?.code}: the server's certificate is not trusted here (for npm start's local provider, set NODE_EXTRA_CA_CERTS to the CA file it prints)`;
  }
  if (cause?.message) return cause.code && !cause.message.includes(cause.code) ? `${cause.code}: ${cause.message}` : cause.message;
  return e?.message ?? String(error);
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Client-credentials grant; retries network errors and 5xx like the batch itself. */
async function fetchToken(config: ClientConfig, log: (line: string) => void): Promise<string> {
  // A new assertion per attempt: each is good for minutes only.
  const form = () =>
    new URLSearchParams({
      grant_type: 'client_credentials',
      client_id: config.clientId,
      ...(config.clientCertificate === undefined
        ? { client_secret: config.clientSecret ?? '' }
        : {
            client_assertion_type: 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer',
            client_assertion: clientAssertion(config.clientId, config.tokenUrl, config.clientCertificate),
          }),
      scope: config.scope,
    });
  for (let attempt = 1; ; attempt++) {
    const retryIn = config.retryDelaysMs[attempt - 1];
    let response: Response;
    let text: string;
    try {
      response = await (config.fetch ?? fetch)(config.tokenUrl, {
        method: 'POST',
        headers: { 'Content-Type': 'application/x-www-form-urlencoded', Accept: 'application/json' },
        body: form().toString(),
        signal: AbortSignal.timeout(config.timeoutMs),
      });
      text = await response.text();
    } catch (error) {
      // An untrusted certificate stays untrusted: waiting would not help.
      if (retryIn === undefined || isUntrusted(error)) throw new TokenError(`token endpoint ${config.tokenUrl}: ${describeNetworkError(error)}`);
      log(`token endpoint: ${describeNetworkError(error)}; retrying in ${retryIn / 1000} s`);
      await sleep(retryIn);
      continue;
    }
    if (response.status >= 500 && retryIn !== undefined) {
      log(`token endpoint: ${response.status} ${response.statusText}; retrying in ${retryIn / 1000} s`);
      await sleep(retryIn);
      continue;
    }
    const body = parseJson(text);
    if (!response.ok) {
      // OAuth errors (RFC 6749 §5.2) name the problem, e.g. invalid_client; they never hold the secret.
      const oauth =
        isRecord(body) && typeof body.error === 'string'
          ? `: ${body.error}${typeof body.error_description === 'string' ? ` (${body.error_description.split(/\r?\n/)[0]})` : ''}`
          : '';
      throw new TokenError(`token endpoint ${config.tokenUrl} answered ${response.status} ${response.statusText}${oauth}`);
    }
    if (!isRecord(body) || typeof body.access_token !== 'string' || body.access_token === '') {
      throw new TokenError(`token endpoint ${config.tokenUrl} answered ${response.status} without an access_token`);
    }
    return body.access_token;
  }
}

/** A field of a draw request as sent, found case-insensitively like the service does. */
function fieldOf(draw: unknown, name: string): unknown {
  if (!isRecord(draw)) return undefined;
  const key = Object.keys(draw).find((k) => k.toLowerCase() === name.toLowerCase());
  return key === undefined ? undefined : draw[key];
}

/** A value as sent, for the table; `money` shows whole cents as dollars with 2 decimals. */
function cell(value: unknown, money = false): string {
  let text: string;
  if (value === undefined) text = '-';
  else if (typeof value === 'number') text = money && /^-?\d+(\.\d{1,2})?$/.test(String(value)) ? value.toFixed(2) : String(value);
  else if (typeof value === 'string' && /^[!-~]+$/.test(value) && !value.includes('"')) text = value;
  else text = JSON.stringify(value) ?? typeof value; // a function or a symbol has no JSON
  return text.length > 24 ? `${text.slice(0, 23)}…` : text;
}

function describeError(e: ProblemError): string {
  return `${e.error}: ${e.detail}`;
}

function buildElements(
  draws: readonly unknown[],
  status: ElementStatus | ((index: number) => ElementStatus),
  errors: readonly ProblemError[] = [],
): ElementOutcome[] {
  return draws.map((draw, index) => {
    const own = errors.filter((e) => e.index === index);
    const state = own.length > 0 ? 'rejected' : typeof status === 'function' ? status(index) : status;
    const result =
      state === 'accepted'
        ? 'accepted'
        : state === 'replayed'
          ? 'accepted (replay)'
          : state === 'rejected'
            ? own.map(describeError).join('; ')
            : 'not submitted';
    const sent = fieldOf(draw, 'loanNumber');
    return {
      index,
      loanNumber: cell(sent ?? own.find((e) => e.loanNumber !== undefined)?.loanNumber),
      amount: cell(fieldOf(draw, 'amount'), true),
      status: state,
      errors: own,
      result,
    };
  });
}

function asProblem(body: unknown): Problem | undefined {
  if (!isRecord(body)) return undefined;
  const errors = Array.isArray(body.errors)
    ? body.errors.filter((e): e is ProblemError => isRecord(e) && typeof e.error === 'string' && typeof e.code === 'string' && typeof e.detail === 'string')
    : undefined;
  return {
    title: typeof body.title === 'string' ? body.title : undefined,
    status: typeof body.status === 'number' ? body.status : undefined,
    detail: typeof body.detail === 'string' ? body.detail : undefined,
    requestId: typeof body.requestId === 'string' ? body.requestId : undefined,
    errors,
  };
}

/**
 * Gets a token and posts the batch, retrying per docs/partners.md §6. Never throws for anything
 * the service or the network does: every outcome is in the result.
 */
export async function submitDraws(options: SubmitOptions): Promise<SubmitResult> {
  const log = options.log ?? (() => undefined);
  const url = drawRequestUrl(options.baseUrl);
  const idempotencyKey = options.idempotencyKey ?? randomUUID();
  if (!IDEMPOTENCY_KEY.test(idempotencyKey)) throw new ConfigurationError('the Idempotency-Key must be 1 to 128 visible ASCII characters (no spaces)');
  const { draws } = options.batch;
  const base = { url, idempotencyKey, replay: false, requestErrors: [] };
  let attempts = 0;
  let tokensFetched = 0;
  const failed = (failure: string, extra: Partial<SubmitResult> = {}): SubmitResult => ({
    ...base,
    outcome: 'failed',
    exitCode: 2,
    attempts,
    tokensFetched,
    elements: buildElements(draws, 'not submitted'),
    failure,
    ...extra,
  });
  const newToken = async () => {
    tokensFetched++;
    return fetchToken(options, log);
  };

  let token: string;
  try {
    token = await newToken();
  } catch (error) {
    if (error instanceof TokenError) return failed(`no access token: ${error.message}`);
    throw error;
  }
  let renewed = false;
  let transient = 0; // 502s and lost answers so far
  for (;;) {
    attempts++;
    let response: Response;
    let text: string;
    try {
      response = await (options.fetch ?? fetch)(url, {
        method: 'POST',
        headers: {
          Authorization: `Bearer ${token}`,
          'Content-Type': 'application/json',
          'Idempotency-Key': idempotencyKey,
          Accept: 'application/json, application/problem+json',
        },
        body: options.batch.body,
        signal: AbortSignal.timeout(options.timeoutMs),
      });
      text = await response.text();
    } catch (error) {
      const retryIn = options.retryDelaysMs[transient++];
      const reason = describeNetworkError(error);
      if (retryIn === undefined)
        return failed(
          `no answer after ${attempts} attempt${attempts === 1 ? '' : 's'} (${reason}); send the same file again with --idempotency-key ${idempotencyKey} to learn whether it was recorded`,
        );
      log(`attempt ${attempts}: ${reason}; retrying in ${retryIn / 1000} s with the same Idempotency-Key`);
      await sleep(retryIn);
      continue;
    }
    const status = response.status;
    const requestId = response.headers.get('x-request-id') ?? undefined;
    const problem = asProblem(parseJson(text));
    if (status === 401 && !renewed) {
      renewed = true;
      log(`attempt ${attempts}: 401 Unauthorized (X-Request-Id ${requestId ?? '-'}); getting a new token and trying once more`);
      try {
        token = await newToken();
      } catch (error) {
        if (error instanceof TokenError) return failed(`no access token: ${error.message}`, { status, requestId, problem });
        throw error;
      }
      continue;
    }
    if (RETRYABLE_STATUSES.has(status)) {
      const failure = transient++;
      const backoff = options.retryDelaysMs[failure];
      // The service's nothing-submitted 502 says `Retry-After: 2` (docs/contract.md §2.5); its outcome-unknown 502
      // says none and gets the backoff: resending it is safe only because this client always sends a key. A key
      // past its 24 hours whose batch may still land says up to 10 minutes (§9): longer than a run should wait.
      const asked = retryAfterMs(response.headers.get('retry-after'), response.headers.get('date'));
      if (asked !== undefined && asked > MAX_RETRY_WAIT_MS) {
        const seconds = Math.ceil(asked / 1000);
        return failed(
          `${status} ${response.statusText}: the outcome is not known yet; send the same file again with --idempotency-key ${idempotencyKey} in ${seconds} s (Retry-After) to learn it`,
          {
            status,
            requestId,
            problem,
          },
        );
      }
      if (backoff !== undefined) {
        const retryIn = retryWaitMs(backoff, asked, failure);
        const because = asked === undefined ? '' : ` (Retry-After: ${response.headers.get('retry-after')})`;
        log(
          `attempt ${attempts}: ${status} ${response.statusText} (X-Request-Id ${requestId ?? '-'}); retrying in ${retryIn / 1000} s${because} with the same Idempotency-Key`,
        );
        await sleep(retryIn);
        continue;
      }
    }
    if (status === 204) {
      const replay = response.headers.get('idempotent-replay')?.trim().toLowerCase() === 'true';
      return {
        ...base,
        outcome: 'accepted',
        exitCode: 0,
        status,
        requestId,
        replay,
        attempts,
        tokensFetched,
        elements: buildElements(draws, replay ? 'replayed' : 'accepted'),
      };
    }
    if (status === 400) {
      const errors = problem?.errors ?? [];
      const requestErrors = errors.filter((e) => e.index === undefined || !Number.isInteger(e.index) || e.index < 0 || e.index >= draws.length);
      return {
        ...base,
        outcome: 'rejected',
        exitCode: 1,
        status,
        requestId,
        attempts,
        tokensFetched,
        problem,
        requestErrors,
        elements: buildElements(draws, 'not submitted', errors),
      };
    }
    const advice =
      status === 401
        ? 'still 401 with a new token: check the client id, that the token is an app token for the right audience, and the app role'
        : status === 500
          ? `a fault on the service's side: report the X-Request-Id, and retry later with --idempotency-key ${idempotencyKey}`
          : RETRYABLE_STATUSES.has(status)
            ? `still failing after ${attempts} attempts: retry this same file later with --idempotency-key ${idempotencyKey} (it may have been recorded: under a new key, or changed under this one, it could be recorded twice)`
            : 'unexpected answer';
    return failed(`${status} ${response.statusText}: ${advice}`, { status, requestId, problem });
  }
}

// ---------------------------------------------------------------------------------------------
// Report
// ---------------------------------------------------------------------------------------------

function table(rows: readonly (readonly string[])[]): string[] {
  const widths = rows[0].map((_, c) => Math.max(...rows.map((r) => r[c].length)));
  const line = (r: readonly string[]) => r.map((v, c) => (c === r.length - 1 ? v : v.padEnd(widths[c]))).join('  ');
  return [line(rows[0]), line(widths.map((w) => '-'.repeat(w))), ...rows.slice(1).map(line)];
}

/** The human-readable report of one submission. */
export function formatOutcome(result: SubmitResult, batch?: Pick<DrawBatch, 'source'>): string {
  const lines: string[] = [];
  const count = result.elements.length;
  lines.push(`POST ${result.url}: ${count} draw request${count === 1 ? '' : 's'}${batch ? ` from ${batch.source}` : ''}`);
  lines.push(`Idempotency-Key: ${result.idempotencyKey}`);
  const answer =
    result.status === undefined
      ? 'no answer'
      : `HTTP ${result.status}${result.problem?.title ? ` ${result.problem.title}` : result.status === 204 ? ' No Content' : ''}`;
  lines.push(`${answer}${result.replay ? ' (Idempotent-Replay: true)' : ''}   X-Request-Id: ${result.requestId ?? '-'}   attempts: ${result.attempts}`);
  lines.push('');
  if (count > 0) {
    lines.push(...table([['index', 'loanNumber', 'amount', 'result'], ...result.elements.map((e) => [String(e.index), e.loanNumber, e.amount, e.result])]));
    lines.push('');
  }
  for (const e of result.requestErrors) lines.push(`Request error: ${e.error}: ${e.detail}${e.index === undefined ? '' : ` (index ${e.index})`}`);
  if (result.outcome === 'accepted') {
    lines.push(
      result.replay
        ? 'Already recorded by an earlier request with this Idempotency-Key: nothing was recorded again.'
        : count === 1
          ? 'The draw request was recorded as pending.'
          : `All ${count} draw requests were recorded as pending.`,
    );
  } else if (result.outcome === 'rejected') {
    // docs/partners.md §5: what each 400 means for the key, and what to send next.
    const details = result.requestErrors.map((e) => e.detail);
    const keyDetail = details.find((d) => KEY_REFUSALS.has(d));
    const advice = result.elements.some((e) => e.status === 'rejected')
      ? 'Fix the rejected rows and send the corrected batch. This batch unchanged, under this Idempotency-Key, is answered this same 400 for 24 hours: to send it unchanged after the lender fixed its data, run again without --idempotency-key (a new key).'
      : keyDetail !== undefined
        ? 'Nothing was recorded under this key. Send the batch again without --idempotency-key (a new run sends a new key).'
        : details.includes(KEY_OUTCOME_FORGOTTEN)
          ? 'Do not send this batch again until the lender has told you whether it was recorded.'
          : 'Fix the request error above and send the batch again.';
    lines.push(`Rejected: ${result.problem?.detail ?? 'the batch was rejected; nothing was recorded.'} ${advice}`);
  } else {
    if (result.problem?.detail) lines.push(`${result.problem.title ?? 'Error'}: ${result.problem.detail}`);
    lines.push(`Failed: ${result.failure ?? 'unknown failure'}`);
  }
  if (result.requestId !== undefined && result.outcome !== 'accepted') lines.push(`Quote X-Request-Id ${result.requestId} to support if you need help.`);
  return lines.join('\n');
}

// ---------------------------------------------------------------------------------------------
// Command line
// ---------------------------------------------------------------------------------------------

const USAGE = `Usage: npm run example -- <draws.json|draws.csv> [--idempotency-key <key>]
       node dist/examples/submit-draws.js <file> [--idempotency-key <key>]

${ENV_HELP}

Exit code: 0 when every draw request was accepted (204), 1 when the batch was rejected (400), 2 otherwise.`;

export interface CliArgs {
  readonly file?: string;
  readonly idempotencyKey?: string;
  readonly help: boolean;
}

export function parseArgs(argv: readonly string[]): CliArgs {
  let file: string | undefined;
  let idempotencyKey: string | undefined;
  let help = false;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === '-h' || arg === '--help') help = true;
    else if (arg === '--idempotency-key') {
      if (i + 1 >= argv.length) throw new ConfigurationError('--idempotency-key needs a value');
      idempotencyKey = argv[++i];
    } else if (arg.startsWith('--idempotency-key=')) idempotencyKey = arg.slice('--idempotency-key='.length);
    else if (arg.startsWith('-')) throw new ConfigurationError(`unknown option ${arg}`);
    else if (file === undefined) file = arg;
    else throw new ConfigurationError(`one file only (got ${file} and ${arg})`);
  }
  return { file, idempotencyKey, help };
}

export interface Io {
  readonly out: (text: string) => void;
  readonly err: (text: string) => void;
}

/** The CLI: returns the exit code. */
export async function main(argv: readonly string[], env: Record<string, string | undefined>, io: Io): Promise<number> {
  try {
    const args = parseArgs(argv);
    if (args.help) {
      io.out(USAGE);
      return 0;
    }
    if (args.file === undefined) throw new ConfigurationError('name a .json or .csv file of draw requests');
    const config = configFromEnv(env);
    const idempotencyKey = args.idempotencyKey ?? (env.DRAWS_IDEMPOTENCY_KEY?.trim() || undefined);
    if (idempotencyKey !== undefined && !IDEMPOTENCY_KEY.test(idempotencyKey))
      throw new ConfigurationError('the Idempotency-Key must be 1 to 128 visible ASCII characters (no spaces)');
    const batch = await parseDrawFile(args.file);
    io.err(`Token: client ${config.clientId} with its ${config.clientCertificate ? 'certificate' : 'secret'} at ${config.tokenUrl} (scope ${config.scope})`);
    const result = await submitDraws({ ...config, batch, idempotencyKey, log: (line) => io.err(line) });
    io.out(formatOutcome(result, batch));
    return result.exitCode;
  } catch (error) {
    if (error instanceof ConfigurationError) {
      io.err(`${error.message}\n(--help lists the options and settings)`);
      return 2;
    }
    if (error instanceof DrawFileError) {
      io.err(`Nothing was sent: ${error.message}`);
      return 2;
    }
    io.err(`Unexpected failure: ${(error as Error).stack ?? String(error)}`);
    return 2;
  }
}

if (require.main === module) {
  void main(process.argv.slice(2), process.env, { out: (t) => console.log(t), err: (t) => console.error(t) }).then((code) => {
    process.exitCode = code;
  });
}
