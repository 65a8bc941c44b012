/**
 * Daemon mode end to end: `dist/plexus daemon` as its own process in front of the fake
 * API server (HTTPS), `dist/plexus` as the CNI binary with `daemonSocket`, real bridge/host-local
 * in real namespaces. An ADD reads nothing from the API (0 GETs; 2 writes: status and one event);
 * with the daemon killed (SIGKILL) at random through 200 ADD/DEL cycles, every ADD succeeds
 * through the fallback or the restarted daemon, every DEL succeeds, nothing is left behind.
 * Subnets 10.219.x.0/24.
 */
import type { ChildProcess } from "node:child_process";
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, expect, it } from "vitest";
import { startFakeApiServer, writeKubeconfig, type FakeApiServer } from "../support/fake-apiserver";
import { describeE2e, links, NOTHING_LEFT, useE2eScope } from "../support/netns";
import type { E2eScope, Netns } from "../support/netns";
import { E2eDaemons } from "../support/e2e-daemon";
import { unixSocketStatus } from "../support/plexus-bin";
import { bridgeNet, defaultNet, expectOk, expectSilentOk, hostLocal, plexusConf } from "./networks";

const t = useE2eScope();
let api: FakeApiServer | undefined;
const daemons = new E2eDaemons();
afterEach(async () => {
  await daemons.stopAll();
  await api?.close();
  api = undefined;
});

async function startDaemon(
  scope: E2eScope,
  {
    kubeconfig,
    socket,
    waitReady = true,
  }: { kubeconfig: string; socket: string; waitReady?: boolean },
): Promise<ChildProcess> {
  return (await daemons.start(scope, { kubeconfig, socket, waitReady })).child;
}

/** Stops every daemon (SIGTERM: it removes its socket), then checks that nothing is left behind. */
async function expectNothingLeft(scope: E2eScope, socket: string): Promise<void> {
  await daemons.stopAll();
  expect(existsSync(socket)).toBe(false);
  expect(scope.attachmentLeftovers()).toEqual(NOTHING_LEFT);
}

async function setup(scope: E2eScope, octet: number) {
  api = await startFakeApiServer();
  const confDir = join(scope.root, "net.d");
  mkdirSync(confDir, { recursive: true });
  writeFileSync(
    join(confDir, "10-cbr0.conflist"),
    JSON.stringify({
      cniVersion: "1.0.0",
      name: "cbr0",
      plugins: [defaultNet(scope, `10.219.${octet}.0/24`, "cbr0")],
    }),
  );
  const kubeconfig = writeKubeconfig(api, { dir: scope.root, tokenFile: true });
  const socket = join(scope.root, "plexus.sock");
  const conf = plexusConf(scope, [], {
    clusterNetwork: join(confDir, "10-cbr0.conflist"),
    confDir,
    kubeconfig,
    daemonSocket: socket,
    daemonTimeoutMilliseconds: 500,
  });
  delete (conf as Record<string, unknown>).delegates;
  api.addNad({
    metadata: { namespace: "app", name: "net-a" },
    spec: {
      config: JSON.stringify(
        bridgeNet({
          name: "net-a",
          bridge: scope.bridgeName(),
          ipam: hostLocal(scope, `10.219.${octet + 1}.0/24`),
        }),
      ),
    },
  });
  return { api, conf, kubeconfig, socket };
}

const podEnv = (ns: { path: string }, pod: string, ctr = `ctr-${pod}`) => ({
  CNI_CONTAINERID: ctr,
  CNI_NETNS: ns.path,
  CNI_IFNAME: "eth0",
  CNI_ARGS: `IgnoreUnknown=1;K8S_POD_NAMESPACE=app;K8S_POD_NAME=${pod};K8S_POD_UID=uid-${pod}`,
});

const CYCLES = 200;
const MIN_KILLS = 5;
const MAX_CYCLES = 1000;

/** The chaos test's daemon of the moment, how often it was killed, and whether to stop. */
type Chaos = { daemon: ChildProcess; kills: number; stop: boolean };

/**
 * The chaos: the daemon lives 400–2000 ms (it needs ~200 ms to listen again, more under load), is
 * SIGKILLed (its socket file stays behind, refusing), and is restarted 50–300 ms later without
 * waiting for ready. Runs until `chaos.stop`.
 */
async function killAtRandom(
  scope: E2eScope,
  { chaos, paths }: { chaos: Chaos; paths: { kubeconfig: string; socket: string } },
): Promise<void> {
  while (!chaos.stop) {
    const alive = chaos.daemon.exitCode === null && chaos.daemon.signalCode === null;
    await new Promise((r) =>
      setTimeout(r, alive ? 400 + Math.random() * 1600 : 50 + Math.random() * 250),
    );
    if (chaos.stop) break;
    if (alive) {
      await daemons.stop(chaos.daemon, "SIGKILL");
      chaos.kills++;
    } else chaos.daemon = await startDaemon(scope, { ...paths, waitReady: false });
  }
}

/** ADD and DEL of every pod, in parallel, cycle after cycle: what failed, how many cycles ran. */
async function cyclePods(options: {
  scope: E2eScope;
  conf: unknown;
  pods: Array<{ name: string; ns: Netns }>;
  chaos: Chaos;
}): Promise<{ failures: string[]; done: number }> {
  const { scope, conf, pods, chaos } = options;
  const failures: string[] = [];
  let done = 0;
  await Promise.all(
    pods.map(async (p) => {
      // Counted, not timed: at least CYCLES cycles, and on until the daemon was killed
      // MIN_KILLS times (a fast machine finishes the cycles first), never past MAX_CYCLES.
      for (let i = 0; (done < CYCLES || chaos.kills < MIN_KILLS) && done < MAX_CYCLES; i++) {
        done++;
        const env = podEnv(p.ns, p.name, `ctr-${p.name}-${i}`);
        const add = await scope.run("ADD", conf, env);
        if (add.code !== 0) failures.push(`ADD ${p.name}#${i}: ${add.stdout}`);
        const del = await scope.run("DEL", conf, env);
        if (del.code !== 0 || del.stdout !== "") failures.push(`DEL ${p.name}#${i}: ${del.stdout}`);
        if (links(p.ns.name).some((l) => l.name !== "lo"))
          failures.push(`leftover links in ${p.ns.name} after cycle ${i}`);
      }
    }),
  );
  return { failures, done };
}

describeE2e("e2e daemon mode: dist/plexus daemon + dist/plexus", () => {
  it("an ADD reads nothing from the API server (0 GETs), writes status and one event; DEL needs neither", async () => {
    const { scope } = t;
    const { api, conf, kubeconfig, socket } = await setup(scope, 1);
    api.addPod({
      metadata: {
        namespace: "app",
        name: "web",
        uid: "uid-web",
        annotations: { "k8s.v1.cni.cncf.io/networks": "net-a" },
      },
      spec: { nodeName: "node-1" },
    });
    await startDaemon(scope, { kubeconfig, socket });
    // Pods, NADs, and this node's ResourceSlices (ResourceClaims are read by name, never watched).
    await expect.poll(() => api.watchCount()).toBe(3);
    const before = api.requests.length;
    const ns = scope.addNetns();
    expectOk(await scope.run("ADD", conf, podEnv(ns, "web")));
    expect(
      links(ns.name)
        .map((l) => l.name)
        .filter((n) => n !== "lo")
        .sort(),
    ).toEqual(["eth0", "net1"]);
    // The daemon writes the event in the background, after answering the ADD.
    await expect
      .poll(() => api.requests.slice(before).map((r) => `${r.method} ${r.path}`))
      .toEqual([
        "PATCH /api/v1/namespaces/app/pods/web/status",
        "POST /api/v1/namespaces/app/events",
      ]);
    const status = JSON.parse(
      (api.getPod("app", "web")!.metadata.annotations as Record<string, string>)[
        "k8s.v1.cni.cncf.io/network-status"
      ]!,
    ) as Array<{ name: string; interface: string }>;
    expect(status.map((s) => [s.name, s.interface])).toEqual([
      ["cbr0", "eth0"],
      ["app/net-a", "net1"],
    ]);
    const afterAdd = api.requests.length;
    expectSilentOk(await scope.run("DEL", conf, podEnv(ns, "web")));
    expect(api.requests.length).toBe(afterAdd);
    await expectNothingLeft(scope, socket);
  });

  it("a pod created just before its ADD is found (the daemon reads it live)", async () => {
    const { scope } = t;
    const { api, conf, kubeconfig, socket } = await setup(scope, 3);
    await startDaemon(scope, { kubeconfig, socket });
    api.addPod({
      metadata: {
        namespace: "app",
        name: "new",
        uid: "uid-new",
        annotations: { "k8s.v1.cni.cncf.io/networks": "net-a" },
      },
      spec: { nodeName: "node-1" },
    });
    const ns = scope.addNetns();
    expectOk(await scope.run("ADD", conf, podEnv(ns, "new")));
    expectSilentOk(await scope.run("DEL", conf, podEnv(ns, "new")));
    await expectNothingLeft(scope, socket);
  });

  it("200 ADD/DEL cycles with the daemon SIGKILLed at random and restarted: every ADD and DEL succeeds, nothing left", async () => {
    const { scope } = t;
    const { api, conf, kubeconfig, socket } = await setup(scope, 5);
    const pods = Array.from({ length: 4 }, (_, i) => {
      api!.addPod({
        metadata: {
          namespace: "app",
          name: `p${i}`,
          uid: `uid-p${i}`,
          annotations: { "k8s.v1.cni.cncf.io/networks": "net-a" },
        },
        spec: { nodeName: "node-1" },
      });
      return { name: `p${i}`, ns: scope.addNetns() };
    });
    const paths = { kubeconfig, socket };
    const chaos: Chaos = { daemon: await startDaemon(scope, paths), kills: 0, stop: false };
    const killing = killAtRandom(scope, { chaos, paths });
    let cycles: { failures: string[]; done: number };
    try {
      cycles = await cyclePods({ scope, conf, pods, chaos });
    } finally {
      chaos.stop = true;
      await killing;
    }
    expect(cycles.failures).toEqual([]);
    expect(chaos.kills).toBeGreaterThanOrEqual(MIN_KILLS);
    // Both paths carried pods: the CNI binary read pods itself only while the daemon was down.
    const cniPodReads = api.requests.filter(
      (r) => r.method === "GET" && r.userAgent === "plexus-cni" && /\/pods\/p\d$/.test(r.path),
    ).length;
    console.log(
      `chaos: ${cycles.done} cycles, ${chaos.kills} daemon kills, ${cniPodReads} ADDs fell back ` +
        `to direct pod reads`,
    );
    expect(cniPodReads).toBeGreaterThan(0);
    expect(cniPodReads).toBeLessThan(cycles.done);
    // A SIGKILLed daemon leaves its socket file; the next one claims it. End on a live one.
    const { daemon } = chaos;
    if (daemon.exitCode !== null || daemon.signalCode !== null) await startDaemon(scope, paths);
    else
      await expect
        .poll(() => unixSocketStatus(socket, "/readyz"), { timeout: 10_000, interval: 20 })
        .toBe(200);
    await expectNothingLeft(scope, socket);
  }, 240_000);
});
