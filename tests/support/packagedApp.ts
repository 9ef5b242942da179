/**
 * What ships, as a deployment unpacks it: the bundle built from the current sources, the zip of
 * `npm run package`, unpacked into a fresh temporary folder; and the Node.js options the deployment
 * starts the worker with. The worker suites (tests/integration/worker.test.ts, telemetry.test.ts)
 * load the app from there.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ROOT, bundle } from '../../scripts/bundle';
import { buildPackage, unpackZip, type PackageReport } from '../../scripts/package';

export interface PackagedApp {
  /** The unpacked app: host.json, package.json and dist/bundle at its root. */
  readonly appDir: string;
  /** What `npm run package` reported for the zip: its size and entries. */
  readonly report: PackageReport;
  remove(): void;
}

export async function packagedApp(): Promise<PackagedApp> {
  const work = mkdtempSync(join(tmpdir(), 'packaged-app-'));
  await bundle(); // as `npm run package` does
  const report = await buildPackage(ROOT, join(work, 'draw-request-service.zip'));
  if (report.problems.length > 0) throw new Error(`the package has problems:\n${report.problems.join('\n')}`);
  const appDir = join(work, 'app');
  const unpacking = await unpackZip(report.outFile, appDir);
  if (unpacking.length > 0) throw new Error(`the zip does not unpack:\n${unpacking.join('\n')}`);
  return { appDir, report, remove: () => rmSync(work, { recursive: true, force: true }) };
}

/**
 * The Node.js options the deployment starts the worker with: the app setting languageWorkers__node__arguments
 * of infra/modules/functionApp.bicep, split on whitespace as the host splits it.
 */
export function deployedNodeArguments(): string[] {
  const bicep = readFileSync(join(ROOT, 'infra', 'modules', 'functionApp.bicep'), 'utf8');
  const value = /^\s*languageWorkers__node__arguments:\s*'([^']*)'/m.exec(bicep)?.[1];
  if (value === undefined) throw new Error('infra/modules/functionApp.bicep sets no languageWorkers__node__arguments');
  return value.trim().split(/\s+/);
}
