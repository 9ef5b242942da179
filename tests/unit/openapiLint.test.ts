/**
 * docs/openapi.yaml as Redocly CLI lints it with its recommended rules (the pinned version in
 * package.json): no error and no warning. The CLI runs as a child process, as a contributor would
 * run it (its library build is ESM-only, which Jest's CommonJS loader cannot require on Node 20).
 */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
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
