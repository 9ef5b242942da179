/**
 * `npm run package` (scripts/package.ts): the zip Flex Consumption deploys holds what the Functions
 * host needs to find and load the function, and nothing it must not. The real package is built from
 * the esbuild bundle (built here first; it holds every production package, Application Insights
 * included), read back with yauzl, unpacked into an empty folder and loaded there by Node with no other node_modules in
 * reach. The checker itself is also shown to catch each kind of mistake on made-up entry lists.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { SourceMap } from 'node:module';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { bundle, type BundleReport } from '../../scripts/bundle';
import { NOT_SHIPPED, NOT_SHIPPED_FILES, STAND_IN_PATHS } from '../../scripts/bundlePlugins';
import { OWN_SOURCE } from '../../scripts/sourceMaps';
import {
  PACKAGED_CODE,
  PACKAGED_MAIN,
  PACKAGED_NOTICES,
  PACKAGE_LIMITS,
  buildPackage,
  checkPackage,
  packageDirsOf,
  unpackZip,
  type PackageReport,
  type ZipEntry,
} from '../../scripts/package';

const ROOT = resolve(__dirname, '../..');
const manifest = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
  main: string;
  dependencies: Record<string, string>;
  devDependencies: Record<string, string>;
};
const lock = JSON.parse(readFileSync(join(ROOT, 'package-lock.json'), 'utf8')) as { packages: Record<string, { dev?: boolean }> };

let work: string;
let zipFile: string;
let report: PackageReport;
let paths: Set<string>;
let buildMs: number;
let built: BundleReport;

beforeAll(async () => {
  work = mkdtempSync(join(tmpdir(), 'package-test-'));
  zipFile = join(work, 'draw-request-service.zip');
  built = await bundle(); // as `npm run package` does before packaging
  const started = Date.now();
  report = await buildPackage(ROOT, zipFile);
  buildMs = Date.now() - started;
  paths = new Set(report.entries.map((e) => e.path));
}, 60_000);

afterAll(() => {
  if (work !== undefined) rmSync(work, { recursive: true, force: true });
});

describe('the package Flex Consumption deploys', () => {
  test('passes its own content and size check, and builds in a few seconds', () => {
    expect(report.problems).toEqual([]);
    expect(report.zipBytes).toBeLessThanOrEqual(PACKAGE_LIMITS.maxZipBytes);
    expect(buildMs).toBeLessThan(15_000);
  });

  test('host.json is at the root, as in the repository', () => {
    expect(report.texts.get('host.json')).toBe(readFileSync(join(ROOT, 'host.json'), 'utf8'));
  });

  test('package.json: the bundle as main; no dependencies (the bundle holds them all), devDependencies or scripts', () => {
    const packaged = JSON.parse(report.texts.get('package.json') ?? '{}') as Record<string, unknown>;
    expect(packaged.main).toBe(PACKAGED_MAIN);
    expect(packaged?.dependencies).toEqual({});
    expect(packaged).not.toHaveProperty('devDependencies');
    expect(packaged).not.toHaveProperty('scripts');
    expect(paths.has(PACKAGED_MAIN)).toBe(true);
  });

  test('the bundle, the files it loads on first use, their source maps, the licence notices, and nothing else', () => {
    const maps = PACKAGED_CODE.map((c) => `${c}.map`);
    expect([...paths].sort()).toEqual(['host.json', 'package.json', ...PACKAGED_CODE, ...maps, PACKAGED_NOTICES].sort());
    // The bundle holds the service's code: the handler's error catalogue is in it, not required from elsewhere.
    expect(report.texts.get(PACKAGED_MAIN)).toContain('Pending Transaction Request');
  });

  test('no tests, settings files, sources, tools or repository material', () => {
    const forbidden = [...paths].filter((p) =>
      /^(tests?|functions|lib|scripts|examples|infra|docs|\.ci|\.git)\/|(^|\/)local\.settings[^/]*\.json$|^dist\/scripts\/|^package-lock\.json$/.test(p),
    );
    expect(forbidden).toEqual([]);
  });

  test('no dev-only package; a devDependency is there only when a production package needs it', () => {
    const packaged = new Set([...paths].flatMap(packageDirsOf));
    const devOnly = Object.entries(lock.packages)
      .filter(([path, entry]) => path.startsWith('node_modules/') && entry.dev === true)
      .map(([path]) => path);
    expect(devOnly.filter((path) => packaged.has(path))).toEqual([]);
    const notProduction = [...packaged].filter((dir) => lock.packages[dir] === undefined || lock.packages[dir].dev === true);
    expect(notProduction).toEqual([]);
    for (const name of Object.keys(manifest.devDependencies)) {
      if (packaged.has(`node_modules/${name}`)) expect({ name, dev: lock.packages[`node_modules/${name}`]?.dev }).toEqual({ name, dev: undefined });
    }
    expect(packaged.has('node_modules/jest')).toBe(false);
    expect(packaged.has('node_modules/azurite')).toBe(false);
  });

  test('the licence notices name every package whose code is bundled, with its licence text', () => {
    const notices = readFileSync(join(ROOT, PACKAGED_NOTICES), 'utf8');
    for (const name of [
      'applicationinsights',
      '@azure/monitor-opentelemetry-exporter',
      '@opentelemetry/sdk-trace',
      '@azure/data-tables',
      'jose',
      'ajv',
      '@azure/identity',
    ])
      expect(notices).toMatch(new RegExp(`^${name.replace('/', '\\/')}@\\d+\\.\\d+\\.\\d+\\S* \\((MIT|Apache-2\\.0)\\)$`, 'm'));
    expect(notices).toMatch(/Apache License\s+Version 2\.0/);
    expect(notices).toContain('Permission is hereby granted, free of charge');
  });

  test('the telemetry SDK is in the bundle: one copy of each OpenTelemetry package, one build of each Azure SDK core package, none of the parts never used', () => {
    const sources = built.mainInputs;
    const copies = new Map<string, Set<string>>();
    // The ESM builds of @azure/core-tracing and @azure/core-client import their CommonJS state module on
    // purpose, so that both builds share one state (its instrumenter, its operation-request map).
    const sharedState = /node_modules\/@azure\/core-(tracing|client)\/dist\/commonjs\/state(-cjs)?\.js$/;
    for (const source of sources.filter((s) => !sharedState.test(s))) {
      const match = /^(.*node_modules\/((?:@[^/]+\/)?[^/]+))\/(?:dist\/(esm|commonjs)\/)?/.exec(source);
      if (match) copies.set(match[2], (copies.get(match[2]) ?? new Set()).add(`${match[1]} ${match[3] ?? ''}`));
    }
    expect(copies.get('applicationinsights')?.size).toBe(1);
    const several = [...copies].filter(([name, dirs]) => /^(@opentelemetry|@azure|@typespec)\//.test(name) && dirs.size > 1);
    expect(several).toEqual([]);
    // Stand-ins (scripts/bundlePlugins.ts), not the exporters, propagators and live metrics this service never uses.
    const shipped = sources.filter((s) => !s.startsWith('not-shipped:'));
    expect(
      shipped.filter((s) =>
        /\/(exporter-[^/]+|propagator-(b3|jaeger)|@opentelemetry\/configuration|grpc-js|protobufjs|yaml)\/|quickpulse\/liveMetrics/.test(s),
      ),
    ).toEqual([]);
    expect(sources).toEqual(expect.arrayContaining(['not-shipped:@opentelemetry/exporter-trace-otlp-grpc', 'not-shipped:@opentelemetry/propagator-b3']));
    // The semantic conventions only as the names their CommonJS importers read, from the ESM build: none of the whole CommonJS one.
    expect(sources.filter((s) => /semantic-conventions\/.*\.cjs$/.test(s))).toEqual([]);
    expect(sources).toEqual(expect.arrayContaining(['semconv-names-used:@azure/monitor-opentelemetry-exporter/dist/commonjs/utils/spanUtils.js']));
  });

  test('every import of a stand-in is a path listed with the settings that could reach it (scripts/bundlePlugins.ts STAND_IN_PATHS), and every listed one is there', () => {
    const found = built.standInImports.map(({ importer, standIn }) => `${importer} → ${standIn}`);
    const listed = STAND_IN_PATHS.flatMap((path) => path.standIns.map((standIn) => `${path.importer} → ${standIn}`));
    expect(found.length).toBeGreaterThan(20);
    expect([...new Set(found)].filter((f) => !listed.includes(f))).toEqual([]); // a new code path to a part not shipped
    expect(listed.filter((l) => !found.includes(l))).toEqual([]); // a listed path no longer in the bundle
    // Every stand-in is imported by a listed path (NOT_SHIPPED packages imported only through another stand-in excepted).
    const imported = new Set(built.standInImports.map((i) => i.standIn));
    expect([...NOT_SHIPPED, ...NOT_SHIPPED_FILES].filter((n) => !imported.has(n))).toEqual([
      '@microsoft/applicationinsights-web-snippet',
      '@opentelemetry/instrumentation-redis-4',
    ]);
  });

  test("the bundle's source maps: mappings to the service's own sources only, no source text, a fraction of the zip", () => {
    const map = JSON.parse(report.texts.get(`${PACKAGED_MAIN}.map`) ?? '{}') as { sources: string[]; sourcesContent?: unknown };
    expect(map.sources).toEqual(expect.arrayContaining(['../../functions/main.ts', '../../lib/store.ts', '../../lib/outcome.ts']));
    expect(map.sources.filter((s) => !OWN_SOURCE.test(s))).toEqual([]);
    expect(map).not.toHaveProperty('sourcesContent');
    const mapBytes = report.entries.filter((e) => e.path.startsWith('dist/') && e.path.endsWith('.map')).reduce((sum, e) => sum + e.size, 0);
    expect(mapBytes).toBeLessThan(256 * 1024);
  });

  test("Node's own parser maps a place in the service's code to its TypeScript line, and a place in an SDK to nothing", () => {
    const code = report.texts.get(PACKAGED_MAIN) ?? '';
    const map = new SourceMap(JSON.parse(report.texts.get(`${PACKAGED_MAIN}.map`) ?? '{}'));
    const entryOf = (text: string) => {
      const offset = code.indexOf(text);
      expect(offset).toBeGreaterThan(0);
      const line = code.slice(0, offset).split('\n').length - 1;
      return map.findEntry(line, offset - (code.lastIndexOf('\n', offset - 1) + 1)) as { originalSource?: string };
    };
    expect(entryOf('DrawRequest telemetry: recording failed').originalSource).toMatch(/lib\/telemetry\.ts$/);
    expect(entryOf('Failed to install Azure SDK tracing bridge').originalSource).toBeUndefined();
  });

  test("unpacked alone, its CRCs hold and Node loads main and every dependency with nothing but the zip's node_modules", async () => {
    const dir = join(work, 'unpacked');
    expect(await unpackZip(zipFile, dir)).toEqual([]);
    // As on the Functions host, no folder above the app's may supply a package: resolution stops at the app.
    const script = `
      const Module = require('module');
      const lookupPaths = Module._nodeModulePaths;
      Module._nodeModulePaths = (from) => lookupPaths(from).filter((p) => p.startsWith(process.cwd()));
      Module.globalPaths.length = 0;
      const manifest = require('./package.json');
      const main = require(require('path').resolve(manifest.main));
      // The files it loads on first use must resolve too: the managed identity and the XML parser.
      const later = (file) => require(require('path').resolve('dist/bundle', file));
      if (typeof later('managedIdentity.js').managedIdentity !== 'function') throw new Error('managedIdentity.js does not load');
      if (!later('coreXml.js').stringifyXML({ a: '1' }, { rootName: 'r' }).includes('<a>1</a>')) throw new Error('coreXml.js does not work');
      const resolved = Object.keys(require.cache).filter((f) => !f.startsWith(process.cwd()));
      if (resolved.length > 0) throw new Error('loaded from outside the package: ' + resolved.join(', '));
      console.log('loaded', typeof main);`;
    const env = {
      PATH: process.env.PATH,
      AUTH_OPENID_CONFIG_URL: 'https://login.example.com/tenant/v2.0/.well-known/openid-configuration',
      AUTH_AUDIENCE: 'api://draw-request-service',
      TABLES_CONNECTION_STRING: 'UseDevelopmentStorage=true',
    };
    const { stdout } = await promisify(execFile)(process.execPath, ['-e', script], { cwd: dir, env, timeout: 30_000 });
    expect(stdout).toContain('loaded object');
  }, 60_000);
});

describe('the package check catches', () => {
  const good = (): ZipEntry[] => [
    { path: 'host.json', size: 10 },
    { path: 'package.json', size: 10 },
    { path: 'dist/bundle/main.js', size: 10 },
    { path: 'dist/bundle/config.js', size: 10 },
    { path: 'node_modules/@azure/functions/package.json', size: 10 },
  ];
  const MAP = JSON.stringify({ version: 3, sources: ['../../lib/config.ts', 'webpack://@azure/functions/src/app.ts'], names: [], mappings: 'AAAA' });
  const texts = (overrides: Record<string, string> = {}): Map<string, string> =>
    new Map(
      Object.entries({
        'host.json': JSON.stringify({ version: '2.0' }),
        'package.json': JSON.stringify({ name: 'x', version: '1.0.0', main: 'dist/bundle/main.js', dependencies: { '@azure/functions': '4.16.5' } }),
        'dist/bundle/main.js':
          'const functions_1 = require("@azure/functions"); const config_1 = require("./config"); require("node:path"); require("@azure/functions-core"); const code = \'require("ajv/dist/runtime/equal")\';',
        'dist/bundle/config.js': 'module.exports = {};',
        ...overrides,
      }),
    );
  const check = (entries: ZipEntry[], t = texts(), dev: string[] = ['node_modules/jest']): string[] => checkPackage(entries, t, dev, 1000);

  test('nothing in a good package', () => {
    expect(check(good())).toEqual([]);
  });

  test.each([
    ['tests', 'tests/unit/config.test.ts'],
    ['a local settings file', 'local.settings.json'],
    ['a TypeScript source', 'lib/config.ts'],
    ['the dev host', 'dist/dev/devHost.js'],
    ['the unbundled tsc output', 'dist/functions/main.js'],
    ['a dev-only package', 'node_modules/jest/package.json'],
    ['a native addon', 'node_modules/x/build/Release/x.node'],
    ['repository material', 'infra/main.bicep'],
  ])('%s', (_what, path) => {
    expect(check([...good(), { path, size: 1 }])).toEqual([expect.stringContaining(path.startsWith('node_modules/jest') ? 'node_modules/jest' : path)]);
  });

  test('no host.json at the root', () => {
    expect(check(good().filter((e) => e.path !== 'host.json'))).toEqual([expect.stringContaining('host.json')]);
  });

  test('a main that is not in the zip', () => {
    const t = texts({ 'package.json': JSON.stringify({ name: 'x', version: '1', main: 'dist/main.js', dependencies: { '@azure/functions': '1' } }) });
    expect(check(good(), t)).toEqual([expect.stringContaining('main dist/main.js')]);
  });

  test('a relative require the zip cannot satisfy, and a package that is not a production dependency', () => {
    const t = texts({ 'dist/bundle/config.js': 'require("./missing"); require("left-pad");' });
    expect(check(good(), t)).toEqual([
      expect.stringContaining('requires ./missing'),
      expect.stringContaining('requires left-pad, which is not a production dependency'),
      expect.stringContaining('requires left-pad, which is not in the zip'),
    ]);
  });

  test('a production dependency missing from the zip', () => {
    expect(check(good().filter((e) => !e.path.startsWith('node_modules/')))).toEqual([
      'dependency @azure/functions is not in the zip',
      expect.stringContaining('requires @azure/functions, which is not in the zip'),
    ]);
  });

  test('a source map a code file names that is not in the zip', () => {
    const t = texts({ 'dist/bundle/config.js': 'module.exports = {};\n//# sourceMappingURL=config.js.map\n' });
    expect(check(good(), t)).toEqual([expect.stringContaining('dist/bundle/config.js names its source map config.js.map, which is not in the zip')]);
    expect(check([...good(), { path: 'dist/bundle/config.js.map', size: 10 }], new Map([...t, ['dist/bundle/config.js.map', MAP]]))).toEqual([]);
  });

  test.each([
    ['source text', { sourcesContent: ['export const x = 1;'] }, 'embeds source text'],
    ['an absolute path from the build machine', { sources: ['/home/builder/work/lib/config.ts'] }, 'names a source outside the app: /home/builder'],
    ['a Windows path', { sources: ['C:\\agent\\lib\\config.ts'] }, 'names a source outside the app: C:/agent'],
    ['a path above the app', { sources: ['../../../secrets/config.ts'] }, 'names a source outside the app: ../../../secrets'],
    ['key material', { names: ['AccountKey=Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq'] }, 'holds key material'],
    ['not a version 3 map', { version: 2 }, 'not a version 3 source map'],
  ])('a shipped source map with %s', (_what, change, problem) => {
    const map = JSON.stringify({ ...(JSON.parse(MAP) as object), ...change });
    const entries = [...good(), { path: 'dist/bundle/config.js.map', size: 10 }];
    expect(check(entries, texts({ 'dist/bundle/config.js.map': map }))).toEqual([expect.stringContaining(problem)]);
  });

  test('a package over the size limit', () => {
    expect(checkPackage(good(), texts(), [], PACKAGE_LIMITS.maxZipBytes + 1)).toEqual([expect.stringContaining('over')]);
  });
});
