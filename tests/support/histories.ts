/**
 * Generated histories (docs/contract.md §9): several clients of two partners send keyed and unkeyed
 * batches over overlapping loans and retry after any answer, or without waiting for one; a chaos proxy
 * between the service and a real Azurite decides each storage request's fate; the service's clock
 * crosses a midnight (UTC, or a zone whose clocks change that night) while requests are in flight.
 * The service's neighbours move too: the loan-servicing system writes `Loans` at any moment (credit,
 * owner, funding investor, the loan itself), and the service runs as several instances whose clocks differ. Afterwards storage is read directly and every promise made to partners
 * is checked against it, each answer against what the rules allowed while its attempts read.
 *
 * One seed fixes a history's plan: clients, batches, retries, faults, clocks and neighbours. The
 * interleaving still depends on timing, so a seed reproduces the plan, and the checks hold for every
 * interleaving.
 */
import type { HttpHandler } from '@azure/functions';
import { TableClient, odata } from '@azure/data-tables';
import { createDependencies, createDrawRequestHandler } from '../../functions/drawRequest';
import { loadConfig, type Settings } from '../../lib/config';
import { KEY_GRACE_MS, KEY_LIFETIME_MS, REFUSAL_LIFETIME_MS, ROWS_KEPT_MS, batchHash } from '../../lib/idempotency';
import { DETAILS } from '../../lib/problem';
import { drawDay, type Store, type StoreTimeouts } from '../../lib/store';
import { KEY_OUTCOME_PENDING, REFUSED_BEFORE, type BatchRecord } from '../../lib/telemetry';
import { createTables, putLoan, putPartner, tableClient, tableSettings } from '../../dev/demoData';
import { startChaosProxy, type Fault, type StorageRequestKind } from './chaosProxy';
import { contractViolations } from './contract';
import { modelVerdicts, type ModelLoan } from './drawRulesModel';
import { UNHURRIED_TIMEOUTS, invoke, recordingTelemetry, type Harness, type Reply } from './harness';
import { overriding } from './storeOverrides';

/** Midnights to cross: UTC; Santiago, whose clocks jump from 24:00 to 01:00 that night; New York, whose clocks go back at 02:00. */
export const MIDNIGHTS = [
  { zone: 'UTC', midnight: Date.parse('2026-11-24T00:00:00Z') },
  { zone: 'America/Santiago', midnight: Date.parse('2026-09-06T04:00:00Z') },
  { zone: 'America/New_York', midnight: Date.parse('2026-11-01T04:00:00Z') },
] as const;

/**
 * How far apart the instances' clocks may be in a history (HISTORY_CLOCK_SPREAD_MS). The service's stated
 * tolerance (docs/decisions/0046-instances-clocks-are-their-own.md) less a second, for what a commit takes here: the
 * histories reach the boundary they prove. Set above five minutes, they find the answers it would break.
 */
export const CLOCK_SPREAD_MS = Number(process.env.HISTORY_CLOCK_SPREAD_MS ?? 4 * 60_000 + 24_000);

/**
 * The service's clock in a history: it starts near a midnight and runs at the real pace, and steps forward
 * while requests are in flight (across a key's 24th hour and the end of its grace), or between phases
 * (past the 48 hours draw rows are surely kept, to the next midnight). Each instance reads it with its own offset. `at` maps a
 * real instant back to what the clock read then, for the checks.
 */
export class HistoryClock {
  private readonly startedAt = Date.now();
  /** Real instants at which the clock stepped, and by how much in all from then on. */
  private readonly steps: { readonly real: number; readonly offset: number }[] = [{ real: -Infinity, offset: 0 }];
  constructor(private readonly start: number) {}

  now = (): Date => new Date(this.at(Date.now()));

  /** The clock of an instance `offset` ms ahead of this one (behind, when negative). */
  offsetBy(offset: number): () => Date {
    return () => new Date(this.at(Date.now()) + offset);
  }

  at(real: number): number {
    let offset = 0;
    for (const s of this.steps) if (s.real <= real) offset = s.offset;
    return this.start + (real - this.startedAt) + offset;
  }

  step(ms: number): void {
    this.steps.push({ real: Date.now(), offset: this.steps[this.steps.length - 1].offset + ms });
  }

  /** Steps so that the clock reads `target` now. */
  stepTo(target: number): void {
    this.step(target - this.at(Date.now()));
  }

  get stepped(): number {
    return this.steps.length - 1;
  }

  /** Whether the clock stepped between these two real instants. */
  steppedBetween(from: number, to: number): boolean {
    return this.steps.some((s) => s.real > from && s.real <= to);
  }
}

/**
 * The steps of a key-lifetime history, each a little short of its boundary so that keys taken moments
 * before it cross the boundary while the history runs: to just short of the 24th hour; past the moment
 * no commit may start any more (lastCommitStart, halfway through the grace); then to just short of the
 * grace's end. The last step is taken only once no commit is under way anywhere (in an instance or in the
 * proxy): in real time five minutes pass there, and every commit lands within seconds of its start.
 * With instances whose clocks are `spread` apart, each stop lands anywhere within that spread of its
 * boundary, so that one instance is past a boundary while another is not: where their clocks can break
 * the key's promises, if anywhere. The first step comes once the clients have sent a few attempts.
 */
function lifetimeSteps(random: Random, spread: number) {
  const within = () => random.int(-Math.floor(spread / 2), Math.ceil(spread / 2));
  return {
    afterAttempts: random.int(1, 4),
    firstMs: random.int(0, 250),
    thenMs: random.int(40, 450),
    /** At the second stop, how long attempts go on before the clock moves on (once no commit is under way). */
    pauseMs: random.int(0, 300),
    /** Where each stop lands, from the clock when the steps began. */
    lifetime: KEY_LIFETIME_MS - random.int(0, 600) + within(),
    pastCutoff: KEY_LIFETIME_MS + KEY_GRACE_MS / 2 + 700 + within(),
    graceEnd: KEY_LIFETIME_MS + KEY_GRACE_MS - random.int(700, 1_300) + within(),
  };
}

/** How long before the steps began a history's first key may have been taken (its first attempts' time, with room). */
const STEP_MARGIN_MS = 10_000;

/** The clients: two per partner, each a separate client application. */
export const HISTORY_CLIENTS = [
  { clientId: 'history-app-a1', partnerId: 'HISTORY-A' },
  { clientId: 'history-app-a2', partnerId: 'HISTORY-A' },
  { clientId: 'history-app-b1', partnerId: 'HISTORY-B' },
  { clientId: 'history-app-b2', partnerId: 'HISTORY-B' },
] as const;
type Client = (typeof HISTORY_CLIENTS)[number];

/** Short bounds, so that faults cross them within a history's second. */
const TIMEOUTS = { attemptMs: 300, readMs: 700, commitMs: 500 };

/** Small, fast and seedable (mulberry32). */
export class Random {
  private state: number;
  constructor(seed: number) {
    this.state = seed >>> 0;
  }
  next(): number {
    this.state = (this.state + 0x6d2b79f5) >>> 0;
    let t = this.state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }
  int(min: number, max: number): number {
    return min + Math.floor(this.next() * (max - min + 1));
  }
  chance(p: number): boolean {
    return this.next() < p;
  }
  pick<T>(items: readonly T[]): T {
    return items[Math.floor(this.next() * items.length)];
  }
}

/** The shared world: Azurite, the provider, the clients' partner rows and tokens, and the table sets made so far. */
export interface HistoryWorld {
  readonly harness: Harness;
  readonly tokens: ReadonlyMap<string, string>;
  readonly tableSets: Map<number, Promise<Settings>>;
}

export async function prepareWorld(harness: Harness): Promise<HistoryWorld> {
  const tokens = new Map<string, string>();
  for (const c of HISTORY_CLIENTS) {
    await putPartner(harness.table('partners'), c);
    tokens.set(c.clientId, await harness.token({ azp: c.clientId, sub: c.clientId }));
  }
  return { harness, tokens, tableSets: new Map() };
}

/**
 * Histories per set of Loans, DrawRequests and IdempotencyKeys tables. Azurite answers every query by
 * scanning its table, so tables that grew with every history would make a long run quadratic; a new
 * set every so many histories keeps each history's cost the same.
 */
const HISTORIES_PER_TABLE_SET = 200;

/** The settings naming table set `n`, created on first use. */
function tableSet(world: HistoryWorld, n: number): Promise<Settings> {
  let made = world.tableSets.get(n);
  if (made === undefined) {
    const tables = { ...world.harness.config.tables, loansTable: `HistoryLoans${n}`, drawsTable: `HistoryDraws${n}`, idempotencyTable: `HistoryKeys${n}` };
    made = createTables(world.harness.azurite.connectionString, tables).then(() => tableSettings(tables));
    world.tableSets.set(n, made);
  }
  return made;
}

interface Element {
  readonly loanNumber: number;
  readonly amount: number;
  readonly requestor: string;
}

/** One request a client sent, and what came of it. */
export interface Attempt {
  readonly client: string;
  readonly partnerId: string;
  readonly key?: string;
  readonly batch: readonly Element[];
  readonly hash: string;
  readonly sentAt: number;
  readonly settling: boolean;
  /** Which instance of the service it reached. */
  readonly instance: number;
  /** What the partner means to record: one intent is one batch, however often it is resent or corrected, under whichever key. */
  readonly intent?: string;
  /** The history's clock when it was sent (each instance reads it with its offset). */
  readonly sentClock: number;
  answeredAt?: number;
  reply?: Reply;
  /** What the service told on-call about it (outcome, reason, detail): for the history's account. */
  told?: string;
  /** For a refusal answered again from its mark under the key, the request that was refused first. */
  refusedBy?: string;
}

/** What the history reached, for the run's assertions that every boundary was exercised. */
export interface HistoryReach {
  /** How often the clock stepped across a key's lifetime and grace (0 in a history without those steps). */
  readonly clockSteps: number;
  /** Attempts sent before a step of the clock and answered after it: judged, read or committed across it. */
  readonly acrossSteps: number;
  /** The history ran past the 48 hours draw rows are surely kept (ROWS_KEPT_MS), to the next midnight. */
  readonly memory: boolean;
  /** Instances, and how far apart their clocks were (ms). */
  readonly instances: number;
  readonly clockSpread: number;
  /** Writes of the loan-servicing system, and keyed batches sent again after one of their loans changed. */
  readonly loanWrites: number;
  readonly retriedAfterLoanChange: number;
  /** Refusals answered again from a batch's mark under its key. */
  readonly refusalsAnsweredAgain: number;
  /** Keys taken over by a new batch past 48 hours. */
  readonly takenOverAfterMemory: number;
  /** Batches resent under their key past 48 hours and answered from their take: the replay, or "can no longer be told". */
  readonly answeredFromOldTake: number;
  /** Keyed retries of a batch holding its key that the loans refused now: outcome not known yet, nothing committed. */
  readonly completionsRefused: number;
}

export interface HistoryResult extends HistoryReach {
  readonly seed: number;
  readonly violations: string[];
  readonly attempts: Attempt[];
  readonly faults: Record<string, number>;
  /** The business days the history's clock spanned. */
  readonly days: string[];
}

let loanBase = 50_000_000 + Math.floor(Math.random() * 1_000_000) * 100;

const isReplay = (r: Reply) => r.status === 204 && r.headers['idempotent-replay'] === 'true';
const isFresh204 = (r: Reply) => r.status === 204 && r.headers['idempotent-replay'] === undefined;
const isKeyReused = (r: Reply) => r.status === 400 && r.body?.errors?.[0]?.detail === DETAILS.idempotencyKeyReused;
/**
 * An outcome-unknown 502 with the seconds to wait before resending under the key: a key in its grace (the
 * seconds until its outcome is known, contract §9), or a keyed request whose storage failed (2).
 */
const isPending = (r: Reply) => r.status === 502 && !saysNothingRecorded(r) && r.headers['retry-after'] !== undefined;
const isKeyExpired = (r: Reply) => r.status === 400 && r.body?.errors?.[0]?.detail === DETAILS.idempotencyKeyExpired;
const isOutcomeForgotten = (r: Reply) => r.status === 400 && r.body?.errors?.[0]?.detail === DETAILS.idempotencyKeyOutcomeForgotten;
/**
 * How often settling asks again after "not known yet": a completion the loans refuse is told to wait a grace's
 * length at a time, until its key settles (24 hours and 10 minutes after the take at most).
 */
const SETTLING_WAITS = Math.ceil((KEY_LIFETIME_MS + KEY_GRACE_MS) / KEY_GRACE_MS) + 2;
/** A 502 that tells the partner nothing was recorded (the others say the outcome is unknown). */
const saysNothingRecorded = (r: Reply) => r.status === 502 && /nothing was (submitted|recorded)/.test(String(r.body?.detail));
/**
 * The identity provider failed (its metadata or keys did not come in time, as on a starved machine): that
 * `502` comes before the key is read and keeps its detail (contract §2.1), so it says nothing of the key.
 */
const identityProviderFailed = (a: Attempt) => a.reply?.status === 502 && /\bERR_IDP_/.test(a.told ?? '');

function faultFor(random: Random, level: number, kind: StorageRequestKind): Fault {
  if (!random.chance(level)) return { kind: 'pass' };
  const roll = random.next();
  if (kind === 'commit') {
    if (roll < 0.15) return { kind: 'delay', ms: random.int(0, 150) };
    if (roll < 0.3) return { kind: 'delay', ms: random.int(Math.floor(TIMEOUTS.commitMs * 0.5), Math.floor(TIMEOUTS.commitMs * 0.95)) };
    if (roll < 0.45) return { kind: 'hold', ms: random.int(0, 100) };
    if (roll < 0.55) return { kind: 'status', status: 503 };
    if (roll < 0.63) return { kind: 'status', status: 500 };
    if (roll < 0.73) return { kind: 'applyThen500' };
    if (roll < 0.83) return { kind: 'resetBefore' };
    return { kind: 'dropAnswer' };
  }
  if (roll < 0.4) return { kind: 'delay', ms: random.int(0, 120) };
  if (roll < 0.5) return { kind: 'hold', ms: random.int(0, 50) };
  if (roll < 0.62) return { kind: 'status', status: 503 };
  if (roll < 0.72) return { kind: 'status', status: 500 };
  if (kind === 'write' && roll < 0.8) return { kind: 'applyThen500' };
  if (roll < 0.88) return { kind: 'resetBefore' };
  return { kind: 'dropAnswer' };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A loan as the loan-servicing system keeps it; `undefined` once removed. */
interface LoanState {
  readonly partnerId: string;
  readonly credit: number;
  readonly fundingInvestorId: string;
}

/** One version of a loan: the write that made it started at `start` and was answered at `end` (real ms). */
interface LoanVersion {
  readonly start: number;
  readonly end: number;
  readonly state?: LoanState;
}

/**
 * The loan-servicing system: at random moments it raises or lowers a loan's credit, hands it to the other
 * partner or back, removes or restores its funding investor, removes the loan or puts it back. Each write's
 * start and end are kept: a read made between them may have seen either version.
 */
class LoanServicer {
  readonly versions = new Map<number, LoanVersion[]>();
  writes = 0;
  private running = false;
  private done: Promise<void> = Promise.resolve();

  constructor(
    private readonly table: TableClient,
    private readonly random: Random,
    private readonly loans: readonly { readonly loanNumber: number; readonly initial: LoanState }[],
    private readonly everyMs: number,
  ) {
    for (const l of loans) this.versions.set(l.loanNumber, [{ start: -Infinity, end: -Infinity, state: l.initial }]);
  }

  start(): void {
    if (this.everyMs === 0 || this.running) return;
    this.running = true;
    this.done = (async () => {
      while (this.running) {
        await sleep(this.random.int(0, this.everyMs));
        if (this.running) await this.change();
      }
    })();
  }

  async stop(): Promise<void> {
    this.running = false;
    await this.done;
  }

  private async change(): Promise<void> {
    const { loanNumber, initial } = this.random.pick(this.loans);
    const history = this.versions.get(loanNumber) as LoanVersion[];
    const current = history[history.length - 1].state;
    const roll = this.random.next();
    const base = current ?? initial;
    let next: LoanState | undefined;
    if (current === undefined) next = initial;
    else if (roll < 0.45) next = { ...base, credit: this.random.pick([0, 15, 40, 70, 1000]) };
    else if (roll < 0.6) next = { ...base, partnerId: base.partnerId === initial.partnerId ? otherPartner(initial.partnerId) : initial.partnerId };
    else if (roll < 0.8) next = { ...base, fundingInvestorId: base.fundingInvestorId === '' ? 'INV-1' : '' };
    else next = undefined;
    const start = Date.now();
    if (next === undefined) await this.table.deleteEntity(String(loanNumber), '');
    else await putLoan(this.table, { loanNumber, partnerId: next.partnerId, availableCredit: next.credit, fundingInvestorId: next.fundingInvestorId });
    history.push({ start, end: Date.now(), state: next });
    this.writes += 1;
  }

  /** The versions of a loan a read made between `from` and `to` (real ms) may have seen. */
  visible(loanNumber: number, from: number, to: number): (LoanState | undefined)[] {
    const history = this.versions.get(loanNumber) ?? [];
    return history.filter((v, i) => v.start <= to && (i === history.length - 1 || history[i + 1].end > from)).map((v) => v.state);
  }

  /** Whether the loan was written between these two real instants. */
  changedBetween(loanNumber: number, from: number, to: number): boolean {
    return (this.versions.get(loanNumber) ?? []).some((v) => v.start > from && v.start < to);
  }
}

const otherPartner = (partnerId: string) => (partnerId === 'HISTORY-A' ? 'HISTORY-B' : 'HISTORY-A');

/** A history's schedule of clock steps: none (a midnight only), across a key's lifetime and grace, or past 48 hours (ROWS_KEPT_MS). */
type Schedule = 'midnight' | 'lifetime' | 'memory';

/** Runs the history of `seed` and checks it; an empty `violations` means every promise held. */
export async function runHistory(world: HistoryWorld, seed: number, index = 0): Promise<HistoryResult> {
  const tables = await tableSet(world, Math.floor(index / HISTORIES_PER_TABLE_SET));
  const random = new Random(seed);
  const { harness } = world;
  const midnight = random.pick(MIDNIGHTS);
  // Storage faults come from their own stream, so the clients' plan does not shift with their count.
  const faultRandom = new Random(seed ^ 0x5bd1e995);
  const level = random.pick([0, 0.15, 0.3, 0.5]);

  // The clock starts shortly before midnight and runs at the real pace. In a third of the histories it
  // also steps across a key's lifetime and grace while requests are in flight; in a sixth it goes on past
  // the 48 hours draw rows are surely kept (while keys are taken over) and to the next midnight.
  const clockStart = midnight.midnight - random.int(0, 900);
  const clock = new HistoryClock(clockStart);
  const roll = random.next();
  const schedule: Schedule = roll < 1 / 3 ? 'lifetime' : roll < 1 / 2 ? 'memory' : 'midnight';

  // One to three instances of the service, each with its own caches, store and clock.
  const instanceCount = random.int(1, 3);
  const spread = instanceCount === 1 || random.chance(1 / 3) ? 0 : random.chance(1 / 2) ? CLOCK_SPREAD_MS : random.int(0, CLOCK_SPREAD_MS);
  const offsets = Array.from({ length: instanceCount }, (_, i) => (instanceCount === 1 ? 0 : Math.round(spread * (i / (instanceCount - 1) - 0.5))));
  const steps = schedule === 'lifetime' ? lifetimeSteps(random, spread) : undefined;

  const proxy = await startChaosProxy(harness.azurite.port);
  proxy.decide = (kind) => faultFor(faultRandom, level, kind);
  const settings: Settings = { ...harness.settingsVia(proxy.port), ...tables, DRAW_DAY_TIMEZONE: midnight.zone };
  const table = (name: string) => tableClient(harness.azurite.connectionString, name);
  const records: BatchRecord[] = [];
  /** Commits an instance has started (its cutoff checked) and not yet seen end: the clock steps past a grace only when there are none. */
  const commitsUnderWay = { count: 0 };
  const instanceOf = (timeouts: StoreTimeouts, settingsUsed: Settings, now: () => Date): HttpHandler => {
    const config = loadConfig(settingsUsed);
    const deps = createDependencies(config, { timeouts, telemetry: recordingTelemetry((r) => records.push(r)), now });
    // Only the business day follows the injected clock; tokens are checked against real time.
    return createDrawRequestHandler({ ...deps, now, store: countingCommits(deps.store, commitsUnderWay) });
  };
  const instances = offsets.map((offset) => instanceOf(TIMEOUTS, settings, clock.offsetBy(offset)));

  /** Steps the clock once no commit is under way, in an instance or in the proxy: atomically with that check. */
  const quietlyStep = async (step: () => void) => {
    while (commitsUnderWay.count > 0 || proxy.commitsInside > 0) await sleep(2);
    step();
  };
  let stepTimer: Promise<void> | undefined;
  const takeSteps = async () => {
    if (steps === undefined) return;
    const from = clock.at(Date.now());
    const onTo = (target: number) => clock.stepTo(Math.max(target, clock.at(Date.now())));
    await sleep(steps.firstMs);
    onTo(from + steps.lifetime);
    retryEverywhere();
    await sleep(steps.thenMs);
    // Past the cutoff by one instance's clock, and with clocks `spread` apart possibly past the grace's end
    // by another's for a key taken by the one behind: then, as at the grace's end, no commit may be under
    // way (a commit lands within seconds of its cutoff check; one carried across this step would land
    // minutes of every clock later, which no deployment can do).
    if (steps.pastCutoff + spread + STEP_MARGIN_MS >= KEY_LIFETIME_MS + KEY_GRACE_MS) await quietlyStep(() => onTo(from + steps.pastCutoff));
    else onTo(from + steps.pastCutoff);
    retryEverywhere();
    await sleep(steps.pauseMs);
    await quietlyStep(() => onTo(from + steps.graceEnd));
    retryEverywhere();
  };
  /**
   * At each stop, the keyed batches not settled yet for their partner (no answer, or a 502) are sent again
   * to every instance at once, as a partner retries after lost answers: each instance judges the key by its
   * own clock, on either side of the boundary the stop is near.
   */
  const retryEverywhere = () => {
    const open = new Map<string, Attempt>();
    for (const a of attempts) if (a.key !== undefined && !a.settling) open.set(`${a.partnerId}|${a.key}|${a.hash}`, a);
    const unsettled = [...open.values()].filter((a) => a.reply === undefined || a.reply.status === 502).slice(0, 4);
    for (const a of unsettled) {
      const client = HISTORY_CLIENTS.find((c) => c.clientId === a.client) as Client;
      instances.forEach((_, i) => send(client, a.batch, a.key, false, a.intent, undefined, i));
    }
  };

  // Loans: three of each partner with room, one of partner A with little credit.
  const loans: { loanNumber: number; initial: LoanState }[] = [];
  for (const [partnerId, credit] of [
    ['HISTORY-A', 1000],
    ['HISTORY-A', 1000],
    ['HISTORY-A', 1000],
    ['HISTORY-A', 50],
    ['HISTORY-B', 1000],
    ['HISTORY-B', 1000],
  ] as const) {
    loanBase += 1;
    loans.push({ loanNumber: loanBase, initial: { partnerId, credit, fundingInvestorId: 'INV-1' } });
  }
  const loansTable = table(tables.LOANS_TABLE as string);
  await Promise.all(loans.map((l) => putLoan(loansTable, { loanNumber: l.loanNumber, ...l.initial, availableCredit: l.initial.credit })));
  // In half of the histories the loan-servicing system writes Loans while the clients send.
  const servicer = new LoanServicer(loansTable, new Random(seed ^ 0x2545f491), loans, random.chance(1 / 2) ? random.int(15, 150) : 0);

  const attempts: Attempt[] = [];
  const inFlight: Promise<void>[] = [];
  const instanceChoice = new Random(seed ^ 0x68e31da4);
  const send = (client: Client, batch: readonly Element[], key: string | undefined, settling = false, intent?: string, handler?: HttpHandler, to?: number) => {
    const instance = to ?? instanceChoice.int(0, instances.length - 1);
    const attempt: Attempt = {
      client: client.clientId,
      partnerId: client.partnerId,
      key,
      batch,
      hash: batchHash(batch),
      sentAt: Date.now(),
      settling,
      instance,
      intent,
      sentClock: clock.at(Date.now()),
    };
    attempts.push(attempt);
    if (steps !== undefined && !settling && stepTimer === undefined && attempts.length >= steps.afterAttempts) stepTimer = takeSteps();
    const done = post(handler ?? instances[instance], world.tokens.get(client.clientId) as string, batch, key).then((reply) => {
      attempt.reply = reply;
      attempt.answeredAt = Date.now();
      const record = records.find((r) => r.requestId === reply.headers['x-request-id']);
      attempt.told = record === undefined ? undefined : [record.outcome, record.reason, record.reasonDetail].filter((t) => t !== undefined).join(' ');
      if (record?.reason === REFUSED_BEFORE) attempt.refusedBy = record.reasonDetail;
    });
    inFlight.push(done);
    return { attempt, done };
  };

  /**
   * A client's intent: a batch sent and resent as the partners' guide says, until an answer settles it.
   * Some clients stop waiting (their answer is lost to them) and retry while the first is in flight.
   */
  const pursue = async (
    client: Client,
    intentId: string,
    first: { key?: string; batch: readonly Element[] },
    choiceSeed: number,
    tries: number,
    keyTag = '',
  ) => {
    let { batch, key } = first;
    const choices = new Random(choiceSeed);
    const intent = key === undefined ? undefined : intentId;
    for (let t = 0; t < tries; t++) {
      const { attempt, done } = send(client, batch, key, false, intent);
      const patienceMs = choices.chance(0.25) ? choices.int(20, 600) : undefined;
      const answered = await Promise.race([done.then(() => true), patienceMs === undefined ? done.then(() => true) : sleep(patienceMs).then(() => false)]);
      const reply = answered ? attempt.reply : undefined;
      if (reply === undefined || reply.status === 502) {
        // No answer, or a failure: a keyed batch is retried with its key; an unkeyed one sometimes blindly.
        if (key === undefined && !choices.chance(0.4)) break;
        await sleep(choices.int(0, 60));
        continue;
      }
      if (reply.status === 204) {
        if (choices.chance(0.2)) send(client, batch, key, false, intent);
        break;
      }
      if (isKeyExpired(reply)) {
        // The partner does what the answer says: the same batch under a new key.
        key = `${first.key}-${keyTag}t${t}`;
        continue;
      }
      if (reply.status === 400 && key !== undefined && !isKeyReused(reply) && choices.chance(0.5)) {
        // The partner corrects the batch (drops what was refused) and sends it under the same key, or a new one.
        const refused = new Set<number>((reply.body?.errors ?? []).map((e: { index?: number }) => e.index));
        const corrected = batch.filter((_, i) => !refused.has(i));
        if (corrected.length === 0 || corrected.length === batch.length) break;
        batch = corrected;
        if (choices.chance(0.3)) key = `${first.key}-${keyTag}c${t}`;
        continue;
      }
      break;
    }
  };

  const batchOf = (client: Client, random: Random) => {
    const own = loans.filter((l) => l.initial.partnerId === client.partnerId);
    return Array.from({ length: random.int(1, 3) }, () => ({
      loanNumber: (random.chance(0.9) ? random.pick(own) : random.pick(loans)).loanNumber,
      amount: random.int(10, 80),
      requestor: `${client.clientId}@partner.example`,
    }));
  };

  const clientCount = random.int(2, 4);
  const chosen = [HISTORY_CLIENTS[0], HISTORY_CLIENTS[2], HISTORY_CLIENTS[1], HISTORY_CLIENTS[3]].slice(0, clientCount);
  const plans = chosen.map((client, c) => ({
    client,
    intents: Array.from({ length: random.int(1, 3) }, (_, i) => ({
      id: `${client.clientId}|${i}`,
      key: random.chance(0.75) ? `h${seed}-c${c}-i${i}` : undefined,
      batch: batchOf(client, random),
      gapMs: random.int(0, 40),
      choiceSeed: Math.floor(random.next() * 2 ** 32),
    })),
  }));

  servicer.start();
  await Promise.all(
    plans.map(async ({ client, intents }) => {
      for (const intent of intents) {
        await sleep(intent.gapMs);
        await pursue(client, intent.id, intent, intent.choiceSeed, steps === undefined ? 4 : 6);
      }
    }),
  );
  await Promise.all(inFlight);
  // Steps the clients finished before are taken now, so that the settling below is judged past them.
  await (stepTimer ??= takeSteps());

  // Past 48 hours: partners reuse their old keys for new batches (allowed after a key's grace, contract §9)
  // and resend some old batches under their old keys (answered from their take: the replay, or that the
  // outcome can no longer be told); then, across the next midnight, they resend the new batches as after a
  // lost answer (within 24 hours, as advised).
  const reused = new Set<string>();
  let answeredFromOldTake = 0;
  if (schedule === 'memory') {
    const reuses = plans.flatMap(({ client, intents }) =>
      intents
        .filter((i) => i.key !== undefined && random.chance(0.7))
        .map((i) => ({ client, id: `${i.id}|reuse`, key: i.key as string, batch: batchOf(client, random) })),
    );
    const resends = plans.flatMap(({ client, intents }) =>
      intents
        .filter((i) => i.key !== undefined && random.chance(0.5))
        // What the intent sent last, under which key: what its partner would resend (it corrects on a 400, never back).
        .map((i) => {
          const { batch, key } = attempts.filter((a) => a.intent === i.id).pop() ?? i;
          return { client, id: i.id, batch, key };
        }),
    );
    // Past 48 hours after every take of the first phase, by every clock.
    await quietlyStep(() => clock.stepTo(clockStart + ROWS_KEPT_MS + CLOCK_SPREAD_MS + random.int(0, 3_000)));
    await Promise.all([
      ...reuses.map(async (r, i) => {
        reused.add(`${r.client.partnerId}|${r.key}`);
        await sleep(random.int(0, 60));
        await pursue(r.client, r.id, r, seed + i, 4, 'r');
      }),
      ...resends.map(async (r) => {
        await sleep(random.int(0, 60));
        const { attempt, done } = send(r.client, r.batch, r.key, false, r.id);
        await done;
        if (isReplay(attempt.reply as Reply) || isOutcomeForgotten(attempt.reply as Reply)) answeredFromOldTake += 1;
      }),
    ]);
    await Promise.all(inFlight);
    const nextMidnight = midnightAfter(clock.at(Date.now()), midnight.zone);
    await quietlyStep(() => clock.stepTo(nextMidnight - random.int(0, 1_500)));
    // A partner resends what it has no definitive answer for (no answer, a 204 it did not get, a 502); a 400 it does not.
    const lastAnswer = (r: (typeof reuses)[number]) =>
      attempts.filter((a) => a.intent === r.id && a.key === r.key && a.hash === batchHash(r.batch)).pop()?.reply;
    await Promise.all(reuses.filter((r) => lastAnswer(r)?.status !== 400).map((r) => send(r.client, r.batch, r.key, false, r.id).done));
  }
  await servicer.stop();
  await Promise.all(inFlight);
  await proxy.idle();

  const violations: string[] = [];
  const days = [...new Set([drawDay(new Date(clockStart), midnight.zone), drawDay(clock.now(), midnight.zone)])];
  const drawsTable = table(tables.DRAWS_TABLE as string);
  const loanNumbers = loans.map((l) => l.loanNumber);
  let rows = await readRows(drawsTable, loanNumbers);
  checkHistory(attempts, rows, servicer, reused, (real) => clock.at(real), spread, violations);

  // Settling: with storage healthy, every keyed batch a partner could still be retrying (within 24 hours of
  // its key's use) is sent once more; each must end in the replay when it was recorded, or otherwise in an
  // answer that agrees with storage.
  proxy.decide = () => ({ kind: 'pass' });
  // Its bounds are not what is tested here: a settling answer must say how the batch ended, and on a busy
  // machine a read took over 5 s with storage healthy (a 502 then proves nothing either way).
  const settler = instanceOf(UNHURRIED_TIMEOUTS, settings, clock.now);
  // Past a key's grace a different batch under it is a new submission (§9), so there each key is settled
  // with the last batch its partner sent under it, as a partner's own retry would; within it, with every one.
  // Past 48 hours, only the keys reused then.
  const settled = new Map<string, Attempt>();
  for (const a of attempts) {
    if (a.key === undefined || (schedule === 'memory' && !reused.has(`${a.partnerId}|${a.key}`))) continue;
    settled.set(steps === undefined && schedule !== 'memory' ? `${a.partnerId}|${a.key}|${a.hash}` : `${a.partnerId}|${a.key}`, a);
  }
  for (const a of settled.values()) {
    // A refusal stands for 24 hours (contract §9); a partner does not send a refused batch again, so past
    // that (with the instances' clocks apart) it is not settled: the same batch would be judged anew.
    const answers = attempts.filter((b) => !b.settling && b.partnerId === a.partnerId && b.key === a.key && b.hash === a.hash && b.reply !== undefined);
    const last = answers[answers.length - 1];
    const refused = last === undefined ? undefined : refusalOf(attempts, last);
    if (refused !== undefined && clock.now().getTime() - clock.at(refused.sentAt) >= REFUSAL_LIFETIME_MS - CLOCK_SPREAD_MS) continue;
    const recordedBefore = recordedUnder(rows, a.partnerId, a.key as string);
    const client = HISTORY_CLIENTS.find((c) => c.clientId === a.client) as Client;
    let { attempt, done } = send(client, a.batch, a.key, true, a.intent, settler);
    await done;
    for (let waits = 0; waits < SETTLING_WAITS && (isPending(attempt.reply as Reply) || identityProviderFailed(attempt)); waits++) {
      // Not known yet (inside its key's grace, or a completion the loans refuse now): the partner waits what
      // Retry-After says and asks again, until it learns the outcome (at the latest once the key settles).
      // The identity provider's 502 is asked again at once.
      if (isPending(attempt.reply as Reply)) clock.step(Number((attempt.reply as Reply).headers['retry-after']) * 1000);
      ({ attempt, done } = send(client, a.batch, a.key, true, a.intent, settler));
      await done;
    }
    const reply = attempt.reply as Reply;
    const tag = `settling ${attempt.key} [${describeBatch(a.batch)}] answered ${summary(reply)}`;
    // The batch recorded under the key: a take answers for its batch for good (contract §9).
    const mine = recordedBefore.filter((g) => g.hash === a.hash);
    if (mine.length > 0 && !isReplay(reply))
      violations.push(`${tag}, but the batch was recorded under the key (request ${mine[0].requestId}): expected the replay`);
    if (mine.length === 0 && recordedBefore.length > 0 && reply.status === 204 && !reused.has(`${a.partnerId}|${a.key}`))
      violations.push(`${tag}, but the key had recorded another batch (request ${recordedBefore[0].requestId}): expected 400`);
    if (reply.status !== 204 && reply.status !== 400) violations.push(`${tag}: storage was healthy, expected 204 or 400`);
    if (!days.includes(drawDay(clock.now(), midnight.zone))) days.push(drawDay(clock.now(), midnight.zone));
    rows = await readRows(drawsTable, loanNumbers);
  }
  checkHistory(attempts, rows, servicer, reused, (real) => clock.at(real), spread, violations);
  await proxy.close();
  return {
    seed,
    violations: [...new Set(violations)],
    attempts,
    faults: { ...proxy.applied },
    days,
    clockSteps: steps === undefined ? 0 : clock.stepped,
    acrossSteps: attempts.filter((a) => clock.steppedBetween(a.sentAt, a.answeredAt ?? a.sentAt)).length,
    memory: schedule === 'memory',
    instances: instanceCount,
    clockSpread: Math.max(...offsets) - Math.min(...offsets),
    loanWrites: servicer.writes,
    retriedAfterLoanChange: retriedAfterLoanChange(attempts, servicer),
    refusalsAnsweredAgain: records.filter((r) => r.reason === REFUSED_BEFORE).length,
    takenOverAfterMemory: attempts.filter((a) => a.intent?.endsWith('|reuse') && a.reply !== undefined && isFresh204(a.reply)).length,
    answeredFromOldTake,
    completionsRefused: records.filter((r) => r.reason === KEY_OUTCOME_PENDING && r.errors.length > 0).length,
  };
}

/** A store that counts its commits under way: from the call (the cutoff's check is in it) until it has ended. */
function countingCommits(store: Store, underWay: { count: number }): Store {
  return overriding(store, {
    commitDraws: (...args) => {
      underWay.count += 1;
      return store.commitDraws(...args).finally(() => (underWay.count -= 1));
    },
  });
}

/** The first midnight of the business day's zone after `after` (ms), found by the day changing. */
function midnightAfter(after: number, zone: string): number {
  const today = drawDay(new Date(after), zone);
  let low = after;
  let high = after + 26 * 60 * 60_000;
  while (high - low > 1) {
    const mid = Math.floor((low + high) / 2);
    if (drawDay(new Date(mid), zone) === today) low = mid;
    else high = mid;
  }
  return high;
}

async function post(handler: HttpHandler, token: string, batch: readonly Element[], key: string | undefined): Promise<Reply> {
  const headers: Record<string, string> = { authorization: `Bearer ${token}` };
  if (key !== undefined) headers['idempotency-key'] = key;
  return invoke(handler, batch, headers);
}

interface Row {
  readonly day: string;
  readonly loanNumber: number;
  readonly amount: number;
  readonly requestor: string;
  readonly partnerId: string;
  readonly requestId: string;
  readonly key?: string;
  readonly hash?: string;
}

/** Every row of the history's loans, on whichever business day: the clock may have skipped days. */
async function readRows(table: TableClient, loanNumbers: readonly number[]): Promise<Row[]> {
  const rows: Row[] = [];
  const anyLoan = loanNumbers.map((n) => odata`RowKey eq ${String(n)}`).join(' or ');
  for await (const e of table.listEntities<Record<string, unknown>>({ queryOptions: { filter: anyLoan } })) {
    rows.push({
      day: e.partitionKey as string,
      loanNumber: Number(e.rowKey),
      amount: e.Amount as number,
      requestor: e.Requestor as string,
      partnerId: e.PartnerId as string,
      requestId: e.RequestId as string,
      key: e.IdempotencyKey as string | undefined,
      hash: e.BatchHash as string | undefined,
    });
  }
  return rows;
}

/** The batches recorded under a partner's key: rows grouped by the request that wrote them. */
function recordedUnder(rows: readonly Row[], partnerId: string, key: string): { requestId: string; hash?: string }[] {
  const groups = new Map<string, { requestId: string; hash?: string }>();
  for (const r of rows) if (r.partnerId === partnerId && r.key === key) groups.set(r.requestId, { requestId: r.requestId, hash: r.hash });
  return [...groups.values()];
}

function describeBatch(batch: readonly Element[]): string {
  return batch.map((e) => `${e.loanNumber}:${e.amount}`).join(' ');
}

/** A request-level error's detail by its name in the catalogue, so a report says which refusal it was. */
function detailName(detail: string | undefined): string {
  return Object.entries(DETAILS).find(([, text]) => text === detail)?.[0] ?? String(detail);
}

function summary(reply: Reply): string {
  if (reply.status === 204) return isReplay(reply) ? '204 replay' : '204';
  if (reply.status === 400)
    return `400 ${(reply.body?.errors ?? []).map((e: { code: string; index?: number; detail?: string }) => `${e.code}${e.index ?? ` (${detailName(e.detail)})`}`).join(',')}`;
  if (reply.status === 502) return saysNothingRecorded(reply) ? '502 nothing recorded' : '502 outcome unknown';
  return String(reply.status);
}

/**
 * The attempt whose refusal a 400 gave: itself, or, for a refusal answered again from its mark, the one
 * refused first (its refusal's 24 hours count from then). Undefined for an answer other than a 400.
 */
function refusalOf(attempts: readonly Attempt[], a: Attempt): Attempt | undefined {
  if (a.reply?.status !== 400) return undefined;
  if (a.refusedBy === undefined) return a;
  return attempts.find((b) => b.reply?.headers['x-request-id'] === a.refusedBy) ?? a;
}

/** The real instants a keyed batch's attempts span, from the first sent to this one's answer: when its reads may have been made. */
function readWindow(attempts: readonly Attempt[], a: Attempt): [number, number] {
  const end = a.answeredAt ?? a.sentAt;
  if (a.key === undefined) return [a.sentAt, end];
  const same = attempts.filter((b) => b.partnerId === a.partnerId && b.key === a.key && b.hash === a.hash && b.sentAt <= end);
  return [Math.min(...same.map((b) => b.sentAt)), end];
}

/** The codes the loan rules (the storage rules but "one draw a day") may give an element over the loan's versions in the window ('pass' when none applies). */
function possibleCodes(servicer: LoanServicer, partnerId: string, element: Element, window: [number, number]): Set<string> {
  const codes = new Set<string>();
  for (const state of servicer.visible(element.loanNumber, ...window)) {
    const loan: ModelLoan | undefined =
      state === undefined
        ? undefined
        : { partnerId: state.partnerId, creditCents: state.credit * 100, creditFraction: 0, fundingInvestorId: state.fundingInvestorId };
    const [verdict] = modelVerdicts(
      [{ loanNumber: element.loanNumber, amountCents: Math.round(element.amount * 100) }],
      new Map(loan === undefined ? [] : [[element.loanNumber, loan]]),
      new Set(),
      partnerId,
    );
    codes.add(verdict?.code ?? 'pass');
  }
  return codes;
}

/** Keyed batches sent again after one of their loans was written since the first attempt: the interleaving of contract §9's retries with the loan-servicing system. */
function retriedAfterLoanChange(attempts: readonly Attempt[], servicer: LoanServicer): number {
  const firsts = new Map<string, Attempt>();
  let count = 0;
  for (const a of attempts) {
    if (a.key === undefined) continue;
    const id = `${a.partnerId}|${a.key}|${a.hash}`;
    const first = firsts.get(id);
    if (first === undefined) firsts.set(id, a);
    else if (a.batch.some((e) => servicer.changedBetween(e.loanNumber, first.sentAt, a.sentAt))) count += 1;
  }
  return count;
}

/** Every promise to partners, checked against what storage holds. `reused`: keys a partner used again for a new batch past 48 hours. */
function checkHistory(
  attempts: readonly Attempt[],
  rows: readonly Row[],
  servicer: LoanServicer,
  reused: ReadonlySet<string>,
  clockAt: (real: number) => number,
  spread: number,
  violations: string[],
): void {
  const byRequest = new Map<string, Row[]>();
  for (const r of rows) byRequest.set(r.requestId, [...(byRequest.get(r.requestId) ?? []), r]);
  const attemptOf = new Map<string, Attempt>();
  for (const a of attempts) if (a.reply?.headers['x-request-id']) attemptOf.set(a.reply.headers['x-request-id'], a);
  const say = (a: Attempt, text: string) =>
    violations.push(`${a.client} ${a.key ?? '(no key)'} [${describeBatch(a.batch)}] answered ${a.reply ? summary(a.reply) : 'nothing'}: ${text}`);
  const recordedBatch = (a: Attempt) => recordedUnder(rows, a.partnerId, a.key ?? '').filter((g) => g.hash === a.hash);
  const answeredClock = (b: Attempt) => clockAt(b.answeredAt ?? b.sentAt);
  /** Judged within `refusal`'s 24 hours (contract §9) by every instance's clock. */
  const withinRefusalOf = (by: Attempt, refusal: Attempt) => answeredClock(by) + spread < clockAt(refusal.sentAt) + REFUSAL_LIFETIME_MS;

  for (const a of attempts) {
    const reply = a.reply;
    if (reply === undefined) {
      say(a, 'never answered');
      continue;
    }
    const problems = contractViolations(reply, a.key !== undefined);
    if (problems.length > 0) say(a, `breaks the contract: ${problems.join('; ')}`);
    if (![204, 400, 502].includes(reply.status)) say(a, 'unexpected status');
    const own = byRequest.get(reply.headers['x-request-id']) ?? [];
    const mayHaveLanded = reply.status === 502 && !saysNothingRecorded(reply);
    if (isFresh204(reply) || (mayHaveLanded && own.length > 0)) {
      // Recorded whole: one row per element, as sent, in one business day.
      const expected = a.batch.map((e) => `${e.loanNumber}:${e.amount}:${e.requestor}`).sort();
      const actual = own.map((r) => `${r.loanNumber}:${r.amount}:${r.requestor}`).sort();
      if (JSON.stringify(expected) !== JSON.stringify(actual)) say(a, `its rows are [${actual.join(' ')}], expected [${expected.join(' ')}]`);
      if (new Set(own.map((r) => r.day)).size > 1) say(a, 'its rows are spread over several days');
    } else if (own.length > 0) {
      say(a, `${own.length} row(s) were recorded under its request id`);
    }
    if (isReplay(reply) && recordedBatch(a).length === 0) say(a, 'a replay, but no batch is recorded under its key with its hash');
    if (a.key !== undefined) {
      // A definitive answer under a key is never contradicted by what an attempt of that key does afterwards:
      // a take answers for its batch for good (contract §9).
      const recorded = recordedBatch(a);
      // A refusal stands for 24 hours (contract §9): an attempt judged after that is judged anew (attempts in
      // flight across the clock's steps too: their 24 hours pass in a moment here).
      const refusal = refusalOf(attempts, a) ?? a;
      const withinRefusal = recorded.filter((g) => {
        const by = attemptOf.get(g.requestId);
        return by === undefined || withinRefusalOf(by, refusal);
      });
      if (reply.status === 400 && withinRefusal.length > 0)
        say(a, `a 400 under the key, but the batch was recorded under it (request ${withinRefusal[0].requestId})`);
      if (saysNothingRecorded(reply) && recorded.length > 0 && !identityProviderFailed(a))
        say(a, `told nothing was submitted, but the batch is recorded under its key (request ${recorded[0].requestId}): only "may have been recorded" is true`);
      // Recorded once under its key, ever: a batch that took its key is never judged anew under it.
      const recordings = recordedBatch(a);
      if (recordings.length > 1) say(a, `the batch was recorded ${recordings.length} times under its key`);
    }
    if (isKeyReused(reply)) {
      // Justified only by another batch under the key that was recorded, may have been (a 502), or was in flight meanwhile.
      const justified = attempts.some(
        (b) =>
          b !== a &&
          b.partnerId === a.partnerId &&
          b.key === a.key &&
          b.hash !== a.hash &&
          b.sentAt <= (a.answeredAt ?? Infinity) &&
          (b.reply === undefined ||
            b.reply.status === 204 ||
            b.reply.status === 502 ||
            (b.answeredAt ?? Infinity) >= a.sentAt ||
            recordedUnder(rows, b.partnerId, b.key ?? '').some((g) => g.hash === b.hash)),
      );
      if (!justified) say(a, 'refused as a reused key, but no other batch under the key was recorded, failed with 502 or was in flight');
    }
    checkRules(a, attempts, rows, servicer, say);
  }

  // Every row belongs to a request that was answered 204 or with a 502 that says the outcome is unknown.
  for (const [requestId, own] of byRequest) {
    const a = attemptOf.get(requestId);
    if (a === undefined) violations.push(`rows [${own.map((r) => `${r.day}/${r.loanNumber}`).join(' ')}] carry request id ${requestId}, which no answer names`);
  }
  // At most one row per loan per day (the table's keys guarantee it; checked all the same).
  const cells = new Set<string>();
  for (const r of rows) {
    const cell = `${r.day}/${r.loanNumber}`;
    if (cells.has(cell)) violations.push(`two rows for loan ${r.loanNumber} on ${r.day}`);
    cells.add(cell);
  }
  // At most one recorded batch per partner and key, across all days (a key reused past 48 hours may hold a second).
  const perKey = new Map<string, Set<string>>();
  for (const r of rows) {
    if (r.key === undefined) continue;
    const id = `${r.partnerId}|${r.key}`;
    perKey.set(id, (perKey.get(id) ?? new Set()).add(`${r.day} by ${r.requestId}`));
  }
  for (const [id, batches] of perKey)
    if (batches.size > (reused.has(id) ? 2 : 1)) violations.push(`key ${id} recorded ${batches.size} batches: ${[...batches].join('; ')}`);
  // A partner that does what each answer says records each batch it means once, under whichever of its keys.
  // Except a batch judged anew after its refusal's 24 hours (contract §9), by an attempt sent before the
  // refusal was answered: here an attempt can be in flight across the clock's step of a day, so the partner
  // corrects on the 400 while its retry of the refused batch is judged a day later, which no partner's
  // request lasts in a deployment (the 400 check above spares the same attempts).
  const judgedAfterItsRefusal = (by: Attempt) =>
    attempts.some((r) => {
      if (r.reply?.status !== 400 || r.key === undefined || r.key !== by.key || r.hash !== by.hash || r.partnerId !== by.partnerId) return false;
      return by.sentAt < (r.answeredAt ?? Infinity) && !withinRefusalOf(by, refusalOf(attempts, r) ?? r);
    });
  const perIntent = new Map<string, Set<string>>();
  for (const [requestId, own] of byRequest) {
    const by = attemptOf.get(requestId);
    if (by?.intent !== undefined && !judgedAfterItsRefusal(by))
      perIntent.set(by.intent, (perIntent.get(by.intent) ?? new Set()).add(`${own[0].day} by ${requestId} under ${own[0].key}`));
  }
  for (const [intent, batches] of perIntent) if (batches.size > 1) violations.push(`${intent} was recorded ${batches.size} times: ${[...batches].join('; ')}`);
}

/**
 * Each answer against what the draw rules allowed while its batch's attempts read (the loans may have
 * changed meanwhile): a batch recorded passed the loan rules (all storage rules but "one draw a day") on
 * versions of its loans that existed while the attempt that recorded it ran; a refusal listed only what some
 * version refused, and what it left out some version let pass.
 */
function checkRules(a: Attempt, attempts: readonly Attempt[], rows: readonly Row[], servicer: LoanServicer, say: (a: Attempt, text: string) => void): void {
  const reply = a.reply as Reply;
  const window = readWindow(attempts, a);
  const errors: { index?: number; code: string }[] = reply.status === 400 ? (reply.body?.errors ?? []) : [];
  if (isFresh204(reply) || rows.some((r) => r.requestId === reply.headers['x-request-id'])) {
    // The attempt that recorded a batch applied the loan rules itself, a keyed retry completing its batch too
    // (contract §9): on versions of its loans that existed while that attempt ran.
    for (const e of a.batch) {
      if (!possibleCodes(servicer, a.partnerId, e, [a.sentAt, a.answeredAt ?? a.sentAt]).has('pass'))
        say(a, `recorded, but no version of loan ${e.loanNumber} while this attempt ran lets ${e.amount} pass the rules`);
    }
    return;
  }
  if (reply.status !== 400 || errors.some((e) => e.index === undefined)) return;
  a.batch.forEach((e, i) => {
    const listed = errors.find((x) => x.index === i);
    const codes = possibleCodes(servicer, a.partnerId, e, window);
    if (listed === undefined) {
      if (errors.length > 0 && !codes.has('pass'))
        say(a, `element ${i} left out of the refusal, but no version of loan ${e.loanNumber} while it was read lets it pass`);
      return;
    }
    if (listed.code === 'PendingTransactionRequest') {
      // Already drawn (a row of another request on some day), or named earlier in the batch; and its loan passed the loan rules (all storage rules but "one draw a day").
      const earlier = a.batch.slice(0, i).some((b) => b.loanNumber === e.loanNumber);
      const drawn = rows.some((r) => r.loanNumber === e.loanNumber);
      if (!earlier && !drawn) say(a, `element ${i} refused as already drawn, but loan ${e.loanNumber} has no row`);
      if (!codes.has('pass'))
        say(a, `element ${i} refused as already drawn, but no version of loan ${e.loanNumber} passes the loan rules (all storage rules but "one draw a day")`);
      return;
    }
    if (!codes.has(listed.code))
      say(a, `element ${i} refused ${listed.code}, but no version of loan ${e.loanNumber} while it was read gives that (${[...codes].join(', ')})`);
  });
}

/** A span of the clock as hours, minutes and seconds (`24h10m0.5s`), or milliseconds below a second. */
function formatSpan(ms: number): string {
  if (ms < 1_000) return `${ms}ms`;
  const h = Math.floor(ms / 3_600_000);
  const m = Math.floor((ms % 3_600_000) / 60_000);
  const sec = (ms % 60_000) / 1000;
  return `${h > 0 ? `${h}h` : ''}${h > 0 || m > 0 ? `${m}m` : ''}${sec}s`;
}

/** A readable account of a history, printed with its seed when a check fails. */
export function describeHistory(result: HistoryResult): string {
  const t0 = Math.min(...result.attempts.map((a) => a.sentAt));
  const c0 = Math.min(...result.attempts.map((a) => a.sentClock));
  const lines = result.attempts.map(
    (a) =>
      `  +${a.sentAt - t0}ms (clock +${formatSpan(a.sentClock - c0)}) ${a.settling ? 'settle ' : ''}${a.client}@${a.instance} ${a.key ?? '(no key)'} [${describeBatch(a.batch)}] → ${a.reply ? summary(a.reply) : '?'} at +${(a.answeredAt ?? t0) - t0}ms${a.told === undefined ? '' : ` (${a.told})`}`,
  );
  const neighbours = `instances ${result.instances} (clocks ${result.clockSpread} ms apart); loan writes ${result.loanWrites}`;
  return [
    `days ${result.days.join(', ')}; clock steps ${result.clockSteps}${result.memory ? ' (past 48 hours)' : ''}; ${neighbours}; faults ${JSON.stringify(result.faults)}`,
    ...lines,
  ].join('\n');
}
