/**
 * One suite, two stores: the service's TableStore against a real Azurite, and the in-memory store the
 * exhaustive exploration runs on (tests/support/memoryStore.ts). Every behaviour the key's promises stand on
 * (docs/contract.md §4.1, §4.2, §9) is asserted of both, so the exploration's findings hold of the real store.
 */
import { randomUUID } from 'node:crypto';
import { createTables, putLoan, putPartner, putStop, tableClient, tablesNamed, type DemoLoan } from '../../dev/demoData';
import { startAzurite, type Azurite } from '../../dev/azurite';
import { batchHash, keyRecordId, type KeyRecord, type KeyState, type Versioned } from '../../lib/idempotency';
import { TableStore, type CommitContext, type DrawRow, type Refusal, type Store } from '../../lib/store';
import { MemoryStore, MemoryTables } from '../support/memoryStore';

/** A store under test, its clock, and how the suite writes and reads rows beside it (as the neighbours do). */
interface Subject {
  readonly store: Store;
  setClock(ms: number): void;
  loan(loan: DemoLoan): Promise<void>;
  partner(partner: { clientId: string; partnerId?: string; active?: boolean }): Promise<void>;
  stop(clientId: string): Promise<void>;
  /** A key row written as by another writer (a row missing columns, say). */
  keyRow(partnerId: string, key: string, rowKey: string, columns: Record<string, unknown>): Promise<void>;
  /** The key's rows: RowKey "" is "holder", a batch's row its `State`. */
  keyRows(partnerId: string, key: string): Promise<string[]>;
  /** A day's rows of these loans: loan → RequestId. */
  draws(day: string, loanNumbers: readonly string[]): Promise<Record<string, unknown>>;
}

let azurite: Azurite;
beforeAll(async () => {
  azurite = await startAzurite();
});
afterAll(() => azurite.stop());

let sets = 0;
async function onAzurite(): Promise<Subject> {
  const tables = tablesNamed(`StoreSuite${process.pid}n${++sets}`);
  await createTables(azurite.connectionString, tables);
  let clock = Date.parse('2031-06-01T10:00:00Z');
  const store = new TableStore({ ...tables, connectionString: azurite.connectionString }, undefined, undefined, false, () => new Date(clock));
  const client = (name: string) => tableClient(azurite.connectionString, name);
  return {
    store,
    setClock: (ms) => (clock = ms),
    loan: (loan) => putLoan(client(tables.loansTable), loan),
    partner: (partner) => putPartner(client(tables.partnersTable), partner),
    stop: (clientId) => putStop(client(tables.stoppedClientsTable), clientId),
    keyRow: async (partnerId, key, rowKey, columns) => {
      await client(tables.idempotencyTable).createEntity({ partitionKey: keyRecordId(partnerId, key), rowKey, ...columns });
    },
    keyRows: async (partnerId, key) => {
      const rows: string[] = [];
      for await (const row of client(tables.idempotencyTable).listEntities({ queryOptions: { filter: `PartitionKey eq '${keyRecordId(partnerId, key)}'` } }))
        rows.push(row.rowKey === '' ? 'holder' : String(row.State));
      return rows.sort();
    },
    draws: async (day, loanNumbers) => {
      const found: Record<string, unknown> = {};
      for (const n of loanNumbers) {
        const row = await client(tables.drawsTable)
          .getEntity(day, n)
          .catch(() => undefined);
        if (row !== undefined) found[n] = row.RequestId;
      }
      return found;
    },
  };
}

function inMemory(): Promise<Subject> {
  const tables = new MemoryTables();
  let clock = Date.parse('2031-06-01T10:00:00Z');
  return Promise.resolve({
    store: new MemoryStore(tables, () => new Date(clock)),
    setClock: (ms) => (clock = ms),
    loan: (loan) => Promise.resolve(tables.putLoan(loan)),
    partner: (partner) => Promise.resolve(tables.putPartner(partner)),
    stop: (clientId) => Promise.resolve(tables.putStop(clientId)),
    keyRow: (partnerId, key, rowKey, columns) => Promise.resolve(tables.put(tables.keys, keyRecordId(partnerId, key), rowKey, columns)),
    keyRows: (partnerId, key) =>
      Promise.resolve(
        tables
          .keyRows(partnerId, key)
          .map((r) => (r.rowKey === '' ? 'holder' : String(r.columns.State)))
          .sort(),
      ),
    draws: (day, loanNumbers) =>
      Promise.resolve(
        Object.fromEntries(
          loanNumbers.flatMap((n) =>
            tables
              .drawRows()
              .filter((r) => r.day === day && r.loanNumber === n)
              .map((r) => [n, r.columns.RequestId]),
          ),
        ),
      ),
  });
}

const DAY = '2031-06-01';
const row = (loanNumber: number, batchIndex = 0): DrawRow => ({ loanNumber, amount: 25, requestor: 'suite@partner.example', batchIndex });
const context = (requestId: string, extra: Partial<CommitContext> = {}): CommitContext => ({
  day: DAY,
  partnerId: 'P',
  clientId: 'c',
  requestId,
  submittedAt: new Date(Date.parse('2031-06-01T10:00:00Z')),
  ...extra,
});
const record = (key: string, hash: string, requestId = 'r1'): KeyRecord => ({
  partnerId: 'P',
  key,
  hash,
  day: DAY,
  loanNumbers: ['1'],
  requestId,
  takenAt: new Date(Date.parse('2031-06-01T10:00:00Z')),
});
const refusal = (requestId: string): Refusal => ({
  errors: [{ index: 0, code: 'InvalidAmount', field: 'amount', detail: "amount must be between 1.00 and the loan's available credit" }],
  requestId,
  refusedAt: new Date(Date.parse('2031-06-01T10:00:00Z')),
});
async function state(s: Subject, key: string, hash: string): Promise<KeyState> {
  const read = await s.store.readKeyState('P', key, hash);
  if (!read.ok) throw new Error(`readKeyState failed: ${read.failure.code}`);
  return read.value;
}
const etagOf = (v: Versioned<unknown> | undefined) => v?.etag;

describe.each([
  ['TableStore on Azurite', onAzurite],
  ['MemoryStore', inMemory],
])('%s', (_name, make) => {
  let s: Subject;
  let n = 0;
  beforeEach(async () => {
    s = await make();
  });
  const loanNumber = () => 7_000_000 + ++n;
  const key = () => `suite-${randomUUID()}`;

  test('readPartner: unknown, active, inactive, unnamed, stopped', async () => {
    await s.partner({ clientId: 'a', partnerId: 'PA' });
    await s.partner({ clientId: 'b', partnerId: 'PB', active: false });
    await s.partner({ clientId: 'c' });
    await s.partner({ clientId: 'd', partnerId: 'PD' });
    await s.stop('d');
    const read = async (id: string) => {
      const r = await s.store.readPartner(id);
      return r.ok ? r.value : r.failure;
    };
    expect(await read('nobody')).toEqual({ partner: undefined, stopped: false });
    expect(await read('a')).toEqual({ partner: { partnerId: 'PA', active: true }, stopped: false });
    expect(await read('b')).toEqual({ partner: { partnerId: 'PB', active: false }, stopped: false });
    expect(await read('c')).toEqual({ partner: { partnerId: undefined, active: true }, stopped: false });
    expect(await read('d')).toEqual({ partner: { partnerId: 'PD', active: true }, stopped: true });
  });

  test("readBatchState: the loans that exist with the rules' fields, and today's rows of them with their key and hash", async () => {
    const [a, b, missing] = [loanNumber(), loanNumber(), loanNumber()];
    await s.loan({ loanNumber: a, partnerId: 'P', availableCredit: 750.5, fundingInvestorId: 'INV' });
    await s.loan({ loanNumber: b, partnerId: 'Q', availableCredit: 0 });
    expect(await s.store.commitDraws([row(a)], context('req-a', { retry: { key: 'k', hash: 'h' } }))).toEqual({ ok: true });
    const read = await s.store.readBatchState(DAY, [String(a), String(b), String(missing), String(a)]);
    expect(read).toEqual({
      ok: true,
      value: {
        loans: new Map([
          [String(a), { partnerId: 'P', availableCredit: 750.5, fundingInvestorId: 'INV' }],
          [String(b), { partnerId: 'Q', availableCredit: 0, fundingInvestorId: undefined }],
        ]),
        drawnToday: new Map([[String(a), { partnerId: 'P', idempotencyKey: 'k', batchHash: 'h', requestId: 'req-a' }]]),
      },
    });
    expect(await s.store.readDraws('2031-06-02', [String(a)])).toEqual({ ok: true, value: new Map() });
  });

  test('commitDraws: all rows or none; a conflict names the batch index of the first row that exists; nothing is sent past startBy', async () => {
    const [a, b, c] = [loanNumber(), loanNumber(), loanNumber()];
    expect(await s.store.commitDraws([row(b, 0)], context('first'))).toEqual({ ok: true });
    expect(await s.store.commitDraws([row(c, 0)], context('second'))).toEqual({ ok: true });
    expect(await s.store.commitDraws([row(a, 0), row(b, 1), row(c, 2)], context('third'))).toEqual({ ok: false, conflictIndex: 1 });
    expect(await s.draws(DAY, [String(a), String(b), String(c)])).toEqual({ [b]: 'first', [c]: 'second' });
    s.setClock(Date.parse('2031-06-01T10:00:00Z'));
    expect(await s.store.commitDraws([row(a, 0)], context('late', { startBy: Date.parse('2031-06-01T10:00:00Z') }))).toEqual({ ok: false, late: true });
    expect(await s.draws(DAY, [String(a)])).toEqual({});
    expect(await s.store.commitDraws([row(a, 0)], context('in time', { startBy: Date.parse('2031-06-01T10:00:00Z') + 1 }))).toEqual({ ok: true });
  });

  test('readKeyState: nothing; then a take: the holder and the batch\'s own row "Taken", both with the record, each with an ETag', async () => {
    const k = key();
    expect(await state(s, k, 'H')).toEqual({ holder: undefined, own: undefined });
    expect(await s.store.takeKey(record(k, 'H'), {})).toEqual({ ok: true });
    const after = await state(s, k, 'H');
    expect(after.holder?.value).toEqual(record(k, 'H'));
    expect(after.own?.value).toEqual({ kind: 'taken', record: record(k, 'H') });
    expect(typeof etagOf(after.holder)).toBe('string');
    expect(typeof etagOf(after.own)).toBe('string');
    expect((await state(s, k, 'OTHER')).own).toBeUndefined();
    expect(await s.keyRows('P', k)).toEqual(['Taken', 'holder']);
  });

  test('takeKey on rows as read: an insert that finds its row, or a replace whose ETag moved, is `changed` and writes nothing', async () => {
    const k = key();
    const before = await state(s, k, 'H');
    expect(await s.store.takeKey(record(k, 'OTHER', 'twin'), await state(s, k, 'OTHER'))).toEqual({ ok: true });
    // Read before the twin's take: its holder insert finds the row; the whole transaction fails.
    expect(await s.store.takeKey(record(k, 'H', 'late'), before)).toEqual({ ok: false, changed: true });
    expect(await s.keyRows('P', k)).toEqual(['Taken', 'holder']);
    expect((await state(s, k, 'H')).own).toBeUndefined();
    // Read after it: a take-over replaces the holder matching its ETag, and inserts its own row.
    const current = await state(s, k, 'H');
    expect(await s.store.takeKey(record(k, 'H', 'over'), current)).toEqual({ ok: true });
    expect((await state(s, k, 'H')).holder?.value?.requestId).toBe('over');
    // The same read again: its holder's ETag moved.
    expect(await s.store.takeKey(record(k, 'H', 'again'), current)).toEqual({ ok: false, changed: true });
    expect((await state(s, k, 'OTHER')).own?.value).toEqual({ kind: 'taken', record: record(k, 'OTHER', 'twin') });
  });

  test('markRefused and takeKey of one batch on the same read: whichever storage takes first wins, the other is `changed`', async () => {
    const [k1, k2] = [key(), key()];
    const read1 = await state(s, k1, 'H');
    expect(await s.store.markRefused({ partnerId: 'P', key: k1, hash: 'H' }, refusal('refusal'), read1)).toEqual({ ok: true });
    expect(await s.store.takeKey(record(k1, 'H'), read1)).toEqual({ ok: false, changed: true });
    expect(await s.keyRows('P', k1)).toEqual(['Refused']);
    expect((await state(s, k1, 'H')).own?.value).toEqual({ kind: 'refused', ...refusal('refusal') });

    const read2 = await state(s, k2, 'H');
    expect(await s.store.takeKey(record(k2, 'H'), read2)).toEqual({ ok: true });
    expect(await s.store.markRefused({ partnerId: 'P', key: k2, hash: 'H' }, refusal('late refusal'), read2)).toEqual({ ok: false, changed: true });
    expect(await s.keyRows('P', k2)).toEqual(['Taken', 'holder']);
    // A refusal read after a refusal of its own replaces it, matching its ETag.
    const k3 = key();
    expect(await s.store.markRefused({ partnerId: 'P', key: k3, hash: 'H' }, refusal('one'), await state(s, k3, 'H'))).toEqual({ ok: true });
    expect(await s.store.markRefused({ partnerId: 'P', key: k3, hash: 'H' }, refusal('two'), await state(s, k3, 'H'))).toEqual({ ok: true });
    expect((await state(s, k3, 'H')).own?.value).toMatchObject({ kind: 'refused', requestId: 'two' });
  });

  test('a row missing a column reads as unreadable, with its ETag, and a take replaces it', async () => {
    const k = key();
    await s.keyRow('P', k, '', { PartnerId: 'P', BatchHash: 'x' });
    const read = await state(s, k, 'H');
    expect(read.holder?.value).toBeUndefined();
    expect(typeof read.holder?.etag).toBe('string');
    expect(await s.store.takeKey(record(k, batchHash([])), read)).toEqual({ ok: true });
    expect((await state(s, k, 'H')).holder?.value?.hash).toBe(batchHash([]));
  });
});
