/**
 * A node switched from real Multus v4.0.2 thin to Plexus by the installer alone, and back (M11):
 * pods attached by Multus; `plexus install` run with the args of Multus's own thin DaemonSet while
 * ADDs keep coming, each run as a runtime runs it (the first config file of the conf dir, libcni's
 * order) and none failing; DEL of a Multus pod by Plexus; then the way back
 * (--no-take-over-multus) and DEL of Plexus's pods by Multus, which does nothing for one whose
 * pod object is gone (Plexus's record still tears it down). Multus talks to the fake API server
 * through the bench's protobuf front (its status and event writes are protobuf). Multus's cache is
 * its default, /var/lib/cni/multus (what Plexus reads by default); only this test's container
 * files there are touched. Subnets 10.216.x.0/24.
 */
import { spawn, spawnSync } from "node:child_process";
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync } from "node:fs";
import { rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeAll, expect, it } from "vitest";
import { startFakeApiServer, writeKubeconfig, type FakeApiServer } from "../support/fake-apiserver";
import { multusThin } from "../support/multus-peer";
import { CNI_BIN_DIR, describeE2e, isCi, links, useE2eScope } from "../support/netns";
import type { E2eScope, Netns } from "../support/netns";
import { PLEXUS_BIN, TEST_PATH } from "../support/plexus-bin";
import { defaultNet, secondaryBridgeNet } from "./networks";

const t = useE2eScope();
const MULTUS_CACHE = "/var/lib/cni/multus";
const NETWORKS = "k8s.v1.cni.cncf.io/networks";

let multus: { path: string } | { missing: string };
beforeAll(() => {
  multus = multusThin();
}, 40 * 60_000);

let api: FakeApiServer | undefined;
let front: { url: string; close(): Promise<void> } | undefined;
const containers: string[] = [];
afterEach(async () => {
  for (const c of containers.splice(0)) {
    rmSync(join(MULTUS_CACHE, c), { force: true });
    const results = join(MULTUS_CACHE, "results");
    for (const f of existsSync(results) ? readdirSync(results) : [])
      if (f.includes(c)) rmSync(join(results, f), { force: true });
  }
  await front?.close();
  await api?.close();
  front = api = undefined;
});

interface Node {
  scope: E2eScope;
  confDir: string;
  binDir: string;
  saDir: string;
}

type Picked = { file: string; stdin: string; type: string };

/** The plugin of the first config file in the conf dir, as libcni's ConfFiles orders them. */
function firstConfig(confDir: string, only?: string): Picked {
  const file =
    only ??
    readdirSync(confDir)
      .filter((n) => /\.(conf|conflist|json)$/.test(n))
      .sort()[0]!;
  const conf = JSON.parse(readFileSync(join(confDir, file), "utf8"));
  // A conflist of one plugin, as Plexus's is: the runtime injects name and cniVersion.
  const { name, cniVersion } = conf;
  const plugin = conf.plugins ? { ...conf.plugins[0], name, cniVersion } : conf;
  return { file, stdin: JSON.stringify(plugin), type: plugin.type };
}

/** One call as containerd makes it with the conf dir's first config; resolves with the outcome. */
/** A CNI call on a pod's netns; `file` runs that config instead of the first. */
type CallOptions = { command: "ADD" | "DEL"; pod: string; netns: string; file?: string };

function runtimeCall(node: Node, call: CallOptions) {
  const { file, stdin, type } = firstConfig(node.confDir, call.file);
  const [mk, mv] = node.scope.marker.split("=") as [string, string];
  const cid = `ctr-${call.pod}`;
  const pod = `K8S_POD_NAMESPACE=default;K8S_POD_NAME=${call.pod};K8S_POD_UID=uid-${call.pod}`;
  const args = `IgnoreUnknown=1;${pod}`;
  type Outcome = { file: string; type: string; status: number | null; out: string };
  return new Promise<Outcome>((resolve) => {
    const child = spawn(join(node.binDir, type), [], {
      cwd: "/",
      env: {
        PATH: TEST_PATH,
        [mk]: mv,
        CNI_COMMAND: call.command,
        CNI_CONTAINERID: cid,
        CNI_NETNS: call.netns,
        CNI_IFNAME: "eth0",
        CNI_PATH: `${node.binDir}:${CNI_BIN_DIR}`,
        CNI_ARGS: `${args};K8S_POD_INFRA_CONTAINER_ID=${cid}`,
      },
    });
    let out = "";
    child.stdout.on("data", (d) => (out += d));
    child.stderr.on("data", (d) => (out += d));
    child.on("close", (status) => resolve({ file, type, status, out }));
    child.stdin.end(stdin);
  });
}

/** `plexus install --once` with the args of Multus v4.0.2's thin DaemonSet, on this node's dirs. */
function install(node: Node, extra: string[] = []) {
  const args = [
    "install",
    "--multus-conf-file=auto",
    `--multus-autoconfig-dir=${node.confDir}`,
    `--cni-conf-dir=${node.confDir}`,
    `--cni-bin-dir=${node.binDir}`,
    "--host-prefix=",
    `--bin-file=${PLEXUS_BIN}`,
    `--kubeconfig-file-host=${join(node.confDir, "plexus.d", "plexus.kubeconfig")}`,
    `--token-file=${join(node.saDir, "token")}`,
    `--ca-file=${join(node.saDir, "ca.crt")}`,
    `--api-server=${api!.url}`,
    `--cni-dir=${node.scope.cniDir}`,
    "--once",
    "--primary-config-timeout=20",
    ...extra,
  ];
  return new Promise<{ status: number | null; stderr: string }>((resolve) => {
    const child = spawn(PLEXUS_BIN, args, { cwd: "/", env: { PATH: TEST_PATH } });
    let stderr = "";
    child.stderr.on("data", (d) => (stderr += d));
    child.on("close", (status) => resolve({ status, stderr }));
  });
}

async function setup(scope: E2eScope): Promise<Node> {
  api = await startFakeApiServer();
  // @ts-expect-error: a plain ES module of the bench, without types.
  const { startProtobufFront } = await import("../../scripts/bench/multus-front.mjs");
  front = await startProtobufFront(api);
  const node = {
    scope,
    confDir: join(scope.root, "net.d"),
    binDir: join(scope.root, "bin"),
    saDir: join(scope.root, "sa"),
  };
  for (const d of [node.confDir, node.binDir, node.saDir]) mkdirSync(d, { recursive: true });
  writeFileSync(join(node.saDir, "token"), api.token);
  writeFileSync(join(node.saDir, "ca.crt"), api.caPem);
  copyFileSync((multus as { path: string }).path, join(node.binDir, "multus"));
  spawnSync("chmod", ["0755", join(node.binDir, "multus")]);
  const cbr0 = defaultNet(scope, "10.216.1.0/24", "cbr0");
  const primary = { cniVersion: "1.0.0", name: "cbr0", plugins: [cbr0] };
  writeFileSync(join(node.confDir, "10-cbr0.conflist"), JSON.stringify(primary));
  const net = secondaryBridgeNet(scope, "10.216.2.0/24", "net-a");
  const spec = { config: JSON.stringify(net) };
  api.addNad({ metadata: { namespace: "default", name: "net-a" }, spec });
  // What Multus thin's entrypoint writes with --multus-conf-file=auto (its multusConfTemplate).
  const fileName = "multus.kubeconfig";
  const kubeconfig = writeKubeconfig(front as never, { dir: scope.root, fileName });
  const name = "multus-cni-network";
  const multusConf = { cniVersion: "1.0.0", name, type: "multus", kubeconfig };
  const delegates = [primary];
  writeFileSync(join(node.confDir, "00-multus.conf"), JSON.stringify({ ...multusConf, delegates }));
  return node;
}

function addPod(scope: E2eScope, name: string) {
  const annotations = { [NETWORKS]: "net-a" };
  api!.addPod({ metadata: { namespace: "default", name, uid: `uid-${name}`, annotations } });
  containers.push(`ctr-${name}`);
  return scope.addNetns();
}

const ifnames = (netns: string) =>
  links(netns)
    .map((l) => l.name)
    .sort();

type Call = { pod: string; netns: string; type: string; status: number | null; out: string };

const netnsOf = (call: Call) => `/var/run/netns/${call.netns}`;

/** Pod m0, attached by Multus (its config is the first in the conf dir). */
async function attachByMultus(scope: E2eScope, node: Node): Promise<Netns> {
  const before = addPod(scope, "m0");
  const a = await runtimeCall(node, { command: "ADD", pod: "m0", netns: before.path });
  expect(a.type).toBe("multus");
  expect(a.status, a.out).toBe(0);
  expect(ifnames(before.name)).toEqual(["eth0", "lo", "net1"]);
  expect(existsSync(join(MULTUS_CACHE, "ctr-m0"))).toBe(true);
  return before;
}

/** The switch, with ADDs running throughout, none failing; returns those ADDs. */
async function switchWhileAdding(scope: E2eScope, node: Node): Promise<Call[]> {
  const switching = install(node);
  let done = false;
  void switching.then(() => (done = true));
  const during: Call[] = [];
  // Until the installer is done, then two more (through Plexus's config if it took over).
  for (let i = 0, after = 0; !done || after++ < 2; i++) {
    const pod = `s${i}`;
    const ns = addPod(scope, pod);
    const r = await runtimeCall(node, { command: "ADD", pod, netns: ns.path });
    during.push({ pod, netns: ns.name, ...r });
    expect(r.status, `${pod} through ${r.file}: ${r.out}`).toBe(0);
    expect(ifnames(ns.name), pod).toEqual(["eth0", "lo", "net1"]);
  }
  const inst = await switching;
  expect(inst.status, inst.stderr).toBe(0);
  expect(inst.stderr).toMatch(/took over from Multus/);
  expect(readdirSync(node.confDir).sort()).toEqual([
    "00-multus.conf.plexus-moved",
    "00-plexus.conflist",
    "10-cbr0.conflist",
    "plexus.d",
  ]);
  expect(new Set(during.map((d) => d.type))).toContain("plexus");
  return during;
}

/** Plexus tears down a pod Multus attached, from Multus's cache. */
async function plexusDelsMultusPod(node: Node, before: Netns): Promise<void> {
  const del = await runtimeCall(node, { command: "DEL", pod: "m0", netns: before.path });
  expect(del.type).toBe("plexus");
  expect(del.status, del.out).toBe(0);
  expect(ifnames(before.name)).toEqual(["lo"]);
  expect(existsSync(join(MULTUS_CACHE, "ctr-m0"))).toBe(false);
}

/** The way back: Multus's config first again; Multus tears down a pod Plexus attached. */
async function switchBack(node: Node, during: Call[]): Promise<Call> {
  const back = await install(node, ["--no-take-over-multus"]);
  expect(back.status, back.stderr).toBe(0);
  expect(firstConfig(node.confDir).type).toBe("multus");
  const byPlexus = during.filter((d) => d.type === "plexus").at(-1)!;
  const last = { command: "DEL", pod: byPlexus.pod, netns: netnsOf(byPlexus) } as const;
  const mdel = await runtimeCall(node, last);
  expect(mdel.type).toBe("multus");
  expect(mdel.status, mdel.out).toBe(0);
  expect(ifnames(byPlexus.netns)).toEqual(["lo"]);
  return byPlexus;
}

/**
 * A pod Plexus attached whose object is gone before Multus's DEL: Multus has no cache file and no
 * pod, so it runs no delegate and says success. Its interfaces and addresses stay; Plexus's record
 * of it still tears it down, run by hand with Plexus's config.
 */
async function lostPodByHand({ scope, node, gone }: { scope: E2eScope; node: Node; gone: Call }) {
  const reservedBefore = scope.ipReservations().length;
  api!.deletePod("default", gone.pod);
  const lostCall = { command: "DEL", pod: gone.pod, netns: netnsOf(gone) } as const;
  const lost = await runtimeCall(node, lostCall);
  expect(lost.status, lost.out).toBe(0);
  expect(ifnames(gone.netns)).toEqual(["eth0", "lo", "net1"]);
  expect(scope.ipReservations()).toHaveLength(reservedBefore);
  const file = "00-plexus.conflist";
  const byHand = await runtimeCall(node, { ...lostCall, file });
  expect(byHand.status, byHand.out).toBe(0);
  expect(ifnames(gone.netns)).toEqual(["lo"]);
}

describeE2e("e2e from real Multus v4.0.2 thin to Plexus and back, by the installer", () => {
  it("M11 M14 Multus's args: no ADD fails, Plexus DELs Multus's pods, and back", async (ctx) => {
    if ("missing" in multus) {
      if (isCi()) throw new Error(multus.missing);
      ctx.skip();
      return;
    }
    const { scope } = t;
    const node = await setup(scope);
    const before = await attachByMultus(scope, node);
    const during = await switchWhileAdding(scope, node);
    await plexusDelsMultusPod(node, before);
    const byPlexus = await switchBack(node, during);
    const gone = during.filter((d) => d.type === "plexus")[0]!;
    expect(gone).not.toBe(byPlexus);
    await lostPodByHand({ scope, node, gone });
    // Every other pod, whoever attached it, is torn down by Multus now.
    for (const d of during.filter((x) => x !== byPlexus && x !== gone)) {
      const r = await runtimeCall(node, { command: "DEL", pod: d.pod, netns: netnsOf(d) });
      expect(r.status, `${d.pod}: ${r.out}`).toBe(0);
      expect(ifnames(d.netns), d.pod).toEqual(["lo"]);
    }
    expect(scope.ipReservations()).toEqual([]);
    // What Multus's DEL cannot do: remove Plexus's records of the pods Plexus attached (their
    // interfaces and addresses are gone). They stay until the state dir is removed.
    const byPlexusAll = during.filter((d) => d.type === "plexus" && d !== gone);
    const plexusPods = byPlexusAll.map((d) => `ctr-${d.pod}-eth0.json`);
    expect(scope.recordFiles().sort()).toEqual(plexusPods.sort());
    rmSync(scope.cniDir, { recursive: true, force: true });
  });
});
