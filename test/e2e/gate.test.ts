/**
 * The delegate gate end to end (docs/security.md "Every path to a delegate"): dist/plexus run as
 * the runtime and the daemon's hot-plug and housekeeping run it, under namespaceIsolation with
 * `allowedPluginTypes` [bridge, host-local], real bridge and host-local in real namespaces, and
 * recording plugins for every other type a tenant may write into a NAD (gate-node.ts). One test
 * per finding:
 *
 * - B86: a tenant's attachment whose DEL fails (host-local cannot take its store's lock) and whose
 *   NAD the tenant then edits: nothing but the recorded config, and nothing the policy refuses,
 *   runs through the runtime's DEL retries, housekeeping, GC and hot-plug, and the record stays
 *   until the attachment (its interface and its address) is really gone.
 * - B88: a hot-plug or ADD selection naming an interface the pod already has (`lo`, a KubeVirt-
 *   style `tap0` holding an address) is refused before anything runs for it, and no rollback or
 *   DEL removes it afterwards.
 *
 * Subnets 10.246.x.0/24, only inside the namespaces and bridges the tests make.
 */
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { expect, it } from "vitest";
import { cniError } from "../support/plexus-bin";
import { describeE2e, NOTHING_LEFT, useE2eScope } from "../support/netns";
import { expectOk, expectSilentOk } from "./networks";
import {
  foreignLinkProblems,
  GateNode,
  plexusLinks,
  POD_ARGS,
  unrecordedAttachments,
  type PodNetns,
} from "./gate-node";

const t = useE2eScope();
const CTR = "ctr-web";

/** The node with app/net-a (and app/net-c) as bridge + host-local NADs; the pod selects net-a. */
function setUp() {
  const node = new GateNode(t.scope, { cbr0Subnet: "10.246.0.0/24" });
  const bridge = t.scope.bridgeName();
  node.setNad("net-a", node.bridgeConf("net-a", { subnet: "10.246.1.0/24", bridge }));
  const netC = node.bridgeConf("net-c", { subnet: "10.246.3.0/24", bridge: t.scope.bridgeName() });
  node.setNad("net-c", netC);
  node.setNetworks(JSON.stringify([{ name: "net-a" }]));
  const pod = node.addPodNetns("10.246");
  return { node, pod, bridge };
}

/** What must hold after every step: the invariants of the model test (gate-model.test.ts). */
function expectInvariants(node: GateNode, pod: PodNetns, dataDirs?: string[]): void {
  expect(node.disallowedRuns(), "plugin types outside allowedPluginTypes that ran").toEqual([]);
  expect(node.deviceKeysGiven(), "device keys a delegate was given").toEqual([]);
  expect(foreignLinkProblems(pod), "interfaces Plexus did not create").toEqual([]);
  const pods = [{ containerId: CTR, netns: pod }];
  expect(unrecordedAttachments(node, pods, dataDirs), "attachments no record names").toEqual([]);
}

/** The bridge runs for the pod's net1, as `COMMAND bridge-name`. */
const net1Runs = (node: GateNode) =>
  node
    .invocations()
    .filter((i) => i.type === "bridge" && i.ifName === "net1")
    .map((i) => `${i.command} ${(JSON.parse(i.stdin) as { bridge: string }).bridge}`);

const events = (node: GateNode, reason: string): string[] => {
  const path = join(node.clusterDir, "status", "events.jsonl");
  if (!existsSync(path)) return [];
  return readFileSync(path, "utf8")
    .trim()
    .split("\n")
    .map((l) => JSON.parse(l) as { reason: string; message: string })
    .filter((e) => e.reason === reason)
    .map((e) => e.message);
};

/** The runtime's DELs of the sandbox until one answers 0 (at most three), then its netns goes. */
async function delUntilDone(node: GateNode, pod: PodNetns): Promise<void> {
  for (let i = 0; i < 3; i++) if ((await node.runPod("DEL", CTR, pod.path)).code === 0) break;
  expectInvariants(node, pod);
  t.scope.deleteNetns(pod);
}

describeE2e("e2e delegate gate: tenants' edits and interfaces Plexus did not create", () => {
  it("B86 DEL fails, NAD edited to evil, then to no spec.config: neither ever runs", async () => {
    const { node, pod, bridge } = setUp();
    // What a NAD of that name without spec.config would take from the config directory.
    node.addAdminConfFile("net-a", "sriov");
    expectOk(await node.runPod("ADD", CTR, pod.path));
    expect(plexusLinks(pod)).toEqual(["eth0", "net1"]);
    node.breakDel("net-a");

    node.setNad("net-a", { cniVersion: "1.0.0", name: "net-a", type: "evil" });
    const first = cniError(await node.runPod("DEL", CTR, pod.path));
    expect(first.msg).toContain('DEL of network "app/net-a" (net1)');
    // The second DEL answers 0 (the attachment stays pending); the runtime may call it again.
    for (let i = 0; i < 2; i++) expectSilentOk(await node.runPod("DEL", CTR, pod.path));
    const gone = { CNI_CONTAINERID: CTR, CNI_NETNS: "", CNI_IFNAME: "eth0", CNI_ARGS: POD_ARGS };
    expectSilentOk(await node.run("DEL", gone));
    expect((await node.housekeeping()).code).toBe(0);
    expect((await node.gc([])).code).toBe(1); // the retried DEL fails again: GC says so
    expect((await node.hotplug()).stdout).toContain('"state":"no-sandbox"');
    expectInvariants(node, pod);

    node.setNad("net-a", undefined);
    for (let i = 0; i < 2; i++) expectSilentOk(await node.runPod("DEL", CTR, pod.path));
    expect((await node.housekeeping()).code).toBe(0);
    expectInvariants(node, pod);
    // Every run for net1 was the recorded config (its bridge). The first DEL's bridge removed
    // net1 before host-local failed: what the attachment still holds is its address.
    expect(new Set(net1Runs(node))).toEqual(new Set([`ADD ${bridge}`, `DEL ${bridge}`]));
    expect(plexusLinks(pod)).toEqual([]);
    expect(node.reservations().map((r) => `${r.network} ${r.ifName}`)).toEqual(["net-a net1"]);
    expect(node.records().map((r) => r.attachments.map((a) => a.ifName))).toEqual([["net1"]]);

    // Repaired: the recorded config's DEL releases everything, and only then the record goes.
    node.repairDel("net-a");
    expectSilentOk(await node.runPod("DEL", CTR, pod.path));
    expect(plexusLinks(pod)).toEqual([]);
    expect(node.records()).toEqual([]);
    expect(node.reservations()).toEqual([]);
    expectInvariants(node, pod);
    t.scope.deleteNetns(pod);
    expect(t.scope.attachmentLeftovers()).toEqual(NOTHING_LEFT);
  }, 60_000);

  it("B86 DEL fails, NAD given another host-local dataDir: record kept while IP held", async () => {
    const { node, pod, bridge } = setUp();
    const dataDir2 = join(t.scope.root, "ipam-elsewhere");
    const dataDirs = [t.scope.dataDir, dataDir2];
    expectOk(await node.runPod("ADD", CTR, pod.path));
    node.breakDel("net-a");
    const elsewhere = { subnet: "10.246.1.0/24", bridge, dataDir: dataDir2 };
    node.setNad("net-a", node.bridgeConf("net-a", elsewhere));
    // The first DEL's bridge removes net1, then host-local fails: the address stays reserved.
    // The NAD's current config passes the gate (same name, same types) and its DEL succeeds
    // (its host-local store is another), but the recorded reservation is still held.
    for (let i = 0; i < 3; i++) {
      await node.runPod("DEL", CTR, pod.path);
      expectInvariants(node, pod, dataDirs);
    }
    expect((await node.housekeeping()).code).toBe(0);
    expectInvariants(node, pod, dataDirs);
    node.repairDel("net-a");
    await delUntilDone(node, pod);
    expect((await node.housekeeping()).code).toBe(0);
    expect(node.reservations(dataDirs)).toEqual([]);
    expect(node.records()).toEqual([]);
  }, 60_000);

  it("B88 hot-plug net-c@tap0 (holding 10.246.99.9/24) and net-c@lo refused; intact", async () => {
    const { node, pod } = setUp();
    expectOk(await node.runPod("ADD", CTR, pod.path));
    for (const ifName of ["tap0", "lo"]) {
      node.setNetworks(JSON.stringify([{ name: "net-a" }, { name: "net-c", interface: ifName }]));
      const hot = await node.hotplug();
      expect(hot.code, hot.stderr).toBe(0);
      expect(JSON.parse(hot.stdout)).toMatchObject({
        state: "reconciled",
        attached: [],
        refused: [{ network: "app/net-c", ifName }],
      });
      expect(events(node, "HotplugRefused")).toContainEqual(
        expect.stringContaining(
          `network app/net-c: interface "${ifName}" already exists in the pod and Plexus ` +
            "did not create it",
        ),
      );
      expectInvariants(node, pod);
    }
    expect(plexusLinks(pod)).toEqual(["eth0", "net1"]);
    // Nothing ran on tap0 or lo: no ADD, and no rollback's DEL.
    const onForeign = node.invocations().filter((i) => i.ifName === "tap0" || i.ifName === "lo");
    expect(onForeign).toEqual([]);
    expect(node.records().flatMap((r) => r.attachments.map((a) => a.ifName))).toEqual([
      "eth0",
      "net1",
    ]);
    await delUntilDone(node, pod);
    expect(t.scope.attachmentLeftovers()).toEqual(NOTHING_LEFT);
  }, 60_000);

  it("B88 ADD selecting tap0 refused; the DELs after it leave tap0 and its address", async () => {
    const { node, pod } = setUp();
    node.setNetworks(JSON.stringify([{ name: "net-a" }, { name: "net-c", interface: "tap0" }]));
    const refused = cniError(await node.runPod("ADD", CTR, pod.path));
    expect(refused.code).toBe(7);
    expect(refused.msg).toContain('interface "tap0" already exists');
    expectInvariants(node, pod);
    expect(plexusLinks(pod)).toEqual([]);
    // The runtime tears the failed sandbox down: DEL with its namespace, then again.
    for (let i = 0; i < 2; i++) {
      expectSilentOk(await node.runPod("DEL", CTR, pod.path));
      expectInvariants(node, pod);
    }
    // Only the precaution of a DEL without a record names tap0, and with no namespace at all:
    // IPAM is released, no interface is touched.
    const onTap0 = node.invocations().filter((i) => i.ifName === "tap0");
    expect(onTap0.filter((i) => i.command !== "DEL" || i.netns !== "")).toEqual([]);
    t.scope.deleteNetns(pod);
    expect(t.scope.attachmentLeftovers()).toEqual(NOTHING_LEFT);
  }, 60_000);
});
