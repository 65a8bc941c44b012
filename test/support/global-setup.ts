/**
 * Vitest's global setup: before the first test, what an earlier run left behind when it was killed
 * is swept (see leftovers.ts), unless another test run or a project script is alive on this
 * machine. Without root there is nothing of the kind to sweep.
 */
import { tmpdir } from "node:os";
import { describeLeftovers, otherLiveRuns, sweepLeftovers, TEST_NAME_PREFIX } from "./leftovers";

export default function setup(): void {
  if (process.getuid?.() !== 0) return;
  const others = otherLiveRuns();
  if (others.length > 0) {
    console.warn(`test run: another test run is alive (pid ${others.join(", ")}): no sweep`);
    return;
  }
  const found = describeLeftovers(sweepLeftovers({ prefix: TEST_NAME_PREFIX, tmpRoot: tmpdir() }));
  if (found.length > 0) {
    console.warn(`test run: removed an earlier run's leftovers:\n  ${found.join("\n  ")}`);
  }
}
