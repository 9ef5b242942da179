/**
 * scripts/sourceMaps.ts: the package's maps keep only the service's own mappings, read by Node's own
 * source-map parser (`module.SourceMap`, what --enable-source-maps uses to rewrite a logged stack).
 */
import { encode } from '@jridgewell/sourcemap-codec';
import { SourceMap } from 'node:module';
import { OWN_SOURCE, ownMappingsOnly } from '../../scripts/sourceMaps';

const SOURCES = [
  '../../node_modules/@azure/core-client/dist/commonjs/serviceClient.js',
  '../../lib/store.ts',
  '../../functions/main.ts',
  '../../node_modules/jose/dist/x.js',
];
const NAMES = ['sendOperationRequest', 'readBatchState', 'handler'];

/** One generated line: core-client at 0, lib/store.ts at 10 (a name), core-client at 20, jose at 25, functions/main.ts at 30, unmapped at 40. */
const bundleMap = () =>
  JSON.stringify({
    version: 3,
    sources: SOURCES,
    names: NAMES,
    mappings: encode([[[0, 0, 100, 4, 0], [10, 1, 41, 2, 1], [20, 0, 120, 0], [25, 3, 7, 0], [30, 2, 12, 8, 2], [40]]]),
  });

const at = (map: string, column: number) =>
  new SourceMap(JSON.parse(map)).findEntry(0, column) as { originalSource?: string; originalLine?: number; name?: string };

test("the service's own positions map as before", () => {
  const trimmed = ownMappingsOnly(bundleMap());
  for (const [column, source, line] of [
    [10, '../../lib/store.ts', 41],
    [15, '../../lib/store.ts', 41],
    [30, '../../functions/main.ts', 12],
    [35, '../../functions/main.ts', 12],
  ] as const) {
    expect(at(bundleMap(), column)).toMatchObject({ originalSource: expect.stringContaining(source.slice(6)), originalLine: line });
    expect(at(trimmed, column)).toMatchObject({ originalSource: expect.stringContaining(source.slice(6)), originalLine: line });
  }
  expect(at(trimmed, 10).name).toBe('readBatchState');
});

test("a library's positions map to nothing: not to the own segment before them", () => {
  const trimmed = ownMappingsOnly(bundleMap());
  expect(at(bundleMap(), 22).originalSource).toContain('core-client');
  for (const column of [0, 5, 20, 22, 25, 28]) expect(at(trimmed, column).originalSource).toBeUndefined();
});

test('only the sources and names still used are kept', () => {
  const trimmed = JSON.parse(ownMappingsOnly(bundleMap())) as { sources: string[]; names: string[] };
  expect(trimmed.sources).toEqual(['../../lib/store.ts', '../../functions/main.ts']);
  expect(trimmed.names).toEqual(['readBatchState', 'handler']);
  expect(trimmed.sources.every((s) => OWN_SOURCE.test(s))).toBe(true);
});
