/**
 * Device-plugin networks through dist/plexus (M10): a fake kubelet pod-resources server (grpc-js
 * on a unix socket, test/support/fake-pod-resources.ts), a fake API server holding the pod and its
 * NADs (one with `k8s.v1.cni.cncf.io/resourceName`), and the fixture plugin as the device delegate
 * (it logs the deviceID and runtimeConfig it got and rewrites the device-info file).
 */
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import {
  existsSync,
  lstatSync,
  mkdirSync,
  readFileSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";
import { describe, expect, it, onTestFinished } from "vitest";
import { type FakeApiServer, startFakeApiServer, writeKubeconfig } from "../support/fake-apiserver";
import {
  type FakePodResources,
  podWithDevices,
  startFakePodResources,
} from "../support/fake-pod-resources";
import { cniError, PLEXUS_BIN, runPlexus, unixSocketStatus } from "../support/plexus-bin";
import { useSandbox } from "./use-sandbox";

const ctx = useSandbox();
const STATUS = "k8s.v1.cni.cncf.io/network-status";
const NETWORKS = "k8s.v1.cni.cncf.io/networks";
const RESOURCE = "intel.com/sriov_netdevice";
const POD_ARGS = "IgnoreUnknown=1;K8S_POD_NAMESPACE=app;K8S_POD_NAME=web;K8S_POD_UID=uid-web";
const VF1 = "0000:3b:02.1";
const VF2 = "0000:3b:02.2";
/** A VF the pod was never allocated. */
const OTHER = "0000:af:00.7";
const stdinOf = (invocation: { stdin: unknown }) => invocation.stdin as Record<string, unknown>;

interface Setup {
  api: FakeApiServer;
  kubelet: FakePodResources;
  conf: Record<string, unknown>;
  devinfo: string;
  socket: string;
}

async function setup(options: {
  networks: string;
  devices?: string[];
  noKubelet?: boolean;
  behaviours?: Record<string, unknown>;
  /** More annotations of the NAD sriov-a (beside its resourceName). */
  nadAnnotations?: Record<string, string>;
  /** The pod's devices per resource (default: `devices` of the NAD's resource). */
  pools?: Record<string, string[]>;
}): Promise<Setup> {
  const { sb } = ctx;
  const api = await startFakeApiServer();
  onTestFinished(() => api.close());
  api.addPod({
    metadata: {
      namespace: "app",
      name: "web",
      uid: "uid-web",
      annotations: { [NETWORKS]: options.networks },
    },
    spec: { nodeName: "node-1" },
  });
  const sriov = sb.delegate("sriov-a", {
    type: "sriov",
    behaviours: options.behaviours ?? {},
    extra: { capabilities: { deviceID: true, CNIDeviceInfoFile: true } },
  });
  api.addNad({
    metadata: {
      namespace: "app",
      name: "sriov-a",
      annotations: { "k8s.v1.cni.cncf.io/resourceName": RESOURCE, ...options.nadAnnotations },
    },
    spec: { config: JSON.stringify(sriov) },
  });
  const socket = join(sb.root, "kubelet.sock");
  const kubelet = await startFakePodResources(
    socket,
    options.noKubelet
      ? []
      : [
          podWithDevices("app", "web", {
            app: options.pools ?? { [RESOURCE]: options.devices ?? [VF1] },
          }),
        ],
  );
  onTestFinished(() => kubelet.close());
  const devinfo = join(sb.root, "devinfo");
  const conf = sb.config([sb.delegate("net-a")], {
    kubeconfig: writeKubeconfig(api, { dir: sb.root }),
    apiRequestTimeoutSeconds: 2,
    podResourcesSocket: socket,
    podResourcesTimeoutSeconds: 1,
    deviceInfoDir: devinfo,
  });
  return { api, kubelet, conf, devinfo, socket };
}

function dpFile(devinfo: string, deviceID: string, text: string): void {
  mkdirSync(join(devinfo, "dp"), { recursive: true });
  writeFileSync(join(devinfo, "dp", `intel.com-sriov_netdevice-${deviceID}-device.json`), text);
}

const status = (api: FakeApiServer) =>
  JSON.parse(
    (api.getPod("app", "web")!.metadata.annotations as Record<string, string>)[STATUS]!,
  ) as Array<Record<string, unknown>>;
const deviceAdds = () =>
  ctx.sb.invocations().filter((i) => i.command === "ADD" && i.network === "sriov-a");
const PCI = { type: "pci", version: "1.1.0", pci: { "pci-address": VF1 } };

describe("M10 device-plugin networks (dist/plexus, fake kubelet)", () => {
  it("M10 one device network: deviceID everywhere, device-info copied before the delegate and read back into network-status; DEL removes the copy and asks kubelet nothing", async () => {
    const s = await setup({
      networks: "sriov-a",
      behaviours: { ADD: { deviceInfo: { "rdma-device": "mlx5_3" } } },
    });
    dpFile(s.devinfo, VF1, JSON.stringify(PCI));
    const r = await ctx.sb.run("ADD", s.conf, { CNI_ARGS: POD_ARGS });
    expect(r.code, r.stdout + r.stderr).toBe(0);
    const [add] = deviceAdds();
    const infoFile = join(s.devinfo, "cni", "sriov-a-ctr1_net1");
    const stdin = add!.stdin as Record<string, unknown>;
    expect(stdin.deviceID).toBe(VF1);
    expect(stdin.runtimeConfig).toEqual({ deviceID: VF1, CNIDeviceInfoFile: infoFile });
    expect(JSON.parse(add!.deviceInfoSeen as string)).toEqual(PCI);
    expect(status(s.api)[1]).toMatchObject({
      name: "app/sriov-a",
      interface: "net1",
      "device-info": { ...PCI, "rdma-device": "mlx5_3" },
    });
    expect(s.kubelet.calls).toEqual(["Get"]);

    const d = await ctx.sb.run("DEL", s.conf, { CNI_ARGS: POD_ARGS });
    expect(d.code, d.stdout + d.stderr).toBe(0);
    const del = ctx.sb.invocations().find((i) => i.command === "DEL" && i.network === "sriov-a")!;
    expect((del.stdin as Record<string, unknown>).deviceID).toBe(VF1);
    expect(existsSync(infoFile)).toBe(false);
    expect(s.kubelet.calls).toEqual(["Get"]);
  });

  it("M10 B78 three networks of one resource: a pod's allocated deviceID takes that one", async () => {
    const VF3 = "0000:3b:02.3";
    const plain = { name: "sriov-a" };
    const networks = JSON.stringify([plain, { ...plain, deviceID: VF2 }, plain]);
    const s = await setup({ networks, devices: [VF3, VF2, VF1] });
    const r = await ctx.sb.run("ADD", s.conf, { CNI_ARGS: POD_ARGS });
    expect(r.code, r.stdout + r.stderr).toBe(0);
    const seen = deviceAdds().map((i) => [i.cniEnv.CNI_IFNAME, stdinOf(i).deviceID]);
    expect(seen).toEqual([
      ["net1", VF1],
      ["net2", VF2],
      ["net3", VF3],
    ]);
  });

  it("M10 B78 a pod's deviceID kubelet did not allocate: 7 naming pod, network, both IDs", async () => {
    const s = await setup({ networks: JSON.stringify([{ name: "sriov-a", deviceID: OTHER }]) });
    const err = cniError(await ctx.sb.run("ADD", s.conf, { CNI_ARGS: POD_ARGS }));
    expect(err.code).toBe(7);
    expect(err.msg).toContain(
      `pod app/web: network app/sriov-a (resource ${RESOURCE}): ` +
        `the pod's selection asks for deviceID "${OTHER}", ` +
        `but the devices allocated to the pod for ${RESOURCE} are ${VF1} (kubelet); ` +
        "the allocated device wins",
    );
    // Before any delegate, record or device-info copy.
    expect(ctx.sb.invocations()).toEqual([]);
    expect(ctx.sb.recordFiles()).toEqual([]);
    expect(existsSync(join(s.devinfo, "cni"))).toBe(false);
  });

  it("M10 B78 a device ID from kubelet with a path in it: 7 naming resource and value", async () => {
    const s = await setup({ networks: "sriov-a", devices: ["../../../sys/bus/pci"] });
    const err = cniError(await ctx.sb.run("ADD", s.conf, { CNI_ARGS: POD_ARGS }));
    expect(err.code).toBe(7);
    expect(err.msg).toContain(
      `resource ${RESOURCE}: kubelet's pod-resources API lists device "../../../sys/bus/pci" ` +
        "for the pod, which is not a valid device ID: has '..'",
    );
    expect(ctx.sb.invocations()).toEqual([]);
    expect(ctx.sb.recordFiles()).toEqual([]);
  });

  it("M10 B78 a pod's deviceID with a control character: 7 naming item, key and value", async () => {
    const deviceID = `${VF1}\n`;
    const s = await setup({ networks: JSON.stringify([{ name: "sriov-a", deviceID }]) });
    const err = cniError(await ctx.sb.run("ADD", s.conf, { CNI_ARGS: POD_ARGS }));
    expect(err.code).toBe(7);
    const shown = JSON.stringify(deviceID);
    const why = "is not a valid device ID: has U+000A at position 13";
    expect(err.msg).toContain(`key "deviceID" ${shown} ${why}`);
    expect(ctx.sb.invocations()).toEqual([]);
    expect(s.kubelet.calls).toEqual([]);
  });

  it("M10 B78 N7.4 under namespaceIsolation a deviceID with no resourceName: 7, or a key", async () => {
    const s = await setup({ networks: JSON.stringify([{ name: "hw", deviceID: VF1 }]) });
    const extra = { capabilities: { deviceID: true } };
    const config = JSON.stringify(ctx.sb.delegate("hw", { type: "sriov", extra }));
    s.api.addNad({ metadata: { namespace: "app", name: "hw" }, spec: { config } });
    const isolated = { ...s.conf, namespaceIsolation: true };
    const err = cniError(await ctx.sb.run("ADD", isolated, { CNI_ARGS: POD_ARGS }));
    expect(err.code).toBe(7);
    expect(err.msg).toMatch(/^pod app\/web: network app\/hw: the pod's selection asks for /);
    expect(err.msg).toContain('"allowUnallocatedDeviceIDs": true');
    expect(ctx.sb.invocations()).toEqual([]);

    const allowed = { ...isolated, allowUnallocatedDeviceIDs: true };
    const r = await ctx.sb.run("ADD", allowed, { CNI_ARGS: POD_ARGS });
    expect(r.code, r.stdout + r.stderr).toBe(0);
    const add = ctx.sb.invocations().find((i) => i.command === "ADD" && i.network === "hw")!;
    expect(stdinOf(add).runtimeConfig).toEqual({ deviceID: VF1 });
    expect(s.kubelet.calls).toEqual([]);
  });

  it("M10 more networks than devices fails with 7 naming the resource and both counts, before any delegate runs", async () => {
    const s = await setup({ networks: "sriov-a,sriov-a" });
    const err = cniError(await ctx.sb.run("ADD", s.conf, { CNI_ARGS: POD_ARGS }));
    expect(err.code).toBe(7);
    expect(err.msg).toMatch(
      /resource intel\.com\/sriov_netdevice: 2 network\(s\).*kubelet allocated 1/,
    );
    expect(ctx.sb.invocations()).toEqual([]);
  });

  it("M10 Get unimplemented (kubelet < 1.27): List answers, the node's whole list (over 64 KiB: many HTTP/2 frames, flow control)", async () => {
    const s = await setup({ networks: "sriov-a" });
    s.kubelet.mode = "get-unimplemented";
    // Other pods first: the list is bigger than HTTP/2's initial 64 KiB window and spans many
    // frames.
    const others = Array.from({ length: 2000 }, (_, i) =>
      podWithDevices("other", `pod-${i}`, {
        c: { [RESOURCE]: [`0000:af:${String(i).padStart(4, "0")}.1`] },
      }),
    );
    s.kubelet.pods.unshift(...others);
    const r = await ctx.sb.run("ADD", s.conf, { CNI_ARGS: POD_ARGS });
    expect(r.code, r.stdout + r.stderr).toBe(0);
    expect(s.kubelet.calls).toEqual(["Get", "List"]);
    expect((deviceAdds()[0]!.stdin as Record<string, unknown>).deviceID).toBe(VF1);
  });

  it.each([
    ["missing", /cannot connect/],
    ["error", /kubelet answered INTERNAL: fake kubelet failure/],
    ["hang", /no answer within 1000 ms/],
  ])(
    "M10 a pod-resources socket %s fails the ADD with 11 naming the socket and the resource",
    async (mode, why) => {
      const s = await setup({ networks: "sriov-a" });
      if (mode === "missing") await s.kubelet.close();
      else s.kubelet.mode = mode as "error" | "hang";
      const r = await ctx.sb.run("ADD", s.conf, { CNI_ARGS: POD_ARGS });
      const err = cniError(r);
      expect(err.code).toBe(11);
      expect(err.msg).toContain(s.socket);
      expect(err.msg).toContain(RESOURCE);
      expect(err.msg).toMatch(why);
      expect(r.durationMs).toBeLessThan(5000);
      expect(ctx.sb.invocations()).toEqual([]);
    },
  );

  it("M10 no device plugin file: ADD works, no device-info in network-status", async () => {
    const s = await setup({ networks: "sriov-a" });
    const r = await ctx.sb.run("ADD", s.conf, { CNI_ARGS: POD_ARGS });
    expect(r.code, r.stdout + r.stderr).toBe(0);
    expect(deviceAdds()[0]!.deviceInfoSeen).toBeNull();
    expect(status(s.api)[1]).not.toHaveProperty("device-info");
  });

  it("M10 a malformed device plugin file: ADD goes on without device-info, with a warning", async () => {
    const s = await setup({ networks: "sriov-a" });
    dpFile(s.devinfo, VF1, "{not json");
    const logFile = join(ctx.sb.root, "plexus.log");
    const r = await ctx.sb.run(
      "ADD",
      { ...s.conf, logFile, logLevel: "verbose", logToStderr: false },
      { CNI_ARGS: POD_ARGS },
    );
    expect(r.code, r.stdout + r.stderr).toBe(0);
    expect(deviceAdds()[0]!.deviceInfoSeen).toBeNull();
    expect(status(s.api)[1]).not.toHaveProperty("device-info");
    expect(readFileSync(logFile, "utf8")).toMatch(
      /"level":40.*device plugin's device-info file ignored: malformed/,
    );
  });

  it("B72 a FIFO at the device plugin's device-info path does not hang the ADD: it goes on without device-info", async () => {
    const s = await setup({ networks: "sriov-a" });
    mkdirSync(join(s.devinfo, "dp"), { recursive: true });
    execFileSync("mkfifo", [join(s.devinfo, "dp", `intel.com-sriov_netdevice-${VF1}-device.json`)]);
    const r = await ctx.sb.run("ADD", s.conf, { CNI_ARGS: POD_ARGS });
    expect(r.code, r.stdout + r.stderr).toBe(0);
    expect(r.durationMs).toBeLessThan(5000);
    expect(deviceAdds()[0]!.deviceInfoSeen).toBeNull();
    expect(status(s.api)[1]).not.toHaveProperty("device-info");
  });

  it("B73 a symlink at the device plugin's path is not followed: a root-only file's contents never reach network-status", async () => {
    const s = await setup({ networks: "sriov-a" });
    const secret = join(ctx.sb.root, "secret.json");
    writeFileSync(secret, JSON.stringify({ type: "pci", secret: "root-only" }), { mode: 0o600 });
    mkdirSync(join(s.devinfo, "dp"), { recursive: true });
    symlinkSync(secret, join(s.devinfo, "dp", `intel.com-sriov_netdevice-${VF1}-device.json`));
    const r = await ctx.sb.run("ADD", s.conf, { CNI_ARGS: POD_ARGS });
    expect(r.code, r.stdout + r.stderr).toBe(0);
    expect(deviceAdds()[0]!.deviceInfoSeen).toBeNull();
    expect(JSON.stringify(status(s.api))).not.toContain("root-only");
  });

  it("B73 a symlink planted at the device-info copy's path is replaced, not written through", async () => {
    const s = await setup({ networks: "sriov-a" });
    dpFile(s.devinfo, VF1, JSON.stringify(PCI));
    const victim = join(ctx.sb.root, "victim");
    writeFileSync(victim, "untouched");
    const infoFile = join(s.devinfo, "cni", "sriov-a-ctr1_net1");
    mkdirSync(join(s.devinfo, "cni"), { recursive: true });
    symlinkSync(victim, infoFile);
    const r = await ctx.sb.run("ADD", s.conf, { CNI_ARGS: POD_ARGS });
    expect(r.code, r.stdout + r.stderr).toBe(0);
    expect(readFileSync(victim, "utf8")).toBe("untouched");
    expect(lstatSync(infoFile).isFile()).toBe(true);
    expect(JSON.parse(deviceAdds()[0]!.deviceInfoSeen as string)).toEqual(PCI);
  });

  it("M10 a delegate leaving a malformed device-info file: ADD succeeds without device-info", async () => {
    const s = await setup({ networks: "sriov-a", behaviours: { ADD: { deviceInfoText: "[]" } } });
    dpFile(s.devinfo, VF1, JSON.stringify(PCI));
    const r = await ctx.sb.run("ADD", s.conf, { CNI_ARGS: POD_ARGS });
    expect(r.code, r.stdout + r.stderr).toBe(0);
    expect(status(s.api)[1]).not.toHaveProperty("device-info");
  });
});

async function stopDaemon(daemon: ChildProcess): Promise<void> {
  if (daemon.exitCode !== null || daemon.signalCode !== null) return;
  const exited = new Promise((r) => daemon.once("exit", r));
  daemon.kill("SIGTERM");
  await exited;
}

async function startDaemon(
  setUp: Setup,
  podResourcesSocket: string,
): Promise<{ socket: string; daemon: ChildProcess; stderr: () => string }> {
  const socket = join(ctx.sb.root, "run", "plexus.sock");
  const kubeconfig = setUp.conf.kubeconfig as string;
  const daemon = spawn(
    PLEXUS_BIN,
    [
      "daemon",
      "--kubeconfig",
      kubeconfig,
      "--node-name",
      "node-1",
      "--socket",
      socket,
      "--pod-resources-socket",
      podResourcesSocket,
    ],
    {
      cwd: "/",
      stdio: ["ignore", "ignore", "pipe"],
    },
  );
  let stderr = "";
  daemon.stderr!.on("data", (c: Buffer) => (stderr += c.toString()));
  onTestFinished(async () => {
    if (daemon.exitCode === null && daemon.signalCode === null) {
      daemon.kill("SIGKILL");
      await new Promise((r) => daemon.once("exit", r));
    }
  });
  await expect
    .poll(() => unixSocketStatus(socket, "/readyz"), { timeout: 15_000, interval: 20 })
    .toBe(200);
  return { socket, daemon, stderr: () => stderr };
}

describe("M19 resourceName per attachment (dist/plexus, fake kubelet)", () => {
  const FAST = "intel.com/sriov_fast";
  const ALLOWED = "k8s.v1.cni.cncf.io/allowedResourceNames";
  const pools = { [RESOURCE]: [VF1], [FAST]: [VF2] };
  const networks = (...selections: object[]) => JSON.stringify(selections);

  it("M19 a pick the NAD lists takes that pool's device; DEL and explain show it", async () => {
    const s = await setup({
      networks: networks({ name: "sriov-a", resourceName: FAST }, { name: "sriov-a" }),
      nadAnnotations: { [ALLOWED]: `${RESOURCE},${FAST}` },
      pools,
    });
    const r = await ctx.sb.run("ADD", s.conf, { CNI_ARGS: POD_ARGS });
    expect(r.code, r.stdout + r.stderr).toBe(0);
    const seen = deviceAdds().map((a) => [a.cniEnv.CNI_IFNAME, stdinOf(a).deviceID]);
    expect(seen).toEqual([
      ["net1", VF2],
      ["net2", VF1],
    ]);
    expect(stdinOf(deviceAdds()[0]!).runtimeConfig).toMatchObject({ deviceID: VF2 });
    expect(s.kubelet.calls).toEqual(["Get"]);

    const configFile = join(ctx.sb.root, "plexus.json");
    writeFileSync(configFile, JSON.stringify(s.conf));
    const explained = await runPlexus({
      cwd: ctx.sb.root,
      env: { PATH: process.env.PATH },
      args: ["explain", "app/web", "--config", configFile, "--cni-path", ctx.sb.binDir],
    });
    expect(explained.code, explained.stderr).toBe(0);
    expect(explained.stdout).toContain(
      `resource: ${FAST} (the pod's selection picks it ("resourceName"); the NAD offers it)`,
    );
    expect(explained.stdout).toContain(`device: ${VF2} of ${FAST} (allocated by kubelet)`);
    expect(explained.stdout).toContain(`resource: ${RESOURCE} (the NAD's resourceName)`);

    const d = await ctx.sb.run("DEL", s.conf, { CNI_ARGS: POD_ARGS });
    expect(d.code, d.stdout + d.stderr).toBe(0);
    const dels = ctx.sb.invocations().filter((i) => i.command === "DEL" && i.network === "sriov-a");
    expect(dels.map((i) => [i.cniEnv.CNI_IFNAME, stdinOf(i).deviceID]).sort()).toEqual([
      ["net1", VF2],
      ["net2", VF1],
    ]);
    // One Get for the ADD, one for explain; DEL asks kubelet nothing (the record kept both).
    expect(s.kubelet.calls).toEqual(["Get", "Get"]);
  });

  it("M19 a name the NAD does not list: 7 naming both; kubelet not asked", async () => {
    const s = await setup({
      networks: networks({ name: "sriov-a", resourceName: "intel.com/other" }),
      nadAnnotations: { [ALLOWED]: `${RESOURCE},${FAST}` },
      pools,
    });
    const err = cniError(await ctx.sb.run("ADD", s.conf, { CNI_ARGS: POD_ARGS }));
    expect(err.code).toBe(7);
    expect(err.msg).toMatch(/^pod app\/web: network app\/sriov-a: the pod's selection asks for /);
    expect(err.msg).toContain(
      `resourceName "intel.com/other", but the NAD does not offer it: its ${ALLOWED} lists ` +
        `only "${RESOURCE}", "${FAST}"`,
    );
    expect(ctx.sb.invocations().filter((i) => i.command === "ADD")).toEqual([]);
    expect(s.kubelet.calls).toEqual([]);
    expect(ctx.sb.recordFiles()).toEqual([]);
  });

  it("M19 a name that contradicts the NAD's own resourceName: 7 naming both", async () => {
    const s = await setup({
      networks: networks({ name: "sriov-a", resourceName: FAST }),
      pools,
    });
    const err = cniError(await ctx.sb.run("ADD", s.conf, { CNI_ARGS: POD_ARGS }));
    expect(err.code).toBe(7);
    expect(err.msg).toContain(
      `asks for resourceName "${FAST}", but the NAD does not offer it: it has no ${ALLOWED} ` +
        `and its own k8s.v1.cni.cncf.io/resourceName is "${RESOURCE}"`,
    );
    expect(ctx.sb.invocations().filter((i) => i.command === "ADD")).toEqual([]);
    expect(s.kubelet.calls).toEqual([]);
  });
});

describe("M10 the daemon answers pod-resources queries (one channel to kubelet)", () => {
  it("M10 ADDs ask the daemon, which answers from its one channel to kubelet; the CNI process does not fall back", async () => {
    const s = await setup({ networks: "sriov-a" });
    const d = await startDaemon(s, s.socket);
    const conf = { ...s.conf, daemonSocket: d.socket };
    for (const id of ["ctr1", "ctr2"]) {
      const r = await ctx.sb.run(
        "ADD",
        { ...conf, logLevel: "verbose" },
        { CNI_ARGS: POD_ARGS, CNI_CONTAINERID: id },
      );
      expect(r.code, r.stdout + r.stderr).toBe(0);
      expect(r.stderr).not.toMatch(/asking kubelet directly/);
    }
    expect(deviceAdds().map((i) => (i.stdin as Record<string, unknown>).deviceID)).toEqual([
      VF1,
      VF1,
    ]);
    // Both queries came through the daemon: the CNI processes never fell back (no warning above).
    expect(s.kubelet.calls).toEqual(["Get", "Get"]);
    await stopDaemon(d.daemon);
  });

  it("M10 a daemon that cannot answer (its pod-resources route off): the CNI process asks kubelet itself, with a warning", async () => {
    const s = await setup({ networks: "sriov-a" });
    const d = await startDaemon(s, "");
    const r = await ctx.sb.run(
      "ADD",
      { ...s.conf, daemonSocket: d.socket, logLevel: "verbose" },
      { CNI_ARGS: POD_ARGS },
    );
    expect(r.code, r.stdout + r.stderr).toBe(0);
    expect(r.stderr).toMatch(/asking kubelet directly/);
    expect(s.kubelet.calls).toEqual(["Get"]);
    await stopDaemon(d.daemon);
  });
});
