import { MAX_VERIFIED_TOKENS, VerifiedTokens } from '../../lib/verifiedTokens';

const metadata = {};
const TOLERANCE = 60;

function cache(now: { s: number }, capacity = MAX_VERIFIED_TOKENS) {
  return new VerifiedTokens<string>(TOLERANCE, capacity, () => now.s);
}

test('a remembered token is answered while metadata, key set version and expiry hold', () => {
  const now = { s: 1_000 };
  const tokens = cache(now);
  tokens.set('token-a', metadata, 3, 2_000, 'client-a');
  expect(tokens.get('token-a', metadata, 3)).toBe('client-a');
  expect(tokens.get('token-b', metadata, 3)).toBeUndefined();
  expect(tokens.get('token-a'.slice(0, -1), metadata, 3)).toBeUndefined();
});

test('another metadata object, another key set version, or none, is a miss and forgets the token', () => {
  const now = { s: 1_000 };
  for (const [otherMetadata, version] of [
    [{}, 3],
    [metadata, 4],
    [metadata, undefined],
  ] as const) {
    const tokens = cache(now);
    tokens.set('token-a', metadata, 3, 2_000, 'client-a');
    expect(tokens.get('token-a', otherMetadata, version)).toBeUndefined();
    if (version !== undefined) expect(tokens.size).toBe(0);
    expect(tokens.get('token-a', metadata, 3)).toBe(version === undefined ? 'client-a' : undefined);
  }
});

test('expiry follows jose: expired once exp <= now - clock tolerance', () => {
  const now = { s: 1_000 };
  const tokens = cache(now);
  tokens.set('token-a', metadata, 1, 1_000, 'client-a');
  now.s = 1_000 + TOLERANCE - 1;
  expect(tokens.get('token-a', metadata, 1)).toBe('client-a');
  now.s = 1_000 + TOLERANCE;
  expect(tokens.get('token-a', metadata, 1)).toBeUndefined();
  now.s = 1_000; // forgotten, not merely hidden
  expect(tokens.get('token-a', metadata, 1)).toBeUndefined();
});

test('it holds at most its capacity, evicting the least recently remembered', () => {
  const now = { s: 1_000 };
  const tokens = cache(now, 3);
  for (const t of ['t1', 't2', 't3']) tokens.set(t, metadata, 1, 2_000, t);
  tokens.set('t1', metadata, 1, 2_000, 't1'); // remembered again: now the newest
  tokens.set('t4', metadata, 1, 2_000, 't4');
  expect(tokens.size).toBe(3);
  expect(['t1', 't2', 't3', 't4'].map((t) => tokens.get(t, metadata, 1))).toEqual(['t1', undefined, 't3', 't4']);
});

test('the default capacity bounds memory at a thousand tokens', () => {
  const tokens = cache({ s: 0 });
  for (let i = 0; i < MAX_VERIFIED_TOKENS + 50; i++) tokens.set(`token-${i}`, metadata, 1, 10, i.toString());
  expect(tokens.size).toBe(MAX_VERIFIED_TOKENS);
  expect(tokens.get('token-49', metadata, 1)).toBeUndefined();
  expect(tokens.get('token-50', metadata, 1)).toBe('50');
});
