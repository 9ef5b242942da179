/** The partner example client's input files (examples/submit-draws.ts): its CSV parser above all. */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DrawFileError, drawsFromCsv, parseCsv, parseDrawFile } from '../../examples/submit-draws';

const fieldsOf = (text: string) => parseCsv(text).map((r) => r.fields);

describe('parseCsv', () => {
  test('plain fields, with and without a final line break', () => {
    expect(fieldsOf('a,b,c\n1,2,3\n')).toEqual([
      ['a', 'b', 'c'],
      ['1', '2', '3'],
    ]);
    expect(fieldsOf('a,b,c\n1,2,3')).toEqual([
      ['a', 'b', 'c'],
      ['1', '2', '3'],
    ]);
  });

  test('CRLF, LF and lone CR all end a record', () => {
    expect(fieldsOf('a,b\r\n1,2\r\n3,4\r\n')).toEqual([
      ['a', 'b'],
      ['1', '2'],
      ['3', '4'],
    ]);
    expect(fieldsOf('a,b\r1,2\n3,4\r\n5,6')).toEqual([
      ['a', 'b'],
      ['1', '2'],
      ['3', '4'],
      ['5', '6'],
    ]);
  });

  test('quoted fields hold commas, line breaks and "" for one quote', () => {
    expect(fieldsOf('"Doe, Jane","say ""hi""","two\r\nlines","x\ny"\r\n')).toEqual([['Doe, Jane', 'say "hi"', 'two\r\nlines', 'x\ny']]);
    expect(fieldsOf('"",""""\n')).toEqual([['', '"']]);
  });

  test('spaces around a quoted field are ignored; unquoted fields keep theirs', () => {
    expect(fieldsOf('  "a, b" , c ,"d"\n')).toEqual([['a, b', ' c ', 'd']]);
  });

  test('empty fields, including a trailing one', () => {
    expect(fieldsOf(',a,,\n')).toEqual([['', 'a', '', '']]);
  });

  test('blank lines (empty or only spaces) are skipped, anywhere; a quoted empty field is not blank', () => {
    expect(fieldsOf('\n\na,b\r\n\r\n   \n1,2\n\n\r\n')).toEqual([
      ['a', 'b'],
      ['1', '2'],
    ]);
    expect(fieldsOf('a\n""\n')).toEqual([['a'], ['']]);
  });

  test('records know the line they start on, across quoted line breaks', () => {
    const records = parseCsv('h1,h2\r\n\r\n"multi\r\nline",x\r\n"a\nb\nc",y\nlast,z');
    expect(records.map((r) => r.line)).toEqual([1, 3, 5, 8]);
  });

  test('a leading byte-order mark is ignored', () => {
    expect(fieldsOf('\ufeffloanNumber,amount\n')).toEqual([['loanNumber', 'amount']]);
  });

  test('nothing, or only blank lines, is no records', () => {
    expect(parseCsv('')).toEqual([]);
    expect(parseCsv('\r\n\n  \n')).toEqual([]);
  });

  test.each([
    ['an unclosed quote', 'a,b\n1,"open\n2,3\n', /line 2: a quoted field is not closed/],
    ['text after a closing quote', 'a,b\n"x"y,2\n', /line 2: unexpected "y" after a closing quote/],
    ['a quote inside an unquoted field', 'a,b\n\nJane "JD" Doe,2\n', /line 3: a " inside an unquoted field/],
  ])('malformed: %s names the line', (_, text, message) => {
    expect(() => parseCsv(text)).toThrow(DrawFileError);
    expect(() => parseCsv(text)).toThrow(message);
  });
});

describe('drawsFromCsv', () => {
  test('header names in any case and order, with spaces; loanNumber stays a string, amount becomes a number', () => {
    const text = 'AMOUNT, LoanNumber ,requestor\r\n75.10,0001002,"Doe, Jane"\r\n250,1001,jane.doe@partner.example\r\n';
    expect(drawsFromCsv(text)).toEqual([
      { loanNumber: '0001002', requestor: 'Doe, Jane', amount: 75.1 },
      { loanNumber: '1001', requestor: 'jane.doe@partner.example', amount: 250 },
    ]);
  });

  test('other columns are ignored; blank lines and CRLF are fine', () => {
    const text = 'note,loanNumber,requestor,amount\r\n\r\n"ignored, really",1004,jane,100.5\r\n\r\n';
    expect(drawsFromCsv(text)).toEqual([{ loanNumber: '1004', requestor: 'jane', amount: 100.5 }]);
  });

  test('values go to the service as written (it judges them): loanNumber trimmed, requestor untouched, amount as a number', () => {
    expect(drawsFromCsv('loanNumber,requestor,amount\n 12a , Jane ,1.001\n ,,-5\n')).toEqual([
      { loanNumber: '12a', requestor: ' Jane ', amount: 1.001 },
      { loanNumber: '', requestor: '', amount: -5 },
    ]);
  });

  test('amounts: decimal notation only', () => {
    const amounts = ['1', '1.5', '.5', '2.', '+3', '1e2', ' 42 '].map((a) => drawsFromCsv(`loanNumber,requestor,amount\n1,r,${a}\n`)[0].amount);
    expect(amounts).toEqual([1, 1.5, 0.5, 2, 3, 100, 42]);
    for (const bad of ['', 'abc', '"$1,250.00"', '0x10', 'Infinity', '1,5', '"1 000"']) {
      const text = `loanNumber,requestor,amount\n1,r,${bad}\n`;
      if (bad === '1,5') {
        expect(() => drawsFromCsv(text)).toThrow(/line 2: 4 fields, but the header has 3/);
      } else {
        expect(() => drawsFromCsv(text)).toThrow(/line 2: amount .* is not a number/);
      }
    }
  });

  test.each([
    ['an empty file', '', /the file is empty/],
    ['a header only', 'loanNumber,requestor,amount\r\n', /header row only/],
    ['a missing column', 'loanNumber,requester,amount\n1,r,1\n', /line 1: .*missing: requestor/],
    ['a column named twice', 'loanNumber,requestor,amount,Amount\n1,r,1,2\n', /line 1: the header names amount twice/],
    ['a short row', 'loanNumber,requestor,amount\n1,r,1\n\n2,r\n', /line 4: 2 fields, but the header has 3/],
    ['a long row', 'loanNumber,requestor,amount\n1,r,1,\n', /line 2: 4 fields, but the header has 3/],
  ])('rejects %s', (_, text, message) => {
    expect(() => drawsFromCsv(text)).toThrow(message);
  });
});

describe('parseDrawFile', () => {
  let dir: string;
  beforeAll(() => (dir = mkdtempSync(join(tmpdir(), 'draws-'))));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const write = (name: string, text: string) => {
    const path = join(dir, name);
    writeFileSync(path, text);
    return path;
  };

  test('CSV (any extension case, with a BOM): the rows as a JSON body', async () => {
    const batch = await parseDrawFile(write('d.CSV', '\ufeffloanNumber,requestor,amount\r\n1002,"Doe, Jane",75.10\r\n'));
    expect(batch.format).toBe('csv');
    expect(batch.draws).toEqual([{ loanNumber: '1002', requestor: 'Doe, Jane', amount: 75.1 }]);
    expect(JSON.parse(batch.body)).toEqual(batch.draws);
  });

  test('JSON: the body is the text exactly as written (amounts and keys as the service will judge them)', async () => {
    const text = '[{"LoanNumber": 1001, "requestor": "j", "amount": 250.00, "amount": 1}]\n';
    const batch = await parseDrawFile(write('d.json', `\ufeff${text}`));
    expect(batch.format).toBe('json');
    expect(batch.body).toBe(text);
    expect(batch.draws).toEqual([{ LoanNumber: 1001, requestor: 'j', amount: 1 }]);
  });

  test.each([
    ['d.txt', 'x', /must end in \.json or \.csv/],
    ['n.json', '{"loanNumber": 1}', /must hold a JSON array/],
    ['b.json', '[{]', /not valid JSON/],
    ['e.csv', 'loanNumber,requestor\n1,r\n', /missing: amount/],
  ])('%s is refused with the file named', async (name, text, message) => {
    const path = write(name, text);
    await expect(parseDrawFile(path)).rejects.toThrow(DrawFileError);
    await expect(parseDrawFile(path)).rejects.toThrow(new RegExp(`^${path.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}: .*${message.source}`));
  });

  test('a missing file', async () => {
    await expect(parseDrawFile(join(dir, 'none.json'))).rejects.toThrow(/cannot read the file \(ENOENT\)/);
  });
});
