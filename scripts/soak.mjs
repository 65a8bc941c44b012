// `npm run soak`: a bounded fault soak of dist/plexus on real namespaces with the reference
// plugins (bridge + host-local), driven as a runtime drives it. Every cycle ADDs a pod with 0–4
// extra networks, about half of them with one fault (SIGKILL of Plexus in ADD or DEL, delegates
// that hang, crash, print garbage or sleep past the kill, concurrent ADD/ADD and ADD/DEL of one
// container, API server 5xx/resets/hangs/409s, daemon kills; DEL's own faults: a delegate DEL
// that fails once its state is gone, DELs slower than the DEL deadline, a `setsid` grandchild that
// would attach late, a full cniDir, a runtime that calls DEL once), runs the runtime's DEL
// sequence, and accounts for every link, IP reservation, record, cache, temp and lock file and
// process.
// Ends with one table; exits 1 on any leak (the first few printed with their replay command).
//
//   npm run soak -- --cycles 10000 --time-limit 3600 --seed 42
import { parseArgs } from "node:util";
import { formatSummary, runSoak } from "./soak/run.mjs";

const { values } = parseArgs({
  options: {
    cycles: { type: "string", default: "10000" },
    "time-limit": { type: "string", default: "3600" },
    seed: { type: "string" },
    start: { type: "string", default: "0" },
    lanes: { type: "string", default: "3" },
    "show-leaks": { type: "string", default: "5" },
    quiet: { type: "boolean", default: false },
    help: { type: "boolean", short: "h", default: false },
  },
});
if (values.help) {
  console.log(`usage: npm run soak -- [--cycles N] [--time-limit SECONDS] [--seed S] [--start I]
                     [--lanes N] [--show-leaks N]
  --cycles       cycles to run (default 10000)
  --time-limit   no new cycle starts after this many seconds (default 3600)
  --seed         makes the run reproducible (default: random, printed)
  --start        index of the first cycle (replay one cycle: --seed S --start I --cycles 1)
  --show-leaks   how many leaky cycles to print in full (default 5)
  --lanes        independent worlds (bridges, state dirs, API server, daemon) running cycles
                 side by side (default 3); networks use 10.230–10.239.x
Needs root, iproute2, /usr/lib/cni/{bridge,host-local} and a built dist/plexus (npm run build).`);
  process.exit(0);
}
const num = (name) => {
  const n = Number(values[name]);
  if (!Number.isFinite(n) || n < 0) {
    console.error(
      `soak: --${name} must be a non-negative number, got ${JSON.stringify(values[name])}`,
    );
    process.exit(2);
  }
  return n;
};
if (process.getuid?.() !== 0) {
  console.error("soak: needs root (network namespaces and bridges)");
  process.exit(2);
}
const seed = values.seed === undefined ? Math.floor(Math.random() * 2 ** 31) : num("seed");
const cycles = num("cycles");
console.error(`soak: seed ${seed}, ${cycles} cycles, time limit ${num("time-limit")} s`);
let last = 0;
const summary = await runSoak({
  cycles,
  timeLimitS: num("time-limit"),
  seed,
  start: num("start"),
  lanes: num("lanes"),
  progress: (s) => {
    if (values.quiet || Date.now() - last < 10_000) return;
    last = Date.now();
    console.error(
      `soak: ${s.cycles} cycles done, ${s.faulted} faulted, ${s.leakyCycles.length} with leaks`,
    );
  },
});
console.log(formatSummary(summary, { firstLeaks: num("show-leaks") }));
process.exit(summary.leakyCycles.length > 0 ? 1 : 0);
