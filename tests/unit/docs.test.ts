/**
 * The repository stands on its own: every section of docs/contract.md that code, tests, infra or docs
 * cite exists, and every relative link in every Markdown file reaches a file of the repository.
 */
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';

const ROOT = join(__dirname, '..', '..');
const SKIPPED = new Set(['node_modules', 'dist', '.git', 'profiles']);

/** Every file of the repository with one of these endings (built and installed trees left out). */
function files(endings: readonly string[], dir = ROOT): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return SKIPPED.has(entry.name) ? [] : files(endings, path);
    return endings.some((e) => entry.name.endsWith(e)) ? [path] : [];
  });
}

const contract = readFileSync(join(ROOT, 'docs', 'contract.md'), 'utf8');
/** Section numbers of the contract's headings: `## 2. HTTP contract` is 2, `### 2.1 Statuses` is 2.1. */
const sections = new Set([...contract.matchAll(/^#{2,4} (\d+(?:\.\d+)*)\.? /gm)].map((m) => m[1]));

test('the contract has numbered sections', () => {
  expect([...sections]).toEqual(expect.arrayContaining(['1', '2', '2.1', '2.2', '2.3', '2.4', '3', '4', '5', '6', '7']));
});

test('every section of docs/contract.md cited anywhere in the repository exists', () => {
  const cited = files(['.ts', '.js', '.mjs', '.bicep', '.md', '.json', '.yaml', '.sh']).flatMap((file) => {
    const text = readFileSync(file, 'utf8');
    // "docs/contract.md §2.3", "contract.md §4", and ranges such as "§2.2–2.3"
    return [...text.matchAll(/contract\.md (§[\d.]+(?:[–-][\d.]+)?(?:,? §[\d.]+)*)/g)].flatMap((m) =>
      [...m[1].matchAll(/(\d+(?:\.\d+)*)/g)].map((n) => ({ at: relative(ROOT, file), section: n[1] })),
    );
  });
  expect(cited.length).toBeGreaterThan(20);
  expect(cited.filter((c) => !sections.has(c.section))).toEqual([]);
});

test('every relative link in every Markdown file reaches a file in the repository', () => {
  const links = files(['.md']).flatMap((file) => {
    const text = readFileSync(file, 'utf8').replace(/```[^]*?```/g, ''); // links in code blocks are not links
    return [...text.matchAll(/\]\(([^)\s]+)\)/g)]
      .map((m) => m[1])
      .filter((target) => !/^[a-z]+:/i.test(target) && !target.startsWith('#')) // absolute URLs and in-page anchors
      .map((target) => ({ file, target }));
  });
  expect(links.length).toBeGreaterThan(20);
  const broken = links.filter(({ file, target }) => !existsSync(join(dirname(file), decodeURI(target.split('#')[0]))));
  expect(broken.map(({ file, target }) => `${relative(ROOT, file)} → ${target}`)).toEqual([]);
});

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens; repeats get -1, -2 … */
function anchors(markdown: string): Set<string> {
  const seen = new Map<string, number>();
  const found = new Set<string>();
  for (const [, heading] of markdown.replace(/```[^]*?```/g, '').matchAll(/^#{1,6} (.+)$/gm)) {
    const text = heading.replace(/\[([^\]]*)\]\([^)]*\)/g, '$1');
    const slug = text
      .toLowerCase()
      .replace(/[^\p{L}\p{N} _-]/gu, '')
      .replace(/ /g, '-');
    const n = seen.get(slug) ?? 0;
    seen.set(slug, n + 1);
    found.add(n === 0 ? slug : `${slug}-${n}`);
  }
  return found;
}

test('every #anchor a Markdown link names is a heading of the file it points at', () => {
  const links = files(['.md']).flatMap((file) => {
    const text = readFileSync(file, 'utf8').replace(/```[^]*?```/g, '');
    return [...text.matchAll(/\]\(([^)\s]*#[^)\s]+)\)/g)]
      .map((m) => m[1])
      .filter((target) => !/^[a-z]+:/i.test(target))
      .map((target) => {
        const [path, anchor] = target.split('#');
        return { file, target: path === '' ? file : join(dirname(file), decodeURI(path)), anchor };
      });
  });
  expect(links.length).toBeGreaterThan(10);
  const broken = links.filter(({ target, anchor }) => target.endsWith('.md') && existsSync(target) && !anchors(readFileSync(target, 'utf8')).has(anchor));
  expect(broken.map(({ file, target, anchor }) => `${relative(ROOT, file)} → ${relative(ROOT, target)}#${anchor}`)).toEqual([]);
});

describe('docs/decisions/: one record per decision, in ADR form (issue 49)', () => {
  const DIR = join(ROOT, 'docs', 'decisions');
  const records = readdirSync(DIR)
    .filter((f) => f.endsWith('.md'))
    .sort()
    .map((file) => ({ file, text: readFileSync(join(DIR, file), 'utf8') }));
  const numbered = new Map(records.map((r) => [Number(r.file.slice(0, 4)), r]));
  /** What is wrong with one record's form: [] when nothing. */
  function formProblems(file: string, text: string): string[] {
    const number = /^(\d{4})-[a-z0-9-]+\.md$/.exec(file)?.[1];
    if (number === undefined) return [`${file}: not named NNNN-title.md`];
    const lines = text.split('\n');
    const problems: string[] = [];
    if (!new RegExp(`^# ${number}\\. \\S`).test(lines[0])) problems.push(`${file}: its first line is not "# ${number}. <title>"`);
    if (!/^Status: (?:Accepted\b|Proposed\b|Superseded by \[\d{4}\]\(\d{4}-[a-z0-9-]+\.md\))/.test(lines[2] ?? ''))
      problems.push(`${file}: no status in its first lines`);
    const headings = lines.filter((l) => l.startsWith('## '));
    if (headings.join('|') !== '## Context|## Decision|## Consequences') problems.push(`${file}: sections ${headings.join(', ')}`);
    return problems;
  }

  test('each record is NNNN-title.md: its number and title, its status in its first lines, then context, decision, consequences', () => {
    expect(records.length).toBeGreaterThan(100);
    expect(records.flatMap(({ file, text }) => formProblems(file, text))).toEqual([]);
    expect(numbered.size).toBe(records.length);
  });

  test('a superseded record names the record that replaced it, which names it back; an accepted one names none', () => {
    const problems = records.flatMap(({ file, text }) => {
      const status = text.split('\n')[2];
      const by = /^Status: Superseded by \[(\d{4})\]/.exec(status)?.[1];
      if (by === undefined) return [];
      const successor = numbered.get(Number(by));
      if (successor === undefined) return [`${file}: superseded by ${by}, which does not exist`];
      const back = successor.text.split('\n')[2];
      return back.includes(`[${file.slice(0, 4)}](${file})`) ? [] : [`${successor.file} does not say it supersedes ${file}`];
    });
    expect(problems).toEqual([]);
    expect(records.filter(({ text }) => text.split('\n')[2].startsWith('Status: Superseded')).length).toBeGreaterThan(20);
  });

  test('docs/decisions.md is the index: every record, once, with its status', () => {
    const index = readFileSync(join(ROOT, 'docs', 'decisions.md'), 'utf8');
    const rows = [...index.matchAll(/^\| \[(\d{4})\]\(decisions\/([^)]+)\) \| (.+) \| (accepted|superseded by (\d{4})) \|$/gm)];
    expect(rows.map((r) => r[2])).toEqual(records.map((r) => r.file));
    for (const [, number, file, title, status, by] of rows) {
      const record = numbered.get(Number(number))?.text ?? '';
      expect({ file, title: record.split('\n')[0] }).toEqual({ file, title: `# ${number}. ${title.replace(/\\\|/g, '|')}` });
      expect({ file, status }).toEqual({ file, status: by === undefined ? 'accepted' : `superseded by ${/Superseded by \[(\d{4})\]/.exec(record)?.[1]}` });
    }
  });

  test('the form check can fail: a record without its status line, or with its sections out of order', () => {
    const good = numbered.get(1) as { file: string; text: string };
    expect(formProblems(good.file, good.text)).toEqual([]);
    expect(formProblems(good.file, good.text.replace(/^Status: .*$/m, 'Decided long ago.'))).toEqual([`${good.file}: no status in its first lines`]);
    expect(formProblems(good.file, good.text.replace('## Context', '## Background'))).toHaveLength(1);
    expect(formProblems('decision-one.md', good.text)).toEqual(['decision-one.md: not named NNNN-title.md']);
  });
});
