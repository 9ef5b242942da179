/** The body rows (cells trimmed) of each Markdown table in `text` whose header row matches `header`, in order. */
export function tables(text: string, header: RegExp): string[][][] {
  const lines = text.split('\n');
  return lines.flatMap((line, at) => {
    if (!header.test(line)) return [];
    const rows: string[][] = [];
    for (const row of lines.slice(at + 2)) {
      if (!row.startsWith('|')) break;
      rows.push(
        row
          .slice(1, row.trimEnd().length - 1)
          .split(' | ')
          .map((cell) => cell.trim()),
      );
    }
    return [rows];
  });
}

/** The body rows (cells trimmed) of the first Markdown table in `text` whose header row matches `header`. */
export function tableRows(text: string, header: RegExp): string[][] {
  const [first] = tables(text, header);
  if (first === undefined) throw new Error(`no table with header ${header}`);
  return first;
}
