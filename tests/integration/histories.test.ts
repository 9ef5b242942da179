/**
 * Exactly once, and never a false answer (docs/contract.md §9), proven by generated histories: clients
 * of two partners, keyed and unkeyed batches over overlapping loans, retries after any answer or
 * without waiting for one, storage faults on every kind of request, a clock crossing midnight, a key's
 * lifetime, grace and the 48 hours draw rows are surely kept; and the service's neighbours: the
 * loan-servicing system writing Loans (its owner among them), instances whose clocks differ.
 * HISTORIES sets how many (300 by default, so that CI stays short; `npm run histories` runs 5,000); HISTORY_SEED replays one.
 */
import { Harness } from '../support/harness';
import { CLOCK_SPREAD_MS, describeHistory, prepareWorld, runHistory, type HistoryResult, type HistoryWorld } from '../support/histories';
import { DETAILS, OUTCOME_UNKNOWN_DETAIL } from '../../lib/problem';
import type { Reply } from '../support/harness';

/**
 * 204, 204 replay, 400 (the expired key apart), and the kinds of 502 (docs/contract.md §2.1): nothing
 * submitted, outcome unknown, and outcome not known yet (a key in its grace, with Retry-After, §9).
 */
function kindOf(reply: Reply): string {
  if (reply.status === 204) return reply.headers['idempotent-replay'] === 'true' ? '204 replay' : '204';
  if (reply.status === 502 && reply.body?.detail !== OUTCOME_UNKNOWN_DETAIL) return '502 nothing submitted';
  // Retry-After counts the seconds until a key's grace ends (pending), or is 2 after a keyed request's storage failure.
  if (reply.status === 502) return Number(reply.headers['retry-after'] ?? 0) > 2 ? '502 outcome pending' : '502 outcome unknown';
  if (reply.status === 400 && reply.body?.errors?.[0]?.detail === DETAILS.idempotencyKeyExpired) return '400 key expired';
  return String(reply.status);
}

const COUNT = Number(process.env.HISTORIES ?? 300);
const ONLY = process.env.HISTORY_SEED === undefined ? undefined : Number(process.env.HISTORY_SEED);
/** Histories run side by side (each has its own loans, keys and proxy); enough to keep storage busy. */
const PARALLEL = 8;
/** Stop after this many broken histories (HISTORY_MAX_FAILURES); the report names each one's seed. */
const MAX_FAILURES = Number(process.env.HISTORY_MAX_FAILURES ?? 3);

let h: Harness;
let world: HistoryWorld;
beforeAll(async () => {
  h = await Harness.start();
  world = await prepareWorld(h);
});
afterAll(() => h.stop());

test(
  `${ONLY === undefined ? COUNT : 1} generated histories: recorded whole, once per key, every answer true to storage`,
  async () => {
    const firstSeed = ONLY ?? Math.floor(Math.random() * 2 ** 31);
    const seeds = ONLY === undefined ? Array.from({ length: COUNT }, (_, i) => (firstSeed + i) % 2 ** 31) : [ONLY];
    const failed: HistoryResult[] = [];
    let next = 0;
    let answers = 0;
    let stepped = 0;
    let acrossSteps = 0;
    const reach = {
      memory: 0,
      widestSpread: 0,
      acrossStepsWithWideClocks: 0,
      loanWrites: 0,
      retriedAfterLoanChange: 0,
      refusalsAnsweredAgain: 0,
      takenOver: 0,
      answeredFromOldTake: 0,
      completionsRefused: 0,
    };
    const statuses: Record<string, number> = {};
    await Promise.all(
      Array.from({ length: PARALLEL }, async () => {
        while (next < seeds.length && failed.length < MAX_FAILURES) {
          const index = next++;
          const result = await runHistory(world, seeds[index], index);
          answers += result.attempts.length;
          if (result.clockSteps > 0) stepped += 1;
          acrossSteps += result.acrossSteps;
          if (result.memory) reach.memory += 1;
          reach.widestSpread = Math.max(reach.widestSpread, result.clockSpread);
          if (result.clockSpread >= 0.9 * CLOCK_SPREAD_MS && result.acrossSteps > 0) reach.acrossStepsWithWideClocks += 1;
          reach.loanWrites += result.loanWrites;
          reach.retriedAfterLoanChange += result.retriedAfterLoanChange;
          reach.refusalsAnsweredAgain += result.refusalsAnsweredAgain;
          reach.takenOver += result.takenOverAfterMemory;
          reach.answeredFromOldTake += result.answeredFromOldTake;
          reach.completionsRefused += result.completionsRefused;
          for (const a of result.attempts) {
            const s = a.reply === undefined ? '?' : kindOf(a.reply);
            statuses[s] = (statuses[s] ?? 0) + 1;
          }
          if (result.violations.length > 0) failed.push(result);
        }
      }),
    );
    const report = failed.map(
      (f) => `HISTORY_SEED=${f.seed} npx jest tests/integration/histories.test.ts\n${f.violations.map((v) => `  ✗ ${v}`).join('\n')}\n${describeHistory(f)}`,
    );
    // On-demand runs say what they exercised.
    if (process.env.HISTORIES !== undefined)
      process.stdout.write(
        `${seeds.length} histories from seed ${firstSeed} (${stepped} across a key's lifetime and grace, ${acrossSteps} attempts in flight across a step): ${answers} answers ${JSON.stringify(statuses)}; reached ${JSON.stringify(reach)}\n`,
      );
    if (report.length > 0) throw new Error(`${failed.length} histories broke a promise:\n\n${report.join('\n\n')}`);
    // The histories must have exercised what they claim to: every kind of answer occurred.
    if (ONLY === undefined) {
      expect(answers).toBeGreaterThan(COUNT * 3);
      for (const s of ['204', '204 replay', '400', '502 nothing submitted', '502 outcome unknown']) expect(statuses[s]).toBeGreaterThan(0);
      // …and reached the boundaries of a key's life: attempts in flight across its 24th hour and the end of
      // its grace, a batch told its outcome is not known yet inside the grace, and one told the key expired after it.
      expect(stepped).toBeGreaterThan(COUNT / 6);
      expect(acrossSteps).toBeGreaterThan(0);
      for (const s of ['502 outcome pending', '400 key expired']) expect(statuses[s]).toBeGreaterThan(0);
      // …and the neighbours: loans changed between two attempts of a keyed batch (a completion refused by the
      // loans as they are now among them), refusals answered again from their mark, keys taken over and old
      // batches answered from their take past 48 hours, and instances whose clocks were as far apart as the
      // service tolerates with attempts in flight across a key's grace.
      expect(reach.memory).toBeGreaterThan(COUNT / 12);
      expect(reach.retriedAfterLoanChange).toBeGreaterThan(0);
      expect(reach.refusalsAnsweredAgain).toBeGreaterThan(0);
      expect(reach.takenOver).toBeGreaterThan(0);
      expect(reach.answeredFromOldTake).toBeGreaterThan(0);
      expect(reach.completionsRefused).toBeGreaterThan(0);
      expect(reach.widestSpread).toBeGreaterThanOrEqual(0.99 * CLOCK_SPREAD_MS);
      expect(reach.acrossStepsWithWideClocks).toBeGreaterThan(0);
    }
  },
  // A history takes about 0.2 s on an idle 2-core machine and up to 0.9 s while another job keeps both
  // cores busy (load 7, 2026-11-26): twice that per history, so that only a hang fails here, however long the run.
  Math.max(600_000, COUNT * 1_800),
);
