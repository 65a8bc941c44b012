// Where one ADD's own time and memory go. Time: one thin-mode ADD (default network + 2 NAD
// networks, fake API server over HTTPS) run under `strace -f -ttt`, its system calls cut into
// phases (process start and module initialisation up to reading stdin, config parse and set-up up
// to the lock, the CA bundle, each TLS handshake and API request, record and result-cache writes
// with their fsyncs, each delegate from spawn to reaped, exit). strace slows every traced call, so
// the phases are printed with their share of the traced run and scaled to the untraced median.
// Nothing in the executable is instrumented: off means no cost. Memory: peak RSS of a Bun
// hello-world executable (the runtime's floor), VERSION (+ the bundle's load), a DEL from the
// record (+ the core's initialisation) and ADDs at K = 0 / 2 / 8 (+ the work).
import { execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { compileArgs } from "../build-flags.mjs";
import { bunPath } from "../bun-path.mjs";
import {
  addBenchPods,
  CNI_PATH,
  cni,
  importFakeApiServer,
  median,
  needsRoot,
  scratch,
  table,
  timed,
  benchNetworks,
  RUNTIME_ENV,
  nodeKubeconfig,
} from "./lib.mjs";

// Only what the phases need: seccomp filtering leaves every other call untraced and unslowed.
const TRACED =
  "execve,clone,clone3,read,write,sendto,recvfrom,connect,openat,close,fsync,rename,flock,wait4,exit_group";
const LINE = /^(\d+)\s+(\d+\.\d+)\s+(.*)$/;

/** The traced calls, each with its pid, time (ms) and call text. */
function straceEvents(text) {
  const events = [];
  for (const l of text.split("\n")) {
    const m = LINE.exec(l);
    if (m) events.push({ pid: Number(m[1]), t: Number(m[2]) * 1000, call: m[3] });
  }
  return events;
}

/**
 * Plexus's process is its main thread and the threads it starts (Bun's fetch runs on its own
 * HTTP thread): a delegate's threads are not Plexus's.
 */
function ownThreads(events, main) {
  const own = new Set([main]);
  for (const e of events) {
    const thread = own.has(e.pid) && /CLONE_THREAD/.test(e.call) && /= (\d+)$/.exec(e.call);
    if (thread) own.add(Number(thread[1]));
  }
  return own;
}

/**
 * TLS: connect → the client's second flight (Finished) is the handshake; each later send of
 * application data → the first answer on that socket is one API request.
 */
function tlsPhases(mine, add) {
  for (const c of mine.filter((e) => /^connect\(\d+, \{sa_family=AF_INET/.test(e.call))) {
    const fd = /^connect\((\d+)/.exec(c.call)[1];
    const onFd = mine.filter(
      (e) => e.t > c.t && new RegExp(`^(sendto|recvfrom|close)\\(${fd}[,)]`).test(e.call),
    );
    const end = onFd.findIndex((e) => e.call.startsWith("close("));
    const live = end < 0 ? onFd : onFd.slice(0, end);
    const sends = live.filter((e) => e.call.startsWith("sendto("));
    if (sends.length < 2) continue;
    add(`TLS connect + handshake (fd ${fd})`, c.t, sends[1].t);
    for (const sent of sends.slice(2)) {
      const answer = live.find(
        (e) => e.t > sent.t && e.call.startsWith("recvfrom(") && !/= -1 EAGAIN/.test(e.call),
      );
      if (answer) add(`API request (fd ${fd})`, sent.t, answer.t);
    }
  }
}

/** Atomic writes: temp file open → the directory's fsync after the rename. */
function atomicWritePhases({ mine, first, add }) {
  for (const o of mine.filter((e) => /^openat\(.*\.tmp-\d+-\d+-.*O_EXCL/.test(e.call))) {
    const kind = /\/records\//.test(o.call) ? "record write" : "result-cache write";
    const renamed = first(/^rename\(/, o.t);
    const dirSync = renamed && first(/^fsync\(/, renamed.t);
    const fileSync = first(/^fsync\(/, o.t);
    if (dirSync)
      add(
        `${kind} (2 fsyncs: file ${(renamed.t - fileSync.t).toFixed(1)} ms incl. rename, ` +
          `directory)`,
        o.t,
        dirSync.t + 0.05,
      );
  }
}

/** Delegates: their execve (a child process) → reaped by the process that spawned them. */
function delegatePhases({ events, main, own, add }) {
  for (const x of events.filter((e) => e.pid !== main && /^execve\("/.test(e.call))) {
    const name = /^execve\("([^"]+)"/.exec(x.call)[1].split("/").at(-1);
    const reaped = events.find(
      (e) => e.t > x.t && /wait4\(|waitid\(/.test(e.call) && new RegExp(`= ${x.pid}$`).test(e.call),
    );
    const reapedResumed =
      reaped ?? events.find((e) => e.t > x.t && new RegExp(`resumed>.*= ${x.pid}$`).test(e.call));
    if (reapedResumed)
      add(
        `delegate ${name} (pid ${x.pid}) exec → ` +
          `reaped${own.has(reapedResumed.pid) ? "" : " by its parent"}`,
        x.t,
        reapedResumed.t,
      );
  }
}

/**
 * What lies between the phases in the Plexus process itself: its own JavaScript (and untraced
 * calls), e.g. reading the kubeconfig and building the client, the plan, the status.
 */
function gapsBetween(phases) {
  const gaps = [];
  let end = 0;
  for (const p of phases.filter((x) => !x.label.includes("by its parent"))) {
    if (p.start - end > 0.5)
      gaps.push({
        label: "Plexus's own work between (no traced I/O)",
        start: end,
        ms: p.start - end,
      });
    end = Math.max(end, p.start + p.ms);
  }
  return gaps;
}

/** Phases of one traced ADD: [{ label, start, ms }] with start relative to the execve (ms). */
function phasesFromStrace(text) {
  const events = straceEvents(text);
  const main = events[0].pid;
  const t0 = events[0].t;
  const out = [];
  const add = (label, from, to) => out.push({ label, start: from - t0, ms: to - from });
  const own = ownThreads(events, main);
  const mine = events.filter((e) => own.has(e.pid));
  const first = (re, after = 0) => mine.find((e) => e.t >= after && re.test(e.call));
  const stdin = first(/^read\(0,/);
  if (stdin) add("process start + module initialisation (exec → stdin read)", t0, stdin.t);
  const lock = first(/^flock\(\d+, LOCK_EX/);
  if (stdin && lock) add("config parse + set-up (stdin → lock)", stdin.t, lock.t);
  const ca = first(/^openat\(.*ca-certificates/);
  if (ca) {
    const closed = first(/^close\(/, ca.t);
    add("system CA bundle read", ca.t, closed?.t ?? ca.t);
  }
  tlsPhases(mine, add);
  atomicWritePhases({ mine, first, add });
  delegatePhases({ events, main, own, add });
  const stdout = mine.findLast((e) => /^write\(1,/.test(e.call));
  const exited = events.findLast((e) => e.pid === main && /^\+\+\+ exited/.test(e.call));
  if (stdout && exited) add("result written → process gone (exit)", stdout.t, exited.t);
  out.sort((a, b) => a.start - b.start);
  out.push(...gapsBetween(out));
  out.sort((a, b) => a.start - b.start);
  if (exited) out.push({ label: "total (traced)", start: 0, ms: exited.t - t0 });
  return out;
}

/**
 * Compiles `code` with dist/plexus's flags and returns its median peak RSS (MiB) and wall time over
 * 5 runs.
 */
async function bunProgramPeak(dir, name, code, env = {}) {
  const src = join(dir, `${name}.js`);
  writeFileSync(src, code);
  // The same flags as dist/plexus, so what is above it is Plexus's own.
  execFileSync(bunPath(), compileArgs({ entry: src, outfile: join(dir, name) }), {
    stdio: "ignore",
  });
  const rss = [];
  const ms = [];
  for (let i = 0; i < 6; i++) {
    const r = await timed(join(dir, name), [], { env: { ...RUNTIME_ENV, ...env } });
    if (r.code !== 0) throw new Error(`${name}: exit ${r.code}: ${r.stderr}`);
    if (i) rss.push(r.rssKiB);
    if (i) ms.push(r.ms);
  }
  return { rssMiB: median(rss) / 1024, ms: median(ms) };
}

// fd 1 written as Plexus writes it (process.stdout alone would add Bun's stream set-up).
const HELLO = 'require("node:fs").writeSync(1, "{}\\n");\n';

/**
 * What any thin-mode ADD must do, and nothing else, in a Bun program built as Plexus is: libc
 * through bun:ffi (the container lock), one child process run to its end (a delegate), one HTTPS
 * GET with the kubeconfig's CA through Bun's fetch (the pod). Its peak RSS is the floor a Bun CNI
 * plugin cannot go below.
 */
const FLOOR = `(async () => {
  const { dlopen, FFIType } = require("bun:ffi");
  dlopen("libc.so.6", { flock: { args: [FFIType.i32, FFIType.i32], returns: FFIType.i32 } });
  const child = Bun.spawn(["/bin/true"], { stdin: "ignore", stdout: "pipe", stderr: "pipe" });
  await child.exited;
  await new Response(child.stdout).text();
  const res = await fetch(process.env.FLOOR_URL, {
    headers: { authorization: "Bearer " + process.env.FLOOR_TOKEN },
    tls: { ca: process.env.FLOOR_CA },
    proxy: false,
  });
  await res.text();
  require("node:fs").writeSync(1, "{}\\n");
  process.exit(0);
})();
`;

/** Peak RSS of VERSION, of DEL at K = 0 and of ADD at K = 0 / 2 / 8; ADD's wall time at K = 2. */
async function measureCallMemory({ conf, env, runs }) {
  const mem = { add: { 0: [], 2: [], 8: [] }, del: [], version: [], addMs: [] };
  for (let i = 0; i < Math.max(3, Math.round(runs / 2)) + 1; i++) {
    for (const K of [0, 2, 8]) {
      const a = await cni("dist/plexus", { ...env(K), CNI_COMMAND: "ADD" }, conf);
      const d = await cni("dist/plexus", { ...env(K), CNI_COMMAND: "DEL" }, conf);
      if (i === 0) continue;
      mem.add[K].push(a.rssKiB);
      if (K === 2) mem.addMs.push(a.ms);
      if (K === 0) mem.del.push(d.rssKiB);
    }
    const v = await timed("dist/plexus", [], { env: { ...RUNTIME_ENV, CNI_COMMAND: "VERSION" } });
    if (i) mem.version.push(v.rssKiB);
  }
  return mem;
}

/** One ADD at K = 2 under strace (then its DEL), cut into phases; none when strace failed. */
async function traceOneAdd({ tmp, conf, env }) {
  const trace = join(tmp, "add.strace");
  const traced = await timed(
    "strace",
    [
      "-f",
      "-ttt",
      "-s",
      "64",
      "--seccomp-bpf",
      "-e",
      `trace=${TRACED}`,
      "-o",
      trace,
      "dist/plexus",
    ],
    { env: { ...env(2), CNI_COMMAND: "ADD" }, stdin: conf },
  );
  await cni("dist/plexus", { ...env(2), CNI_COMMAND: "DEL" }, conf);
  return traced.code === 0 ? phasesFromStrace(readFileSync(trace, "utf8")) : [];
}

function printPhases({ phases, total, untraced }) {
  console.log(
    `== one thin ADD (default network + 2 NAD networks, HTTPS) by phase: traced with strace -f ` +
      `(${total.toFixed(1)} ms traced, ${untraced.toFixed(1)} ms untraced median; "≈ untraced" ` +
      `scales each phase by ${(untraced / total).toFixed(2)}, a rough guide: tracing slows ` +
      `system-call-heavy phases most)`,
  );
  table(
    ["at (ms)", "took (ms)", "≈ untraced", "phase"],
    phases.map((p) => [
      p.start.toFixed(1),
      p.ms.toFixed(1),
      ((p.ms * untraced) / total).toFixed(1),
      p.label,
    ]),
  );
}

/** Peak RSS by cause, each row over the one above; prints and returns the rows. */
function printMemoryRows({ hello, floorProgram, mem }) {
  const mib = (xs) => median(xs) / 1024;
  console.log(
    `== the floor of a Bun CNI call: a program built as dist/plexus that only loads libc through ` +
      `bun:ffi, runs /bin/true and makes one HTTPS GET through fetch peaks at ` +
      `${floorProgram.rssMiB.toFixed(1)} MiB ` +
      `(${(floorProgram.rssMiB - hello.rssMiB).toFixed(1)} over a ` +
      `hello-world)`,
  );
  const rows = [
    [
      "Bun hello-world executable",
      hello.rssMiB,
      "the runtime's floor (JavaScriptCore, Bun's own start-up)",
    ],
    ["VERSION", mib(mem.version), "+ the executable's bundle and bytecode mapped, main()"],
    [
      "DEL from the record, K = 0",
      mib(mem.del),
      "+ the core initialised (config shapes, logger, libc), one delegate run",
    ],
    [
      "ADD thin, K = 0",
      mib(mem.add[0]),
      "+ kubeconfig, TLS (Bun's fetch), API answers, status write",
    ],
    ["ADD thin, K = 2", mib(mem.add[2]), "+ two networks"],
    ["ADD thin, K = 8", mib(mem.add[8]), "+ eight networks"],
  ];
  console.log("== peak RSS by cause (medians, MiB; each row adds to the one above)");
  table(
    ["call", "peak RSS", "over the row above", "what it adds"],
    rows.map((r, i) => [r[0], r[1].toFixed(1), i ? (r[1] - rows[i - 1][1]).toFixed(1) : "", r[2]]),
  );
  console.log(
    `   per extra network (K = 2 → 8): ` +
      `${((mib(mem.add[8]) - mib(mem.add[2])) / 6).toFixed(2)} MiB\n`,
  );
  return rows;
}

/** The pods p0, p2, p8 and their NADs on `api`, and the thin-mode config and env of their calls. */
async function setUpBreakdown({ api, tmp, netnsPath }) {
  const { confDir, clusterNetwork, net } = benchNetworks({
    root: tmp,
    bridgePrefix: "plxbd",
    octet: 238,
  });
  const nads = Array.from({ length: 8 }, (_, i) => net(`net${i}`, i + 1));
  addBenchPods(api, nads);
  const kubeconfig = await nodeKubeconfig(api, { dir: tmp });
  const conf = JSON.stringify({
    cniVersion: "1.0.0",
    name: "plexus",
    type: "plexus",
    clusterNetwork: clusterNetwork,
    confDir,
    kubeconfig,
    cniDir: join(tmp, "cni"),
    daemonSocket: "",
  });
  const env = (K) => ({
    ...RUNTIME_ENV,
    CNI_CONTAINERID: `bd${K}`,
    CNI_NETNS: netnsPath,
    CNI_PATH,
    CNI_IFNAME: "eth0",
    CNI_ARGS: `IgnoreUnknown=1;K8S_POD_NAMESPACE=b;K8S_POD_NAME=p${K};K8S_POD_UID=u${K}`,
  });
  return { conf, env };
}

export async function benchBreakdown(runs) {
  if (!needsRoot("one ADD's breakdown")) return undefined;
  if (!existsSync("/usr/bin/strace")) {
    console.log("== one ADD's breakdown: skipped (strace is not installed)\n");
    return undefined;
  }
  const { startFakeApiServer } = await importFakeApiServer();
  const tmp = mkdtempSync(join(tmpdir(), "plx-benchbd-"));
  const s = scratch("plx-benchbd");
  const netnsPath = s.netns(`plx-benchbd-${process.pid}`);
  for (let k = 0; k <= 8; k++) s.link(`plxbd${k}`);
  const api = await startFakeApiServer({ node: "bench-node" });
  try {
    const { conf, env } = await setUpBreakdown({ api, tmp, netnsPath });
    const mem = await measureCallMemory({ conf, env, runs });
    const phases = await traceOneAdd({ tmp, conf, env });
    const total = phases.at(-1)?.ms ?? Number.NaN;
    const untraced = median(mem.addMs);
    printPhases({ phases, total, untraced });
    const hello = await bunProgramPeak(tmp, "hello", HELLO);
    const floorProgram = await bunProgramPeak(tmp, "floor", FLOOR, {
      FLOOR_URL: `${api.url}/api/v1/namespaces/b/pods/p0`,
      FLOOR_TOKEN: api.token,
      FLOOR_CA: api.caPem,
    });
    const rows = printMemoryRows({ hello, floorProgram, mem });
    return {
      phases,
      untraced,
      rss: Object.fromEntries(rows.map((r) => [r[0], r[1]])),
      floorMiB: floorProgram.rssMiB,
    };
  } finally {
    await api.close();
    s.cleanup();
    rmSync(tmp, { recursive: true, force: true });
  }
}
