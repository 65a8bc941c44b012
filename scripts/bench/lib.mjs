// Shared benchmark helpers: timed child processes with peak RSS, interleaved rounds, medians.
import { spawn, execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { request as httpRequest } from "node:http";
import { registerHooks } from "node:module";
import { join } from "node:path";
import { createInterface } from "node:readline";

// The fake API server is TypeScript that imports its siblings without an extension, as the
// bundler and vitest resolve them; Node's own resolver needs the ".ts" added.
registerHooks({
  resolve(specifier, context, nextResolve) {
    try {
      return nextResolve(specifier, context);
    } catch (err) {
      if (!specifier.startsWith(".") || err?.code !== "ERR_MODULE_NOT_FOUND") throw err;
      return nextResolve(`${specifier}.ts`, context);
    }
  },
});

/** The project's fake API server (test/support/fake-apiserver.ts). */
export function importFakeApiServer() {
  return import("../../test/support/fake-apiserver.ts");
}

export const NODE = process.execPath;

const PYTHON_FAKE = new URL("./fake-api.py", import.meta.url).pathname;
const TEST_CA = new URL("../../test/support/tls/ca.crt", import.meta.url).pathname;

/**
 * Added before every answer of the Python fake (BENCH_PY_LATENCY_MS, as kube-apiserver's own
 * latency would be; default none, as the Node fake's).
 */
export const PY_LATENCY_MS = Number(process.env.BENCH_PY_LATENCY_MS ?? 0);

/** Why the Python fake API server cannot run here (no python3 ≥ 3.11), or undefined. */
export function pythonFakeMissing() {
  try {
    const v = execFileSync("python3", ["-c", "import sys; print(sys.version_info >= (3, 11))"], {
      encoding: "utf8",
      stdio: ["ignore", "pipe", "ignore"],
    });
    return v.trim() === "True" ? undefined : "python3 is older than 3.11";
  } catch {
    return "python3 is not on PATH";
  }
}

/**
 * Pods and NADs as the Node fake's addPod/addNad take them, collected for the Python fake (which
 * loads its objects at start): addPodWithNads and addBenchPods fill one as they fill the fake.
 */
export function collectObjects() {
  const objects = { pods: [], nads: [] };
  return { objects, addPod: (p) => objects.pods.push(p), addNad: (n) => objects.nads.push(n) };
}

/**
 * Starts scripts/bench/fake-api.py (the Python fake API server) with `objects` ({ pods, nads },
 * written to `dir`) and a fresh token; resolves once it listens. Its stdin stays open as a
 * lifeline: it exits when this process does. `latencyMs` is added before every answer.
 */
export async function startPythonFake({ dir, objects, latencyMs = 0 }) {
  const token = randomBytes(16).toString("hex");
  const file = join(dir, "fake-api-objects.json");
  writeFileSync(file, JSON.stringify({ token, ...objects }), { mode: 0o600 });
  const argv = [PYTHON_FAKE, "--objects", file, "--latency-ms", String(latencyMs)];
  const child = spawn("python3", argv, { stdio: ["pipe", "pipe", "pipe"] });
  let stderr = "";
  child.stderr.on("data", (c) => (stderr += c));
  const exited = new Promise((resolve) => child.once("exit", resolve));
  const port = await Promise.race([
    createInterface({ input: child.stdout })[Symbol.asyncIterator]().next(),
    exited,
  ]);
  if (typeof port?.value !== "string")
    throw new Error(`fake-api.py did not start: ${stderr.slice(-1000)}`);
  return {
    url: `https://127.0.0.1:${port.value.trim()}`,
    token,
    caPem: readFileSync(TEST_CA, "utf8"),
    pid: child.pid,
    async close() {
      child.stdin.end();
      const timer = setTimeout(() => child.kill("SIGKILL"), 2000);
      if (child.exitCode === null && child.signalCode === null) await exited;
      clearTimeout(timer);
    },
  };
}

/**
 * The environment a CNI call gets from containerd or CRI-O started by systemd: their PATH and the
 * CNI_* variables, nothing of the shell that runs the bench. A developer's shell often sets
 * NODE_EXTRA_CA_CERTS, which makes Bun load that bundle in every process that opens a TLS
 * connection (~2.5 ms and ~1.3 MiB per call, measured): the runtime's environment has no such
 * thing.
 */
export const RUNTIME_ENV = Object.freeze({
  PATH: "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
});

/**
 * A kubeconfig for `server` as `plexus install` writes it on a node (JSON naming a token file and
 * a CA file beside it), in `dir`: what every thin-mode CNI call reads, Multus's too.
 */
export async function nodeKubeconfig(server, { dir, fileName = "kubeconfig" }) {
  const { renderKubeconfig } = await import("../../src/install/kubeconfig-text.ts");
  const path = join(dir, fileName);
  writeFileSync(`${path}.token`, server.token, { mode: 0o600 });
  writeFileSync(`${path}.ca.crt`, server.caPem);
  writeFileSync(
    path,
    renderKubeconfig({
      server: server.url,
      tokenFileHost: `${path}.token`,
      caFileHost: `${path}.ca.crt`,
    }),
    { mode: 0o600 },
  );
  return path;
}

/**
 * Runs a command, feeding `stdin`; resolves with wall time (ms), exit code, stdout and peak RSS
 * (KiB, from /usr/bin/time when present, else undefined).
 */
export function timed(cmd, args, { env = process.env, stdin = "" } = {}) {
  const useTime = existsSync("/usr/bin/time");
  const argv = useTime ? ["-f", "%M", "--", cmd, ...args] : args;
  const bin = useTime ? "/usr/bin/time" : cmd;
  return new Promise((resolve, reject) => {
    const t0 = process.hrtime.bigint();
    const p = spawn(bin, argv, { env, stdio: ["pipe", "pipe", "pipe"] });
    const out = [];
    const err = [];
    p.stdout.on("data", (c) => out.push(c));
    p.stderr.on("data", (c) => err.push(c));
    p.on("error", reject);
    p.on("close", (code) => {
      const ms = Number(process.hrtime.bigint() - t0) / 1e6;
      const errText = Buffer.concat(err).toString();
      let rssKiB;
      if (useTime) {
        const lines = errText.trim().split("\n");
        rssKiB = Number(lines.at(-1));
      }
      resolve({ ms, code, stdout: Buffer.concat(out).toString(), stderr: errText, rssKiB });
    });
    p.stdin.end(stdin);
  });
}

export function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

export function max(xs) {
  return xs.reduce((a, b) => Math.max(a, b), 0);
}

export function fmt(ms) {
  return `${ms.toFixed(1)}`;
}

/**
 * `node -e 0` on the pinned Node, measured once per bench run (measureFloor): every absolute
 * figure is printed with its ratio to it, so a run on a slower or faster (or busier) host can be
 * read against the targets, which were set where it took ~21 ms.
 */
const floor = { ms: Number.NaN, rssKiB: Number.NaN };

export async function measureFloor(runs) {
  const ms = [];
  const rss = [];
  for (let i = 0; i < runs + 2; i++) {
    const r = await timed(NODE, ["-e", "0"]);
    if (i < 2) continue;
    ms.push(r.ms);
    if (r.rssKiB) rss.push(r.rssKiB);
  }
  floor.ms = median(ms);
  floor.rssKiB = rss.length ? median(rss) : Number.NaN;
  return floor;
}

/** "63.0 (2.95×)": milliseconds and their ratio to `node -e 0` in this run. */
export function rel(ms) {
  return `${fmt(ms)} (${(ms / floor.ms).toFixed(2)}×)`;
}

/** "41.2 (1.05×)": MiB and their ratio to the peak RSS of `node -e 0` in this run. */
export function relMiB(mib) {
  return `${mib.toFixed(1)} (${((mib * 1024) / floor.rssKiB).toFixed(2)}×)`;
}

/** Prints a fixed-width table to stdout. */
export function table(headers, rows) {
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => String(r[i]).length)));
  const line = (cells) => cells.map((c, i) => String(c).padStart(widths[i])).join("  ");
  console.log(line(headers));
  console.log(widths.map((w) => "-".repeat(w)).join("  "));
  for (const r of rows) console.log(line(r));
}

export const CNI_PATH = "/usr/lib/cni";

/** One CNI invocation that must succeed (exit 0), timed. */
export async function cni(cmd, env, stdin) {
  const r = await timed(cmd, [], { env, stdin });
  if (r.code !== 0)
    throw new Error(
      `${env.CNI_COMMAND} via ${cmd} failed (${r.code}): ${r.stdout} ${r.stderr.slice(0, 2000)}`,
    );
  return r;
}

/** Nearest-rank percentile (p in 0..100). */
export function percentile(xs, pct) {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((pct / 100) * s.length) - 1))];
}

function socketGet(socketPath, path) {
  return new Promise((resolve) => {
    const req = httpRequest({ socketPath, path }, (res) => {
      const chunks = [];
      res.on("data", (c) => chunks.push(c));
      res.on("end", () =>
        resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString() }),
      );
    });
    req.on("error", () => resolve({ status: 0, body: "" }));
    req.end();
  });
}

/**
 * `cmd args` as a command that first joins the memory cgroup whose `cgroup.procs` is `procs` (a
 * shell writes its pid there, then execs): everything it runs is charged there from its start.
 */
function inCgroup(procs, cmd, args) {
  if (!procs) return [cmd, args];
  return ["/bin/sh", ["-c", 'echo $$ > "$0" && exec "$@"', procs, cmd, ...args]];
}

/**
 * Starts `dist/plexus daemon` and waits until /readyz answers 200 (its caches are synced); in the
 * memory cgroup of `cgroupProcs` when given.
 */
export async function startDaemon({
  kubeconfig,
  socket,
  nodeName,
  timeoutMs = 60_000,
  podResourcesSocket,
  cgroupProcs,
}) {
  const t0 = performance.now();
  const extra =
    podResourcesSocket !== undefined ? ["--pod-resources-socket", podResourcesSocket] : [];
  const child = spawn(
    ...inCgroup(cgroupProcs, "dist/plexus", [
      "daemon",
      "--kubeconfig",
      kubeconfig,
      "--node-name",
      nodeName,
      "--socket",
      socket,
      "--log-level",
      "warn",
      ...extra,
    ]),
    { stdio: ["ignore", "ignore", "pipe"] },
  );
  let stderr = "";
  child.stderr.on("data", (c) => (stderr += c));
  while ((await socketGet(socket, "/readyz")).status !== 200) {
    if (child.exitCode !== null)
      throw new Error(`plexus daemon exited (${child.exitCode}): ${stderr}`);
    if (performance.now() - t0 > timeoutMs)
      throw new Error(`plexus daemon not ready after ${timeoutMs} ms: ${stderr}`);
    await new Promise((r) => setTimeout(r, 10));
  }
  const readyMs = performance.now() - t0;
  return {
    pid: child.pid,
    readyMs,
    metrics: async () => (await socketGet(socket, "/metrics")).body,
    /** Resident and peak resident memory (KiB) from /proc. */
    rssKiB() {
      const s = readFileSync(`/proc/${child.pid}/status`, "utf8");
      const kib = (k) => Number(new RegExp(`^${k}:\\s+(\\d+) kB`, "m").exec(s)?.[1]);
      return { rss: kib("VmRSS"), hwm: kib("VmHWM") };
    },
    stop: () =>
      new Promise((resolve) => {
        if (child.exitCode !== null || child.signalCode !== null) return resolve();
        child.once("exit", () => resolve());
        child.kill("SIGTERM");
      }),
  };
}

/** Network namespaces and bridges made for a bench, removed by cleanup() whatever happened. */
export function scratch(prefix) {
  const netns = [];
  const links = [];
  return {
    netns(name) {
      execFileSync("ip", ["netns", "add", name]);
      netns.push(name);
      return `/var/run/netns/${name}`;
    },
    link(name) {
      links.push(name);
      return name;
    },
    cleanup() {
      for (const n of netns) {
        try {
          execFileSync("ip", ["netns", "del", n], { stdio: "ignore" });
        } catch {}
      }
      for (const l of links) {
        try {
          execFileSync("ip", ["link", "del", l], { stdio: "ignore" });
        } catch {}
      }
    },
    prefix,
  };
}

/** Root is needed for network namespaces; without it a section prints that it skipped. */
export function needsRoot(section) {
  if (process.getuid?.() === 0) return true;
  console.log(`== ${section}: skipped (needs root for network namespaces)\n`);
  return false;
}

/**
 * The floor: the same delegate configs run directly, as a meta-plugin would, ADD in order (the
 * first on eth0, then net1, net2, …) and DEL in reverse. Resolves with the summed wall times.
 */
export async function runDirect(confs, env) {
  const ifName = (k) => (k === 0 ? "eth0" : `net${k}`);
  let add = 0;
  let del = 0;
  for (let k = 0; k < confs.length; k++)
    add += (
      await cni(
        `${CNI_PATH}/${confs[k].type}`,
        { ...env, CNI_COMMAND: "ADD", CNI_IFNAME: ifName(k) },
        JSON.stringify(confs[k]),
      )
    ).ms;
  for (let k = confs.length - 1; k >= 0; k--)
    del += (
      await cni(
        `${CNI_PATH}/${confs[k].type}`,
        { ...env, CNI_COMMAND: "DEL", CNI_IFNAME: ifName(k) },
        JSON.stringify(confs[k]),
      )
    ).ms;
  return { add, del };
}

/**
 * A node's CNI set-up for a bench section, under `root`: `net.d/10-cbr0.conf` (the cluster
 * default network) and `net(name, k)`, a bridge + host-local network on bridge `<bridgePrefix><k>`
 * and subnet `10.<octet>.<k>.0/24` (k = 0 is the default network's).
 */
export function benchNetworks({ root, bridgePrefix, octet }) {
  const dataDir = join(root, "ipam");
  const confDir = join(root, "net.d");
  mkdirSync(confDir, { recursive: true });
  const net = (name, k) => ({
    cniVersion: "1.0.0",
    name,
    type: "bridge",
    bridge: `${bridgePrefix}${k}`,
    ipam: { type: "host-local", subnet: `10.${octet}.${k}.0/24`, dataDir },
  });
  const clusterNetwork = join(confDir, "10-cbr0.conf");
  writeFileSync(clusterNetwork, JSON.stringify(net("cbr0", 0)));
  return { dataDir, confDir, clusterNetwork, net };
}

/**
 * The bench pods of a one-ADD measurement in the fake API server `api`: the NADs `nads` (from
 * benchNetworks' `net`) in namespace `b`, and pods `p0`, `p2`, `p8` (uid `u<K>`) on `bench-node`
 * whose networks annotation names the first K of them.
 */
export function addBenchPods(api, nads) {
  for (const n of nads)
    api.addNad({ metadata: { namespace: "b", name: n.name }, spec: { config: JSON.stringify(n) } });
  for (const K of [0, 2, 8])
    api.addPod({
      metadata: {
        namespace: "b",
        name: `p${K}`,
        uid: `u${K}`,
        annotations: {
          "k8s.v1.cni.cncf.io/networks": nads
            .slice(0, K)
            .map((n) => n.name)
            .join(","),
        },
      },
      spec: { nodeName: "bench-node" },
    });
}

/**
 * The NADs `nads` in namespace `b` and the pod `b/p` (uid `u`) on `nodeName` whose networks
 * annotation names them all: the one pod of a section that measures one pod at K networks.
 */
export function addPodWithNads(api, { nads, nodeName }) {
  api.addPod({
    metadata: {
      namespace: "b",
      name: "p",
      uid: "u",
      annotations: { "k8s.v1.cni.cncf.io/networks": nads.map((n) => n.name).join(",") },
    },
    spec: { nodeName },
  });
  for (const n of nads)
    api.addNad({
      metadata: { namespace: "b", name: n.name },
      spec: { config: JSON.stringify(n) },
    });
}
