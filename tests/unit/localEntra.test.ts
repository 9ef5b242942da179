/**
 * The local Entra stand-in's token endpoint decisions (dev/localEntra.ts), case by case: each request a
 * partner's code can make gets Entra's answer: a token, or the status, `error` and AADSTS code Entra
 * gives. Client assertions are built as Microsoft's libraries build them (PS256 with `x5t#S256`, the
 * example client's own builder) and as older ones do (RS256 with `x5t`).
 */
import { X509Certificate, createHash, createPrivateKey } from 'node:crypto';
import { SignJWT } from 'jose';
import { generate } from 'selfsigned';
import { tokenRequestFields } from '../../dev/appTokens';
import { assertionRefusal, tokenRefusal, type ClientCredentials } from '../../dev/localEntra';
import { clientAssertion } from '../../examples/submit-draws';

const TOKEN_URL = 'https://127.0.0.1:7072/00000000-0000-4000-8000-0000000d3a05/oauth2/v2.0/token';
const AUDIENCE = 'api://draw-request-service';
const SCOPE = `${AUDIENCE}/.default`;

interface Pair {
  readonly certificate: string;
  readonly privateKey: string;
}
let registered: Pair;
let stranger: Pair;
let clients: Record<string, ClientCredentials>;

beforeAll(async () => {
  const make = async (cn: string) => {
    const pems = await generate([{ name: 'commonName', value: cn }], { keySize: 2048, algorithm: 'sha256' });
    return { certificate: pems.cert, privateKey: pems.private };
  };
  [registered, stranger] = await Promise.all([make('demo-partner'), make('stranger')]);
  clients = {
    'demo-partner': { secret: 'local-demo', certificates: [registered.certificate] },
    'secret-only': { secret: 's3cret' },
    'certificate-only': { certificates: [registered.certificate] },
    rotated: { secret: 'new-secret', expiredSecrets: ['old-secret'] },
    unassigned: { secret: 'u-secret', assigned: false },
  };
}, 30_000);

const thumbprint = (pem: string, algorithm: 'sha1' | 'sha256') => createHash(algorithm).update(new X509Certificate(pem).raw).digest('base64url');

/** An assertion signed with `signer`'s key, naming `named`'s certificate, with these claims over the right ones. */
async function assertion(
  options: { signer?: 'stranger'; named?: 'stranger'; alg?: 'PS256' | 'RS256'; claims?: Record<string, unknown>; client?: string } = {},
): Promise<string> {
  const { alg = 'RS256', client = 'demo-partner' } = options;
  // Named, not held: the table is built before the keys are generated.
  const signer = options.signer === 'stranger' ? stranger : registered;
  const named = options.named === 'stranger' ? stranger : registered;
  const now = Math.floor(Date.now() / 1000);
  const header =
    alg === 'PS256'
      ? { alg, typ: 'JWT', 'x5t#S256': thumbprint(named.certificate, 'sha256') }
      : { alg, typ: 'JWT', x5t: thumbprint(named.certificate, 'sha1') };
  return new SignJWT({ aud: TOKEN_URL, iss: client, sub: client, jti: 'j', nbf: now, iat: now, exp: now + 600, ...options.claims })
    .setProtectedHeader(header)
    .sign(createPrivateKey(signer.privateKey));
}

const codeOf = async (refusal: Promise<{ status: number; body: Record<string, unknown> } | undefined>) => {
  const answer = await refusal;
  return answer === undefined ? 'token' : [answer.status, answer.body.error, (answer.body.error_codes as number[])[0]];
};

describe('client assertions', () => {
  const verdict = async (jwt: string, client = 'demo-partner') => codeOf(assertionRefusal(jwt, client, clients[client]?.certificates ?? [], TOKEN_URL));

  test("the example client's assertion (PS256, x5t#S256, as MSAL builds it) authenticates the client", async () => {
    expect(await verdict(clientAssertion('demo-partner', TOKEN_URL, registered))).toBe('token');
  });

  test.each([
    ['RS256 naming the certificate by its SHA-1 x5t (older libraries)', {}, 'token'],
    ['PS256 naming it by x5t#S256', { alg: 'PS256' as const }, 'token'],
    ['a certificate the application does not hold', { signer: 'stranger' as const, named: 'stranger' as const }, [401, 'invalid_client', 700027]],
    ["the registered certificate's thumbprint, signed with another key", { signer: 'stranger' as const }, [401, 'invalid_client', 700027]],
    ['expired (beyond five minutes of skew)', { claims: { exp: Math.floor(Date.now() / 1000) - 400 } }, [401, 'invalid_client', 700024]],
    ['not yet valid', { claims: { nbf: Math.floor(Date.now() / 1000) + 900 } }, [401, 'invalid_client', 700024]],
    ['issued by another client', { claims: { iss: 'other-partner' } }, [401, 'invalid_client', 700021]],
    ['about another client', { claims: { sub: 'other-partner' } }, [401, 'invalid_client', 700021]],
    ['for two audiences, the token endpoint among them', { claims: { aud: ['https://example.test', TOKEN_URL] } }, [401, 'invalid_client', 5002741]],
    ['for another token endpoint', { claims: { aud: 'https://login.microsoftonline.com/other/oauth2/v2.0/token' } }, [401, 'invalid_client', 700023]],
    ['without an expiry', { claims: { exp: undefined } }, [400, 'invalid_request', 50027]],
  ])('%s', async (_name, options, expected) => {
    expect(await verdict(await assertion(options))).toEqual(expected);
  });

  test('a text that is not a JWT is malformed', async () => {
    expect(await verdict('not-a-jwt')).toEqual([400, 'invalid_request', 50027]);
  });

  test('a client with no certificate cannot use an assertion', async () => {
    expect(await verdict(await assertion({ client: 'secret-only' }), 'secret-only')).toEqual([401, 'invalid_client', 700027]);
  });
});

describe('the client-credentials request', () => {
  const request = async (form: Record<string, string>, authorization?: string) =>
    codeOf(tokenRefusal(tokenRequestFields(new URLSearchParams(form), authorization), clients, AUDIENCE, TOKEN_URL));
  const secretForm = { grant_type: 'client_credentials', client_id: 'demo-partner', client_secret: 'local-demo', scope: SCOPE };

  test.each([
    ['the right secret and scope', secretForm, 'token'],
    ['no grant_type', { ...secretForm, grant_type: undefined }, [400, 'invalid_request', 900144]],
    ['another grant', { ...secretForm, grant_type: 'password' }, [400, 'unsupported_grant_type', 70003]],
    ['no client_id', { ...secretForm, client_id: undefined }, [400, 'invalid_request', 900144]],
    ['an unknown client', { ...secretForm, client_id: 'stranger' }, [400, 'unauthorized_client', 700016]],
    ['no credential', { ...secretForm, client_secret: undefined }, [401, 'invalid_client', 7000216]],
    ['a wrong secret', { ...secretForm, client_secret: 'local-demo ' }, [401, 'invalid_client', 7000215]],
    ['a secret to a client that has none', { ...secretForm, client_id: 'certificate-only', client_secret: 'local-demo' }, [401, 'invalid_client', 7000215]],
    ['no scope', { ...secretForm, scope: undefined }, [400, 'invalid_request', 900144]],
    ['a blank scope', { ...secretForm, scope: '  ' }, [400, 'invalid_request', 900144]],
    ['a permission instead of /.default', { ...secretForm, scope: `${AUDIENCE}/Draws.Submit` }, [400, 'invalid_scope', 1002012]],
    ["another resource's /.default", { ...secretForm, scope: 'api://someone-else/.default' }, [400, 'invalid_resource', 500011]],
    ['the App ID URI with a trailing slash before /.default', { ...secretForm, scope: `${AUDIENCE}//.default` }, [400, 'invalid_resource', 500011]],
    ['a secret past its end date', { ...secretForm, client_id: 'rotated', client_secret: 'old-secret' }, [401, 'invalid_client', 7000222]],
    ['the secret that replaced it', { ...secretForm, client_id: 'rotated', client_secret: 'new-secret' }, 'token'],
    ['a secret the client never had', { ...secretForm, client_id: 'rotated', client_secret: 'local-demo' }, [401, 'invalid_client', 7000215]],
    ['a client granted no app role on the API', { ...secretForm, client_id: 'unassigned', client_secret: 'u-secret' }, [400, 'invalid_grant', 501051]],
    // The credential and the scope are judged before the role, as Entra does.
    ['that client with a wrong secret', { ...secretForm, client_id: 'unassigned', client_secret: 'nope' }, [401, 'invalid_client', 7000215]],
    [
      'that client with a permission instead of /.default',
      { ...secretForm, client_id: 'unassigned', client_secret: 'u-secret', scope: `${AUDIENCE}/Draws.Submit` },
      [400, 'invalid_scope', 1002012],
    ],
  ])('%s', async (_name, form, expected) => {
    const defined = Object.fromEntries(Object.entries(form).filter(([, v]) => v !== undefined)) as Record<string, string>;
    expect(await request(defined)).toEqual(expected);
  });

  test('the secret in HTTP Basic (client_secret_basic), URL-encoded as RFC 6749 says', async () => {
    const basic = `Basic ${Buffer.from(`${encodeURIComponent('secret-only')}:${encodeURIComponent('s3cret')}`).toString('base64')}`;
    expect(await request({ grant_type: 'client_credentials', scope: SCOPE }, basic)).toBe('token');
    const wrong = `Basic ${Buffer.from('secret-only:nope').toString('base64')}`;
    expect(await request({ grant_type: 'client_credentials', scope: SCOPE }, wrong)).toEqual([401, 'invalid_client', 7000215]);
    const malformed = `Basic ${Buffer.from('secret-only:%E0%A4%A').toString('base64')}`;
    expect(await request({ grant_type: 'client_credentials', scope: SCOPE }, malformed)).toEqual([401, 'invalid_client', 7000215]);
  });

  test('a client assertion needs its type; with it, the certificate stands in for the secret', async () => {
    const jwt = await assertion();
    const form = { grant_type: 'client_credentials', client_id: 'demo-partner', client_assertion: jwt, scope: SCOPE };
    expect(await request(form)).toEqual([400, 'invalid_request', 900144]);
    const typed = { ...form, client_assertion_type: 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer' };
    expect(await request(typed)).toBe('token');
    expect(await request({ ...typed, client_id: 'certificate-only', client_assertion: await assertion({ client: 'certificate-only' }) })).toBe('token');
    // The credential is checked before the scope, as Entra does.
    expect(await request({ ...typed, client_assertion: await assertion({ signer: 'stranger' }), scope: 'x' })).toEqual([401, 'invalid_client', 700027]);
    expect(await request({ ...typed, scope: `${AUDIENCE}/Draws.Submit` })).toEqual([400, 'invalid_scope', 1002012]);
  });
});
