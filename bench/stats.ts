/** The benchmarks' order statistics and core placement, one definition for every section. */
import { spawnSync } from 'node:child_process';
import { cpus } from 'node:os';

/** The upper median (the middle sample, or the upper of the two middle ones). */
export const median = (xs: readonly number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

/** The sample at rank ⌊p% × n⌋ of ascending `sorted` (the last one for p99 of fewer than 100); 0 when there is none. */
export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return 0;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

/** Whether processes can be placed on cores here: two or more, and taskset installed. */
export const PINNING = cpus().length >= 2 && spawnSync('taskset', ['-V']).status === 0;

/** Places a process, every thread of it, on `cores` (a core number or `all`); nothing where PINNING is false. */
export function pin(pid: number, cores: number | 'all'): void {
  const list = cores === 'all' ? `0-${cpus().length - 1}` : String(cores);
  if (PINNING) spawnSync('taskset', ['-a', '-p', '-c', list, String(pid)], { stdio: 'ignore' });
}

/**
 * The median of `xs` (as `median`) and a distribution-free interval around it: the order statistics
 * x₍ₖ₎ and x₍ₙ₊₁₋ₖ₎ with k the largest rank for which a Binomial(n, ½) falls below k with probability at
 * most (1 − confidence) / 2, so the population median lies between them with at least that confidence.
 * Unbounded when there are too few samples for any such k.
 */
export function medianInterval(xs: readonly number[], confidence = 0.95): { median: number; low: number; high: number } {
  const sorted = [...xs].sort((a, b) => a - b);
  const n = sorted.length;
  const tail = (1 - confidence) / 2;
  // P(X = i) of a Binomial(n, ½), summed while the sum stays within the tail.
  let k = 0;
  let p = 0.5 ** n;
  let below = p;
  while (k < n && below <= tail) {
    k += 1;
    p *= (n - k + 1) / k;
    below += p;
  }
  return {
    median: median(sorted),
    low: k === 0 ? Number.NEGATIVE_INFINITY : sorted[k - 1],
    high: k === 0 ? Number.POSITIVE_INFINITY : sorted[n - k],
  };
}
