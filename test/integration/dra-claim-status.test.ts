/**
 * A ResourceClaim's device status (KEP-4817) and DRA's per-pod reads, with dist/plexus against the
 * fake API server (resource.k8s.io/v1 claims with their status subresource, server-side apply and
 * granular status authorization as kube-apiserver 1.36 has them) and, for daemon mode, the node
 * daemon. The scenario (test/support/dra-fixtures.ts): two NADs backed by a claim's two VFs of an
 * SR-IOV driver, and a GPU claim. The fixture delegate reports an interface, a MAC and two
 * addresses per VF network; the operator's deploy/ has the dra-claim-status component naming the
 * SR-IOV driver.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it, onTestFinished } from "vitest";
import { type DraDeployDir, draDeployDir } from "../support/dra-deploy";
import {
  type DraScenario,
  draScenario,
  GPU_CLAIM,
  NET_CLAIM,
  scenarioList,
} from "../support/dra-fixtures";
import {
  ADMIN_TOKEN,
  type FakeApiServer,
  startFakeApiServer,
  writeKubeconfig,
} from "../support/fake-apiserver";
import { PLEXUS_BIN, podNetns, runPlexus, unixSocketStatus } from "../support/plexus-bin";
import { useSandbox } from "./use-sandbox";

const ctx = useSandbox();
const POD_ARGS = "IgnoreUnknown=1;K8S_POD_NAMESPACE=app;K8S_POD_NAME=web;K8S_POD_UID=uid-web";
const DRIVER = "sriov.example.com";
const CONDITION = "plexus.cni.cncf.io/Attached";
const CLAIMS = "/apis/resource.k8s.io/v1/namespaces/app/resourceclaims";

type Obj = Record<string, any>;

/** What each VF network's delegate reports: its interface in the pod, a MAC, two addresses. */
const REPORTED: Record<string, { ifName: string; mac: string; ips: string[] }> = {
  "netdra-a": { ifName: "net1", mac: "0a:58:0a:38:00:0b", ips: ["10.56.0.11/24", "fd00:56::b/64"] },
  "netdra-b": { ifName: "net2", mac: "0a:58:0a:38:00:0c", ips: ["10.56.0.12/24", "fd00:56::c/64"] },
};

function nadConfig(name: string): string {
  const r = REPORTED[name]!;
  const result = {
    cniVersion: "1.0.0",
    interfaces: [{ name: r.ifName, mac: r.mac, sandbox: podNetns() }],
    ips: r.ips.map((address) => ({ address, interface: 0 })),
  };
  return JSON.stringify(
    ctx.sb.delegate(name, {
      type: "sriov",
      extra: { capabilities: { deviceID: true, CNIDeviceInfoFile: true } },
      behaviours: { ADD: { result } },
    }),
  );
}

/** The entry Plexus writes for the VF of one network: vf-1 backs net1, vf-2 net2 (sorted). */
function expectedEntry(network: "netdra-a" | "netdra-b"): Obj {
  const r = REPORTED[network]!;
  return {
    driver: DRIVER,
    pool: "node-1",
    device: network === "netdra-a" ? "vf-1" : "vf-2",
    networkData: { interfaceName: r.ifName, ips: r.ips, hardwareAddress: r.mac },
    conditions: [
      {
        type: CONDITION,
        status: "True",
        reason: "Attached",
        message: `attached to pod app/web as ${r.ifName} (network app/${network})`,
        lastTransitionTime: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/),
      },
    ],
  };
}

function baseConf(extra: Record<string, unknown>): Record<string, unknown> {
  return ctx.sb.config([ctx.sb.delegate("cluster-net")], {
    podResourcesSocket: join(ctx.sb.root, "no-kubelet.sock"),
    podResourcesTimeoutSeconds: 1,
    deviceInfoDir: join(ctx.sb.root, "devinfo"),
    ...extra,
  });
}

interface Setup {
  api: FakeApiServer;
  conf: Record<string, unknown>;
}

/** The fake API server with the scenario, its RBAC and admission from `deploy` (the component). */
async function apiSetup(
  options: {
    edit?: (sc: DraScenario) => void;
    deploy?: DraDeployDir | "shipped";
    server?: Parameters<typeof startFakeApiServer>[0];
  } = {},
): Promise<Setup> {
  const deploy = options.deploy ?? draDeployDir([DRIVER]);
  if (deploy !== "shipped") onTestFinished(() => deploy[Symbol.dispose]());
  const dirs =
    deploy === "shipped"
      ? {}
      : { rbac: { deployDir: deploy.dir }, admission: { deployDir: deploy.dir } };
  const api = await startFakeApiServer({ ...dirs, ...options.server });
  onTestFinished(() => api.close());
  const sc = draScenario({ nadConfig, ...(options.edit ? { edit: options.edit } : {}) });
  api.addPod(sc.pod as never);
  for (const n of sc.nads) api.addNad(n as never);
  for (const c of sc.claims) api.addDra("resourceclaims", c as never);
  for (const s of sc.slices) api.addDra("resourceslices", s as never);
  const conf = baseConf({
    kubeconfig: writeKubeconfig(api, { dir: ctx.sb.root }),
    apiRequestTimeoutSeconds: 2,
    // Warnings in the log (stderr), not only errors.
    logLevel: "verbose",
  });
  return { api, conf };
}

/** The claim as the API server holds it, read over its own protocol (the test CA trusted). */
function getClaim(api: FakeApiServer, name: string): Promise<Obj> {
  return new Promise((resolve, reject) => {
    import("node:https").then(({ request }) => {
      const req = request(
        `${api.url}${CLAIMS}/${name}`,
        { headers: { authorization: `Bearer ${ADMIN_TOKEN}` }, ca: api.caPem },
        (res) => {
          let text = "";
          res.on("data", (c: Buffer) => (text += c.toString()));
          res.on("end", () => resolve(JSON.parse(text) as Obj));
        },
      );
      req.on("error", reject);
      req.end();
    }, reject);
  });
}

const statusWrites = (api: FakeApiServer) =>
  api.requests.filter((q) => q.method === "PATCH" && q.path.startsWith(CLAIMS));

const manager = (claim: Obj, name: string): Obj | undefined =>
  (claim.metadata.managedFields as Obj[]).find((m) => m.manager === name);

async function add(conf: Record<string, unknown>) {
  const r = await ctx.sb.run("ADD", conf, { CNI_ARGS: POD_ARGS });
  expect(r.code, r.stdout + r.stderr).toBe(0);
  return r;
}

async function del(conf: Record<string, unknown>) {
  const r = await ctx.sb.run("DEL", conf, { CNI_ARGS: POD_ARGS });
  expect(r.code, r.stdout + r.stderr).toBe(0);
  return r;
}

/** The driver's own entries, written as it writes them: server-side apply with its manager. */
async function driverReports(api: FakeApiServer): Promise<Obj[]> {
  const entries = ["vf-1", "vf-2"].map((device) => ({
    driver: DRIVER,
    pool: "node-1",
    device,
    data: { pfName: "ens1f0", vf: device },
    conditions: [
      {
        type: "Ready",
        status: "True",
        reason: "Prepared",
        message: "",
        lastTransitionTime: "2026-01-01T00:00:00Z",
      },
    ],
  }));
  const body = {
    apiVersion: "resource.k8s.io/v1",
    kind: "ResourceClaim",
    metadata: { name: NET_CLAIM, namespace: "app" },
    status: { devices: entries },
  };
  const { request } = await import("node:https");
  await new Promise<void>((resolve, reject) => {
    const req = request(
      `${api.url}${CLAIMS}/${NET_CLAIM}/status?fieldManager=${DRIVER}`,
      {
        method: "PATCH",
        headers: {
          authorization: `Bearer ${ADMIN_TOKEN}`,
          "content-type": "application/apply-patch+yaml",
        },
        ca: api.caPem,
      },
      (res) => {
        res.resume();
        res.on("end", () =>
          res.statusCode === 200 ? resolve() : reject(new Error(`HTTP ${res.statusCode}`)),
        );
      },
    );
    req.on("error", reject);
    req.end(JSON.stringify(body));
  });
  return entries;
}

describe("D1 claim device status, thin mode", () => {
  it("D1 ADD fills each claimed device's entry (networkData: interface, CIDRs, MAC from the delegate's result; Plexus's condition) in one apply; DEL takes Plexus's part out", async () => {
    const { api, conf } = await apiSetup();
    await add(conf);
    const claim = await getClaim(api, NET_CLAIM);
    expect(claim.status.devices).toEqual([expectedEntry("netdra-a"), expectedEntry("netdra-b")]);
    expect(manager(claim, "plexus")).toMatchObject({ operation: "Apply", subresource: "status" });
    // One server-side apply for the claim, none for the GPU claim (no network device of it).
    const writes = statusWrites(api);
    expect(writes.map((q) => `${q.path}${q.query} ${q.contentType}`)).toEqual([
      `${CLAIMS}/${NET_CLAIM}/status?fieldManager=plexus application/apply-patch+yaml`,
    ]);
    expect((await getClaim(api, GPU_CLAIM)).status.devices).toBeUndefined();
    await del(conf);
    const after = await getClaim(api, NET_CLAIM);
    expect(after.status.devices).toBeUndefined();
    expect(manager(after, "plexus")).toBeUndefined();
    // The allocation and reservation are as the scheduler left them.
    expect(after.status.allocation).toEqual(claim.status.allocation);
    expect(after.status.reservedFor).toEqual(claim.status.reservedFor);
  });

  it("D1 the driver's own data and conditions are untouched: Plexus co-owns the entries, then leaves them as the driver wrote them", async () => {
    const { api, conf } = await apiSetup();
    const driverOwn = await driverReports(api);
    await add(conf);
    const claim = await getClaim(api, NET_CLAIM);
    for (const [i, network] of (["netdra-a", "netdra-b"] as const).entries()) {
      const entry = claim.status.devices[i];
      expect(entry.data).toEqual(driverOwn[i]!.data);
      expect(entry.networkData).toEqual(expectedEntry(network).networkData);
      expect(entry.conditions.map((c: Obj) => c.type)).toEqual(["Ready", CONDITION]);
      expect(entry.conditions[0]).toEqual(driverOwn[i]!.conditions[0]);
    }
    await del(conf);
    const after = await getClaim(api, NET_CLAIM);
    expect(after.status.devices).toEqual(driverOwn);
    expect(manager(after, DRIVER)).toBeDefined();
    expect(manager(after, "plexus")).toBeUndefined();
  });

  it("D1 idempotent under the runtime's retries: a repeated ADD leaves the same entries, and each write is one apply", async () => {
    const { api, conf } = await apiSetup();
    await add(conf);
    const first = (await getClaim(api, NET_CLAIM)).status.devices;
    await add(conf);
    const again = await getClaim(api, NET_CLAIM);
    expect(again.status.devices).toHaveLength(first.length);
    expect(again.status.devices.map((e: Obj) => e.networkData)).toEqual(
      first.map((e: Obj) => e.networkData),
    );
    expect(again.metadata.managedFields.filter((m: Obj) => m.manager === "plexus")).toHaveLength(1);
    await del(conf);
    await del(conf);
    expect((await getClaim(api, NET_CLAIM)).status.devices).toBeUndefined();
  });

  it("D1 a 403 on the write: the ADD still succeeds, with a warning and a ClaimStatusNotWritten Event", async () => {
    const { api, conf } = await apiSetup();
    api.inject(
      { method: "PATCH", path: `${CLAIMS}/${NET_CLAIM}/status` },
      { kind: "status", code: 403, message: "refused by the test" },
    );
    const r = await add(conf);
    expect(
      ctx.sb.invocations().filter((i) => i.command === "ADD" && i.type === "sriov"),
    ).toHaveLength(2);
    expect(r.stderr).toMatch(/device status of ResourceClaim app\/web-net-x7k2p was not written/);
    const event = api.events().find((e) => e.reason === "ClaimStatusNotWritten");
    expect(event).toMatchObject({
      type: "Warning",
      involvedObject: { name: "web", namespace: "app" },
    });
    expect(String(event!.message)).toContain("HTTP 403 Forbidden");
    expect((await getClaim(api, NET_CLAIM)).status.devices).toBeUndefined();
    await del(conf);
  });

  it("D1 Kubernetes 1.36 without the dra-claim-status component: the API server's 422 (granular status authorization) is a warning, not a failed ADD", async () => {
    const { api, conf } = await apiSetup({ deploy: "shipped" });
    const r = await add(conf);
    expect(r.stderr).toContain("changing status.devices requires");
    const event = api.events().find((e) => e.reason === "ClaimStatusNotWritten");
    expect(String(event?.message)).toContain('requires resource="resourceclaims/driver"');
    await del(conf);
  });

  it("D1 the driver reports networkData itself (another manager owns it): Plexus adds its condition alone", async () => {
    const { api, conf } = await apiSetup();
    const { request } = await import("node:https");
    const theirs = {
      apiVersion: "resource.k8s.io/v1",
      kind: "ResourceClaim",
      metadata: { name: NET_CLAIM },
      status: {
        devices: [
          {
            driver: DRIVER,
            pool: "node-1",
            device: "vf-1",
            networkData: { interfaceName: "eth-drv" },
          },
        ],
      },
    };
    await new Promise<void>((resolve, reject) => {
      const req = request(
        `${api.url}${CLAIMS}/${NET_CLAIM}/status?fieldManager=${DRIVER}`,
        {
          method: "PATCH",
          headers: {
            authorization: `Bearer ${ADMIN_TOKEN}`,
            "content-type": "application/apply-patch+yaml",
          },
          ca: api.caPem,
        },
        (res) => {
          res.resume();
          res.on("end", () => resolve());
        },
      );
      req.on("error", reject);
      req.end(JSON.stringify(theirs));
    });
    await add(conf);
    const claim = await getClaim(api, NET_CLAIM);
    expect(claim.status.devices[0].networkData).toEqual({ interfaceName: "eth-drv" });
    expect(claim.status.devices[0].conditions.map((c: Obj) => c.type)).toEqual([CONDITION]);
    expect(claim.status.devices[1].networkData).toBeUndefined();
    expect(statusWrites(api).filter((q) => q.query.includes("fieldManager=plexus"))).toHaveLength(
      2,
    );
    await del(conf);
  });
});

async function startDaemon(kubeconfig: string): Promise<{ socket: string; daemon: ChildProcess }> {
  const socket = join(ctx.sb.root, "run", "plexus.sock");
  const args = ["daemon", "--kubeconfig", kubeconfig, "--node-name", "node-1", "--socket", socket];
  const daemon = spawn(PLEXUS_BIN, [...args, "--pod-resources-socket", ""], {
    cwd: "/",
    stdio: ["ignore", "ignore", "pipe"],
  });
  daemon.stderr!.resume();
  onTestFinished(() => stopDaemon(daemon));
  await expect
    .poll(() => unixSocketStatus(socket, "/readyz"), { timeout: 15_000, interval: 20 })
    .toBe(200);
  return { socket, daemon };
}

/** Stopped before the test ends: the sandbox checks that nothing of the test still runs. */
async function stopDaemon(daemon: ChildProcess): Promise<void> {
  if (daemon.exitCode !== null || daemon.signalCode !== null) return;
  const exited = new Promise((r) => daemon.once("exit", r));
  daemon.kill("SIGTERM");
  await exited;
}

describe("D1 claim device status, daemon mode", () => {
  it("D1 the write goes through the daemon (its client, its credentials): the same entries; DEL clears them", async () => {
    const { api, conf } = await apiSetup();
    const d = await startDaemon(conf.kubeconfig as string);
    const daemonConf = { ...conf, daemonSocket: d.socket, logLevel: "verbose" };
    const r = await add(daemonConf);
    expect(r.stderr).not.toMatch(/thin mode/);
    const claim = await getClaim(api, NET_CLAIM);
    expect(claim.status.devices).toEqual([expectedEntry("netdra-a"), expectedEntry("netdra-b")]);
    const writes = statusWrites(api);
    expect(writes).toHaveLength(1);
    expect(writes[0]!.userAgent).toMatch(/^plexus-daemon/);
    await del(daemonConf);
    expect((await getClaim(api, NET_CLAIM)).status.devices).toBeUndefined();
    expect(statusWrites(api).every((q) => q.userAgent?.startsWith("plexus-daemon"))).toBe(true);
    await stopDaemon(d.daemon);
  });
});

describe("D1 claim device status refused through the daemon", () => {
  it("D1 the API server's refusal comes back as the daemon's answer: one write, none again directly; the ADD succeeds with the warning Event", async () => {
    const { api, conf } = await apiSetup({ deploy: "shipped" });
    const d = await startDaemon(conf.kubeconfig as string);
    const daemonConf = { ...conf, daemonSocket: d.socket };
    const r = await add(daemonConf);
    expect(r.stderr).not.toMatch(/thin mode/);
    expect(r.stderr).toContain("changing status.devices requires");
    const writes = statusWrites(api);
    expect(writes).toHaveLength(1);
    expect(writes[0]!.userAgent).toMatch(/^plexus-daemon/);
    await expect
      .poll(() => api.events().filter((e) => e.reason === "ClaimStatusNotWritten").length)
      .toBe(1);
    await del(daemonConf);
    await stopDaemon(d.daemon);
  });
});

describe("D1 claim device status, manifest directory (fileClusterDir)", () => {
  it("D1 recorded as the claim's status would hold Plexus's part, under status/resourceclaims/; removed on DEL", async () => {
    const dir = join(ctx.sb.root, "cluster");
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, "web.json"), scenarioList(draScenario({ nadConfig })));
    const conf = baseConf({ fileClusterDir: dir });
    await add(conf);
    const file = join(dir, "status", "resourceclaims", `app.${NET_CLAIM}.json`);
    const doc = JSON.parse(readFileSync(file, "utf8")) as Obj;
    expect(doc).toMatchObject({
      apiVersion: "resource.k8s.io/v1",
      kind: "ResourceClaim",
      metadata: { namespace: "app", name: NET_CLAIM },
    });
    expect(doc.status.devices).toEqual([expectedEntry("netdra-a"), expectedEntry("netdra-b")]);
    expect(existsSync(join(dir, "status", "resourceclaims", `app.${GPU_CLAIM}.json`))).toBe(false);
    await del(conf);
    expect(existsSync(file)).toBe(false);
  });
});

describe("D1 claim device status on hot-plug", () => {
  /** `plexus hotplug app/web` as the daemon runs it, over the node's config file. */
  async function hotplug(conf: Record<string, unknown>) {
    const file = join(ctx.sb.root, "plexus.conf");
    writeFileSync(file, JSON.stringify(conf));
    const env = ctx.sb.env("HOTPLUG");
    delete env.CNI_COMMAND;
    delete env.CNI_PATH;
    const args = [
      "hotplug",
      "app/web",
      "--config",
      file,
      "--cni-path",
      ctx.sb.binDir,
      "-o",
      "json",
    ];
    const r = await runPlexus({ args, env, cwd: ctx.sb.root });
    expect(r.code, r.stdout + r.stderr).toBe(0);
    return JSON.parse(r.stdout.trim().split("\n").pop()!) as Obj;
  }

  function annotate(api: FakeApiServer, networks: string) {
    const pod = api.getPod("app", "web")!;
    const annotations = {
      ...(pod.metadata.annotations as Obj),
      "k8s.v1.cni.cncf.io/networks": networks,
    };
    api.addPod({ ...pod, metadata: { ...pod.metadata, annotations } } as never);
  }

  it("D1 a detached network's device loses Plexus's entry, the other keeps its own; attached again, it is back", async () => {
    const { api, conf } = await apiSetup();
    await add(conf);
    annotate(api, "netdra-a");
    const detached = await hotplug(conf);
    expect(detached.detached).toEqual([{ network: "app/netdra-b", ifName: "net2" }]);
    const one = await getClaim(api, NET_CLAIM);
    expect(one.status.devices).toEqual([expectedEntry("netdra-a")]);
    annotate(api, "netdra-a,netdra-b");
    const attached = await hotplug(conf);
    expect(attached.attached).toEqual([{ network: "app/netdra-b", ifName: "net2" }]);
    const both = await getClaim(api, NET_CLAIM);
    expect(both.status.devices).toEqual([expectedEntry("netdra-a"), expectedEntry("netdra-b")]);
    // The entry that stayed kept its time: the attachment's, not the reconcile's.
    expect(both.status.devices[0].conditions[0].lastTransitionTime).toBe(
      one.status.devices[0].conditions[0].lastTransitionTime,
    );
    await del(conf);
    expect((await getClaim(api, NET_CLAIM)).status.devices).toBeUndefined();
  });
});

describe("D2 DRA reads per pod", () => {
  const slicesSeen = (api: FakeApiServer) =>
    api.requests
      .filter((q) => q.path === "/apis/resource.k8s.io/v1/resourceslices")
      .map((q) => q.query);

  it("D2 thin mode: the claims by name (the pod's status names the generated one), the slices of the pod's node and each claim's driver only; the GPU claim is skipped with a warning", async () => {
    const { api, conf } = await apiSetup();
    const r = await add(conf);
    const reads = api.requests.filter(
      (q) => q.method === "GET" && q.path.includes("/resourceclaims"),
    );
    expect(reads.map((q) => `${q.path}${q.query}`).sort()).toEqual(
      [`${CLAIMS}/${GPU_CLAIM}`, `${CLAIMS}/${NET_CLAIM}`].sort(),
    );
    expect(slicesSeen(api).sort()).toEqual(
      [
        "?fieldSelector=spec.nodeName%3Dnode-1%2Cspec.driver%3Dgpu.example.com",
        `?fieldSelector=spec.nodeName%3Dnode-1%2Cspec.driver%3D${DRIVER}`,
      ].sort(),
    );
    expect(r.stderr).toMatch(/ResourceClaim contributes no network device/);
    expect(r.stderr).toContain(GPU_CLAIM);
    await del(conf);
  });

  it("D2 daemon mode: the daemon watches only its node's slices (field selector spec.nodeName) and reads the pod's claims by name, never a list", async () => {
    const { api, conf } = await apiSetup();
    const d = await startDaemon(conf.kubeconfig as string);
    await add({ ...conf, daemonSocket: d.socket });
    const slices = slicesSeen(api);
    expect(slices.length).toBeGreaterThan(0);
    for (const q of slices) expect(q).toContain("fieldSelector=spec.nodeName%3Dnode-1");
    const claimReads = api.requests.filter(
      (q) => q.path.includes("/resourceclaims") && q.method === "GET",
    );
    expect(
      claimReads.every((q) => q.path.startsWith(`${CLAIMS}/`) && !q.query.includes("watch")),
    ).toBe(true);
    await del({ ...conf, daemonSocket: d.socket });
    await stopDaemon(d.daemon);
  });
});
