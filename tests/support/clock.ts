/**
 * A test-held clock: only `Date` is faked, so timers, I/O and the processes around (Azurite, providers)
 * stay real while everything that reads the time (jose's key-set cooldown and cache age, token
 * lifetimes, the service) reads a clock that moves only when the test moves it. "Within a cooldown"
 * is then the clock not having moved, however slow the machine.
 */
export function holdTheClock(): void {
  jest.useFakeTimers({
    now: Date.now(),
    doNotFake: [
      'hrtime',
      'nextTick',
      'performance',
      'queueMicrotask',
      'setImmediate',
      'clearImmediate',
      'setInterval',
      'clearInterval',
      'setTimeout',
      'clearTimeout',
    ],
  });
}

/** Moves the held clock to `at` (milliseconds since the epoch). */
export function moveClockTo(at: number): void {
  jest.setSystemTime(at);
}

export function releaseTheClock(): void {
  jest.useRealTimers();
}
