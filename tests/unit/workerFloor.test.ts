/**
 * The pure parts of bench/workerFloor.ts: how a profile's samples are given to the parts of the work,
 * and the targets' figures and verdicts from the rounds.
 */
import { encode, type SourceMapSegment } from '@jridgewell/sourcemap-codec';
import { SourceMap } from 'node:module';
import { PLAN, attribute, figures, sidesOf, workerTargetLines, type CpuProfile, type Side, type WorkerFloor } from '../../bench/workerFloor';
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
  '../../node_modules/@azure/monitor-opentelemetry-exporter/dist/esm/export/trace.js',
  '../../node_modules/@azure/core-rest-pipeline/dist/esm/pipeline.js',
  '../../node_modules/@opentelemetry/sdk-metrics/build/src/Instruments.js',
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
  Object.fromEntries(attribute(profileOf(stacks), maps, [{ from, to }], requests).parts);

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

  test("telemetry in its parts: OpenTelemetry's recording, the promise hooks of its context, the meters", () => {
    expect(
      partsOf([
        [handler, { name: 'end', at: '../../node_modules/@opentelemetry/sdk-trace-base/build/src/Span.js' }],
        [{ name: 'promiseInitHook', url: 'node:internal/async_hooks' }],
        [{ name: 'record', at: '../../node_modules/@opentelemetry/sdk-metrics/build/src/Instruments.js' }],
      ]),
    ).toEqual({
      'telemetry: recording (spans, the event, their processors, the rounds)': 1,
      "telemetry: context (AsyncLocalStorage and Node's promise hooks for it)": 1,
      "telemetry: metrics (the SDK's meters and their exports)": 1,
    });
  });

  test("the exporter claims everything it calls: its HTTP client is the storage SDK's, its sockets Node's", () => {
    const exporter = { name: 'export', at: '../../node_modules/@azure/monitor-opentelemetry-exporter/dist/esm/export/trace.js' };
    const pipeline = { name: 'sendRequest', at: '../../node_modules/@azure/core-rest-pipeline/dist/esm/pipeline.js' };
    expect(
      partsOf([
        [exporter, pipeline, { name: 'writev', url: '' }],
        [handler, pipeline],
      ]),
    ).toEqual({
      'telemetry: export (envelopes, their JSON, the POST to ingestion)': 1,
      'storage client': 1,
    });
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
      [{ from: 0, to: Infinity }],
      1,
    );
    expect([...self.keys()]).toEqual(['pointRead (lib/store.ts)', 'log (@azure/functions/src/InvocationContext.ts)']);
    const worker = { name: 'invoke', url: `file://${ROOT}/vendor/azure-functions-nodejs-worker/dist/src/worker-bundle.js` };
    expect([...attribute(profileOf([[worker]]), maps, [{ from: 0, to: Infinity }], 1).self.keys()]).toEqual([
      'invoke (vendor/azure-functions-nodejs-worker/dist/src/worker-bundle.js)',
    ]);
  });
});

describe("the targets: each a figure of every round, judged on the rounds' median, their spread reported", () => {
  /** Rounds of CPU ms per request, side by side: each round's figures of each side. */
  const cells = (segment: { batch: 1 | 100; concurrency: number }, rounds: readonly Partial<Record<Side, number>>[]) => ({
    ...segment,
    requests: 10,
    rounds: rounds.map((round) =>
      Object.fromEntries(
        Object.entries(round).map(([side, cpuMsPerRequest]) => [side, { ...segment, requests: 10, perSecond: 1, p50: 1, p99: 1, cpuMsPerRequest, errors: 0 }]),
      ),
    ),
  });
  const run = (own: readonly number[], singles: readonly Partial<Record<Side, number>>[], batches: readonly Partial<Record<Side, number>>[]): WorkerFloor => ({
    date: '2026-11-29T08:00:00Z',
    nodes: { 22: 'v22.23.3', 24: 'v24.22.3' },
    nodeArgs: ['--enable-source-maps'],
    baseline: 'c88e4df',
    load: { before: 1, after: 1 },
    segments: [
      cells(
        { batch: 1, concurrency: 1 },
        own.map((ratio) => ({ floor: 1, 'package, Node 22, telemetry off': ratio })),
      ),
      cells({ batch: 1, concurrency: 4 }, singles),
      cells({ batch: 100, concurrency: 4 }, batches),
    ],
  });
  const single = { floor: 1, 'package, Node 22': 1.5, 'package, Node 22, telemetry off': 1.1, 'package, Node 24': 1.3, 'package, Node 24, telemetry off': 1 };
  const batch = {
    'package, Node 22': 70,
    'package, Node 22, telemetry off': 60,
    'package, Node 24': 64,
    'package, Node 24, telemetry off': 60,
    'before #32': 90,
    'before #32, telemetry off': 60,
  };
  const verdicts = (r: WorkerFloor) => workerTargetLines(r).map((line) => line.split(' | ').at(-1));

  test('met at the median, whatever one round says; the spread is the lowest and highest round', () => {
    const [line] = workerTargetLines(run([1.1, 1.5, 1.2, 0.9, 1.19], [single], [batch]));
    expect(line).toContain('**1.19** (median of 5 rounds; 0.90 to 1.50)×');
    expect(line).toMatch(/\| met \|$/);
    expect(verdicts(run([1.21, 1.21, 1.3], [single], [batch]))[0]).toBe('**not met** |');
  });

  test("telemetry per single draw is on minus off over the package's own, round by round; Node 24's is reported", () => {
    const r = run([1], [single, { ...single, 'package, Node 22': 1.7 }, { ...single, 'package, Node 22': 1.6 }], [batch]);
    // Rounds: 0.4 / 1.1, 0.6 / 1.1, 0.5 / 1.1: the median 0.45, within ½.
    expect(figures(r).singleTelemetry[0].median).toBeCloseTo(0.5 / 1.1, 10);
    expect(verdicts(r).slice(2, 4)).toEqual(['met |', 'reported |']);
    expect(verdicts(run([1], [{ ...single, 'package, Node 22': 1.66 }], [batch]))[2]).toBe('**not met** |');
  });

  test('telemetry per batch is on minus off over what it added before #32 in the same round: ½ on Node 22, ⅓ on Node 24', () => {
    // Node 22 adds 10 of 30 ms (⅓), Node 24 adds 4 (0.13).
    expect(verdicts(run([1], [single], [batch])).slice(4)).toEqual(['met |', 'met |']);
    expect(verdicts(run([1], [single], [{ ...batch, 'package, Node 22': 75.01, 'package, Node 24': 70.01 }])).slice(4)).toEqual([
      '**not met** |',
      '**not met** |',
    ]);
    expect(verdicts(run([1], [single], [{ ...batch, 'package, Node 22': 75, 'package, Node 24': 70 }])).slice(4)).toEqual(['met |', 'met |']);
  });

  test('the floor runs every segment the package without telemetry runs: the two compared have the same history (record 0224)', () => {
    const runBy = (side: Side) => PLAN.filter((s) => sidesOf(s).includes(side)).map(({ batch, concurrency }) => `${batch} at ${concurrency}`);
    expect(runBy('floor')).toEqual(runBy('package, Node 22, telemetry off'));
    expect(runBy('floor')).toContain('100 at 4');
  });

  test('the sides a single-draw target compares run their segments at the same time (record 0225)', () => {
    const compared: readonly (readonly Side[])[] = [
      ['floor', 'package, Node 22, telemetry off'],
      ['package, Node 22', 'package, Node 22, telemetry off'],
      ['package, Node 24', 'package, Node 24, telemetry off'],
    ];
    for (const segment of PLAN.filter((s) => s.batch === 1)) {
      for (const pair of compared.filter((p) => p.every((side) => sidesOf(segment).includes(side)))) {
        expect(segment.groups.some((g) => pair.every((side) => g.includes(side)))).toBe(true);
      }
    }
  });

  test('a segment not measured is not met', () => {
    expect(verdicts({ ...run([1], [single], [batch]), segments: [] })).toEqual([
      '**not met** |',
      '**not met** |',
      '**not met** |',
      'reported |',
      '**not met** |',
      '**not met** |',
    ]);
  });
});
