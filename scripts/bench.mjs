// npm run bench: prints figures, asserts nothing (targets are compared in the printed tables).
// dist/plexus is the Bun executable; the harness (this script, the fake API server) runs on the
// pinned Node 24, whose `node -e 0` is the yardstick printed beside every figure.
// Needs dist/ built (npm run build) and root for the netns sections. `npm run bench -- pods-api`
// runs one section; BENCH_RUNS sets the interleaved rounds per figure (default 20);
// BENCH_PY_LATENCY_MS adds a latency to every answer of the Python fake API server (multus, storm).
import { execFileSync } from "node:child_process";
import { existsSync, readdirSync, rmdirSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { benchVersion } from "./bench/version.mjs";
import { benchDelegates } from "./bench/delegates.mjs";
import { benchPods } from "./bench/pods.mjs";
import { benchPodsApi } from "./bench/pods-api.mjs";
import { benchParallel } from "./bench/parallel.mjs";
import { benchDaemon } from "./bench/daemon.mjs";
import { benchDevices } from "./bench/devices.mjs";
import { benchMultus } from "./bench/multus.mjs";
import { benchBreakdown } from "./bench/breakdown.mjs";
import { benchScale } from "./bench/scale.mjs";
import { benchPending } from "./bench/pending.mjs";
import { benchStatus } from "./bench/status.mjs";
import { benchStorm, removeStormCgroups } from "./bench/storm.mjs";
import { fmt, measureFloor, rel } from "./bench/lib.mjs";
import { MULTUS_NODE_MS } from "./bench/pods-api.mjs";
import { bunPath } from "./bun-path.mjs";

const runs = Number(process.env.BENCH_RUNS ?? 20);
// A runtime runs Plexus without it; with it every TLS context of every Node process here would
// also parse that bundle (some CI images set it), which no node pays in production.
delete process.env.NODE_EXTRA_CA_CERTS;
const started = Date.now() - 1000;
// Interrupted (Ctrl-C, a CI timeout): the sections' finally blocks do not run, so remove what any
// of them makes here: the storm's memory cgroups (what runs in them killed), namespaces ending in
// this pid and the bench bridges (plxb*, plxq*, plxa*, plxpar*, plxd*, plxk*, plxst*) and temp
// dirs. The pods' veths go with their namespaces; stray `plexus daemon`s get SIGTERM.
for (const signal of ["SIGINT", "SIGTERM"]) {
  process.once(signal, () => {
    const quiet = { stdio: ["ignore", "pipe", "ignore"], encoding: "utf8" };
    // Children first (CNI calls, daemons), then a moment for delegates already running to end.
    try {
      execFileSync("pkill", ["-TERM", "-P", String(process.pid)], quiet);
    } catch {}
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 500);
    try {
      removeStormCgroups();
    } catch {}
    const lines = (args) => {
      try {
        return execFileSync("ip", args, quiet).split("\n");
      } catch {
        return [];
      }
    };
    for (const l of lines(["netns", "list"])) {
      const name = l.split(" ")[0];
      if (name && /^plx-bench/.test(name) && name.includes(String(process.pid)))
        try {
          execFileSync("ip", ["netns", "del", name], quiet);
        } catch {}
    }
    for (const l of lines(["-o", "link", "show"])) {
      const name = /^\d+: ([^:@]+)/.exec(l)?.[1];
      if (name && /^plx(b|q|a|par|d|k|st)\d+$/.test(name))
        try {
          execFileSync("ip", ["link", "del", name], quiet);
        } catch {}
    }
    // The sections' temp dirs (plx-bench*), made since this run started.
    for (const d of readdirSync(tmpdir())) {
      const path = join(tmpdir(), d);
      try {
        if (d.startsWith("plx-bench") && statSync(path).ctimeMs >= started)
          rmSync(path, { recursive: true, force: true });
      } catch {}
    }
    // Multus thick's mount point, when this run made it (still empty: its tmpfs was private).
    try {
      if (statSync("/run/secrets").ctimeMs >= started && readdirSync("/run/secrets").length === 0)
        rmdirSync("/run/secrets");
    } catch {}
    console.error(`bench: interrupted (${signal}); its namespaces and bridges are removed`);
    process.exit(130);
  });
}
if (Number(process.versions.node.split(".")[0]) < 24) {
  console.error(
    `bench: Node ${process.versions.node}; run it as \`npm run bench\` (the project's pinned ` +
      `Node 24 is the floor it measures)`,
  );
  process.exit(1);
}
if (!existsSync("dist/plexus")) {
  console.error("bench: dist/plexus is missing; run `npm run build` first");
  process.exit(1);
}
const only = process.argv.slice(2);
const want = (name) => only.length === 0 || only.includes(name);
const bun = execFileSync(bunPath(), ["--version"], { encoding: "utf8" }).trim();
const floor = await measureFloor(runs);
console.log(
  `Plexus benchmarks: dist/plexus built with Bun ${bun}; harness on node ` +
    `${process.versions.node}; ${runs} interleaved runs per figure, medians`,
);
console.log(
  `node -e 0 on this host now: ${fmt(floor.ms)} ms, peak RSS ` +
    `${(floor.rssKiB / 1024).toFixed(1)} MiB; every figure is followed by its ratio to these ` +
    `(the targets were set where node -e 0 took ~21 ms)\n`,
);
const version = want("version") ? await benchVersion(runs) : undefined;
if (want("delegates")) await benchDelegates(runs);
if (want("pods")) await benchPods(runs);
const api = want("pods-api") ? await benchPodsApi(runs) : undefined;
const parallel = want("parallel")
  ? await benchParallel(Math.max(3, Math.round(runs / 4)))
  : undefined;
const daemon = want("daemon") ? await benchDaemon() : undefined;
const devices = want("devices") ? await benchDevices(runs) : undefined;
const breakdown = want("breakdown") ? await benchBreakdown(runs) : undefined;
if (want("scale")) await benchScale();
if (want("pending")) await benchPending(runs);
if (want("status")) await benchStatus(runs);
const multus = want("multus") ? await benchMultus(runs) : undefined;
const storm = want("storm") ? await benchStorm(runs) : undefined;

// The start-up targets. Each figure with its ratio to `node -e 0` in this run, each target with its
// ratio to the ~21 ms node -e 0 of the run that set it, so a busier host can be read fairly.
const lines = [];
const verdict = (ok) => (ok ? "met" : "NOT met");
const target = (what, got, limit, print = rel) => {
  if (print !== rel)
    return lines.push(`${what}: ${print(got)} (target ≤ ${limit} MiB): ${verdict(got <= limit)}`);
  const ratio = `${verdict(got / floor.ms <= limit / MULTUS_NODE_MS)} by ratio`;
  return lines.push(
    `${what}: ${print(got)} (target ≤ ${limit} ms = ${(limit / MULTUS_NODE_MS).toFixed(2)}×): ` +
      `${verdict(got <= limit)} in ms, ${ratio}`,
  );
};
const mib = (value) => `${value.toFixed(1)} MiB`;
if (version) {
  target("VERSION", version.version, 12);
  const ratio = version.version / floor.ms;
  lines.push(`VERSION ÷ node -e 0: ${ratio.toFixed(2)}× (target ≤ 0.4×): ${verdict(ratio <= 0.4)}`);
}
const at = (extras) => api?.find((r) => r.latencyMs === 0 && r.K === extras);
for (const K of [0, 1, 2, 8]) {
  const r = at(K);
  if (!r) continue;
  const limit = K <= 2 ? 42 : 105;
  target(`K=${K} own ADD+DEL, thin`, r.thinOwn, limit);
  target(`K=${K} own ADD+DEL, daemon`, r.daemonOwn, limit);
}
if (parallel?.thin10)
  target("10 pods × K=2 in parallel, ADD total, thin", parallel.thin10.wall, 420);
if (parallel?.daemon10)
  target("10 pods × K=2 in parallel, ADD total, daemon", parallel.daemon10.wall, 420);
if (parallel?.thinVsMultus !== undefined)
  lines.push(
    `10 pods × K=2 in parallel, ADD total, Plexus thin / Multus thin: ` +
      `${parallel.thinVsMultus.toFixed(2)}× (target ≤ 1.0×): ` +
      `${verdict(parallel.thinVsMultus <= 1)}`,
  );
if (api?.length) {
  const peak = api.reduce((a, r) => Math.max(a, r.peakRssMiB), 0);
  target("peak RSS of one CNI call", peak, 40, mib);
  lines.push(
    `API requests per ADD: thin ≤ 3+K: ` +
      `${api.every((r) => r.tReads + r.tWrites <= 3 + r.K) ? "met" : "NOT met"}; daemon 0 reads, ` +
      `≤ 2 writes: ${api.every((r) => r.dReads === 0 && r.dWrites <= 2) ? "met" : "NOT met"}`,
  );
}
if (daemon) target("daemon RSS at 10,000 NADs + 110 pods", daemon.rssMiB, 100, mib);
// A device network's ADD costs at most a plain network's + 10 ms.
if (devices) {
  lines.push(
    `device network ADD − plain network ADD, thin: ${rel(devices.thinExtra)} (target ≤ 10 ms): ` +
      `${verdict(devices.thinExtra <= 10)}`,
  );
  lines.push(
    `device network ADD − plain network ADD, daemon: ${rel(devices.daemonExtra)} (target ≤ 10 ` +
      `ms): ${verdict(devices.daemonExtra <= 10)}`,
  );
}
// Against Multus v4.0.2 measured in the same run (the optional peer), when it was built, on each
// harness (the Node fake with its protobuf front, the Python fake talked to directly).
const vs = (extras, harness = "node") =>
  multus?.find((r) => r.K === extras && r.harness === harness);
for (const harness of ["node", "python"])
  for (const [K, limit] of [
    [0, 0.7],
    [2, 0.7],
    [8, 0.2],
  ]) {
    const r = vs(K, harness);
    if (!r) continue;
    const ratio = r.thinVsMultus;
    lines.push(
      // At large K, Plexus's own time can be smaller than the spread of the delegates' runs it is
      // computed against: a ratio at or below zero says "within that noise", not "negative".
      `K=${K} own ADD+DEL, thin, ÷ Multus thin's (${harness} fake): ${
        ratio > 0
          ? `${ratio.toFixed(2)}×`
          : "≤ 0.01× (own time " + "within the noise of the delegates' runs)"
      } (target ≤ ${limit}×): ${verdict(ratio <= limit)}`,
    );
  }
for (const r of multus ?? []) {
  if (!r.thick) continue;
  lines.push(
    `K=${r.K} (${r.harness} fake) daemon-mode ADD ${fmt(r.daemon.add)} ms ÷ Multus thick's ` +
      `${fmt(r.thick.add)} ms: ${(r.daemon.add / r.thick.add).toFixed(2)}×, ÷ Plexus thin's ` +
      `${fmt(r.thin.add)} ms: ${(r.daemon.add / r.thin.add).toFixed(2)}× (targets ≤ 1×): ` +
      `${verdict(r.daemon.add <= r.thick.add && r.daemon.add <= r.thin.add)}`,
  );
}
// The boot storm (Python fake): Plexus thin ÷ Multus thin, wall time and the cgroup's peak memory.
const stormRatios = storm?.thinVsMultus;
if (stormRatios) {
  const failed = storm.rows
    .filter((r) => r.key === "thin" || r.key === "multus")
    .reduce((n, r) => n + r.s.failures.length, 0);
  for (const [what, ratio, limit] of [
    ["ADD wall time", stormRatios.addWall, 0.9],
    ["DEL wall time", stormRatios.delWall, 0.9],
    ["ADD peak memory", stormRatios.addPeak, 1.0],
    ["DEL peak memory", stormRatios.delPeak, 1.0],
  ])
    lines.push(
      `110-pod storm (K=2) ${what}, Plexus thin ÷ Multus thin: ${ratio.toFixed(2)}× (target ≤ ` +
        `${limit}×): ${verdict(ratio <= limit && failed === 0)}${
          failed ? ` (${failed} calls failed)` : ""
        }`,
    );
}
if (multus?.length) {
  const small = multus.filter((r) => r.K <= 2).map((r) => Math.max(r.thin.rssMiB, r.daemon.rssMiB));
  const k8 = vs(8);
  const k2 = vs(2);
  if (small.length) target("peak RSS of one CNI call at K ≤ 2", Math.max(...small), 40, mib);
  if (small.length && breakdown?.floorMiB)
    lines.push(
      `  the floor below it: a Bun program built alike that only loads libc through bun:ffi, ` +
        `runs one child and makes one HTTPS GET peaks at ${mib(breakdown.floorMiB)}; Plexus's ` +
        `own share is ${mib(Math.max(...small) - breakdown.floorMiB)}`,
    );
  if (k8 && k2) {
    const per = (k8.thin.rssMiB - k2.thin.rssMiB) / 6;
    lines.push(
      `peak RSS per extra network (K=2 → 8, thin): ${per.toFixed(2)} MiB (target < 1 MiB): ` +
        `${verdict(per < 1)}`,
    );
  }
}
if (lines.length) console.log(`== targets\n${lines.map((l) => `- ${l}`).join("\n")}`);
