/**
 * The rows of docs/contract.md §4 as written and read: each value's columns, and each row read back into a
 * value (a row missing a column or holding a malformed one reads as unreadable). Pure: the store's I/O is
 * lib/store.ts, and tests/support/memoryStore.ts keeps rows the same way.
 */
import type { Edm, TableEntity } from '@azure/data-tables';
import { decodeErrors, encodeErrors, type BatchMark, type KeyRecord, type PriorDraw } from './idempotency';
import type { CommitContext, DrawRow, PartnerRecord, Refusal } from './store';

/** A row's RowKey and columns (its PartitionKey is the caller's). */
export type TableEntityLike = { readonly rowKey: string } & Record<string, unknown>;

function asString(value: unknown): string | undefined {
  return typeof value === 'string' ? value : undefined;
}

/** A DateTime column: the SDK gives a Date, or the text when type conversion is off. */
function asDate(value: unknown): Date | undefined {
  const date = value instanceof Date ? value : typeof value === 'string' ? new Date(value) : undefined;
  return date !== undefined && Number.isFinite(date.getTime()) ? date : undefined;
}

/** A key record as stored; undefined when a column is missing or malformed (then it binds nothing, and is replaced). */
export function keyRecord(row: Record<string, unknown>): KeyRecord | undefined {
  const [partnerId, key, hash, day, loans, requestId] = ['PartnerId', 'IdempotencyKey', 'BatchHash', 'Day', 'LoanNumbers', 'RequestId'].map((c) =>
    asString(row[c]),
  );
  const takenAt = asDate(row.TakenAt);
  if ([partnerId, key, hash, day, loans, requestId].includes(undefined) || takenAt === undefined) return undefined;
  return {
    partnerId: partnerId as string,
    key: key as string,
    hash: hash as string,
    day: day as string,
    loanNumbers: (loans as string).split(','),
    requestId: requestId as string,
    takenAt,
  };
}

/** A batch's own row under its key as stored; undefined when unreadable (then it marks nothing, and is replaced). */
export function batchMark(row: Record<string, unknown>): BatchMark | undefined {
  if (row.State === 'Taken') {
    const record = keyRecord(row);
    return record === undefined ? undefined : { kind: 'taken', record };
  }
  if (row.State !== 'Refused') return undefined;
  const errors = typeof row.Errors === 'string' ? decodeErrors(row.Errors) : undefined;
  const requestId = asString(row.RequestId);
  const refusedAt = asDate(row.RefusedAt);
  if (errors === undefined || requestId === undefined || refusedAt === undefined) return undefined;
  return { kind: 'refused', errors, requestId, refusedAt };
}

/** The columns of a key record (RowKey "", and a batch's own row when it took the key). */
function keyColumns(record: KeyRecord) {
  return {
    PartnerId: record.partnerId,
    IdempotencyKey: record.key,
    BatchHash: record.hash,
    Day: record.day,
    LoanNumbers: record.loanNumbers.join(','),
    RequestId: record.requestId,
    TakenAt: { value: record.takenAt.toISOString(), type: 'DateTime' } satisfies Edm<'DateTime'>,
  };
}

/** A take's two rows in the key's partition: the holder (RowKey ""), and the batch's own row marked `Taken`. */
export function takeRows(record: KeyRecord): [TableEntityLike, TableEntityLike] {
  const columns = keyColumns(record);
  return [
    { rowKey: '', ...columns },
    { rowKey: record.hash, ...columns, State: 'Taken' },
  ];
}

/** A refusal's columns in the batch's own row (RowKey its hash). */
export function refusalColumns(batch: { readonly partnerId: string; readonly key: string; readonly hash: string }, refusal: Refusal) {
  return {
    PartnerId: batch.partnerId,
    IdempotencyKey: batch.key,
    BatchHash: batch.hash,
    State: 'Refused',
    Errors: encodeErrors(refusal.errors),
    RequestId: refusal.requestId,
    RefusedAt: { value: refusal.refusedAt.toISOString(), type: 'DateTime' } satisfies Edm<'DateTime'>,
  };
}

/** What a draw row says about the request that wrote it. */
export function priorDraw(row: Record<string, unknown>): PriorDraw {
  return {
    partnerId: asString(row.PartnerId),
    idempotencyKey: asString(row.IdempotencyKey),
    batchHash: asString(row.BatchHash),
    requestId: asString(row.RequestId),
  };
}

/** A Partners row: absent `Active` means active; any value other than true (a string "false", 0 …) fails closed. */
export function partnerRecord(row: Record<string, unknown>): PartnerRecord {
  return { partnerId: asString(row.PartnerId), active: row.Active === undefined || row.Active === true };
}

/** A draw row as the commit inserts it: typed, so a whole amount is stored as a Double (100.0), not inferred as an Int32. */
export function drawEntity(row: DrawRow, context: CommitContext): TableEntity {
  const retry = context.retry === undefined ? {} : { IdempotencyKey: context.retry.key, BatchHash: context.retry.hash };
  return {
    partitionKey: context.day,
    rowKey: String(row.loanNumber),
    Amount: { value: row.amount, type: 'Double' } satisfies Edm<'Double'>,
    Requestor: row.requestor,
    PartnerId: context.partnerId,
    ClientId: context.clientId,
    Status: 'Pending',
    SubmittedAt: { value: context.submittedAt.toISOString(), type: 'DateTime' } satisfies Edm<'DateTime'>,
    RequestId: context.requestId,
    BatchIndex: { value: row.batchIndex, type: 'Int32' } satisfies Edm<'Int32'>,
    ...retry,
  };
}
