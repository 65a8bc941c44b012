/**
 * At most `max` jobs at a time, the others waiting in arrival order. The daemon keeps one for the
 * node's background work (hot-plug reconciles, daemon/hotplug.ts, and ResourceClaim reads ahead,
 * claim-cache.ts), so that a burst of edits or of new pods never starts more at once than the node
 * was told to bear (`plexus daemon --hot-plug-concurrency`).
 */
export class Limiter {
  private readonly waiting: Array<() => void> = [];
  private running = 0;

  constructor(readonly max: number) {
    if (!Number.isInteger(max) || max < 1)
      throw new Error(`a limiter needs a whole number of jobs above 0, got ${max}`);
  }

  /** Jobs running now (not those waiting). */
  get active(): number {
    return this.running;
  }

  /** Runs `job` once fewer than `max` jobs run; its result, or its error, is the caller's. */
  async run<T>(job: () => Promise<T>): Promise<T> {
    if (this.running >= this.max) await new Promise<void>((resolve) => this.waiting.push(resolve));
    else this.running++;
    try {
      return await job();
    } finally {
      // The slot passes to the next waiter as it is: never freed, then raced for.
      const next = this.waiting.shift();
      if (next) next();
      else this.running--;
    }
  }
}
