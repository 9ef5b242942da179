/**
 * The error catalogue (lib/errorCatalogue.ts) is the one list of errors: every document that lists codes,
 * names, rules or details is parsed and compared with it both ways, so a row missing, an extra row, or a
 * changed name, detail or order fails here.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { DETAILS, ELEMENT_RULES, ERRORS, REQUEST_ERRORS, documentedDetail, type DetailKey } from '../../lib/errorCatalogue';
import { ERROR_NAMES } from '../../lib/problem';
import { openApi } from '../support/contract';
import { tableRows } from '../support/markdown';

const read = (file: string) => readFileSync(join(__dirname, '..', '..', file), 'utf8');

/** The text of a Markdown section: from its heading to the next heading of any level. */
function section(text: string, heading: RegExp): string {
  const start = text.search(heading);
  if (start < 0) throw new Error(`no heading ${heading}`);
  const rest = text.slice(start);
  const next = rest.search(/\n#{1,6} /);
  return next < 0 ? rest : rest.slice(0, next);
}

const codeSpans = (cell: string) => [...cell.matchAll(/`([^`]+)`/g)].map((m) => m[1]);
const unquote = (cell: string) => cell.replace(/^`(.*)`$/, '$1');

describe('the catalogue itself', () => {
  test('rules are numbered 1, 2, 3 … in the order of checks', () => {
    expect(ELEMENT_RULES.map((r) => r.rule)).toEqual(ELEMENT_RULES.map((_, i) => i + 1));
  });

  test('codes are listed in the order rules first use them, and every code is used', () => {
    expect(ERRORS.map((e) => e.code)).toEqual([...new Set(ELEMENT_RULES.map((r) => r.code))]);
  });

  test('ERROR_NAMES is the catalogue, in its order', () => {
    expect(Object.entries(ERROR_NAMES)).toEqual(ERRORS.map((e) => [e.code, e.error]));
  });

  test('every detail text belongs to a rule or to the request-level errors', () => {
    const used = new Set<DetailKey>([...ELEMENT_RULES.flatMap((r) => r.details), ...REQUEST_ERRORS]);
    expect(Object.keys(DETAILS).filter((key) => !used.has(key as DetailKey))).toEqual([]);
  });
});

describe('docs/contract.md', () => {
  const contract = read('docs/contract.md');

  test('§2.3 lists exactly the rules, in order, with their names, codes and details', () => {
    const rows = tableRows(section(contract, /^### 2\.3 /m), /^\| # \| `error` \| `code` \|/);
    expect(rows.map((cells) => ({ rule: Number(cells[0]), error: cells[1], code: unquote(cells[2]), details: codeSpans(cells[5]) }))).toEqual(
      ELEMENT_RULES.map((r) => ({ rule: r.rule, error: ERROR_NAMES[r.code], code: r.code, details: r.details.map(documentedDetail) })),
    );
  });

  test('§2.2 lists exactly the request-level errors, in the order they are checked', () => {
    const rows = tableRows(section(contract, /^### 2\.2 /m), /^\| Condition \| `detail` \|/);
    expect(rows.map((cells) => codeSpans(cells[1])[0])).toEqual(REQUEST_ERRORS.map(documentedDetail));
  });
});

test("docs/partners.md's rule table lists exactly the rules, in order, with names, codes and when each applies", () => {
  const rows = tableRows(section(read('docs/partners.md'), /^## 4\. Reading an error/m), /^\| # \| `error` \| `code` \| when \|/);
  expect(rows.map(([rule, error, code, when]) => ({ rule: Number(rule), error, code: unquote(code), when }))).toEqual(
    ELEMENT_RULES.map((r) => ({ rule: r.rule, error: ERROR_NAMES[r.code], code: r.code, when: r.when })),
  );
});

describe('docs/openapi.yaml', () => {
  const schemas = openApi().components.schemas;

  test('ErrorCode enumerates exactly the codes, in order', () => {
    expect(schemas.ErrorCode.enum).toEqual(ERRORS.map((e) => e.code));
  });

  test("ElementError's error enumerates exactly the names, in order", () => {
    expect(schemas.ElementError.properties.error.enum).toEqual(ERRORS.map((e) => e.error));
  });

  test('ElementError pairs each code with its exact name, in order, and nothing else', () => {
    type Pair = { required: string[]; properties: { code: { const: string }; error: { const: string } } };
    expect(
      (schemas.ElementError.oneOf as Pair[]).map((s) => ({ required: s.required, code: s.properties.code.const, error: s.properties.error.const })),
    ).toEqual(ERRORS.map((e) => ({ required: ['code', 'error'], code: e.code, error: e.error })));
  });
});
