/**
 * The error catalogue (lib/errorCatalogue.ts) is the one list of errors: every document that lists codes,
 * names, rules or details is parsed and compared with it both ways, so a row missing, an extra row, or a
 * changed name, detail or order fails here. So are the contract's `Loans` columns with those the rules
 * declare (lib/loans.ts, lib/drawRules.ts), and no text anywhere cites a rule by its place.
 */
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { FIELDS_READ } from '../../lib/drawRules';
import { DETAILS, ELEMENT_RULES, ERRORS, REQUEST_ERRORS, documentedDetail, type DetailKey } from '../../lib/errorCatalogue';
import { LOAN_FIELDS } from '../../lib/loans';
import { ERROR_NAMES } from '../../lib/problem';
import { LOAN_COLUMNS } from '../../lib/store';
import { openApi } from '../support/contract';
import { tableRows, tables } from '../support/markdown';

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
  test('each rule has a name of its own', () => {
    const names = ELEMENT_RULES.map((r) => r.name);
    expect(names.filter((name, i) => names.indexOf(name) !== i)).toEqual([]);
  });

  test('the rules on the element alone come before the rules against storage', () => {
    const against = ELEMENT_RULES.map((r) => r.against);
    expect(against).toEqual([...against].sort((a, b) => (a === b ? 0 : a === 'element' ? -1 : 1)));
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

/** The catalogue's rules split as the documents list them: those on the element alone, then those against storage. */
const byPhase = <T>(row: (rule: (typeof ELEMENT_RULES)[number]) => T) =>
  (['element', 'storage'] as const).map((against) => ELEMENT_RULES.filter((r) => r.against === against).map(row));

describe('docs/contract.md', () => {
  const contract = read('docs/contract.md');

  test('§2.3 lists exactly the rules, in order, in one table on the element alone and one against storage, with names, codes and details', () => {
    const found = tables(section(contract, /^### 2\.3 /m), /^\| Rule \| `error` \| `code` \|/);
    expect(found.map((rows) => rows.map((cells) => ({ rule: cells[0], error: cells[1], code: unquote(cells[2]), details: codeSpans(cells[5]) })))).toEqual(
      byPhase((r) => ({ rule: r.name, error: ERROR_NAMES[r.code], code: r.code, details: r.details.map(documentedDetail) })),
    );
  });

  test('§2.2 lists exactly the request-level errors, in the order they are checked', () => {
    const rows = tableRows(section(contract, /^### 2\.2 /m), /^\| Condition \| `detail` \|/);
    expect(rows.map((cells) => codeSpans(cells[1])[0])).toEqual(REQUEST_ERRORS.map(documentedDetail));
  });

  const storage = section(contract, /^## 4\. /m);
  /** The Loans columns the rules read, each with its type, as `Column Type`. */
  const declared = FIELDS_READ.map((field) => `${LOAN_FIELDS[field].column} ${LOAN_FIELDS[field].type}`).sort();

  test("§4's layout of Loans has exactly the columns the rules read, each with the type it is read as", () => {
    const [loans] = tableRows(storage, /^\| Table \(setting, default\) \|/).filter((cells) => cells[0].includes('`Loans`'));
    const laidOut = loans[3].split(';').map((property) => property.trim().replace(/^`(\w+)` (\w+).*$/, '$1 $2'));
    expect({ 'Loans in contract §4': laidOut.sort() }).toEqual({ 'Loans in contract §4': declared });
  });

  test('§4 names exactly the Loans columns the store selects', () => {
    const selected = /((?:`\w+`,?\s+)+)from `Loans`/.exec(storage);
    expect({ 'selected from Loans, contract §4': codeSpans(selected?.[1] ?? '').sort() }).toEqual({
      'selected from Loans, contract §4': [...LOAN_COLUMNS].sort(),
    });
  });
});

test("docs/partners.md's rule tables list exactly the rules, in order, with names, codes and when each applies", () => {
  const found = tables(section(read('docs/partners.md'), /^## 4\. Reading an error/m), /^\| rule \| `error` \| `code` \| when \|/);
  expect(found.map((rows) => rows.map(([rule, error, code, when]) => ({ rule, error, code: unquote(code), when })))).toEqual(
    byPhase((r) => ({ rule: r.name, error: ERROR_NAMES[r.code], code: r.code, when: r.when })),
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

test('no text of the repository cites a rule by its place, which a new rule would shift', () => {
  const DIRS = ['docs', 'lib', 'functions', 'dev', 'scripts', 'examples', 'bench', 'tests', 'infra', '.github'];
  const files = [
    'README.md',
    ...DIRS.flatMap((dir) => readdirSync(join(__dirname, '..', '..', dir), { recursive: true, encoding: 'utf8' }).map((f) => `${dir}/${f}`)),
  ].filter((f) => /\.(md|ya?ml|ts|cjs|mjs|js|json|sh|bicep)$/.test(f) && !/^(tests\/fixtures|bench\/profiles)\//.test(f));
  const PLACE = /\brules?[ -]?\d{1,2}\b|§2\.3 rows? \d/i;
  const cited = files.flatMap((file) =>
    read(file)
      .split('\n')
      .flatMap((line, i) => (PLACE.test(line) ? [`${file}:${i + 1}: ${line.trim()}`] : [])),
  );
  expect(files.length).toBeGreaterThan(100);
  expect(cited).toEqual([]);
});
