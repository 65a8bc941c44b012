// API requests and bytes per node, measured: one pod (default network + 2 NAD networks) added and
// deleted in thin mode, in daemon mode (with the daemon's start: its LISTs and WATCHes, and its
// read of a new pod's ResourceClaim by name) and, when
// built, by Multus v4.0.2 thin and thick, every request going through a counting front to the
// project's fake API server (bytes = request and response bodies, without HTTP/TLS framing).
// docs/scale.md scales these up to 5,000 nodes × 110 pods.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  CNI_PATH,
  cni,
  importFakeApiServer,
  needsRoot,
  scratch,
  startDaemon,
  table,
  benchNetworks,
  RUNTIME_ENV,
  nodeKubeconfig,
} from "./lib.mjs";
import { startProtobufFront } from "./multus-front.mjs";
import { MULTUS_DIR, multusMissing, startMultusThick } from "./multus.mjs";

const K = 2;

function summarise(log) {
  const kind = (e) => {
    if (/[?&]watch=(1|true)/.test(e.path)) return "watch";
    if (e.method !== "GET")
      return e.method === "POST" && /\/events/.test(e.path) ? "event" : "write";
    const path = e.path.split("?")[0];
    return /\/(pods|network-attachment-definitions|resourceclaims|resourceslices)$/.test(path)
      ? "list"
      : "get";
  };
  const out = {};
  for (const e of log) {
    const k = kind(e);
    out[k] ??= { n: 0, inB: 0, outB: 0, paths: new Set() };
    out[k].n++;
    out[k].inB += e.inBytes;
    out[k].outB += e.outBytes;
    out[k].paths.add(
      `${e.method} ${e.path.split("?")[0].replace(/\/namespaces\/[^/]+/, "/namespaces/*")}`,
    );
  }
  return out;
}

/**
 * `mark` records the requests the front saw since `from` as one phase; `run` adds pod `name` and
 * makes its ADD and DEL with `bin` and `conf`, marking each.
 */
function scaleRunner({ api, front, phases, nads, netnsPath }) {
  const mark = (mode, what, from) =>
    phases.push({ mode, what, ...summariseFlat(front.log.slice(from)) });
  const pod = (name) =>
    api.addPod({
      metadata: {
        namespace: "b",
        name,
        uid: `uid-${name}`,
        annotations: { "k8s.v1.cni.cncf.io/networks": nads.map((n) => n.name).join(",") },
      },
      spec: { nodeName: "bench-node" },
    });
  const env = (name) => ({
    ...RUNTIME_ENV,
    CNI_CONTAINERID: `c-${name}`,
    CNI_NETNS: netnsPath,
    CNI_PATH,
    CNI_IFNAME: "eth0",
    CNI_ARGS: `IgnoreUnknown=1;K8S_POD_NAMESPACE=b;K8S_POD_NAME=${name};K8S_POD_UID=uid-${name};K8S_POD_INFRA_CONTAINER_ID=c-${name}`,
  });
  const run = async (mode, bin, conf, name) => {
    pod(name);
    let from = front.log.length;
    await cni(bin, { ...env(name), CNI_COMMAND: "ADD" }, conf);
    mark(mode, "ADD", from);
    from = front.log.length;
    await cni(bin, { ...env(name), CNI_COMMAND: "DEL" }, conf);
    mark(mode, "DEL", from);
  };
  return { mark, run };
}

/** Daemon mode: its start, a bound pod's claim read by name, then one pod's ADD and DEL. */
async function measurePlexusDaemon({ api, front, runner: { mark, run }, base, tmp }) {
  const socket = join(tmp, "plexus.sock");
  let from = front.log.length;
  const daemon = await startDaemon({
    kubeconfig: base.kubeconfig,
    socket,
    nodeName: "bench-node",
  });
  await new Promise((r) => setTimeout(r, 300));
  mark("Plexus daemon", "daemon start", from);
  // A pod with one ResourceClaim bound to the node: the daemon reads that claim by name (it
  // watches no claims), once, ahead of the pod's ADD.
  from = front.log.length;
  api.addDra("resourceclaims", benchClaim("claim-dmn"));
  api.addPod({
    metadata: { namespace: "b", name: "claimed", uid: "uid-claimed" },
    spec: {
      nodeName: "bench-node",
      resourceClaims: [{ name: "c", resourceClaimName: "claim-dmn" }],
    },
    status: { phase: "Pending" },
  });
  await new Promise((r) => setTimeout(r, 300));
  mark("Plexus daemon", "a pod with a claim is bound", from);
  await run(
    "Plexus daemon",
    "dist/plexus",
    JSON.stringify({ ...base, cniDir: join(tmp, "cni"), daemonSocket: socket }),
    "dmn",
  );
  await new Promise((r) => setTimeout(r, 300));
  await daemon.stop();
}

/** Multus thin's pod, then Multus thick's start and pod. */
async function measureMultusScale({ front, runner: { mark, run }, base, tmp }) {
  const { kubeconfig, clusterNetwork, confDir } = base;
  const multusConf = JSON.stringify({
    cniVersion: "1.0.0",
    name: "multus-cni-network",
    type: "multus",
    kubeconfig,
    clusterNetwork,
    confDir,
    cniDir: join(tmp, "multus-cache"),
    binDir: CNI_PATH,
  });
  await run("Multus thin", join(MULTUS_DIR, "multus"), multusConf, "mthin");
  const from = front.log.length;
  const thick = await startMultusThick({ front, root: tmp, confDir, clusterNetwork });
  mark("Multus thick", "daemon start", from);
  try {
    await run("Multus thick", join(MULTUS_DIR, "multus-shim"), thick.shimConf, "mthick");
  } finally {
    await thick.stop();
  }
}

function printScale(phases) {
  console.log(
    `== API requests per node, one pod with the default network + ${K} NAD networks (requests: ` +
      `reads + writes [+ events]; bytes: bodies sent / received)`,
  );
  table(
    [
      "mode",
      "what",
      "GET",
      "LIST",
      "WATCH",
      "writes",
      "events",
      "bytes sent",
      "bytes received",
      "requests",
    ],
    phases.map((p) => [
      p.mode,
      p.what,
      p.get,
      p.list,
      p.watch,
      p.write,
      p.event,
      p.inB,
      p.outB,
      p.paths,
    ]),
  );
  console.log("");
}

export async function benchScale() {
  if (!needsRoot("API load per node")) return undefined;
  const { startFakeApiServer } = await importFakeApiServer();
  const tmp = mkdtempSync(join(tmpdir(), "plx-benchscale-"));
  const s = scratch("plx-benchs");
  const netnsPath = s.netns(`plx-benchs-${process.pid}`);
  for (let k = 0; k <= K; k++) s.link(`plxs${k}`);
  const api = await startFakeApiServer({ rbac: false });
  const front = await startProtobufFront(api);
  const phases = [];
  try {
    const { confDir, clusterNetwork, net } = benchNetworks({
      root: tmp,
      bridgePrefix: "plxs",
      octet: 239,
    });
    const nads = Array.from({ length: K }, (_, i) => net(`net${i}`, i + 1));
    for (const n of nads)
      api.addNad({
        metadata: { namespace: "b", name: n.name },
        spec: { config: JSON.stringify(n) },
      });
    const kubeconfig = await nodeKubeconfig(front, { dir: tmp });
    const runner = scaleRunner({ api, front, phases, nads, netnsPath });
    const base = {
      cniVersion: "1.0.0",
      name: "plexus",
      type: "plexus",
      clusterNetwork,
      confDir,
      kubeconfig,
    };
    await runner.run(
      "Plexus thin",
      "dist/plexus",
      JSON.stringify({ ...base, cniDir: join(tmp, "cni"), daemonSocket: "" }),
      "thin",
    );
    await measurePlexusDaemon({ api, front, runner, base, tmp });
    if (!multusMissing()) await measureMultusScale({ front, runner, base, tmp });
  } finally {
    await front.close();
    await api.close();
    s.cleanup();
    rmSync(tmp, { recursive: true, force: true });
  }
  printScale(phases);
  return phases;
}

/** A claim allocated and reserved for the pod "claimed", as the scheduler leaves it at binding. */
function benchClaim(name) {
  return {
    apiVersion: "resource.k8s.io/v1",
    kind: "ResourceClaim",
    metadata: { namespace: "b", name },
    spec: { devices: { requests: [{ name: "vf", exactly: { deviceClassName: "vf" } }] } },
    status: {
      allocation: {
        devices: {
          results: [{ driver: "d.example.com", pool: "bench-node", device: "vf-0", request: "vf" }],
        },
      },
      reservedFor: [{ resource: "pods", name: "claimed", uid: "uid-claimed" }],
    },
  };
}

function summariseFlat(log) {
  const sum = summarise(log);
  const n = (k) => sum[k]?.n ?? 0;
  const all = Object.values(sum);
  return {
    get: n("get"),
    list: n("list"),
    watch: n("watch"),
    write: n("write"),
    event: n("event"),
    inB: all.reduce((a, x) => a + x.inB, 0),
    outB: all.reduce((a, x) => a + x.outB, 0),
    paths: [...new Set(all.flatMap((x) => [...x.paths]))].join(", ").slice(0, 400),
  };
}
