/**
 * A node switched from real Multus v4.0.2 thin to Plexus by the installer alone, and back (M11).
 * First: pods attached by Multus; `plexus install` run with the args of Multus's own thin
 * DaemonSet while ADDs keep coming, each run as a runtime runs it (the first config file of the
 * conf dir, libcni's order) and none failing; DEL of a Multus pod by Plexus; then the way back
 * (--no-take-over-multus) and DEL of Plexus's pods by Multus, which does nothing for one whose
 * pod object is gone (Plexus's record still tears it down: `plexus records rm --teardown`).
 * Multus talks to the fake API server through the bench's protobuf front (its status and event
 * writes are protobuf). Multus's cache is its default, /var/lib/cni/multus (what Plexus reads by
 * default); only this test's container files there are touched. Subnets 10.216.x.0/24.
 *
 * Then M18, with Multus's own thin entrypoint (`cmd/thin_entrypoint`, built from the same source)
 * rendering Multus's config as its DaemonSet does: once before the switch, then again and again
 * during it (each start of its container, as a pod restart or a reboot does), while `plexus
 * install` runs as in its DaemonSet and ADDs keep coming through the runtime's view; none fails,
 * Multus's config never comes back, its kept copy is never written over, and the way back restores
 * exactly what Multus rendered, which wraps the primary network, not Plexus. Subnets 10.217 and
 * 10.218.x.0/24.
 */
import { spawn, spawnSync } from "node:child_process";
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync } from "node:fs";
import { rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeAll, expect, it } from "vitest";
import { startFakeApiServer, writeKubeconfig, type FakeApiServer } from "../support/fake-apiserver";
import { multusThinWithEntrypoint, peerUnavailable } from "../support/multus-peer";
import { CNI_BIN_DIR, describeE2e, links, useE2eScope } from "../support/netns";
import type { E2eScope, Netns } from "../support/netns";
import { PLEXUS_BIN, TEST_PATH, waitFor } from "../support/plexus-bin";
import { wrapsPlexus } from "../../src/install/multus-config";
import { defaultNet, secondaryBridgeNet } from "./networks";

const t = useE2eScope();
const MULTUS_CACHE = "/var/lib/cni/multus";
const NETWORKS = "k8s.v1.cni.cncf.io/networks";

let peer: ReturnType<typeof multusThinWithEntrypoint>;
beforeAll(() => {
  peer = multusThinWithEntrypoint();
}, 40 * 60_000);

/** Multus's binaries, or undefined with the reason printed (a failure under CI=true). */
function multusPeer(test: string): { multus: string; entrypoint: string } | undefined {
  if (peerUnavailable(peer, test)) return undefined;
  return peer as { multus: string; entrypoint: string };
}

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
  multusKubeconfig: string;
}

type Picked = { file: string; stdin: string; type: string };

/** The plugin of the first config file in the conf dir, as libcni's ConfFiles orders them. */
function firstConfig(confDir: string, only?: string): Picked {
  // A file renamed away (or a guard renamed in) between the listing and the read: the runtime
  // loads the directory again at that change, and so does this, a few times at most.
  for (let attempt = 0; ; attempt++) {
    const file =
      only ??
      // libcni's ConfFiles: config names that are not directories (a guard is one), in order.
      readdirSync(confDir, { withFileTypes: true })
        .filter((d) => !d.isDirectory() && /\.(conf|conflist|json)$/.test(d.name))
        .map((d) => d.name)
        .sort()[0]!;
    let text: string;
    try {
      text = readFileSync(join(confDir, file), "utf8");
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (attempt < 5 && (code === "ENOENT" || code === "EISDIR")) continue;
      throw err;
    }
    const conf = JSON.parse(text);
    // A conflist of one plugin, as Plexus's is: the runtime injects name and cniVersion.
    const { name, cniVersion } = conf;
    const plugin = conf.plugins ? { ...conf.plugins[0], name, cniVersion } : conf;
    return { file, stdin: JSON.stringify(plugin), type: plugin.type };
  }
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

/** `plexus install` with the args of Multus v4.0.2's thin DaemonSet, on this node's dirs. */
function installArgs(node: Node, extra: string[]): string[] {
  return [
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
    "--primary-config-timeout=20",
    ...extra,
  ];
}

/** `plexus install --once`, as above. */
function install(node: Node, extra: string[] = []) {
  const args = installArgs(node, ["--once", ...extra]);
  return new Promise<{ status: number | null; stderr: string }>((resolve) => {
    const child = spawn(PLEXUS_BIN, args, { cwd: "/", env: { PATH: TEST_PATH } });
    let stderr = "";
    child.stderr.on("data", (d) => (stderr += d));
    child.on("close", (status) => resolve({ status, stderr }));
  });
}

/** The node's dirs, the fake API with Multus's protobuf front, the primary network and a NAD. */
async function setupNode(
  scope: E2eScope,
  o: { multusBinary: string; net: string; primaryVersion: string },
): Promise<Node> {
  api = await startFakeApiServer();
  // @ts-expect-error: a plain ES module of the bench, without types.
  const { startProtobufFront } = await import("../../scripts/bench/multus-front.mjs");
  front = await startProtobufFront(api);
  const fileName = "multus.kubeconfig";
  const node = {
    scope,
    confDir: join(scope.root, "net.d"),
    binDir: join(scope.root, "bin"),
    saDir: join(scope.root, "sa"),
    // The kubeconfig Multus's config names (its entrypoint's --multus-kubeconfig-file-host).
    multusKubeconfig: writeKubeconfig(front as never, { dir: scope.root, fileName }),
  };
  for (const d of [node.confDir, node.binDir, node.saDir]) mkdirSync(d, { recursive: true });
  writeFileSync(join(node.saDir, "token"), api.token);
  writeFileSync(join(node.saDir, "ca.crt"), api.caPem);
  copyFileSync(o.multusBinary, join(node.binDir, "multus"));
  spawnSync("chmod", ["0755", join(node.binDir, "multus")]);
  const cbr0 = defaultNet(scope, `${o.net}.1.0/24`, "cbr0");
  const primary = { cniVersion: o.primaryVersion, name: "cbr0", plugins: [cbr0] };
  writeFileSync(join(node.confDir, "10-cbr0.conflist"), JSON.stringify(primary));
  const net = secondaryBridgeNet(scope, `${o.net}.2.0/24`, "net-a");
  const spec = { config: JSON.stringify(net) };
  api.addNad({ metadata: { namespace: "default", name: "net-a" }, spec });
  return node;
}

async function setup(scope: E2eScope, multusBinary: string): Promise<Node> {
  const node = await setupNode(scope, { multusBinary, net: "10.216", primaryVersion: "1.0.0" });
  // What Multus thin's entrypoint writes with --multus-conf-file=auto (its multusConfTemplate).
  const name = "multus-cni-network";
  const kubeconfig = node.multusKubeconfig;
  const multusConf = { cniVersion: "1.0.0", name, type: "multus", kubeconfig };
  const delegates = [JSON.parse(readFileSync(join(node.confDir, "10-cbr0.conflist"), "utf8"))];
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
  // M18: guards (directories) hold the names Multus's entrypoint writes.
  expect(readdirSync(node.confDir).sort()).toEqual([
    "00-multus.conf",
    "00-multus.conf.new",
    "00-multus.conf.plexus-moved",
    "00-multus.conflist",
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
  // As docs/migrating-from-multus.md says: the runtime runs Multus's config now, so Plexus's is
  // named with --config.
  const config = join(node.confDir, "00-plexus.conflist");
  const args = ["records", "rm", `ctr-${gone.pod}`, "--teardown", `--config=${config}`];
  const byHand = spawnSync(PLEXUS_BIN, [...args, `--cni-path=${CNI_BIN_DIR}`], {
    encoding: "utf8",
    env: { PATH: TEST_PATH },
  });
  expect(byHand.status, byHand.stderr).toBe(0);
  expect(ifnames(gone.netns)).toEqual(["lo"]);
  expect(scope.recordFiles()).not.toContain(`ctr-${gone.pod}-eth0.json`);
}

describeE2e("e2e from real Multus v4.0.2 thin to Plexus and back, by the installer", () => {
  it("M11 M14 Multus's args: no ADD fails, Plexus DELs Multus's pods, and back", async (ctx) => {
    const bins = multusPeer("the switch from real Multus v4.0.2 and back");
    if (!bins) return ctx.skip();
    const { scope } = t;
    const node = await setup(scope, bins.multus);
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

// --- M18: Multus's own entrypoint rendering its config during the switch --------------------

type Bins = { multus: string; entrypoint: string };

/** One start of Multus's thin entrypoint: its output, and whether it wrote its config. */
interface EntrypointRun {
  rendered: boolean;
  out: string;
}

/**
 * The service-account files the entrypoint reads from a fixed path (its container's mount): a
 * mount namespace of its own gets a tmpfs over /run with them, then runs the entrypoint.
 */
const WITH_SERVICE_ACCOUNT =
  'mount -t tmpfs plexus-e2e /run && d=/run/secrets/kubernetes.io/serviceaccount && mkdir -p "$d"' +
  ' && printf %s "$SA_TOKEN" >"$d/token" && printf %s "$SA_CA" >"$d/ca.crt" && exec "$@"';
const RENDERED = "multus config file is created.";

/**
 * A start of Multus's DaemonSet's container on this node: `thin_entrypoint` with the args of
 * Multus v4.0.2's thin DaemonSet (deployments/multus-daemonset.yml) on this node's dirs. It renders
 * Multus's config and sleeps (killed here once it said so), or fails and exits.
 */
function startEntrypoint(node: Node, bins: Bins): Promise<EntrypointRun> {
  const args = [
    "--multus-conf-file=auto",
    `--multus-autoconfig-dir=${node.confDir}`,
    `--cni-conf-dir=${node.confDir}`,
    `--cni-bin-dir=${node.binDir}`,
    `--multus-bin-file=${bins.multus}`,
    `--multus-kubeconfig-file-host=${node.multusKubeconfig}`,
  ];
  const unshare = ["--mount", "--propagation", "private", "sh", "-c", WITH_SERVICE_ACCOUNT, "sh"];
  const env = {
    PATH: TEST_PATH,
    SA_TOKEN: api!.token,
    SA_CA: api!.caPem,
    KUBERNETES_SERVICE_HOST: "127.0.0.1",
    KUBERNETES_SERVICE_PORT: "443",
  };
  const child = spawn("unshare", [...unshare, bins.entrypoint, ...args], { env });
  const timer = setTimeout(() => child.kill("SIGKILL"), 60_000);
  return new Promise((resolve) => {
    let out = "";
    const take = (d: Buffer) => {
      out += d;
      if (out.includes(RENDERED)) child.kill("SIGKILL");
    };
    child.stdout.on("data", take);
    child.stderr.on("data", take);
    child.on("close", () => {
      clearTimeout(timer);
      resolve({ rendered: out.includes(RENDERED), out: out.trim() });
    });
  });
}

/** The Multus config files of the conf dir (not the guards): what the runtime could run. */
function multusFiles(confDir: string): string[] {
  return readdirSync(confDir, { withFileTypes: true })
    .filter((d) => !d.isDirectory() && /^00-multus\.(conf|conflist)$/.test(d.name))
    .map((d) => d.name);
}

interface SwitchRun {
  node: Node;
  bins: Bins;
  calls: Call[];
  next: number;
}

/** An ADD of a new pod through the runtime's first config; it must not fail. */
async function addOne(run: SwitchRun): Promise<Call> {
  const pod = `r${run.next++}`;
  const ns = addPod(run.node.scope, pod);
  const r = await runtimeCall(run.node, { command: "ADD", pod, netns: ns.path });
  const call = { pod, netns: ns.name, ...r };
  run.calls.push(call);
  expect(r.status, `${pod} through ${r.file}: ${r.out}`).toBe(0);
  expect(ifnames(ns.name), pod).toEqual(["eth0", "lo", "net1"]);
  return call;
}

/** Multus's config as its DaemonSet's pod renders it before the switch: it wraps the primary. */
async function renderBeforeSwitch(run: SwitchRun): Promise<{ name: string; text: string }> {
  const first = await startEntrypoint(run.node, run.bins);
  expect(first.rendered, first.out).toBe(true);
  const [name, ...more] = multusFiles(run.node.confDir);
  expect(more).toEqual([]);
  const text = readFileSync(join(run.node.confDir, name!), "utf8");
  expect(wrapsPlexus(JSON.parse(text))).toBe(false);
  expect(firstConfig(run.node.confDir).type).toBe("multus");
  return { name: name!, text };
}

/** Starts of Multus's container during the switch, a (shortened) restart back-off apart. */
const RESTARTS = 12;
const RESTART_PAUSE_MS = 150;

/**
 * The switch as the two DaemonSets make it: `plexus install` running (not --once), ADDs coming
 * all along, and once it has taken over, Multus's container starting again and again (each start
 * renders, as a pod restart or a reboot does). Returns those starts and the installer's log.
 */
async function switchWithRestarts(run: SwitchRun) {
  const args = installArgs(run.node, ["--poll-interval=200"]);
  const installer = spawn(PLEXUS_BIN, args, { cwd: "/", env: { PATH: TEST_PATH } });
  let log = "";
  installer.stderr.on("data", (d) => (log += d));
  const exited = new Promise<number | null>((r) => installer.on("close", r));
  const restarts: EntrypointRun[] = [];
  let done = false;
  try {
    const restarting = (async () => {
      await waitFor(() => /took over from Multus/.test(log), 30_000, "the take-over");
      for (let i = 0; i < RESTARTS; i++) {
        restarts.push(await startEntrypoint(run.node, run.bins));
        await new Promise((r) => setTimeout(r, RESTART_PAUSE_MS));
      }
      done = true;
    })();
    const adding = (async () => {
      for (let after = 0; !done || after++ < 3; ) await addOne(run);
    })();
    await Promise.all([restarting, adding]);
  } finally {
    done = true;
    installer.kill("SIGTERM");
  }
  expect(await exited, log).toBe(0);
  return { restarts, log };
}

/** The way back in the middle of the migration: exactly what Multus rendered is first again. */
async function wayBack(run: SwitchRun, rendered: { name: string; text: string }) {
  const back = await install(run.node, ["--no-take-over-multus"]);
  expect(back.status, back.stderr).toBe(0);
  expect(multusFiles(run.node.confDir)).toEqual([rendered.name]);
  expect(readFileSync(join(run.node.confDir, rendered.name), "utf8")).toBe(rendered.text);
  // Every guard is gone; plexus.d and Multus's multus.d stay.
  const dirs = readdirSync(run.node.confDir, { withFileTypes: true }).filter((d) =>
    d.isDirectory(),
  );
  expect(dirs.map((d) => d.name).sort()).toEqual(["multus.d", "plexus.d"]);
  const through = await addOne(run);
  expect(through.type).toBe("multus");
}

/** Every pod torn down by the runtime's config (Multus's again); Plexus's records then removed. */
async function tearDownAll(run: SwitchRun, pods: Call[]) {
  for (const d of pods) {
    const r = await runtimeCall(run.node, { command: "DEL", pod: d.pod, netns: netnsOf(d) });
    expect(r.status, `${d.pod}: ${r.out}`).toBe(0);
    expect(ifnames(d.netns), d.pod).toEqual(["lo"]);
  }
  expect(run.node.scope.ipReservations()).toEqual([]);
  rmSync(run.node.scope.cniDir, { recursive: true, force: true });
}

describeE2e("e2e M18 Multus v4.0.2's own entrypoint renders its config during the switch", () => {
  // 0.4.0: Multus writes 00-multus.conf; 1.0.0: 00-multus.conflist (its conflist template).
  it.for([
    ["0.4.0", "10.217"],
    ["1.0.0", "10.218"],
  ] as const)(
    "M18 M14 primary CNI %s: no ADD fails, Multus's config never comes back, the way back is it",
    async ([primaryVersion, net], ctx) => {
      const bins = multusPeer("the M18 switch with Multus v4.0.2's thin entrypoint");
      if (!bins) return ctx.skip();
      const node = await setupNode(t.scope, { multusBinary: bins.multus, net, primaryVersion });
      const run: SwitchRun = { node, bins, calls: [], next: 0 };
      const rendered = await renderBeforeSwitch(run);
      const m0 = await addOne(run);
      expect(m0.type).toBe("multus");
      const { restarts, log } = await switchWithRestarts(run);
      const during = run.calls.slice(1);
      // Each start of Multus's container after the take-over found its names guarded.
      for (const r of restarts) {
        expect(r.rendered, r.out).toBe(false);
        expect(r.out).toMatch(/failed to create multus config: .*00-multus\.conf\.new: is a dir/);
      }
      expect(multusFiles(node.confDir)).toEqual([]);
      expect(log).toMatch(/Multus's entrypoint started again on this node/);
      expect(readFileSync(join(node.confDir, `${rendered.name}.plexus-moved`), "utf8")).toBe(
        rendered.text,
      );
      const through = (type: string) => during.filter((c) => c.type === type).length;
      console.info(
        `M18 e2e (primary CNI ${primaryVersion}): ${during.length} ADDs during the switch ` +
          `(${through("multus")} through Multus, ${through("plexus")} through Plexus), ` +
          `${restarts.length} starts of Multus's entrypoint, failures: 0`,
      );
      expect(through("plexus")).toBeGreaterThan(0);
      await wayBack(run, rendered);
      await tearDownAll(run, run.calls);
    },
  );
});
