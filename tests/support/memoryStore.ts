/**
 * The service's storage held in memory, for the exhaustive exploration of keyed requests
 * (tests/support/exploration.ts): the rows lib/store.ts writes and reads, made and read by the same
 * functions (lib/tableRows.ts), with Table Storage's rules for them: ETags, inserts that find their row,
 * replaces whose ETag no longer matches, transactions that apply whole or not at all, a transaction's 409
 * naming its first failing action. tests/integration/storeContract.test.ts runs one suite against this and
 * against the real TableStore on Azurite, so that the two cannot drift.
 *
 * Each call goes through `gate` before it touches the rows: the exploration decides there when it happens,
 * and how it ends (answered, refused by storage, applied but its answer lost). By default it happens at once.
 */
import type { TableEntity } from '@azure/data-tables';
import type { DemoLoan } from '../../dev/demoData';
import { FIELDS_READ } from '../../lib/drawRules';
import { keyRecordId, type BatchMark, type KeyRecord, type KeyState, type PriorDraw, type Versioned } from '../../lib/idempotency';
import { loanOf, type Loan } from '../../lib/loans';
import {
  mayHaveApplied,
  type BatchState,
  type CommitContext,
  type CommitResult,
  type DrawRow,
  type KeyWriteResult,
  type PartnerLookup,
  type Refusal,
  type StorageFailure,
  type Store,
  type StoreResult,
} from '../../lib/store';
import { batchMark, drawEntity, keyRecord, partnerRecord, priorDraw, refusalColumns, takeRows, type TableEntityLike } from '../../lib/tableRows';

/** A stored row: its columns as the SDK reads them back (Edm values unwrapped), and its ETag. */
export interface StoredRow {
  readonly columns: Readonly<Record<string, unknown>>;
  readonly etag: string;
}

type Table = Map<string, StoredRow>;
const at = (partitionKey: string, rowKey: string) => `${partitionKey}\u0000${rowKey}`;

/** How a call ends: answered; refused by storage (nothing applied, 503); applied but answered 500; applied, its answer lost, and the SDK's retry finding its own rows. */
export type Ending = 'answered' | 'refused' | 'appliedThenFailed' | 'appliedThenChanged';

/** A call as the gate sees it: which rows it reads and writes (`table/partition/row`), and the endings it may have. */
export interface Call {
  readonly method: keyof Store;
  readonly reads: readonly string[];
  readonly writes: readonly string[];
  readonly endings: readonly Ending[];
}

export type Gate = (call: Call) => Promise<Ending>;

const AT_ONCE: Gate = () => Promise.resolve('answered');

const REFUSED = (operation: string): StorageFailure => ({ code: 'ERR_STORAGE_REJECTED', operation, status: 503, storageCode: 'ServerBusy' });
const FAILED_AFTER = (operation: string): StorageFailure => ({ code: 'ERR_STORAGE_REJECTED', operation, status: 500, storageCode: 'InternalError' });

/** The Edm wrappers lib/tableRows.ts writes, read back as the SDK gives them (a Double as a number, a DateTime as a Date). */
function unwrapped(entity: Record<string, unknown>): Record<string, unknown> {
  const columns: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(entity)) {
    if (name === 'partitionKey' || name === 'rowKey') continue;
    const edm = value as { value?: unknown; type?: string } | null;
    if (edm !== null && typeof edm === 'object' && !(edm instanceof Date) && typeof edm.type === 'string') {
      columns[name] = edm.type === 'DateTime' ? new Date(String(edm.value)) : edm.type === 'Double' || edm.type === 'Int32' ? Number(edm.value) : edm.value;
    } else columns[name] = value;
  }
  return columns;
}

/** The tables of one storage account, shared by every instance of the service in an exploration. */
export class MemoryTables {
  readonly partners: Table = new Map();
  readonly stops: Table = new Map();
  readonly loans: Table = new Map();
  readonly draws: Table = new Map();
  readonly keys: Table = new Map();
  private etags = 0;

  put(table: Table, partitionKey: string, rowKey: string, entity: Record<string, unknown>): void {
    table.set(at(partitionKey, rowKey), { columns: unwrapped(entity), etag: `W/"${++this.etags}"` });
  }

  get(table: Table, partitionKey: string, rowKey: string): StoredRow | undefined {
    return table.get(at(partitionKey, rowKey));
  }

  /**
   * The loan-servicing system's write of a loan (as dev/demoData.ts putLoan writes it; a credit that is not a
   * number leaves the column out, as a loan without credit), or its removal.
   */
  putLoan(loan: DemoLoan | { readonly loanNumber: number; readonly removed: true }): void {
    if ('removed' in loan) this.loans.delete(at(String(loan.loanNumber), ''));
    else
      this.put(this.loans, String(loan.loanNumber), '', {
        PartnerId: loan.partnerId,
        ...(Number.isFinite(loan.availableCredit) ? { AvailableCredit: loan.availableCredit } : {}),
        ...(loan.fundingInvestorId === undefined ? {} : { FundingInvestorId: loan.fundingInvestorId }),
      });
  }

  putPartner(partner: { clientId: string; partnerId?: string; active?: boolean }): void {
    this.put(this.partners, partner.clientId, '', {
      ...(partner.partnerId === undefined ? {} : { PartnerId: partner.partnerId }),
      ...(partner.active === undefined ? {} : { Active: partner.active }),
    });
  }

  putStop(clientId: string): void {
    this.put(this.stops, clientId, '', { StopId: 'local' });
  }

  /** Every draw row, as `day/loan` → columns. */
  drawRows(): { readonly day: string; readonly loanNumber: string; readonly columns: Readonly<Record<string, unknown>> }[] {
    return [...this.draws].map(([k, row]) => {
      const [day, loanNumber] = k.split('\u0000');
      return { day, loanNumber, columns: row.columns };
    });
  }

  /** The rows of a partner's key: RowKey "" (its holder) and one per batch. */
  keyRows(partnerId: string, key: string): { readonly rowKey: string; readonly columns: Readonly<Record<string, unknown>> }[] {
    const prefix = `${keyRecordId(partnerId, key)}\u0000`;
    return [...this.keys].filter(([k]) => k.startsWith(prefix)).map(([k, row]) => ({ rowKey: k.slice(prefix.length), columns: row.columns }));
  }

  /** A copy to start an exploration's runs from. */
  clone(): MemoryTables {
    const copy = new MemoryTables();
    for (const name of ['partners', 'stops', 'loans', 'draws', 'keys'] as const) for (const [k, v] of this[name]) copy[name].set(k, v);
    copy.etags = this.etags;
    return copy;
  }
}

/** An insert of a row not read, or a replace of the version read; undefined when storage would refuse it (the row changed). */
function writeOverCheck(table: Table, key: string, read: Versioned<unknown> | undefined): boolean {
  const current = table.get(key);
  return read === undefined ? current === undefined : current !== undefined && current.etag === read.etag;
}

/** lib/store.ts's TableStore, on MemoryTables: one instance of the service's store, with its own clock. */
export class MemoryStore implements Store {
  constructor(
    private readonly tables: MemoryTables,
    private readonly now: () => Date = () => new Date(),
    private readonly gate: Gate = AT_ONCE,
  ) {}

  async readPartner(clientId: string): Promise<StoreResult<PartnerLookup>> {
    const ending = await this.gate({ method: 'readPartner', reads: [`P/${clientId}`, `S/${clientId}`], writes: [], endings: READ_ENDINGS });
    if (ending === 'refused') return { ok: false, failure: REFUSED('readPartner') };
    const row = this.tables.get(this.tables.partners, clientId, '');
    return {
      ok: true,
      value: { partner: row === undefined ? undefined : partnerRecord(row.columns), stopped: this.tables.get(this.tables.stops, clientId, '') !== undefined },
    };
  }

  async readBatchState(day: string, loanNumbers: readonly string[]): Promise<StoreResult<BatchState>> {
    const unique = [...new Set(loanNumbers)];
    const ending = await this.gate({ method: 'readBatchState', reads: unique.flatMap((n) => [`L/${n}`, `D/${day}/${n}`]), writes: [], endings: READ_ENDINGS });
    if (ending === 'refused') return { ok: false, failure: REFUSED('readBatchState') };
    const loans = new Map<string, Loan>();
    const drawnToday = new Map<string, PriorDraw>();
    for (const n of unique) {
      const loan = this.tables.get(this.tables.loans, n, '');
      if (loan !== undefined) loans.set(n, loanOf(loan.columns, FIELDS_READ));
      const draw = this.tables.get(this.tables.draws, day, n);
      if (draw !== undefined) drawnToday.set(n, priorDraw(draw.columns));
    }
    return { ok: true, value: { loans, drawnToday } };
  }

  async readDraws(day: string, loanNumbers: readonly string[]): Promise<StoreResult<ReadonlyMap<string, PriorDraw>>> {
    const unique = [...new Set(loanNumbers)];
    const ending = await this.gate({ method: 'readDraws', reads: unique.map((n) => `D/${day}/${n}`), writes: [], endings: READ_ENDINGS });
    if (ending === 'refused') return { ok: false, failure: REFUSED('readDraws') };
    const draws = new Map<string, PriorDraw>();
    for (const n of unique) {
      const row = this.tables.get(this.tables.draws, day, n);
      if (row !== undefined) draws.set(n, priorDraw(row.columns));
    }
    return { ok: true, value: draws };
  }

  async commitDraws(rows: readonly DrawRow[], context: CommitContext): Promise<CommitResult> {
    // As TableStore does: checked with the call, before anything is sent.
    if (context.startBy !== undefined && this.now().getTime() >= context.startBy) return { ok: false, late: true };
    const entities: TableEntity[] = rows.map((row) => drawEntity(row, context));
    const cells = entities.map((e) => `D/${e.partitionKey}/${e.rowKey}`);
    const ending = await this.gate({ method: 'commitDraws', reads: cells, writes: cells, endings: COMMIT_ENDINGS });
    if (ending === 'refused') return { ok: false, failure: REFUSED('commitDraws'), outcomeUnknown: false };
    const conflict = entities.findIndex((e) => this.tables.get(this.tables.draws, e.partitionKey, e.rowKey) !== undefined);
    if (conflict < 0) for (const e of entities) this.tables.put(this.tables.draws, e.partitionKey, e.rowKey, e);
    if (ending === 'appliedThenFailed') {
      const failure = FAILED_AFTER('commitDraws');
      return { ok: false, failure, outcomeUnknown: mayHaveApplied(failure) };
    }
    return conflict < 0 ? { ok: true } : { ok: false, conflictIndex: rows[conflict].batchIndex };
  }

  async readKeyState(partnerId: string, key: string, hash: string): Promise<StoreResult<KeyState>> {
    const partitionKey = keyRecordId(partnerId, key);
    const ending = await this.gate({ method: 'readKeyState', reads: [`K/${partitionKey}/`, `K/${partitionKey}/${hash}`], writes: [], endings: READ_ENDINGS });
    if (ending === 'refused') return { ok: false, failure: REFUSED('readKeyRecord') };
    const holder = this.tables.get(this.tables.keys, partitionKey, '');
    const own = this.tables.get(this.tables.keys, partitionKey, hash);
    return {
      ok: true,
      value: {
        holder: holder === undefined ? undefined : ({ value: keyRecord(holder.columns), etag: holder.etag } satisfies Versioned<KeyRecord>),
        own: own === undefined ? undefined : ({ value: batchMark(own.columns), etag: own.etag } satisfies Versioned<BatchMark>),
      },
    };
  }

  takeKey(record: KeyRecord, read: KeyState): Promise<KeyWriteResult> {
    const partitionKey = keyRecordId(record.partnerId, record.key);
    const [holder, own] = takeRows(record);
    return this.writeKeyRows('takeKey', partitionKey, [
      [holder, read.holder],
      [own, read.own],
    ]);
  }

  markRefused(batch: { readonly partnerId: string; readonly key: string; readonly hash: string }, refusal: Refusal, read: KeyState): Promise<KeyWriteResult> {
    const partitionKey = keyRecordId(batch.partnerId, batch.key);
    return this.writeKeyRows('markRefused', partitionKey, [[{ rowKey: batch.hash, ...refusalColumns(batch, refusal) }, read.own]]);
  }

  /** One transaction on a key's rows: each an insert of a row not read or a replace of the version read; all or none. */
  private async writeKeyRows(
    method: 'takeKey' | 'markRefused',
    partitionKey: string,
    writes: readonly (readonly [TableEntityLike, Versioned<unknown> | undefined])[],
  ): Promise<KeyWriteResult> {
    const cells = writes.map(([row]) => `K/${partitionKey}/${row.rowKey}`);
    const ending = await this.gate({ method, reads: cells, writes: cells, endings: KEY_WRITE_ENDINGS });
    if (ending === 'refused') return { ok: false, failure: REFUSED(method) };
    const applies = writes.every(([row, read]) => writeOverCheck(this.tables.keys, at(partitionKey, row.rowKey), read));
    if (applies) for (const [row] of writes) this.tables.put(this.tables.keys, partitionKey, row.rowKey, row);
    if (ending === 'appliedThenFailed') return { ok: false, failure: FAILED_AFTER(method) };
    // The SDK retries a key write whose answer was lost (TableStore.takeKey); the retry finds the rows written.
    if (ending === 'appliedThenChanged' || !applies) return { ok: false, changed: true };
    return { ok: true };
  }
}

const READ_ENDINGS: readonly Ending[] = ['answered', 'refused'];
const COMMIT_ENDINGS: readonly Ending[] = ['answered', 'refused', 'appliedThenFailed'];
const KEY_WRITE_ENDINGS: readonly Ending[] = ['answered', 'refused', 'appliedThenFailed', 'appliedThenChanged'];
