import { PRICES, alwaysReadyBreakEvenShare, alwaysReadyMonthly, billedSeconds, sparseMonthly, sparsePerMillion, steadyPerMillion } from '../../bench/costModel';
import { capacity, costSection, judgedAt, type SizeResult } from '../../bench/sizes';

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
    cold: { initMs: 300, rssMiB: 90, samples: [300] },
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
    // billed 1 s each; $52.40 per million; 200 / 8 calls/s; steady 2 GB ÷ 8/s; $20.74 a month; 0.4/s to 0.4 ÷ 0.18 s.
    expect(row).toBe('| 2048 MB | 1 / 1 | $52 / $52 | 200.0 / 8.0 (at 4) | $0.66 / $6.90 | $21 | 0.40 to 2.2 |');
  });
});
