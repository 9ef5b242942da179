/**
 * The partner contract as written in docs/openapi.yaml, checked with ajv (JSON Schema 2020-12,
 * which OpenAPI 3.1 uses): every response the integration tests receive must match it.
 */
import Ajv2020, { type ValidateFunction } from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { KEY_GRACE_MS } from '../../lib/idempotency';
import { RETRY_AFTER_SECONDS } from '../../lib/problem';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type OpenApi = any;

export const OPENAPI_PATH = join(__dirname, '..', '..', 'docs', 'openapi.yaml');

let cached: { doc: OpenApi; ajv: Ajv2020; validators: Map<string, ValidateFunction> } | undefined;

export function openApi(): OpenApi {
  return load().doc;
}

function load() {
  if (cached) return cached;
  const doc = parse(readFileSync(OPENAPI_PATH, 'utf8'));
  // OpenAPI keywords that are not JSON Schema (`example`) are allowed, not enforced.
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  // Formats (`uuid`, `int32`, `int64`) are checked, as a partner's validator checks them.
  addFormats(ajv);
  ajv.addSchema({ $id: 'openapi.json', components: doc.components }, 'openapi.json');
  const validators = new Map<string, ValidateFunction>();
  const responses = doc.paths['/DrawRequest'].post.responses as Record<string, { content?: Record<string, { schema: { $ref: string } }> }>;
  for (const [status, response] of Object.entries(responses)) {
    for (const [type, media] of Object.entries(response.content ?? {})) {
      validators.set(`${status} ${type}`, ajv.compile({ $ref: `openapi.json${media.schema.$ref}` }));
    }
  }
  cached = { doc, ajv, validators };
  return cached;
}

/** A validator of the schema at `ref` (`#/components/schemas/…`), as a gateway would build one from the document. */
export function schemaValidator(ref: string): ValidateFunction {
  const { ajv } = load();
  return ajv.getSchema(`openapi.json${ref}`) ?? ajv.compile({ $ref: `openapi.json${ref}` });
}

/** The validator of the request body, built from the document alone. */
export function requestValidator(): ValidateFunction {
  const { doc } = load();
  return schemaValidator(doc.paths['/DrawRequest'].post.requestBody.content['application/json'].schema.$ref as string);
}

export interface ContractReply {
  readonly status: number;
  readonly headers: Record<string, string>;
  readonly text: string;
}

/** Problems with this response against the document; empty when it conforms. `keyed`: its request had an Idempotency-Key. */
export function contractViolations(reply: ContractReply, keyed = false): string[] {
  const { doc, validators } = load();
  const response = doc.paths['/DrawRequest'].post.responses[String(reply.status)];
  if (response === undefined) return [`status ${reply.status} is not documented`];
  const problems: string[] = [];
  for (const [name, header] of Object.entries<{ $ref?: string }>(response.headers ?? {})) {
    const declared = header.$ref ? doc.components.headers[header.$ref.split('/').pop() as string] : header;
    const schema = declared.schema?.$ref === undefined ? declared.schema : doc.components.schemas[declared.schema.$ref.split('/').pop() as string];
    const spec = { ...declared, schema };
    const value = reply.headers[name.toLowerCase()];
    if (spec.required && value === undefined) problems.push(`header ${name} is required`);
    if (value !== undefined && spec.schema?.const !== undefined && value !== spec.schema.const) problems.push(`header ${name} must be ${spec.schema.const}`);
    if (value !== undefined && spec.schema?.enum !== undefined && !spec.schema.enum.includes(value))
      problems.push(`header ${name} is not one of ${spec.schema.enum}`);
    const [least, most] = [spec.schema?.minimum ?? 0, spec.schema?.maximum ?? Number.MAX_SAFE_INTEGER];
    if (value !== undefined && spec.schema?.type === 'integer' && !(/^\d+$/.test(value) && Number(value) >= least && Number(value) <= most))
      problems.push(`header ${name} must be a whole number from ${least} to ${most}`);
  }
  const documented = new Set(Object.keys(response.headers ?? {}).map((n) => n.toLowerCase()));
  for (const name of ['idempotent-replay', 'www-authenticate', 'retry-after']) {
    if (reply.headers[name] !== undefined && !documented.has(name)) problems.push(`header ${name} is not documented for ${reply.status}`);
  }
  if (response.content === undefined) {
    if (reply.text !== '') problems.push(`status ${reply.status} must have no body`);
    return problems;
  }
  const type = reply.headers['content-type'];
  const validate = validators.get(`${reply.status} ${type}`);
  if (validate === undefined) return [...problems, `content type ${type} is not documented for ${reply.status}`];
  const body: unknown = JSON.parse(reply.text);
  if (!validate(body)) problems.push(...(validate.errors ?? []).map((e) => `body${e.instancePath} ${e.message}`));
  if (reply.status === 400) problems.push(...detailViolations(body as { detail?: unknown; errors?: { index?: unknown }[] }));
  if (reply.status === 502) problems.push(...retryAfterViolations(body as { detail?: unknown }, reply.headers['retry-after'], keyed));
  return problems;
}

/**
 * docs/contract.md §2.5: a 502 that says nothing was submitted carries `Retry-After: 2`; an outcome-unknown
 * 502 carries none (a client honouring it by itself would resend blindly), except for a keyed batch in its
 * key's grace (§9), given as `keyed`, whose Retry-After counts the seconds until its outcome is known.
 */
function retryAfterViolations({ detail }: { detail?: unknown }, retryAfter: string | undefined, keyed?: boolean): string[] {
  const nothingSubmitted = /nothing was submitted/.test(String(detail));
  if (nothingSubmitted && retryAfter !== String(RETRY_AFTER_SECONDS))
    return [`a 502 saying nothing was submitted must carry Retry-After: ${RETRY_AFTER_SECONDS}`];
  if (!nothingSubmitted && retryAfter !== undefined && keyed !== true)
    return ['a 502 whose outcome is unknown must not carry Retry-After unless its request had an Idempotency-Key'];
  if (!nothingSubmitted && retryAfter !== undefined && !(Number(retryAfter) >= 1 && Number(retryAfter) <= KEY_GRACE_MS / 1000))
    return [`an outcome-unknown 502's Retry-After must count at most the ${KEY_GRACE_MS / 1000} s of a key's grace`];
  return [];
}

/**
 * docs/contract.md §2.4, which a schema cannot say: a 400 that lists elements says "n of m draw requests
 * were rejected", n being the elements listed; one without elements gives the request-level detail.
 */
function detailViolations({ detail, errors = [] }: { detail?: unknown; errors?: { index?: unknown }[] }): string[] {
  const listed = new Set(errors.flatMap((e) => (e.index === undefined ? [] : [e.index]))).size;
  if (listed === 0) return detail === 'The request was rejected; no draw request was submitted.' ? [] : [`detail "${String(detail)}" of a request-level 400`];
  const [, n, m, verb] = /^(\d+) of (\d+) draw requests (was|were) rejected; none was submitted\.$/.exec(String(detail)) ?? [];
  const right = Number(n) === listed && Number(m) >= listed && verb === (listed === 1 ? 'was' : 'were');
  return right ? [] : [`detail "${String(detail)}" does not count the ${listed} element(s) listed`];
}
