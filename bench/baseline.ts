/**
 * The package of an earlier commit, built in the same run as this one's so that both are measured side
 * by side (bench/sizes.ts: telemetry before and after issue #32). A detached git worktree of the commit
 * in a temporary folder, node_modules hard-linked from this checkout (`cp -al`: the same dependencies,
 * nothing installed), its own `npm run package`, the zip unpacked. Nothing of it stays: the worktree is
 * removed once the zip is unpacked, the unpacked app by remove().
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ROOT } from '../scripts/bundle';
import { unpackZip } from '../scripts/package';

export interface BaselinePackage {
  /** The commit, abbreviated as git abbreviates it. */
  readonly commit: string;
  /** The unpacked app: host.json, package.json and dist/bundle at its root. */
  readonly appDir: string;
  remove(): void;
}

function run(command: string, args: readonly string[], cwd: string): string {
  const result = spawnSync(command, args, { cwd, encoding: 'utf8', maxBuffer: 64 * 2 ** 20 });
  if (result.status !== 0) throw new Error(`bench: ${command} ${args.join(' ')} failed (${result.status}):\n${result.stdout}\n${result.stderr}`);
  return result.stdout.trim();
}

export async function baselinePackage(commit: string): Promise<BaselinePackage> {
  const abbreviated = run('git', ['rev-parse', '--short', `${commit}^{commit}`], ROOT);
  const work = mkdtempSync(join(tmpdir(), `baseline-${abbreviated}-`));
  const tree = join(work, 'tree');
  const zip = join(work, 'draw-request-service.zip');
  try {
    run('git', ['worktree', 'add', '--detach', tree, abbreviated], ROOT);
    try {
      run('cp', ['-al', join(ROOT, 'node_modules'), join(tree, 'node_modules')], ROOT);
      run('npm', ['run', '--silent', 'package', '--', zip], tree);
    } finally {
      spawnSync('git', ['worktree', 'remove', '--force', tree], { cwd: ROOT });
      if (existsSync(tree)) rmSync(tree, { recursive: true, force: true });
      spawnSync('git', ['worktree', 'prune'], { cwd: ROOT });
    }
    const appDir = join(work, 'app');
    const problems = await unpackZip(zip, appDir);
    if (problems.length > 0) throw new Error(`bench: the package of ${abbreviated} does not unpack:\n${problems.join('\n')}`);
    return { commit: abbreviated, appDir, remove: () => rmSync(work, { recursive: true, force: true }) };
  } catch (error) {
    rmSync(work, { recursive: true, force: true });
    throw error;
  }
}
