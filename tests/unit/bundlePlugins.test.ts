/** How the bundle picks the one copy of an OpenTelemetry package, and what it stands in (scripts/bundlePlugins.ts). */
import { join } from 'node:path';
import { runInNewContext } from 'node:vm';
import { ROOT } from '../../scripts/bundle';
import { CHECKED_STEPS, FUNCTIONS_HOOK, FUNCTIONS_HOOK_STAND_IN, compatibilityOf, isNewer, namesRead } from '../../scripts/bundlePlugins';

test.each([
  ['2.12.1', '2.10.0', true],
  ['2.10.0', '2.12.1', false],
  ['2.12.1', '2.12.1', false],
  ['0.221.0', '0.211.0', true],
  ['1.0.0', '1.0.0-beta.7', true], // a release after its own prereleases
  ['1.0.0-beta.7', '1.0.0', false],
  ['1.0.0-1', '1.0.0', false],
  ['1.1.0-beta.1', '1.0.0', true],
  ['1.0.0-beta.10', '1.0.0-beta.9', true], // prerelease identifiers compared as numbers
])('%s is newer than %s: %p', (a, b, expected) => {
  expect(isNewer(a, b)).toBe(expected);
});

test('a compatibility class is the major, or the minor below 1.0', () => {
  expect(['2.12.1', '2.9.0', '1.1.0-beta.1', '0.221.0', '0.211.3'].map(compatibilityOf)).toEqual(['2', '2', '1', '0.221', '0.211']);
});

test('a checked step only moves a 0.x class up to a later minor of the same package', () => {
  for (const [from, to] of Object.entries(CHECKED_STEPS)) {
    const [, cls] = from.split(' ');
    expect({ from, to: isNewer(`${to}.0`, `${cls}.0`) && cls.startsWith('0.') && to.startsWith('0.') }).toEqual({ from, to: true });
  }
});

test("the distro's Azure Functions hook, which the bundle stands in with one that registers nothing, still only registers its preInvocation hook", () => {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const real = require(join(ROOT, 'node_modules', FUNCTIONS_HOOK)) as Record<string, { prototype: object; toString(): string }>;
  const standIn: Record<string, { prototype: object }> = {};
  runInNewContext(FUNCTIONS_HOOK_STAND_IN, { exports: standIn });
  expect(Object.keys(real).filter((k) => k !== '__esModule')).toEqual(Object.keys(standIn));
  const methods = (c: { prototype: object }) => Object.getOwnPropertyNames(c.prototype).filter((m) => m !== 'constructor');
  // Its constructor loads @azure/functions-core and calls _addPreInvocationHook; shutdown disposes that hook.
  expect(methods(real.AzureFunctionsHook).sort()).toEqual(['_addPreInvocationHook', ...methods(standIn.AzureFunctionsHook)].sort());
  expect(real.AzureFunctionsHook.toString().match(/registerHook\(\s*"(\w+)"/g)).toEqual(['registerHook("preInvocation"']);
});

describe('the names a CommonJS module reads from a require (the bundle keeps only those of @opentelemetry/semantic-conventions)', () => {
  const M = '@opentelemetry/semantic-conventions';
  test("TypeScript's CommonJS output: every binding.NAME, from every binding", () => {
    const source = [
      `const semantic_conventions_1 = require("${M}");`,
      'const other_1 = require("other");',
      'function f(span) { return span.attributes[semantic_conventions_1.ATTR_HTTP_METHOD] ?? (0, semantic_conventions_1.SEMATTRS_HTTP_URL); }',
      `var semantic_conventions_2 = require("${M}");`,
      'exports.x = semantic_conventions_2.SEMRESATTRS_SERVICE_NAME; other_1.semantic_conventions_1;',
    ].join('\n');
    expect(namesRead(source, M)).toEqual(new Set(['ATTR_HTTP_METHOD', 'SEMATTRS_HTTP_URL', 'SEMRESATTRS_SERVICE_NAME']));
  });
  test.each([
    ['passed whole', `const s_1 = require("${M}");\nexports.all = s_1;`],
    ['read by a computed key', `const s_1 = require("${M}");\nconst k = s_1[name];`],
    ['spread', `const s_1 = require("${M}");\nconst all = { ...s_1 };`],
    ['required without a binding', `__exportStar(require("${M}"), exports);`],
    ['destructured', `const { ATTR_HTTP_METHOD } = require("${M}");`],
  ])('refused when the module is %s', (_how, source) => {
    expect(typeof namesRead(source, M)).toBe('string');
  });
});
