/**
 * Device-plugin networks in the planner (M10, src/planning/devices.ts) over a FakeKube and a
 * fake pod-resources lookup: which device each attachment gets, how the delegate sees it, and the
 * device-info files (src/npwg/device-info.ts) in a temp dir. The gRPC client and the executable
 * are tested in test/integration/devices.test.ts.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it, onTestFinished } from "vitest";
import { parseEnv, type CniRequest } from "../../../src/cni/env";
import { parsePlexusConf, type PlexusConf } from "../../../src/config/plugin-conf";
import { silentLogger } from "../../../src/log/logger";
import { eagerLoaders } from "../../../src/ops/loaders";
import { cniDeviceInfoPath, dpDeviceInfoPath, readDeviceInfo } from "../../../src/npwg/device-info";
import {
  deviceInfoAfterAdd,
  prepareDeviceInfo,
  removeDeviceInfo,
} from "../../../src/nodestate/device-info";
import type { PodDevicesLookup } from "../../../src/planning/devices";
import { cmdAdd } from "../../../src/orchestrate/add";
import { cmdHotplug } from "../../../src/orchestrate/hotplug";
import { planForPod } from "../../../src/planning/pod-plan";
import type { Attachment } from "../../../src/nodestate/record";
import { FakeKube } from "../../fakes/fake-kube";
import { FakeExec, fakeDeps, recordingLogger } from "../../fakes/fake-exec";

const NETWORKS = "k8s.v1.cni.cncf.io/networks";
const SRIOV = "intel.com/sriov_netdevice";
const RESOURCE = { "k8s.v1.cni.cncf.io/resourceName": SRIOV };
const [VF1, VF2, OTHER] = ["0000:3b:02.1", "0000:3b:02.2", "0000:af:00.7"];
/** The networks annotation in JSON form. */
const picks = (...selections: object[]) => ({ [NETWORKS]: JSON.stringify(selections) });
/** The deviceID at the top level of an attachment's first plugin (where sriov-cni reads it). */
const top = (attachment: Attachment) => attachment.conf.plugins[0]!.deviceID;
const log = silentLogger();
let dir: string;
let kube: FakeKube;
let lookups: Array<{ namespace: string; name: string; resourceNames: string[] }>;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "plx-dev-"));
  mkdirSync(join(dir, "conf"));
  writeFileSync(
    join(dir, "conf", "10-cbr0.conflist"),
    JSON.stringify({ cniVersion: "1.0.0", name: "cbr0", plugins: [{ type: "bridge" }] }),
  );
  kube = new FakeKube();
  lookups = [];
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

function req(): CniRequest {
  return parseEnv({
    CNI_COMMAND: "ADD",
    CNI_CONTAINERID: "ctr1",
    CNI_NETNS: "/proc/self/ns/net",
    CNI_IFNAME: "eth0",
    CNI_PATH: "/opt/cni/bin",
    CNI_ARGS: "K8S_POD_NAMESPACE=app;K8S_POD_NAME=web",
  });
}
function conf(): PlexusConf {
  return parsePlexusConf({
    cniVersion: "1.0.0",
    name: "plexus",
    clusterNetwork: "cbr0",
    confDir: join(dir, "conf"),
    deviceInfoDir: join(dir, "devinfo"),
  });
}
const fakeLookup =
  (devices: Record<string, string[]>): PodDevicesLookup =>
  async (q) => {
    lookups.push(q);
    return new Map(Object.entries(devices));
  };
const plan = (podDevices: PodDevicesLookup) =>
  planForPod(req(), conf(), { kube: async () => kube, log, podDevices, load: eagerLoaders });
const sriov = (name: string) => ({
  cniVersion: "1.0.0",
  name,
  plugins: [
    { type: "sriov", capabilities: { deviceID: true, CNIDeviceInfoFile: true } },
    { type: "tuning" },
  ],
});

describe("assignDevices (M10)", () => {
  it("M10 a NAD with a resourceName gets the pod's device: deviceID in every plugin, runtimeConfig values, the record keeps it", async () => {
    kube
      .addPod("app", "web", { [NETWORKS]: "sriov-a" })
      .addNad("app", "sriov-a", sriov("sriov-a"), RESOURCE);
    const att = (await plan(fakeLookup({ "intel.com/sriov_netdevice": ["0000:3b:02.1"] })))
      .attachments[1]!;
    expect(att.conf.plugins.map((p) => p.deviceID)).toEqual(["0000:3b:02.1", "0000:3b:02.1"]);
    const infoFile = join(dir, "devinfo", "cni", "sriov-a-ctr1_net1");
    expect(att.capabilityArgs).toEqual({ deviceID: "0000:3b:02.1", CNIDeviceInfoFile: infoFile });
    expect(att.device).toEqual({
      resourceName: "intel.com/sriov_netdevice",
      deviceID: "0000:3b:02.1",
      from: "kubelet",
      infoFile,
    });
    expect(lookups).toEqual([
      { namespace: "app", name: "web", resourceNames: ["intel.com/sriov_netdevice"] },
    ]);
  });

  it("M10 two networks of one resource take two different devices, in order", async () => {
    kube
      .addPod("app", "web", { [NETWORKS]: "sriov-a,sriov-a" })
      .addNad("app", "sriov-a", sriov("sriov-a"), RESOURCE);
    const p = await plan(
      fakeLookup({ "intel.com/sriov_netdevice": ["0000:3b:02.1", "0000:3b:02.2"] }),
    );
    expect(p.attachments.map((a) => a.device?.deviceID)).toEqual([
      undefined,
      "0000:3b:02.1",
      "0000:3b:02.2",
    ]);
  });

  it("M10 the allocation wins: a pod's deviceID among its devices takes that one", async () => {
    kube.addPod("app", "web", picks({ name: "sriov-a" }, { name: "sriov-a", deviceID: VF1 }));
    kube.addNad("app", "sriov-a", sriov("sriov-a"), RESOURCE);
    const p = await plan(fakeLookup({ [SRIOV]: [VF1, VF2] }));
    const seen = p.attachments.slice(1).map((a) => [a.device?.deviceID, a.device?.from, top(a)]);
    expect(seen).toEqual([
      [VF2, "kubelet", VF2],
      [VF1, "pod", VF1],
    ]);
    expect(p.attachments[2]!.capabilityArgs?.deviceID).toBe(VF1);
  });

  it("M10 a pod's deviceID not allocated to it: 7 naming pod, network, both IDs", async () => {
    kube.addPod("app", "web", picks({ name: "sriov-a", deviceID: OTHER }));
    kube.addNad("app", "sriov-a", sriov("sriov-a"), RESOURCE);
    const err = await plan(fakeLookup({ [SRIOV]: [VF1] })).then(
      () => expect.fail("expected a failure"),
      (e: unknown) => e as { code: number; message: string },
    );
    expect(err.code).toBe(7);
    const where = `pod app/web: network app/sriov-a (resource ${SRIOV}): `;
    expect(err.message.startsWith(where)).toBe(true);
    expect(err.message).toContain(`asks for deviceID "${OTHER}"`);
    expect(err.message).toContain(`are ${VF1} (kubelet)`);
    expect(lookups).toEqual([{ namespace: "app", name: "web", resourceNames: [SRIOV] }]);
  });

  it("M10 two selections naming one allocated device: 7 naming the first", async () => {
    const one = { name: "sriov-a", deviceID: VF1 };
    kube.addPod("app", "web", picks(one, one));
    kube.addNad("app", "sriov-a", sriov("sriov-a"), RESOURCE);
    await expect(plan(fakeLookup({ [SRIOV]: [VF1, VF2] }))).rejects.toMatchObject({
      code: 7,
      message: expect.stringContaining("the network app/sriov-a on net1 already takes it"),
    });
  });

  it("M10 a device ID from kubelet the device rule refuses: 7 naming it", async () => {
    kube.addPod("app", "web", { [NETWORKS]: "sriov-a" });
    kube.addNad("app", "sriov-a", sriov("sriov-a"), RESOURCE);
    await expect(plan(fakeLookup({ [SRIOV]: ["../../etc"] }))).rejects.toMatchObject({
      code: 7,
      message: expect.stringContaining('lists device "../../etc" for the pod, which is not'),
    });
  });

  it("M10 more networks than devices fails with 7 naming the resource and both counts", async () => {
    kube
      .addPod("app", "web", { [NETWORKS]: "sriov-a,sriov-a" })
      .addNad("app", "sriov-a", sriov("sriov-a"), RESOURCE);
    const err = await plan(fakeLookup({ "intel.com/sriov_netdevice": ["0000:3b:02.1"] })).then(
      () => expect.fail("expected a failure"),
      (e: unknown) => e as { code: number; message: string },
    );
    expect(err.code).toBe(7);
    expect(err.message).toMatch(
      /^pod app\/web: resource intel\.com\/sriov_netdevice: 2 network\(s\) .* kubelet allocated 1 to the pod/,
    );
  });

  it("M10 a plain ADD never asks for devices", async () => {
    kube
      .addPod("app", "web", { [NETWORKS]: "br" })
      .addNad("app", "br", { cniVersion: "1.0.0", name: "br", type: "bridge" });
    const p = await plan(fakeLookup({}));
    expect(lookups).toEqual([]);
    expect(
      p.attachments.every(
        (a) => !a.device && a.conf.plugins.every((pl) => pl.deviceID === undefined),
      ),
    ).toBe(true);
  });

  it("M10 a lookup failure fails the plan with its code, naming the pod", async () => {
    kube
      .addPod("app", "web", { [NETWORKS]: "sriov-a" })
      .addNad("app", "sriov-a", sriov("sriov-a"), RESOURCE);
    const { CniError } = await import("../../../src/cni/errors");
    const err = await plan(async () => {
      throw new CniError(11, "kubelet socket gone");
    }).then(
      () => expect.fail("expected a failure"),
      (e: unknown) => e as { code: number; message: string },
    );
    expect(err).toMatchObject({ code: 11, message: "pod app/web: kubelet socket gone" });
  });
});

describe("device-info files (M10, NPWG device-info)", () => {
  const base = () => join(dir, "devinfo");
  const att = (infoFile: string | undefined) => ({
    network: "app/sriov-a",
    ifName: "net1",
    isDefault: false,
    conf: { cniVersion: "1.0.0", name: "sriov-a", plugins: [{ type: "sriov" }] },
    device: {
      resourceName: "intel.com/sriov_netdevice",
      deviceID: "0000:3b:02.1",
      from: "kubelet" as const,
      ...(infoFile ? { infoFile } : {}),
    },
  });

  it("M10 paths are built from checked names only", () => {
    expect(dpDeviceInfoPath("/d", "intel.com/sriov_netdevice", "0000:3b:02.1")).toBe(
      "/d/dp/intel.com-sriov_netdevice-0000:3b:02.1-device.json",
    );
    expect(dpDeviceInfoPath("/d", "intel.com/../x", "1")).toBeUndefined();
    expect(dpDeviceInfoPath("/d", "intel.com/x", "../1")).toBeUndefined();
    expect(dpDeviceInfoPath("/d", "noslash", "1")).toBeUndefined();
    expect(cniDeviceInfoPath("/d", { network: "n", containerId: "c", ifName: "net1" })).toBe(
      "/d/cni/n-c_net1",
    );
    expect(
      cniDeviceInfoPath("/d", { network: "..", containerId: "c", ifName: "net1" }),
    ).toBeUndefined();
  });

  it("M10 the device plugin's file is copied before the delegate, read back after, removed on DEL", () => {
    const dp = dpDeviceInfoPath(base(), "intel.com/sriov_netdevice", "0000:3b:02.1")!;
    mkdirSync(join(base(), "dp"), { recursive: true });
    writeFileSync(
      dp,
      JSON.stringify({ type: "pci", version: "1.1.0", pci: { "pci-address": "0000:3b:02.1" } }),
    );
    const infoFile = cniDeviceInfoPath(base(), {
      network: "sriov-a",
      containerId: "ctr1",
      ifName: "net1",
    })!;
    const a = att(infoFile);
    prepareDeviceInfo(a, conf(), log);
    expect(JSON.parse(readFileSync(infoFile, "utf8"))).toMatchObject({ type: "pci" });
    writeFileSync(
      infoFile,
      JSON.stringify({
        type: "pci",
        version: "1.1.0",
        pci: { "pci-address": "0000:3b:02.1", "rdma-device": "mlx5_3" },
      }),
    );
    expect(deviceInfoAfterAdd(a, log)).toEqual({
      type: "pci",
      version: "1.1.0",
      pci: { "pci-address": "0000:3b:02.1", "rdma-device": "mlx5_3" },
    });
    removeDeviceInfo(a, { containerId: "ctr1" }, conf(), log);
    expect(existsSync(infoFile)).toBe(false);
    removeDeviceInfo(a, { containerId: "ctr1" }, conf(), log); // already gone: fine
  });

  it("M10 no device plugin file: nothing copied, no device-info", () => {
    const infoFile = cniDeviceInfoPath(base(), {
      network: "sriov-a",
      containerId: "ctr1",
      ifName: "net1",
    })!;
    prepareDeviceInfo(att(infoFile), conf(), log);
    expect(existsSync(infoFile)).toBe(false);
    expect(deviceInfoAfterAdd(att(infoFile), log)).toBeUndefined();
  });

  it.each([
    ["not JSON", "{nope"],
    ["not an object", "[1,2]"],
    ["too large", JSON.stringify({ x: "y".repeat(70_000) })],
  ])("M10 a malformed device plugin file (%s) is ignored with a warning", (_what, text) => {
    const dp = dpDeviceInfoPath(base(), "intel.com/sriov_netdevice", "0000:3b:02.1")!;
    mkdirSync(join(base(), "dp"), { recursive: true });
    writeFileSync(dp, text);
    expect(readDeviceInfo(dp).state).toBe("malformed");
    const infoFile = cniDeviceInfoPath(base(), {
      network: "sriov-a",
      containerId: "ctr1",
      ifName: "net1",
    })!;
    const logger = recordingLogger();
    prepareDeviceInfo(att(infoFile), conf(), logger);
    expect(existsSync(infoFile)).toBe(false);
    expect(logger.lines.some((l) => l.level === "warn" && /malformed/.test(l.msg))).toBe(true);
  });
});

describe("DEL without a record (M10, M7)", () => {
  it("M10 M7 devices are a best effort: kubelet down or too few devices leave the attachment without one, never fail the plan", async () => {
    kube
      .addPod("app", "web", { [NETWORKS]: "sriov-a,sriov-a" })
      .addNad("app", "sriov-a", sriov("sriov-a"), RESOURCE);
    const { CniError } = await import("../../../src/cni/errors");
    const down = await planForPod(req(), conf(), {
      load: eagerLoaders,
      kube: async () => kube,
      log,
      devicesBestEffort: true,
      podDevices: async () => {
        throw new CniError(11, "kubelet socket gone");
      },
    });
    expect(down.attachments.map((a) => a.device?.deviceID)).toEqual([
      undefined,
      undefined,
      undefined,
    ]);
    const few = await planForPod(req(), conf(), {
      kube: async () => kube,
      log,
      load: eagerLoaders,
      devicesBestEffort: true,
      podDevices: fakeLookup({ "intel.com/sriov_netdevice": ["0000:3b:02.1"] }),
    });
    expect(few.attachments.map((a) => a.device?.deviceID)).toEqual([
      undefined,
      "0000:3b:02.1",
      undefined,
    ]);
  });
});

describe("the pod's deviceID on a device network (M10, M4)", () => {
  it("M10 M1 a NAD's own deviceID, in any spelling Go reads, gives way to the device", async () => {
    const spellings = ["DeviceID", "DEVICEID", "deviceid"];
    const plugins = spellings.map((key) => ({ type: "sriov", [key]: "0000:00:00.6" }));
    kube
      .addPod("app", "web", { [NETWORKS]: "sriov-c" })
      .addNad("app", "sriov-c", { cniVersion: "1.0.0", name: "sriov-c", plugins }, RESOURCE);
    const devices = fakeLookup({ "intel.com/sriov_netdevice": ["0000:3b:02.1"] });
    const att = (await plan(devices)).attachments[1]!;
    for (const plugin of att.conf.plugins) {
      const spelled = Object.keys(plugin).filter((k) => k.toLowerCase() === "deviceid");
      expect(spelled).toEqual(["deviceID"]);
      expect(plugin.deviceID).toBe("0000:3b:02.1");
    }
  });

  it("M10 M4 needs no declared deviceID capability when the NAD has a resourceName (it reaches every plugin at the top level); without one it still fails", async () => {
    const plain = { cniVersion: "1.0.0", name: "sriov-b", type: "sriov" };
    kube
      .addPod("app", "web", {
        [NETWORKS]: JSON.stringify([{ name: "sriov-b", deviceID: "0000:af:00.7" }]),
      })
      .addNad("app", "sriov-b", plain, RESOURCE);
    const att = (await plan(fakeLookup({ [SRIOV]: ["0000:af:00.7"] }))).attachments[1]!;
    expect(att.conf.plugins[0]!.deviceID).toBe("0000:af:00.7");
    kube.addNad("app", "sriov-b", plain);
    await expect(plan(fakeLookup({}))).rejects.toMatchObject({
      code: 7,
      message: expect.stringMatching(/"deviceID", but no plugin of the network declares/),
    });
  });
});

describe("a deviceID no allocation backs (M10, N7.4)", () => {
  const hostDevice = { cniVersion: "1.0.0", name: "hw", type: "host-device" };
  const isolated = (extra: Record<string, unknown> = {}) =>
    parsePlexusConf({
      cniVersion: "1.0.0",
      name: "plexus",
      clusterNetwork: "cbr0",
      confDir: join(dir, "conf"),
      deviceInfoDir: join(dir, "devinfo"),
      namespaceIsolation: true,
      ...extra,
    });
  const planDeps = { kube: async () => kube, log, load: eagerLoaders };
  const planWith = (c: PlexusConf) => {
    return planForPod(req(), c, { ...planDeps, podDevices: fakeLookup({}) });
  };

  it("M10 N7.4 under namespaceIsolation: 7 naming network, ID and the key", async () => {
    kube.addPod("app", "web", picks({ name: "hw", deviceID: OTHER }));
    kube.addNad("app", "hw", { ...hostDevice, capabilities: { deviceID: true } });
    const err = await planWith(isolated()).then(
      () => expect.fail("expected a failure"),
      (e: unknown) => e as { code: number; message: string },
    );
    expect(err.code).toBe(7);
    expect(err.message).toMatch(/^pod app\/web: network app\/hw: the pod's selection asks for /);
    expect(err.message).toContain('"allowUnallocatedDeviceIDs": true');
    const allowed = await planWith(isolated({ allowUnallocatedDeviceIDs: true }));
    expect(allowed.attachments[1]!.capabilityArgs).toEqual({ deviceID: OTHER });
    const open = await planWith(conf());
    expect(open.attachments[1]!.capabilityArgs).toEqual({ deviceID: OTHER });
    expect(lookups).toEqual([]);
  });

  it("M10 allowUnallocatedDeviceIDs defaults to false and must be a boolean", () => {
    expect(isolated().allowUnallocatedDeviceIDs).toBe(false);
    const notBoolean = () => isolated({ allowUnallocatedDeviceIDs: "yes" });
    expect(notBoolean).toThrow(/allowUnallocatedDeviceIDs/);
  });

  it("M10 M7 DEL without a record: an unallocated deviceID reaches no delegate", async () => {
    kube.addPod("app", "web", picks({ name: "sriov-a", deviceID: OTHER }));
    kube.addNad("app", "sriov-a", sriov("sriov-a"), RESOURCE);
    const p = await planForPod(req(), conf(), {
      kube: async () => kube,
      log,
      load: eagerLoaders,
      devicesBestEffort: true,
      podDevices: fakeLookup({ [SRIOV]: [VF1] }),
    });
    const att = p.attachments[1]!;
    expect([att.device, att.capabilityArgs, att.conf.plugins.map((x) => x.deviceID)]).toEqual([
      undefined,
      undefined,
      [undefined, undefined],
    ]);
  });
});

describe("M10 config keys", () => {
  it("M10 podResourcesSocket, podResourcesTimeoutSeconds and deviceInfoDir have kubelet's and the NPWG spec's defaults; bad values are refused", () => {
    const c = parsePlexusConf({
      cniVersion: "1.0.0",
      name: "plexus",
      delegates: [{ cniVersion: "1.0.0", name: "a", type: "bridge" }],
    });
    expect([c.podResourcesSocket, c.podResourcesTimeoutMs, c.deviceInfoDir]).toEqual([
      "/var/lib/kubelet/pod-resources/kubelet.sock",
      10_000,
      "/var/run/k8s.cni.cncf.io/devinfo",
    ]);
    expect(() =>
      parsePlexusConf({
        cniVersion: "1.0.0",
        name: "plexus",
        delegates: [{ cniVersion: "1.0.0", name: "a", type: "bridge" }],
        podResourcesTimeoutSeconds: 0,
      }),
    ).toThrow(/podResourcesTimeoutSeconds/);
  });
});

describe("M19 resourceName per attachment", () => {
  const FAST = "intel.com/sriov_fast";
  const ALLOWED = "k8s.v1.cni.cncf.io/allowedResourceNames";
  /** A NAD of the resource SRIOV that also offers FAST (with spaces and an empty entry). */
  const offering = { ...RESOURCE, [ALLOWED]: ` ${SRIOV} , ${FAST},` };
  const refusal = (podDevices: PodDevicesLookup) =>
    plan(podDevices).then(
      () => expect.fail("expected a failure"),
      (e: unknown) => e as { code: number; message: string },
    );

  it("M19 a resourceName the NAD lists picks that pool; others keep the NAD's", async () => {
    kube.addPod("app", "web", picks({ name: "sriov-a", resourceName: FAST }, { name: "sriov-a" }));
    kube.addNad("app", "sriov-a", sriov("sriov-a"), offering);
    const p = await plan(fakeLookup({ [SRIOV]: [VF1], [FAST]: [VF2] }));
    const seen = p.attachments.slice(1).map((a) => [a.device?.resourceName, a.device?.deviceID]);
    expect(seen).toEqual([
      [FAST, VF2],
      [SRIOV, VF1],
    ]);
    expect(top(p.attachments[1]!)).toBe(VF2);
    expect(p.attachments[1]!.capabilityArgs?.deviceID).toBe(VF2);
    expect(lookups).toEqual([{ namespace: "app", name: "web", resourceNames: [FAST, SRIOV] }]);
  });

  it("M19 allowedResourceNames without a resourceName: only a pick gets a device", async () => {
    kube.addPod("app", "web", picks({ name: "pool", resourceName: FAST }, { name: "pool" }));
    kube.addNad("app", "pool", sriov("pool"), { [ALLOWED]: `${SRIOV},${FAST}` });
    const p = await plan(fakeLookup({ [FAST]: [VF2] }));
    expect(p.attachments.slice(1).map((a) => a.device?.deviceID)).toEqual([VF2, undefined]);
    expect(lookups).toEqual([{ namespace: "app", name: "web", resourceNames: [FAST] }]);
  });

  it("M19 naming the NAD's own resourceName is taken as before, listed or not", async () => {
    kube.addPod("app", "web", picks({ name: "sriov-a", resourceName: SRIOV }));
    kube.addNad("app", "sriov-a", sriov("sriov-a"), { ...RESOURCE, [ALLOWED]: FAST });
    const p = await plan(fakeLookup({ [SRIOV]: [VF1] }));
    expect(p.attachments[1]!.device).toMatchObject({ resourceName: SRIOV, deviceID: VF1 });
  });

  it("M19 a name the NAD does not list: 7 naming both, kubelet not asked", async () => {
    kube.addPod("app", "web", picks({ name: "sriov-a", resourceName: "intel.com/other" }));
    kube.addNad("app", "sriov-a", sriov("sriov-a"), offering);
    const err = await refusal(fakeLookup({ [SRIOV]: [VF1] }));
    expect(err.code).toBe(7);
    expect(err.message).toBe(
      "pod app/web: network app/sriov-a: the pod's selection asks for resourceName " +
        `"intel.com/other", but the NAD does not offer it: its ${ALLOWED} lists only ` +
        `"${SRIOV}", "${FAST}" and its own k8s.v1.cni.cncf.io/resourceName is "${SRIOV}"; ` +
        `name one the NAD offers, drop "resourceName" to take the NAD's own, or have the NAD ` +
        `list "intel.com/other" in ${ALLOWED}`,
    );
    expect(lookups).toEqual([]);
  });

  it("M19 a name contradicting the NAD's own resourceName: 7 naming both", async () => {
    kube.addPod("app", "web", picks({ name: "sriov-a", resourceName: FAST }));
    kube.addNad("app", "sriov-a", sriov("sriov-a"), RESOURCE);
    const err = await refusal(fakeLookup({ [SRIOV]: [VF1], [FAST]: [VF2] }));
    expect(err.code).toBe(7);
    expect(err.message).toContain(
      `asks for resourceName "${FAST}", but the NAD does not offer it:`,
    );
    expect(err.message).toContain(
      `it has no ${ALLOWED} and its own k8s.v1.cni.cncf.io/resourceName is "${SRIOV}"`,
    );
    expect(lookups).toEqual([]);
  });

  it("M19 a NAD with neither annotation offers no pool: 7", async () => {
    kube.addPod("app", "web", picks({ name: "br", resourceName: FAST }));
    kube.addNad("app", "br", { cniVersion: "1.0.0", name: "br", type: "bridge" });
    const err = await refusal(fakeLookup({ [FAST]: [VF2] }));
    expect(err.code).toBe(7);
    expect(err.message).toContain(
      `"${FAST}", but the NAD offers no device pool: it has neither ` +
        `k8s.v1.cni.cncf.io/resourceName nor ${ALLOWED}`,
    );
  });

  it("M19 M10 the allocation wins: a deviceID must be of the picked pool", async () => {
    kube.addPod("app", "web", picks({ name: "sriov-a", resourceName: FAST, deviceID: VF1 }));
    kube.addNad("app", "sriov-a", sriov("sriov-a"), offering);
    const err = await refusal(fakeLookup({ [SRIOV]: [VF1], [FAST]: [VF2] }));
    expect(err.code).toBe(7);
    expect(err.message).toContain(`network app/sriov-a (resource ${FAST}):`);
    expect(err.message).toContain(
      `the devices allocated to the pod for ${FAST} are ${VF2} (kubelet)`,
    );
  });

  it("M19 M15 hot-plug takes the picked pool; a name not offered changes nothing", async () => {
    const exec = new FakeExec(["bridge", "sriov", "tuning"]);
    const deps = fakeDeps(exec);
    onTestFinished(() => deps.dispose());
    const wired = {
      ...deps,
      kube: async () => kube,
      podDevices: fakeLookup({ [SRIOV]: [VF1], [FAST]: [VF2] }),
    };
    kube.addPod("app", "web", picks({ name: "sriov-a" }));
    kube.addNad("app", "sriov-a", sriov("sriov-a"), offering);
    await cmdAdd(req(), conf(), wired);
    const target = { namespace: "app", name: "web" };
    const path = ["/opt/cni/bin"];
    // The edited annotation, beside the last network-status written (the fake keeps it apart).
    const annotate = (...selections: object[]) =>
      kube.addPod("app", "web", {
        ...picks(...selections),
        "k8s.v1.cni.cncf.io/network-status": kube.statuses.at(-1)!.value,
      });

    annotate({ name: "sriov-a" }, { name: "sriov-a", resourceName: FAST });
    const report = await cmdHotplug(target, { path }, conf(), wired);
    expect(report, JSON.stringify(report)).toMatchObject({ state: "reconciled", refused: [] });
    expect(report.attached).toEqual([{ network: "app/sriov-a", ifName: "net2" }]);
    const hotplugged = exec.calls.filter((c) => c.type === "sriov" && c.ifName === "net2");
    expect(hotplugged.map((c) => [c.command, c.stdin.deviceID])).toEqual([["ADD", VF2]]);
    const record = await deps.records.read("ctr1", "eth0");
    const devices = record.state === "found" ? record.record.attachments.map((a) => a.device) : [];
    expect(devices.map((d) => d && [d.resourceName, d.deviceID])).toEqual([
      undefined,
      [SRIOV, VF1],
      [FAST, VF2],
    ]);

    const other = { name: "sriov-a", resourceName: "intel.com/other", interface: "net3" };
    annotate({ name: "sriov-a" }, { name: "sriov-a", resourceName: FAST }, other);
    const before = exec.calls.length;
    const err = await cmdHotplug(target, { path }, conf(), wired).then(
      () => expect.fail("expected a failure"),
      (e: unknown) => e as { code: number; message: string },
    );
    expect(err.code).toBe(7);
    expect(err.message).toContain('asks for resourceName "intel.com/other", but the NAD does not');
    expect(exec.calls.length).toBe(before);
    expect(kube.events.map((e) => e.reason)).toContain("HotplugFailed");
  });
});
