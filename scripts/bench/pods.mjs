// ADD and DEL of a pod with the default network plus K NAD networks, the cluster being a
// directory of manifests (fileClusterDir), against the same delegates run directly (the floor).
// The API-server variant (fake server, HTTPS, injected latency) comes with the API client.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { execFileSync } from "node:child_process";
import { CNI_PATH, cni, median, needsRoot, rel, runDirect, table, RUNTIME_ENV } from "./lib.mjs";

/**
 * Under `root`: the default network's conf, the cluster directory (pod `b/p` selecting K NADs)
 * and the Plexus config that reads it. Returns that config and the delegates' configs.
 */
function writeFileCluster({ root, K }) {
  const dataDir = join(root, "ipam");
  const confDir = join(root, "net.d");
  const clusterDir = join(root, "cluster");
  mkdirSync(confDir, { recursive: true });
  mkdirSync(clusterDir, { recursive: true });
  const net = (name, k) => ({
    cniVersion: "1.0.0",
    name,
    type: "bridge",
    bridge: `plxq${k}`,
    ipam: { type: "host-local", subnet: `10.233.${k}.0/24`, dataDir },
  });
  const cluster = net("cbr0", 0);
  writeFileSync(join(confDir, "10-cbr0.conf"), JSON.stringify(cluster));
  const nads = Array.from({ length: K }, (_, i) => net(`net${i}`, i + 1));
  const objects = [
    {
      apiVersion: "v1",
      kind: "Pod",
      metadata: {
        namespace: "b",
        name: "p",
        uid: "u",
        annotations: { "k8s.v1.cni.cncf.io/networks": nads.map((n) => n.name).join(",") },
      },
    },
    ...nads.map((n) => ({
      apiVersion: "k8s.cni.cncf.io/v1",
      kind: "NetworkAttachmentDefinition",
      metadata: { namespace: "b", name: n.name },
      spec: { config: JSON.stringify(n) },
    })),
  ];
  writeFileSync(
    join(clusterDir, "objects.json"),
    JSON.stringify({ apiVersion: "v1", kind: "List", items: objects }),
  );
  const conf = JSON.stringify({
    cniVersion: "1.0.0",
    name: "plexus",
    type: "plexus",
    clusterNetwork: "cbr0",
    confDir,
    fileClusterDir: clusterDir,
    cniDir: join(root, "cni"),
  });
  return { conf, all: [cluster, ...nads] };
}

/** One K's row: Plexus's ADD and DEL against the delegates run directly, medians. */
async function benchPodsAt({ K, tmp, netnsName, runs }) {
  const { conf, all } = writeFileCluster({ root: join(tmp, `k${K}`), K });
  const base = {
    ...RUNTIME_ENV,
    CNI_CONTAINERID: `benchp${K}`,
    CNI_NETNS: `/var/run/netns/${netnsName}`,
    CNI_PATH,
    CNI_ARGS: "IgnoreUnknown=1;K8S_POD_NAMESPACE=b;K8S_POD_NAME=p;K8S_POD_UID=u",
  };
  const m = { pAdd: [], pDel: [], dAdd: [], dDel: [] };
  for (let i = 0; i < runs + 1; i++) {
    const a = await cni("dist/plexus", { ...base, CNI_COMMAND: "ADD", CNI_IFNAME: "eth0" }, conf);
    const d = await cni("dist/plexus", { ...base, CNI_COMMAND: "DEL", CNI_IFNAME: "eth0" }, conf);
    const direct = await runDirect(all, base);
    if (i === 0) continue;
    m.pAdd.push(a.ms);
    m.pDel.push(d.ms);
    m.dAdd.push(direct.add);
    m.dDel.push(direct.del);
  }
  const own = median(m.pAdd) + median(m.pDel) - median(m.dAdd) - median(m.dDel);
  return [
    K,
    rel(median(m.pAdd)),
    rel(median(m.pDel)),
    rel(median(m.dAdd)),
    rel(median(m.dDel)),
    rel(own),
  ];
}

export async function benchPods(runs, counts = [0, 1, 2, 4, 8]) {
  if (!needsRoot("pods")) return;
  const tmp = mkdtempSync(join(tmpdir(), "plx-benchpods-"));
  const netnsName = `plx-benchp-${process.pid}`;
  execFileSync("ip", ["netns", "add", netnsName]);
  const rows = [];
  try {
    for (const K of counts) rows.push(await benchPodsAt({ K, tmp, netnsName, runs }));
  } finally {
    execFileSync("ip", ["netns", "del", netnsName]);
    for (let k = 0; k <= Math.max(...counts); k++) {
      try {
        execFileSync("ip", ["link", "del", `plxq${k}`], { stdio: "ignore" });
      } catch {}
    }
    rmSync(tmp, { recursive: true, force: true });
  }
  console.log(
    "== a pod with the default network + K NAD networks (fileClusterDir), against the delegates " +
      "run directly (ms, × node -e 0)",
  );
  table(["K", "plexus ADD", "plexus DEL", "direct ADD", "direct DEL", "own ADD+DEL"], rows);
  console.log("");
}
