/**
 * The daemon's node-wide limiter (src/watch/limiter.ts): at most `max` jobs at a time, the others
 * in arrival order, a failed job's slot freed like a finished one's.
 */
import { describe, expect, it } from "vitest";
import { Limiter } from "../../../src/watch/limiter";

const tick = () => new Promise((r) => setTimeout(r, 1));

describe("the node's limiter", () => {
  it("B93 runs at most max jobs at a time, the others in arrival order", async () => {
    const limiter = new Limiter(2);
    let running = 0;
    let most = 0;
    const order: number[] = [];
    const job = (i: number) => async () => {
      running++;
      most = Math.max(most, running);
      order.push(i);
      await tick();
      running--;
      if (i === 3) throw new Error("job 3 failed");
      return i;
    };
    const results = await Promise.allSettled(
      Array.from({ length: 9 }, (_, i) => limiter.run(job(i))),
    );
    expect(most).toBe(2);
    expect(order).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8]);
    expect(results.filter((r) => r.status === "rejected")).toHaveLength(1);
    expect(limiter.active).toBe(0);
  });

  it("B93 a limit that is not a whole number above 0 is refused", () => {
    for (const bad of [0, -1, 1.5, Number.NaN])
      expect(() => new Limiter(bad)).toThrow(/whole number/);
  });
});
