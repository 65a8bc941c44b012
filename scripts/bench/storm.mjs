// A node's boot storm: 110 pods (a node's default pod limit) × K=2 (the default network + 2 NADs,
// bridge + host-local, a /24 each), each pod its own netns; all 110 ADDs started at once, then
// all 110 DELs at once, for Plexus thin, Multus v4.0.2 thin, Multus thick (when it starts) and
// Plexus daemon mode, against the Python fake API server (fake-api.py) with the 110 pods and the
// NADs loaded: a figure here does not depend on the speed of the Node fake.
// Each contender's calls, their delegates and its daemon run in a memory cgroup of their own (v1,
// a child of this process's; a shell joins it and execs, so a call is charged from its start).
// Wall time: the first call started → the last one exited. Peak: memory.max_usage_in_bytes over
// the phase (reset when it starts): everything charged to that cgroup, a daemon's resident
// memory included.
// Page cache is charged to the cgroup that faults a page first, so a contender that reads a
// binary first would pay for it and one that comes after would not: every round runs each
// contender once, in a new cgroup; the first round is a warm-up (10 pods) that faults every
// binary and delegate in, and the figures are the medians of the full rounds after it, when no
// cgroup is charged for pages already cached, only for what its processes allocate and write.
import { spawn } from "node:child_process";
import {
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmdirSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  benchNetworks,
  CNI_PATH,
  collectObjects,
  median,
  needsRoot,
  nodeKubeconfig,
  PY_LATENCY_MS,
  pythonFakeMissing,
  RUNTIME_ENV,
  scratch,
  startDaemon,
  startPythonFake,
  table,
} from "./lib.mjs";
import { contenderConfs, MULTUS_DIR, multusMissing, startMultusThick } from "./multus.mjs";

const PODS = 110;
/** The warm-up round's pods: enough to fault in every page of every binary a call runs. */
const WARM_PODS = 10;
const EXTRAS = 2;
const NODE_NAME = "bench-node";
const CGROUP_PREFIX = `plx-bench-storm-${process.pid}-`;

/** This process's own v1 memory cgroup directory, or undefined (no v1 memory controller). */
function ownMemoryCgroup() {
  const lines = readFileSync("/proc/self/cgroup", "utf8").split("\n");
  const v1 = lines.find((l) => /^\d+:([^:]*,)?memory(,[^:]*)?:/.test(l));
  return v1 ? join("/sys/fs/cgroup/memory", v1.split(":")[2]) : undefined;
}

/** Kills what is left in a cgroup of ours and removes it (retrying while the kernel lets go). */
function removeCgroup(path) {
  for (let i = 0; i < 50; i++) {
    try {
      for (const pid of readFileSync(join(path, "cgroup.procs"), "utf8").split("\n"))
        if (pid) process.kill(Number(pid), "SIGKILL");
      rmdirSync(path);
      return;
    } catch (err) {
      if (err.code === "ENOENT") return;
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 20);
    }
  }
}

/** The storm's cgroups left by this process (interrupted): what is in them killed, then removed. */
export function removeStormCgroups() {
  const own = ownMemoryCgroup();
  if (!own) return;
  for (const name of readdirSync(own))
    if (name.startsWith(CGROUP_PREFIX)) removeCgroup(join(own, name));
}

/** A new memory cgroup under ours: its procs file, peak and usage (bytes), peak reset, removal. */
function makeCgroup(name) {
  const path = join(ownMemoryCgroup(), `${CGROUP_PREFIX}${name}`);
  mkdirSync(path);
  const read = (file) => Number(readFileSync(join(path, file), "utf8"));
  return {
    procs: join(path, "cgroup.procs"),
    peak: () => read("memory.max_usage_in_bytes"),
    usage: () => read("memory.usage_in_bytes"),
    // Writing 0 sets the recorded peak to the usage now.
    resetPeak: () => writeFileSync(join(path, "memory.max_usage_in_bytes"), "0"),
    remove: () => removeCgroup(path),
  };
}

/**
 * The phase's launcher, a POSIX shell that joins the cgroup (`$1`), then starts every pod's call
 * (`$2` with the config file `$3` on stdin, its stdout and stderr in `$4/<i>.out|err`) at once,
 * each pod in its own netns (`$6<i>`), and prints "<i> <exit status>" for each as it is reaped.
 * A shell forks each call far faster than this process spawns one, so the storm starts together.
 */
const LAUNCHER = `
echo $$ > "$1" || exit 90
bin=$2 conf=$3 dir=$4 count=$5 netns=$6 pids= i=0
while [ $i -lt $count ]; do
  pod="K8S_POD_NAMESPACE=b;K8S_POD_NAME=p$i;K8S_POD_UID=u$i"
  CNI_CONTAINERID=storm$i CNI_NETNS=$netns$i \\
  CNI_ARGS="IgnoreUnknown=1;$pod;K8S_POD_INFRA_CONTAINER_ID=storm$i" \\
    "$bin" < "$conf" > "$dir/$i.out" 2> "$dir/$i.err" &
  pids="$pids $!" i=$((i + 1))
done
i=0
for pid in $pids; do wait $pid; echo "$i $?"; i=$((i + 1)); done
`;

/** Runs the launcher for one phase; resolves with its wall time (ms) and each call's outcome. */
function launch({ running, command, cg, dir, netnsPrefix, count }) {
  const env = { ...RUNTIME_ENV, CNI_PATH, CNI_IFNAME: "eth0", CNI_COMMAND: command };
  const argv = [cg.procs, running.bin, running.confFile, dir, String(count), netnsPrefix];
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const child = spawn("/bin/sh", ["-c", LAUNCHER, "sh", ...argv], { env });
    let out = "";
    let err = "";
    child.stdout.on("data", (c) => (out += c));
    child.stderr.on("data", (c) => (err += c));
    child.on("error", reject);
    child.on("close", (code) => {
      const wallMs = performance.now() - t0;
      if (code !== 0) return reject(new Error(`storm launcher exited ${code}: ${err}`));
      const codes = new Map(
        out
          .trim()
          .split("\n")
          .map((l) => l.split(" ").map(Number)),
      );
      const calls = Array.from({ length: count }, (_, i) => ({
        code: codes.get(i),
        stdout: readFileSync(join(dir, `${i}.out`), "utf8"),
        stderr: readFileSync(join(dir, `${i}.err`), "utf8"),
      }));
      resolve({ wallMs, calls });
    });
  });
}

/** Why a call failed, or undefined: ADD must exit 0 with one JSON result, DEL must exit 0. */
function callFailure(command, r) {
  if (r.code !== 0) return `exit ${r.code}: ${r.stdout.slice(0, 300)} ${r.stderr.slice(0, 300)}`;
  if (command !== "ADD") return undefined;
  try {
    const result = JSON.parse(r.stdout);
    if (typeof result?.cniVersion === "string") return undefined;
    return `no CNI result on stdout: ${r.stdout.slice(0, 300)}`;
  } catch {
    return `stdout is not one JSON document: ${r.stdout.slice(0, 300)}`;
  }
}

const MIB = 1024 * 1024;

/**
 * One phase: `command` for `count` pods at once, in cgroup `cg`. Wall time (first start → last
 * exit, ms), the peak and the usage at its start (MiB), and why calls failed.
 */
async function stormPhase({ command, running, cg, ctx, tag, count }) {
  const dir = join(ctx.root, `${tag}-${command}`);
  mkdirSync(dir);
  cg.resetPeak();
  const startMiB = cg.usage() / MIB;
  const { wallMs, calls } = await launch({
    running,
    command,
    cg,
    dir,
    netnsPrefix: ctx.netnsPrefix,
    count,
  });
  const peakMiB = cg.peak() / MIB;
  const failures = calls.map((r) => callFailure(command, r)).filter(Boolean);
  return { wallMs, peakMiB, startMiB, failures };
}

/** Plexus's daemon, started in the contender's cgroup; the thin calls ask it. */
async function startPlexusDaemon({ ctx, cg, round }) {
  const socket = join(ctx.root, `plexus${round}.sock`);
  const daemon = await startDaemon({
    kubeconfig: ctx.kubeconfig,
    socket,
    nodeName: NODE_NAME,
    cgroupProcs: cg.procs,
  });
  const conf = JSON.stringify({ ...JSON.parse(ctx.confs.thinConf), daemonSocket: socket });
  return { bin: "dist/plexus", conf, stop: daemon.stop };
}

/** Multus thick's daemon, started in the contender's cgroup (a new directory each round). */
async function startThick({ ctx, cg, round }) {
  const root = join(ctx.root, `thick${round}`);
  mkdirSync(root);
  const thick = await startMultusThick({
    front: ctx.fake,
    root,
    confDir: ctx.confDir,
    clusterNetwork: ctx.clusterNetwork,
    cgroupProcs: cg.procs,
  });
  return { bin: join(MULTUS_DIR, "multus-shim"), conf: thick.shimConf, stop: thick.stop };
}

/** The contenders, in the order of the first round (later rounds alternate it). */
const CONTENDERS = [
  {
    key: "thin",
    label: "Plexus thin",
    start: ({ ctx }) => ({ bin: "dist/plexus", conf: ctx.confs.thinConf }),
  },
  {
    key: "multus",
    label: "Multus thin",
    multus: true,
    start: ({ ctx }) => ({ bin: join(MULTUS_DIR, "multus"), conf: ctx.confs.multusConf }),
  },
  // Its daemon's one client is held to client-go's default 5 requests/s: a storm takes minutes,
  // so it has one measured round, not one per round.
  { key: "thick", label: "Multus thick", multus: true, oneRound: true, start: startThick },
  { key: "daemon", label: "Plexus daemon mode", start: startPlexusDaemon },
];

/** One contender's storm (ADD phase, then DEL phase) in a new cgroup, removed after. */
async function runContender({ contender, ctx, round, count }) {
  const tag = `${contender.key}-${round}`;
  const cg = makeCgroup(tag);
  let running;
  try {
    running = await contender.start({ ctx, cg, round });
    running.confFile = join(ctx.root, `${tag}.conf`);
    writeFileSync(running.confFile, running.conf);
    const add = await stormPhase({ command: "ADD", running, cg, ctx, tag, count });
    const del = await stormPhase({ command: "DEL", running, cg, ctx, tag, count });
    return { add, del };
  } finally {
    await running?.stop?.();
    cg.remove();
  }
}

/**
 * `rounds` rounds of every contender, in alternating order (a `oneRound` contender: the warm-up
 * and the first full round). A contender that does not start (its daemon) is noted and left out
 * of the rounds after. Samples by contender, then by round.
 */
async function runRounds({ ctx, rounds, contenders }) {
  let left = contenders;
  const samples = Object.fromEntries(contenders.map((c) => [c.key, []]));
  const notes = [];
  for (let round = 0; round < rounds; round++) {
    if (round === 2) left = left.filter((c) => !c.oneRound);
    const order = round % 2 ? [...left].reverse() : left;
    const count = round === 0 ? WARM_PODS : PODS;
    for (const contender of order) {
      try {
        samples[contender.key][round] = await runContender({ contender, ctx, round, count });
      } catch (err) {
        notes.push(`${contender.label} not run: ${err.message.slice(0, 300)}`);
        left = left.filter((c) => c !== contender);
      }
    }
  }
  return { samples, notes };
}

/** A contender's medians over the rounds after the warm-up, its warm-up, its failed calls. */
function summarizeContender(list) {
  const measured = list.slice(1).filter(Boolean);
  if (!measured.length) return undefined;
  const phase = (name) => {
    const m = (k) => median(measured.map((s) => s[name][k]));
    return { wallMs: m("wallMs"), peakMiB: m("peakMiB"), startMiB: m("startMiB") };
  };
  const failures = list
    .filter(Boolean)
    .flatMap((s) => [
      ...s.add.failures.map((f) => `ADD ${f}`),
      ...s.del.failures.map((f) => `DEL ${f}`),
    ]);
  return { add: phase("add"), del: phase("del"), warm: list[0], rounds: measured.length, failures };
}

/**
 * `a` ÷ `b`: the median of the measured rounds' ratios (a drifting host compares like with like).
 */
function roundRatios(a = [], b = []) {
  const pairs = a
    .map((s, i) => [s, b[i]])
    .slice(1)
    .filter(([x, y]) => x && y);
  if (!pairs.length) return undefined;
  const r = (name, k) => median(pairs.map(([x, y]) => x[name][k] / y[name][k]));
  return {
    addWall: r("add", "wallMs"),
    delWall: r("del", "wallMs"),
    addPeak: r("add", "peakMiB"),
    delPeak: r("del", "peakMiB"),
  };
}

/** The storm's table, its ratios and why a contender failed or did not run. */
function printStorm({ rows, ratios, notes }) {
  console.log(
    `== Boot storm: ${PODS} pods × K=${EXTRAS} (default network + ${EXTRAS} NADs, bridge + ` +
      `host-local), each its own netns; all ADDs at once, then all DELs; Python fake API server ` +
      `(fake-api.py, HTTPS, ${PY_LATENCY_MS} ms); each contender in a memory cgroup of its own ` +
      `(ms, MiB; medians of the rounds after a warm-up round of ${WARM_PODS} pods)`,
  );
  console.log(
    "   wall = first call started → last exited; peak = the cgroup's memory.max_usage_in_bytes " +
      "over the phase (a daemon included; binaries' page cache, faulted in by the warm-up, " +
      "charged to none)",
  );
  const f = (x) => x.toFixed(1);
  table(
    [
      "contender",
      "rounds",
      "ADD wall",
      "ADD peak",
      "DEL wall",
      "DEL peak",
      "cgroup at start ADD / DEL",
      `warm-up (${WARM_PODS} pods) ADD wall / peak`,
      "failed calls",
    ],
    rows.map(({ label, s }) => [
      label,
      s.rounds,
      f(s.add.wallMs),
      f(s.add.peakMiB),
      f(s.del.wallMs),
      f(s.del.peakMiB),
      `${f(s.add.startMiB)} / ${f(s.del.startMiB)}`,
      s.warm ? `${f(s.warm.add.wallMs)} / ${f(s.warm.add.peakMiB)}` : "—",
      s.failures.length,
    ]),
  );
  const x = (v) => `${v.toFixed(2)}×`;
  for (const [what, r] of Object.entries(ratios))
    if (r)
      console.log(
        `   ${what}, the median of each round's ratio: ADD wall ${x(r.addWall)}, peak ` +
          `${x(r.addPeak)}; DEL wall ${x(r.delWall)}, peak ${x(r.delPeak)}`,
      );
  for (const { label, s } of rows)
    if (s.failures.length)
      console.log(`   ${label}: ${s.failures.length} calls failed; first: ${s.failures[0]}`);
  for (const note of notes) console.log(`   ${note}`);
  console.log("");
}

/**
 * The pods' namespaces (`<netnsPrefix><i>`), the networks, and the objects the fake serves: the
 * NADs and the pods `b/p<i>` (uid `u<i>`) on this node, each selecting every NAD.
 */
function setUpStorm({ tmp, s }) {
  const name = `plx-bench-storm-${process.pid}-`;
  for (let i = 0; i < PODS; i++) s.netns(`${name}${i}`);
  const netnsPrefix = `/var/run/netns/${name}`;
  for (let k = 0; k <= EXTRAS; k++) s.link(`plxst${k}`);
  const { confDir, clusterNetwork, net } = benchNetworks({
    root: tmp,
    bridgePrefix: "plxst",
    octet: 241,
  });
  const nads = Array.from({ length: EXTRAS }, (_, i) => net(`net${i}`, i + 1));
  const objects = collectObjects();
  for (const n of nads)
    objects.addNad({
      metadata: { namespace: "b", name: n.name },
      spec: { config: JSON.stringify(n) },
    });
  const networks = nads.map((n) => n.name).join(",");
  for (let i = 0; i < PODS; i++)
    objects.addPod({
      metadata: {
        namespace: "b",
        name: `p${i}`,
        uid: `u${i}`,
        annotations: { "k8s.v1.cni.cncf.io/networks": networks },
      },
      spec: { nodeName: NODE_NAME },
    });
  return { netnsPrefix, confDir, clusterNetwork, objects: objects.objects };
}

/** Why the storm cannot run here, or undefined. */
function stormMissing() {
  if (!ownMemoryCgroup()) return "no cgroup v1 memory controller for this process";
  return pythonFakeMissing();
}

/**
 * The storm section: rows and ratios (Plexus thin ÷ Multus thin, Plexus daemon mode ÷ Multus
 * thick), or undefined when skipped. Rounds: a warm-up, then one per 5 BENCH_RUNS (at least 3).
 */
export async function benchStorm(runs) {
  if (!needsRoot("Boot storm")) return undefined;
  const missing = stormMissing();
  if (missing) return void console.log(`== Boot storm: skipped: ${missing}\n`);
  const noMultus = multusMissing();
  const contenders = CONTENDERS.filter((c) => !c.multus || !noMultus);
  const rounds = 1 + Math.max(3, Math.round(runs / 5));
  const tmp = mkdtempSync(join(tmpdir(), "plx-benchstorm-"));
  const s = scratch("plx-bench-storm");
  let fake;
  try {
    const { netnsPrefix, confDir, clusterNetwork, objects } = setUpStorm({ tmp, s });
    fake = await startPythonFake({ dir: tmp, objects, latencyMs: PY_LATENCY_MS });
    const kubeconfig = await nodeKubeconfig(fake, { dir: tmp });
    const confs = contenderConfs({
      root: tmp,
      confDir,
      clusterNetwork,
      kubeconfig,
      multusKubeconfig: kubeconfig,
      socket: "",
    });
    const ctx = { fake, root: tmp, confDir, clusterNetwork, kubeconfig, confs, netnsPrefix };
    const { samples, notes } = await runRounds({ ctx, rounds, contenders });
    if (noMultus) notes.push(`Multus not run: ${noMultus}`);
    const rows = contenders
      .map((c) => ({ key: c.key, label: c.label, s: summarizeContender(samples[c.key]) }))
      .filter((r) => r.s);
    const ratios = {
      "Plexus thin ÷ Multus thin": roundRatios(samples.thin, samples.multus),
      "Plexus daemon mode ÷ Multus thick": roundRatios(samples.daemon, samples.thick),
    };
    printStorm({ rows, ratios, notes });
    return { rows, thinVsMultus: ratios["Plexus thin ÷ Multus thin"] };
  } finally {
    await fake?.close();
    removeStormCgroups();
    s.cleanup();
    rmSync(tmp, { recursive: true, force: true });
  }
}
