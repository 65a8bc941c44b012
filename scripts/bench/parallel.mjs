// N pods (default network + K=2 NAD networks each, own namespace each) added all at once, then
// deleted all at once, through the fake API server (HTTPS, 0 ms), in thin and in daemon mode:
// wall time for the whole batch and the p50 / p99 / max of single ADDs. A request-rate stall
// (Multus thick: one rate-limited client for the node, 8.9 s for 10 pods) shows as a long tail.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CNI_PATH, cni, needsRoot, percentile, rel, scratch, startDaemon, table, importFakeApiServer } from "./lib.mjs";

const NODE_NAME = "bench-node";
const K = 2;

export async function benchParallel(rounds = 3, sizes = [10, 50]) {
  if (!needsRoot("pods in parallel")) return undefined;
  const { startFakeApiServer, writeKubeconfig } = await importFakeApiServer();
  const tmp = mkdtempSync(join(tmpdir(), "plx-benchpar-"));
  const s = scratch("plx-benchpar");
  for (let k = 0; k <= K; k++) s.link(`plxpar${k}`);
  const api = await startFakeApiServer();
  const rows = [];
  const results = {};
  let daemon;
  try {
    const dataDir = join(tmp, "ipam");
    const confDir = join(tmp, "net.d");
    mkdirSync(confDir, { recursive: true });
    const net = (name, k) => ({
      cniVersion: "1.0.0",
      name,
      type: "bridge",
      bridge: `plxpar${k}`,
      ipam: { type: "host-local", subnet: `10.235.${k}.0/24`, dataDir },
    });
    writeFileSync(join(confDir, "10-cbr0.conf"), JSON.stringify(net("cbr0", 0)));
    const nads = Array.from({ length: K }, (_, i) => net(`net${i}`, i + 1));
    for (const n of nads)
      api.addNad({ metadata: { namespace: "b", name: n.name }, spec: { config: JSON.stringify(n) } });
    const most = Math.max(...sizes);
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
    const kubeconfig = writeKubeconfig(api, { dir: tmp });
    const socket = join(tmp, "plexus.sock");
    daemon = await startDaemon({ kubeconfig, socket, nodeName: NODE_NAME });
    const base = {
      cniVersion: "1.0.0",
      name: "plexus",
      type: "plexus",
      clusterNetwork: join(confDir, "10-cbr0.conf"),
      confDir,
      kubeconfig,
      cniDir: join(tmp, "cni"),
    };
    const confs = {
      thin: JSON.stringify({ ...base, daemonSocket: "" }),
      daemon: JSON.stringify({ ...base, daemonSocket: socket }),
    };
    const envOf = (p, n) => ({
      ...process.env,
      CNI_CONTAINERID: `par-${p.name}-${n}`,
      CNI_NETNS: p.netns,
      CNI_PATH,
      CNI_IFNAME: "eth0",
      CNI_ARGS: `IgnoreUnknown=1;K8S_POD_NAMESPACE=b;K8S_POD_NAME=${p.name};K8S_POD_UID=u${p.name.slice(1)}`,
    });
    let n = 0;
    for (const size of sizes) {
      const acc = { thin: { wall: [], add: [], delWall: [] }, daemon: { wall: [], add: [], delWall: [] } };
      for (let round = 0; round < rounds + 1; round++) {
        for (const mode of ["thin", "daemon"]) {
          const batch = pods.slice(0, size);
          n++;
          const t0 = performance.now();
          const adds = await Promise.all(
            batch.map((p) => cni("dist/plexus", { ...envOf(p, n), CNI_COMMAND: "ADD" }, confs[mode])),
          );
          const wall = performance.now() - t0;
          const t1 = performance.now();
          await Promise.all(batch.map((p) => cni("dist/plexus", { ...envOf(p, n), CNI_COMMAND: "DEL" }, confs[mode])));
          const delWall = performance.now() - t1;
          if (round === 0) continue; // warm-up
          acc[mode].wall.push(wall);
          acc[mode].delWall.push(delWall);
          acc[mode].add.push(...adds.map((a) => a.ms));
        }
      }
      for (const mode of ["thin", "daemon"]) {
        const a = acc[mode];
        const r = {
          wall: percentile(a.wall, 50),
          p50: percentile(a.add, 50),
          p99: percentile(a.add, 99),
          max: Math.max(...a.add),
          delWall: percentile(a.delWall, 50),
        };
        results[`${mode}${size}`] = r;
        rows.push([size, mode, rel(r.wall), rel(r.p50), rel(r.p99), rel(r.max), rel(r.delWall)]);
      }
    }
  } finally {
    await daemon?.stop();
    await api.close();
    s.cleanup();
    rmSync(tmp, { recursive: true, force: true });
  }
  console.log(
    `== pods in parallel (default + K=${K} networks each, fake API over HTTPS at 0 ms; median of ${rounds} batches; ms, × node -e 0). Multus thin, 10 pods: 424 in all (issue 11's run, node -e 0 = 21 ms: 20.2×); thick: 8,865`,
  );
  table(["pods", "mode", "ADD wall (all)", "ADD p50", "ADD p99", "ADD max", "DEL wall (all)"], rows);
  console.log("");
  return results;
}
