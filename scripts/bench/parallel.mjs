// N pods (default network + K=2 NAD networks each, own namespace each) added all at once, then
// deleted all at once, through the fake API server (HTTPS, 0 ms), in thin and in daemon mode:
// wall time for the whole batch and the p50 / p99 / max of single ADDs. A request-rate stall
// (Multus thick: one rate-limited client for the node, 8.9 s for 10 pods) shows as a long tail.
// With the optional peer built (scripts/bench/multus-peer.sh), Multus v4.0.2 thin runs the same
// 10-pod batches, interleaved with Plexus batch by batch (through multus-front.mjs, which answers
// its protobuf writes), and the thin/Multus ratio is the median of each round's ratio.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  CNI_PATH,
  cni,
  median,
  needsRoot,
  percentile,
  rel,
  scratch,
  startDaemon,
  table,
  importFakeApiServer,
  benchNetworks,
  RUNTIME_ENV,
  nodeKubeconfig,
} from "./lib.mjs";
import { startProtobufFront } from "./multus-front.mjs";
import { MULTUS_DIR, multusMissing } from "./multus.mjs";

const NODE_NAME = "bench-node";
const K = 2;

const spreadOf = ([lo, hi]) => `${lo.toFixed(0)}–${hi.toFixed(0)}`;

/**
 * Multus thin runs the batches of this size only (its 50-pod batches would add minutes, not news).
 */
const MULTUS_SIZE = 10;

/** The K NADs and `most` pods selecting them (one netns each) on the fake API server. */
function addParallelPods({ api, tmp, s, most }) {
  const { confDir, clusterNetwork, net } = benchNetworks({
    root: tmp,
    bridgePrefix: "plxpar",
    octet: 235,
  });
  const nads = Array.from({ length: K }, (_, i) => net(`net${i}`, i + 1));
  for (const n of nads)
    api.addNad({
      metadata: { namespace: "b", name: n.name },
      spec: { config: JSON.stringify(n) },
    });
  const pods = Array.from({ length: most }, (_, i) => {
    api.addPod({
      metadata: {
        namespace: "b",
        name: `p${i}`,
        uid: `u${i}`,
        annotations: { "k8s.v1.cni.cncf.io/networks": nads.map((n) => n.name).join(",") },
      },
      spec: { nodeName: NODE_NAME },
    });
    return { name: `p${i}`, netns: s.netns(`plx-benchpar-${process.pid}-${i}`) };
  });
  return { confDir, clusterNetwork, pods };
}

/** Each contender's network config and executable: Plexus thin, daemon mode, Multus thin. */
async function parallelContenders({ front, tmp, confDir, clusterNetwork, kubeconfig, socket }) {
  const base = {
    cniVersion: "1.0.0",
    name: "plexus",
    type: "plexus",
    clusterNetwork: clusterNetwork,
    confDir,
    kubeconfig,
    cniDir: join(tmp, "cni"),
  };
  const confs = {
    thin: JSON.stringify({ ...base, daemonSocket: "" }),
    daemon: JSON.stringify({ ...base, daemonSocket: socket }),
  };
  const bins = { thin: "dist/plexus", daemon: "dist/plexus" };
  if (front) {
    confs.multus = JSON.stringify({
      cniVersion: "1.0.0",
      name: "multus-cni-network",
      type: "multus",
      kubeconfig: await nodeKubeconfig(front, { dir: tmp, fileName: "multus.kubeconfig" }),
      clusterNetwork: base.clusterNetwork,
      confDir,
      cniDir: join(tmp, "multus-cache"),
      binDir: CNI_PATH,
    });
    bins.multus = join(MULTUS_DIR, "multus");
  }
  return { confs, bins };
}

/** The CNI_* environment of pod `pod` in batch number `batchNo` (a fresh container ID each). */
function parallelEnv(pod, batchNo) {
  return {
    ...RUNTIME_ENV,
    CNI_CONTAINERID: `par-${pod.name}-${batchNo}`,
    CNI_NETNS: pod.netns,
    CNI_PATH,
    CNI_IFNAME: "eth0",
    CNI_ARGS: `IgnoreUnknown=1;K8S_POD_NAMESPACE=b;K8S_POD_NAME=${pod.name};K8S_POD_UID=u${pod.name.slice(1)};K8S_POD_INFRA_CONTAINER_ID=par-${pod.name}-${batchNo}`,
  };
}

/** One batch: every pod's ADD at once, then every pod's DEL at once, each timed as a whole. */
async function runBatch({ bin, conf, batch, batchNo }) {
  const call = (p, command) => cni(bin, { ...parallelEnv(p, batchNo), CNI_COMMAND: command }, conf);
  const t0 = performance.now();
  const adds = await Promise.all(batch.map((p) => call(p, "ADD")));
  const wall = performance.now() - t0;
  const t1 = performance.now();
  await Promise.all(batch.map((p) => call(p, "DEL")));
  return { adds, wall, delWall: performance.now() - t1 };
}

/** The rounds of one batch size, interleaved across contenders; the first round is a warm-up. */
async function measureSize({ size, rounds, pods, confs, bins, counter }) {
  const modes = Object.keys(confs).filter((m) => m !== "multus" || size === MULTUS_SIZE);
  const acc = Object.fromEntries(modes.map((m) => [m, { wall: [], add: [], delWall: [] }]));
  const thinVsMultus = [];
  for (let round = 0; round < rounds + 1; round++) {
    // Every other round in reverse order, so no contender always runs right after another.
    for (const mode of round % 2 ? [...modes].reverse() : modes) {
      const batch = pods.slice(0, size);
      counter.n++;
      const { adds, wall, delWall } = await runBatch({
        bin: bins[mode],
        conf: confs[mode],
        batch,
        batchNo: counter.n,
      });
      if (round === 0) continue; // warm-up
      acc[mode].wall.push(wall);
      acc[mode].delWall.push(delWall);
      acc[mode].add.push(...adds.map((a) => a.ms));
    }
    // Round by round: a host whose speed drifts between rounds still compares like with like.
    if (round > 0 && acc.multus && size === MULTUS_SIZE)
      thinVsMultus.push(acc.thin.wall.at(-1) / acc.multus.wall.at(-1));
  }
  return { modes, acc, thinVsMultus };
}

/** Adds one size's figures to `results` (keyed `<mode><size>`) and its rows to `rows`. */
function summarizeSize({ size, measured: { modes, acc, thinVsMultus }, results, rows }) {
  for (const mode of modes) {
    const a = acc[mode];
    const r = {
      wall: percentile(a.wall, 50),
      spread: [Math.min(...a.wall), Math.max(...a.wall)],
      p50: percentile(a.add, 50),
      p99: percentile(a.add, 99),
      max: Math.max(...a.add),
      delWall: percentile(a.delWall, 50),
    };
    results[`${mode}${size}`] = r;
    const name = mode === "multus" ? "Multus thin" : mode;
    rows.push([
      size,
      name,
      rel(r.wall),
      spreadOf(r.spread),
      rel(r.p50),
      rel(r.p99),
      rel(r.max),
      rel(r.delWall),
    ]);
  }
  if (thinVsMultus.length) {
    results.thinVsMultus = median(thinVsMultus);
    results.thinVsMultusSpread = [Math.min(...thinVsMultus), Math.max(...thinVsMultus)];
  }
}

function printParallel({ rounds, rows, results, multusSkip }) {
  console.log(
    `== pods in parallel (default + K=${K} networks each, fake API over HTTPS at 0 ms; median of ` +
      `${rounds} batches, interleaved; ms, × node -e 0). Multus thick, 10 pods (the yardstick's ` +
      `run): 8,865`,
  );
  table(
    [
      "pods",
      "mode",
      "ADD wall (all)",
      "min–max",
      "ADD p50",
      "ADD p99",
      "ADD max",
      "DEL wall (all)",
    ],
    rows,
  );
  if (results.thinVsMultus !== undefined) {
    const [lo, hi] = results.thinVsMultusSpread;
    console.log(
      `   ${MULTUS_SIZE} pods, ADD wall, Plexus thin / Multus thin: ` +
        `${results.thinVsMultus.toFixed(2)}× (median of each round's ratio; ` +
        `${lo.toFixed(2)}–${hi.toFixed(2)}×)`,
    );
  } else console.log(`   Multus v4.0.2 thin beside it: skipped: ${multusSkip}`);
  console.log("");
}

export async function benchParallel(rounds = 3, sizes = [10, 50]) {
  if (!needsRoot("pods in parallel")) return undefined;
  const { startFakeApiServer } = await importFakeApiServer();
  const tmp = mkdtempSync(join(tmpdir(), "plx-benchpar-"));
  const s = scratch("plx-benchpar");
  for (let k = 0; k <= K; k++) s.link(`plxpar${k}`);
  const multusSkip = multusMissing();
  // Multus ships its own ClusterRole (update pods/status); Plexus's shipped RBAC would refuse it.
  const api = await startFakeApiServer(multusSkip ? { node: NODE_NAME } : { rbac: false });
  const front = multusSkip ? undefined : await startProtobufFront(api);
  const rows = [];
  const results = {};
  let daemon;
  try {
    const most = Math.max(...sizes);
    const { confDir, clusterNetwork, pods } = addParallelPods({ api, tmp, s, most });
    const kubeconfig = await nodeKubeconfig(api, { dir: tmp });
    const socket = join(tmp, "plexus.sock");
    daemon = await startDaemon({ kubeconfig, socket, nodeName: NODE_NAME });
    const { confs, bins } = await parallelContenders({
      front,
      tmp,
      confDir,
      clusterNetwork,
      kubeconfig,
      socket,
    });
    const counter = { n: 0 };
    for (const size of sizes) {
      const measured = await measureSize({ size, rounds, pods, confs, bins, counter });
      summarizeSize({ size, measured, results, rows });
    }
  } finally {
    await daemon?.stop();
    await front?.close();
    await api.close();
    s.cleanup();
    rmSync(tmp, { recursive: true, force: true });
  }
  printParallel({ rounds, rows, results, multusSkip });
  return results;
}
