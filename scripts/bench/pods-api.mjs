// ADD and DEL of a pod with the default network plus K NAD networks through the project's fake
// API server over HTTPS (the real client in dist/plexus), at 0 and 5 ms injected latency, against
// the same delegates run directly (the floor). Also API requests per ADD, counted by the server.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { execFileSync } from "node:child_process";
import { timed, median, fmt, table } from "./lib.mjs";

const CNI_PATH = "/usr/lib/cni";

async function run(cmd, env, stdin) {
  const r = await timed(cmd, [], { env, stdin });
  if (r.code !== 0) throw new Error(`${env.CNI_COMMAND} via ${cmd} failed: ${r.stdout} ${r.stderr}`);
  return r;
}

export async function benchPodsApi(runs, counts = [0, 1, 2, 4, 8], latencies = [0, 5]) {
  if (process.getuid?.() !== 0) {
    console.log("== pods through the API server: skipped (needs root for network namespaces)\n");
    return;
  }
  // Node 24 runs the TypeScript fake server directly (type stripping).
  const { startFakeApiServer, writeKubeconfig } = await import("../../test/support/fake-apiserver.ts");
  const tmp = mkdtempSync(join(tmpdir(), "plx-benchapi-"));
  const netnsName = `plx-bencha-${process.pid}`;
  execFileSync("ip", ["netns", "add", netnsName]);
  const rows = [];
  try {
    for (const latencyMs of latencies) {
      for (const K of counts) {
        const api = await startFakeApiServer({ latencyMs });
        try {
          const root = join(tmp, `l${latencyMs}k${K}`);
          const dataDir = join(root, "ipam");
          const confDir = join(root, "net.d");
          mkdirSync(confDir, { recursive: true });
          const net = (name, k) => ({ cniVersion: "1.0.0", name, type: "bridge", bridge: `plxa${k}`, ipam: { type: "host-local", subnet: `10.234.${k}.0/24`, dataDir } });
          const cluster = net("cbr0", 0);
          writeFileSync(join(confDir, "10-cbr0.conf"), JSON.stringify(cluster));
          const nads = Array.from({ length: K }, (_, i) => net(`net${i}`, i + 1));
          api.addPod({ metadata: { namespace: "b", name: "p", uid: "u", annotations: { "k8s.v1.cni.cncf.io/networks": nads.map((n) => n.name).join(",") } } });
          for (const n of nads) api.addNad({ metadata: { namespace: "b", name: n.name }, spec: { config: JSON.stringify(n) } });
          const kubeconfig = writeKubeconfig(api, { dir: root });
          const conf = JSON.stringify({ cniVersion: "1.0.0", name: "plexus", type: "plexus", clusterNetwork: "/" + join(confDir, "10-cbr0.conf").replace(/^\//, ""), confDir, kubeconfig, cniDir: join(root, "cni") });
          const base = { ...process.env, CNI_CONTAINERID: `bencha${K}`, CNI_NETNS: `/var/run/netns/${netnsName}`, CNI_PATH, CNI_ARGS: "IgnoreUnknown=1;K8S_POD_NAMESPACE=b;K8S_POD_NAME=p;K8S_POD_UID=u" };
          const all = [cluster, ...nads];
          const m = { pAdd: [], pDel: [], dAdd: [], dDel: [], req: [] };
          for (let i = 0; i < runs + 1; i++) {
            const before = api.requests.length;
            const a = await run("dist/plexus", { ...base, CNI_COMMAND: "ADD", CNI_IFNAME: "eth0" }, conf);
            const reqs = api.requests.length - before;
            const d = await run("dist/plexus", { ...base, CNI_COMMAND: "DEL", CNI_IFNAME: "eth0" }, conf);
            let dAdd = 0;
            let dDel = 0;
            for (let k = 0; k < all.length; k++) dAdd += (await run(`${CNI_PATH}/bridge`, { ...base, CNI_COMMAND: "ADD", CNI_IFNAME: k === 0 ? "eth0" : `net${k}` }, JSON.stringify(all[k]))).ms;
            for (let k = all.length - 1; k >= 0; k--) dDel += (await run(`${CNI_PATH}/bridge`, { ...base, CNI_COMMAND: "DEL", CNI_IFNAME: k === 0 ? "eth0" : `net${k}` }, JSON.stringify(all[k]))).ms;
            if (i === 0) continue;
            m.pAdd.push(a.ms);
            m.pDel.push(d.ms);
            m.dAdd.push(dAdd);
            m.dDel.push(dDel);
            m.req.push(reqs);
          }
          const own = median(m.pAdd) + median(m.pDel) - median(m.dAdd) - median(m.dDel);
          rows.push([latencyMs, K, fmt(median(m.pAdd)), fmt(median(m.pDel)), fmt(median(m.dAdd)), fmt(median(m.dDel)), fmt(own), median(m.req)]);
        } finally {
          await api.close();
        }
      }
    }
  } finally {
    execFileSync("ip", ["netns", "del", netnsName]);
    for (let k = 0; k <= Math.max(...counts); k++) {
      try {
        execFileSync("ip", ["link", "del", `plxa${k}`], { stdio: "ignore" });
      } catch {}
    }
    rmSync(tmp, { recursive: true, force: true });
  }
  console.log("== a pod with the default network + K NAD networks through the fake API server (HTTPS), against the delegates run directly (ms)");
  table(["latency", "K", "plexus ADD", "plexus DEL", "direct ADD", "direct DEL", "own ADD+DEL", "API requests per ADD"], rows);
  console.log("");
}
