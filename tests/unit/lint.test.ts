/**
 * The lint rules catch what they are chosen for: the fixture's floating promise and async callback passed to forEach
 * are reported (`npm run lint`, run by `npm test`, checks the whole tree with the same configuration).
 * ESLint runs as its own process: it loads its configuration with a dynamic import, which Jest's
 * module loader does not provide.
 */
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';

const ROOT = join(__dirname, '..', '..');

test('a floating promise and an async callback where a void one is expected fail lint', () => {
  // The whole-tree run ignores the fixture (it fails on purpose); here it is linted explicitly.
  const fixture = join('tests', 'fixtures', 'lint', 'floatingPromise.ts');
  const run = spawnSync(process.execPath, [join(ROOT, 'node_modules', 'eslint', 'bin', 'eslint.js'), '--no-ignore', '--format', 'json', fixture], {
    cwd: ROOT,
    encoding: 'utf8',
  });
  expect(run.status).toBe(1); // lint failed
  const [result] = JSON.parse(run.stdout) as { messages: { line: number; ruleId: string | null }[] }[];
  const found = result.messages.map((m) => `${m.line}:${m.ruleId ?? ''}`);
  expect(found).toEqual(expect.arrayContaining(['7:@typescript-eslint/no-floating-promises', '11:@typescript-eslint/no-misused-promises']));
}, 60_000);
