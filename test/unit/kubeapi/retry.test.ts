/**
 * src/kubeapi/retry.ts with a fake clock: backoff bounds, Retry-After, attempt and deadline caps
 * (B34, B35).
 */
import { describe, expect, it } from "vitest";
import {
  backoffMs,
  parseRetryAfter,
  RetriesExhausted,
  type RetryClock,
  withRetry,
} from "../../../src/kubeapi/retry";

function fakeClock(random = 0.5): RetryClock & { slept: number[] } {
  let t = 1_000_000;
  const slept: number[] = [];
  return {
    slept,
    now: () => t,
    sleep: async (ms) => void (slept.push(ms), (t += ms)),
    random: () => random,
  };
}

const policy = {
  requestTimeoutMs: 100,
  totalTimeoutMs: 1_000,
  baseDelayMs: 10,
  maxDelayMs: 80,
  maxAttempts: 5,
};

describe("retry", () => {
  it("B35 backoff doubles from base, is capped, and keeps half of it fixed (jitter on the other half)", () => {
    expect([1, 2, 3, 4, 5].map((n) => backoffMs(n, policy, () => 0))).toEqual([5, 10, 20, 40, 40]);
    expect([1, 2, 3, 4, 5].map((n) => backoffMs(n, policy, () => 0.999))).toEqual([
      10, 20, 40, 80, 80,
    ]);
  });

  it("B35 Retry-After: seconds or an HTTP date; garbage is ignored", () => {
    const now = Date.parse("2026-01-01T00:00:00Z");
    expect(parseRetryAfter("3", now)).toBe(3000);
    expect(parseRetryAfter("Thu, 01 Jan 2026 00:00:02 GMT", now)).toBe(2000);
    expect(parseRetryAfter("soon", now)).toBeUndefined();
    expect(parseRetryAfter(undefined, now)).toBeUndefined();
  });

  it("B34 a retryable failure is retried up to maxAttempts, then RetriesExhausted wraps the last error", async () => {
    const clock = fakeClock();
    let calls = 0;
    const err = await withRetry(
      async () => {
        calls++;
        throw new Error(`boom ${calls}`);
      },
      { policy, classify: () => ({ retry: true }), clock },
    ).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RetriesExhausted);
    expect((err as RetriesExhausted).attempts).toBe(5);
    expect(((err as RetriesExhausted).lastError as Error).message).toBe("boom 5");
    expect(clock.slept).toEqual([8, 15, 30, 60]);
  });

  it("a non-retryable failure is rethrown as it is, after one attempt", async () => {
    const original = new Error("400");
    let calls = 0;
    const attempt = async (): Promise<never> => {
      calls++;
      throw original;
    };
    await expect(
      withRetry(attempt, { policy, classify: () => ({ retry: false }), clock: fakeClock() }),
    ).rejects.toBe(original);
    expect(calls).toBe(1);
  });

  it("B35 Retry-After longer than the backoff is honoured; one past the deadline stops at once", async () => {
    const clock = fakeClock();
    let calls = 0;
    const v = await withRetry(async () => (++calls < 2 ? Promise.reject(new Error("429")) : "ok"), {
      policy,
      classify: () => ({ retry: true, afterMs: 300 }),
      clock,
    });
    expect(v).toBe("ok");
    expect(clock.slept).toEqual([300]);
    const late = await withRetry(async () => Promise.reject(new Error("429")), {
      policy,
      classify: () => ({ retry: true, afterMs: 5_000 }),
      clock: fakeClock(),
    }).catch((e: unknown) => e);
    expect(late).toMatchObject({ attempts: 1, why: "deadline" });
  });

  it("B35 each attempt's timeout shrinks to what is left of the deadline (deadlineAt wins over the policy)", async () => {
    const clock = fakeClock();
    const start = clock.now();
    const timeouts: number[] = [];
    const err = await withRetry(
      async (t) => {
        timeouts.push(t);
        await clock.sleep(t); // the attempt used its whole timeout
        throw new Error("timeout");
      },
      {
        policy: { ...policy, maxAttempts: 100 },
        classify: () => ({ retry: true }),
        clock,
        deadlineAt: start + 250,
      },
    ).catch((e: unknown) => e);
    expect(err).toMatchObject({ why: "deadline" });
    expect(timeouts[0]).toBe(100);
    expect(timeouts.every((t) => t >= 1 && t <= 100)).toBe(true);
    expect(timeouts.at(-1)).toBeLessThan(100);
    expect(clock.now() - start).toBeLessThanOrEqual(250);
  });
});
