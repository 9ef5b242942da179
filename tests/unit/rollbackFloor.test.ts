/**
 * infra/rollbackFloor.json, the oldest release each part of the tables' current layout is safe with
 * (scripts/provenance.cjs refuses an earlier run in every rollback), held to the repository's history:
 * each commit it names is in main's history, and is the first whose code reads that layout.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

const ROOT = join(__dirname, '..', '..');
interface Layout {
  readonly table: string;
  readonly since: string;
  readonly olderReleases: string;
  readonly first: string;
}
const FLOOR = (JSON.parse(readFileSync(join(ROOT, 'infra', 'rollbackFloor.json'), 'utf8')) as { layouts: Layout[] }).layouts;

/** How the service's code (lib/) shows it reads each layout the floor names: a text that appears there from that commit on. */
const READ_BY: Record<string, string> = {
  StoppedClients: 'STOPPED_CLIENTS_TABLE', // the stop list's setting: the service reads the list
  IdempotencyKeys: "'Refused'", // a batch's refusal recorded under its key, and read back
};

function git(...args: string[]): { status: number | null; stdout: string } {
  const result = spawnSync('git', args, { cwd: ROOT, encoding: 'utf8' });
  return { status: result.status, stdout: result.stdout };
}
/** Whether the code at `commit` reads the layout (a file of its lib/ holds the text). */
const readsAt = (commit: string, table: string) => git('grep', '--quiet', '--fixed-strings', READ_BY[table], commit, '--', 'lib/').status === 0;
/** Whether `commit` is the first to read the layout: it does, and none of its parents does. */
function firstToRead(commit: string, table: string): boolean {
  const parents = git('rev-list', '--parents', '-n', '1', commit).stdout.trim().split(' ').slice(1);
  return readsAt(commit, table) && parents.every((parent) => !readsAt(parent, table));
}

test('the whole history is here (CI checks out every commit: fetch-depth 0)', () => {
  expect(git('rev-parse', '--is-shallow-repository').stdout.trim()).toBe('false');
});

test('each layout names a table of the contract once, with why older releases are unsafe and what a person does first', () => {
  expect(FLOOR.map((l) => l.table).sort()).toEqual(Object.keys(READ_BY).sort());
  const contract = readFileSync(join(ROOT, 'docs', 'contract.md'), 'utf8');
  for (const layout of FLOOR) {
    expect(contract).toContain(`\`${layout.table}\``);
    expect(layout.since).toMatch(/^[0-9a-f]{40}$/);
    expect(layout.olderReleases.length).toBeGreaterThan(20);
    expect(layout.first.length).toBeGreaterThan(20);
  }
});

test.each(FLOOR.map((l) => [l.table, l.since]))(
  '%s: %s is in main’s history and the first commit that reads the layout; the code still reads it',
  (table, since) => {
    expect(git('merge-base', '--is-ancestor', since, 'HEAD').status).toBe(0);
    expect(firstToRead(since, table)).toBe(true);
    expect(readsAt('HEAD', table)).toBe(true);
  },
);

test('the check can fail: a commit before the layout, or one after its first, is not the first to read it', () => {
  for (const { table, since } of FLOOR) {
    expect(firstToRead(`${since}^`, table)).toBe(false);
    expect(firstToRead('HEAD', table)).toBe(false);
  }
});
