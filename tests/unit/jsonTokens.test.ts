import fc from 'fast-check';
import { JsonTokens, TOKEN } from '../../lib/jsonTokens';

/** Every token of `text` as [kind, raw]. */
function tokensOf(text: string): [number, string][] {
  const tokens = new JsonTokens(text);
  const found: [number, string][] = [];
  for (let kind = tokens.next(); kind !== TOKEN.end; kind = tokens.next()) found.push([kind, tokens.raw()]);
  return found;
}

test('splits JSON into punctuation, strings, numbers and literals, skipping whitespace', () => {
  expect(tokensOf(' [ {"a\\"b" :-1.5e+3,\n\t"c":[true,null]} ]\r\n')).toEqual([
    [TOKEN.openArray, '['],
    [TOKEN.openObject, '{'],
    [TOKEN.string, '"a\\"b"'],
    [TOKEN.colon, ':'],
    [TOKEN.number, '-1.5e+3'],
    [TOKEN.comma, ','],
    [TOKEN.string, '"c"'],
    [TOKEN.colon, ':'],
    [TOKEN.openArray, '['],
    [TOKEN.other, 'true'],
    [TOKEN.comma, ','],
    [TOKEN.other, 'null'],
    [TOKEN.closeArray, ']'],
    [TOKEN.closeObject, '}'],
    [TOKEN.closeArray, ']'],
  ]);
});

test('any JSON text is the concatenation of its tokens and whitespace, and strings decode as JSON.parse decodes them', () => {
  fc.assert(
    fc.property(fc.json({ maxDepth: 4 }), fc.constantFrom('', ' ', '\n\t ', '\r\n'), (json, space) => {
      const text = JSON.stringify(JSON.parse(json), null, space);
      const found = tokensOf(text);
      expect(found.map(([, raw]) => raw).join('')).toBe(text.replace(/("(?:[^"\\]|\\.)*")|\s+/g, '$1'));
      const tokens = new JsonTokens(text);
      for (let kind = tokens.next(); kind !== TOKEN.end; kind = tokens.next()) {
        if (kind === TOKEN.string) expect(tokens.stringValue()).toBe(JSON.parse(tokens.raw()));
      }
    }),
    { numRuns: 2_000 },
  );
});

test('text that is not JSON is still split, to its end, without throwing', () => {
  expect(tokensOf('"unterminated')).toEqual([[TOKEN.string, '"unterminated']]);
  expect(tokensOf('"ends in a backslash\\')).toEqual([[TOKEN.string, '"ends in a backslash\\']]);
  expect(tokensOf('@#')).toEqual([
    [TOKEN.other, '@'],
    [TOKEN.other, '#'],
  ]);
  expect(tokensOf('')).toEqual([]);
  fc.assert(
    fc.property(fc.string({ unit: 'binary', maxLength: 60 }), (text) => {
      expect(
        tokensOf(text)
          .map(([, raw]) => raw)
          .join(''),
      ).toBe(text.replace(/("(?:[^"\\]|\\[^])*"?)|[ \t\n\r]+/g, '$1'));
    }),
    { numRuns: 2_000 },
  );
});

test('a string that is not a JSON string has no value', () => {
  const tokens = new JsonTokens('"a\u0001b"');
  tokens.next();
  expect(tokens.stringValue()).toBeUndefined();
});
