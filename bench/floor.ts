/**
 * The floor: what any service recording a batch must ask of storage, straight through
 * `@azure/data-tables` with no checks: one parallel round of point reads (the batch's loans and today's
 * draw rows, with the service's columns), then one entity-group transaction of the service's rows.
 * `npm run bench` runs it in its own process beside the dev host; bench/workerFloor.ts runs it as a
 * function in the real worker (bench/floorApp.ts) beside the package.
 */
import { RestError, TableClient, odata, type TableEntity, type TransactionAction } from '@azure/data-tables';
import { DRAW_COLUMNS, LOAN_COLUMNS, storageAgent } from '../lib/store';

/** The partner and client the floor writes as (the service's rows name them). */
export const FLOOR_PARTNER = 'BENCH';
export const FLOOR_CLIENT = 'bench-client';

/** One element of a batch as the floor needs it. */
export interface FloorDraw {
  readonly loanNumber: number;
  readonly amount: number;
  readonly requestor: string;
}

/** The loans and draws tables, configured as the service configures its clients: one keep-alive agent for the account. */
export function floorClients(connectionString: string, loansTable: string, drawsTable: string): { loans: TableClient; draws: TableClient } {
  const agent = storageAgent(TableClient.fromConnectionString(connectionString, loansTable).url);
  const client = (table: string) => TableClient.fromConnectionString(connectionString, table, { allowInsecureConnection: true, agent });
  return { loans: client(loansTable), draws: client(drawsTable) };
}

/** A point read as the service makes it: a PK+RK query of one row, with the same columns. */
function pointRead(client: TableClient, partitionKey: string, rowKey: string, select: string[]): Promise<unknown> {
  const filter = odata`PartitionKey eq ${partitionKey} and RowKey eq ${rowKey}`;
  return client.listEntities({ queryOptions: { filter, select } }).byPage({ maxPageSize: 1 }).next();
}

/** The row the service writes, property for property. */
function floorRow(day: string, draw: FloorDraw, index: number): TableEntity {
  return {
    partitionKey: day,
    rowKey: String(draw.loanNumber),
    Amount: { value: String(draw.amount), type: 'Double' },
    Requestor: draw.requestor,
    PartnerId: FLOOR_PARTNER,
    ClientId: FLOOR_CLIENT,
    Status: 'Pending',
    SubmittedAt: { value: new Date().toISOString(), type: 'DateTime' },
    RequestId: '00000000-0000-0000-0000-000000000000',
    BatchIndex: { value: String(index), type: 'Int32' },
  };
}

/** One batch: the read round, then the transaction. False when storage answered an error (a RestError). */
export async function floorBatch(loans: TableClient, draws: TableClient, batch: readonly FloorDraw[]): Promise<boolean> {
  const day = new Date().toISOString().slice(0, 10);
  try {
    await Promise.all([
      ...batch.map((d) => pointRead(loans, String(d.loanNumber), '', LOAN_COLUMNS)),
      ...batch.map((d) => pointRead(draws, day, String(d.loanNumber), DRAW_COLUMNS)),
    ]);
    const actions: TransactionAction[] = batch.map((d, i) => ['create', floorRow(day, d, i)]);
    await draws.submitTransaction(actions);
    return true;
  } catch (error) {
    if (!(error instanceof RestError)) throw error;
    return false;
  }
}
