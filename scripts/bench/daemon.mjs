// `plexus daemon` at scale: 10,000 NADs across 100 namespaces and 110 pods on its node (plus 1,000
// pods on other nodes that its field selector keeps out), through the fake API server (HTTPS).
// Prints time to ready (lists synced), resident memory (VmRSS / VmHWM from /proc) and the API
// requests the daemon makes while pods churn: with watches, none besides the watches themselves.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { rel, relMiB, startDaemon, table, importFakeApiServer, nodeKubeconfig } from "./lib.mjs";

const NODE_NAME = "bench-node";

function nad(index) {
  const ns = `tenant-${index % 100}`;
  const config = {
    cniVersion: "1.0.0",
    name: `net-${index}`,
    type: "macvlan",
    master: "eth1",
    mode: "bridge",
    ipam: {
      type: "whereabouts",
      range: `10.${(index >> 8) & 255}.${index & 255}.0/24`,
      exclude: [`10.${(index >> 8) & 255}.${index & 255}.0/28`],
      routes: [{ dst: "0.0.0.0/0" }],
    },
  };
  return {
    metadata: {
      namespace: ns,
      name: `net-${index}`,
      labels: { team: `t${index % 37}` },
      annotations: { "k8s.v1.cni.cncf.io/resourceName": "intel.com/sriov_netdevice" },
    },
    spec: { config: JSON.stringify(config) },
  };
}

function pod(index, nodeName) {
  const ns = `tenant-${index % 100}`;
  return {
    metadata: {
      namespace: ns,
      name: `app-${nodeName}-${index}`,
      uid: `uid-${nodeName}-${index}`,
      labels: { app: `app-${index % 13}`, "pod-template-hash": "7d9f8c6b5d" },
      annotations: { "k8s.v1.cni.cncf.io/networks": `net-${index},net-${index + 100}@eth7` },
      // What a real pod carries that the daemon trims away.
      managedFields: Array.from({ length: 4 }, (_, j) => ({
        manager: `m${j}`,
        operation: "Update",
        fieldsV1: { "f:metadata": { "f:labels": { ".": {}, "f:app": {} } } },
      })),
    },
    spec: {
      nodeName,
      containers: [
        {
          name: "app",
          image: "registry.example/app:1.2.3",
          env: Array.from({ length: 10 }, (_, j) => ({ name: `VAR_${j}`, value: "x".repeat(40) })),
        },
      ],
    },
  };
}

/**
 * Churn: 10% of the node's pods replaced, then a NAD edited, over ~2 s. Returns how many pods
 * were replaced, how long it took (s) and the API requests made meanwhile, watches aside.
 */
async function churnPods(api, podsOnNode) {
  const before = api.requests.length;
  const t0 = performance.now();
  const churn = Math.round(podsOnNode / 10);
  for (let i = 0; i < churn; i++) {
    api.deletePod(`tenant-${i % 100}`, `app-${NODE_NAME}-${i}`);
    api.addPod(pod(podsOnNode + i, NODE_NAME));
    await new Promise((r) => setTimeout(r, 150));
  }
  api.addNad(nad(7));
  await new Promise((r) => setTimeout(r, 500));
  const seconds = (performance.now() - t0) / 1000;
  const during = api.requests
    .slice(before)
    .filter((r) => !/[?&]watch=(1|true)/.test(r.query)).length;
  return { churn, seconds, during };
}

function printDaemon({ r, gauge, churn, counts: { nadCount, podsOnNode, podsElsewhere } }) {
  console.log(
    `== plexus daemon with ${nadCount.toLocaleString("en")} NADs and ${podsOnNode} pods on its ` +
      `node (${podsElsewhere.toLocaleString("en")} elsewhere), fake API over HTTPS`,
  );
  table(
    [
      "ready after ms",
      "RSS MiB",
      "peak RSS MiB",
      "cached pods",
      "cached NADs",
      `API requests during ${churn} pod replacements + 1 NAD edit ` +
        `(${r.churnSeconds.toFixed(1)} s)`,
    ],
    [
      [
        rel(r.readyMs),
        relMiB(r.rssMiB),
        relMiB(r.hwmMiB),
        gauge("pod"),
        gauge("nad"),
        r.requestsDuringChurn,
      ],
    ],
  );
  console.log(
    "   (× node -e 0: its time, its peak RSS) target: RSS ≤ 100 MiB at 10,000 NADs; requests " +
      "independent of churn (0 besides the two watches)\n",
  );
}

export async function benchDaemon(nadCount = 10_000, podsOnNode = 110, podsElsewhere = 1_000) {
  const { startFakeApiServer } = await importFakeApiServer();
  const tmp = mkdtempSync(join(tmpdir(), "plx-benchd-"));
  const api = await startFakeApiServer({ node: NODE_NAME });
  let daemon;
  try {
    api.addNads(Array.from({ length: nadCount }, (_, i) => nad(i)));
    for (let i = 0; i < podsOnNode; i++) api.addPod(pod(i, NODE_NAME));
    for (let i = 0; i < podsElsewhere; i++) api.addPod(pod(i, `other-${i % 50}`));
    const kubeconfig = await nodeKubeconfig(api, { dir: tmp });
    daemon = await startDaemon({
      kubeconfig,
      socket: join(tmp, "plexus.sock"),
      nodeName: NODE_NAME,
    });
    const atReady = daemon.rssKiB();
    const { churn, seconds, during } = await churnPods(api, podsOnNode);
    const metrics = await daemon.metrics();
    const gauge = (kind) =>
      Number(
        new RegExp(`^plexus_daemon_cache_objects\\{kind="${kind}"\\} (\\S+)$`, "m").exec(
          metrics,
        )?.[1],
      );
    const after = daemon.rssKiB();
    const r = {
      readyMs: daemon.readyMs,
      rssMiB: after.rss / 1024,
      hwmMiB: Math.max(after.hwm, atReady.hwm) / 1024,
      requestsDuringChurn: during,
      churnSeconds: seconds,
    };
    printDaemon({ r, gauge, churn, counts: { nadCount, podsOnNode, podsElsewhere } });
    return r;
  } finally {
    await daemon?.stop();
    await api.close();
    rmSync(tmp, { recursive: true, force: true });
  }
}
