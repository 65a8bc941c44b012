/**
 * Hot-plug end to end: `dist/plexus daemon --hot-plug` in front of the fake API server (its pod
 * watch), `dist/plexus` as the CNI binary, real bridge/host-local/tuning in real namespaces. A
 * running pod's networks annotation is patched (as a user's kubectl would) and its interfaces,
 * record, network-status and Events follow; a failed hot-plug rolls back; the sandbox's DEL
 * removes hot-plugged networks too; a hot-plug racing the runtime's DEL leaves nothing. A device
 * network gets its device from a fake kubelet pod-resources server; a hot-plugged network is named
 * as a later ADD names it; many pods edited at once run at most --hot-plug-concurrency reconciles
 * at a time; a failing edit records one event. Subnets 10.241.x.0/24.
 */
import { spawn } from "node:child_process";
import { chmodSync, readFileSync, readdirSync, mkdirSync, writeFileSync } from "node:fs";
import { request as httpRequest } from "node:http";
import { request as httpsRequest } from "node:https";
import { join } from "node:path";
import { afterEach, expect, it } from "vitest";
import { ADMIN_TOKEN, startFakeApiServer, writeKubeconfig } from "../support/fake-apiserver";
import type { FakeApiServer } from "../support/fake-apiserver";
import { describeE2e, links, NOTHING_LEFT, useE2eScope } from "../support/netns";
import type { E2eScope, Netns } from "../support/netns";
import { E2eDaemons } from "../support/e2e-daemon";
import { podWithDevices, startFakePodResources } from "../support/fake-pod-resources";
import { PLEXUS_BIN } from "../support/plexus-bin";
import { bridgeNet, defaultNet, expectOk, expectSilentOk, hostLocal, plexusConf } from "./networks";

const t = useE2eScope();
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
let api: FakeApiServer | undefined;
const daemons = new E2eDaemons();
afterEach(async () => {
  await daemons.stopAll();
  await api?.close();
  api = undefined;
});

type Paths = { kubeconfig: string; socket: string; confDir: string };

/** What a test adds to the node: daemon flags, Plexus config keys, a directory of plugins. */
type NodeOptions = { daemonArgs?: string[]; conf?: Record<string, unknown>; pluginDir?: string };

function startDaemon(scope: E2eScope, paths: Paths & { options?: NodeOptions }) {
  const cniPath = ["/usr/lib/cni", ...(paths.options?.pluginDir ? [paths.options.pluginDir] : [])];
  const extraArgs = ["--hot-plug", "--cni-conf-dir", paths.confDir];
  extraArgs.push("--cni-path", cniPath.join(":"), "--housekeeping-interval", "0");
  extraArgs.push(...(paths.options?.daemonArgs ?? []));
  const { kubeconfig, socket } = paths;
  return daemons.start(scope, { kubeconfig, socket, extraArgs }).then((d) => d.log);
}

function nad(scope: E2eScope, name: string, subnet: string, more: unknown[] = []) {
  const bridge = bridgeNet({ name, bridge: scope.bridgeName(), ipam: hostLocal(scope, subnet) });
  const config = JSON.stringify({ cniVersion: "1.0.0", name, plugins: [bridge, ...more] });
  return { metadata: { namespace: "app", name }, spec: { config } };
}

async function setup(scope: E2eScope, options: NodeOptions = {}) {
  api = await startFakeApiServer();
  const confDir = join(scope.root, "net.d");
  mkdirSync(confDir, { recursive: true });
  const cbr0 = join(confDir, "10-cbr0.conflist");
  const plugins = [defaultNet(scope, "10.241.0.0/24", "cbr0")];
  writeFileSync(cbr0, JSON.stringify({ cniVersion: "1.0.0", name: "cbr0", plugins }));
  const kubeconfig = writeKubeconfig(api, { dir: scope.root, tokenFile: true });
  const socket = join(scope.root, "plexus.sock");
  const keys = { clusterNetwork: cbr0, confDir, kubeconfig, daemonSocket: socket, ...options.conf };
  const conf = plexusConf(scope, [], keys);
  delete (conf as Record<string, unknown>).delegates;
  // The node's Plexus config, where the daemon's hot-plug reads it (as the runtime would pick it).
  writeFileSync(join(confDir, "00-plexus.conf"), JSON.stringify(conf));
  api.addNad(nad(scope, "net-a", "10.241.1.0/24"));
  api.addNad(nad(scope, "net-b", "10.241.2.0/24"));
  api.addNad(nad(scope, "net-c", "10.241.3.0/24"));
  // The bridge attaches, then tuning refuses a sysctl that does not exist: the ADD fails midway.
  const badTuning = { type: "tuning", sysctl: { "net.ipv4.conf.IFNAME.no_such_sysctl": "1" } };
  api.addNad(nad(scope, "net-bad", "10.241.4.0/24", [badTuning]));
  const log = await startDaemon(scope, { kubeconfig, socket, confDir, options });
  return { api, conf, socket, log, confDir };
}

const podEnv = (ns: Netns, pod: string, ctr = `ctr-${pod}`) => ({
  CNI_CONTAINERID: ctr,
  CNI_NETNS: ns.path,
  CNI_IFNAME: "eth0",
  CNI_ARGS: `IgnoreUnknown=1;K8S_POD_NAMESPACE=app;K8S_POD_NAME=${pod};K8S_POD_UID=uid-${pod}`,
});

/**
 * A person's plexus command on the node: its exit status and output (asynchronous: the fake API
 * server answers from this process).
 */
function plexus(scope: E2eScope, args: string[]): Promise<{ code: number | null; stdout: string }> {
  const [mk, mv] = scope.marker.split("=") as [string, string];
  const child = spawn(PLEXUS_BIN, args, { env: { ...process.env, [mk]: mv }, timeout: 60_000 });
  let out = "";
  child.stdout.on("data", (c) => (out += c));
  child.stderr.on("data", (c) => (out += `[stderr] ${c}`));
  return new Promise((resolve) => child.once("close", (code) => resolve({ code, stdout: out })));
}

/** What a user's `kubectl annotate --overwrite` sends: a merge patch of the pod. */
function patchNetworks(server: FakeApiServer, pod: string, networks: string): Promise<number> {
  const annotations = { "k8s.v1.cni.cncf.io/networks": networks };
  const body = JSON.stringify({ metadata: { annotations } });
  return new Promise((resolve, reject) => {
    const req = httpsRequest(
      `${server.url}/api/v1/namespaces/app/pods/${pod}`,
      {
        method: "PATCH",
        ca: server.caPem,
        headers: {
          authorization: `Bearer ${ADMIN_TOKEN}`,
          "content-type": "application/merge-patch+json",
        },
      },
      (res) => {
        res.resume();
        res.on("end", () => resolve(res.statusCode ?? 0));
      },
    );
    req.on("error", reject);
    req.end(body);
  });
}

const COUNT = /plexus_hotplug_reconcile_duration_seconds_count (\d+)/;

/** The daemon's count of finished reconciles (its /metrics over the socket). */
function reconciles(socket: string): Promise<number> {
  return new Promise((resolve) => {
    const req = httpRequest({ socketPath: socket, path: "/metrics" }, (res) => {
      let text = "";
      res.on("data", (c) => (text += c));
      res.on("end", () => resolve(Number(COUNT.exec(text)?.[1] ?? 0)));
    });
    req.on("error", () => resolve(-1));
    req.end();
  });
}

const ifNames = (ns: Netns) =>
  links(ns.name)
    .map((l) => l.name)
    .filter((n) => n !== "lo")
    .sort();

function statusOf(server: FakeApiServer, pod: string): string[] {
  const value = (server.getPod("app", pod)!.metadata.annotations as Record<string, string>)[
    "k8s.v1.cni.cncf.io/network-status"
  ];
  return (JSON.parse(value ?? "[]") as Array<{ name: string; interface: string }>).map(
    (s) => `${s.name}@${s.interface}`,
  );
}

type Recorded = { network: string; ifName: string; hotpluggedAt?: string; device?: unknown };

function recordOf(scope: E2eScope): { attachments: Recorded[] } {
  const files = scope.recordFiles();
  expect(files).toHaveLength(1);
  return JSON.parse(readFileSync(join(scope.cniDir, "records", files[0]!), "utf8"));
}

const shown = (recorded: Recorded) =>
  `${recorded.network}@${recorded.ifName}${recorded.hotpluggedAt ? " (hot)" : ""}`;

const recorded = (scope: E2eScope) => recordOf(scope).attachments.map(shown);

const eventsOf = (server: FakeApiServer, reason: string) =>
  server
    .events()
    .filter((e) => e.reason === reason)
    .map((e) => String(e.message));

const reserved = (scope: E2eScope, subnetPrefix: string) =>
  scope.ipReservations().filter((p) => p.split("/").pop()!.startsWith(subnetPrefix));

const ADDED_NET_B = /^Add net2 \[10\.241\.2\.\d+\/24\] from app\/net-b \(hot-plug\)$/;
const isHot = (message: string) => message.includes("hot-plug");
const hotAdds = (server: FakeApiServer) => eventsOf(server, "AddedInterface").filter(isHot);

/** The first test's pod app/web, in its namespace `ns`, with the server that holds it. */
type Web = { scope: E2eScope; api: FakeApiServer; ns: Netns };

/** The second network (the next free netN), then the third on the interface the user names. */
async function hotPlugSecondAndThird({ scope, api, ns }: Web): Promise<void> {
  const patchedAt = Date.now();
  expect(await patchNetworks(api, "web", "net-a, net-b")).toBe(200);
  await expect.poll(() => ifNames(ns), { timeout: 15_000 }).toEqual(["eth0", "net1", "net2"]);
  const two = ["cbr0@eth0", "app/net-a@net1", "app/net-b@net2"];
  await expect.poll(() => statusOf(api, "web")).toEqual(two);
  expect(recorded(scope)).toEqual(["cbr0@eth0", "app/net-a@net1", "app/net-b@net2 (hot)"]);
  await expect
    .poll(() => eventsOf(api, "AddedInterface").filter((m) => m.includes("hot-plug")))
    .toEqual([expect.stringMatching(ADDED_NET_B)]);
  const tookMs = Date.now() - patchedAt;
  console.log(`hot-plug: from the annotation's patch to its event ${tookMs} ms`);

  expect(await patchNetworks(api, "web", "net-a, net-b, net-c@extra")).toBe(200);
  const four = ["eth0", "extra", "net1", "net2"];
  await expect.poll(() => ifNames(ns), { timeout: 15_000 }).toEqual(four);
  await expect
    .poll(() => statusOf(api, "web"))
    .toEqual(["cbr0@eth0", "app/net-a@net1", "app/net-b@net2", "app/net-c@extra"]);
  const hot = ["app/net-b@net2 (hot)", "app/net-c@extra (hot)"];
  expect(recorded(scope)).toEqual(["cbr0@eth0", "app/net-a@net1", ...hot]);
  await expect.poll(() => hotAdds(api)).toHaveLength(2);
}

/** One removed: its interface and its address go, the others stay. */
async function hotUnplugOne({ scope, api, ns }: Web): Promise<void> {
  expect(await patchNetworks(api, "web", "net-a, net-c@extra")).toBe(200);
  await expect.poll(() => ifNames(ns), { timeout: 15_000 }).toEqual(["eth0", "extra", "net1"]);
  const after = ["cbr0@eth0", "app/net-a@net1", "app/net-c@extra"];
  await expect.poll(() => statusOf(api, "web")).toEqual(after);
  expect(recorded(scope)).toEqual(["cbr0@eth0", "app/net-a@net1", "app/net-c@extra (hot)"]);
  expect(reserved(scope, "10.241.2.")).toEqual([]);
  const removed = ["Remove net2 from app/net-b (hot-plug)"];
  await expect.poll(() => eventsOf(api, "RemovedInterface")).toEqual(removed);
}

/** A hot-plug that fails midway is rolled back; one naming a missing NAD changes nothing. */
async function failedHotPlugs({ scope, api, ns, socket }: Web & { socket: string }) {
  // The bridge attached, tuning failed; rolled back, the pod as it was.
  expect(await patchNetworks(api, "web", "net-a, net-c@extra, net-bad")).toBe(200);
  await expect
    .poll(() => eventsOf(api, "HotplugFailed"), { timeout: 15_000 })
    .toContainEqual(expect.stringMatching(/app\/net-bad.*\(rolled back\)$/));
  expect(ifNames(ns)).toEqual(["eth0", "extra", "net1"]);
  expect(reserved(scope, "10.241.4.")).toEqual([]);
  expect(recorded(scope)).toEqual(["cbr0@eth0", "app/net-a@net1", "app/net-c@extra (hot)"]);
  expect(statusOf(api, "web")).toEqual(["cbr0@eth0", "app/net-a@net1", "app/net-c@extra"]);
  // A NAD that does not exist: refused before any delegate runs, with its reason.
  expect(await patchNetworks(api, "web", "net-a, net-c@extra, net-missing")).toBe(200);
  await expect
    .poll(() => eventsOf(api, "HotplugFailed"), { timeout: 15_000 })
    .toContainEqual(expect.stringMatching(/app\/net-missing.*\(nothing changed\)$/));
  expect(ifNames(ns)).toEqual(["eth0", "extra", "net1"]);
  expect(recorded(scope)).toEqual(["cbr0@eth0", "app/net-a@net1", "app/net-c@extra (hot)"]);
  const before = await reconciles(socket);
  expect(await patchNetworks(api, "web", "net-a, net-c@extra")).toBe(200);
  await expect.poll(() => reconciles(socket), { timeout: 15_000 }).toBeGreaterThan(before);
}

/**
 * Without the daemon: plexus explain --hot-plug says what a reconcile would do; plexus hotplug
 * does it; plexus records shows what was hot-plugged.
 */
async function hotPlugWithoutDaemon({ scope, api, ns, confDir }: Web & { confDir: string }) {
  await daemons.stopAll();
  expect(await patchNetworks(api, "web", "net-a, net-b, net-c@extra")).toBe(200);
  const people = (...args: string[]) => plexus(scope, [...args, "--cni-conf-dir", confDir]);
  expect(await people("explain", "app/web", "--hot-plug")).toMatchObject({
    code: 0,
    stdout: expect.stringContaining("  attach app/net-b on net2\n"),
  });
  expect(ifNames(ns)).toEqual(["eth0", "extra", "net1"]);
  const manual = await people("hotplug", "app/web", "--cni-path", "/usr/lib/cni");
  expect(manual).toMatchObject({ code: 0 });
  expect(ifNames(ns)).toEqual(["eth0", "extra", "net1", "net2"]);
  const hotplugged = /hot-plugged: app\/net-c@extra at .*app\/net-b@net2 at /;
  expect((await people("records", "list")).stdout).toMatch(hotplugged);
}

describeE2e("e2e hot-plug: plexus daemon --hot-plug", () => {
  it("M15 2nd and 3rd networks added, one removed, a failure rolled back; DEL takes all", async () => {
    const { scope } = t;
    const { api, conf, socket, confDir } = await setup(scope);
    api.addPod({
      metadata: {
        namespace: "app",
        name: "web",
        uid: "uid-web",
        annotations: { "k8s.v1.cni.cncf.io/networks": "net-a" },
      },
      spec: { nodeName: "node-1" },
    });
    const ns = scope.addNetns();
    expectOk(await scope.run("ADD", conf, podEnv(ns, "web")));
    expect(ifNames(ns)).toEqual(["eth0", "net1"]);
    const web = { scope, api, ns };
    await hotPlugSecondAndThird(web);
    await hotUnplugOne(web);
    await failedHotPlugs({ ...web, socket });
    await hotPlugWithoutDaemon({ ...web, confDir });
    // The sandbox's DEL removes everything the record holds, the hot-plugged networks included.
    expectSilentOk(await scope.run("DEL", conf, podEnv(ns, "web")));
    expect(ifNames(ns)).toEqual([]);
    expect(scope.attachmentLeftovers()).toEqual(NOTHING_LEFT);
  }, 120_000);

  it("M15 a hot-plug racing the runtime's DEL leaves nothing behind", async () => {
    const { scope } = t;
    const { api, conf, socket } = await setup(scope);
    // The daemon waits its debounce before it reconciles: DELs around that moment race it.
    for (const [i, delayMs] of [300, 450, 500, 550, 600, 700, 900].entries()) {
      const pod = `race${i}`;
      api.addPod({
        metadata: {
          namespace: "app",
          name: pod,
          uid: `uid-${pod}`,
          annotations: { "k8s.v1.cni.cncf.io/networks": "net-a" },
        },
        spec: { nodeName: "node-1" },
      });
      const ns = scope.addNetns();
      expectOk(await scope.run("ADD", conf, podEnv(ns, pod)));
      const before = await reconciles(socket);
      const [status, del] = await Promise.all([
        patchNetworks(api, pod, "net-a, net-b, net-c"),
        sleep(delayMs).then(() => scope.run("DEL", conf, podEnv(ns, pod))),
      ]);
      expect(status).toBe(200);
      expectSilentOk(del);
      await expect.poll(() => reconciles(socket), { timeout: 15_000 }).toBeGreaterThan(before);
      expect(ifNames(ns), `${pod} (DEL after ${delayMs} ms)`).toEqual([]);
      expect(scope.recordFiles()).toEqual([]);
    }
    // Which side took the lock first depends on timing; both orders must leave nothing.
    const hotFirst = hotAdds(api).length / 2;
    console.log(`race: the hot-plug attached before the DEL in ${hotFirst} of 7 rounds`);
    await daemons.stopAll();
    expect(scope.attachmentLeftovers()).toEqual(NOTHING_LEFT);
  }, 180_000);
});

/** A pod of node-1 in namespace app, as the API server holds it before its sandbox's ADD. */
function addPod(server: FakeApiServer, pod: string, networks: string): void {
  server.addPod({
    metadata: {
      namespace: "app",
      name: pod,
      uid: `uid-${pod}`,
      annotations: { "k8s.v1.cni.cncf.io/networks": networks },
    },
    spec: { nodeName: "node-1" },
  });
}

/**
 * A chained plugin `count` in `dir`: its ADD makes an entry in `<countDir>/running`, appends how
 * many entries there are (its ADD and the others under way) to `<countDir>/counts`, holds a while,
 * removes its entry and passes the previous result on. The largest count is how many ADDs ran at
 * once: no reconcile runs without its delegates, so no more reconciles than that ran either.
 */
function countingPlugin(dir: string): void {
  mkdirSync(dir, { recursive: true });
  const source = `#!${process.execPath}
const fs = require("node:fs");
const path = require("node:path");
const command = process.env.CNI_COMMAND;
const input = command === "VERSION" ? "{}" : fs.readFileSync(0, "utf8");
if (command === "VERSION") {
  process.stdout.write(JSON.stringify({ cniVersion: "1.0.0", supportedVersions: ["1.0.0"] }));
  process.exit(0);
}
if (command !== "ADD") process.exit(0);
const conf = JSON.parse(input);
const running = path.join(conf.countDir, "running");
const me = path.join(running, String(process.pid));
fs.mkdirSync(me, { recursive: true });
fs.appendFileSync(path.join(conf.countDir, "counts"), fs.readdirSync(running).length + "\\n");
Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, conf.holdMs);
fs.rmdirSync(me);
process.stdout.write(JSON.stringify({ ...conf.prevResult, cniVersion: conf.cniVersion }));
`;
  writeFileSync(join(dir, "count"), source);
  chmodSync(join(dir, "count"), 0o755);
}

const RESOURCE = "intel.com/sriov_netdevice";
const RES_ANN = "k8s.v1.cni.cncf.io/resourceName";
const VF1 = "0000:3b:02.1";

describeE2e("e2e hot-plug: devices, names, the node's limit and events", () => {
  it("M10 M15 a device network hot-plugged gets its device from kubelet's pod-resources, as ADD", async () => {
    const { scope } = t;
    const kubeletSocket = join(scope.root, "kubelet.sock");
    const allocation = podWithDevices("app", "web", { app: { [RESOURCE]: [VF1] } });
    const kubelet = await startFakePodResources(kubeletSocket, [allocation]);
    try {
      const { api, conf, confDir } = await setup(scope, {
        daemonArgs: ["--pod-resources-socket", kubeletSocket],
        conf: { podResourcesSocket: kubeletSocket, deviceInfoDir: join(scope.root, "devinfo") },
      });
      const dev = nad(scope, "net-dev", "10.241.6.0/24");
      api.addNad({ ...dev, metadata: { ...dev.metadata, annotations: { [RES_ANN]: RESOURCE } } });
      addPod(api, "web", "net-a");
      const ns = scope.addNetns();
      expectOk(await scope.run("ADD", conf, podEnv(ns, "web")));
      expect(await patchNetworks(api, "web", "net-a, net-dev")).toBe(200);
      await expect.poll(() => ifNames(ns), { timeout: 15_000 }).toEqual(["eth0", "net1", "net2"]);
      const attachment = recordOf(scope).attachments.find((a) => a.network === "app/net-dev");
      expect(attachment).toMatchObject({
        ifName: "net2",
        device: { resourceName: RESOURCE, deviceID: VF1, from: "kubelet" },
      });
      expect(kubelet.calls).toContain("Get");
      expect(eventsOf(api, "HotplugFailed")).toEqual([]);
      // The dry run learns the device the same way: nothing more to do.
      const explained = await plexus(
        scope,
        ["explain", "app/web", "--hot-plug"].concat(["--cni-conf-dir", confDir]),
      );
      expect(explained).toMatchObject({ code: 0, stdout: expect.stringContaining("do nothing") });
      await daemons.stopAll();
      expectSilentOk(await scope.run("DEL", conf, podEnv(ns, "web")));
      expect(ifNames(ns)).toEqual([]);
      expect(scope.attachmentLeftovers()).toEqual(NOTHING_LEFT);
    } finally {
      await kubelet.close();
    }
  }, 60_000);

  it("M15 hot-plug names a network as a later ADD names it; default-route is refused", async () => {
    const { scope } = t;
    const { api, conf, log } = await setup(scope);
    api.addNad(nad(scope, "net-gw", "10.241.5.0/24"));
    const named = "net-a@left, net-b@right";
    addPod(api, "web", named);
    const ns = scope.addNetns();
    expectOk(await scope.run("ADD", conf, podEnv(ns, "web")));
    expect(ifNames(ns)).toEqual(["eth0", "left", "right"]);
    // net-c is the annotation's third item: ADD calls it net3 (net1 and net2 are free).
    const grown = `${named}, net-c`;
    expect(await patchNetworks(api, "web", grown)).toBe(200);
    const hot = ["eth0", "left", "net3", "right"];
    await expect.poll(() => ifNames(ns), { timeout: 15_000 }).toEqual(hot);
    // A sandbox created with the same annotation (a re-created pod) has the same names.
    addPod(api, "fresh", grown);
    const fresh = scope.addNetns();
    expectOk(await scope.run("ADD", conf, podEnv(fresh, "fresh")));
    expect(ifNames(fresh)).toEqual(hot);
    expectSilentOk(await scope.run("DEL", conf, podEnv(fresh, "fresh")));

    const withRoute = JSON.stringify([
      { name: "net-a", interface: "left" },
      { name: "net-b", interface: "right" },
      { name: "net-c" },
      { name: "net-gw", "default-route": ["10.241.5.1"] },
    ]);
    expect(await patchNetworks(api, "web", withRoute)).toBe(200);
    const refusal =
      /app\/web: the selection of app\/net-gw asks for "default-route" \(10\.241\.5\.1\)/;
    await expect
      .poll(() => eventsOf(api, "HotplugRefused"), { timeout: 15_000 })
      .toEqual([expect.stringMatching(refusal)]);
    expect(ifNames(ns)).toEqual(hot);
    expect(log.text).toContain("app/net-gw");
    await daemons.stopAll();
    expectSilentOk(await scope.run("DEL", conf, podEnv(ns, "web")));
    expect(scope.attachmentLeftovers()).toEqual(NOTHING_LEFT);
  }, 60_000);

  it("B93 12 pods edited at once: at most --hot-plug-concurrency reconciles run at a time", async () => {
    const { scope } = t;
    const pluginDir = join(scope.root, "plugins");
    const countDir = join(scope.root, "count");
    countingPlugin(pluginDir);
    const { api, conf } = await setup(scope, {
      daemonArgs: ["--hot-plug-concurrency", "3"],
      pluginDir,
    });
    const bridge = bridgeNet({
      name: "net-slow",
      bridge: scope.bridgeName(),
      ipam: hostLocal(scope, "10.241.7.0/24"),
    });
    const count = { type: "count", countDir, holdMs: 600 };
    const config = JSON.stringify({
      cniVersion: "1.0.0",
      name: "net-slow",
      plugins: [bridge, count],
    });
    api.addNad({ metadata: { namespace: "app", name: "net-slow" }, spec: { config } });
    const pods = Array.from({ length: 12 }, (_, i) => `many${i}`);
    const netnses = new Map<string, Netns>();
    for (const pod of pods) {
      addPod(api, pod, "net-a");
      const ns = scope.addNetns();
      netnses.set(pod, ns);
      expectOk(await scope.run("ADD", conf, podEnv(ns, pod)));
    }
    const statuses = await Promise.all(
      pods.map((pod) => patchNetworks(api, pod, "net-a, net-slow")),
    );
    expect(statuses.every((code) => code === 200)).toBe(true);
    for (const pod of pods)
      await expect
        .poll(() => ifNames(netnses.get(pod)!), { timeout: 60_000 })
        .toEqual(["eth0", "net1", "net2"]);
    // The interface is there once the bridge ran; the chained count plugin may still hold.
    const countsNow = () =>
      readFileSync(join(countDir, "counts"), "utf8").trim().split("\n").map(Number);
    await expect.poll(() => countsNow().length, { timeout: 15_000 }).toBe(12);
    await expect.poll(() => readdirSync(join(countDir, "running")), { timeout: 5000 }).toEqual([]);
    await daemons.stopAll();
    const counts = countsNow();
    // Never more than three at once; and three did overlap (the limit, not chance, held them).
    expect(Math.max(...counts)).toBe(3);
    const cniPath = `/usr/lib/cni:${pluginDir}`;
    for (const pod of pods)
      expectSilentOk(
        await scope.run("DEL", conf, { ...podEnv(netnses.get(pod)!, pod), CNI_PATH: cniPath }),
      );
    expect(scope.attachmentLeftovers()).toEqual(NOTHING_LEFT);
  }, 180_000);

  it("B93 a failing edit, its retries and a later edit failing the same way record one event", async () => {
    const { scope } = t;
    const { api, conf, socket } = await setup(scope);
    addPod(api, "web", "net-a");
    const ns = scope.addNetns();
    expectOk(await scope.run("ADD", conf, podEnv(ns, "web")));
    const before = await reconciles(socket);
    expect(await patchNetworks(api, "web", "net-a, net-bad")).toBe(200);
    // The first attempt and two retries (after 1 s, then 2 s), each rolled back.
    await expect.poll(() => reconciles(socket), { timeout: 20_000 }).toBeGreaterThan(before + 2);
    const badOnes = () => eventsOf(api, "HotplugFailed").filter((m) => m.includes("net-bad"));
    expect(badOnes()).toEqual([expect.stringMatching(/app\/net-bad.*\(rolled back\)$/)]);
    // Another edit that fails the same way: no new event.
    const again = await reconciles(socket);
    expect(await patchNetworks(api, "web", "net-a,  net-bad")).toBe(200);
    await expect.poll(() => reconciles(socket), { timeout: 15_000 }).toBeGreaterThan(again);
    expect(badOnes()).toHaveLength(1);
    // A different failure is recorded.
    expect(await patchNetworks(api, "web", "net-a, net-missing")).toBe(200);
    await expect
      .poll(() => eventsOf(api, "HotplugFailed"), { timeout: 15_000 })
      .toContainEqual(expect.stringMatching(/app\/net-missing.*\(nothing changed\)$/));
    expect(eventsOf(api, "HotplugFailed")).toHaveLength(2);
    expect(ifNames(ns)).toEqual(["eth0", "net1"]);
    await daemons.stopAll();
    expectSilentOk(await scope.run("DEL", conf, podEnv(ns, "web")));
    expect(scope.attachmentLeftovers()).toEqual(NOTHING_LEFT);
  }, 90_000);
});
