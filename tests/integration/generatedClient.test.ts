/**
 * A partner's generated client, as a TypeScript partner would build it: types generated from
 * docs/openapi.yaml by openapi-typescript, calls made with openapi-fetch. The TypeScript compiler
 * (strict) is the judge of the types: a valid batch compiles, a misspelt or missing field does not,
 * and the compiler's error is the assertion. The same client, compiled, then posts to the dev host
 * (embedded Azurite and provider) and reads the typed `errors` of a 400.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startDevHost, type DevHost } from '../../dev/devHost';
import { OPENAPI_PATH } from '../support/contract';
import { demoToken } from '../support/demoToken';
import { typeErrors } from '../support/typeCheck';
import ts from 'typescript';

const ROOT = join(__dirname, '..', '..');
/** Under the repository, so that `openapi-fetch` resolves from its node_modules; git-ignored. */
const DIR = join(ROOT, 'dist', 'generated-client');

const GUIDE = readFileSync(join(ROOT, 'docs', 'partners.md'), 'utf8');
/** docs/partners.md §9, where partners read how to generate a client. */
const SECTION = /\n## 9\. [^]*?(?=\n## |$)/.exec(GUIDE)?.[0] ?? '';
/** The guide's command line: `npx openapi-typescript@<version> <document> --output <file>`. */
const COMMAND = /^npx openapi-typescript@(\S+) (\S+) --output (\S+)$/m.exec(SECTION);
/** The partner's code, as the guide gives it: the generated types and openapi-fetch, nothing of this repository. */
const CLIENT = /```ts\n([^]*?)```/.exec(SECTION)?.[1] ?? '';
const installed = (pkg: string) => (JSON.parse(readFileSync(join(ROOT, 'node_modules', pkg, 'package.json'), 'utf8')) as { version: string }).version;

test('docs/partners.md §9 gives the generator command and the client code this test runs, at the versions installed here', () => {
  expect(COMMAND?.[1]).toBe(installed('openapi-typescript'));
  expect(COMMAND?.[3]).toBe('schema.ts'); // the module the client code imports as './schema'
  expect(CLIENT).toContain("from './schema'");
  const majorMinor = (pkg: string) => installed(pkg).split('.').slice(0, 2).join('.');
  const prose = SECTION.replace(/\s+/g, ' ');
  expect(prose).toContain(`\`openapi-typescript\` (${majorMinor('openapi-typescript')})`);
  expect(prose).toContain(`\`openapi-fetch\` (${majorMinor('openapi-fetch')})`);
});

/** A body of the partner's code that must (or must not) compile against the generated types. */
const usage = (batch: string) => `import type { Batch } from './client';\nexport const batch: Batch = ${batch};\n`;

const diagnostics = (file: string) => typeErrors([file]);

beforeAll(() => {
  rmSync(DIR, { recursive: true, force: true });
  mkdirSync(DIR, { recursive: true });
  // The guide's command line, with this repository's document as the partner's file (the CLI, not its
  // library build, which requires ESM-only packages).
  const cli = join(ROOT, 'node_modules', 'openapi-typescript', 'bin', 'cli.js');
  const run = spawnSync(process.execPath, [cli, OPENAPI_PATH, '--output', join(DIR, COMMAND?.[3] ?? 'schema.ts')], {
    cwd: ROOT,
    encoding: 'utf8',
    timeout: 60_000,
  });
  expect(run.status).toBe(0);
  writeFileSync(join(DIR, 'client.ts'), CLIENT);
});

describe('the TypeScript compiler judges batches against the generated types', () => {
  test('the client itself compiles under --strict', () => {
    expect(diagnostics(join(DIR, 'client.ts'))).toEqual([]);
  });

  test.each([
    ['the canonical batch', `[{ loanNumber: 1001, requestor: 'jane.doe@partner.example', amount: 250 }]`],
    ['a loan number as digits', `[{ loanNumber: '0001002', requestor: 'jane.doe@partner.example', amount: 75.1 }]`],
  ])('%s compiles', (name, batch) => {
    const file = join(DIR, `valid-${name.replace(/\W+/g, '-')}.ts`);
    writeFileSync(file, usage(batch));
    expect(diagnostics(file)).toEqual([]);
  });

  test.each([
    ['an empty element', `[{}]`, /^TS2322: .* Type '\{\}' is missing the following properties from type .*: loanNumber, requestor, amount$/],
    [
      'a misspelt loanNumber',
      `[{ lonaNumber: 1, requestor: 'r', amount: 1 }]`,
      /^TS2322: .* Property 'loanNumber' is missing in type '\{ lonaNumber: number; requestor: string; amount: number; \}' but required/,
    ],
    [
      'a missing amount',
      `[{ loanNumber: 1, requestor: 'r' }]`,
      /^TS2322: .* Property 'amount' is missing in type '\{ loanNumber: number; requestor: string; \}' but required/,
    ],
    ['an amount as a string', `[{ loanNumber: 1, requestor: 'r', amount: '1' }]`, /^TS2322: Type 'string' is not assignable to type 'number'/],
    [
      'a loan number of the wrong type',
      `[{ loanNumber: true, requestor: 'r', amount: 1 }]`,
      /^TS2322: Type 'boolean' is not assignable to type 'string \| number'/,
    ],
  ])('%s does not compile', (name, batch, error) => {
    const file = join(DIR, `invalid-${name.replace(/\W+/g, '-')}.ts`);
    writeFileSync(file, usage(batch));
    expect(diagnostics(file)).toEqual([expect.stringMatching(error)]);
  });
});

describe('the compiled client against the dev host', () => {
  let host: DevHost;
  let submit: (baseUrl: string, token: string, batch: unknown[], key?: string) => Promise<{ status: number; errors?: { index?: number; code: string }[] }>;
  let token: string;

  beforeAll(async () => {
    host = await startDevHost({ PORT: '0' }, () => undefined);
    const js = ts.transpileModule(CLIENT, { compilerOptions: { module: ts.ModuleKind.CommonJS, target: ts.ScriptTarget.ES2022, esModuleInterop: true } });
    writeFileSync(join(DIR, 'client.cjs'), js.outputText);
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    ({ submit } = require(join(DIR, 'client.cjs')) as { submit: typeof submit });
    token = await demoToken(host);
  }, 60_000);
  afterAll(() => host?.stop());

  test('posts a batch (204), and reads the typed errors of a 400', async () => {
    const baseUrl = host.url.replace(/\/DrawRequest$/, '');
    expect(await submit(baseUrl, token, [{ loanNumber: 1001, requestor: 'jane.doe@partner.example', amount: 25 }])).toEqual({ status: 204 });
    expect(
      await submit(baseUrl, token, [
        { loanNumber: 1003, requestor: 'jane.doe@partner.example', amount: 10 },
        { loanNumber: 1002, requestor: 'jane.doe@partner.example', amount: 300 },
      ]),
    ).toEqual({
      status: 400,
      errors: [expect.objectContaining({ index: 0, code: 'InvalidFundingInvestor' }), expect.objectContaining({ index: 1, code: 'InvalidAmount' })],
    });
  });
});
