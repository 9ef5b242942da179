/**
 * Microsoft's own client libraries, MSAL Node's ConfidentialClientApplication and Azure Identity's
 * credentials, as partners use them; each run in its own Node process (nothing of this repository's code
 * loaded) with NODE_EXTRA_CA_CERTS.
 *
 * - docs/contributing.md §2.3's snippets (the libraries against `npm start`'s stand-in), taken from that
 *   page, type-checked and run against `npm start` started with a PORT as the page says to (the stand-in on
 *   the next port): the token each gets posts a draw that answers 204.
 * - docs/partners.md §1.3's tables, read from that page: each mistake of its second table is made through
 *   each library configured for Entra itself (`login.microsoftonline.com`, led to the local Entra
 *   stand-in by tests/support/entraHost.cjs), and the library throws what its first table says, with the
 *   status, `error` and AADSTS code the row gives. Then a wrong tenant id and an untrusted certificate at
 *   `npm start`'s stand-in, where the libraries read the metadata first (the first table's last column).
 */
import { execFile } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import ts from 'typescript';
import { generate } from 'selfsigned';
import { DEMO_TENANT_ID } from '../../dev/demoData';
import { clientCertificate, localCertificateAuthority } from '../../dev/localCertificates';
import { startLocalEntra, type LocalEntra } from '../../dev/localEntra';
import { clientAssertion } from '../../examples/submit-draws';
import { spawnDevHostOnFreePort, type DevHostProcess } from '../support/devHostProcess';
import { trustingFetch } from '../support/localCa';
import { typeErrors } from '../support/typeCheck';

const ROOT = join(__dirname, '..', '..');
/** Under the repository, so that the libraries resolve from its node_modules; git-ignored. */
const DIR = join(ROOT, 'dist', 'partner-snippets');
const PAGES = {
  partners: { file: 'docs/partners.md', text: readFileSync(join(ROOT, 'docs', 'partners.md'), 'utf8') },
  contributing: { file: 'docs/contributing.md', text: readFileSync(join(ROOT, 'docs', 'contributing.md'), 'utf8') },
};
/** Where the local run's snippets are: the contributors' guide, since partners have no `npm start`. */
const LOCAL = '### 2.3';
const CA = '.local/certificates/ca/cert.pem';
const ENTRA_HOST = 'login.microsoftonline.com';
const SCOPE = 'api://draw-request-service/.default';
const OTHER_TENANT = '11111111-2222-4333-8444-555555555555';

/** A section of a page (docs/partners.md unless told), from its heading to the next one of its level or above. */
function sectionOf(heading: string, { file, text } = PAGES.partners): string {
  const start = text.indexOf(`\n${heading} `) + 1;
  if (start < 1) throw new Error(`${file} has no heading ${heading}`);
  const level = heading.split(' ')[0];
  const end = text.slice(start + heading.length).search(new RegExp(`\\n#{2,${level.length}} `));
  return text.slice(start, end < 0 ? undefined : start + heading.length + end);
}

/** The `ts` blocks of a section, with the text that introduces each. */
function snippetsOf(heading: string, page = PAGES.partners): Array<{ title: string; code: string }> {
  return [...sectionOf(heading, page).matchAll(/([^\n]+):\n\n```ts\n([\s\S]*?)```/g)].map((m) => ({ title: m[1], code: m[2] }));
}

/** The Markdown tables of a section: each its header's cells, then its rows' cells. */
function tablesOf(section: string): Array<{ header: string[]; rows: string[][] }> {
  const cells = (line: string) =>
    line
      .trim()
      .replace(/^\||\|$/g, '')
      .split('|')
      .map((c) => c.trim());
  return [...section.matchAll(/(?:^\|.*\n)+/gm)].map((m) => {
    const [header, , ...rows] = m[0].trimEnd().split('\n').map(cells);
    return { header, rows };
  });
}

/** The `code spans` of a table cell, in order. */
const spans = (cell: string) => [...cell.matchAll(/`([^`]+)`/g)].map((m) => m[1]);

/** After a snippet: post one draw with the `token` it ends holding, and print the answer's status. */
const POST_WITH_TOKEN = `
const response = await fetch(process.env.DRAW_URL ?? '', {
  method: 'POST',
  headers: { Authorization: \`Bearer \${token}\`, 'Content-Type': 'application/json' },
  body: process.env.DRAW_BODY,
});
console.log(JSON.stringify({ status: response.status }));
`;

interface Run {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

function runNode(file: string, env: Record<string, string>, nodeArgs: readonly string[] = []): Promise<Run> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [...nodeArgs, file],
      { cwd: ROOT, env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...env }, timeout: 60_000 },
      (error, stdout, stderr) => resolve({ code: error === null ? 0 : typeof error.code === 'number' ? error.code : null, stdout, stderr }),
    );
  });
}

/** A partner's module: type-checked as TypeScript, then run as the JavaScript tsc makes of it. */
function writeModule(name: string, source: string): { ts: string; js: string } {
  const tsFile = join(DIR, `${name}.mts`);
  const jsFile = join(DIR, `${name}.mjs`);
  writeFileSync(tsFile, source);
  writeFileSync(jsFile, ts.transpileModule(source, { compilerOptions: { module: ts.ModuleKind.ES2022, target: ts.ScriptTarget.ES2022 } }).outputText);
  return { ts: tsFile, js: jsFile };
}

/** What a partner's process prints of the error its library threw: the fields partners can match on. */
const CATCH_AND_PRINT = `
} catch (error) {
  const e = error as { name: string; errorCode?: string; errorNo?: number; status?: number; message: string };
  console.log(JSON.stringify({ name: e.name, errorCode: e.errorCode, errorNo: e.errorNo, status: e.status, message: e.message }));
}
`;

interface Thrown {
  readonly token?: true;
  readonly name?: string;
  readonly errorCode?: string;
  readonly errorNo?: number | string;
  readonly status?: number;
  readonly message?: string;
}

async function runAttempt(name: string, source: string, env: Record<string, string>, nodeArgs: readonly string[] = []): Promise<Thrown> {
  const run = await runNode(writeModule(name, source).js, env, nodeArgs);
  if (run.stdout.trim() === '') throw new Error(`${name} printed nothing (exit ${run.code}):\n${run.stderr}`);
  return JSON.parse(run.stdout) as Thrown;
}

// contributing §2.3's PORT: "`PORT=8080 npm start` serves on 8080 and puts the stand-in on 8081".
const portExample = /`PORT=(\d+) npm start`\s+serves\s+on\s+(\d+)\s+and\s+puts\s+the\s+stand-in\s+on\s+(\d+)/.exec(sectionOf(LOCAL, PAGES.contributing));
if (portExample === null) throw new Error("docs/contributing.md §2.3 no longer gives PORT's example as this test reads it");
const STAND_IN_AFTER_PORT = Number(portExample[3]) - Number(portExample[1]);

let host: DevHostProcess;
let port: number;
let printedAuthority: string;

beforeAll(async () => {
  rmSync(DIR, { recursive: true, force: true });
  mkdirSync(DIR, { recursive: true });
  ({ host, port } = await spawnDevHostOnFreePort());
  printedAuthority = /authority (\S+)/.exec(host.output())?.[1] ?? `(no authority in the dev host's output:\n${host.output()})`;
}, 60_000);
afterAll(async () => {
  await host?.stop();
});

const standInPort = () => port + STAND_IN_AFTER_PORT;
/** What contributing §2.3 says to do with another PORT: write its next port wherever 7072 appears. */
const atThisRun = (code: string) => code.replaceAll('7072', String(standInPort()));
const snippets = snippetsOf(LOCAL, PAGES.contributing);
/** §1.1's snippets for Entra itself: compiled here; run below as the mistakes' tests write them. */
const entraSnippets = snippetsOf('### 1.1');
const draw = (loanNumber: number) => JSON.stringify([{ loanNumber, requestor: 'jane.doe@partner.example', amount: 10 }]);

test('as contributing §2.3 says, PORT moves the service and the stand-in follows on the next port', () => {
  expect(portExample[2]).toBe(portExample[1]);
  expect(STAND_IN_AFTER_PORT).toBe(1);
  expect(host.url).toBe(`http://127.0.0.1:${port}/DrawRequest`);
  expect(printedAuthority).toBe(`https://127.0.0.1:${standInPort()}/${DEMO_TENANT_ID}`);
});

test('docs/contributing.md §2.3 holds the four snippets: MSAL and Azure Identity, each with the certificate and the secret', () => {
  expect(snippets.map((s) => s.title)).toEqual([
    'MSAL Node, with the demo certificate',
    'MSAL Node, with the demo secret',
    'Azure Identity, with the demo certificate',
    'Azure Identity, with the demo secret',
  ]);
  // Every place the port appears says where it comes from.
  for (const { code } of snippets) {
    for (const line of code.split('\n').filter((l) => /https:\/\/127\.0\.0\.1:7072/.test(l))) expect(line).toContain("// 7072: npm start's PORT + 1");
  }
});

test("§1.1's snippets for Entra are MSAL Node and Azure Identity with a certificate", () => {
  expect(entraSnippets.map((s) => s.title)).toEqual([
    'JavaScript / TypeScript, MSAL Node (`@azure/msal-node`)',
    'JavaScript / TypeScript, Azure Identity (`@azure/identity`)',
  ]);
});

test('every TypeScript snippet of partners §1 and contributing §2.3 compiles under --strict against the libraries partners install', () => {
  const files = [...entraSnippets, ...snippets].map((s, i) => writeModule(`typed-${i}`, `${s.code}${POST_WITH_TOKEN}export {};\n`).ts);
  expect(
    typeErrors(files, { module: ts.ModuleKind.NodeNext, moduleResolution: ts.ModuleResolutionKind.NodeNext, types: ['node'], lib: ['lib.es2022.d.ts'] }),
  ).toEqual([]);
});

/** The demo partner's loans that take a draw (1003 has no investor). */
const DRAWABLE = [1001, 1002, 1004, 1005];

describe.each(snippets.map((s, i) => [s.title, s.code, DRAWABLE[i]] as const))('%s', (_title, code, loanNumber) => {
  test('gets a token from the local provider over HTTPS, and the draw it posts answers 204', async () => {
    const file = writeModule(`run-${loanNumber}`, `${atThisRun(code)}${POST_WITH_TOKEN}`).js;
    const run = await runNode(file, { NODE_EXTRA_CA_CERTS: CA, DRAW_URL: host.url, DRAW_BODY: draw(loanNumber) });
    expect(run.stderr).toBe('');
    expect(JSON.parse(run.stdout)).toEqual({ status: 204 });
  });
});

// ---------------------------------------------------------------------------------------------
// §1.3: what each library throws when Entra refuses
// ---------------------------------------------------------------------------------------------

const [libraryTable, mistakeTable] = tablesOf(sectionOf('### 1.3'));
type Library = 'MSAL Node' | 'Azure Identity';
const slug = (library: Library) => (library === 'MSAL Node' ? 'msal' : 'identity');
/** Per library, §1.3's first table: what it throws when Entra refuses, and when the metadata cannot be read. */
const LIBRARIES = new Map(
  libraryTable.rows.map(([library, refused, noMetadata]) => [
    library as Library,
    { refused: spans(refused)[0], noMetadata: { name: spans(noMetadata)[0], code: spans(noMetadata).at(-1) as string } },
  ]),
);
/** §1.3's second table: each mistake with Entra's status, `error` and AADSTS code. */
const MISTAKES = mistakeTable.rows.map(([mistake, status, error, code]) => ({
  mistake,
  status: Number(spans(status)[0]),
  error: spans(error)[0],
  code: spans(code)[0],
}));

/** How a partner's code makes a mistake: what it gives the library other than §1.1's right values. */
interface Attempt {
  readonly tenant?: string;
  readonly clientId?: string;
  readonly scope?: string;
  /** The credential: a secret (the demo secret by default), a certificate, or a client assertion the partner signs. */
  readonly secret?: string;
  readonly certificate?: 'registered' | 'stranger';
  readonly assertion?: { readonly issuer?: string; readonly audience?: string };
  /** How far the partner's clock is off. */
  readonly clockSkewMs?: number;
}

/** Clients of the stand-in that plays Entra, besides the demo partner. */
const EXPIRED = { clientId: 'expired-secret-partner', secret: 'expired-secret' };
const UNASSIGNED = { clientId: 'unassigned-partner', secret: 'unassigned-secret' };

/** One way to make each mistake of §1.3's table, keyed by its text there. */
const MAKING: Readonly<Record<string, Attempt>> = {
  'wrong tenant id': { tenant: OTHER_TENANT },
  'wrong client id': { clientId: 'not-a-registered-client' },
  'wrong client secret': { secret: 'not-the-secret' },
  'expired client secret': EXPIRED,
  'certificate not registered': { certificate: 'stranger' },
  'clock off': { certificate: 'registered', clockSkewMs: -60 * 60 * 1000 },
  'own client assertion names another client': { assertion: { issuer: 'other-partner' } },
  'own client assertion for another token endpoint': { assertion: { audience: `https://${ENTRA_HOST}/${OTHER_TENANT}/oauth2/v2.0/token` } },
  'wrong App ID URI': { scope: 'api://someone-else/.default' },
  'scope without `/.default`': { scope: 'api://draw-request-service/Draws.Submit' },
  'app role not granted': UNASSIGNED,
};

const installedVersion = (pkg: string) => (JSON.parse(readFileSync(join(ROOT, 'node_modules', pkg, 'package.json'), 'utf8')) as { version: string }).version;

test('§1.3 lists both libraries, names the versions run here, and every mistake it lists is made below', () => {
  expect([...LIBRARIES.keys()]).toEqual(['MSAL Node', 'Azure Identity']);
  const section = sectionOf('### 1.3');
  // A library upgrade may change what it throws: the page names the versions these tests ran.
  expect(section).toContain(`MSAL Node ${installedVersion('@azure/msal-node').split('.').slice(0, 2).join('.')}`);
  expect(section).toContain(`Azure Identity ${installedVersion('@azure/identity').split('.').slice(0, 2).join('.')}`);
  expect(MISTAKES.map((m) => m.mistake).sort()).toEqual(Object.keys(MAKING).sort());
  for (const m of MISTAKES) {
    expect([400, 401]).toContain(m.status);
    expect(m.error).toMatch(/^[a-z_]+$/);
    expect(m.code).toMatch(/^AADSTS\d+$/);
  }
});

describe("§1.3's mistakes, through each library configured for Entra itself", () => {
  let entra: LocalEntra;
  let registered: { keyPath: string; combinedPath: string; thumbprintSha256: string; certificate: string; privateKey: string };
  let stranger: { keyPath: string; combinedPath: string; thumbprintSha256: string };

  beforeAll(async () => {
    const ca = await localCertificateAuthority();
    const demo = await clientCertificate('demo-partner');
    registered = { ...demo, certificate: demo.cert, privateKey: demo.key };
    // A certificate the application does not hold, with its own key.
    const other = await generate([{ name: 'commonName', value: 'not registered' }], { keySize: 2048, algorithm: 'sha256' });
    stranger = { keyPath: join(DIR, 'stranger-key.pem'), combinedPath: join(DIR, 'stranger-client.pem'), thumbprintSha256: thumbprint(other.cert) };
    writeFileSync(stranger.keyPath, other.private);
    writeFileSync(stranger.combinedPath, other.private + other.cert);
    // Entra's name on the stand-in's certificate, from the local CA the partner's process trusts.
    const tls = await generate([{ name: 'commonName', value: ENTRA_HOST }], {
      keySize: 2048,
      algorithm: 'sha256',
      notAfterDate: new Date(Date.now() + 24 * 60 * 60 * 1000),
      ca: { key: ca.key, cert: ca.cert },
      extensions: [
        { name: 'basicConstraints', cA: false },
        { name: 'extKeyUsage', serverAuth: true },
        { name: 'subjectAltName', altNames: [{ type: 2, value: ENTRA_HOST }] },
      ],
    });
    entra = await startLocalEntra({
      tenantId: DEMO_TENANT_ID,
      audience: 'api://draw-request-service',
      port: 0,
      authorityHost: `https://${ENTRA_HOST}`,
      tls: { key: tls.private, cert: tls.cert },
      clients: {
        'demo-partner': { secret: 'local-demo', certificates: [demo.cert] },
        [EXPIRED.clientId]: { secret: 'the-current-secret', expiredSecrets: [EXPIRED.secret] },
        [UNASSIGNED.clientId]: { secret: UNASSIGNED.secret, assigned: false },
      },
    });
  }, 60_000);
  afterAll(async () => {
    await entra?.stop();
  });

  const thumbprint = (pem: string) => new X509Certificate(pem).fingerprint256.replaceAll(':', '').toLowerCase();

  /** The partner's program, as §1.1 writes it for each library, with the attempt's values. */
  function program(library: Library, a: Attempt): string {
    const tenant = a.tenant ?? DEMO_TENANT_ID;
    const clientId = a.clientId ?? 'demo-partner';
    const scope = a.scope ?? SCOPE;
    const files = a.certificate === 'stranger' ? stranger : registered;
    if (library === 'MSAL Node') {
      const credential =
        a.certificate !== undefined
          ? `clientCertificate: { thumbprintSha256: '${files.thumbprintSha256}', privateKey: readFileSync('${files.keyPath}', 'utf8') }`
          : a.assertion !== undefined
            ? "clientAssertion: process.env.CLIENT_ASSERTION ?? ''"
            : `clientSecret: '${a.secret ?? 'local-demo'}'`;
      return `import { readFileSync } from 'node:fs';
import { ConfidentialClientApplication } from '@azure/msal-node';
void readFileSync;
const app = new ConfidentialClientApplication({
  auth: { clientId: '${clientId}', authority: 'https://${ENTRA_HOST}/${tenant}', ${credential} },
});
try {
  await app.acquireTokenByClientCredential({ scopes: ['${scope}'] });
  console.log(JSON.stringify({ token: true }));${CATCH_AND_PRINT}`;
    }
    const credential =
      a.certificate !== undefined
        ? `new ClientCertificateCredential('${tenant}', '${clientId}', { certificatePath: '${files.combinedPath}' })`
        : a.assertion !== undefined
          ? `new ClientAssertionCredential('${tenant}', '${clientId}', async () => process.env.CLIENT_ASSERTION ?? '')`
          : `new ClientSecretCredential('${tenant}', '${clientId}', '${a.secret ?? 'local-demo'}')`;
    return `import { ClientAssertionCredential, ClientCertificateCredential, ClientSecretCredential } from '@azure/identity';
const credential = ${credential};
try {
  await credential.getToken('${scope}');
  console.log(JSON.stringify({ token: true }));${CATCH_AND_PRINT}`;
  }

  let runs = 0;
  /** Runs the partner's program with connections to Entra led to the stand-in. */
  function attempt(library: Library, a: Attempt): Promise<Thrown> {
    const env: Record<string, string> = { NODE_EXTRA_CA_CERTS: CA, ENTRA_AT: String(entra.port) };
    if (a.clockSkewMs !== undefined) env.CLOCK_SKEW_MS = String(a.clockSkewMs);
    if (a.assertion !== undefined) {
      // Signed with the registered certificate's key, as examples/submit-draws.ts signs one: only the named claim is wrong.
      env.CLIENT_ASSERTION = clientAssertion(a.assertion.issuer ?? 'demo-partner', a.assertion.audience ?? entra.tokenUrl, registered);
    }
    const name = `entra-${slug(library)}-${++runs}`;
    return runAttempt(name, program(library, a), env, ['--require', join(ROOT, 'tests', 'support', 'entraHost.cjs')]);
  }

  describe.each(['MSAL Node', 'Azure Identity'] as const)('%s', (library) => {
    // Without these, a refusal below could come from the way Entra is reached rather than from the mistake.
    const right: Array<[string, Attempt]> = [
      ['the right secret', {}],
      ['the registered certificate', { certificate: 'registered' }],
      ['a client assertion signed right', { assertion: {} }],
    ];
    test.each(right)('%s gets a token', async (_name, right) => {
      expect(await attempt(library, right)).toEqual({ token: true });
    });

    test.each(MISTAKES)('$mistake: $status $error $code', async ({ mistake, status, error, code }) => {
      const thrown = await attempt(library, MAKING[mistake]);
      const documented = LIBRARIES.get(library)?.refused;
      if (library === 'MSAL Node') {
        expect(thrown).toMatchObject({ name: documented, errorCode: error, errorNo: Number(code.slice('AADSTS'.length)), status });
      } else {
        expect(thrown.name).toBe(documented);
      }
      expect(thrown.message?.startsWith(`${error}: `)).toBe(true);
      expect(thrown.message).toContain(`${code}:`);
    });
  });

  test("Azure Identity's ChainedTokenCredential takes a refusal as 'try the next credential', and when none succeeds keeps each error", async () => {
    const chain = (credentials: string[]) => `import { ChainedTokenCredential, ClientSecretCredential } from '@azure/identity';
const credential = new ChainedTokenCredential(${credentials.map((secret) => `new ClientSecretCredential('${DEMO_TENANT_ID}', 'demo-partner', '${secret}')`).join(', ')});
try {
  await credential.getToken('${SCOPE}');
  console.log(JSON.stringify({ token: true }));
} catch (error) {
  const e = error as { name: string; message: string; errors: Array<{ name: string }> };
  console.log(JSON.stringify({ name: e.name, message: e.message, errorCode: e.errors.map((x) => x.name).join(' ') }));
}
`;
    const env = { NODE_EXTRA_CA_CERTS: CA, ENTRA_AT: String(entra.port) };
    const preload = ['--require', join(ROOT, 'tests', 'support', 'entraHost.cjs')];
    expect(await runAttempt('chain-next', chain(['not-the-secret', 'local-demo']), env, preload)).toEqual({ token: true });
    const thrown = await runAttempt('chain-none', chain(['not-the-secret', 'nor-this-one']), env, preload);
    expect(thrown.name).toBe('AggregateAuthenticationError');
    expect(thrown.errorCode).toBe(`${LIBRARIES.get('Azure Identity')?.refused} ${LIBRARIES.get('Azure Identity')?.refused}`);
    expect(thrown.message?.match(/AADSTS7000215:/g)).toHaveLength(2);
  });
});

describe("at npm start's stand-in, where the libraries read the tenant's metadata first (§1.3's last column)", () => {
  /** contributing §2.3's configuration, with a tenant and a secret of the attempt's. */
  function localProgram(library: Library, tenant: string, secret = 'local-demo'): string {
    const authorityHost = `https://127.0.0.1:${standInPort()}`;
    if (library === 'MSAL Node') {
      return `import { ConfidentialClientApplication } from '@azure/msal-node';
const app = new ConfidentialClientApplication({
  auth: { clientId: 'demo-partner', authority: '${authorityHost}/${tenant}', knownAuthorities: ['${new URL(authorityHost).host}'], clientSecret: '${secret}' },
});
try {
  await app.acquireTokenByClientCredential({ scopes: ['${SCOPE}'] });
  console.log(JSON.stringify({ token: true }));${CATCH_AND_PRINT}`;
    }
    return `import { ClientSecretCredential } from '@azure/identity';
const credential = new ClientSecretCredential('${tenant}', 'demo-partner', '${secret}', { authorityHost: '${authorityHost}', disableInstanceDiscovery: true });
try {
  await credential.getToken('${SCOPE}');
  console.log(JSON.stringify({ token: true }));${CATCH_AND_PRINT}`;
  }

  test('the metadata of another tenant is refused as Entra refuses it: 400 invalid_tenant AADSTS90002', async () => {
    const response = await trustingFetch(join(ROOT, CA))(`https://127.0.0.1:${standInPort()}/${OTHER_TENANT}/v2.0/.well-known/openid-configuration`);
    expect(response.status).toBe(400);
    const body = (await response.json()) as { error: string; error_codes: number[]; error_description: string };
    expect(body).toMatchObject({ error: 'invalid_tenant', error_codes: [90002] });
    expect(body.error_description).toMatch(/^AADSTS90002: Tenant '11111111-2222-4333-8444-555555555555' not found/);
  });

  describe.each(['MSAL Node', 'Azure Identity'] as const)('%s', (library) => {
    const noMetadata = () => LIBRARIES.get(library)?.noMetadata ?? { name: '(not in §1.3)', code: '(not in §1.3)' };
    const expectNoMetadata = (thrown: Thrown) => {
      expect(thrown.name).toBe(noMetadata().name);
      if (library === 'MSAL Node') expect(thrown.errorCode).toBe(noMetadata().code);
      expect(thrown.message?.startsWith(`${noMetadata().code}: `)).toBe(true);
    };

    test("a wrong tenant id: the metadata error, and Entra's AADSTS90002 is dropped", async () => {
      const thrown = await runAttempt(`local-tenant-${slug(library)}`, localProgram(library, OTHER_TENANT), { NODE_EXTRA_CA_CERTS: CA });
      expectNoMetadata(thrown);
      expect(thrown.message).not.toContain('AADSTS');
    });

    test("without NODE_EXTRA_CA_CERTS the stand-in's certificate is not trusted: the same metadata error", async () => {
      expectNoMetadata(await runAttempt(`local-untrusted-${slug(library)}`, localProgram(library, DEMO_TENANT_ID), {}));
    });

    test('once the metadata is read, a refusal is as at Entra: a wrong secret is invalid_client AADSTS7000215', async () => {
      const thrown = await runAttempt(`local-secret-${slug(library)}`, localProgram(library, DEMO_TENANT_ID, 'not-the-secret'), { NODE_EXTRA_CA_CERTS: CA });
      expect(thrown.name).toBe(LIBRARIES.get(library)?.refused);
      expect(thrown.message).toMatch(/^invalid_client: [^]*AADSTS7000215:/);
    });
  });
});
