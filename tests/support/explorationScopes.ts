/**
 * The scopes the exploration explores (tests/support/exploration.ts): each state a key can be in (contract §9's
 * table), reached by a setup, with two or three attempts across each boundary the design keeps: the key's
 * lifetime, the last moment a commit may start, the grace's end, a refusal's 24 hours, the 48 hours draw rows
 * are surely kept, and midnight in zones whose clocks change that night. `ci` marks the scopes CI runs
 * (together well within two minutes); `npm run explore` runs them all.
 */
import { CLOCK_TOLERANCE_MS, KEY_GRACE_MS, KEY_LIFETIME_MS, REFUSAL_LIFETIME_MS } from '../../lib/idempotency';
import { OTHER_PARTNER, PARTNER, type BatchName, type LoanState, type Scope } from './exploration';

const T = Date.parse('2031-07-01T12:00:00Z');
/** Draw rows are surely kept 48 hours (docs/contract.md §4). */
const ROWS_KEPT_MS = 48 * 3_600_000;
/** How far a step crosses a boundary: a second before it, a second after. */
const EPSILON = 1_000;
/** Two instances whose clocks are as far apart as the contract tolerates, less a second. */
const APART = [0, CLOCK_TOLERANCE_MS - 1_000] as const;

const LOW: LoanState = { partnerId: PARTNER, credit: 10, investor: 'INV-1' };
const FULL: LoanState = { partnerId: PARTNER, credit: 1000, investor: 'INV-1' };
const MOVED: LoanState = { partnerId: OTHER_PARTNER, credit: 1000, investor: 'INV-1' };
const NO_INVESTOR: LoanState = { partnerId: PARTNER, credit: 1000, investor: '' };
const NO_CREDIT: LoanState = { partnerId: PARTNER, credit: Number.NaN, investor: 'INV-1' };

const two = (a: BatchName, b: BatchName, instances: readonly [number, number] = [0, 1]) => [
  { batch: a, instance: instances[0] },
  { batch: b, instance: instances[1] },
];
const three = (a: BatchName, b: BatchName, c: BatchName) => [...two(a, b), { batch: c, instance: 0 }];

/** Across boundary `at` (from the setup's take): from a second before it, one step of two seconds. */
const across = (at: number) => ({ start: T + at - EPSILON, step: 2 * EPSILON });

export interface NamedScope extends Scope {
  readonly ci: boolean;
}

export const SCOPES: readonly NamedScope[] = [
  // A fresh key: attempts race to take it while the loan changes.
  {
    ci: true,
    name: 'fresh key, X twice on one instance, credit lowered',
    setup: 'fresh',
    takenAt: T,
    start: T,
    offsets: [0],
    attempts: two('X', 'X', [0, 0]),
    loanWrite: { loan: 'L1', to: LOW },
    faults: 'none',
  },
  {
    ci: true,
    name: 'fresh key, X and Y (one loan) on two instances, the loan moved to another partner',
    setup: 'fresh',
    takenAt: T,
    start: T,
    offsets: APART,
    attempts: two('X', 'Y'),
    loanWrite: { loan: 'L1', to: MOVED },
    faults: 'none',
  },
  {
    ci: true,
    name: "fresh key, X twice on two instances, L1's credit gone (a data-quality warning, once per request), every write may fail",
    setup: 'fresh',
    takenAt: T,
    start: T,
    offsets: [0, 0],
    attempts: two('X', 'X'),
    loanWrite: { loan: 'L1', to: NO_CREDIT },
    faults: 'writes',
  },
  {
    ci: true,
    name: 'fresh key, X twice, every write may fail or lose its answer',
    setup: 'fresh',
    takenAt: T,
    start: T,
    offsets: [0],
    attempts: two('X', 'X', [0, 0]),
    faults: 'writes',
  },
  {
    ci: false,
    name: 'fresh key, X, X and Y, credit lowered',
    setup: 'fresh',
    takenAt: T,
    start: T,
    offsets: [0, 0],
    attempts: three('X', 'X', 'Y'),
    loanWrite: { loan: 'L1', to: LOW },
    faults: 'none',
  },
  {
    ci: false,
    name: 'fresh key, X twice and Z, the commit may fail',
    setup: 'fresh',
    takenAt: T,
    start: T,
    offsets: APART,
    attempts: three('X', 'X', 'Z'),
    loanWrite: { loan: 'L1', to: MOVED },
    faults: 'commit',
  },

  // Midnight where the clocks change that night: Santiago jumps from 24:00 to 01:00; New York's day has 25 hours.
  {
    ci: true,
    name: 'fresh key, X twice across midnight in Santiago (24:00 to 01:00), clocks apart',
    zone: 'America/Santiago',
    setup: 'fresh',
    takenAt: Date.parse('2026-09-06T04:00:00Z'),
    start: Date.parse('2026-09-06T04:00:00Z') - EPSILON,
    step: 2 * EPSILON,
    offsets: APART,
    attempts: two('X', 'X'),
    faults: 'commit',
  },
  {
    ci: true,
    name: "X's key taken at 00:00:30 on New York's 25-hour day, retried across its grace's end, still that day",
    zone: 'America/New_York',
    setup: 'takenUnrecorded',
    takenAt: Date.parse('2026-11-01T04:00:30Z'),
    start: Date.parse('2026-11-01T04:00:30Z') + KEY_LIFETIME_MS + KEY_GRACE_MS - EPSILON,
    step: 2 * EPSILON,
    offsets: APART,
    attempts: two('X', 'X'),
    loanWrite: { loan: 'L1', to: LOW },
    faults: 'commit',
  },

  // The key held by X, unrecorded: its retries complete it while the loans allow; across the lifetime, the cutoff, the grace.
  {
    ci: true,
    name: 'X holds the key unrecorded; X twice a minute later, the loan moved to another partner, the commit may fail',
    setup: 'takenUnrecorded',
    takenAt: T,
    start: T + 60_000,
    offsets: APART,
    attempts: two('X', 'X'),
    loanWrite: { loan: 'L1', to: MOVED },
    faults: 'commit',
  },
  {
    ci: true,
    name: 'X holds the key unrecorded; X and Y across its 24th hour, clocks apart, the credit lowered',
    setup: 'takenUnrecorded',
    takenAt: T,
    ...across(KEY_LIFETIME_MS),
    offsets: APART,
    attempts: two('X', 'Y'),
    loanWrite: { loan: 'L1', to: LOW },
    faults: 'none',
  },
  {
    ci: true,
    name: 'X holds the key unrecorded; X twice, a stall past the last moment a commit may start',
    setup: 'takenUnrecorded',
    takenAt: T,
    start: T + KEY_LIFETIME_MS - EPSILON,
    step: KEY_GRACE_MS / 2 + 2 * EPSILON,
    offsets: [0],
    attempts: two('X', 'X', [0, 0]),
    loanWrite: { loan: 'L1', to: NO_INVESTOR },
    faults: 'commit',
  },
  {
    ci: true,
    name: "X holds the key unrecorded; X and Y across its grace's end, clocks apart",
    setup: 'takenUnrecorded',
    takenAt: T,
    ...across(KEY_LIFETIME_MS + KEY_GRACE_MS),
    offsets: APART,
    attempts: two('X', 'Y'),
    loanWrite: { loan: 'L1', to: MOVED },
    faults: 'commit',
  },
  {
    ci: false,
    name: "X holds the key unrecorded; X, X and Y across its grace's end, clocks apart",
    setup: 'takenUnrecorded',
    takenAt: T,
    ...across(KEY_LIFETIME_MS + KEY_GRACE_MS),
    offsets: APART,
    attempts: three('X', 'X', 'Y'),
    loanWrite: { loan: 'L1', to: LOW },
    faults: 'commit',
  },
  {
    ci: false,
    name: 'X holds the key unrecorded; X, X and Y across its 24th hour, every write may fail',
    setup: 'takenUnrecorded',
    takenAt: T,
    ...across(KEY_LIFETIME_MS),
    offsets: APART,
    attempts: three('X', 'X', 'Y'),
    faults: 'writes',
  },

  // Recorded, or held by another batch: replays, and a take-over after the grace.
  {
    ci: true,
    name: "X recorded; X and Y across its grace's end, clocks apart",
    setup: 'recorded',
    takenAt: T,
    ...across(KEY_LIFETIME_MS + KEY_GRACE_MS),
    offsets: APART,
    attempts: two('X', 'Y'),
    loanWrite: { loan: 'L1', to: LOW },
    faults: 'commit',
  },
  {
    ci: true,
    name: "Y recorded; X twice across its grace's end (a take-over), clocks apart",
    setup: 'otherRecorded',
    takenAt: T,
    ...across(KEY_LIFETIME_MS + KEY_GRACE_MS),
    offsets: APART,
    attempts: two('X', 'X'),
    faults: 'commit',
  },
  {
    ci: true,
    name: "Y holds the key unrecorded; X and Z across its grace's end, clocks apart",
    setup: 'otherTaken',
    takenAt: T,
    ...across(KEY_LIFETIME_MS + KEY_GRACE_MS),
    offsets: APART,
    attempts: two('X', 'Z'),
    loanWrite: { loan: 'L1', to: LOW },
    faults: 'commit',
  },
  {
    ci: true,
    name: 'X lost its race on L1; X and Z take the key over, the loan moved',
    setup: 'lostRace',
    takenAt: T,
    start: T + 60_000,
    offsets: APART,
    attempts: two('X', 'Z'),
    loanWrite: { loan: 'L2', to: MOVED },
    faults: 'commit',
  },

  // A refusal across its 24 hours.
  {
    ci: true,
    name: "X refused; X twice across the refusal's 24 hours, clocks apart, credit lowered again",
    setup: 'refused',
    takenAt: T,
    ...across(REFUSAL_LIFETIME_MS),
    offsets: APART,
    attempts: two('X', 'X'),
    loanWrite: { loan: 'L1', to: LOW },
    faults: 'writes',
  },
  {
    ci: false,
    name: "X refused; X, X and Y across the refusal's 24 hours, clocks apart",
    setup: 'refused',
    takenAt: T,
    ...across(REFUSAL_LIFETIME_MS),
    offsets: APART,
    attempts: three('X', 'X', 'Y'),
    loanWrite: { loan: 'L1', to: LOW },
    faults: 'none',
  },

  // Across the 48 hours draw rows are surely kept (issue #46's first finding among them).
  {
    ci: true,
    name: 'X holds the key unrecorded; X twice across 48 hours, the credit low and then restored',
    setup: 'takenUnrecorded',
    takenAt: T,
    ...across(ROWS_KEPT_MS),
    loans: { L1: LOW },
    offsets: APART,
    attempts: two('X', 'X'),
    loanWrite: { loan: 'L1', to: FULL },
    faults: 'none',
  },
  {
    ci: true,
    name: 'X holds the key unrecorded; X twice just past 48 hours, the credit low and then restored',
    setup: 'takenUnrecorded',
    takenAt: T,
    start: T + ROWS_KEPT_MS + 10 * 60_000,
    loans: { L1: LOW },
    offsets: [0],
    attempts: two('X', 'X', [0, 0]),
    loanWrite: { loan: 'L1', to: FULL },
    faults: 'none',
  },
  {
    ci: true,
    name: 'X recorded and its rows collected; X and Y across 48 hours, clocks apart',
    setup: 'recordedThenCollected',
    takenAt: T,
    ...across(ROWS_KEPT_MS),
    offsets: APART,
    attempts: two('X', 'Y'),
    faults: 'commit',
  },
  {
    ci: false,
    name: 'X holds the key unrecorded; X, X and Y across 48 hours, credit restored',
    setup: 'takenUnrecorded',
    takenAt: T,
    ...across(ROWS_KEPT_MS),
    loans: { L1: LOW },
    offsets: APART,
    attempts: three('X', 'X', 'Y'),
    loanWrite: { loan: 'L1', to: FULL },
    faults: 'none',
  },
];
