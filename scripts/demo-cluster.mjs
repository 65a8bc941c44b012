#!/usr/bin/env node
/**
 * The README's main job (`sudo npm run demo`): two pods of a cluster through Plexus, with no API
 * server. The cluster is a directory of ordinary Kubernetes manifests (two Pods, two
 * NetworkAttachmentDefinitions) that Plexus reads through `fileClusterDir`, the same code path as
 * an API server. Each pod is a network namespace; Plexus attaches the cluster default network
 * (bridge + host-local, from a config file in confDir, as `clusterNetwork`), then the networks the
 * pod's annotation selects: a bridge NAD and a macvlan NAD (over a host veth). The demo prints each
 * pod's network-status, pings pod to pod over the secondary network, DELs both pods and shows that
 * nothing is left. Everything it creates is removed at the end, also when a step fails.
 */
import { mkdirSync, readFileSync, writeFileSync, existsSync } from "node:fs";
import { join } from "node:path";
import {
  CNI_PATH,
  DELEGATE_VERSION,
  PLEXUS,
  callPlexus,
  compactJson,
  ipReservations,
  leftovers,
  records,
  run,
  runIfMain,
  say,
  showNamespace,
  withDemoHost,
} from "./demo.mjs";

function manifests(host, macvlanMaster) {
  const hostLocal = (subnet) => ({ type: "host-local", dataDir: host.dataDir, subnet });
  const nad = (name, config) => ({
    apiVersion: "k8s.cni.cncf.io/v1",
    kind: "NetworkAttachmentDefinition",
    metadata: { namespace: "demo", name },
    spec: { config: JSON.stringify(config) },
  });
  const pod = (name, networks) => ({
    apiVersion: "v1",
    kind: "Pod",
    metadata: {
      namespace: "demo",
      name,
      uid: `uid-${name}`,
      annotations: { "k8s.v1.cni.cncf.io/networks": networks },
    },
  });
  return [
    nad("blue", {
      cniVersion: DELEGATE_VERSION,
      name: "blue",
      type: "bridge",
      bridge: host.bridgeName(1),
      ipam: hostLocal("10.241.1.0/24"),
    }),
    nad("green", {
      cniVersion: DELEGATE_VERSION,
      name: "green",
      type: "macvlan",
      master: macvlanMaster,
      mode: "bridge",
      ipam: hostLocal("10.241.2.0/24"),
    }),
    // The two annotation formats (N4.1.1 comma, N4.1.2 JSON), the same networks.
    pod("web", "blue,demo/green@data0"),
    pod(
      "db",
      JSON.stringify([{ name: "blue" }, { name: "green", namespace: "demo", interface: "data0" }]),
    ),
    ...draObjects(nad),
  ];
}

/**
 * M10, DRA: a pod whose two SR-IOV networks get their VFs from a ResourceClaim (resource.k8s.io/v1)
 * allocated by a driver on this node. No VF exists here, so the demo only explains this pod: which
 * claim and device each network gets (a device network's ADD needs the device).
 */
function draObjects(nad) {
  const resourceName = "example.com/sriov-vf";
  const vfNad = (name) => {
    const o = nad(name, { cniVersion: DELEGATE_VERSION, name, type: "host-device" });
    o.metadata.annotations = { "k8s.v1.cni.cncf.io/resourceName": resourceName };
    return o;
  };
  return [
    vfNad("fast-a"),
    vfNad("fast-b"),
    ...draClaimAndSlice(resourceName),
    {
      apiVersion: "v1",
      kind: "Pod",
      metadata: {
        namespace: "demo",
        name: "trader",
        uid: "uid-trader",
        annotations: { "k8s.v1.cni.cncf.io/networks": "fast-a,fast-b" },
      },
      spec: {
        nodeName: DEMO_NODE,
        resourceClaims: [{ name: "vfs", resourceClaimName: "trader-vfs" }],
      },
    },
  ];
}

/** The trader's ResourceClaim, allocated two VFs, and the driver's ResourceSlice listing them. */
function draClaimAndSlice(resourceName) {
  const vf = (name, pci) => ({
    name,
    attributes: {
      "k8s.cni.cncf.io/deviceID": { string: pci },
      "k8s.cni.cncf.io/resourceName": { string: resourceName },
    },
  });
  const result = (device) => ({
    driver: "sriov.example.com",
    pool: DEMO_NODE,
    device,
    request: "vfs",
  });
  return [
    {
      apiVersion: "resource.k8s.io/v1",
      kind: "ResourceClaim",
      metadata: { namespace: "demo", name: "trader-vfs" },
      spec: {
        devices: {
          requests: [{ name: "vfs", exactly: { deviceClassName: "sriov-vf", count: 2 } }],
        },
      },
      status: { allocation: { devices: { results: [result("vf-2"), result("vf-1")] } } },
    },
    {
      apiVersion: "resource.k8s.io/v1",
      kind: "ResourceSlice",
      metadata: { name: `${DEMO_NODE}-sriov` },
      spec: {
        driver: "sriov.example.com",
        nodeName: DEMO_NODE,
        pool: { name: DEMO_NODE, generation: 1, resourceSliceCount: 1 },
        devices: [vf("vf-1", "0000:07:00.1"), vf("vf-2", "0000:07:00.2")],
      },
    },
  ];
}

const DEMO_NODE = "demo-node";

function yaml(objects) {
  // JSON is YAML: each object one document, readable as it is.
  return objects.map((o) => `---\n${JSON.stringify(o, null, 2)}\n`).join("");
}

/** The node: the default network's conflist in confDir, the manifests in the cluster dir. */
function writeDemoNode(host) {
  const clusterDir = join(host.root, "cluster");
  const confDir = join(host.root, "net.d");
  mkdirSync(clusterDir, { recursive: true });
  mkdirSync(confDir, { recursive: true });
  const master = host.addVethPair();
  writeFileSync(
    join(confDir, "10-cbr0.conflist"),
    JSON.stringify({
      cniVersion: DELEGATE_VERSION,
      name: "cbr0",
      plugins: [
        {
          type: "bridge",
          bridge: host.bridgeName(0),
          isGateway: true,
          ipam: {
            type: "host-local",
            dataDir: host.dataDir,
            subnet: "10.241.0.0/24",
            routes: [{ dst: "0.0.0.0/0" }],
          },
        },
      ],
    }),
  );
  const objects = manifests(host, master);
  writeFileSync(join(clusterDir, "demo.yaml"), yaml(objects));
  const conf = {
    cniVersion: "1.0.0",
    name: "plexus",
    type: "plexus",
    clusterNetwork: "cbr0",
    confDir,
    fileClusterDir: clusterDir,
    cniDir: host.cniDir,
  };
  return { clusterDir, master, objects, conf };
}

function describeCluster({ clusterDir, master, objects, conf }) {
  say.section("1. The cluster: manifests in a directory, the default network in confDir");
  say.line(
    `${clusterDir}/demo.yaml: Pods demo/web, demo/db, demo/trader; NetworkAttachmentDefinitions ` +
      `demo/blue (bridge), demo/green (macvlan on ${master}), demo/fast-a and demo/fast-b ` +
      `(SR-IOV VFs through DRA); a ResourceClaim and a ResourceSlice`,
  );
  for (const o of objects.filter((x) => x.kind === "Pod"))
    say.line(
      `  pod ${o.metadata.name}: k8s.v1.cni.cncf.io/networks = ` +
        `${o.metadata.annotations["k8s.v1.cni.cncf.io/networks"]}`,
    );
  say.line(`Plexus's config (stdin): ${JSON.stringify(conf)}`);
}

/** The CNI_* environment of a demo pod's calls. */
function demoPodEnv(pod) {
  return {
    CNI_CONTAINERID: pod.containerId,
    CNI_NETNS: pod.netns.path,
    CNI_IFNAME: "eth0",
    CNI_ARGS: `IgnoreUnknown=1;K8S_POD_NAMESPACE=demo;K8S_POD_NAME=${pod.name};K8S_POD_UID=uid-${pod.name}`,
  };
}

/** ADDs each pod and shows its network-status and namespace; returns each pod's demo/blue IP. */
function addDemoPods({ pods, conf, clusterDir }) {
  const blueIp = {};
  for (const [i, p] of pods.entries()) {
    say.section(`${2 + i}. ADD pod demo/${p.name}`);
    const t0 = performance.now();
    const r = callPlexus("ADD", conf, demoPodEnv(p));
    if (r.code !== 0)
      throw new Error(`ADD of ${p.name} failed: ${r.stdout.trim()} ${r.stderr.trim()}`);
    say.line(
      `exit 0 in ${Math.round(performance.now() - t0)} ms; the runtime gets the default ` +
        `network's result: ${JSON.stringify(r.json.ips)}`,
    );
    const statusDoc = JSON.parse(
      readFileSync(join(clusterDir, "status", `demo.${p.name}.json`), "utf8"),
    );
    const status = JSON.parse(statusDoc.metadata.annotations["k8s.v1.cni.cncf.io/network-status"]);
    say.line("k8s.v1.cni.cncf.io/network-status:");
    say.block(compactJson(status));
    showNamespace(p.netns);
    blueIp[p.name] = status.find((s) => s.name === "demo/blue")?.ips?.[0];
  }
  return blueIp;
}

function pingOverBlue(pods, blueIp) {
  say.section("4. Pod to pod over the secondary network demo/blue (net1)");
  const ping = run(
    "ip",
    ["netns", "exec", pods[0].netns.name, "ping", "-c", "2", "-W", "1", blueIp.db],
    {
      allowFail: true,
    },
  );
  say.block(ping.stdout.trim().split("\n").slice(-2).join("\n"));
  if (ping.code !== 0) throw new Error(`web could not reach db at ${blueIp.db} over demo/blue`);
  say.ok(`demo/web reached demo/db at ${blueIp.db}`);
}

function explainTrader(host, conf) {
  say.section("6. A pod with device networks through DRA (resource.k8s.io/v1), explained");
  say.line(
    "demo/trader's networks fast-a, fast-b (host-device, resourceName example.com/sriov-vf) take " +
      "the VFs its ResourceClaim demo/trader-vfs was allocated; no VF exists here, so Plexus " +
      "explains what ADD would do:",
  );
  const confFile = join(host.root, "plexus.conf");
  writeFileSync(confFile, JSON.stringify(conf));
  const explained = run(
    PLEXUS,
    ["explain", "demo/trader", "--config", confFile, "--cni-path", CNI_PATH],
    {
      allowFail: true,
    },
  );
  const devices = explained.stdout.split("\n").filter((l) => /^\s*device: /.test(l));
  say.block(devices.join("\n"));
  if (explained.code !== 0 || !/0000:07:00\.1/.test(explained.stdout))
    throw new Error(
      `explain demo/trader: exit ${explained.code}: ${explained.stdout} ${explained.stderr}`,
    );
}

/** Says what is left of the pods and how many events were written; true when nothing is. */
function reportLeftovers({ host, pods, clusterDir }) {
  say.section("7. What is left");
  const left = pods.flatMap((p) => leftovers(host, p.netns));
  if (left.length === 0)
    say.ok(
      `nothing: no interface in either pod, no host veth, no IP reservation ` +
        `(${ipReservations(host).length}), no record (${records(host).length})`,
    );
  else for (const l of left) say.bad(l);
  const events = existsSync(join(clusterDir, "status", "events.jsonl"))
    ? readFileSync(join(clusterDir, "status", "events.jsonl"), "utf8")
        .trim()
        .split("\n").length
    : 0;
  say.line(`(pod events written: ${events}, in ${join(clusterDir, "status", "events.jsonl")})`);
  return left.length === 0;
}

export function demoCluster() {
  return withDemoHost(
    "Plexus demo: two pods, NetworkAttachmentDefinitions, network-status (no API server)",
    async (host) => {
      const node = writeDemoNode(host);
      const { clusterDir, conf } = node;
      describeCluster(node);
      const pods = ["web", "db"].map((name) => ({
        name,
        netns: host.addNamespace(name),
        containerId: `demo-${name}-${host.tag}`,
      }));
      const blueIp = addDemoPods({ pods, conf, clusterDir });
      pingOverBlue(pods, blueIp);
      say.section("5. DEL both pods (from Plexus's records: no manifest or API needed)");
      for (const p of pods) {
        const r = callPlexus("DEL", conf, demoPodEnv(p));
        say.line(`DEL demo/${p.name}: exit ${r.code}${r.code === 0 ? "" : ` ${r.stdout.trim()}`}`);
      }
      explainTrader(host, conf);
      return reportLeftovers({ host, pods, clusterDir });
    },
  );
}

runIfMain(import.meta.url, demoCluster);
