/**
 * Hot-plug's diff: identity is (network, interface); a selection without an interface matches an
 * attachment of its network whose name was generated, and a new one gets the lowest free netN;
 * changed parameters are refused; the default network and defaultNetworks never leave.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { diffHotplug, nextFreeIfName } from "../../../src/orchestrate/hotplug-diff";
import { assignInterfaceNames } from "../../../src/npwg/ifnames";
import type { Attachment, AttachmentDevice } from "../../../src/nodestate/record";
import type { NetworkSelection } from "../../../src/npwg/types";
import { propertyRuns } from "../../support/property";

const conf = { cniVersion: "1.0.0", name: "x", plugins: [{ type: "bridge" }] };
const eth0: Attachment = { network: "cbr0", ifName: "eth0", isDefault: true, conf };
const fixed: Attachment = { network: "kube-system/extra", ifName: "net1", isDefault: false, conf };

const named = (ifName?: string) => (ifName ? { interfaceRequest: ifName } : {});

function sel(ref: string, more: Partial<NetworkSelection> = {}): NetworkSelection {
  const [namespace, name] = ref.split("/") as [string, string];
  return { namespace, name, ...more };
}
/** An attachment of the record (ifName set) or a wanted one (ifName as planned: ignored). */
function att(ref: string, ifName: string, more: Partial<NetworkSelection> = {}): Attachment {
  return { network: ref, ifName, isDefault: false, conf, selection: sel(ref, more) };
}
const devices = { deviceInfoDir: "/run/devinfo", containerId: "ctr1" };
const diff = (current: Attachment[], wanted: Attachment[]) => diffHotplug(current, wanted, devices);
const names = (list: Attachment[]) => list.map((a) => `${a.network}@${a.ifName}`);

describe("hot-plug's diff", () => {
  it("M15 adds what is new on the next free netN, removes what is gone, keeps the rest", () => {
    const current = [eth0, fixed, att("app/a", "net2"), att("app/b", "net3")];
    const wanted = [att("app/a", "net1"), att("app/c", "net2")];
    const d = diff(current, wanted);
    expect(names(d.detach)).toEqual(["app/b@net3"]);
    // net1 and net2 stay in use; net3 is freed by the removal, which runs first.
    expect(names(d.attach)).toEqual(["app/c@net3"]);
    expect(d.refused).toEqual([]);
  });

  it("M15 a named interface is part of the identity: another name is a swap", () => {
    const current = [eth0, att("app/a", "left", { interfaceRequest: "left" })];
    const d = diff(current, [att("app/a", "x", { interfaceRequest: "right" })]);
    expect(names(d.detach)).toEqual(["app/a@left"]);
    expect(names(d.attach)).toEqual(["app/a@right"]);
  });

  it("M15 never removes the default network, defaultNetworks or the auxiliary chain", () => {
    const aux: Attachment = { network: "aux", ifName: "aux0", isDefault: false, conf };
    aux.auxiliary = true;
    const d = diff([eth0, fixed, aux], []);
    expect(d.detach).toEqual([]);
    expect(d.attach).toEqual([]);
  });

  it("M15 refuses a changed parameter and leaves that attachment as it is", () => {
    const current = [eth0, att("app/a", "net1", { ips: ["10.0.0.5/24"] })];
    const d = diff(current, [att("app/a", "net1", { ips: ["10.0.0.6/24"] })]);
    expect(d.attach).toEqual([]);
    expect(d.detach).toEqual([]);
    const why = expect.stringContaining("parameters of app/a on net1 changed");
    expect(d.refused.map((r) => r.reason)).toEqual([why]);
  });

  it("M15 refuses a named interface that another attachment keeps", () => {
    const d = diff(
      [eth0, att("app/a", "net1")],
      [att("app/a", "x"), att("app/b", "x", { interfaceRequest: "net1" })],
    );
    expect(d.attach).toEqual([]);
    expect(d.refused.map((r) => r.reason)).toEqual(["interface net1 is in use by app/a"]);
  });

  it("M15 nextFreeIfName takes the lowest free netN", () => {
    const used = new Set(["net1", "net3"]);
    expect([nextFreeIfName(used), nextFreeIfName(used)]).toEqual(["net2", "net4"]);
  });

  it("M15 a new unnamed selection gets the netN ADD gives the annotation, not the lowest free", () => {
    // The annotation now: a@x, b@y, c, d. ADD numbers by position: c is net3, d is net4.
    const selections = [sel("app/a", named("x")), sel("app/b", named("y")), sel("app/c")];
    selections.push(sel("app/d"));
    const planned = assignInterfaceNames(selections, "eth0");
    expect(planned).toEqual(["x", "y", "net3", "net4"]);
    const wanted = selections.map((s, i) => att(`${s.namespace}/${s.name}`, planned[i]!, s));
    const current = [eth0, ...wanted.slice(0, 3)];
    // net1 and net2 are free, but a sandbox created again with this annotation says net4.
    expect(names(diff(current, wanted).attach)).toEqual(["app/d@net4"]);
  });

  it("M15 ADD's name kept by another attachment: the next free netN above it, as ADD skips", () => {
    // The pod had a, b (b on net2); a left. Now b, c: ADD would say b net1, c net2.
    const current = [eth0, att("app/b", "net2")];
    const d = diff(current, [att("app/b", "net1"), att("app/c", "net2")]);
    expect(d.detach).toEqual([]);
    expect(names(d.attach)).toEqual(["app/c@net3"]);
  });

  it("M15 a new selection with default-route is refused, naming it; nothing is attached", () => {
    const gw = { defaultRoute: ["10.1.2.1"] };
    const d = diff([eth0, att("app/a", "net1")], [att("app/a", "net1"), att("app/b", "net2", gw)]);
    expect(d.attach).toEqual([]);
    expect(d.detach).toEqual([]);
    expect(d.refused.map((r) => `${r.attachment.network}@${r.attachment.ifName}`)).toEqual([
      "app/b@net2",
    ]);
    expect(d.refused[0]!.reason).toMatch(/^the selection of app\/b asks for "default-route"/);
    expect(d.refused[0]!.reason).toContain("10.1.2.1");
  });

  it("M10 M15 a new device network never takes a device an attachment that stays holds", () => {
    const vf = (id: string, ifName: string, from: AttachmentDevice["from"] = "kubelet") => ({
      resourceName: "intel.com/vf",
      deviceID: id,
      from,
      infoFile: `/run/devinfo/cni/x-ctr1_${ifName}`,
    });
    const dev = (a: Attachment, device: AttachmentDevice): Attachment => ({ ...a, device });
    // The pod had sriov-a (VF1) and sriov-b (VF2); sriov-a left, and sriov-c is added after b.
    // The planner, in annotation order, picks VF1 for b and VF2 for c: b keeps VF2.
    const b = dev(att("app/b", "net2"), vf("VF2", "net2"));
    const wanted = [dev(att("app/b", "net1"), vf("VF1", "net1"))];
    wanted.push(dev(att("app/c", "net2"), vf("VF2", "net2")));
    const d = diff([eth0, b], wanted);
    expect(names(d.attach)).toEqual(["app/c@net3"]);
    const [c] = d.attach;
    expect(c!.device).toMatchObject({ deviceID: "VF1", infoFile: "/run/devinfo/cni/x-ctr1_net3" });
    expect(c!.conf.plugins[0]).toMatchObject({ deviceID: "VF1" });
    expect(c!.capabilityArgs).toEqual({
      deviceID: "VF1",
      CNIDeviceInfoFile: "/run/devinfo/cni/x-ctr1_net3",
    });
    // A selection's own deviceID that b holds: refused, b keeps it.
    const own = [
      wanted[0]!,
      dev(att("app/c", "net2", { deviceID: "VF2" }), vf("VF2", "net2", "pod")),
    ];
    const refused = diff([eth0, b], own);
    expect(refused.attach).toEqual([]);
    expect(refused.refused.map((r) => r.reason)).toEqual([
      expect.stringContaining("asks for device VF2, but app/b on net2 holds it"),
    ]);
  });

  it("M15 property: after the diff, the pod has the wanted networks, names unique", () => {
    const network = fc.constantFrom("app/a", "app/b", "app/c");
    const ifName = fc.constantFrom("x1", "x2", "x3");
    const entry = fc.record({ network, named: fc.option(ifName, { nil: undefined }) });
    const wantedArb = fc.array(entry, { maxLength: 6 });
    fc.assert(
      fc.property(wantedArb, wantedArb, (before, after) => {
        const unique = (list: typeof before) =>
          list.filter((w, i) => !w.named || list.findIndex((o) => o.named === w.named) === i);
        const planned = (w: (typeof before)[number]) => att(w.network, "planned", named(w.named));
        const toWanted = (list: typeof before) => unique(list).map(planned);
        // The record a first reconcile from nothing makes, then the second reconcile against it.
        const first = diff([eth0], toWanted(before));
        const record = [eth0, ...first.attach];
        const second = diff(record, toWanted(after));
        const result = [...record.filter((a) => !second.detach.includes(a)), ...second.attach];
        const ifNames = result.map((a) => a.ifName);
        expect(new Set(ifNames).size).toBe(ifNames.length);
        const sorted = (l: string[]) => [...l].sort();
        const selected = result.filter((a) => !a.isDefault).map((a) => a.network);
        const refusedNew = second.refused
          .filter((r) => !record.includes(r.attachment))
          .map((r) => r.attachment.network);
        const wantedNetworks = toWanted(after).map((w) => w.network);
        expect(sorted([...selected, ...refusedNew])).toEqual(sorted(wantedNetworks));
        expect(result[0]).toBe(eth0);
      }),
      propertyRuns({ seed: 20261126, numRuns: 300 }),
    );
  });
});
