// STATUS under polling: CRI-O and containerd 2 ask a CNI plugin STATUS every few seconds for as
// long as the node runs. One STATUS through dist/plexus with K = 0, 2, 8 delegate configs (each a
// 1.1.0 config whose plugin is a shell script that reads its stdin and answers "ok", the least a
// STATUS-capable plugin costs), wall time per call (interleaved rounds, medians) and CPU time per
// call (user + system of batches of calls, delegates included, from /usr/bin/time), against the
// same delegates run directly; then what a node pays per hour at a 5 s poll (720 calls). K = 0 is
// the installed config: `clusterNetwork` a file path, no inline delegates. No root needed.
import { spawnSync } from "node:child_process";
import { chmodSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { cni, fmt, median, rel, RUNTIME_ENV, table } from "./lib.mjs";

const COUNTS = [0, 2, 8];
/** A poll every 5 s: the calls one node makes in an hour. */
const CALLS_PER_HOUR = 3600 / 5;
/** Calls per CPU batch: /usr/bin/time reports CPU in hundredths of a second. */
const BATCH = 40;
/** A STATUS-capable plugin at its cheapest: reads its config, answers ok (no output). */
const PLUGIN = "#!/bin/sh\nwhile read -r line; do :; done\nexit 0\n";

function delegate(k) {
  return { cniVersion: "1.1.0", name: `status${k}`, type: "statusok" };
}

/** The node of one K: Plexus's config and the delegates' configs, as files. */
function world(tmp, K) {
  const root = join(tmp, `k${K}`);
  mkdirSync(root, { recursive: true });
  const delegates = Array.from({ length: K }, (_, k) => delegate(k));
  const conf = {
    cniVersion: "1.1.0",
    name: "plexus-bench",
    type: "plexus",
    cniDir: join(root, "cni"),
    ...(K === 0 ? { clusterNetwork: join(root, "10-primary.conflist") } : { delegates }),
  };
  // An installed node's primary network, of a version that predates STATUS (as Debian's reference
  // plugins' configs are): read, not asked.
  const primary = { cniVersion: "1.0.0", name: "primary", plugins: [{ type: "statusok" }] };
  writeFileSync(join(root, "10-primary.conflist"), JSON.stringify(primary));
  const confPath = join(root, "plexus.conf");
  writeFileSync(confPath, JSON.stringify(conf));
  const delegatePaths = delegates.map((d, k) => {
    const path = join(root, `delegate-${k}.conf`);
    writeFileSync(path, JSON.stringify(d));
    return path;
  });
  return { conf: JSON.stringify(conf), confPath, delegates, delegatePaths };
}

/**
 * CPU seconds (user + system, children included) of `script` run by sh under /usr/bin/time: the
 * loop's own shell costs the same in both batches it is compared between.
 */
function cpuSeconds(script, env) {
  const r = spawnSync("/usr/bin/time", ["-f", "%U %S", "sh", "-c", script], {
    env,
    encoding: "utf8",
    stdio: ["ignore", "ignore", "pipe"],
  });
  if (r.status !== 0) throw new Error(`the CPU batch failed (${r.status}): ${r.stderr}`);
  const [user, system] = r.stderr.trim().split("\n").at(-1).split(" ").map(Number);
  return user + system;
}

/** A loop of `BATCH` STATUS calls (or of the K delegates run directly), failing on any error. */
function batchScript({ confPath, delegatePaths, plugin, direct }) {
  const body = direct
    ? delegatePaths.map((p) => `'${plugin}' < '${p}' || exit 1`).join("; ") || ":"
    : `dist/plexus < '${confPath}' > /dev/null || exit 1`;
  return `i=0; while [ $i -lt ${BATCH} ]; do ${body}; i=$((i+1)); done`;
}

/** One K: interleaved wall rounds (Plexus, then its delegates directly), then CPU batches. */
async function benchStatusAt({ K, tmp, env, plugin, runs }) {
  const w = world(tmp, K);
  const wall = { plexus: [], direct: [] };
  for (let i = 0; i < runs + 2; i++) {
    const p = await cni("dist/plexus", env, w.conf);
    let direct = 0;
    for (const d of w.delegates) direct += (await cni(plugin, env, JSON.stringify(d))).ms;
    if (i < 2) continue; // warm the page cache
    wall.plexus.push(p.ms);
    wall.direct.push(direct);
  }
  const cpu = { plexus: [], direct: [] };
  const batches = Math.max(3, Math.round(runs / 5));
  for (let i = 0; i < batches; i++) {
    cpu.plexus.push(cpuSeconds(batchScript({ ...w, plugin, direct: false }), env) / BATCH);
    cpu.direct.push(cpuSeconds(batchScript({ ...w, plugin, direct: true }), env) / BATCH);
  }
  const cpuMs = median(cpu.plexus) * 1000;
  const directCpuMs = median(cpu.direct) * 1000;
  return {
    K,
    wallMs: median(wall.plexus),
    directWallMs: median(wall.direct),
    cpuMs,
    directCpuMs,
    cpuSecondsPerHour: (cpuMs / 1000) * CALLS_PER_HOUR,
  };
}

function printStatus(rows) {
  const load = loadavg()
    .map((l) => l.toFixed(1))
    .join(" / ");
  console.log(
    "== STATUS under polling: one call with K delegate configs, and a node's cost at a 5 s " +
      `poll (${CALLS_PER_HOUR} calls/h); load average now ${load}`,
  );
  table(
    [
      "K",
      "wall ms",
      "delegates direct ms",
      "own wall ms",
      "CPU ms/call",
      "delegates' CPU ms",
      "own CPU ms",
      "CPU s/h",
      "% of a core",
    ],
    rows.map((r) => [
      r.K,
      rel(r.wallMs),
      fmt(r.directWallMs),
      fmt(r.wallMs - r.directWallMs),
      fmt(r.cpuMs),
      fmt(r.directCpuMs),
      fmt(r.cpuMs - r.directCpuMs),
      r.cpuSecondsPerHour.toFixed(1),
      ((r.cpuSecondsPerHour / 3600) * 100).toFixed(2),
    ]),
  );
  console.log("");
}

export async function benchStatus(runs, counts = COUNTS) {
  if (!existsSync("/usr/bin/time")) {
    console.log("== status: skipped (needs /usr/bin/time, Debian's `time` package)\n");
    return undefined;
  }
  const tmp = mkdtempSync(join(tmpdir(), "plx-bench-status-"));
  const bin = join(tmp, "bin");
  mkdirSync(bin);
  const plugin = join(bin, "statusok");
  writeFileSync(plugin, PLUGIN);
  chmodSync(plugin, 0o755);
  const env = { ...RUNTIME_ENV, CNI_COMMAND: "STATUS", CNI_PATH: bin };
  const rows = [];
  try {
    for (const K of counts) rows.push(await benchStatusAt({ K, tmp, env, plugin, runs }));
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
  printStatus(rows);
  return rows;
}
