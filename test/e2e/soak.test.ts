/**
 * The fault soak (scripts/soak.mjs) in its short form: 300 seeded cycles of
 * dist/plexus on real namespaces with bridge + host-local, about half of them faulted (SIGKILL in
 * ADD and DEL, delegates that hang, crash, print garbage or sleep past the kill, concurrent
 * ADD/ADD and ADD/DEL, API 5xx/resets/hangs/409s, daemon kills; a delegate DEL that fails once its
 * state is gone, DELs slower than the DEL deadline, a `setsid` grandchild, a full cniDir, a runtime
 * that calls DEL once), each followed by the runtime's
 * DEL sequence and accounted for: no link, bridge port, IP reservation, record, cache, temp or
 * lock file, or process may be left. Same code as `npm run soak`; subnets 10.230–10.239.
 */
import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import { expect, it } from "vitest";
import {
  accountingSelfCheck,
  formatSummary,
  LEAK_KINDS,
  runSoak,
  type LeakyCycle,
} from "../../scripts/soak/run.mjs";
import { describeE2e } from "../support/netns";

const SEED = 13;
const CYCLES = 300;

/**
 * Leaks of known bugs not fixed yet, as (fault kind, leak kind): a leaky cycle is excused only when
 * its fault is listed and every leftover it left is of the listed kind; its leaks are printed.
 * `npm run soak` reports them all the same. Remove an entry when its bug is fixed.
 */
const KNOWN_FAILING: Array<{ fault: string; leak: string; bug: string }> = [];

const excused = (cycle: LeakyCycle): boolean =>
  cycle.found.every(([leak]) =>
    KNOWN_FAILING.some((k) => k.fault === cycle.kind && k.leak === leak),
  );

describeE2e("e2e fault soak (300 cycles of npm run soak)", () => {
  it("the accounting sees one planted leftover of every kind, and scrubbing removes them", async () => {
    const r = await accountingSelfCheck();
    expect(r.kinds).toEqual([...LEAK_KINDS].sort());
    expect(r.after).toEqual([]);
  });

  // Bounded by its cycles, not by time: the deadline below only keeps a wedged soak from holding
  // CI for good, and on it the soak stops starting cycles and removes its world.
  const title =
    "300 seeded cycles, ≥ 30 % faulted, every fault kind: nothing left, unfaulted ADDs succeed";
  it(title, async ({ signal }) => {
    const s = await runSoak({ cycles: CYCLES, seed: SEED, lanes: 3, signal });
    const table = formatSummary(s, { firstLeaks: 10 });
    console.log(table);
    expect(s.cycles).toBe(CYCLES);
    expect(s.faulted / s.cycles).toBeGreaterThanOrEqual(0.3);
    for (const [kind, n] of Object.entries(s.faults))
      expect(n, `cycles with fault ${kind}`).toBeGreaterThan(0);
    const known = s.leakyCycles.filter(excused);
    if (known.length > 0)
      console.warn(
        `KNOWN_FAILING excused ${known.length} leaky cycles: ` +
          `${known
            .map(
              (l) =>
                `cycle ${l.i} ${l.kind}: ` + `${l.found.map(([k, d]) => `${k} ${d}`).join("; ")}`,
            )
            .join(" | ")}`,
      );
    const unexpected = s.leakyCycles
      .filter((l) => !excused(l))
      .map((l) => `cycle ${l.i} ${l.plan}: ${l.found.map(([k, d]) => `${k} ${d}`).join("; ")}`);
    expect(unexpected, table).toEqual([]);
    // The soak removed everything it made: namespaces, bridges, temp dirs.
    for (const root of s.roots) expect(existsSync(root), root).toBe(false);
    const netns = execFileSync("ip", ["netns", "list"], { encoding: "utf8" });
    const hostLinks = execFileSync("ip", ["-o", "link", "show"], { encoding: "utf8" });
    for (const tag of s.tags) {
      expect(netns).not.toContain(`plx-soak-${tag}-`);
      expect(hostLinks).not.toContain(`plxs${tag}`);
    }
  }, 1_200_000);
});
