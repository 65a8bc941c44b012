// The optional peer: Multus v4.0.2 thin (`multus`) and thick (`multus-daemon` + `multus-shim`),
// built by scripts/bench/multus-peer.sh into the cache dir, run on the same pods, delegates and
// fake API server as Plexus, round by round interleaved with Plexus thin, Plexus daemon mode and
// the delegates run directly. Skipped, with the reason, when the binaries are not there.
// Two harnesses, so that no figure depends on the speed of one fake API server:
// - "node": the project's fake (test/support/fake-apiserver.ts); Multus's protobuf writes go
//   through a small front (multus-front.mjs), one more loopback hop that counts against Multus;
// - "python": scripts/bench/fake-api.py, which Plexus and Multus both talk to directly (it
//   answers Multus's protobuf writes itself, and serves the daemon's LIST and WATCH).
import { spawn, execFileSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { homedir, tmpdir } from "node:os";
import { join } from "node:path";
import {
  CNI_PATH,
  cni,
  collectObjects,
  importFakeApiServer,
  max,
  median,
  needsRoot,
  rel,
  runDirect,
  scratch,
  startDaemon,
  table,
  RUNTIME_ENV,
  nodeKubeconfig,
  addPodWithNads,
  PY_LATENCY_MS,
  pythonFakeMissing,
  startPythonFake,
} from "./lib.mjs";
import { startProtobufFront } from "./multus-front.mjs";

const NODE_NAME = "bench-node";
export const MULTUS_DIR = join(
  process.env.PLEXUS_BENCH_CACHE ??
    join(process.env.XDG_CACHE_HOME ?? join(homedir(), ".cache"), "plexus-bench"),
  "multus-v4.0.2",
);

/** Why the peer cannot run here, or undefined. */
export function multusMissing() {
  for (const b of ["multus", "multus-daemon", "multus-shim"])
    if (!existsSync(join(MULTUS_DIR, b)))
      return (
        `${join(MULTUS_DIR, b)} is missing (build it: scripts/bench/multus-peer.sh, see ` +
        `docs/benchmarks.md)`
      );
  if (!existsSync("/usr/bin/unshare"))
    return "unshare(1) is missing (Multus thick needs a private mount namespace)";
  return undefined;
}

/** The daemon's config file, the in-cluster token and CA it will copy in, under `root`. */
function writeThickConfig({ front, root, confDir, clusterNetwork, socketDir }) {
  const sa = join(root, "sa");
  mkdirSync(sa, { recursive: true });
  writeFileSync(join(sa, "token"), front.token);
  writeFileSync(join(sa, "ca.crt"), front.caPem);
  const thickConfDir = join(root, "multus-net.d");
  mkdirSync(thickConfDir, { recursive: true });
  const config = join(root, "daemon-config.json");
  writeFileSync(
    config,
    JSON.stringify({
      cniVersion: "1.0.0",
      chrootDir: "",
      logLevel: "panic",
      logToStderr: true,
      cniConfigDir: thickConfDir,
      multusAutoconfigDir: confDir,
      multusConfigFile: "auto",
      socketDir,
      binDir: CNI_PATH,
      cniDir: join(root, "multus-thick-cache"),
      clusterNetwork,
    }),
  );
  return { sa, config };
}

/** Waits for the daemon's socket; kills it and throws with its stderr when it exits or hangs. */
async function waitForThickSocket({ child, socket, stderr }) {
  const t0 = performance.now();
  while (!existsSync(socket)) {
    if (child.exitCode !== null || performance.now() - t0 > 20_000) {
      child.kill("SIGKILL");
      throw new Error(`multus-daemon did not start: ${stderr().slice(-500)}`);
    }
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** Stops the daemon (SIGTERM, then SIGKILL) and removes the /run/secrets mount point it made. */
async function stopThick(child, { madeSecretsDir }) {
  if (child.exitCode === null) {
    const exited = new Promise((r) => child.once("exit", r));
    child.kill("SIGTERM");
    await Promise.race([exited, new Promise((r) => setTimeout(r, 2000))]);
    if (child.exitCode === null) child.kill("SIGKILL");
  }
  if (madeSecretsDir)
    try {
      execFileSync("rmdir", ["/run/secrets"], { stdio: "ignore" });
    } catch {}
}

/**
 * multus-daemon v4.0.2 only takes the in-cluster config: run it in a private mount namespace with
 * a service-account token and CA on a tmpfs at /run/secrets (the empty mount point is removed
 * after); in the memory cgroup of `cgroupProcs` when given (its delegates are charged there too).
 */
export async function startMultusThick({ front, root, confDir, clusterNetwork, cgroupProcs }) {
  const socketDir = join(root, "multus-run");
  const { sa, config } = writeThickConfig({ front, root, confDir, clusterNetwork, socketDir });
  const made = !existsSync("/run/secrets");
  const script = [
    "set -e",
    // unshare execs this shell in its own process: the daemon it execs starts in the cgroup.
    ...(cgroupProcs ? [`echo $$ > ${cgroupProcs}`] : []),
    "mount --make-rprivate /",
    "mkdir -p /run/secrets",
    "mount -t tmpfs -o size=1m,mode=0700 tmpfs /run/secrets",
    "mkdir -p /run/secrets/kubernetes.io/serviceaccount",
    `cp ${sa}/token ${sa}/ca.crt /run/secrets/kubernetes.io/serviceaccount/`,
    `exec ${join(MULTUS_DIR, "multus-daemon")} -config ${config}`,
  ].join("\n");
  const { port } = new URL(front.url);
  const child = spawn("unshare", ["-m", "sh", "-c", script], {
    env: { ...process.env, KUBERNETES_SERVICE_HOST: "127.0.0.1", KUBERNETES_SERVICE_PORT: port },
    stdio: ["ignore", "ignore", "pipe"],
  });
  let stderr = "";
  child.stderr.on("data", (c) => (stderr += c));
  await waitForThickSocket({ child, socket: join(socketDir, "multus.sock"), stderr: () => stderr });
  return {
    pid: child.pid,
    shimConf: JSON.stringify({
      cniVersion: "1.0.0",
      name: "multus-cni-network",
      type: "multus-shim",
      daemonSocketDir: socketDir,
    }),
    stop: () => stopThick(child, { madeSecretsDir: made }),
  };
}

/** The default network and K NADs (bridges plxm0..K), with the pod that selects them, on `api`. */
function addMultusPodAndNads({ api, K, root }) {
  const dataDir = join(root, "ipam");
  const confDir = join(root, "net.d");
  mkdirSync(confDir, { recursive: true });
  const net = (name, k) => ({
    cniVersion: "1.0.0",
    name,
    type: "bridge",
    bridge: `plxm${k}`,
    ipam: { type: "host-local", subnet: `10.236.${k}.0/24`, dataDir },
  });
  const cluster = net("cbr0", 0);
  const clusterNetwork = join(confDir, "10-cbr0.conf");
  writeFileSync(clusterNetwork, JSON.stringify(cluster));
  const nads = Array.from({ length: K }, (_, i) => net(`net${i}`, i + 1));
  addPodWithNads(api, { nads, nodeName: NODE_NAME });
  return { confDir, cluster, clusterNetwork, nads };
}

/** The network config each contender gets: Plexus thin, Plexus daemon mode and Multus thin. */
export function contenderConfs({
  root,
  confDir,
  clusterNetwork,
  kubeconfig,
  multusKubeconfig,
  socket,
}) {
  const base = {
    cniVersion: "1.0.0",
    name: "plexus",
    type: "plexus",
    clusterNetwork,
    confDir,
    kubeconfig,
  };
  const thinConf = JSON.stringify({ ...base, cniDir: join(root, "cni"), daemonSocket: "" });
  const daemonConf = JSON.stringify({
    ...base,
    cniDir: join(root, "cni"),
    daemonSocket: socket,
  });
  const multusConf = JSON.stringify({
    cniVersion: "1.0.0",
    name: "multus-cni-network",
    type: "multus",
    kubeconfig: multusKubeconfig,
    clusterNetwork,
    confDir,
    cniDir: join(root, "multus-cache"),
    binDir: CNI_PATH,
  });
  return { thinConf, daemonConf, multusConf };
}

/** The CNI_* environment of the bench pod's calls at K networks. */
function multusPodEnv(networkCount, netnsPath) {
  return {
    ...RUNTIME_ENV,
    CNI_CONTAINERID: `benchm${networkCount}`,
    CNI_NETNS: netnsPath,
    CNI_PATH,
    CNI_IFNAME: "eth0",
    CNI_ARGS: `IgnoreUnknown=1;K8S_POD_NAMESPACE=b;K8S_POD_NAME=p;K8S_POD_UID=u;K8S_POD_INFRA_CONTAINER_ID=benchm${networkCount}`,
  };
}

/**
 * One round: each contender's ADD then DEL, in `order`, and Multus's request count (from `log`,
 * the requests the front saw; none on the Python harness).
 */
async function runRound({ order, env, log }) {
  const round = {};
  for (const [name, [bin, conf]] of order) {
    const before = log?.length ?? 0;
    const a = await cni(bin, { ...env, CNI_COMMAND: "ADD" }, conf);
    if (name === "multus" && log) round.req = log.length - before;
    const d = await cni(bin, { ...env, CNI_COMMAND: "DEL" }, conf);
    round[name] = [a, d];
  }
  return round;
}

/** The samples of every round after the warm-up one, per contender, beside the direct runs. */
async function measureContenders({ pairs, env, log, confs, runs }) {
  const m = Object.fromEntries(
    Object.keys(pairs).flatMap((k) => [
      [`${k}Add`, []],
      [`${k}Del`, []],
      [`${k}Rss`, []],
      [`${k}Own`, []],
    ]),
  );
  m.fAdd = [];
  m.fDel = [];
  m.multusReq = [];
  m.thinVsMultus = [];
  for (let i = 0; i < runs + 1; i++) {
    // Every other round in reverse order, so no contender always runs right after another.
    const order = i % 2 ? Object.entries(pairs).reverse() : Object.entries(pairs);
    const round = await runRound({ order, env, log });
    const direct = await runDirect(confs, env);
    if (i === 0) continue;
    for (const [name, [a, d]] of Object.entries(round).filter(([k]) => k !== "req")) {
      m[`${name}Add`].push(a.ms);
      m[`${name}Del`].push(d.ms);
      m[`${name}Rss`].push(a.rssKiB ?? 0, d.rssKiB ?? 0);
      m[`${name}Own`].push(a.ms + d.ms - direct.add - direct.del);
    }
    // Round by round: a host whose speed drifts between rounds still compares like with like.
    m.thinVsMultus.push(m.thinOwn.at(-1) / m.multusOwn.at(-1));
    m.fAdd.push(direct.add);
    m.fDel.push(direct.del);
    if (round.req !== undefined) m.multusReq.push(round.req);
  }
  return m;
}

/** The medians (and peaks) of one K's samples. */
function summarizeContenders({ K, pairs, samples: m }) {
  const floorMs = median(m.fAdd) + median(m.fDel);
  const r = { K, floorMs };
  for (const name of Object.keys(pairs)) {
    r[name] = {
      add: median(m[`${name}Add`]),
      del: median(m[`${name}Del`]),
      // Each round's ADD + DEL − that round's direct delegates, then the median.
      own: median(m[`${name}Own`]),
      rssMiB: max(m[`${name}Rss`]) / 1024,
    };
  }
  r.multusReq = m.multusReq.length ? max(m.multusReq) : undefined;
  r.thinVsMultus = median(m.thinVsMultus);
  return r;
}

/** The Node harness: the project's fake API server, Multus's writes through the protobuf front. */
async function startNodeHarness({ objects, startFakeApiServer }) {
  // Multus ships its own ClusterRole (update pods/status); Plexus's shipped RBAC would refuse it.
  const api = await startFakeApiServer({ rbac: false });
  for (const pod of objects.pods) api.addPod(pod);
  for (const nad of objects.nads) api.addNad(nad);
  const front = await startProtobufFront(api);
  const close = async () => {
    await front.close();
    await api.close();
  };
  return { plexus: api, multus: front, log: front.log, close };
}

/** The Python harness: fake-api.py, which Plexus and Multus both talk to directly. */
async function startPythonHarness({ objects, dir }) {
  const fake = await startPythonFake({ dir, objects, latencyMs: PY_LATENCY_MS });
  return { plexus: fake, multus: fake, log: undefined, close: fake.close };
}

/** The two fake API servers every figure of this section is measured against. */
const HARNESSES = [
  { name: "node", label: "node fake + protobuf front", latencyMs: 0, start: startNodeHarness },
  {
    name: "python",
    label: "python fake (fake-api.py), direct",
    latencyMs: PY_LATENCY_MS,
    start: startPythonHarness,
  },
];

/**
 * Plexus's daemon and Multus thick (when it starts) on `servers`, and each contender's binary and
 * config. Returns them with `stop`, and why Multus thick did not start when it did not.
 */
async function startContenders({ servers, root, confDir, clusterNetwork }) {
  const kubeconfig = await nodeKubeconfig(servers.plexus, { dir: root });
  const multusKubeconfig = await nodeKubeconfig(servers.multus, {
    dir: root,
    fileName: "multus.kubeconfig",
  });
  const socket = join(root, "plexus.sock");
  const daemon = await startDaemon({ kubeconfig, socket, nodeName: NODE_NAME });
  let thick;
  let thickNote = "";
  try {
    thick = await startMultusThick({ front: servers.multus, root, confDir, clusterNetwork });
  } catch (err) {
    thickNote = `Multus thick not run: ${err.message}`;
  }
  const confs = { root, confDir, clusterNetwork, kubeconfig, multusKubeconfig, socket };
  const { thinConf, daemonConf, multusConf } = contenderConfs(confs);
  const binOf = (b) => join(MULTUS_DIR, b);
  const pairs = {
    thin: ["dist/plexus", thinConf],
    daemon: ["dist/plexus", daemonConf],
    multus: [binOf("multus"), multusConf],
    ...(thick ? { thick: [binOf("multus-shim"), thick.shimConf] } : {}),
  };
  const stop = async () => {
    await thick?.stop();
    await daemon.stop();
  };
  return { pairs, stop, thickNote };
}

/**
 * One K on one harness: its own fake API server(s), Plexus daemon and Multus thick (when it
 * starts), all stopped after. Returns the row (tagged with the harness) and, when Multus thick
 * did not start, why.
 */
async function benchMultusAt({ K, tmp, netnsPath, runs, harness, startFakeApiServer }) {
  const root = join(tmp, `${harness.name}-k${K}`);
  const objects = collectObjects();
  const { confDir, cluster, clusterNetwork, nads } = addMultusPodAndNads({
    api: objects,
    K,
    root,
  });
  const servers = await harness.start({ objects: objects.objects, dir: root, startFakeApiServer });
  let contenders;
  try {
    contenders = await startContenders({ servers, root, confDir, clusterNetwork });
    const { pairs } = contenders;
    const env = multusPodEnv(K, netnsPath);
    const confs = [cluster, ...nads];
    const samples = await measureContenders({ pairs, env, log: servers.log, confs, runs });
    const row = { harness: harness.name, ...summarizeContenders({ K, pairs, samples }) };
    return { row, thickNote: contenders.thickNote };
  } finally {
    await contenders?.stop();
    await servers.close();
  }
}

/** Prints the rows of every K on one harness, with why Multus thick did not run when it did not. */
function printMultusTable({ results, thickNote, harness }) {
  const ratio = (a, b) => (b > 0 ? `${(a / b).toFixed(2)}×` : "");
  console.log(
    `== Multus v4.0.2 beside Plexus, on the ${harness.label}: a pod with the default network + K ` +
      `NAD networks, fake API server (HTTPS, ${harness.latencyMs} ms), interleaved (ms, medians)`,
  );
  console.log(
    "   own = ADD + DEL − the same delegates run directly in that round (median of rounds); thin " +
      "ratio = Plexus / Multus own, the median of each round's ratio (below 1: Plexus cheaper)",
  );
  table(
    [
      "K",
      "Plexus thin own",
      "Multus thin own",
      "thin ratio",
      "Plexus daemon ADD / DEL",
      "Multus thick ADD / DEL",
      "daemon/thick ADD",
      "peak RSS Plexus / Multus thin / shim",
      "Multus req",
    ],
    results.map((r) => [
      r.K,
      rel(r.thin.own),
      rel(r.multus.own),
      `${r.thinVsMultus.toFixed(2)}×`,
      `${r.daemon.add.toFixed(1)} / ${r.daemon.del.toFixed(1)}`,
      r.thick ? `${r.thick.add.toFixed(1)} / ${r.thick.del.toFixed(1)}` : "—",
      r.thick ? ratio(r.daemon.add, r.thick.add) : "",
      `${Math.max(r.thin.rssMiB, r.daemon.rssMiB).toFixed(1)} / ${r.multus.rssMiB.toFixed(1)} / ` +
        `${r.thick ? r.thick.rssMiB.toFixed(1) : "—"} MiB`,
      r.multusReq ?? "—",
    ]),
  );
  if (thickNote) console.log(`   ${thickNote}`);
  console.log("");
}

/** Every K on one harness, printed as one table. */
async function benchHarness({ harness, counts, tmp, netnsPath, runs, startFakeApiServer }) {
  const results = [];
  let thickNote = "";
  for (const K of counts) {
    const at = await benchMultusAt({ K, tmp, netnsPath, runs, harness, startFakeApiServer });
    results.push(at.row);
    thickNote = at.thickNote || thickNote;
  }
  printMultusTable({ results, thickNote, harness });
  return results;
}

/** Rows of every K on both harnesses, each tagged `harness: "node" | "python"`. */
export async function benchMultus(runs, counts = [0, 2, 8]) {
  const missing = multusMissing();
  if (missing) {
    console.log(`== Multus v4.0.2 beside Plexus: skipped: ${missing}\n`);
    return undefined;
  }
  if (!needsRoot("Multus v4.0.2 beside Plexus")) return undefined;
  const { startFakeApiServer } = await importFakeApiServer();
  const tmp = mkdtempSync(join(tmpdir(), "plx-benchmultus-"));
  const s = scratch("plx-benchm");
  const netnsPath = s.netns(`plx-benchm-${process.pid}`);
  for (let k = 0; k <= Math.max(...counts); k++) s.link(`plxm${k}`);
  const results = [];
  try {
    for (const harness of HARNESSES) {
      const noPython = harness.name === "python" && pythonFakeMissing();
      if (noPython) {
        console.log(
          `== Multus v4.0.2 beside Plexus, on the ${harness.label}: skipped: ${noPython}\n`,
        );
        continue;
      }
      const args = { harness, counts, tmp, netnsPath, runs, startFakeApiServer };
      results.push(...(await benchHarness(args)));
    }
  } finally {
    s.cleanup();
    rmSync(tmp, { recursive: true, force: true });
  }
  return results;
}
