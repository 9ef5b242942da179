/**
 * The pure parts of bench/workerFloor.ts: how a profile's samples are given to the parts of the work,
 * and the worker target's verdict from the rounds' ratios.
 */
import { encode, type SourceMapSegment } from '@jridgewell/sourcemap-codec';
import { SourceMap } from 'node:module';
import { attribute, workerFloorTargetLines, type CpuProfile, type WorkerFloor } from '../../bench/workerFloor';
import { ROOT } from '../../scripts/bundle';

const BUNDLE = 'file:///tmp/app/dist/bundle/main.js';
/** One line of minified code: each source's code starts at the column given, as esbuild maps it. */
const SOURCES = [
  '../../lib/auth.ts',
  '../../node_modules/jose/dist/webapi/jwt/verify.js',
  '../../lib/store.ts',
  '../../node_modules/@azure/data-tables/dist/esm/TableClient.js',
  '../../functions/drawRequest.ts',
  'webpack://@azure/functions/src/InvocationContext.ts',
  '../../node_modules/@opentelemetry/sdk-trace-base/build/src/Span.js',
  '../../lib/requestBody.ts',
];
const column = (source: string) => 100 * SOURCES.indexOf(source);
const map = new SourceMap({
  version: 3,
  file: 'main.js',
  sourceRoot: '',
  sources: SOURCES,
  sourcesContent: [],
  names: [],
  mappings: encode([SOURCES.map((_, i): SourceMapSegment => [100 * i, i, 0, 0])]),
});
const maps = new Map([[BUNDLE, map]]);

type Frame = { name: string; at?: string; url?: string };
/** A profile whose samples are stacks (root first), each lasting `ms`, one every `ms` from time 0. */
function profileOf(stacks: readonly (readonly Frame[])[], ms = 1): CpuProfile {
  const nodes: { id: number; callFrame: { functionName: string; url: string; lineNumber: number; columnNumber: number }; children: number[] }[] = [
    { id: 1, callFrame: { functionName: '(root)', url: '', lineNumber: -1, columnNumber: -1 }, children: [] },
  ];
  const samples: number[] = [];
  for (const stack of stacks) {
    let parent = nodes[0];
    for (const frame of stack) {
      const url = frame.at === undefined ? (frame.url ?? '') : BUNDLE;
      const node = {
        id: nodes.length + 1,
        callFrame: { functionName: frame.name, url, lineNumber: 0, columnNumber: frame.at === undefined ? 0 : column(frame.at) },
        children: [],
      };
      parent.children.push(node.id);
      nodes.push(node);
      parent = node;
    }
    samples.push(parent.id);
  }
  return { nodes, startTime: 0, samples, timeDeltas: samples.map(() => ms * 1000) };
}

const handler: Frame = { name: 'handle', at: '../../functions/drawRequest.ts' };
const partsOf = (stacks: readonly (readonly Frame[])[], from = 0, to = Infinity, requests = 1) =>
  Object.fromEntries(attribute(profileOf(stacks), maps, from, to, requests).parts);

describe('a sample counts for the innermost frame of its stack that belongs to a part', () => {
  test('jose under the token check is the token check; the token check under the handler is not the handler', () => {
    expect(
      partsOf([[handler, { name: 'verify', at: '../../lib/auth.ts' }, { name: 'jwtVerify', at: '../../node_modules/jose/dist/webapi/jwt/verify.js' }]]),
    ).toEqual({
      'token verification (cached)': 1,
    });
  });

  test("Node's sockets count for the code that called them: the storage client", () => {
    expect(partsOf([[handler, { name: 'pointRead', at: '../../lib/store.ts' }, { name: 'write', url: 'node:net' }]])).toEqual({ 'storage client': 1 });
    expect(
      partsOf([
        [
          { name: 'listEntities', at: '../../node_modules/@azure/data-tables/dist/esm/TableClient.js' },
          { name: 'writev', url: '' },
        ],
      ]),
    ).toEqual({
      'storage client': 1,
    });
  });

  test("a package bundled by webpack counts as that package: @azure/functions' own sources are the adapter", () => {
    expect(partsOf([[{ name: 'log', at: 'webpack://@azure/functions/src/InvocationContext.ts' }]])).toEqual({ 'adapter (@azure/functions)': 1 });
  });

  test("OpenTelemetry's code and the promise hooks its context manager makes Node run are telemetry", () => {
    expect(
      partsOf([
        [handler, { name: 'end', at: '../../node_modules/@opentelemetry/sdk-trace-base/build/src/Span.js' }],
        [{ name: 'promiseInitHook', url: 'node:internal/async_hooks' }],
      ]),
    ).toEqual({ telemetry: 2 });
  });

  test('the garbage collector and V8 outside JavaScript are parts of their own; what no part claims is Node and V8', () => {
    expect(
      partsOf([[{ name: '(garbage collector)' }], [{ name: '(program)' }], [{ name: 'processTicksAndRejections', url: 'node:internal/process/task_queues' }]]),
    ).toEqual({
      '(garbage collector)': 1,
      '(program)': 1,
      'Node and V8, not under any of these': 1,
    });
  });

  test('idle samples and samples outside the window are not counted; time is per request', () => {
    const body = { name: 'parseDrawRequests', at: '../../lib/requestBody.ts' };
    // Samples end at 1, 2, 3 and 4 ms; the window takes the second and third; two requests.
    expect(partsOf([[body], [body], [{ name: '(idle)' }], [body]], 1500, 3500, 2)).toEqual({ 'request checks: headers, body parsing and validation': 0.5 });
  });

  test("the heaviest functions name their function and source, the package's path or the repository's", () => {
    const { self } = attribute(
      profileOf([[handler, { name: 'pointRead', at: '../../lib/store.ts' }], [{ name: 'log', at: 'webpack://@azure/functions/src/InvocationContext.ts' }]]),
      maps,
      0,
      Infinity,
      1,
    );
    expect([...self.keys()]).toEqual(['pointRead (lib/store.ts)', 'log (@azure/functions/src/InvocationContext.ts)']);
    const worker = { name: 'invoke', url: `file://${ROOT}/vendor/azure-functions-nodejs-worker/dist/src/worker-bundle.js` };
    expect([...attribute(profileOf([[worker]]), maps, 0, Infinity, 1).self.keys()]).toEqual([
      'invoke (vendor/azure-functions-nodejs-worker/dist/src/worker-bundle.js)',
    ]);
  });
});

describe("the worker target: the median of the rounds' ratios within 1.2, the spread reported", () => {
  const run = (ratios: number[]): WorkerFloor => ({
    date: '2026-11-28T08:00:00Z',
    node: 'v22.23.3',
    nodeArgs: ['--enable-source-maps'],
    rounds: ratios.length,
    load: { before: 1, after: 1 },
    cells: [
      {
        concurrency: 4,
        requests: 600,
        cpuMs: { package: 1.3, 'package, telemetry off': 1.1, floor: 1 },
        p50Ms: { package: 5, 'package, telemetry off': 5, floor: 5 },
        ratios,
        ratiosOff: ratios,
      },
    ],
    attribution: [],
  });

  test('met at the median, whatever one round says', () => {
    const [line] = workerFloorTargetLines(run([1.1, 1.5, 1.2, 0.9, 1.19]));
    expect(line).toContain('1.19× (median of 5 rounds; rounds 0.90–1.50)');
    expect(line).toMatch(/\| met \|$/);
  });

  test('not met a hundredth above', () => {
    expect(workerFloorTargetLines(run([1.21, 1.21, 1.3]))[0]).toMatch(/\| \*\*not met\*\* \|$/);
  });
});
