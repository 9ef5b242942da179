/** The body rows (cells trimmed) of the first Markdown table in `text` whose header row matches `header`. */
export function tableRows(text: string, header: RegExp): string[][] {
  const lines = text.split('\n');
  const at = lines.findIndex((line) => header.test(line));
  if (at < 0) throw new Error(`no table with header ${header}`);
  const rows: string[][] = [];
  for (const line of lines.slice(at + 2)) {
    if (!line.startsWith('|')) break;
    rows.push(
      line
        .slice(1, line.trimEnd().length - 1)
        .split(' | ')
        .map((cell) => cell.trim()),
    );
  }
  return rows;
}
