/**
 * Exchanges of every kind pass through Stoplight Prism's validating proxy (tests/support/prismProxy.ts)
 * on their way to the dev host: every response the service gives is valid for docs/openapi.yaml, and
 * every request that is valid for the document is seen as valid by Prism. A request that breaks the
 * document on purpose is reported by Prism (request violations only), and its answer still conforms.
 * This is a second, independent validator beside the ajv check every integration test makes.
 */
import { randomUUID } from 'node:crypto';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startDevHost, type DevHost } from '../../dev/devHost';
import { OPENAPI_PATH } from '../support/contract';
import { demoToken } from '../support/demoToken';
import { startPrismProxy, violationsOf, type PrismProxy, type Violation } from '../support/prismProxy';

interface Exchange {
  readonly status: number;
  readonly violations: Violation[];
}

let host: DevHost;
let proxy: PrismProxy;
/** The same service with storage unreachable: partner lookups fail, 502. */
let broken: DevHost;
let brokenProxy: PrismProxy;
let token: string;
let brokenToken: string;

const origin = (h: DevHost) => new URL(h.url).origin;

beforeAll(async () => {
  [host, broken] = await Promise.all([
    startDevHost({ PORT: '0' }, () => undefined),
    startDevHost({ PORT: '0', TABLES_CONNECTION_STRING: 'UseDevelopmentStorage=true;DevelopmentStorageProxyUri=http://127.0.0.1:9' }, () => undefined),
  ]);
  [proxy, brokenProxy] = await Promise.all([startPrismProxy(origin(host)), startPrismProxy(origin(broken))]);
  [token, brokenToken] = await Promise.all([demoToken(host), demoToken(broken)]);
}, 120_000);
afterAll(async () => {
  await Promise.allSettled([proxy?.stop(), brokenProxy?.stop()]);
  await Promise.allSettled([host?.stop(), broken?.stop()]);
});

async function send(through: PrismProxy, body: string, headers: Record<string, string> = {}): Promise<Exchange> {
  const response = await fetch(`${through.origin}/DrawRequest`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body });
  await response.arrayBuffer();
  return { status: response.status, violations: violationsOf(response.headers) };
}

const bearer = () => ({ authorization: `Bearer ${token}` });
const batch = (...elements: [number, number][]) =>
  JSON.stringify(elements.map(([loanNumber, amount]) => ({ loanNumber, requestor: 'jane.doe@partner.example', amount })));

describe('a valid request: no violation in either direction', () => {
  test.each<[string, () => Promise<Exchange>, number]>([
    ['a batch recorded (204)', () => send(proxy, batch([1001, 25]), bearer()), 204],
    [
      'a keyed batch, then its replay (204, Idempotent-Replay)',
      async () => {
        const key = { ...bearer(), 'idempotency-key': randomUUID() };
        const first = await send(proxy, batch([1002, 1]), key);
        expect(first).toEqual({ status: 204, violations: [] });
        return send(proxy, batch([1002, 1]), key);
      },
      204,
    ],
    ['elements refused by the draw rules (400 with errors)', () => send(proxy, batch([1003, 10], [1002, 300]), bearer()), 400],
    [
      'an Idempotency-Key reused for another batch (400, request-level)',
      async () => {
        const key = { ...bearer(), 'idempotency-key': randomUUID() };
        expect((await send(proxy, batch([1004, 5]), key)).status).toBe(204);
        return send(proxy, batch([1004, 6]), key);
      },
      400,
    ],
    ['a token that is not valid (401)', () => send(proxy, batch([1001, 5]), { authorization: 'Bearer not.a.jwt' }), 401],
    ['storage unreachable (502)', () => send(brokenProxy, batch([1001, 5]), { authorization: `Bearer ${brokenToken}` }), 502],
  ])('%s', async (_name, exchange, status) => {
    expect(await exchange()).toEqual({ status, violations: [] });
  });
});

describe('a request that breaks the document on purpose: Prism reports the request, the answer conforms', () => {
  test.each<[string, string, Record<string, string>, number, RegExp]>([
    ['an empty batch', '[]', {}, 400, /must NOT have fewer than 1 items/],
    ['an amount below 1', batch([1001, 0.5]), {}, 400, /amount must be >= 1/],
    ['no Authorization header', batch([1001, 5]), { authorization: '' }, 401, /Invalid security scheme/],
    ['a malformed Idempotency-Key', batch([1001, 5]), { 'idempotency-key': 'has space' }, 400, /idempotency-key must match pattern/],
  ])('%s', async (_name, body, headers, status, reported) => {
    const sent = Object.fromEntries(Object.entries({ ...bearer(), ...headers }).filter(([, v]) => v !== ''));
    const { status: answered, violations } = await send(proxy, body, sent);
    expect(answered).toBe(status);
    expect(violations.length).toBeGreaterThan(0);
    expect(violations.filter((v) => v.location[0] !== 'request')).toEqual([]);
    expect(violations.map((v) => v.message).join('\n')).toMatch(reported);
  });
});

test('the proxy reports a response that breaks the document (checked against a document made stricter than the service)', async () => {
  // X-Request-Id in upper case only: every answer of the service breaks this copy.
  const stricter = join(tmpdir(), `openapi-stricter-${process.pid}.yaml`);
  writeFileSync(
    stricter,
    readFileSync(OPENAPI_PATH, 'utf8').replace(/\[0-9a-f\]\{8\}-[^']*/, () => '[0-9A-F]{8}-[0-9A-F]{4}-[0-9A-F]{4}-[0-9A-F]{4}-[0-9A-F]{12}$'),
  );
  const strict = await startPrismProxy(origin(host), stricter);
  try {
    const { status, violations } = await send(strict, batch([1004, 700]), bearer());
    expect(status).toBe(400);
    expect(violations).toContainEqual(expect.objectContaining({ location: ['response', 'header', 'x-request-id'] }));
  } finally {
    await strict.stop();
    rmSync(stricter, { force: true });
  }
}, 90_000);
