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

/** How the service's code (lib/) shows it reads each layout the floor names, by its commit: a text that appears there from that commit on. */
const READ_BY: Record<string, string> = {
  '5f0034a250a0b70063b4af5cfc5e8a4ab3614859': 'STOPPED_CLIENTS_TABLE', // the stop list's setting: the service reads the list
  '634ff856d9c994be63c9ea5d3d059916ba534f99': "'Refused'", // a batch's refusal recorded under its key, and read back
  e5f8235f0dd162cbd89ce194628f93a8facbb1cb: 'idempotencyKeyOutcomeForgotten', // a take answered for good: past 48 hours, "can no longer be told"
};

function git(...args: string[]): { status: number | null; stdout: string } {
  const result = spawnSync('git', args, { cwd: ROOT, encoding: 'utf8' });
  return { status: result.status, stdout: result.stdout };
}
/** Whether the code at `commit` reads the layout first read at `since` (a file of its lib/ holds the text). */
const readsAt = (commit: string, since: string) => git('grep', '--quiet', '--fixed-strings', READ_BY[since], commit, '--', 'lib/').status === 0;
/** Whether `commit` is the first to read that layout: it does, and none of its parents does. */
function firstToRead(commit: string, since: string): boolean {
  const parents = git('rev-list', '--parents', '-n', '1', commit).stdout.trim().split(' ').slice(1);
  return readsAt(commit, since) && parents.every((parent) => !readsAt(parent, since));
}

test('the whole history is here (CI checks out every commit: fetch-depth 0)', () => {
  expect(git('rev-parse', '--is-shallow-repository').stdout.trim()).toBe('false');
});

test('each layout names a table of the contract and its first commit, once, with why older releases are unsafe and what a person does first', () => {
  expect(FLOOR.map((l) => l.since).sort()).toEqual(Object.keys(READ_BY).sort());
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
  (_table, since) => {
    expect(git('merge-base', '--is-ancestor', since, 'HEAD').status).toBe(0);
    expect(firstToRead(since, since)).toBe(true);
    expect(readsAt('HEAD', since)).toBe(true);
  },
);

test('the check can fail: a commit before the layout, or one after its first, is not the first to read it', () => {
  for (const { since } of FLOOR) {
    expect(firstToRead(`${since}^`, since)).toBe(false);
    expect(firstToRead('HEAD', since)).toBe(false);
  }
});
