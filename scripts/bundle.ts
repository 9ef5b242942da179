/**
 * The deployable entry as one file (for cold start): esbuild bundles functions/main.ts and
 * what it imports into dist/bundle/main.js, so the host loads one file instead of resolving and
 * reading hundreds of modules. Left outside the bundle:
 * - `@azure/functions-core`, which the Functions host provides at run time;
 * - `applicationinsights`, required only when telemetry is configured (lib/telemetry.ts), because
 *   it reads its own package files at run time; the package ships it as a dependency.
 */
import { build as esbuild, type BuildOptions, type Plugin } from 'esbuild';
import { existsSync, mkdirSync, renameSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';

// scripts/ from the sources (tests), dist/scripts/ once compiled.
export const ROOT = existsSync(join(__dirname, '..', 'package.json')) ? join(__dirname, '..') : join(__dirname, '..', '..');
export const BUNDLE = join(ROOT, 'dist', 'bundle', 'main.js');
export const BUNDLE_EXTERNALS = ['@azure/functions-core', 'applicationinsights'] as const;

/**
 * `@azure/data-tables` hands the pipeline `@azure/core-xml` (with fast-xml-parser, about 80 KB) for
 * XML answers, which only account-level operations get; this service's reads and transactions are
 * JSON. The bundle gets a stand-in that loads the real module, built apart as coreXml.js, on first use.
 */
const XML_ON_FIRST_USE = `
let xml;
const load = () => (xml ??= require('./coreXml.js'));
exports.parseXML = (...args) => load().parseXML(...args);
exports.stringifyXML = (...args) => load().stringifyXML(...args);
exports.XML_ATTRKEY = '$';
exports.XML_CHARKEY = '_';
`;
const xmlOnFirstUse: Plugin = {
  name: 'xml-on-first-use',
  setup(b) {
    b.onResolve({ filter: /^@azure\/core-xml$/ }, () => ({ path: 'core-xml', namespace: 'on-first-use' }));
    b.onResolve({ filter: /^\.\/coreXml\.js$/ }, () => ({ path: './coreXml.js', external: true }));
    b.onLoad({ filter: /.*/, namespace: 'on-first-use' }, () => ({ contents: XML_ON_FIRST_USE, loader: 'js' }));
  },
};

/** lib/managedIdentity is required on demand (functions/main.ts, lib/telemetry.ts): it stays a file of its own beside the bundle. */
const managedIdentityApart: Plugin = {
  name: 'managed-identity-apart',
  setup(b) {
    b.onResolve({ filter: /(^|\/)managedIdentity$/ }, () => ({ path: './managedIdentity.js', external: true }));
  },
};

/**
 * esbuild's build, each output written whole under a temporary name and renamed into place: a reader
 * never sees a half-written file. Two test files bundle and pack in parallel Jest workers
 * (package.test.ts, worker.test.ts): one may read the bundle while the other rewrites it (the same bytes).
 */
async function build(options: BuildOptions): Promise<void> {
  const result = await esbuild({ ...options, write: false });
  for (const file of result.outputFiles) {
    mkdirSync(dirname(file.path), { recursive: true });
    const temporary = `${file.path}.${process.pid}.tmp`;
    writeFileSync(temporary, file.contents);
    renameSync(temporary, file.path);
  }
}

export async function bundle(): Promise<void> {
  const common: BuildOptions = {
    bundle: true,
    platform: 'node',
    target: 'node20',
    format: 'cjs',
    external: [...BUNDLE_EXTERNALS],
    // ESM builds where packages have them: static imports esbuild can follow and tree-shake.
    mainFields: ['module', 'main'],
    minify: true, // less to read and parse at cold start
    // Stack traces in the host's log name the source files and lines: the package ships the maps and
    // the app runs with --enable-source-maps (infra/modules/functionApp.bicep). Mappings only, no
    // source text: Node needs none to map a stack, the zip stays small, and no source is deployed.
    sourcemap: 'linked',
    sourcesContent: false,
    legalComments: 'linked',
    logLevel: 'warning',
  };
  await build({ ...common, entryPoints: [join(ROOT, 'functions', 'main.ts')], outfile: BUNDLE, plugins: [managedIdentityApart, xmlOnFirstUse] });
  await build({ ...common, entryPoints: [join(ROOT, 'lib', 'managedIdentity.ts')], outfile: join(dirname(BUNDLE), 'managedIdentity.js') });
  await build({
    ...common,
    stdin: { contents: "module.exports = require('@azure/core-xml');", resolveDir: ROOT, loader: 'js' },
    outfile: join(dirname(BUNDLE), 'coreXml.js'),
  });
}

if (require.main === module) {
  bundle().catch((error) => {
    console.error(error);
    process.exit(1);
  });
}
