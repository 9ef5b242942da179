/**
 * The deployable entry as one file (for cold start): esbuild bundles functions/main.ts and
 * what it imports into dist/bundle/main.js, so the host loads one file instead of resolving and
 * reading hundreds of modules. Application Insights is bundled too, in the form scripts/bundlePlugins.ts
 * gives it (docs/decisions/0104-the-package-is-one-esbuild-bundle.md); only `@azure/functions-core`, which the
 * Functions host provides at run time, is left outside. Beside main.js: managedIdentity.js and
 * coreXml.js (loaded on first use), the source maps, and THIRD-PARTY-NOTICES.txt.
 */
import { build as esbuild, type BuildOptions } from 'esbuild';
import { existsSync, mkdirSync, readFileSync, readdirSync, renameSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { managedIdentityApart, noFunctionsHook, notShipped, oneCopy, oneDialect, semconvNamesUsed, xmlOnFirstUse } from './bundlePlugins';
import { ownMappingsOnly } from './sourceMaps';

// scripts/ from the sources (tests), dist/scripts/ once compiled.
export const ROOT = existsSync(join(__dirname, '..', 'package.json')) ? join(__dirname, '..') : join(__dirname, '..', '..');
export const BUNDLE = join(ROOT, 'dist', 'bundle', 'main.js');
export const BUNDLE_EXTERNALS = ['@azure/functions-core'] as const;

/** Writes `contents` to `path` whole, under a temporary name renamed into place. */
function writeWhole(path: string, contents: string | Uint8Array): void {
  mkdirSync(dirname(path), { recursive: true });
  const temporary = `${path}.${process.pid}.tmp`;
  writeFileSync(temporary, contents);
  renameSync(temporary, path);
}

/**
 * esbuild's build, each output written whole (a reader never sees a half-written file: two test files
 * bundle and pack in parallel Jest workers, and one may read the bundle while the other rewrites it
 * with the same bytes). Returns the folders of the packages whose code went in.
 */
async function build(options: BuildOptions, standInImports: { importer: string; standIn: string }[] = [], inputs: string[] = []): Promise<string[]> {
  const result = await esbuild({ ...options, write: false, metafile: true });
  // Every input with code in the outputs, the stand-ins (`not-shipped:…`) included.
  const withCode = Object.values(result.metafile.outputs).flatMap((output) =>
    Object.entries(output.inputs)
      .filter(([, input]) => input.bytesInOutput > 0)
      .map(([path]) => path),
  );
  inputs.push(...withCode);
  for (const [importer, input] of Object.entries(result.metafile.inputs))
    for (const imported of input.imports)
      if (imported.path.startsWith('not-shipped:'))
        standInImports.push({ importer: importer.replace(/^.*node_modules\//, ''), standIn: imported.path.slice('not-shipped:'.length) });
  // BUNDLE_METAFILE=1: esbuild's metafile beside each output (what is in it, by input), for size work.
  if (process.env.BUNDLE_METAFILE && options.outfile !== undefined) writeWhole(`${options.outfile}.meta.json`, JSON.stringify(result.metafile));
  for (const file of result.outputFiles) writeWhole(file.path, file.path.endsWith('.map') ? ownMappingsOnly(file.text) : file.contents);
  const packages = withCode.map((path) => /^(.*node_modules\/(?:@[^/]+\/)?[^/]+)\//.exec(path)?.[1]).filter((dir): dir is string => dir !== undefined);
  return [...new Set(packages)];
}

const LICENCE_FILE = /^(licen[cs]e|copying|notice)(\.(md|txt))?$/i;

/**
 * The licence notices of every package with code in the bundles (MIT, Apache-2.0, BSD and ISC all
 * ask that the notice travel with copies): name, version, licence and the text of its LICENSE and
 * NOTICE files, one section per package and version.
 */
export function thirdPartyNotices(packageDirs: readonly string[]): string {
  const sections = new Map<string, string>();
  for (const dir of packageDirs) {
    const manifest = JSON.parse(readFileSync(join(ROOT, dir, 'package.json'), 'utf8')) as { name: string; version: string; license?: string };
    const id = `${manifest.name}@${manifest.version}`;
    if (sections.has(id)) continue;
    const texts = readdirSync(join(ROOT, dir))
      .filter((name) => LICENCE_FILE.test(name))
      .sort()
      .map((name) => readFileSync(join(ROOT, dir, name), 'utf8').trim());
    if (texts.length === 0) throw new Error(`${id}: no licence file to carry into the package's notices`);
    sections.set(id, `${id} (${manifest.license ?? 'see below'})\n\n${texts.join('\n\n')}`);
  }
  const body = [...sections.keys()].sort().map((id) => sections.get(id) as string);
  return `Third-party software in dist/bundle/*.js, with its licence notices.\n\n${body.join(`\n\n${'-'.repeat(72)}\n\n`)}\n`;
}

export const NOTICES = join(dirname(BUNDLE), 'THIRD-PARTY-NOTICES.txt');

/** What a build put in: every import of a stand-in (scripts/bundlePlugins.ts STAND_IN_PATHS), by its importer. */
export interface BundleReport {
  readonly standInImports: readonly { readonly importer: string; readonly standIn: string }[];
  /**
   * What went into main.js: esbuild's inputs with code in it, and the stand-ins (`not-shipped:…`). The
   * shipped map names only the service's own sources (scripts/sourceMaps.ts), so this is the inventory.
   */
  readonly mainInputs: readonly string[];
}

/** What every output of the package is built with. */
export const COMMON_OPTIONS: BuildOptions = {
  bundle: true,
  absWorkingDir: ROOT, // the metafile's paths are relative to it (the licence notices read them)
  platform: 'node',
  target: 'node20',
  format: 'cjs',
  external: [...BUNDLE_EXTERNALS],
  // ESM builds where packages have them: static imports esbuild can follow and tree-shake.
  mainFields: ['module', 'main'],
  minify: true, // less to read and parse at cold start
  // Stack traces in the host's log name the service's source files and lines: the package ships the
  // maps and the app runs with --enable-source-maps (infra/modules/functionApp.bicep). Mappings only,
  // and only into lib/ and functions/ (scripts/sourceMaps.ts), no source text: Node needs none to map
  // a stack, it keeps every map it loads in memory, and no source is deployed.
  sourcemap: 'linked',
  sourcesContent: false,
  legalComments: 'none', // THIRD-PARTY-NOTICES.txt carries every bundled package's licence whole
  logLevel: 'warning',
};

/** main.js: functions/main.ts and what it imports (bench/workerFloor.ts builds it again for the whole source map). */
export const MAIN_OPTIONS: BuildOptions = {
  ...COMMON_OPTIONS,
  entryPoints: [join(ROOT, 'functions', 'main.ts')],
  outfile: BUNDLE,
  plugins: [managedIdentityApart, xmlOnFirstUse, notShipped, noFunctionsHook, semconvNamesUsed, oneCopy(ROOT), oneDialect],
};

export async function bundle(): Promise<BundleReport> {
  const standInImports: { importer: string; standIn: string }[] = [];
  const mainInputs: string[] = [];
  const packages = [
    ...(await build(MAIN_OPTIONS, standInImports, mainInputs)),
    ...(await build({ ...COMMON_OPTIONS, entryPoints: [join(ROOT, 'lib', 'managedIdentity.ts')], outfile: join(dirname(BUNDLE), 'managedIdentity.js') })),
    ...(await build({
      ...COMMON_OPTIONS,
      stdin: { contents: "module.exports = require('@azure/core-xml');", resolveDir: ROOT, loader: 'js' },
      outfile: join(dirname(BUNDLE), 'coreXml.js'),
    })),
  ];
  writeWhole(NOTICES, thirdPartyNotices(packages));
  return { standInImports, mainInputs };
}

if (require.main === module) {
  bundle().catch((error) => {
    console.error(error);
    process.exit(1);
  });
}
