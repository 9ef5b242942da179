/**
 * The deployable entry as one file (issue 7, cold start): esbuild bundles functions/main.ts and
 * what it imports into dist/bundle/main.js, so the host loads one file instead of resolving and
 * reading hundreds of modules. Left outside the bundle:
 * - `@azure/functions-core`, which the Functions host provides at run time;
 * - `applicationinsights`, required only when telemetry is configured (lib/telemetry.ts), because
 *   it reads its own package files at run time; the package ships it as a dependency.
 */
import { build, type BuildOptions, type Plugin } from 'esbuild';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';

// scripts/ from the sources (tests), dist/scripts/ once compiled.
export const ROOT = existsSync(join(__dirname, '..', 'package.json')) ? join(__dirname, '..') : join(__dirname, '..', '..');
export const BUNDLE = join(ROOT, 'dist', 'bundle', 'main.js');
export const BUNDLE_EXTERNALS = ['@azure/functions-core', 'applicationinsights'] as const;

/** lib/managedIdentity is required on demand (functions/main.ts, lib/telemetry.ts): it stays a file of its own beside the bundle. */
const managedIdentityApart: Plugin = {
  name: 'managed-identity-apart',
  setup(b) {
    b.onResolve({ filter: /(^|\/)managedIdentity$/ }, () => ({ path: './managedIdentity.js', external: true }));
  },
};

export async function bundle(): Promise<void> {
  const common: BuildOptions = {
    bundle: true,
    platform: 'node',
    target: 'node20',
    format: 'cjs',
    external: [...BUNDLE_EXTERNALS],
    // ESM builds where packages have them: jsonc-parser's CommonJS build is UMD with dynamic requires.
    mainFields: ['module', 'main'],
    minify: true, // less to read and parse at cold start
    sourcemap: 'linked', // stack traces in the host's log still name the source lines
    legalComments: 'linked',
    logLevel: 'warning',
  };
  await build({ ...common, entryPoints: [join(ROOT, 'functions', 'main.ts')], outfile: BUNDLE, plugins: [managedIdentityApart] });
  await build({ ...common, entryPoints: [join(ROOT, 'lib', 'managedIdentity.ts')], outfile: join(dirname(BUNDLE), 'managedIdentity.js') });
}

if (require.main === module) {
  bundle().catch((error) => {
    console.error(error);
    process.exit(1);
  });
}
