// The soak loop: builds the world, runs cycles until the count or the time limit, accounts after
// each, and always removes the world (also on SIGINT/SIGTERM and on failure).
import { readFileSync } from "node:fs";
import { account, LEAK_KINDS, scrub } from "./account.mjs";
import { describePlan, FAULTS, planCycle, runCycle } from "./cycle.mjs";
import { createWorld } from "./world.mjs";

/**
 * Problems that are not leftovers but fail the soak all the same: a DEL that kept failing, an ADD
 * that should have succeeded and did not, an ADD that reported an interface the netns lacks.
 */
const FAILURE_KINDS = ["del-failed", "add-failed", "add-result-missing"];
const PROBLEM_KINDS = [...LEAK_KINDS, ...FAILURE_KINDS];
export { LEAK_KINDS };

/** Runs one cycle in `world` and accounts for it; returns the plan and what was found. */
async function oneCycle(world, seed, index, settleMs) {
  const p = planCycle(seed, index);
  const nsName = `plx-soak-${world.tag}-${index}`;
  const netns = world.addNetns(nsName);
  let found;
  try {
    const problems = await runCycle(world, p, { name: nsName, path: netns });
    found = [...problems, ...(await account(world, nsName, settleMs))];
  } finally {
    world.deleteNetns(nsName);
  }
  if (found.length > 0) scrub(world, found);
  return { p, found };
}

function tally(summary, { p, found }) {
  summary.cycles++;
  summary.faults[p.kind]++;
  if (p.kind !== "none") summary.faulted++;
  if (found.length === 0) return;
  for (const k of new Set(found.map(([kind]) => kind))) summary.leaks[k]++;
  summary.byFault[p.kind] = (summary.byFault[p.kind] ?? 0) + 1;
  summary.leakyCycles.push({
    i: p.i,
    cycleSeed: p.seed,
    plan: describePlan(p),
    kind: p.kind,
    found,
  });
}

/**
 * @param o.cycles how many cycles; o.timeLimitS stops starting new ones after this many seconds;
 * o.seed, o.start (first cycle index, for replays); o.lanes independent worlds running cycles side
 * by side (cycle i runs in lane i mod lanes; what it does depends only on seed and i);
 * o.settleMs how long the accounting waits for a cycle's processes to end;
 * o.progress(summary) called after each cycle; o.signal stops starting new cycles once aborted (a
 * test's deadline): the cycles under way finish and the world is removed as on any other end.
 */
export async function runSoak(options) {
  const { cycles, timeLimitS = Infinity, seed, start = 0, lanes = 3, settleMs = 3000 } = options;
  const { progress, signal } = options;
  const summary = {
    seed,
    lanes,
    cycles: 0,
    faulted: 0,
    faults: Object.fromEntries(FAULTS.map(([k]) => [k, 0])),
    leaks: Object.fromEntries(PROBLEM_KINDS.map((k) => [k, 0])),
    leakyCycles: [],
    byFault: {},
    seconds: 0,
    interrupted: undefined,
    tags: [],
    roots: [],
  };
  const t0 = performance.now();
  const worlds = [];
  const cleanup = () => worlds.forEach((w) => w.cleanup());
  const onSignal = (sig) => {
    cleanup();
    process.exit(sig === "SIGINT" ? 130 : 143);
  };
  process.once("SIGINT", onSignal);
  process.once("SIGTERM", onSignal);
  try {
    const laneCount = Math.max(1, Math.min(lanes, cycles));
    for (let lane = 0; lane < laneCount; lane++) worlds.push(await createWorld({ lane }));
    summary.tags = worlds.map((w) => w.tag);
    summary.roots = worlds.map((w) => w.root);
    let next = start;
    const end = start + cycles;
    const runLane = async (world) => {
      while (next < end) {
        if ((performance.now() - t0) / 1000 > timeLimitS) {
          summary.interrupted = `time limit (${timeLimitS} s)`;
          return;
        }
        if (signal?.aborted) {
          summary.interrupted = "the caller's abort";
          return;
        }
        const i = next++;
        tally(summary, await oneCycle(world, seed, i, settleMs));
        progress?.(summary);
      }
    };
    await Promise.all(worlds.map(runLane));
  } finally {
    process.removeListener("SIGINT", onSignal);
    process.removeListener("SIGTERM", onSignal);
    cleanup();
    summary.seconds = (performance.now() - t0) / 1000;
  }
  summary.leakyCycles.sort((a, b) => a.i - b.i);
  return summary;
}

/**
 * The closing table: cycles, faults by kind, leaks by kind (cycles with at least one of that kind).
 */
export function formatSummary(summary, { firstLeaks = 5 } = {}) {
  const lines = [];
  const pct = (n) => `${((100 * n) / Math.max(1, summary.cycles)).toFixed(1)} %`;
  const rows = [
    [
      "cycles",
      String(summary.cycles),
      `seed ${summary.seed}, ${summary.lanes} lanes, ${summary.seconds.toFixed(0)} s, ` +
        `${(summary.cycles / Math.max(summary.seconds, 0.001)).toFixed(2)} cycles/s` +
        `${summary.interrupted ? `, stopped by ${summary.interrupted}` : ""}`,
    ],
    ["faulted cycles", String(summary.faulted), pct(summary.faulted)],
  ];
  for (const [k, n] of Object.entries(summary.faults))
    if (k !== "none")
      rows.push([
        `  fault ${k}`,
        String(n),
        summary.byFault[k] ? `${summary.byFault[k]} leaky` : "",
      ]);
  for (const [k, n] of Object.entries(summary.leaks))
    rows.push([
      `  ${FAILURE_KINDS.includes(k) ? "failure" : "leak"} ${k}`,
      String(n),
      n ? "MUST BE 0" : "",
    ]);
  rows.push([
    "cycles with a leak or failure",
    String(summary.leakyCycles.length),
    summary.leakyCycles.length ? "FAIL" : "ok",
  ]);
  const w0 = Math.max(...rows.map((r) => r[0].length));
  const w1 = Math.max(...rows.map((r) => r[1].length));
  for (const [a, b, c] of rows) lines.push(`${a.padEnd(w0)}  ${b.padStart(w1)}  ${c}`.trimEnd());
  for (const l of summary.leakyCycles.slice(0, firstLeaks)) {
    lines.push(
      "",
      `cycle ${l.i} (cycle seed ${l.cycleSeed}): ${l.plan}`,
      `  replay: npm run soak -- --seed ${summary.seed} --start ${l.i} --cycles 1`,
    );
    for (const [k, d] of l.found.slice(0, 8)) lines.push(`  ${k}: ${d}`);
    if (l.found.length > 8) lines.push(`  … ${l.found.length - 8} more`);
  }
  return lines.join("\n");
}

/**
 * Plants one leftover of every kind in a fresh world and returns the kinds the accounting finds
 * (the soak's own test: an accounting that sees nothing would pass every soak). Cleans up after.
 */
export async function accountingSelfCheck() {
  const { mkdirSync, writeFileSync } = await import("node:fs");
  const { execFileSync } = await import("node:child_process");
  const { join } = await import("node:path");
  const world = await createWorld({ lane: 0 });
  const sh = (args) => execFileSync(args[0], args.slice(1), { stdio: "ignore" });
  try {
    const ns = `plx-soak-${world.tag}-check`;
    world.addNetns(ns);
    sh(["ip", "-n", ns, "link", "add", "leak0", "type", "veth", "peer", "name", "leak1"]);
    sh([
      "ip",
      "link",
      "add",
      `plxs${world.tag}v`,
      "type",
      "veth",
      "peer",
      "name",
      `plxs${world.tag}w`,
    ]);
    sh(["ip", "link", "set", `plxs${world.tag}v`, "master", world.bridges[0]]);
    mkdirSync(join(world.dataDir, "cbr0"), { recursive: true });
    writeFileSync(join(world.dataDir, "cbr0", "10.230.0.99"), "x");
    for (const d of ["records", "results", "locks", "pending"])
      mkdirSync(join(world.cniDir, d), { recursive: true });
    writeFileSync(join(world.cniDir, "pending", "c-eth0.json"), "{}");
    writeFileSync(join(world.cniDir, "records", "c-eth0.json"), "{}");
    writeFileSync(join(world.cniDir, "results", "cbr0-c-eth0"), "{}");
    writeFileSync(join(world.cniDir, "records", ".c-eth0.json.tmp-1-1-a"), "");
    writeFileSync(join(world.cniDir, "locks", "old.lock"), "");
    writeFileSync(join(world.cniDir, "stray"), "");
    // A marked process holding a lock: "lock-held" and "process".
    const [k, v] = world.marker.split("=");
    const { spawn } = await import("node:child_process");
    const holder = spawn("flock", [join(world.cniDir, "locks", "held.lock"), "sleep", "30"], {
      env: { ...process.env, [k]: v },
      stdio: "ignore",
    });
    for (let i = 0; i < 100 && !readLocks().includes(" FLOCK "); i++)
      await new Promise((r) => setTimeout(r, 20));
    const found = await account(world, ns, 0);
    scrub(world, found);
    holder.kill("SIGKILL");
    world.deleteNetns(ns);
    return {
      kinds: [...new Set(found.map(([kind]) => kind))].sort(),
      found,
      after: await account(world, undefined, 1000),
    };
  } finally {
    world.cleanup();
  }
}

function readLocks() {
  return readFileSync("/proc/locks", "utf8");
}
