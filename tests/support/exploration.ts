/**
 * Every order, not a sample (docs/contract.md §9; issue #46): a small scope of keyed requests (two or three
 * attempts of one or two batches under one key, on one or two instances whose clocks are apart) with the
 * loan-servicing system's write and a step of the clock across a boundary of the key's life, run through the
 * service's own handler (functions/drawRequest.ts, lib/keyedBatch.ts, lib/idempotency.ts, the draw rules) on
 * the in-memory store (tests/support/memoryStore.ts, held to the real one by storeContract.test.ts).
 *
 * Each storage call waits at its gate; nothing else runs meanwhile. The explorer chooses what happens next:
 * a call carried out (and how it ends: answered, refused by storage, applied with its answer lost), an
 * attempt sent, the loan written, the clock stepped. It enumerates every such sequence depth first, and
 * prunes only orders that differ by swapping two neighbouring independent steps (sleep sets, Godefroid
 * 1996): steps on different rows, or reads of the same rows, commute; every storage call and every attempt
 * sent reads the clock, so a clock step is placed between every two of them. Each complete order is checked
 * against storage afterwards, after one more attempt of each batch (the partner asking again).
 *
 * A commit lands within seconds of its start (COMMIT_LANDS_WITHIN_MS), so the clock never steps by more
 * than that while a commit is in flight; any other call may be in flight across a step (a stalled process).
 */
import type { HttpHandler } from '@azure/functions';
import { AsyncLocalStorage } from 'node:async_hooks';
import { createDrawRequestHandler, type DrawRequestDeps } from '../../functions/drawRequest';
import type { Authenticator } from '../../lib/auth';
import { loadConfig, type Config } from '../../lib/config';
import { COMMIT_LANDS_WITHIN_MS, CLOCK_TOLERANCE_MS, KEY_GRACE_MS, KEY_LIFETIME_MS, REFUSAL_LIFETIME_MS, batchHash } from '../../lib/idempotency';
import { DETAILS, OUTCOME_UNKNOWN_DETAIL } from '../../lib/problem';
import { PartnerDirectory } from '../../lib/partners';
import { REFUSED_BEFORE, type BatchRecord } from '../../lib/telemetry';
import { contractViolations } from './contract';
import { modelVerdicts, type ModelLoan } from './drawRulesModel';
import { invoke, recordingTelemetry, type Reply } from './harness';
import { MemoryStore, MemoryTables, type Call, type Ending, type Gate } from './memoryStore';

export const PARTNER = 'EXPLORE-P';
export const OTHER_PARTNER = 'EXPLORE-Q';
/** Two client applications of the partner, one per instance (any instance may serve any client; two keep caches apart). */
const CLIENTS = ['explore-app-1', 'explore-app-2'] as const;
export const KEY = 'explore-key';
export const LOANS = { L1: 9_000_001, L2: 9_000_002 } as const;
type LoanName = keyof typeof LOANS;

/** A loan as the loan-servicing system keeps it (a credit of NaN: no `AvailableCredit`). */
export interface LoanState {
  readonly partnerId: string;
  readonly credit: number;
  readonly investor: string;
}
const FULL: LoanState = { partnerId: PARTNER, credit: 1000, investor: 'INV-1' };

/** The batches a scope sends under its key: X and Y share loan L1 (the same loan, other amounts); Z draws L2. */
export const BATCHES = {
  X: [{ loanNumber: LOANS.L1, amount: 100, requestor: 'explore@partner.example' }],
  Y: [{ loanNumber: LOANS.L1, amount: 50, requestor: 'explore@partner.example' }],
  Z: [{ loanNumber: LOANS.L2, amount: 100, requestor: 'explore@partner.example' }],
} as const;
export type BatchName = keyof typeof BATCHES;

/**
 * What happened under the key before the explored part (at the scope's `takenAt`, sequentially, storage
 * healthy unless said): nothing; X took the key and its commit was refused (503); X recorded; X recorded and
 * its rows collected (removed, as the loan-servicing system may after 48 hours); X refused by the rules (L1's
 * credit was 10 then); Y took the key unrecorded, or recorded; X took the key and lost its race on L1 to an
 * unkeyed draw.
 */
export type Setup = 'fresh' | 'takenUnrecorded' | 'recorded' | 'recordedThenCollected' | 'refused' | 'otherTaken' | 'otherRecorded' | 'lostRace';

/** Which calls may fail, and how (storage's own answers are always explored). */
export type Faults = 'none' | 'commit' | 'writes' | 'all';

export interface Scope {
  readonly name: string;
  readonly zone?: string;
  readonly setup: Setup;
  /** When the setup's request was judged (model clock, ms). */
  readonly takenAt: number;
  /** The model clock when the explored part starts, and the step it may take (once). */
  readonly start: number;
  readonly step?: number;
  /** Each instance's clock: the model clock plus this (ms). */
  readonly offsets: readonly number[];
  readonly attempts: readonly { readonly batch: BatchName; readonly instance: number }[];
  /** The loans when the explored part starts (after the setup), and the loan-servicing system's one write during it. */
  readonly loans?: Partial<Record<LoanName, LoanState>>;
  readonly loanWrite?: { readonly loan: LoanName; readonly to: LoanState | 'removed' };
  readonly faults: Faults;
}

/** One choice the explorer makes, with what it touches (for independence). */
export interface Action {
  readonly id: string;
  readonly kind: 'call' | 'send' | 'loan' | 'clock';
  readonly attempt?: number;
  /** The call it carries out (several endings of one call share it). */
  readonly call?: string;
  readonly ending?: Ending;
  readonly reads: readonly string[];
  readonly writes: readonly string[];
}

function independent(a: Action, b: Action): boolean {
  if (a.call !== undefined && a.call === b.call) return false;
  const clock = (x: Action) => x.kind === 'clock';
  const readsClock = (x: Action) => x.kind === 'call' || x.kind === 'send';
  if ((clock(a) && (readsClock(b) || clock(b))) || (clock(b) && readsClock(a))) return false;
  // Two calls of one attempt are in flight together only in its read round: two reads, which commute.
  if (a.attempt !== undefined && a.attempt === b.attempt && !(a.kind === 'call' && b.kind === 'call')) return false;
  const touches = (x: Action, cell: string) => x.reads.includes(cell) || x.writes.includes(cell);
  return !a.writes.some((c) => touches(b, c)) && !b.writes.some((c) => touches(a, c));
}

/** One attempt of a batch, sent in the explored part or by the setup or the settling. */
export interface Sent {
  readonly batch: BatchName;
  readonly instance: number;
  readonly phase: 'setup' | 'explored' | 'settling';
  /** The model clock when it was sent. */
  sentAt: number;
  reply?: Reply;
  record?: BatchRecord;
  /** The loans as its read round found them. */
  loansRead?: Map<number, LoanState | undefined>;
  /** The data-quality warnings it gave. */
  warnings?: number;
}

export interface Order {
  readonly actions: readonly string[];
  readonly sent: readonly Sent[];
  readonly violations: readonly string[];
}

const ALL_ENDINGS = (faults: Faults, call: Call): readonly Ending[] => {
  if (faults === 'all') return call.endings;
  if (faults === 'writes' && call.writes.length > 0) return call.endings;
  if (faults === 'commit' && call.method === 'commitDraws') return call.endings;
  return ['answered'];
};

const attemptOf = new AsyncLocalStorage<number>();

/** The scope's world: the tables after its setup, and what the setup sent. */
interface Prepared {
  readonly tables: MemoryTables;
  readonly setupSent: readonly Sent[];
}

const headersFor = (instance: number) => ({ authorization: `Bearer ${CLIENTS[instance % CLIENTS.length]}`, 'idempotency-key': KEY });

/** What the handler gave telemetry: each invocation's record, and its data-quality warnings by request id. */
interface Recorded {
  readonly records: BatchRecord[];
  readonly warnings: Map<string, number>;
}
const recorded = (): Recorded => ({ records: [], warnings: new Map() });

/**
 * The instances' settings for a business-day zone, read once per zone: a Config is plain read-only data,
 * and reading it (a storage client built to parse the connection string) for every instance of every order
 * was a sixth of the exploration's time.
 */
const configs = new Map<string, Config>();
function configFor(zone: string): Config {
  let config = configs.get(zone);
  if (config === undefined) {
    config = loadConfig({
      AUTH_OPENID_CONFIG_URL: 'http://localhost:1/.well-known/openid-configuration',
      AUTH_AUDIENCE: 'api://explore',
      TABLES_CONNECTION_STRING: 'UseDevelopmentStorage=true',
      DRAW_DAY_TIMEZONE: zone,
    });
    configs.set(zone, config);
  }
  return config;
}

/** The service's handler on one instance: the real one, with a stand-in only for token checks (not storage's concern). */
function instanceHandler(store: MemoryStore, now: () => Date, zone: string, into: Recorded): HttpHandler {
  const config = configFor(zone);
  const authenticator = {
    verify: (header: string | null) => Promise.resolve({ ok: true, clientId: String(header).slice('Bearer '.length), claims: {} }),
  } as unknown as Authenticator;
  const deps: DrawRequestDeps = {
    config,
    authenticator,
    partners: new PartnerDirectory(store, () => now().getTime()),
    store,
    telemetry: {
      ...recordingTelemetry((r) => into.records.push(r)),
      dataQuality: (_issue, properties) => void into.warnings.set(String(properties.requestId), (into.warnings.get(String(properties.requestId)) ?? 0) + 1),
    },
    now,
  };
  return createDrawRequestHandler(deps);
}

function loanRow(loan: LoanName, state: LoanState) {
  return {
    loanNumber: LOANS[loan],
    partnerId: state.partnerId,
    availableCredit: state.credit,
    ...(state.investor === '' ? {} : { fundingInvestorId: state.investor }),
  };
}

const text = (value: unknown) => (typeof value === 'string' ? value : '');

function loanStates(tables: MemoryTables): Map<number, LoanState | undefined> {
  const states = new Map<number, LoanState | undefined>();
  for (const n of Object.values(LOANS)) {
    const row = tables.get(tables.loans, String(n), '');
    states.set(
      n,
      row === undefined
        ? undefined
        : {
            partnerId: text(row.columns.PartnerId),
            credit: typeof row.columns.AvailableCredit === 'number' ? row.columns.AvailableCredit : Number.NaN,
            investor: text(row.columns.FundingInvestorId),
          },
    );
  }
  return states;
}

/** Runs the scope's setup once: its requests, one after another, at `takenAt`. */
async function prepare(scope: Scope): Promise<Prepared> {
  const tables = new MemoryTables();
  CLIENTS.forEach((clientId) => tables.putPartner({ clientId, partnerId: PARTNER }));
  tables.putPartner({ clientId: 'explore-unkeyed', partnerId: PARTNER });
  for (const loan of Object.keys(LOANS) as LoanName[]) tables.putLoan(loanRow(loan, FULL));
  const setupSent: Sent[] = [];
  const clock = scope.takenAt;
  const send = async (batch: BatchName, options: { failCommit?: boolean; unkeyed?: boolean } = {}) => {
    const records = recorded();
    const gate: Gate = (call) => Promise.resolve(options.failCommit === true && call.method === 'commitDraws' ? 'refused' : 'answered');
    const handler = instanceHandler(new MemoryStore(tables, () => new Date(clock), gate), () => new Date(clock), scope.zone ?? 'UTC', records);
    const headers = options.unkeyed ? { authorization: 'Bearer explore-unkeyed' } : headersFor(0);
    const reply = await invoke(handler, BATCHES[batch], headers);
    const sent: Sent = { batch, instance: 0, phase: 'setup', sentAt: clock, reply, record: records.records[0] };
    if (!options.unkeyed) setupSent.push(sent);
    return reply;
  };
  const expect = (reply: Reply, status: number, what: string) => {
    if (reply.status !== status) throw new Error(`setup ${scope.setup}: ${what} answered ${reply.status} ${reply.text}`);
  };
  switch (scope.setup) {
    case 'fresh':
      break;
    case 'takenUnrecorded':
      expect(await send('X', { failCommit: true }), 502, 'X with its commit refused');
      break;
    case 'recorded':
      expect(await send('X'), 204, 'X');
      break;
    case 'recordedThenCollected':
      expect(await send('X'), 204, 'X');
      for (const row of tables.drawRows()) tables.draws.delete(`${row.day}\u0000${row.loanNumber}`);
      break;
    case 'refused':
      tables.putLoan(loanRow('L1', { ...FULL, credit: 10 }));
      expect(await send('X'), 400, 'X on a loan of credit 10');
      tables.putLoan(loanRow('L1', FULL));
      break;
    case 'otherTaken':
      expect(await send('Y', { failCommit: true }), 502, 'Y with its commit refused');
      break;
    case 'otherRecorded':
      expect(await send('Y'), 204, 'Y');
      break;
    case 'lostRace': {
      expect(await send('X', { failCommit: true }), 502, 'X with its commit refused');
      expect(await send('Y', { unkeyed: true }), 204, 'an unkeyed draw on L1');
      expect(await send('X'), 400, 'X losing its race on L1');
      break;
    }
  }
  for (const [loan, state] of Object.entries(scope.loans ?? {})) tables.putLoan(loanRow(loan as LoanName, state));
  return { tables, setupSent };
}

/** One run of the scope along the explorer's choices: `choose` returns undefined to stop (a leaf, or an order pruned). */
async function runOnce(
  scope: Scope,
  prepared: Prepared,
  choose: (enabled: readonly Action[]) => Action | undefined,
): Promise<{ complete: boolean; order?: Order }> {
  const tables = prepared.tables.clone();
  let clock = scope.start;
  let progress = 0;
  let settling = false;
  const pending = new Map<string, { readonly attempt: number; readonly call: Call; readonly resolve: (ending: Ending) => void }>();
  const seqs = new Map<number, number>();
  const gate: Gate = (call) => {
    if (settling) return Promise.resolve('answered');
    const attempt = attemptOf.getStore() ?? -1;
    const seq = seqs.get(attempt) ?? 0;
    seqs.set(attempt, seq + 1);
    progress += 1;
    return new Promise((resolve) => pending.set(`a${attempt}.${seq}`, { attempt, call, resolve }));
  };
  const records = recorded();
  const handlers = scope.offsets.map((offset) => {
    const now = () => new Date(clock + offset);
    return instanceHandler(new MemoryStore(tables, now, gate), now, scope.zone ?? 'UTC', records);
  });
  const sent: Sent[] = scope.attempts.map((a) => ({ ...a, phase: 'explored', sentAt: Number.NaN }));
  const started = new Set<number>();
  let loanWritten = scope.loanWrite === undefined;
  let stepped = scope.step === undefined;
  const actions: string[] = [];

  const post = (i: number, s: Sent) =>
    attemptOf.run(i, () =>
      invoke(handlers[s.instance], BATCHES[s.batch], headersFor(s.instance)).then((reply) => {
        s.reply = reply;
        s.record = records.records.find((r) => r.requestId === reply.headers['x-request-id']);
        s.warnings = records.warnings.get(String(reply.headers['x-request-id'])) ?? 0;
        progress += 1;
      }),
    );
  const quiet = async () => {
    let idle = 0;
    let seen = progress;
    while (idle < 3) {
      await new Promise((r) => setImmediate(r));
      if (progress === seen) idle += 1;
      else [idle, seen] = [0, progress];
    }
  };
  const enabled = (): Action[] => {
    const list: Action[] = [];
    for (const [id, p] of pending)
      for (const ending of ALL_ENDINGS(scope.faults, p.call))
        list.push({ id: `${id}:${p.call.method}:${ending}`, kind: 'call', attempt: p.attempt, call: id, ending, reads: p.call.reads, writes: p.call.writes });
    sent.forEach((_, i) => {
      if (!started.has(i)) list.push({ id: `send${i}`, kind: 'send', attempt: i, reads: [], writes: [] });
    });
    if (!loanWritten) list.push({ id: 'loan', kind: 'loan', reads: [], writes: [`L/${LOANS[scope.loanWrite?.loan as LoanName]}`] });
    const commitInFlight = [...pending.values()].some((p) => p.call.method === 'commitDraws');
    if (!stepped && !(commitInFlight && (scope.step as number) > COMMIT_LANDS_WITHIN_MS)) list.push({ id: 'clock', kind: 'clock', reads: [], writes: [] });
    return list;
  };

  const inFlight: Promise<void>[] = [];
  for (;;) {
    const options = enabled();
    const action = choose(options);
    if (action === undefined) {
      if (options.length > 0) return { complete: false };
      break;
    }
    actions.push(action.id);
    if (action.kind === 'call') {
      const p = pending.get(action.call as string);
      if (p === undefined) throw new Error(`no call ${action.call}`);
      pending.delete(action.call as string);
      if (p.call.method === 'readBatchState') sent[p.attempt].loansRead = loanStates(tables);
      p.resolve(action.ending as Ending);
    } else if (action.kind === 'send') {
      const i = action.attempt as number;
      started.add(i);
      sent[i].sentAt = clock;
      inFlight.push(post(i, sent[i]));
    } else if (action.kind === 'loan') {
      loanWritten = true;
      const write = scope.loanWrite as NonNullable<Scope['loanWrite']>;
      tables.putLoan(write.to === 'removed' ? { loanNumber: LOANS[write.loan], removed: true } : loanRow(write.loan, write.to));
    } else {
      stepped = true;
      clock += scope.step as number;
    }
    await quiet();
  }

  const violations: string[] = [];
  if (sent.some((s) => s.reply === undefined)) violations.push(`an attempt was never answered (${sent.filter((s) => s.reply === undefined).length})`);
  // Settling: storage healthy, each batch of the scope sent once more, as a partner asking again would.
  settling = true;
  const batches = [...new Set([...prepared.setupSent.map((s) => s.batch), ...scope.attempts.map((a) => a.batch)])];
  for (const batch of batches) {
    const s: Sent = { batch, instance: 0, phase: 'settling', sentAt: clock };
    await attemptOf.run(-2, async () => {
      const reply = await invoke(handlers[0], BATCHES[batch], headersFor(0));
      s.reply = reply;
      s.record = records.records.find((r) => r.requestId === reply.headers['x-request-id']);
      s.warnings = records.warnings.get(String(reply.headers['x-request-id'])) ?? 0;
      s.loansRead = loanStates(tables);
    });
    sent.push(s);
  }
  await Promise.all(inFlight);
  const all = [...prepared.setupSent, ...sent];
  check(tables, all, violations);
  return { complete: true, order: { actions, sent: all, violations } };
}

const isReplay = (r: Reply) => r.status === 204 && r.headers['idempotent-replay'] === 'true';
const isFresh = (r: Reply) => r.status === 204 && r.headers['idempotent-replay'] === undefined;
const detailOf = (r: Reply) => r.body?.errors?.[0]?.detail as string | undefined;
const saysNothingSubmitted = (r: Reply) => r.status === 502 && r.body?.detail !== OUTCOME_UNKNOWN_DETAIL;

/** Docs/contract.md §9, and every answer, against what storage holds afterwards. */
function check(tables: MemoryTables, sent: readonly Sent[], violations: string[]): void {
  const say = (s: Sent, text: string) => violations.push(`${s.phase} ${s.batch}@${s.instance} answered ${summary(s.reply)}: ${text}`);
  const requestOf = (s: Sent) => s.reply?.headers['x-request-id'];
  const rows = tables.drawRows();
  const byRequest = new Map<string, typeof rows>();
  for (const r of rows) byRequest.set(String(r.columns.RequestId), [...(byRequest.get(String(r.columns.RequestId)) ?? []), r]);
  const senderOf = (requestId: string) => sent.find((s) => requestOf(s) === requestId);
  const hashOf = (b: BatchName) => batchHash(BATCHES[b]);
  /** The requests that recorded batch `b` under the key. */
  const recordings = (b: BatchName) =>
    [...byRequest].filter(([, own]) => own.some((r) => r.columns.IdempotencyKey === KEY && r.columns.BatchHash === hashOf(b))).map(([id]) => id);

  for (const b of Object.keys(BATCHES) as BatchName[]) {
    const by = recordings(b);
    if (by.length > 1) violations.push(`batch ${b} was recorded ${by.length} times under the key (${by.join(', ')})`);
  }
  // At most one batch recorded while the key is bound: two batches under it were taken at least its lifetime and grace apart.
  const taken = (Object.keys(BATCHES) as BatchName[]).filter((b) => recordings(b).length > 0).map((b) => ({ b, at: takenAt(tables, b) }));
  for (const x of taken)
    for (const y of taken)
      if (x.b < y.b && Math.abs(x.at - y.at) < KEY_LIFETIME_MS + KEY_GRACE_MS - CLOCK_TOLERANCE_MS)
        violations.push(`batches ${x.b} and ${y.b} were both recorded under the key, taken ${Math.abs(x.at - y.at)} ms apart`);

  for (const s of sent) {
    const reply = s.reply;
    if (reply === undefined) continue;
    const problems = contractViolations(reply, true);
    if (problems.length > 0) say(s, `breaks the contract: ${problems.join('; ')}`);
    if ((s.warnings ?? 0) > 1) say(s, `${s.warnings} data-quality warnings for one request`);
    const own = byRequest.get(String(requestOf(s))) ?? [];
    // The setup's rows are as it left them (collected, in one of them): only its answers are checked.
    if (s.phase !== 'setup' && (isFresh(reply) || (reply.status === 502 && own.length > 0))) {
      if (own.length !== BATCHES[s.batch].length || new Set(own.map((r) => r.day)).size !== 1)
        say(s, `its rows are ${own.length}, over ${new Set(own.map((r) => r.day)).size} day(s)`);
      checkRulesPassed(s, say);
    } else if (s.phase !== 'setup' && own.length > 0) say(s, `${own.length} row(s) carry its request id`);
    if (isReplay(reply) && recordings(s.batch).length === 0) say(s, 'a replay, but the batch is not recorded under the key');
    if (saysNothingSubmitted(reply)) say(s, 'a keyed request told nothing was submitted');
    if (reply.status === 400) {
      // A 400 means no attempt of the batch records it under the key (contract §9), unless one judged after
      // the refusal's 24 hours (by every clock): whether it landed before or after the 400 was answered.
      const first = s.record?.reason === REFUSED_BEFORE ? sent.find((o) => requestOf(o) === s.record?.reasonDetail) : s;
      const refusedAt = first?.sentAt ?? s.sentAt;
      for (const id of recordings(s.batch)) {
        const by = senderOf(id);
        if (by === undefined || by.sentAt < refusedAt + REFUSAL_LIFETIME_MS - CLOCK_TOLERANCE_MS)
          say(
            s,
            `a 400, but the batch is recorded under the key by ${by === undefined ? id : `${by.phase} ${by.batch}@${by.instance}, sent ${by.sentAt - refusedAt} ms after the refusal`}`,
          );
      }
      if (s.record?.reason !== REFUSED_BEFORE && s.loansRead !== undefined) checkRefusal(s, say);
    }
  }
  // The settling attempts say what storage holds: the replay exactly when the batch is recorded (unless its rows were collected).
  for (const s of sent.filter((x) => x.phase === 'settling')) {
    const recorded = recordings(s.batch).filter((id) => id !== requestOf(s)).length > 0;
    if (recorded && !isReplay(s.reply as Reply)) say(s, 'the batch is recorded under the key: expected the replay');
  }
}

function takenAt(tables: MemoryTables, b: BatchName): number {
  const own = tables.keyRows(PARTNER, KEY).find((r) => r.rowKey === batchHash(BATCHES[b]));
  const at = own?.columns.TakenAt;
  return at instanceof Date ? at.getTime() : Number.NaN;
}

/** A refusal by the rules lists, for each element, what the loans its read round found give it (or a lost race). */
function checkRefusal(s: Sent, say: (s: Sent, text: string) => void): void {
  const errors: { index?: number; code: string }[] = s.reply?.body?.errors ?? [];
  if (errors.some((e) => e.index === undefined)) return;
  const verdicts = modelVerdicts(
    BATCHES[s.batch].map((e) => ({ loanNumber: e.loanNumber, amountCents: e.amount * 100 })),
    modelLoans(s),
    new Set(),
    PARTNER,
  );
  for (const e of errors)
    if (e.code !== 'PendingTransactionRequest' && verdicts[e.index as number]?.code !== e.code)
      say(s, `element ${e.index} refused ${e.code}, but the loans it read give ${verdicts[e.index as number]?.code ?? 'no error'}`);
}

function modelLoans(s: Sent) {
  const loans = new Map<number, ModelLoan>();
  for (const [n, state] of s.loansRead ?? [])
    if (state !== undefined)
      loans.set(n, {
        partnerId: state.partnerId,
        creditCents: Number.isFinite(state.credit) ? Math.round(state.credit * 100) : undefined,
        creditFraction: 0,
        fundingInvestorId: state.investor,
      });
  return loans;
}

/** The attempt that recorded a batch applied the loan rules on the loans as its read round found them (contract §9). */
function checkRulesPassed(s: Sent, say: (s: Sent, text: string) => void): void {
  const verdicts = modelVerdicts(
    BATCHES[s.batch].map((e) => ({ loanNumber: e.loanNumber, amountCents: e.amount * 100 })),
    modelLoans(s),
    new Set(),
    PARTNER,
  );
  const refused = verdicts.filter((v) => v !== undefined);
  if (refused.length > 0) say(s, `recorded, but the loans it read refuse it (${refused.map((v) => v?.code).join(', ')})`);
}

function summary(reply: Reply | undefined): string {
  if (reply === undefined) return 'nothing';
  if (reply.status === 204) return isReplay(reply) ? '204 replay' : '204';
  if (reply.status === 400) {
    const detail = detailOf(reply);
    const name = Object.entries(DETAILS).find(([, text]) => text === detail)?.[0];
    return `400 ${name ?? (reply.body?.errors ?? []).map((e: { code: string }) => e.code).join(',')}`;
  }
  if (reply.status === 502)
    return saysNothingSubmitted(reply) ? '502 nothing submitted' : `502 outcome unknown (Retry-After ${reply.headers['retry-after'] ?? '-'})`;
  return String(reply.status);
}

export interface Explored {
  readonly scope: string;
  /** Complete orders explored (each checked), and orders cut short because every next step was already covered. */
  readonly orders: number;
  readonly pruned: number;
  readonly ms: number;
  /** The first orders that broke a promise (at most `keep`), each with its steps and answers. */
  readonly broken: readonly Order[];
  readonly brokenCount: number;
  /** How often each answer occurred, over every order. */
  readonly answers: Readonly<Record<string, number>>;
}

/** Explores every order of `scope`, depth first with sleep sets; stops after `maxOrders` (a scope that large is not small). */
export async function explore(scope: Scope, options: { keep?: number; maxOrders?: number } = {}): Promise<Explored> {
  const started = performance.now();
  const prepared = await prepare(scope);
  interface Frame {
    readonly enabled: readonly Action[];
    readonly sleep: readonly Action[];
    readonly done: Action[];
    chosen: Action;
  }
  const stack: Frame[] = [];
  let orders = 0;
  let pruned = 0;
  let brokenCount = 0;
  const broken: Order[] = [];
  const answers: Record<string, number> = {};
  const asleep = (list: readonly Action[], a: Action) => list.some((s) => s.id === a.id);
  for (;;) {
    let depth = 0;
    const result = await runOnce(scope, prepared, (enabled) => {
      if (depth < stack.length) {
        const frame = stack[depth++];
        const again = enabled.find((a) => a.id === frame.chosen.id);
        if (again === undefined) throw new Error(`the run did not repeat itself: ${frame.chosen.id} is not enabled at depth ${depth - 1}`);
        return again;
      }
      const parent = stack[depth - 1];
      const sleep = parent === undefined ? [] : [...parent.sleep, ...parent.done].filter((s) => independent(s, parent.chosen));
      const next = enabled.find((a) => !asleep(sleep, a));
      if (next === undefined) return undefined;
      stack.push({ enabled, sleep, done: [], chosen: next });
      depth += 1;
      return next;
    });
    if (result.complete && result.order !== undefined) {
      orders += 1;
      for (const s of result.order.sent)
        if (s.phase !== 'setup') answers[`${s.phase} ${summary(s.reply)}`] = (answers[`${s.phase} ${summary(s.reply)}`] ?? 0) + 1;
      if (result.order.violations.length > 0) {
        brokenCount += 1;
        if (broken.length < (options.keep ?? 3)) broken.push(result.order);
      }
    } else pruned += 1;
    if (orders >= (options.maxOrders ?? Infinity)) break;
    // Backtrack: the deepest choice with an order left to try.
    while (stack.length > 0) {
      const frame = stack[stack.length - 1];
      frame.done.push(frame.chosen);
      const next = frame.enabled.find((a) => !asleep(frame.sleep, a) && !asleep(frame.done, a));
      if (next !== undefined) {
        frame.chosen = next;
        break;
      }
      stack.pop();
    }
    if (stack.length === 0) break;
  }
  return { scope: scope.name, orders, pruned, ms: Math.round(performance.now() - started), broken, brokenCount, answers };
}

/** A broken order, readable: its steps and every answer. */
export function describeOrder(order: Order): string {
  const answers = order.sent.map(
    (s) =>
      `  ${s.phase} ${s.batch}@${s.instance} sent at ${new Date(s.sentAt).toISOString()} → ${summary(s.reply)}${s.record?.reason ? ` (${s.record.reason} ${s.record.reasonDetail ?? ''})` : ''}`,
  );
  return [`  steps: ${order.actions.join(' → ')}`, ...answers, ...order.violations.map((v) => `  ✗ ${v}`)].join('\n');
}
