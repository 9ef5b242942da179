import { PARTNER_CACHE_TTL_MS, PartnerDirectory, type PartnerSource } from '../../lib/partners';
import type { PartnerLookup, PartnerRecord, StoreResult } from '../../lib/store';

/** A partner table and a stop list in memory that count lookups (the cache logic is what is under test here). */
function source(rows: Record<string, PartnerRecord>, fail = false, stopped: readonly string[] = []) {
  const reads: string[] = [];
  const table: PartnerSource = {
    readPartner: async (clientId: string): Promise<StoreResult<PartnerLookup>> => {
      reads.push(clientId);
      await new Promise((resolve) => setImmediate(resolve));
      return fail
        ? { ok: false, failure: { code: 'ERR_STORAGE_UNREACHABLE', operation: 'readPartner' } }
        : { ok: true, value: { partner: rows[clientId], stopped: stopped.includes(clientId) } };
    },
  };
  return { table, reads };
}

test('concurrent lookups of one client share a single read', async () => {
  const { table, reads } = source({ a: { partnerId: 'P', active: true } });
  const directory = new PartnerDirectory(table);
  const results = await Promise.all(Array.from({ length: 10 }, () => directory.resolve('a')));
  expect(results).toEqual(Array(10).fill({ ok: true, partnerId: 'P' }));
  expect(reads).toEqual(['a']);
});

test('answers are kept for five minutes, then read again', async () => {
  let now = 1_000;
  const { table, reads } = source({ a: { partnerId: 'P', active: true } });
  const directory = new PartnerDirectory(table, () => now);
  await directory.resolve('a');
  now += PARTNER_CACHE_TTL_MS - 1;
  await directory.resolve('a');
  expect(reads).toEqual(['a']);
  now += 1;
  await directory.resolve('a');
  expect(reads).toEqual(['a', 'a']);
});

test('refusals are cached too; storage failures are not', async () => {
  const refused = source({ b: { partnerId: 'P', active: false } });
  const directory = new PartnerDirectory(refused.table);
  expect(await directory.resolve('b')).toEqual({ ok: false, refused: 'ERR_AUTH_INACTIVE_CLIENT' });
  expect(await directory.resolve('nobody')).toEqual({ ok: false, refused: 'ERR_AUTH_UNKNOWN_CLIENT' });
  await directory.resolve('b');
  await directory.resolve('nobody');
  expect(refused.reads).toEqual(['b', 'nobody']);

  const failing = source({}, true);
  const flaky = new PartnerDirectory(failing.table);
  expect(await flaky.resolve('a')).toEqual({ ok: false, failure: { code: 'ERR_STORAGE_UNREACHABLE', operation: 'readPartner' } });
  await flaky.resolve('a');
  expect(failing.reads).toEqual(['a', 'a']);
});

test('a client on the stop list is refused whatever its Partners row says, and the refusal is cached like the others', async () => {
  let now = 1_000;
  const { table, reads } = source({ a: { partnerId: 'P', active: true }, b: { partnerId: 'P', active: false }, c: { partnerId: 'P', active: true } }, false, [
    'a',
    'b',
    'gone',
  ]);
  const directory = new PartnerDirectory(table, () => now);
  expect(await directory.resolve('a')).toEqual({ ok: false, refused: 'ERR_AUTH_STOPPED_CLIENT' }); // an active row does not undo a stop
  expect(await directory.resolve('b')).toEqual({ ok: false, refused: 'ERR_AUTH_STOPPED_CLIENT' });
  expect(await directory.resolve('gone')).toEqual({ ok: false, refused: 'ERR_AUTH_STOPPED_CLIENT' }); // no Partners row at all
  expect(await directory.resolve('c')).toEqual({ ok: true, partnerId: 'P' });
  expect(directory.cachedRefusal('a')).toBe('ERR_AUTH_STOPPED_CLIENT');
  now += PARTNER_CACHE_TTL_MS;
  expect(directory.cachedRefusal('a')).toBeUndefined();
  expect(reads).toEqual(['a', 'b', 'gone', 'c']); // one lookup each: the row and the stop come together
});

test('a row without a PartnerId fails closed', async () => {
  const { table } = source({ c: { active: true }, d: { partnerId: '  ', active: true } });
  const directory = new PartnerDirectory(table);
  expect(await directory.resolve('c')).toEqual({ ok: false, refused: 'ERR_AUTH_PARTNER_UNNAMED' });
  expect(await directory.resolve('d')).toEqual({ ok: false, refused: 'ERR_AUTH_PARTNER_UNNAMED' });
});

test('at most 10,000 clients are cached; the oldest goes first', async () => {
  const { table, reads } = source({});
  const directory = new PartnerDirectory(table);
  for (let i = 0; i <= 10_000; i++) await directory.resolve(`client-${i}`);
  reads.length = 0;
  await directory.resolve('client-10000'); // newest: cached
  await directory.resolve('client-1'); // still cached
  await directory.resolve('client-0'); // evicted
  expect(reads).toEqual(['client-0']);
});

test('cachedRefusal names a refusal held in the cache, and nothing else: no read, no wait', async () => {
  let now = 1_000;
  const { table, reads } = source({ ok: { partnerId: 'P', active: true }, off: { partnerId: 'P', active: false } });
  const directory = new PartnerDirectory(table, () => now);
  expect(directory.cachedRefusal('off')).toBeUndefined(); // not looked up yet: only a lookup can tell
  await Promise.all(['ok', 'off', 'nobody'].map((c) => directory.resolve(c)));
  expect(directory.cachedRefusal('off')).toBe('ERR_AUTH_INACTIVE_CLIENT');
  expect(directory.cachedRefusal('nobody')).toBe('ERR_AUTH_UNKNOWN_CLIENT');
  expect(directory.cachedRefusal('ok')).toBeUndefined();
  expect(reads).toHaveLength(3);
  now += PARTNER_CACHE_TTL_MS;
  expect(directory.cachedRefusal('off')).toBeUndefined(); // expired: the next request looks again
  const failing = new PartnerDirectory(source({}, true).table);
  await failing.resolve('x');
  expect(failing.cachedRefusal('x')).toBeUndefined(); // a storage failure is never a refusal
});
