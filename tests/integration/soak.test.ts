/**
 * Soak: 30 s of mixed valid and invalid traffic from 8 concurrent clients against the
 * dev host process (the built dist/dev/devHost.js, as `npm start` runs it), with its own
 * Azurite and OpenID provider. bench/soak.ts drives it and checks every answer and every row.
 */
import { KINDS, formatReport, runSoak, type SoakReport } from '../../bench/soak';

const RSS_GROWTH_LIMIT_MB = 150;

test('30 s at concurrency 8: no 500/502, every accepted draw stored exactly once and nothing else, memory stable', async () => {
  const report: SoakReport = await runSoak({ durationMs: 30_000, concurrency: 8, rssGrowthLimitMb: RSS_GROWTH_LIMIT_MB });
  console.log(formatReport(report));

  expect(report.violations).toEqual([]);
  expect(report.violationCount).toBe(0);
  expect(report.statuses['0'] ?? 0).toBe(0); // every request was answered
  expect(report.statuses['500'] ?? 0).toBe(0);
  expect(report.statuses['502'] ?? 0).toBe(0);
  expect(report.devHostErrorLines).toBe(0);
  expect(report.devHostExitCode).toBe(0);

  // Every kind of traffic was part of the mix.
  for (const kind of KINDS) expect({ kind, requests: report.byKind[kind].requests > 0 }).toEqual({ kind, requests: true });
  expect(report.byKind.valid.statuses).toEqual({ '204': report.byKind.valid.requests });
  expect(report.byKind.replay.statuses).toEqual({ '204': report.byKind.replay.requests });
  expect(report.byKind.unauthorized.statuses).toEqual({ '401': report.byKind.unauthorized.requests });

  // Storage holds exactly the accepted draws; replays added no key record either.
  expect(report.acceptedDraws).toBeGreaterThan(0);
  expect(report.rows).toBe(report.acceptedDraws);
  expect(report.keyRecords).toBe(report.keyedBatches);

  // Memory: the dev host's RSS after warm-up and at the end.
  const { startMb, endMb } = report.rss;
  expect({ rssStartMb: startMb, rssEndMb: endMb, withinLimit: endMb <= startMb + RSS_GROWTH_LIMIT_MB }).toEqual({
    rssStartMb: startMb,
    rssEndMb: endMb,
    withinLimit: true,
  });
}, 150_000);
