/** Fresh loans for a benchmark, reused once their draw rows are deleted. */
import type { TableClient, TransactionAction } from '@azure/data-tables';
import { putLoan } from '../dev/demoData';

/**
 * The loans one side draws on, each once per segment. Before the next segment, reset() deletes the
 * side's draw rows, making the same loans fresh again; so the tables stay at one segment's size
 * (Azurite answers a point query by scanning its table, and ever-growing tables would slow the later segments).
 */
export class LoanPool {
  private loans: number[] = [];
  private cursor = 0;

  constructor(
    private readonly loansTable: TableClient,
    private readonly drawsTable: TableClient,
    private readonly partnerId: string,
  ) {}

  async seed(count: number): Promise<void> {
    this.loans = Array.from({ length: count }, (_, i) => 1_000_000 + i);
    for (let i = 0; i < count; i += 200) {
      const chunk = this.loans.slice(i, i + 200);
      await Promise.all(
        chunk.map((n) => putLoan(this.loansTable, { loanNumber: n, partnerId: this.partnerId, availableCredit: 1_000_000, fundingInvestorId: 'INV-1' })),
      );
    }
  }

  take(count: number): number[] {
    if (this.cursor + count > this.loans.length) throw new Error('bench: not enough seeded loans');
    this.cursor += count;
    return this.loans.slice(this.cursor - count, this.cursor);
  }

  /** Deletes every draw row (in transactions of 100 per partition) and hands the loans out again. */
  async reset(): Promise<void> {
    const rows = new Map<string, string[]>();
    for await (const row of this.drawsTable.listEntities({ queryOptions: { select: ['PartitionKey', 'RowKey'] } })) {
      const keys = rows.get(row.partitionKey as string) ?? [];
      keys.push(row.rowKey as string);
      rows.set(row.partitionKey as string, keys);
    }
    for (const [partitionKey, keys] of rows) {
      for (let i = 0; i < keys.length; i += 100) {
        await this.drawsTable.submitTransaction(keys.slice(i, i + 100).map((rowKey): TransactionAction => ['delete', { partitionKey, rowKey }]));
      }
    }
    this.cursor = 0;
  }
}
