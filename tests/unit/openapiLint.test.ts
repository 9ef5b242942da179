/**
 * docs/openapi.yaml as the tools partners and their gateways use judge it, each the pinned version in
 * package.json and each run as a child process, as a contributor would run it (their library builds
 * are ESM-only, which Jest's CommonJS loader cannot require on Node 20):
 * - the official OpenAPI 3.1 JSON Schema (formats included, such as `uri-reference`);
 * - Spectral with its OpenAPI rules and the OWASP API Security Top 10 2023 rules (.spectral.yaml);
 * - Redocly CLI with its recommended rules.
 * No error and no warning from any of them.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { parse } from 'yaml';
import { TEMPLATE, environmentProblems, partnerDocument, type Environment } from '../../scripts/partnerDocument';
import { join } from 'node:path';

const ROOT = join(__dirname, '..', '..');

interface LintReport {
  readonly totals: { errors: number; warnings: number; ignored: number };
  readonly version: string;
  readonly problems: { ruleId: string; severity: string; message: string; location: { pointer: string }[] }[];
}

test('Redocly CLI, recommended rules: no error, no warning, nothing ignored', () => {
  const cli = join(ROOT, 'node_modules', '@redocly', 'cli', 'bin', 'cli.js');
  const run = spawnSync(process.execPath, [cli, 'lint', 'docs/openapi.yaml', '--extends=recommended', '--format=json'], {
    cwd: ROOT,
    encoding: 'utf8',
    // No usage data to Redocly (and no network wait on machines without internet).
    env: { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true' },
    timeout: 30_000,
  });
  const report = JSON.parse(run.stdout) as LintReport;
  const pinned = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { devDependencies: Record<string, string> }).devDependencies['@redocly/cli'];
  expect(report.version).toBe(pinned);
  expect(report.problems.map((p) => `${p.severity} ${p.ruleId} ${p.location[0]?.pointer}: ${p.message}`)).toEqual([]);
  expect(report.totals).toEqual({ errors: 0, warnings: 0, ignored: 0 });
});

const pinnedVersion = (name: string): string =>
  (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { devDependencies: Record<string, string> }).devDependencies[name];

test('the official OpenAPI 3.1 JSON Schema accepts the document', () => {
  const run = spawnSync(process.execPath, [join(ROOT, 'tests', 'support', 'officialSchema.mjs'), 'docs/openapi.yaml'], {
    cwd: ROOT,
    encoding: 'utf8',
    timeout: 30_000,
  });
  const report = JSON.parse(run.stdout) as { version: string; schemaId: string; valid: boolean; errors: { instancePath: string; message: string }[] };
  expect(report.schemaId).toMatch(/^https:\/\/spec\.openapis\.org\/oas\/3\.1\/schema\//);
  expect(report.errors.map((e) => `${e.instancePath}: ${e.message}`)).toEqual([]);
  expect(report.valid).toBe(true);
});

test('the official schema check can fail: a token URL with a {tenant} placeholder is refused', () => {
  const broken = join(tmpdir(), `openapi-${process.pid}.yaml`);
  writeFileSync(broken, readFileSync(join(ROOT, 'docs', 'openapi.yaml'), 'utf8').replace('/LENDER-TENANT-ID/', '/{tenant}/'));
  try {
    const run = spawnSync(process.execPath, [join(ROOT, 'tests', 'support', 'officialSchema.mjs'), broken], { cwd: ROOT, encoding: 'utf8', timeout: 30_000 });
    const report = JSON.parse(run.stdout) as { valid: boolean; errors: { instancePath: string; message: string }[] };
    expect(report.valid).toBe(false);
    expect(report.errors).toContainEqual(
      expect.objectContaining({ instancePath: '/components/securitySchemes/entraClientCredentials/flows/clientCredentials/tokenUrl' }),
    );
  } finally {
    rmSync(broken, { force: true });
  }
});

interface OpenApiDocument {
  readonly servers: unknown[];
  readonly components: { securitySchemes: { entraClientCredentials: { flows: { clientCredentials: unknown } } } };
}

interface SpectralFinding {
  readonly code: string;
  readonly message: string;
  readonly path: string[];
  readonly severity: number;
}

const SPECTRAL = join(ROOT, 'node_modules', '@stoplight', 'spectral-cli', 'dist', 'index.js');

/** Spectral's findings for a document, with the repository's ruleset. */
function spectral(document: string): string[] {
  const run = spawnSync(process.execPath, [SPECTRAL, 'lint', document, '--ruleset', '.spectral.yaml', '--format', 'json', '--quiet'], {
    cwd: ROOT,
    encoding: 'utf8',
    timeout: 60_000,
  });
  return (JSON.parse(run.stdout) as SpectralFinding[]).map((f) => `${f.severity} ${f.code} ${f.path.join('.')}: ${f.message}`);
}

test('Spectral, OpenAPI and OWASP API Security rules (.spectral.yaml): no finding of any severity', () => {
  const version = spawnSync(process.execPath, [SPECTRAL, '--version'], { cwd: ROOT, encoding: 'utf8', timeout: 30_000 });
  expect(version.stdout.trim()).toBe(pinnedVersion('@stoplight/spectral-cli'));
  expect(spectral('docs/openapi.yaml')).toEqual([]);
});

test('the Spectral check can fail: an integer without its format is an OWASP finding', () => {
  const broken = join(tmpdir(), `openapi-spectral-${process.pid}.yaml`);
  writeFileSync(broken, readFileSync(join(ROOT, 'docs', 'openapi.yaml'), 'utf8').replace(/\n +format: int32\n/, '\n'));
  try {
    expect(spectral(broken)).toContainEqual(expect.stringMatching(/^0 owasp:api4:2023-integer-format components\.schemas\.ElementError\.properties\.index: /));
  } finally {
    rmSync(broken, { force: true });
  }
});

test('every Spectral rule turned off is refused with a reason: a comment above it (above its group of rules)', () => {
  const lines = readFileSync(join(ROOT, '.spectral.yaml'), 'utf8').split('\n');
  const isOff = (line: string) => /^\s+[\w:.-]+: off$/.test(line);
  const isGrouping = (line: string) => /^\s*(rules:|- files:)/.test(line);
  const off = lines.flatMap((line, i) => (isOff(line) ? [i] : []));
  expect(off.length).toBeGreaterThan(0);
  for (const i of off) {
    const reason = lines
      .slice(0, i)
      .reverse()
      .find((line) => !isOff(line) && !isGrouping(line));
    expect({ rule: lines[i].trim(), reason: reason?.trim().startsWith('# ') }).toEqual({ rule: lines[i].trim(), reason: true });
  }
  expect(lines.find((l) => l.startsWith('extends:'))).toBe('extends: ["spectral:oas", "@stoplight/spectral-owasp-ruleset"]');
});

describe('npm run partner-document: the document of one environment, with nothing left to replace', () => {
  const env: Environment = {
    host: 'func-drawreq-prod-abc123.azurewebsites.net',
    tenantId: '11111111-2222-3333-4444-555555555555',
    appIdUri: 'api://6e1f2a3b-4c5d-4e6f-8a9b-0c1d2e3f4a5b',
    loginEndpoint: 'https://login.microsoftonline.us/',
  };

  test('fills the host, the token URL of the cloud and tenant, and the scope; the official schema and Spectral accept it', () => {
    const text = partnerDocument(readFileSync(TEMPLATE, 'utf8'), env);
    const rendered = parse(text) as OpenApiDocument;
    expect(rendered.servers).toEqual([
      expect.objectContaining({ url: 'https://{hostName}', variables: { hostName: expect.objectContaining({ default: env.host }) } }),
    ]);
    expect(rendered.components.securitySchemes.entraClientCredentials.flows.clientCredentials).toEqual({
      tokenUrl: 'https://login.microsoftonline.us/11111111-2222-3333-4444-555555555555/oauth2/v2.0/token',
      scopes: { 'api://6e1f2a3b-4c5d-4e6f-8a9b-0c1d2e3f4a5b/.default': expect.any(String) },
    });
    expect(text).not.toMatch(/LENDER-|\{tenant\}|<app>/);
    const file = join(tmpdir(), `openapi-rendered-${process.pid}.yaml`);
    writeFileSync(file, text);
    try {
      const run = spawnSync(process.execPath, [join(ROOT, 'tests', 'support', 'officialSchema.mjs'), file], { cwd: ROOT, encoding: 'utf8', timeout: 30_000 });
      expect(JSON.parse(run.stdout)).toMatchObject({ valid: true, errors: [] });
      expect(spectral(file)).toEqual([]);
    } finally {
      rmSync(file, { force: true });
    }
  });

  test.each([
    ['a host with a scheme', { host: 'https://x.azurewebsites.net' }, '--host'],
    ['an upper-case tenant id', { tenantId: '11111111-2222-3333-4444-55555555555A' }, '--tenant'],
    ['an App ID URI with a trailing slash', { appIdUri: 'api://x/' }, '--app-id-uri'],
    ['an http login endpoint', { loginEndpoint: 'http://login.microsoftonline.com/' }, '--login-endpoint'],
  ])('refuses %s', (_name, change, option) => {
    expect(environmentProblems({ ...env, ...change })).toEqual([expect.stringContaining(option)]);
  });
});
