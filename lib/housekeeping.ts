/**
 * The service's own housekeeping of the IdempotencyKeys table (docs/contract.md §4.1), run by a timer
 * (functions/main.ts): every row written more than KEY_ROWS_KEPT_MS ago is removed, each only if it is
 * still the row that was judged old (its ETag). A row rewritten since it was listed, by a take-over of the
 * key or a new refusal, is kept: a removal of it could make a batch recorded once be recorded again.
 */
import { KEY_ROWS_KEPT_MS } from './idempotency';
import type { StorageFailure, TableStore } from './store';

export interface HousekeepingResult {
  /** Rows listed as old, removed, and kept because they were written since they were listed. */
  readonly listed: number;
  readonly removed: number;
  readonly changed: number;
  /** The first storage failure; the run stops at it (the next run starts over). */
  readonly failure?: StorageFailure;
  /** Whether rows were left for the next run (its bounds reached). */
  readonly unfinished: boolean;
}

/**
 * A run's bounds: it works at most this long, and removes at most this many rows, so that it never
 * holds an instance; whatever is left waits for the next run (hourly: far more than the table gains).
 */
export const HOUSEKEEPING_BUDGET = { ms: 4 * 60_000, rows: 20_000 } as const;

export async function removeOldKeyRows(
  store: TableStore,
  now: () => Date,
  budget: { readonly ms: number; readonly rows: number } = HOUSEKEEPING_BUDGET,
): Promise<HousekeepingResult> {
  const started = now().getTime();
  const before = new Date(started - KEY_ROWS_KEPT_MS);
  let listed = 0;
  let removed = 0;
  let changed = 0;
  let continuation: string | undefined;
  const over = () => now().getTime() - started >= budget.ms || removed + changed >= budget.rows;
  do {
    const page = await store.oldKeyRows(before, continuation);
    if (!page.ok) return { listed, removed, changed, failure: page.failure, unfinished: true };
    for (const row of page.value.rows) {
      if (over()) return { listed, removed, changed, unfinished: true };
      listed += 1;
      const result = await store.removeKeyRow(row);
      if (result.ok) removed += 1;
      else if ('changed' in result) changed += 1;
      else return { listed, removed, changed, failure: result.failure, unfinished: true };
    }
    continuation = page.value.continuation;
  } while (continuation !== undefined);
  return { listed, removed, changed, unfinished: false };
}
