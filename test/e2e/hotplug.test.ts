/**
 * Hot-plug end to end: `dist/plexus daemon --hot-plug` in front of the fake API server (its pod
 * watch), `dist/plexus` as the CNI binary, real bridge/host-local/tuning in real namespaces. A
 * running pod's networks annotation is patched (as a user's kubectl would) and its interfaces,
 * record, network-status and Events follow; a failed hot-plug rolls back; the sandbox's DEL
 * removes hot-plugged networks too; a hot-plug racing the runtime's DEL leaves nothing.
 * Subnets 10.241.x.0/24.
 */
import { spawn } from "node:child_process";
import { readFileSync, mkdirSync, writeFileSync } from "node:fs";
import { request as httpRequest } from "node:http";
import { request as httpsRequest } from "node:https";
import { join } from "node:path";
import { afterEach, expect, it } from "vitest";
import { ADMIN_TOKEN, startFakeApiServer, writeKubeconfig } from "../support/fake-apiserver";
import type { FakeApiServer } from "../support/fake-apiserver";
import { describeE2e, links, NOTHING_LEFT, useE2eScope } from "../support/netns";
import type { E2eScope, Netns } from "../support/netns";
import { E2eDaemons } from "../support/e2e-daemon";
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

async function startDaemon(scope: E2eScope, paths: Paths) {
  const extraArgs = ["--hot-plug", "--cni-conf-dir", paths.confDir];
  extraArgs.push("--cni-path", "/usr/lib/cni", "--housekeeping-interval", "0");
  const { kubeconfig, socket } = paths;
  return (await daemons.start(scope, { kubeconfig, socket, extraArgs })).log;
}

function nad(scope: E2eScope, name: string, subnet: string, more: unknown[] = []) {
  const bridge = bridgeNet({ name, bridge: scope.bridgeName(), ipam: hostLocal(scope, subnet) });
  const config = JSON.stringify({ cniVersion: "1.0.0", name, plugins: [bridge, ...more] });
  return { metadata: { namespace: "app", name }, spec: { config } };
}

async function setup(scope: E2eScope) {
  api = await startFakeApiServer();
  const confDir = join(scope.root, "net.d");
  mkdirSync(confDir, { recursive: true });
  const cbr0 = join(confDir, "10-cbr0.conflist");
  const plugins = [defaultNet(scope, "10.241.0.0/24", "cbr0")];
  writeFileSync(cbr0, JSON.stringify({ cniVersion: "1.0.0", name: "cbr0", plugins }));
  const kubeconfig = writeKubeconfig(api, { dir: scope.root, tokenFile: true });
  const socket = join(scope.root, "plexus.sock");
  const keys = { clusterNetwork: cbr0, confDir, kubeconfig, daemonSocket: socket };
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
  const log = await startDaemon(scope, { kubeconfig, socket, confDir });
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

type Recorded = { network: string; ifName: string; hotpluggedAt?: string };

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
