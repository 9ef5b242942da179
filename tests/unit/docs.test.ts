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
  expect(links.filter(({ file }) => file.endsWith(join('docs', 'decisions.md'))).length).toBeGreaterThan(20);
  const broken = links.filter(({ target, anchor }) => target.endsWith('.md') && existsSync(target) && !anchors(readFileSync(target, 'utf8')).has(anchor));
  expect(broken.map(({ file, target, anchor }) => `${relative(ROOT, file)} → ${relative(ROOT, target)}#${anchor}`)).toEqual([]);
});

test('every entry of docs/decisions.md is dated and listed in its contents', () => {
  const text = readFileSync(join(ROOT, 'docs', 'decisions.md'), 'utf8');
  const main = text.slice(text.indexOf('\n## Contents'), text.indexOf('\n## Superseded decisions'));
  const contents = main.slice(0, main.indexOf('\n## ', 1));
  const entries = [...main.matchAll(/^(##|###) (.+)\n\n(.*)$/gm)].slice(1);
  expect(entries.length).toBeGreaterThan(20);
  expect(entries.filter(([, , , date]) => !/^\*Decided 2026-\d\d-\d\d\b/.test(date)).map(([, , heading]) => heading)).toEqual([]);
  const listed = new Set([...contents.matchAll(/\]\(#([^)]+)\)/g)].map((m) => m[1]));
  const topLevel = entries.filter(([, level]) => level === '##').map(([, , heading]) => [...anchors(`## ${heading}`)][0]);
  expect(topLevel.filter((anchor) => !listed.has(anchor))).toEqual([]);
});
