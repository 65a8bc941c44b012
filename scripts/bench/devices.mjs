// Device-plugin networks (M10): a pod with the default network plus one NAD network,
// that NAD plain or annotated with `k8s.v1.cni.cncf.io/resourceName` (its bridge delegate simply
// ignores the deviceID it is given), through the fake API server and a fake kubelet pod-resources
// server (grpc-js on a unix socket), in thin mode (the CNI process asks kubelet itself) and daemon
// mode (the daemon asks kubelet over its one channel), interleaved round by round. Target: a
// device network's ADD costs at most a plain one's + 10 ms.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { build } from "esbuild";
import {
  CNI_PATH,
  median,
  needsRoot,
  rel,
  scratch,
  startDaemon,
  table,
  cni,
  importFakeApiServer,
  benchNetworks,
  RUNTIME_ENV,
  nodeKubeconfig,
} from "./lib.mjs";

const NODE_NAME = "bench-node";
const RESOURCE = "intel.com/sriov_netdevice";

/**
 * The test's fake kubelet, bundled (it imports the project's TypeScript, which Node cannot resolve
 * as is).
 */
async function loadFakeKubelet(dir) {
  const out = join(dir, "fake-pod-resources.mjs");
  await build({
    entryPoints: ["test/support/fake-pod-resources.ts"],
    bundle: true,
    platform: "node",
    format: "esm",
    outfile: out,
    logLevel: "warning",
    banner: {
      js:
        "import { createRequire } from 'node:module'; const require = " +
        "createRequire(import.meta.url);",
    },
  });
  return import(out);
}

/** The plain NAD, the device NAD (with a resourceName) and a pod selecting each, on `api`. */
function addDeviceObjects({ api, net }) {
  api.addNad({
    metadata: { namespace: "b", name: "plain" },
    spec: { config: JSON.stringify(net("plain", 1)) },
  });
  api.addNad({
    metadata: {
      namespace: "b",
      name: "dev",
      annotations: { "k8s.v1.cni.cncf.io/resourceName": RESOURCE },
    },
    spec: { config: JSON.stringify(net("dev", 1)) },
  });
  for (const [name, nad] of [
    ["plain", "plain"],
    ["dev", "dev"],
  ]) {
    api.addPod({
      metadata: {
        namespace: "b",
        name,
        uid: `u-${name}`,
        annotations: { "k8s.v1.cni.cncf.io/networks": nad },
      },
      spec: { nodeName: NODE_NAME },
    });
  }
}

/** ADD wall times (after a warm-up round) per "<mode> <pod>", modes and pods interleaved. */
async function measureDeviceAdds({ modes, netnsPath, runs }) {
  const m = {};
  for (let i = 0; i < runs + 1; i++) {
    for (const [mode, conf] of Object.entries(modes)) {
      for (const pod of ["plain", "dev"]) {
        const env = {
          ...RUNTIME_ENV,
          CNI_CONTAINERID: `benchdev-${pod}`,
          CNI_NETNS: netnsPath,
          CNI_PATH,
          CNI_IFNAME: "eth0",
          CNI_ARGS: `IgnoreUnknown=1;K8S_POD_NAMESPACE=b;K8S_POD_NAME=${pod};K8S_POD_UID=u-${pod}`,
        };
        const add = await cni("dist/plexus", { ...env, CNI_COMMAND: "ADD" }, conf);
        await cni("dist/plexus", { ...env, CNI_COMMAND: "DEL" }, conf);
        if (i > 0) (m[`${mode} ${pod}`] ??= []).push(add.ms); // round 0 warms up
      }
    }
  }
  return Object.fromEntries(Object.entries(m).map(([k, v]) => [k, median(v)]));
}

function printDevices(med, kubelet) {
  console.log(
    "== a pod with the default network + one NAD network, plain or with a resourceName (fake " +
      "kubelet pod-resources over gRPC), ADD ms, medians, × node -e 0",
  );
  table(
    ["mode", "plain NAD ADD", "device NAD ADD", "device − plain"],
    ["thin", "daemon"].map((mode) => [
      mode,
      rel(med[`${mode} plain`]),
      rel(med[`${mode} dev`]),
      rel(med[`${mode} dev`] - med[`${mode} plain`]),
    ]),
  );
  console.log(`   kubelet queries answered: ${kubelet.calls.length}\n`);
}

/** The thin and daemon-mode configs, both pointed at the fake kubelet. */
function deviceModes({ tmp, confDir, clusterNetwork, kubeconfig, kubeletSocket, socket }) {
  const base = {
    cniVersion: "1.0.0",
    name: "plexus",
    type: "plexus",
    clusterNetwork: clusterNetwork,
    confDir,
    kubeconfig,
    cniDir: join(tmp, "cni"),
    podResourcesSocket: kubeletSocket,
    deviceInfoDir: join(tmp, "devinfo"),
  };
  return {
    thin: JSON.stringify({ ...base, daemonSocket: "" }),
    daemon: JSON.stringify({ ...base, daemonSocket: socket }),
  };
}

export async function benchDevices(runs) {
  if (!needsRoot("device-plugin networks")) return undefined;
  const { startFakeApiServer } = await importFakeApiServer();
  const tmp = mkdtempSync(join(tmpdir(), "plx-benchdev-"));
  const { startFakePodResources, podWithDevices } = await loadFakeKubelet(tmp);
  const s = scratch("plx-benchdev");
  const netnsPath = s.netns(`plx-benchdev-${process.pid}`);
  for (const k of [0, 1]) s.link(`plxd${k}`);
  const api = await startFakeApiServer({ node: NODE_NAME });
  const kubeletSocket = join(tmp, "kubelet.sock");
  const kubelet = await startFakePodResources(kubeletSocket, [
    podWithDevices("b", "dev", { app: { [RESOURCE]: ["0000:3b:02.1"] } }),
  ]);
  let daemon;
  try {
    const { confDir, clusterNetwork, net } = benchNetworks({
      root: tmp,
      bridgePrefix: "plxd",
      octet: 235,
    });
    addDeviceObjects({ api, net });
    const kubeconfig = await nodeKubeconfig(api, { dir: tmp });
    const socket = join(tmp, "plexus.sock");
    daemon = await startDaemon({
      kubeconfig,
      socket,
      nodeName: NODE_NAME,
      podResourcesSocket: kubeletSocket,
    });
    const modes = deviceModes({ tmp, confDir, clusterNetwork, kubeconfig, kubeletSocket, socket });
    const med = await measureDeviceAdds({ modes, netnsPath, runs });
    printDevices(med, kubelet);
    return {
      thinExtra: med["thin dev"] - med["thin plain"],
      daemonExtra: med["daemon dev"] - med["daemon plain"],
    };
  } finally {
    await daemon?.stop();
    await kubelet.close();
    await api.close();
    s.cleanup();
    rmSync(tmp, { recursive: true, force: true });
  }
}
