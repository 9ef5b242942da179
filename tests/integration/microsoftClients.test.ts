/**
 * Microsoft's own client libraries against `npm start`: MSAL Node's ConfidentialClientApplication (a
 * certificate and a secret) and Azure Identity's ClientCertificateCredential and ClientSecretCredential,
 * each configured exactly as docs/partners.md §1.4 writes it. The snippets are taken from that page,
 * type-checked by the compiler, run in their own Node process with NODE_EXTRA_CA_CERTS (nothing of this
 * repository's code loaded), and the token each gets posts a draw that answers 204. Then the mistakes
 * partners make, through the same library, meet Entra's refusals.
 */
import { execFile } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import ts from 'typescript';
import { generate } from 'selfsigned';
import { DEMO_TENANT_ID } from '../../dev/demoData';
import { spawnDevHost, type DevHostProcess } from '../support/devHostProcess';
import { typeErrors } from '../support/typeCheck';

const ROOT = join(__dirname, '..', '..');
/** Under the repository, so that the libraries resolve from its node_modules; git-ignored. */
const DIR = join(ROOT, 'dist', 'partner-snippets');
const DOCUMENTED_HOST = '127.0.0.1:7072';
const CA = '.local/certificates/ca/cert.pem';

/** The `ts` blocks of a section of docs/partners.md (from its heading to the next one of its level or above), with the text that introduces each. */
function snippetsOf(heading: string): Array<{ title: string; code: string }> {
  const page = readFileSync(join(ROOT, 'docs', 'partners.md'), 'utf8');
  const start = page.indexOf(`${heading} `);
  const level = heading.split(' ')[0];
  const end = page.slice(start + heading.length).search(new RegExp(`\\n#{2,${level.length}} `));
  const section = page.slice(start, end < 0 ? undefined : start + heading.length + end);
  return [...section.matchAll(/([^\n]+):\n\n```ts\n([\s\S]*?)```/g)].map((m) => ({ title: m[1], code: m[2] }));
}

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

function runNode(file: string, env: Record<string, string>): Promise<Run> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [file],
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

let host: DevHostProcess;
let providerHost: string;

beforeAll(async () => {
  rmSync(DIR, { recursive: true, force: true });
  mkdirSync(DIR, { recursive: true });
  host = await spawnDevHost();
  // The provider's port follows the host's; the printed authority says where it is.
  const authority = /authority (https:\/\/[^\s/]+)\/([0-9a-f-]{36})/.exec(host.output());
  if (authority === null) throw new Error(`no authority in the dev host's output:\n${host.output()}`);
  expect(authority[2]).toBe(DEMO_TENANT_ID);
  providerHost = new URL(authority[1]).host;
}, 60_000);
afterAll(async () => {
  await host?.stop();
});

const snippets = snippetsOf('### 1.4');
/** §1.1's snippets for Entra itself: compiled here, not run (there is no tenant here). */
const entraSnippets = snippetsOf('### 1.1');
const atThisRun = (code: string) => code.replaceAll(DOCUMENTED_HOST, providerHost);
const draw = (loanNumber: number) => JSON.stringify([{ loanNumber, requestor: 'jane.doe@partner.example', amount: 10 }]);

test('docs/partners.md §1.4 holds the four snippets: MSAL and Azure Identity, each with the certificate and the secret', () => {
  expect(snippets.map((s) => s.title)).toEqual([
    'MSAL Node, with the demo certificate',
    'MSAL Node, with the demo secret',
    'Azure Identity, with the demo certificate',
    'Azure Identity, with the demo secret',
  ]);
});

test("§1.1's snippets for Entra are MSAL Node and Azure Identity with a certificate", () => {
  expect(entraSnippets.map((s) => s.title)).toEqual([
    'JavaScript / TypeScript, MSAL Node (`@azure/msal-node`)',
    'JavaScript / TypeScript, Azure Identity (`@azure/identity`)',
  ]);
});

test('every TypeScript snippet of §1 compiles under --strict against the libraries partners install', () => {
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

describe("partners' mistakes, made through MSAL Node, meet Entra's refusals", () => {
  const msal = (auth: string, scope = 'api://draw-request-service/.default') => `
import { readFileSync } from 'node:fs';
import { ConfidentialClientApplication } from '@azure/msal-node';
const app = new ConfidentialClientApplication({
  auth: { clientId: 'demo-partner', authority: 'https://${DOCUMENTED_HOST}/${DEMO_TENANT_ID}', knownAuthorities: ['${DOCUMENTED_HOST}'], ${auth} },
});
try {
  await app.acquireTokenByClientCredential({ scopes: ['${scope}'] });
  console.log('token');
} catch (error) {
  console.log(JSON.stringify({ errorCode: error.errorCode, message: error.message }));
}
void readFileSync;
`;
  const attempt = async (name: string, source: string, env: Record<string, string> = { NODE_EXTRA_CA_CERTS: CA }) => {
    const run = await runNode(writeModule(name, atThisRun(source)).js, env);
    return JSON.parse(run.stdout) as { errorCode: string; message: string };
  };

  test('a wrong secret: invalid_client, AADSTS7000215', async () => {
    const refusal = await attempt('wrong-secret', msal("clientSecret: 'not-the-secret'"));
    expect(refusal.errorCode).toBe('invalid_client');
    expect(refusal.message).toContain('AADSTS7000215');
  });

  test('a scope without /.default: invalid_scope, AADSTS1002012', async () => {
    const refusal = await attempt('scope', msal("clientSecret: 'local-demo'", 'api://draw-request-service/Draws.Submit'));
    expect(refusal.errorCode).toBe('invalid_scope');
    expect(refusal.message).toContain('AADSTS1002012');
  });

  test('a certificate the application does not hold: invalid_client, AADSTS700027', async () => {
    const stranger = await generate([{ name: 'commonName', value: 'not registered' }], { keySize: 2048, algorithm: 'sha256' });
    writeFileSync(join(DIR, 'stranger.key'), stranger.private);
    const thumbprint = new X509Certificate(stranger.cert).fingerprint256.replaceAll(':', '').toLowerCase();
    const refusal = await attempt(
      'stranger',
      msal(`clientCertificate: { thumbprintSha256: '${thumbprint}', privateKey: readFileSync('${join(DIR, 'stranger.key')}', 'utf8') }`),
    );
    expect(refusal.errorCode).toBe('invalid_client');
    expect(refusal.message).toContain('AADSTS700027');
  });

  test("without NODE_EXTRA_CA_CERTS the provider's certificate is not trusted and no token is had", async () => {
    const refusal = await attempt('untrusted', msal("clientSecret: 'local-demo'"), {});
    expect(refusal.message).not.toContain('AADSTS');
    expect(`${refusal.errorCode} ${refusal.message}`).toMatch(/certificate|network|endpoints_resolution/i);
  });
});
