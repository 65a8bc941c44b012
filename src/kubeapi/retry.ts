/**
 * Bounded retries for API requests (B34, B35, B36): a timeout per attempt, a deadline for the whole
 * operation, exponential backoff with jitter, and `Retry-After` honoured but never past the
 * deadline. Multus retries `GetPod` with a fixed 250 ms budget, which fails on slow clusters; the
 * numbers here are options (wired to config keys by the caller) with roomier defaults.
 */
import { DEFAULT_API_REQUEST_TIMEOUT_MS, DEFAULT_API_TOTAL_TIMEOUT_MS } from "../config/defaults";

export interface RetryPolicy {
  /** One attempt, headers and body included (ms). */
  requestTimeoutMs: number;
  /** The whole operation, backoff included (ms). */
  totalTimeoutMs: number;
  /** First backoff (ms); doubles per attempt up to `maxDelayMs`. */
  baseDelayMs: number;
  maxDelayMs: number;
  /** Attempts in all, the first included. */
  maxAttempts: number;
}

export const DEFAULT_RETRY_POLICY: Readonly<RetryPolicy> = {
  requestTimeoutMs: DEFAULT_API_REQUEST_TIMEOUT_MS,
  totalTimeoutMs: DEFAULT_API_TOTAL_TIMEOUT_MS,
  baseDelayMs: 100,
  maxDelayMs: 2_000,
  maxAttempts: 6,
};

/** What to do after a failed attempt. `afterMs`: the server asked to wait (Retry-After). */
export type RetryVerdict = { retry: false } | { retry: true; afterMs?: number | undefined };

export interface RetryClock {
  now(): number;
  sleep(ms: number): Promise<void>;
  /** [0, 1). */
  random(): number;
}

export const realClock: RetryClock = {
  now: () => Date.now(),
  sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
  random: () => Math.random(),
};

/** The last attempt's error, and why there was no further attempt. */
export class RetriesExhausted extends Error {
  override name = "RetriesExhausted";
  constructor(
    readonly lastError: unknown,
    readonly attempts: number,
    readonly elapsedMs: number,
    readonly why: "attempts" | "deadline",
  ) {
    super(
      `gave up after ${attempts} attempt(s) in ${elapsedMs} ms ` +
        `(${why === "attempts" ? "attempt limit" : "deadline"})`,
      { cause: lastError },
    );
  }
}

/**
 * Backoff before attempt `n + 1` (n ≥ 1): base·2^(n-1) capped, "equal jitter" (half fixed, half
 * random).
 */
export function backoffMs(
  attempt: number,
  policy: Pick<RetryPolicy, "baseDelayMs" | "maxDelayMs">,
  random: () => number,
): number {
  const ceiling = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** Math.max(0, attempt - 1));
  return Math.round(ceiling / 2 + random() * (ceiling / 2));
}

/** `Retry-After`: delta-seconds or an HTTP-date (RFC 9110 §10.2.3); undefined when unusable. */
export function parseRetryAfter(value: string | undefined, now: number): number | undefined {
  if (value === undefined) return undefined;
  const v = value.trim();
  if (/^\d+$/.test(v)) return Number(v) * 1000;
  const at = Date.parse(v);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}

export interface RetryOptions {
  policy: RetryPolicy;
  classify(err: unknown): RetryVerdict;
  /** Absolute cap (epoch ms) from the caller, e.g. the whole ADD's budget. */
  deadlineAt?: number | undefined;
  clock?: RetryClock;
  /** Called before each backoff sleep (logging). */
  onRetry?(err: unknown, attempt: number, delayMs: number): void;
}

/**
 * Runs `attempt(timeoutMs, n)` until it succeeds, `classify` says stop (that error is rethrown as
 * it is), or attempts/deadline run out (`RetriesExhausted` wrapping the last error). Each attempt's
 * timeout is the policy's, shortened to what is left of the deadline.
 */
export async function withRetry<T>(
  attempt: (timeoutMs: number, n: number) => Promise<T>,
  options: RetryOptions,
): Promise<T> {
  const clock = options.clock ?? realClock;
  const start = clock.now();
  const deadline = Math.min(
    start + options.policy.totalTimeoutMs,
    options.deadlineAt ?? Number.POSITIVE_INFINITY,
  );
  for (let n = 1; ; n++) {
    const left = deadline - clock.now();
    const timeoutMs = Math.max(1, Math.min(options.policy.requestTimeoutMs, left));
    try {
      return await attempt(timeoutMs, n);
    } catch (err) {
      const verdict = options.classify(err);
      if (!verdict.retry) throw err;
      const elapsed = clock.now() - start;
      if (n >= options.policy.maxAttempts) throw new RetriesExhausted(err, n, elapsed, "attempts");
      const delay = Math.max(backoffMs(n, options.policy, clock.random), verdict.afterMs ?? 0);
      // Waiting past the deadline only to fail later helps nobody: give up now.
      if (clock.now() + delay >= deadline) throw new RetriesExhausted(err, n, elapsed, "deadline");
      options.onRetry?.(err, n, delay);
      await clock.sleep(delay);
    }
  }
}
