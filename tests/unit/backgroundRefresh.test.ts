/**
 * BackgroundRefresh (lib/auth.ts): what keeps the provider's metadata and key set refreshed while
 * requests use what is held. One refresh at a time, a back-off after a failure, failures recorded and
 * never rejected into the caller. The clock is a plain variable.
 */
import { BackgroundRefresh } from '../../lib/auth';

const RETRY_MS = 60_000;

function setUp() {
  let t = 1_000_000;
  const failures: number[] = [];
  const refresh = new BackgroundRefresh(
    () => t,
    RETRY_MS,
    (at) => failures.push(at),
  );
  return { refresh, failures, advance: (ms: number) => (t += ms), now: () => t };
}

/** A refresh the test settles by hand, counting how often it was started. */
function controlled() {
  let settle: { resolve: () => void; reject: (error: Error) => void } | undefined;
  let calls = 0;
  const run = () =>
    new Promise<void>((resolve, reject) => {
      calls += 1;
      settle = { resolve, reject };
    });
  return { run, calls: () => calls, resolve: () => settle?.resolve(), reject: () => settle?.reject(new Error('down')) };
}

/** Lets the refresh's handlers run. */
const settled = () => new Promise((resolve) => setImmediate(resolve));

test('starts at once and returns without waiting; a second start while one runs is ignored', async () => {
  const { refresh } = setUp();
  const work = controlled();
  refresh.start(work.run);
  refresh.start(work.run);
  expect(work.calls()).toBe(1);
  work.resolve();
  await settled();
  refresh.start(work.run); // after a success, the next one may start at once
  expect(work.calls()).toBe(2);
  expect(refresh.backingOff()).toBe(false);
});

test('a failure is recorded with its time, not rejected, and no refresh starts again until the back-off has passed', async () => {
  const { refresh, failures, advance, now } = setUp();
  const work = controlled();
  refresh.start(work.run);
  const failedAt = now();
  work.reject();
  await settled();
  expect(failures).toEqual([failedAt]);
  expect(refresh.backingOff()).toBe(true);

  advance(RETRY_MS - 1);
  refresh.start(work.run);
  expect(work.calls()).toBe(1);
  advance(1);
  expect(refresh.backingOff()).toBe(false);
  refresh.start(work.run);
  expect(work.calls()).toBe(2);
});

test('a refresh that throws before its first await is caught and recorded too', async () => {
  const { refresh, failures, now } = setUp();
  refresh.start(() => {
    throw new Error('synchronous');
  });
  await settled();
  expect(failures).toEqual([now()]);
  expect(refresh.backingOff()).toBe(true);
});

test("a failure a request awaited (failed()) starts the back-off without being recorded as the background's", () => {
  const { refresh, failures, advance } = setUp();
  const work = controlled();
  refresh.failed();
  refresh.start(work.run);
  expect(work.calls()).toBe(0);
  advance(RETRY_MS);
  refresh.start(work.run);
  expect(work.calls()).toBe(1);
  expect(failures).toEqual([]);
});

test('no unhandled rejection escapes a failed refresh', async () => {
  const unhandled: unknown[] = [];
  const listener = (reason: unknown) => unhandled.push(reason);
  process.on('unhandledRejection', listener);
  try {
    const { refresh } = setUp();
    refresh.start(() => Promise.reject(new Error('down')));
    await settled();
    await settled();
    expect(unhandled).toEqual([]);
  } finally {
    process.off('unhandledRejection', listener);
  }
});
