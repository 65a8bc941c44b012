// ADD and DEL of a pod with the default network plus K NAD networks through the project's fake
// API server over HTTPS, in thin mode (dist/plexus talks to the API itself) and in daemon mode
// (dist/plexus asks `dist/plexus daemon` over its unix socket), interleaved round by round with
// the same delegates run directly (the floor) and a bare `node -e 0`, at 0 and 5 ms injected
// latency. API requests per ADD are counted by the server (reads / writes; watches excluded).
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  CNI_PATH,
  NODE,
  cni,
  fmt,
  max,
  median,
  needsRoot,
  rel,
  relMiB,
  runDirect,
  scratch,
  startDaemon,
  table,
  timed,
  importFakeApiServer,
  benchNetworks,
  RUNTIME_ENV,
  nodeKubeconfig,
  addPodWithNads,
} from "./lib.mjs";

const NODE_NAME = "bench-node";

/**
 * Multus v4.0.2 thin on this machine kind, the yardstick of the per-pod targets: own ADD+DEL (ms)
 * in a run where `node -e 0` took MULTUS_NODE_MS; requests per ADD.
 */
const MULTUS = {
  0: { thin: 42, req: 4 },
  2: { thin: 41, req: 6 },
  8: { thin: 535, req: 12 },
};
export const MULTUS_NODE_MS = 21;
const multusRel = (ms) => `${ms} (${(ms / MULTUS_NODE_MS).toFixed(2)}×)`;

function countRequests(api, from) {
  const rs = api.requests.slice(from).filter((r) => !/[?&]watch=(1|true)/.test(r.query));
  const reads = rs.filter((r) => r.method === "GET").length;
  return { reads, writes: rs.length - reads };
}

/** The fake API server's pod and K NADs, the daemon, and the thin and daemon-mode configs. */
async function setUpPodsApiCase({ api, root, K }) {
  const { confDir, clusterNetwork, net } = benchNetworks({
    root: root,
    bridgePrefix: "plxa",
    octet: 234,
  });
  const nads = Array.from({ length: K }, (_, i) => net(`net${i}`, i + 1));
  addPodWithNads(api, { nads, nodeName: NODE_NAME });
  const kubeconfig = await nodeKubeconfig(api, { dir: root });
  const socket = join(root, "plexus.sock");
  const daemon = await startDaemon({ kubeconfig, socket, nodeName: NODE_NAME });
  const base = {
    cniVersion: "1.0.0",
    name: "plexus",
    type: "plexus",
    clusterNetwork: clusterNetwork,
    confDir,
    kubeconfig,
    cniDir: join(root, "cni"),
  };
  const thinConf = JSON.stringify({ ...base, daemonSocket: "" });
  const daemonConf = JSON.stringify({ ...base, daemonSocket: socket });
  return { daemon, thinConf, daemonConf, all: [net("cbr0", 0), ...nads] };
}

/** Every round after the warm-up one: thin, daemon mode, the direct delegates, `node -e 0`. */
async function measurePodsApiRounds({ api, env, thinConf, daemonConf, all, runs }) {
  const m = {
    tAdd: [],
    tDel: [],
    dAdd: [],
    dDel: [],
    fAdd: [],
    fDel: [],
    node: [],
    tReq: [],
    dReq: [],
    rss: [],
  };
  for (let i = 0; i < runs + 1; i++) {
    let before = api.requests.length;
    const ta = await cni("dist/plexus", { ...env, CNI_COMMAND: "ADD" }, thinConf);
    const tReq = countRequests(api, before);
    const td = await cni("dist/plexus", { ...env, CNI_COMMAND: "DEL" }, thinConf);
    before = api.requests.length;
    const da = await cni("dist/plexus", { ...env, CNI_COMMAND: "ADD" }, daemonConf);
    const dReq = countRequests(api, before);
    const dd = await cni("dist/plexus", { ...env, CNI_COMMAND: "DEL" }, daemonConf);
    const direct = await runDirect(all, env);
    const bare = await timed(NODE, ["-e", "0"]);
    if (i === 0) continue; // warm-up round
    m.tAdd.push(ta.ms);
    m.tDel.push(td.ms);
    m.dAdd.push(da.ms);
    m.dDel.push(dd.ms);
    m.fAdd.push(direct.add);
    m.fDel.push(direct.del);
    m.node.push(bare.ms);
    m.tReq.push(tReq);
    m.dReq.push(dReq);
    m.rss.push(ta.rssKiB ?? 0, td.rssKiB ?? 0, da.rssKiB ?? 0, dd.rssKiB ?? 0);
  }
  return m;
}

/** The medians of one case's samples, its own time over the floor, its requests and peak RSS. */
function summarizePodsApi({ latencyMs, K, samples: m }) {
  const med = Object.fromEntries(
    Object.entries(m)
      .filter(([, v]) => typeof v[0] === "number")
      .map(([k, v]) => [k, median(v)]),
  );
  const floor = med.fAdd + med.fDel;
  return {
    latencyMs,
    K,
    ...med,
    thinOwn: med.tAdd + med.tDel - floor,
    daemonOwn: med.dAdd + med.dDel - floor,
    // DEL is served from the record in both modes: its cost over the bare Node start and its
    // delegates.
    delOver: med.dDel - med.fDel - med.node,
    tReads: max(m.tReq.map((q) => q.reads)),
    tWrites: max(m.tReq.map((q) => q.writes)),
    dReads: max(m.dReq.map((q) => q.reads)),
    dWrites: max(m.dReq.map((q) => q.writes)),
    peakRssMiB: max(m.rss) / 1024,
  };
}

/** One case (latency, K) on its own fake API server and daemon, both stopped after. */
async function benchPodsApiCase({ latencyMs, K, tmp, netnsPath, runs, startFakeApiServer }) {
  const api = await startFakeApiServer({ latencyMs, node: NODE_NAME });
  let daemon;
  try {
    const root = join(tmp, `l${latencyMs}k${K}`);
    const setUp = await setUpPodsApiCase({ api, root, K });
    daemon = setUp.daemon;
    const env = {
      ...RUNTIME_ENV,
      CNI_CONTAINERID: `bencha${K}`,
      CNI_NETNS: netnsPath,
      CNI_PATH,
      CNI_IFNAME: "eth0",
      CNI_ARGS: "IgnoreUnknown=1;K8S_POD_NAMESPACE=b;K8S_POD_NAME=p;K8S_POD_UID=u",
    };
    const samples = await measurePodsApiRounds({ api, env, ...setUp, runs });
    return summarizePodsApi({ latencyMs, K, samples });
  } finally {
    await daemon?.stop();
    await api.close();
  }
}

/** A printed row of one case, beside Multus's figures (MULTUS, measured at 0 ms latency). */
function podsApiRow(row) {
  const multus = row.latencyMs === 0 ? MULTUS[row.K] : undefined;
  return [
    row.latencyMs,
    row.K,
    `${rel(row.tAdd)} / ${rel(row.tDel)}`,
    `${rel(row.dAdd)} / ${rel(row.dDel)}`,
    `${rel(row.fAdd)} / ${rel(row.fDel)}`,
    rel(row.thinOwn),
    rel(row.daemonOwn),
    multus ? multusRel(multus.thin) : "",
    `${row.tReads}+${row.tWrites}`,
    `${row.dReads}+${row.dWrites}`,
    multus ? multus.req : "",
    fmt(row.delOver),
  ];
}

function printPodsApi(results) {
  console.log(
    "== a pod with the default network + K NAD networks through the fake API server (HTTPS): " +
      "thin vs daemon mode vs the delegates run directly (ms, medians, × node -e 0)",
  );
  console.log(
    "   own = ADD + DEL − direct ADD − direct DEL; requests = reads + writes per ADD (watches " +
      "excluded); DEL over floor = DEL − direct DEL − `node -e 0`",
  );
  console.log(`   Multus thin own: the yardstick's run, where node -e 0 took ${MULTUS_NODE_MS} ms`);
  table(
    [
      "latency",
      "K",
      "thin ADD / DEL",
      "daemon ADD / DEL",
      "direct ADD / DEL",
      "thin own",
      "daemon own",
      "Multus thin own",
      "thin req",
      "daemon req",
      "Multus req",
      "DEL over floor",
    ],
    results.map(podsApiRow),
  );
  const nodeMs = median(results.map((r) => r.node));
  console.log(
    `   node -e 0 interleaved with this section: ${fmt(nodeMs)} ms; CNI process peak RSS: ` +
      `${relMiB(max(results.map((r) => r.peakRssMiB)))} MiB`,
  );
  console.log("");
}

export async function benchPodsApi(runs, counts = [0, 1, 2, 4, 8], latencies = [0, 5]) {
  if (!needsRoot("pods through the API server")) return undefined;
  // Node 24 runs the TypeScript fake server directly (type stripping).
  const { startFakeApiServer } = await importFakeApiServer();
  const tmp = mkdtempSync(join(tmpdir(), "plx-benchapi-"));
  const s = scratch("plx-bencha");
  const netnsPath = s.netns(`plx-bencha-${process.pid}`);
  for (let k = 0; k <= Math.max(...counts); k++) s.link(`plxa${k}`);
  const results = [];
  try {
    for (const latencyMs of latencies)
      for (const K of counts)
        results.push(
          await benchPodsApiCase({ latencyMs, K, tmp, netnsPath, runs, startFakeApiServer }),
        );
  } finally {
    s.cleanup();
    rmSync(tmp, { recursive: true, force: true });
  }
  printPodsApi(results);
  return results;
}
