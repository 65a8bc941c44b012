/**
 * The reaper (invoke/orphans.ts) and the runner that ships (invoke/spawn-bun.ts over Bun.spawn),
 * run under Bun: what a delegate leaves outside its process group is killed when it ends, and the
 * children the caller names (the log's compressors) are spared. The reaper knows nothing of the
 * logger: it is told what to spare.
 */
import { describe, expect, it } from "vitest";
import { runBunCase } from "../sys/run-bun";

describe("B69 leftovers of a delegate", () => {
  it("B69 B74 the runner kills the process a delegate left in a session of its own, and spares the child its caller names (a log compressor)", () => {
    const seen = runBunCase("runner");
    expect(seen.exitCode).toBe(0);
    expect(seen.left).toBeGreaterThan(1);
    expect(seen.killed).toEqual([seen.left]);
    expect(seen.leftAlive).toBe(false);
    expect(seen.sparedAlive).toBe(true);
  });

  it("B69 the reaper kills every orphan it is not told to spare, and only those", () => {
    const seen = runBunCase("orphans");
    expect(seen.subreaper).toBe(true);
    expect(seen.killed).toEqual([seen.other]);
    expect(seen.otherAlive).toBe(false);
    expect(seen.spareAlive).toBe(true);
  });
});
