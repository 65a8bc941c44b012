/**
 * Vitest's global setup: before the first test, what an earlier run left behind when it was killed
 * is swept (see leftovers.ts), unless another test run or a project script is alive on this
 * machine. Without root there is nothing of the kind to sweep.
 */
import { execFileSync, spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { tmpdir } from "node:os";
import { describeLeftovers, otherLiveRuns, sweepLeftovers, TEST_NAME_PREFIX } from "./leftovers";

export default function setup(): (() => void) | undefined {
  if (process.getuid?.() !== 0) return undefined;
  const others = otherLiveRuns();
  if (others.length > 0) {
    console.warn(`test run: another test run is alive (pid ${others.join(", ")}): no sweep`);
    return makePodNetns();
  }
  const found = describeLeftovers(sweepLeftovers({ prefix: TEST_NAME_PREFIX, tmpRoot: tmpdir() }));
  if (found.length > 0) {
    console.warn(`test run: removed an earlier run's leftovers:\n  ${found.join("\n  ")}`);
  }
  // After the sweep, which would take it for a leftover.
  return makePodNetns();
}

/**
 * The pod namespace of this run's integration and unit calls (test/support/plexus-bin.ts
 * podNetns): one for the whole run, named for it, handed to the workers through the environment
 * and removed when the run ends (one a killed run left is swept by the next run's setup).
 */
function makePodNetns(): () => void {
  // Vitest runs this setup once per project in one process: a name of its own each time.
  const name = `${TEST_NAME_PREFIX}-it-pod-${process.pid}-${randomBytes(3).toString("hex")}`;
  execFileSync("ip", ["netns", "add", name]);
  process.env.PLEXUS_TEST_POD_NETNS = `/var/run/netns/${name}`;
  return () => {
    spawnSync("ip", ["netns", "delete", name]);
  };
}
