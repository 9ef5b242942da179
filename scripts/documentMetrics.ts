/**
 * How long each reader's document is (issue 49): its lines, and the median length of its prose sentences
 * in words. Prose is what a person reads as sentences: fenced code, tables and headings are left out, and
 * each list item or paragraph is split into sentences. Table cells are counted apart, in words, since a
 * cell should be a phrase (their 90th percentile, as most cells are a code or a name). For docs/openapi.yaml, the prose is every `description` and `summary`.
 *
 *   tsc -p . && node dist/scripts/documentMetrics.js [file …]
 *
 * prints one row per document; tests/unit/readers.test.ts holds the documents to their lengths with it.
 */
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';

export interface DocumentMetrics {
  readonly file: string;
  readonly lines: number;
  readonly sentences: number;
  /** Median words per sentence of prose. */
  readonly medianWords: number;
  /** The 90th percentile of words per sentence: the long tail a median hides. */
  readonly p90Words: number;
  /** The 90th percentile of words per table cell (0 without tables). */
  readonly p90CellWords: number;
}

const median = (values: readonly number[]): number => {
  if (values.length === 0) return 0;
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
};

const p90 = (values: readonly number[]): number => {
  if (values.length === 0) return 0;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil(sorted.length * 0.9) - 1)];
};

const words = (text: string): number => text.split(/\s+/).filter((w) => /[\p{L}\p{N}]/u.test(w)).length;

/** The sentences of a run of prose: split after `.`, `!` or `?` followed by a space and a capital, a backtick, a `*` or a digit. */
export function sentencesOf(prose: string): string[] {
  return prose
    .replace(/\s+/g, ' ')
    .split(/(?<=[.!?])\s+(?=[A-Z`*("0-9])/)
    .map((s) => s.trim())
    .filter((s) => words(s) > 0);
}

/** The prose blocks (paragraphs and list items) and the table cells of a Markdown text. */
export function markdownParts(text: string): { blocks: string[]; cells: string[] } {
  const blocks: string[] = [];
  const cells: string[] = [];
  let current: string[] = [];
  const flush = () => {
    if (current.length > 0) blocks.push(current.join(' '));
    current = [];
  };
  let fence = false;
  let comment = false;
  for (const line of text.split('\n')) {
    if (/^\s*```/.test(line)) {
      fence = !fence;
      flush();
      continue;
    }
    if (fence) continue;
    if (comment || line.trimStart().startsWith('<!--')) {
      comment = !line.includes('-->');
      continue;
    }
    if (line.startsWith('|')) {
      flush();
      if (/^\|[-| :]+\|\s*$/.test(line)) continue;
      cells.push(...line.slice(1, line.trimEnd().length - 1).split(' | '));
      continue;
    }
    if (/^#{1,6} /.test(line) || line.trim() === '') {
      flush();
      continue;
    }
    if (/^\s*(?:[-*]|\d+\.) /.test(line)) flush();
    current.push(line.trim().replace(/^(?:[-*]|\d+\.) /, ''));
  }
  flush();
  return { blocks, cells: cells.map((c) => c.trim()).filter((c) => c !== '') };
}

/** Every `description` and `summary` text of a parsed YAML document. */
function yamlProse(value: unknown, out: string[] = []): string[] {
  if (Array.isArray(value)) for (const item of value) yamlProse(item, out);
  else if (value !== null && typeof value === 'object')
    for (const [key, item] of Object.entries(value)) {
      if ((key === 'description' || key === 'summary') && typeof item === 'string') out.push(...item.split(/\n\s*\n/));
      else yamlProse(item, out);
    }
  return out;
}

export function measure(file: string, text: string): DocumentMetrics {
  const lines = text.endsWith('\n') ? text.split('\n').length - 1 : text.split('\n').length;
  const { blocks, cells } = file.endsWith('.yaml') ? { blocks: yamlProse(parse(text)), cells: [] } : markdownParts(text);
  const sentences = blocks.flatMap(sentencesOf);
  return {
    file,
    lines,
    sentences: sentences.length,
    medianWords: median(sentences.map(words)),
    p90Words: p90(sentences.map(words)),
    p90CellWords: p90(cells.map(words)),
  };
}

/** Several files measured as one document (docs/decisions/, its records). */
export function measureAll(name: string, files: readonly { file: string; text: string }[]): DocumentMetrics {
  const each = files.map(({ file, text }) => ({ m: measure(file, text), text }));
  const sentences = each.flatMap(({ text }) => markdownParts(text).blocks.flatMap(sentencesOf));
  const cells = each.flatMap(({ text }) => markdownParts(text).cells);
  return {
    file: name,
    lines: each.reduce((n, { m }) => n + m.lines, 0),
    sentences: sentences.length,
    medianWords: median(sentences.map(words)),
    p90Words: p90(sentences.map(words)),
    p90CellWords: p90(cells.map(words)),
  };
}

/** The reader documents of the repository at `root`, each measured (the decision records as one). */
export function readerDocuments(root: string): DocumentMetrics[] {
  const one = (file: string) => (existsSync(join(root, file)) ? [measure(file, readFileSync(join(root, file), 'utf8'))] : []);
  const records = existsSync(join(root, 'docs', 'decisions'))
    ? readdirSync(join(root, 'docs', 'decisions'))
        .filter((f) => /^\d{4}-.*\.md$/.test(f))
        .map((f) => ({ file: `docs/decisions/${f}`, text: readFileSync(join(root, 'docs', 'decisions', f), 'utf8') }))
    : [];
  return [
    ...['README.md', 'docs/partners.md', 'docs/runbook.md', 'docs/deploy.md', 'docs/contract.md', 'docs/contributing.md', 'docs/decisions.md'].flatMap(one),
    ...(records.length > 0 ? [measureAll(`docs/decisions/ (${records.length} records)`, records)] : []),
    ...['docs/openapi.yaml', 'bench/results.md'].flatMap(one),
  ];
}

if (require.main === module) {
  const root = join(__dirname, '..', '..');
  const files = process.argv.slice(2);
  const rows = files.length > 0 ? files.map((f) => measure(f, readFileSync(f, 'utf8'))) : readerDocuments(root);
  console.log('| Document | Lines | Sentences | Words a sentence, median | p90 | Words a table cell, p90 |');
  console.log('|---|---|---|---|---|---|');
  for (const r of rows) console.log(`| ${r.file} | ${r.lines} | ${r.sentences} | ${r.medianWords} | ${r.p90Words} | ${r.p90CellWords} |`);
}
