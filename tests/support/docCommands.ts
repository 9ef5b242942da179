/**
 * A docs/deploy.md section's shell block run as a person would paste it, each `<placeholder>` filled, against
 * an `az` that records its calls instead of reaching Azure: what the commands of the document do, checked by
 * the tests that know what they must do.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const DEPLOY_MD = join(__dirname, '..', '..', 'docs', 'deploy.md');

/**
 * The `az` calls (each its arguments) of the one ```sh block of `section` (a heading line, as written) that
 * contains `containing`. `values` fills placeholders by name (`<env>` → values.env); any other
 * `<placeholder>` becomes `placeholder`. The recording `az` prints `answers[<first two arguments>]`, or
 * `recorded`.
 */
export function azCallsOf(section: string, containing: string, values: Record<string, string>, answers: Record<string, string> = {}): string[][] {
  const text = readFileSync(DEPLOY_MD, 'utf8');
  const level = /^#+/.exec(section)?.[0].length ?? 2;
  // The heading as written, its section number (`## 15. `, `### 3.1 `) aside.
  const title = section.replace(/^#+ /, '').replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  const heading = new RegExp(`\n#{${level}} (?:\\d+(?:\\.\\d+)*\\.? )?${title}\n`).exec(text);
  if (heading === null) throw new Error(`docs/deploy.md has no section ${section}`);
  const rest = text.slice(heading.index + heading[0].length);
  const next = rest.search(new RegExp(`\\n#{2,${level}} `));
  const blocks = [...(next < 0 ? rest : rest.slice(0, next)).matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1]).filter((b) => b.includes(containing));
  if (blocks.length !== 1) throw new Error(`${section}: ${blocks.length} shell blocks contain ${containing}, not one`);
  const dir = mkdtempSync(join(tmpdir(), 'deploy-md-'));
  try {
    const log = join(dir, 'az.log');
    const cases = Object.entries(answers)
      .map(([command, answer]) => `  ${JSON.stringify(command)}) echo ${JSON.stringify(answer)} ;;\n`)
      .join('');
    writeFileSync(
      join(dir, 'az'),
      `#!/usr/bin/env bash\nprintf '%s\\037' "$@" >> ${JSON.stringify(log)}\necho >> ${JSON.stringify(log)}\ncase "$1 $2" in\n${cases}  *) echo recorded ;;\nesac\n`,
      { mode: 0o755 },
    );
    const script = blocks[0].replace(/<([A-Za-z][A-Za-z ]*)>/g, (_m, name: string) => values[name] ?? 'placeholder');
    const ran = spawnSync('bash', ['-euo', 'pipefail', '-c', script], { env: { ...process.env, PATH: `${dir}:${process.env.PATH ?? ''}` }, encoding: 'utf8' });
    if (ran.status !== 0 || ran.stderr !== '') throw new Error(`${section}: the block failed (${ran.status}): ${ran.stderr}`);
    return readFileSync(log, 'utf8')
      .trim()
      .split('\n')
      .map((line) => line.split('\x1f').slice(0, -1));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The value given to `option` in one call's arguments. */
export const optionOf = (args: readonly string[], option: string): string | undefined => {
  const at = args.indexOf(option);
  return at < 0 ? undefined : args[at + 1];
};
