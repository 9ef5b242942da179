/**
 * Generated histories (docs/contract.md §9): several clients of two partners send keyed and unkeyed
 * batches over overlapping loans and retry after any answer, or without waiting for one; a chaos proxy
 * between the service and a real Azurite decides each storage request's fate; the service's clock
 * crosses a midnight (UTC, or a zone whose clocks change that night) while requests are in flight.
 * Afterwards storage is read directly and every promise made to partners is checked against it.
 *
 * One seed fixes a history's plan: clients, batches, retries, faults and clock. The interleaving
 * still depends on timing, so a seed reproduces the plan, and the checks hold for every interleaving.
 */
import type { HttpHandler } from '@azure/functions';
import { TableClient, odata } from '@azure/data-tables';
import { createDependencies, createDrawRequestHandler } from '../../functions/drawRequest';
import { loadConfig, type Settings } from '../../lib/config';
import { KEY_GRACE_MS, KEY_LIFETIME_MS, batchHash } from '../../lib/idempotency';
import { DETAILS } from '../../lib/problem';
import { drawDay, type StoreTimeouts } from '../../lib/store';
import { createTables, putLoan, putPartner, tableClient, tableSettings } from '../../dev/demoData';
import { startChaosProxy, type Fault, type StorageRequestKind } from './chaosProxy';
import { contractViolations } from './contract';
import { UNHURRIED_TIMEOUTS, invoke, recordingTelemetry, type Harness, type Reply } from './harness';

/** Midnights to cross: UTC; Santiago, whose clocks jump from 24:00 to 01:00 that night; New York, whose clocks go back at 02:00. */
export const MIDNIGHTS = [
  { zone: 'UTC', midnight: Date.parse('2026-11-24T00:00:00Z') },
  { zone: 'America/Santiago', midnight: Date.parse('2026-09-06T04:00:00Z') },
  { zone: 'America/New_York', midnight: Date.parse('2026-11-01T04:00:00Z') },
] as const;

/**
 * The service's clock in a history: it starts near a midnight and runs at the real pace, and in a
 * key-lifetime history it also steps forward twice while requests are in flight, so that attempts are
 * judged, read and commit on both sides of a key's 24th hour and of the end of its grace (docs/contract.md §9).
 * `at` maps a real instant back to what the clock read then, for the checks.
 */
export class HistoryClock {
  private readonly startedAt = Date.now();
  /** Real instants at which the clock stepped, and by how much in all from then on. */
  private readonly steps: { readonly real: number; readonly offset: number }[] = [{ real: -Infinity, offset: 0 }];
  constructor(private readonly start: number) {}

  now = (): Date => new Date(this.at(Date.now()));

  at(real: number): number {
    let offset = 0;
    for (const s of this.steps) if (s.real <= real) offset = s.offset;
    return this.start + (real - this.startedAt) + offset;
  }

  step(ms: number): void {
    this.steps.push({ real: Date.now(), offset: this.steps[this.steps.length - 1].offset + ms });
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
 * grace's end. Between the last two, every storage request in flight reaches storage or is dropped:
 * in real time five minutes pass there, and no request is in flight that long (its deadline destroys it).
 * The first step comes once the clients have sent a few attempts (so keys are taken).
 */
function lifetimeSteps(random: Random) {
  const beforeGraceEnd = random.int(0, 600);
  return {
    afterAttempts: random.int(1, 4),
    firstMs: random.int(0, 250),
    thenMs: random.int(40, 450),
    lifetimeMs: KEY_LIFETIME_MS - random.int(0, 600),
    pastCutoffMs: KEY_GRACE_MS / 2 + 700,
    toGraceEndMs: KEY_GRACE_MS / 2 - 700 - beforeGraceEnd,
  };
}

/** The clients: two per partner, each a separate client application. */
export const HISTORY_CLIENTS = [
  { clientId: 'history-app-a1', partnerId: 'HISTORY-A' },
  { clientId: 'history-app-a2', partnerId: 'HISTORY-A' },
  { clientId: 'history-app-b1', partnerId: 'HISTORY-B' },
  { clientId: 'history-app-b2', partnerId: 'HISTORY-B' },
] as const;

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
  /** What the partner means to record: one intent is one batch, however often it is resent or corrected, under whichever key. */
  readonly intent?: string;
  answeredAt?: number;
  reply?: Reply;
}

export interface HistoryResult {
  readonly seed: number;
  readonly violations: string[];
  readonly attempts: Attempt[];
  readonly faults: Record<string, number>;
  /** The business days the history's clock spanned. */
  readonly days: string[];
  /** How often the clock stepped across a key's lifetime or grace (0 in a midnight-only history). */
  readonly clockSteps: number;
  /** Attempts sent before a step of the clock and answered after it: judged, read or committed across it. */
  readonly acrossSteps: number;
}

let loanBase = 50_000_000 + Math.floor(Math.random() * 1_000_000) * 100;

const isReplay = (r: Reply) => r.status === 204 && r.headers['idempotent-replay'] === 'true';
const isFresh204 = (r: Reply) => r.status === 204 && r.headers['idempotent-replay'] === undefined;
const isKeyReused = (r: Reply) => r.status === 400 && r.body?.errors?.[0]?.detail === DETAILS.idempotencyKeyReused;
/** The 502 of a key in its grace: outcome not known yet, with the seconds until it is (contract §9). */
const isPending = (r: Reply) => r.status === 502 && !saysNothingRecorded(r) && r.headers['retry-after'] !== undefined;
const isKeyExpired = (r: Reply) => r.status === 400 && r.body?.errors?.[0]?.detail === DETAILS.idempotencyKeyExpired;
/** A 502 that tells the partner nothing was recorded (the others say the outcome is unknown). */
const saysNothingRecorded = (r: Reply) => r.status === 502 && /nothing was (submitted|recorded)/.test(String(r.body?.detail));

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

/** Runs the history of `seed` and checks it; an empty `violations` means every promise held. */
export async function runHistory(world: HistoryWorld, seed: number, index = 0): Promise<HistoryResult> {
  const tables = await tableSet(world, Math.floor(index / HISTORIES_PER_TABLE_SET));
  const random = new Random(seed);
  const { harness } = world;
  const midnight = random.pick(MIDNIGHTS);
  // Storage faults come from their own stream, so the clients' plan does not shift with their count.
  const faultRandom = new Random(seed ^ 0x5bd1e995);
  const level = random.pick([0, 0.15, 0.3, 0.5]);

  // The clock starts shortly before midnight and runs at the real pace; in a third of the histories it
  // also steps across a key's lifetime and grace while requests are in flight.
  const clockStart = midnight.midnight - random.int(0, 900);
  const clock = new HistoryClock(clockStart);
  const now = clock.now;
  const steps = random.chance(1 / 3) ? lifetimeSteps(random) : undefined;
  let stepTimer: Promise<void> | undefined;
  const takeSteps = async () => {
    if (steps === undefined) return;
    await sleep(steps.firstMs);
    clock.step(steps.lifetimeMs);
    await sleep(steps.thenMs);
    clock.step(steps.pastCutoffMs);
    await proxy.drained();
    clock.step(steps.toGraceEndMs);
  };

  const proxy = await startChaosProxy(harness.azurite.port);
  proxy.decide = (kind) => faultFor(faultRandom, level, kind);
  const settings: Settings = { ...harness.settingsVia(proxy.port), ...tables, DRAW_DAY_TIMEZONE: midnight.zone };
  const table = (name: string) => tableClient(harness.azurite.connectionString, name);
  const handlerWith = (timeouts: StoreTimeouts, settingsUsed: Settings): HttpHandler => {
    const config = loadConfig(settingsUsed);
    const deps = createDependencies(config, { timeouts, telemetry: recordingTelemetry(() => undefined) });
    // Only the business day follows the injected clock; tokens are checked against real time.
    return createDrawRequestHandler({ ...deps, now });
  };
  const handler = handlerWith(TIMEOUTS, settings);

  // Loans: three of each partner with room, one of partner A with little credit.
  const loans: { loanNumber: number; partnerId: string; credit: number }[] = [];
  for (const [partnerId, credit] of [
    ['HISTORY-A', 1000],
    ['HISTORY-A', 1000],
    ['HISTORY-A', 1000],
    ['HISTORY-A', 50],
    ['HISTORY-B', 1000],
    ['HISTORY-B', 1000],
  ] as const) {
    loanBase += 1;
    loans.push({ loanNumber: loanBase, partnerId, credit });
  }
  await Promise.all(
    loans.map((l) =>
      putLoan(table(tables.LOANS_TABLE as string), { loanNumber: l.loanNumber, partnerId: l.partnerId, availableCredit: l.credit, fundingInvestorId: 'INV-1' }),
    ),
  );

  const attempts: Attempt[] = [];
  const inFlight: Promise<void>[] = [];
  const send = (
    client: (typeof HISTORY_CLIENTS)[number],
    batch: readonly Element[],
    key: string | undefined,
    h: HttpHandler,
    settling = false,
    intent?: string,
  ) => {
    const attempt: Attempt = { client: client.clientId, partnerId: client.partnerId, key, batch, hash: batchHash(batch), sentAt: Date.now(), settling, intent };
    attempts.push(attempt);
    if (steps !== undefined && !settling && stepTimer === undefined && attempts.length >= steps.afterAttempts) stepTimer = takeSteps();
    const done = post(h, world.tokens.get(client.clientId) as string, batch, key).then((reply) => {
      attempt.reply = reply;
      attempt.answeredAt = Date.now();
    });
    inFlight.push(done);
    return { attempt, done };
  };

  const clientCount = random.int(2, 4);
  const chosen = [HISTORY_CLIENTS[0], HISTORY_CLIENTS[2], HISTORY_CLIENTS[1], HISTORY_CLIENTS[3]].slice(0, clientCount);
  const plans = chosen.map((client, c) => {
    const own = loans.filter((l) => l.partnerId === client.partnerId);
    const intents = Array.from({ length: random.int(1, 3) }, (_, i) => ({
      key: random.chance(0.75) ? `h${seed}-c${c}-i${i}` : undefined,
      batch: Array.from({ length: random.int(1, 3) }, () => ({
        loanNumber: (random.chance(0.9) ? random.pick(own) : random.pick(loans)).loanNumber,
        amount: random.int(10, 80),
        requestor: `${client.clientId}@partner.example`,
      })),
      gapMs: random.int(0, 40),
      choiceSeed: Math.floor(random.next() * 2 ** 32),
    }));
    return { client, intents };
  });

  await Promise.all(
    plans.map(async ({ client, intents }) => {
      for (const [i, intent] of intents.entries()) {
        await sleep(intent.gapMs);
        let batch = intent.batch;
        let key = intent.key;
        const choices = new Random(intent.choiceSeed);
        const intentId = key === undefined ? undefined : `${client.clientId}|${i}`;
        for (let tries = 0; tries < (steps === undefined ? 4 : 6); tries++) {
          const { attempt, done } = send(client, batch, key, handler, false, intentId);
          // Some clients stop waiting (their answer is lost to them) and retry while the first is in flight.
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
            if (choices.chance(0.2)) send(client, batch, key, handler, false, intentId);
            break;
          }
          if (isKeyExpired(reply)) {
            // The partner does what the answer says: the same batch under a new key.
            key = `${intent.key}-t${tries}`;
            continue;
          }
          if (reply.status === 400 && key !== undefined && !isKeyReused(reply) && choices.chance(0.5)) {
            // The partner corrects the batch (drops what was refused) and sends it under the same key.
            const refused = new Set<number>((reply.body?.errors ?? []).map((e: { index?: number }) => e.index));
            const corrected = batch.filter((_, i) => !refused.has(i));
            if (corrected.length === 0 || corrected.length === batch.length) break;
            batch = corrected;
            continue;
          }
          break;
        }
      }
    }),
  );
  await Promise.all(inFlight);
  // Steps the clients finished before are taken now, so that the settling below is judged past them.
  await (stepTimer ??= takeSteps());
  await proxy.idle();

  const violations: string[] = [];
  const days = [...new Set([drawDay(new Date(clockStart), midnight.zone), drawDay(now(), midnight.zone)])];
  const drawsTable = table(tables.DRAWS_TABLE as string);
  const loanNumbers = loans.map((l) => l.loanNumber);
  let rows = await readRows(drawsTable, loanNumbers);
  checkHistory(attempts, rows, violations);

  // Settling: with storage healthy, every keyed batch is sent once more; each must end in the replay
  // when it was recorded, or otherwise in an answer that agrees with storage.
  proxy.decide = () => ({ kind: 'pass' });
  // Its bounds are not what is tested here: a settling answer must say how the batch ended, and on a busy
  // machine a read took over 5 s with storage healthy (a 502 then proves nothing either way).
  const settler = handlerWith(UNHURRIED_TIMEOUTS, settings);
  // Past a key's grace a different batch under it is a new submission (§9), so there each key is settled
  // with the last batch its partner sent under it, as a partner's own retry would; within it, with every one.
  const keyedBatches = new Map<string, Attempt>();
  for (const a of attempts) if (a.key !== undefined) keyedBatches.set(steps === undefined ? `${a.partnerId}|${a.key}|${a.hash}` : `${a.partnerId}|${a.key}`, a);
  for (const a of keyedBatches.values()) {
    const recordedBefore = recordedUnder(rows, a.partnerId, a.key as string);
    const client = HISTORY_CLIENTS.find((c) => c.clientId === a.client) as (typeof HISTORY_CLIENTS)[number];
    let { attempt, done } = send(client, a.batch, a.key, settler, true, a.intent);
    await done;
    if (isPending(attempt.reply as Reply)) {
      // Inside its key's grace: the partner waits what Retry-After says, and then learns the outcome.
      clock.step(Number((attempt.reply as Reply).headers['retry-after']) * 1000);
      ({ attempt, done } = send(client, a.batch, a.key, settler, true, a.intent));
      await done;
    }
    const reply = attempt.reply as Reply;
    const tag = `settling ${attempt.key} [${describeBatch(a.batch)}] answered ${summary(reply)}`;
    const mine = recordedBefore.filter((g) => g.hash === a.hash);
    if (mine.length > 0 && !isReplay(reply))
      violations.push(`${tag}, but the batch was recorded under the key (request ${mine[0].requestId}): expected the replay`);
    if (mine.length === 0 && recordedBefore.length > 0 && !isKeyReused(reply))
      violations.push(`${tag}, but the key had recorded another batch (request ${recordedBefore[0].requestId}): expected 400 key reused`);
    if (reply.status !== 204 && reply.status !== 400) violations.push(`${tag}: storage was healthy, expected 204 or 400`);
    // A refusal stands for the rest of its business day: the same batch under the same key is refused
    // again. Except after a 502 of that batch (contract §9): its take of the key may reach storage after
    // the refusal was judged, binding the key to the batch in its earlier day, where a retry completes it.
    const today = drawDay(now(), midnight.zone);
    const dayAt = (t: number) => drawDay(new Date(clock.at(t)), midnight.zone);
    const sameBatch = (b: Attempt) => !b.settling && b.key === a.key && b.partnerId === a.partnerId && b.hash === a.hash;
    const refusedToday = attempts.some(
      (b) =>
        sameBatch(b) &&
        b.reply?.status === 400 &&
        !isKeyReused(b.reply) &&
        dayAt(b.sentAt) === today &&
        dayAt(b.answeredAt ?? b.sentAt) === today &&
        !attempts.some((c) => sameBatch(c) && c.reply?.status === 502 && c.sentAt < (b.answeredAt ?? b.sentAt)),
    );
    if (refusedToday && mine.length === 0 && reply.status === 204)
      violations.push(`${tag}, but the same batch under this key was refused earlier the same day: expected the same 400`);
    if (!days.includes(today)) days.push(today);
    rows = await readRows(drawsTable, loanNumbers);
  }
  checkHistory(attempts, rows, violations);
  await proxy.close();
  return {
    seed,
    violations: [...new Set(violations)],
    attempts,
    faults: { ...proxy.applied },
    days,
    clockSteps: clock.stepped,
    acrossSteps: attempts.filter((a) => clock.steppedBetween(a.sentAt, a.answeredAt ?? a.sentAt)).length,
  };
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
  {
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

function summary(reply: Reply): string {
  if (reply.status === 204) return isReplay(reply) ? '204 replay' : '204';
  if (reply.status === 400) return `400 ${(reply.body?.errors ?? []).map((e: { code: string; index?: number }) => `${e.code}${e.index ?? ''}`).join(',')}`;
  if (reply.status === 502) return saysNothingRecorded(reply) ? '502 nothing recorded' : '502 outcome unknown';
  return String(reply.status);
}

/** Every promise to partners, checked against what storage holds. */
function checkHistory(attempts: readonly Attempt[], rows: readonly Row[], violations: string[]): void {
  const byRequest = new Map<string, Row[]>();
  for (const r of rows) byRequest.set(r.requestId, [...(byRequest.get(r.requestId) ?? []), r]);
  const attemptOf = new Map<string, Attempt>();
  for (const a of attempts) if (a.reply?.headers['x-request-id']) attemptOf.set(a.reply.headers['x-request-id'], a);
  const say = (a: Attempt, text: string) =>
    violations.push(`${a.client} ${a.key ?? '(no key)'} [${describeBatch(a.batch)}] answered ${a.reply ? summary(a.reply) : 'nothing'}: ${text}`);

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
    if (isReplay(reply)) {
      const recorded = recordedUnder(rows, a.partnerId, a.key ?? '').filter((g) => g.hash === a.hash);
      if (recorded.length === 0) say(a, 'a replay, but no batch is recorded under its key with its hash');
    }
    if (isKeyExpired(reply) && recordedUnder(rows, a.partnerId, a.key ?? '').some((g) => g.hash === a.hash))
      say(a, 'told the key expired before the batch was recorded under it, but it was recorded under the key');
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
  // At most one recorded batch per partner and key, across all days.
  const perKey = new Map<string, Set<string>>();
  for (const r of rows) {
    if (r.key === undefined) continue;
    const id = `${r.partnerId}|${r.key}`;
    perKey.set(id, (perKey.get(id) ?? new Set()).add(`${r.day} by ${r.requestId}`));
  }
  for (const [id, batches] of perKey) if (batches.size > 1) violations.push(`key ${id} recorded ${batches.size} batches: ${[...batches].join('; ')}`);
  // A partner that does what each answer says records each batch it means once, under whichever of its keys.
  const perIntent = new Map<string, Set<string>>();
  for (const [requestId, own] of byRequest) {
    const intent = attemptOf.get(requestId)?.intent;
    if (intent !== undefined) perIntent.set(intent, (perIntent.get(intent) ?? new Set()).add(`${own[0].day} by ${requestId} under ${own[0].key}`));
  }
  for (const [intent, batches] of perIntent) if (batches.size > 1) violations.push(`${intent} was recorded ${batches.size} times: ${[...batches].join('; ')}`);
}

/** A readable account of a history, printed with its seed when a check fails. */
export function describeHistory(result: HistoryResult): string {
  const t0 = Math.min(...result.attempts.map((a) => a.sentAt));
  const lines = result.attempts.map(
    (a) =>
      `  +${a.sentAt - t0}ms ${a.settling ? 'settle ' : ''}${a.client} ${a.key ?? '(no key)'} [${describeBatch(a.batch)}] → ${a.reply ? summary(a.reply) : '?'} at +${(a.answeredAt ?? t0) - t0}ms`,
  );
  return [`days ${result.days.join(', ')}; clock steps ${result.clockSteps}; faults ${JSON.stringify(result.faults)}`, ...lines].join('\n');
}
