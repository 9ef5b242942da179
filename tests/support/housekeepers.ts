/**
 * The housekeeper of the generated histories (tests/support/histories.ts): removes IdempotencyKeys rows
 * while partners take keys over, on an instance with a clock of its own.
 *
 * - `service` (the default): the service's own housekeeping (lib/housekeeping.ts), each removal a little
 *   delayed after the listing, so that take-overs land in between;
 * - `unconditional` (HISTORY_HOUSEKEEPER=unconditional): what the contract allowed before issue #39, "a
 *   housekeeping task outside this service" removing records whose `TakenAt` is over 48 hours old, with
 *   `deleteEntity`'s default `If-Match: *`. The histories find what it breaks.
 */
import { odata } from '@azure/data-tables';
import { tableClient } from '../../dev/demoData';
import { removeOldKeyRows } from '../../lib/housekeeping';
import { TableStore } from '../../lib/store';
import { overriding } from './storeOverrides';
import type { Harness } from './harness';
import type { Random } from './histories';

export interface HousekeepingTally {
  /** Rows removed, and rows kept because they were written again after they were listed. */
  removed: number;
  kept: number;
}

export interface Housekeeper {
  start(): void;
  stop(): Promise<void>;
  readonly tally: HousekeepingTally;
}

const KIND = process.env.HISTORY_HOUSEKEEPER ?? 'service';
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export function housekeeperFor(harness: Harness, keysTable: string, now: () => Date, random: Random): Housekeeper {
  const tally: HousekeepingTally = { removed: 0, kept: 0 };
  const run = KIND === 'unconditional' ? unconditional(harness, keysTable, now, random, tally) : service(harness, keysTable, now, random, tally);
  let running = false;
  let loop: Promise<void> = Promise.resolve();
  return {
    tally,
    start() {
      running = true;
      loop = (async () => {
        while (running) {
          await run();
          await sleep(random.int(0, 20));
        }
      })();
    },
    async stop() {
      running = false;
      await loop;
    },
  };
}

function service(harness: Harness, keysTable: string, now: () => Date, random: Random, tally: HousekeepingTally): () => Promise<void> {
  const store = new TableStore({ ...harness.config.tables, idempotencyTable: keysTable }, undefined, undefined, false, now);
  // The removals wait a moment after the listing, and after each other: take-overs of the keys land in between.
  const slowed = overriding(store, {
    oldKeyRows: async (...args) => {
      const page = await store.oldKeyRows(...args);
      await sleep(random.int(100, 300));
      return page;
    },
    removeKeyRow: async (row) => (await sleep(random.int(10, 50)), store.removeKeyRow(row)),
  });
  return async () => {
    const result = await removeOldKeyRows(slowed, now);
    tally.removed += result.removed;
    tally.kept += result.changed;
  };
}

function unconditional(harness: Harness, keysTable: string, now: () => Date, random: Random, tally: HousekeepingTally): () => Promise<void> {
  const table = tableClient(harness.azurite.connectionString, keysTable);
  return async () => {
    const before = new Date(now().getTime() - 48 * 60 * 60_000);
    const listed: { partitionKey: string; rowKey: string }[] = [];
    for await (const row of table.listEntities({ queryOptions: { filter: odata`TakenAt lt ${before}` } }))
      listed.push({ partitionKey: row.partitionKey as string, rowKey: row.rowKey as string });
    // The same pace as the service's (above): take-overs land between the listing and the removals.
    await sleep(random.int(100, 300));
    for (const row of listed) {
      await sleep(random.int(10, 50));
      await table.deleteEntity(row.partitionKey, row.rowKey).then(
        () => (tally.removed += 1),
        () => undefined,
      );
    }
  };
}
