// Development aid (not part of `npm run bench`): keeps a fake API server (HTTPS) with pods p0/p2/p8
// (K = 0/2/8 bridge + host-local NAD networks) running, and writes /tmp/prof/{conf.json,env-K.sh}
// so that one ADD or DEL can be run by hand under a profiler: `. /tmp/prof/env-2.sh; dist/plexus <
// /tmp/prof/conf.json`. Ctrl-C removes what it made.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  addBenchPods,
  CNI_PATH,
  benchNetworks,
  importFakeApiServer,
  nodeKubeconfig,
  scratch,
  startDaemon,
} from "./lib.mjs";

const out = process.argv[2] ?? "/tmp/prof";
mkdirSync(out, { recursive: true });
const { startFakeApiServer } = await importFakeApiServer();
const tmp = mkdtempSync(join(tmpdir(), "plx-prof-"));
const s = scratch("plx-prof");
const netnsPath = s.netns(`plx-prof-${process.pid}`);
for (let k = 0; k <= 8; k++) s.link(`plxpf${k}`);
const api = await startFakeApiServer({ node: "bench-node" });
const { confDir, clusterNetwork, net } = benchNetworks({
  root: tmp,
  bridgePrefix: "plxpf",
  octet: 237,
});
const nads = Array.from({ length: 8 }, (_, i) => net(`net${i}`, i + 1));
addBenchPods(api, nads);
const kubeconfig = await nodeKubeconfig(api, { dir: tmp });
const conf = {
  cniVersion: "1.0.0",
  name: "plexus",
  type: "plexus",
  clusterNetwork,
  confDir,
  kubeconfig,
  cniDir: join(tmp, "cni"),
  daemonSocket: "",
};
writeFileSync(join(out, "conf.json"), JSON.stringify(conf));
// Daemon mode: the same, with a daemon of the same executable on its socket.
const socket = join(tmp, "plexus.sock");
const daemon = await startDaemon({ kubeconfig, socket, nodeName: "bench-node" });
writeFileSync(
  join(out, "conf-daemon.json"),
  JSON.stringify({ ...conf, daemonSocket: socket, cniDir: join(tmp, "cni-d") }),
);
writeFileSync(
  join(out, "multus.json"),
  JSON.stringify({ ...conf, type: "multus", kubeconfig, cniDir: undefined }),
);
for (const K of [0, 2, 8])
  writeFileSync(
    join(out, `env-${K}.sh`),
    [
      `export CNI_CONTAINERID=pf${K}`,
      `export CNI_NETNS=${netnsPath}`,
      `export CNI_PATH=${CNI_PATH}`,
      "export CNI_IFNAME=eth0",
      `export CNI_ARGS='IgnoreUnknown=1;K8S_POD_NAMESPACE=b;K8S_POD_NAME=p${K};K8S_POD_UID=u${K}'`,
      "",
    ].join("\n"),
  );
console.log(`ready: ${out}`);
const stop = async () => {
  await daemon.stop();
  await api.close();
  s.cleanup();
  rmSync(tmp, { recursive: true, force: true });
  process.exit(0);
};
process.on("SIGINT", stop);
process.on("SIGTERM", stop);
