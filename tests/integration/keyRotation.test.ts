/**
 * Key rotation (docs/contract.md §3): the provider publishes a new signing key and the same instance (no new
 * Functions instance, no restart) picks it up: a token with the new kid is refused as an unknown key
 * while jose's cooldown since the last key-set fetch holds, and accepted once it has passed, after
 * exactly one refetch. JWKS fetches are counted at the local provider.
 *
 * The clock is the test's (tests/support/clock.ts): "within the cooldown" is the clock not having moved,
 * however slow the machine, and "past it" is the clock moved on, without waiting. The service's own
 * default timings are used.
 *
 * oauth2-mock-server: `keys.generate`/`keys.add` append a key, the JWKS serves every key, and
 * `keys.get()` without a kid is round-robin, so tokens here always name their kid.
 */
import { exportJWK, generateKeyPair, type JWK } from 'jose';
import { DEFAULT_PROVIDER_TIMINGS } from '../../lib/auth';
import { AUDIENCE, CLIENT, Harness, TENANT, draw, type Reply } from '../support/harness';
import { expectGenericProblem } from '../support/problems';
import { holdTheClock, moveClockTo } from '../support/clock';

const COOLDOWN_MS = DEFAULT_PROVIDER_TIMINGS.jwksCooldownMs;

holdTheClock();

let h: Harness;
/** When the provider served its key set to the service, and which kids it served. */
const served: { at: number; kids: string[] }[] = [];
/** Kids the provider has retired: no longer in its key set (it can still sign with them). */
const retired = new Set<string>();
let oldKid: string;

/** The keys the provider will rotate to, generated before anything is fetched. */
const upcoming: Record<string, JWK> = {};

beforeAll(async () => {
  for (const kid of ['rotated-1', 'rotated-2']) upcoming[kid] = await newSigningKey(kid);
  h = await Harness.start({ AUTH_TENANT_ID: TENANT, AUTH_REQUIRED_ROLE: 'Draws.Submit' });
  const store = h.provider.server.issuer.keys;
  oldKid = store.toJSON()[0].kid;
  // The JWKS endpoint answers with keys.toJSON(): count each answer and leave out retired keys.
  const toJSON = store.toJSON.bind(store);
  store.toJSON = (includePrivateFields?: boolean) => {
    const keys = toJSON(includePrivateFields).filter((k) => !retired.has(k.kid));
    served.push({ at: Date.now(), kids: keys.map((k) => k.kid) });
    return keys;
  };
});
afterAll(() => h.stop());

/** An Entra-shaped app token signed with the provider's key `kid`. */
function mint(kid: string): Promise<string> {
  return h.provider.server.issuer.buildToken({
    kid,
    scopesOrTransform: (_header, payload) =>
      Object.assign(payload, { aud: AUDIENCE, sub: CLIENT, azp: CLIENT, idtyp: 'app', tid: TENANT, roles: ['Draws.Submit'] }),
  });
}

/** A new RSA key in JWK form with this kid. */
async function newSigningKey(kid: string): Promise<JWK> {
  const { privateKey } = await generateKeyPair('RS256', { extractable: true });
  return { ...(await exportJWK(privateKey)), kid, alg: 'RS256' };
}

async function post(token: string): Promise<{ reply: Reply; loan: number }> {
  const loan = await h.loan();
  return { reply: await h.post([draw(loan)], { token }), loan };
}

async function expectAccepted(token: string): Promise<void> {
  const { reply, loan } = await post(token);
  expect(reply.status).toBe(204);
  expect(h.recordOf(reply)?.outcome).toBe('Accepted');
  expect(await h.drawsFor(loan)).toHaveLength(1);
}

async function expectUnknownKey(token: string): Promise<void> {
  const { reply, loan } = await post(token);
  expectGenericProblem(reply, 401);
  expect(h.recordOf(reply)).toMatchObject({ outcome: 'Unauthorized', reason: 'ERR_AUTH_UNKNOWN_KEY', reasonDetail: undefined });
  expect(await h.drawsFor(loan)).toHaveLength(0);
}

/** The kids the provider's JWKS endpoint serves, over HTTP (not counted as the service's fetch). */
async function publishedKids(): Promise<string[]> {
  const metadata = (await (await fetch(h.provider.openIdConfigUrl)).json()) as { jwks_uri: string };
  const { keys } = (await (await fetch(metadata.jwks_uri)).json()) as { keys: { kid: string }[] };
  served.pop();
  return keys.map((k) => k.kid);
}

const lastFetch = () => served[served.length - 1];

test('a new kid is refused within the cooldown and picked up after it, on the same instance, with one refetch', async () => {
  // The instance fetches the key set on its first token.
  expect(served).toHaveLength(0);
  await expectAccepted(await mint(oldKid));
  expect(served).toHaveLength(1);
  const fetchedAt = lastFetch().at;

  // The provider rotates: its key set now serves the new kid beside the old one.
  await h.provider.server.issuer.keys.add(upcoming['rotated-1']);
  expect(await publishedKids()).toEqual([oldKid, 'rotated-1']);

  // Within the cooldown since the fetch, the new kid is unknown to the instance and not worth a refetch.
  await expectUnknownKey(await mint('rotated-1'));
  await Promise.all([1, 2, 3].map(async () => expectUnknownKey(await mint('rotated-1'))));
  moveClockTo(fetchedAt + COOLDOWN_MS - 1); // the last moment of the cooldown
  await expectUnknownKey(await mint('rotated-1'));
  expect(served).toHaveLength(1);
  await expectAccepted(await mint(oldKid)); // the old key still verifies from the cached set
  expect(served).toHaveLength(1);

  // Past the cooldown, the first token with the new kid refetches the key set once and is accepted.
  moveClockTo(fetchedAt + COOLDOWN_MS);
  await expectAccepted(await mint('rotated-1'));
  expect(served).toHaveLength(2);
  expect(lastFetch().kids).toEqual([oldKid, 'rotated-1']);

  // Both keys are now held: neither needs another fetch.
  await Promise.all([expectAccepted(await mint('rotated-1')), expectAccepted(await mint(oldKid)), expectAccepted(await mint('rotated-1'))]);
  expect(served).toHaveLength(2);
});

test('a key the provider retires is trusted until the key set is next fetched, then refused as unknown', async () => {
  const fetchedAt = lastFetch().at;

  // The provider publishes a newer key and drops the oldest from its key set.
  await h.provider.server.issuer.keys.add(upcoming['rotated-2']);
  retired.add(oldKid);
  expect(await publishedKids()).toEqual(['rotated-1', 'rotated-2']);

  // The instance still holds the old key from its last fetch (fresh for jwksMaxAgeMs): a token
  // signed with it is accepted, and sent again is answered from the instance's memory of it.
  const oldToken = await mint(oldKid);
  await expectAccepted(oldToken);
  await expectAccepted(oldToken);
  expect(served).toHaveLength(2);

  // The new kid after the cooldown refetches; the set fetched no longer has the old key.
  moveClockTo(fetchedAt + COOLDOWN_MS);
  await expectAccepted(await mint('rotated-2'));
  expect(served).toHaveLength(3);
  expect(lastFetch().kids).toEqual(['rotated-1', 'rotated-2']);
  await expectUnknownKey(await mint(oldKid)); // within the new cooldown: refused without another fetch
  await expectUnknownKey(oldToken); // the remembered acceptance went with the key set it was checked against
  expect(served).toHaveLength(3);
  await expectAccepted(await mint('rotated-1'));

  // Past that cooldown, the retired kid costs one refetch and is still unknown; then the cooldown holds again.
  moveClockTo(lastFetch().at + COOLDOWN_MS);
  await expectUnknownKey(await mint(oldKid));
  expect(served).toHaveLength(4);
  await expectUnknownKey(await mint(oldKid));
  expect(served).toHaveLength(4);
});
