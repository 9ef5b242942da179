/**
 * The timer that runs the service's housekeeping of IdempotencyKeys (docs/contract.md §4.1): each run's
 * result is one log line; a run that storage failed is a failed execution (the host records it), and the
 * next run starts over.
 */
import type { InvocationContext, Timer, TimerHandler } from '@azure/functions';
import { removeOldKeyRows } from '../lib/housekeeping';
import { describeFailure } from '../lib/outcome';
import type { TableStore } from '../lib/store';

/** NCRONTAB (with seconds): every hour at 17 minutes past, away from the top of the hour other jobs favour. */
export const KEY_HOUSEKEEPING_SCHEDULE = '0 17 * * * *';

export function createHousekeepingHandler(store: TableStore, now: () => Date): TimerHandler {
  return async (_timer: Timer, context: InvocationContext) => {
    const result = await removeOldKeyRows(store, now);
    const summary = `KeyHousekeeping: ${result.removed} row(s) removed, ${result.changed} kept (written since they were listed)${result.unfinished ? ', the rest left for the next run' : ''}`;
    if (result.failure !== undefined) throw new Error(`${summary}; stopped: table storage ${describeFailure(result.failure)}`);
    context.log(summary);
  };
}
