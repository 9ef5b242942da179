import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  INGESTION,
  NETWORK,
  PRICES,
  alwaysReadyBreakEvenShare,
  alwaysReadyMonthly,
  alwaysReadyPlanMonthly,
  billedAlwaysReady,
  billedSeconds,
  entityBytes,
  ingestionMonthly,
  keyRowsMonthly,
  keyedBatchBytes,
  networkMonthly,
  sparseMonthly,
  sparsePerMillion,
  steadyPerMillion,
  telemetryPerMillion,
} from '../../bench/costModel';
import { capacity, costSection, judgedAt, sizeTargetLines, telemetryStartShare, type SizeResult, type StartRow } from '../../bench/sizes';

describe('the billed activity window: at least 1,000 ms, then rounded up to 100 ms', () => {
  test.each([
    [0, 1],
    [1, 1],
    [999, 1],
    [1000, 1],
    [1000.01, 1.1],
    [1099, 1.1],
    [1100, 1.1],
    [1101, 1.2],
    [2950, 3],
    [4999, 5],
  ])('%p ms is billed as %p s', (ms, seconds) => {
    expect(billedSeconds(ms)).toBeCloseTo(seconds, 10);
  });
});

describe('cost per million calls', () => {
  test('sparse: a call shorter than a second costs a full second of its size, so sizes cost in proportion to their memory', () => {
    expect(sparsePerMillion(2048, 300)).toBeCloseTo(2 * 0.000026 * 1e6 + 0.4, 6); // $52.40
    expect(sparsePerMillion(512, 950)).toBeCloseTo(0.5 * 0.000026 * 1e6 + 0.4, 6); // $13.40
    expect((sparsePerMillion(2048, 300) - 0.4) / (sparsePerMillion(512, 950) - 0.4)).toBeCloseTo(4, 10);
  });

  test('sparse: a call longer than a second is billed its own length, in 100 ms steps', () => {
    expect(sparsePerMillion(512, 1550)).toBeCloseTo(0.5 * 1.6 * 0.000026 * 1e6 + 0.4, 6);
  });

  test('steady: memory over the calls per second one instance carries; equal memory per call costs the same on any size', () => {
    expect(steadyPerMillion(2048, 4)).toBeCloseTo((2 * 0.000026 * 1e6) / 4 + 0.4, 6);
    expect(steadyPerMillion(512, 1)).toBeCloseTo(steadyPerMillion(2048, 4), 10);
  });
});

describe('always ready', () => {
  test('pays for itself from 40 % busy: the baseline against the lower execution rate', () => {
    expect(alwaysReadyBreakEvenShare()).toBeCloseTo(0.4, 10);
    // At exactly that share, one instance costs the same either way (any size).
    for (const memoryMB of [512, 2048, 4096]) {
      const gb = memoryMB / 1024;
      const busy = alwaysReadyBreakEvenShare() * 3600;
      const onDemand = gb * busy * PRICES.onDemandGbSecond;
      const alwaysReady = gb * 3600 * PRICES.alwaysReadyBaselineGbSecond + gb * busy * PRICES.alwaysReadyExecutionGbSecond;
      expect(alwaysReady).toBeCloseTo(onDemand, 12);
    }
  });

  test('one instance for a 30-day month: $5.18 at 512 MB, $20.74 at 2,048 MB, $41.47 at 4,096 MB', () => {
    expect(alwaysReadyMonthly(512)).toBeCloseTo(5.184, 6);
    expect(alwaysReadyMonthly(2048)).toBeCloseTo(20.736, 6);
    expect(alwaysReadyMonthly(4096)).toBeCloseTo(41.472, 6);
  });
});

describe('a month on demand, after the free grant', () => {
  test('50,000 isolated calls of a second at 2,048 MB stay within the 100,000 GB-s and 250,000 executions granted', () => {
    expect(sparseMonthly(2048, 300, 50_000)).toBe(0);
  });

  test('beyond the grant, only the excess is billed', () => {
    // 100,000 calls: 200,000 GB-s, of which 100,000 are billed; executions still within the grant.
    expect(sparseMonthly(2048, 300, 100_000)).toBeCloseTo(100_000 * 0.000026, 6);
    // 1,000,000 calls at 512 MB: 500,000 GB-s (400,000 billed) and 750,000 executions billed.
    expect(sparseMonthly(512, 900, 1_000_000)).toBeCloseTo(400_000 * 0.000026 + 0.75 * 0.4, 6);
  });
});

describe('telemetry: the JSON one call sends, billed at Analytics Logs ingestion', () => {
  test('per million calls: bytes × 10^6 as GB (10^9 bytes), 75 % of it billed, at $2.30 per GB', () => {
    expect(INGESTION).toEqual({ perGb: 2.3, billedShare: 0.75, freeGbPerMonth: 5 });
    // 4,096 bytes a call: 4.096 GB sent per million calls, 3.072 GB billed, $7.07.
    expect(telemetryPerMillion(4096)).toBeCloseTo(4.096 * 0.75 * 2.3, 10);
    // The 2026-11-25 batch of 100 (440,337 bytes): $760 per million.
    expect(telemetryPerMillion(440_337)).toBeCloseTo(759.58, 2);
    expect(telemetryPerMillion(0)).toBe(0);
  });

  test('a month: only what is billed beyond the free 5 GB', () => {
    // 1,000,000 calls of 4,000 bytes: 3 GB billed, within the 5 GB.
    expect(ingestionMonthly(4000, 1_000_000)).toBe(0);
    // 10,000,000 calls of 4,000 bytes: 30 GB billed, 25 GB beyond the grant.
    expect(ingestionMonthly(4000, 10_000_000)).toBeCloseTo(25 * 2.3, 10);
  });
});

describe('network isolation and zone redundancy (issue #34)', () => {
  const parameters = (env: string) =>
    JSON.parse(readFileSync(join(__dirname, '../../infra/env', `${env}.parameters.json`), 'utf8')).parameters as Record<string, { value: unknown }>;

  test('an isolated environment pays its endpoints around the clock, its DNS zones, and a cent per GB through the endpoints', () => {
    expect(NETWORK.endpointPerHour * 720).toBeCloseTo(7.2, 10); // a 30-day month
    // table and blob: two endpoints, two zones (infra/main.bicep's storageServices)
    expect(networkMonthly(2, 2, 0)).toBeCloseTo(2 * 7.2 + 2 * 0.5, 10);
    expect(networkMonthly(2, 2, 100) - networkMonthly(2, 2, 0)).toBeCloseTo(1, 10);
    expect(networkMonthly(0, 0, 0)).toBe(0);
  });

  test.each([
    [0, false, 0],
    [1, false, 1],
    [0, true, 2],
    [1, true, 2],
    [3, true, 3],
  ])('alwaysReady %p with zoneRedundant %p is billed as %p always-ready instances', (ready, zoneRedundant, billed) => {
    expect(billedAlwaysReady(ready, zoneRedundant)).toBe(billed);
  });

  test("prod's parameters state the always-ready count its zone-redundant plan is billed (the template refuses fewer than two); dev's none", () => {
    const prod = parameters('prod');
    const dev = parameters('dev');
    const prodMemory = (prod.instanceMemoryMB?.value as number | undefined) ?? 2048;
    const prodReady = prod.alwaysReady.value as number;
    expect(prod.zoneRedundant.value).toBe(true);
    expect(billedAlwaysReady(prodReady, true)).toBe(prodReady);
    expect(alwaysReadyPlanMonthly(prodMemory, prodReady, true)).toBeCloseTo(prodReady * alwaysReadyMonthly(prodMemory), 10);
    // 2,048 MB: 2 GB × 2,592,000 s × $0.000004 = $20.736 a month for the second instance
    expect(alwaysReadyPlanMonthly(2048, 1, true) - alwaysReadyPlanMonthly(2048, 1, false)).toBeCloseTo(20.736, 6);
    expect(dev.zoneRedundant.value).toBe(false);
    expect(alwaysReadyPlanMonthly(2048, dev.alwaysReady.value as number, false)).toBe(0);
  });
});

describe('the cost section of bench/results.md, rendered from measured figures', () => {
  const cell = (batch: 1 | 100, concurrency: number, cpuMsPerRequest: number, errors = 0) => ({
    batch,
    concurrency,
    requests: 24,
    perSecond: 1,
    p50: 100,
    p99: 200,
    cpuMsPerRequest,
    errors,
  });
  const size: SizeResult = {
    memoryMB: 2048,
    cores: 1,
    defaultConcurrency: 16,
    cold: { readyMs: 300, rssMiB: 90, samples: [300] },
    isolated: { single: 8, batch: 180 },
    cells: [cell(1, 1, 6), cell(100, 1, 150), cell(1, 4, 5), cell(100, 4, 125), cell(1, 8, 4), cell(100, 8, 100), cell(1, 16, 4), cell(100, 16, 80, 3)],
    warmRssMiB: 170,
    peakRssMiB: 230,
  };

  test("a size is judged at prod's concurrency when it ran clean there, else at its highest concurrency without an error", () => {
    expect(judgedAt(size, { memoryMB: 2048, concurrency: 4 })).toBe(4);
    expect(judgedAt(size, { memoryMB: 512, concurrency: 4 })).toBe(8); // 16 had errors: its lower CPU would flatter the size
    expect(judgedAt({ ...size, cells: size.cells.map((c) => (c.concurrency === 4 ? { ...c, errors: 1 } : c)) }, { memoryMB: 2048, concurrency: 4 })).toBe(8);
  });

  test('capacity is the cores over the CPU per call; the row shows sparse, steady and always-ready figures from it', () => {
    expect(capacity(size, 100, 4)).toBeCloseTo(8, 10);
    const row = costSection([size], { memoryMB: 2048, concurrency: 4 }).find((line) => line.startsWith('| 2048 MB'));
    // billed 1 s each; $52.40 per million; 200 / 8 calls/s; steady 2 GB ÷ 8/s; $20.74 a month; 0.4/s to 0.4 ÷ 0.18 s; no telemetry measured.
    expect(row).toBe('| 2048 MB | 1 / 1 | $52 / $52 | 200.0 / 8.0 (at 4) | $0.66 / $6.90 | $21 | 0.40 to 2.2 | not measured | not measured | not measured |');
  });

  test('telemetry is added to sparse and to steady compute alike, from the measured bytes per call', () => {
    const volume = (bytes: number) => ({ envelopes: 4, dependencies: 2, bytes });
    // 2,000 bytes: $3.45 per million; 20,000 bytes: $34.50 per million.
    const telemetry = { single: volume(2000), batch: volume(20_000), refused: volume(25_000) };
    const row = costSection([{ ...size, telemetry }], { memoryMB: 2048, concurrency: 4 }).find((line) => line.startsWith('| 2048 MB'));
    // sparse $52.40 + $3.45 and + $34.50; steady $0.66 + $3.45 and $6.90 + $34.50.
    expect(row).toBe('| 2048 MB | 1 / 1 | $52 / $52 | 200.0 / 8.0 (at 4) | $0.66 / $6.90 | $21 | 0.40 to 2.2 | $3.45 / $35 | $56 / $87 | $4.11 / $41 |');
  });
});

describe('the start-up and volume targets at one core, against a run (bench/sizes.ts)', () => {
  const volume = (envelopes: number, bytes: number) => ({ envelopes, dependencies: 2, bytes });
  const row = (app: StartRow['app'], telemetry: boolean, node: 22 | 24, samples: readonly number[], rssMiB: number): StartRow => ({
    app,
    telemetry,
    node,
    readyMs: [...samples].sort((a, b) => a - b)[Math.floor(samples.length / 2)],
    rssMiB,
    samples,
  });
  // Fifteen workers per row, interleaved: the package's on and off samples pair run by run.
  const off = [80, 82, 79, 85, 81, 90, 78, 83, 80, 84, 79, 81, 86, 80, 82];
  const shares = [40, 38, 44, 41, 39, 43, 40, 42, 37, 45, 41, 39, 40, 42, 44];
  const plus = (by: readonly number[]) => off.map((ms, i) => ms + by[i]);
  const rows = (share: readonly number[] = shares): StartRow[] => [
    row('package', true, 22, plus(share), 85),
    row('package', false, 22, off, 80),
    row(
      'empty app',
      false,
      22,
      off.map((ms) => ms - 55),
      72,
    ),
    row(
      'tsc output',
      false,
      22,
      off.map((ms) => ms + 100),
      90,
    ),
    row('package', true, 24, plus(share.map((ms) => ms + 30)), 86),
    row('package', false, 24, off, 81),
  ];
  const run = (
    starts: StartRow[] | undefined = rows(),
    telemetry = { single: volume(3, 3000), batch: volume(4, 24 * 1024 + 1), refused: volume(3, 9000) },
  ) => ({
    zip: { bytes: 0.42 * 2 ** 20, files: 9 },
    results: [
      {
        memoryMB: 2048 as const,
        cores: 1,
        defaultConcurrency: 16,
        cold: { readyMs: 120, rssMiB: 85, samples: [120] },
        isolated: { single: 8, batch: 180 },
        cells: [],
        warmRssMiB: 170,
        peakRssMiB: 230,
        telemetry,
        starts: starts === undefined ? undefined : { runs: 15, rows: starts },
      },
    ],
  });
  const verdictOf = (line: string) => line.split(' | ').at(-1);

  test("telemetry's share of start-up is the median of the paired differences, with the interval of the 4th and 12th of 15", () => {
    const sorted = [...shares].sort((a, b) => a - b);
    expect(telemetryStartShare(rows(), 22)).toEqual({ ms: sorted[7], low: sorted[3], high: sorted[11], pairs: 15 });
    expect(telemetryStartShare(rows(), 24).ms).toBe(sorted[7] + 30);
  });

  test('each bound with its figure: a byte over 24 KiB is not met; Node 24 is reported beside the judged Node 22', () => {
    const lines = sizeTargetLines(run());
    expect(lines.map(verdictOf)).toEqual(['met |', '**not met** |', 'met |', 'met |', 'reported |', 'met |', 'met |', 'met |', 'guard held |', 'met |']);
    expect(lines[0]).toContain('3.0 envelopes, 2.9 KiB');
    expect(lines[3]).toContain('41 ms of 15 pairs (95 % interval 39 to 43)');
    expect(lines[7]).toContain('55.0 ms vs 155.0 ms (35 %)');
    expect(lines[8]).toContain('85.00 − 72.00 = +13.00 MiB');
    expect(lines[9]).toContain('0.42 MiB, 9 files');
  });

  test('start-up: judged only when the interval is clear of 50 ms; an interval holding 50 is undecided, not a verdict', () => {
    const shifted = (by: number) => verdictOf(sizeTargetLines(run(rows(shares.map((ms) => ms + by))))[3]);
    expect(shifted(7)).toBe('met |'); // interval 46 to 50
    expect(shifted(8)).toMatch(/^\*\*undecided\*\*/); // 47 to 51
    expect(shifted(12)).toBe('**not met** |'); // 51 to 55
  });

  test('RSS is reported with a guard at +20 MiB: two decimals, so a few KiB over reads as over', () => {
    const rss = (mib: number) => sizeTargetLines(run(rows().map((r) => (r.app === 'package' && r.telemetry && r.node === 22 ? { ...r, rssMiB: mib } : r))))[8];
    expect(rss(92)).toContain('92.00 − 72.00 = +20.00 MiB');
    expect(verdictOf(rss(92))).toBe('guard held |');
    expect(verdictOf(rss(92.01))).toBe('**guard broken** |');
  });

  test('what was not measured is not met; Node 24 stays reported', () => {
    const measured = run();
    const lines = sizeTargetLines({ ...measured, results: [{ ...measured.results[0], telemetry: undefined, starts: undefined }] });
    expect(lines.filter((line) => line.includes('not measured'))).toHaveLength(5);
    expect(lines.slice(0, 5).map(verdictOf)).toEqual(['**not met** |', '**not met** |', '**not met** |', '**not met** |', 'reported |']);
  });
});

describe('key rows kept for good (docs/decisions/0180)', () => {
  const record = readFileSync(join(__dirname, '../../docs/decisions/0180-nothing-removes-key-rows.md'), 'utf8');
  const figure = (n: number, digits = 0) => n.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });

  test("an entity's size by Microsoft's formula: 4 bytes, the keys as UTF-16, and per property 8 bytes, its name and its value", () => {
    // "ab"+"c": 4 + 3×2; "S": 8 + 1×2 + (2 chars × 2 + 4); "D": 8 + 1×2 + 8
    expect(entityBytes('ab', 'c', { S: 'xy', D: new Date(0) })).toBe(4 + 6 + (8 + 2 + 8) + (8 + 2 + 8));
    expect(keyedBatchBytes(100) - keyedBatchBytes(1)).toBe(2 * 99 * 8 * 2); // each further loan: ",NNNNNNN" in both rows
  });

  test('the record quotes the model: bytes per keyed batch, the price per million kept, and what the timer cost', () => {
    const perMillion = keyRowsMonthly(1e6, 1, 1);
    const timer = alwaysReadyPlanMonthly(2048, 2, true);
    expect(record).toContain(`a keyed batch of one loan leaves ${figure(keyedBatchBytes(1))} bytes`);
    expect(record).toContain(`of 100 loans, ${figure(keyedBatchBytes(100))}`);
    expect(record).toContain(`$${figure(perMillion, 2)} a month per million`);
    expect(record).toContain(`$${figure(timer, 2)} a month, what the rows of ${figure(timer / perMillion)} million such`);
  });
});
