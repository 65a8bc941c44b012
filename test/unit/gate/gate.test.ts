/**
 * The delegate gate (src/gate/): the rules on the very config that runs, for tenant networks only;
 * interface ownership for ADD; the replacement rule for a failed DEL's retry; and libcni's side:
 * a list is run only when the gate vouched for that very object, frozen.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { ConfList } from "../../../src/cni/conf";
import { Code } from "../../../src/cni/errors";
import type { PlexusConf } from "../../../src/config/plugin-conf";
import {
  checkPlan,
  type GatePolicy,
  type GateSubject,
  type LinkProbe,
  vetAttach,
  vetRecorded,
  vetReplacement,
} from "../../../src/gate/gate";
import { assertVouched, vouch } from "../../../src/libcni/vouch";

const POLICY: GatePolicy = {
  allowedPluginTypes: ["bridge", "host-local"],
  namespaceIsolation: true,
  globalNamespaces: [],
  multusNamespace: "kube-system",
  allowUnallocatedDeviceIDs: false,
  allowHostPorts: false,
} satisfies Partial<PlexusConf>;

function list(plugins: ConfList["plugins"], name = "net-a"): ConfList {
  return { cniVersion: "1.0.0", name, plugins };
}

const BRIDGE = { type: "bridge", ipam: { type: "host-local", subnet: "10.1.0.0/24" } };

function tenant(conf: ConfList, extra: Partial<GateSubject> = {}): GateSubject {
  return {
    network: "app/net-a",
    ifName: "net1",
    isDefault: false,
    conf,
    selection: { namespace: "app", name: "net-a" },
    ...extra,
  };
}

const noLinks: LinkProbe = { linkExists: async () => false };

describe("the gate's policy: tenant networks only", () => {
  it("B86 a tenant network of a type outside allowedPluginTypes is refused (7), plugin or IPAM", () => {
    const evil = tenant(list([{ type: "evil" }]));
    expect(() => vetRecorded(evil, { policy: POLICY })).toThrow(/"evil"/);
    const ipam = tenant(list([{ type: "bridge", ipam: { type: "dhcp" } }]));
    expect(() => vetRecorded(ipam, { policy: POLICY })).toThrow(/"dhcp"/);
    const chained = tenant(list([BRIDGE, { type: "evil" }]));
    expect(() => vetRecorded(chained, { policy: POLICY })).toThrow(
      expect.objectContaining({ code: Code.InvalidNetworkConfig }),
    );
  });

  it("B86 the administrator's own networks are not checked; the pod's default-network override is", () => {
    const admin: GateSubject = {
      network: "cluster",
      ifName: "eth0",
      isDefault: true,
      conf: list([{ type: "calico" }]),
    };
    expect(() => vetRecorded(admin, { policy: POLICY })).not.toThrow();
    const override = { ...admin, conf: list([{ type: "calico" }]), chosenByPod: true as const };
    expect(() => vetRecorded(override, { policy: POLICY })).toThrow(/"calico"/);
  });

  it("N7.4 B86 isolation: a selection of another namespace is refused for the pod's namespace", () => {
    const other = tenant(list([BRIDGE]), { selection: { namespace: "other", name: "net-a" } });
    expect(() => vetRecorded(other, { policy: POLICY, podNamespace: "app" })).toThrow(
      /namespaceIsolation/,
    );
    expect(() => vetRecorded(other, { policy: POLICY, podNamespace: "other" })).not.toThrow();
  });

  it("B87 a NAD's own device keys, in any Go spelling, without an allocation are refused under isolation", () => {
    const keys = ["deviceID", "DeviceID", "DEVICEID", "pciBusID", "PciBusId", "pcıBusID"];
    for (const key of keys) {
      const subject = tenant(list([{ ...BRIDGE, [key]: "0000:af:00.1" }]));
      const what = `key ${key}`;
      if (key === "pcıBusID") {
        // U+0131 (dotless i) folds to itself, not to "I": Go reads it as another key.
        expect(() => vetRecorded(subject, { policy: POLICY }), what).not.toThrow();
        continue;
      }
      expect(() => vetRecorded(subject, { policy: POLICY }), what).toThrow(/device/);
      const allowed = { ...POLICY, allowUnallocatedDeviceIDs: true };
      expect(() => vetRecorded(subject, { policy: allowed }), what).not.toThrow();
    }
    const nested = tenant(list([{ ...BRIDGE, runtimeConfig: { DeviceId: "0000:af:00.1" } }]));
    expect(() => vetRecorded(nested, { policy: POLICY })).toThrow(/runtimeConfig/);
  });

  it("B87 with an allocation, only the allocated device may be named", () => {
    const device = { deviceID: "0000:af:00.2" };
    const same = tenant(list([{ ...BRIDGE, deviceID: "0000:af:00.2" }]), { device });
    expect(() => vetRecorded(same, { policy: POLICY })).not.toThrow();
    const other = tenant(list([{ ...BRIDGE, pciBusID: "0000:af:00.3" }]), { device });
    expect(() => vetRecorded(other, { policy: POLICY })).toThrow(/0000:af:00.2/);
  });

  it("B94 a hostPort in a selection's portMappings is refused under isolation unless allowHostPorts", () => {
    const portMappings = [{ HostPort: 8080, containerPort: 80, protocol: "tcp" }];
    const subject = tenant(list([BRIDGE]), { capabilityArgs: { portMappings } });
    expect(() => vetRecorded(subject, { policy: POLICY })).toThrow(/allowHostPorts/);
    const allowed = { ...POLICY, allowHostPorts: true };
    expect(() => vetRecorded(subject, { policy: allowed })).not.toThrow();
    const noIsolation = { ...POLICY, namespaceIsolation: false };
    expect(() => vetRecorded(subject, { policy: noIsolation })).not.toThrow();
    const containerOnly = tenant(list([BRIDGE]), {
      capabilityArgs: { portMappings: [{ containerPort: 80 }] },
    });
    expect(() => vetRecorded(containerOnly, { policy: POLICY })).not.toThrow();
  });

  it("B86 checkPlan applies the same rules to a whole plan, vouching for nothing", () => {
    const plan = [tenant(list([BRIDGE])), tenant(list([{ type: "evil" }]), { ifName: "net2" })];
    expect(() => checkPlan(plan, { policy: POLICY })).toThrow(/"evil"/);
    expect(() => assertVouched(plan[0]!.conf, "DEL")).toThrow(/without passing the delegate gate/);
  });

  it("B86 any generated set of plugin types: refused exactly when one is outside the allow-list", () => {
    const type = fc.constantFrom("bridge", "host-local", "evil", "macvlan", "tuning");
    fc.assert(
      fc.property(fc.array(type, { minLength: 1, maxLength: 4 }), (types) => {
        const subject = tenant(list(types.map((t) => ({ type: t }))));
        const refused = types.some((t) => !POLICY.allowedPluginTypes!.includes(t));
        let threw = false;
        try {
          vetRecorded(subject, { policy: POLICY });
        } catch {
          threw = true;
        }
        expect(threw).toBe(refused);
      }),
      { seed: 36, numRuns: 200 },
    );
  });
});

describe("interface ownership (ADD)", () => {
  it("B88 an interface the pod already has (lo, tap0) is refused before anything runs", async () => {
    const links: LinkProbe = { linkExists: async (_ns, name) => name === "lo" || name === "tap0" };
    const ctx = { policy: POLICY, netns: "/var/run/netns/pod", links };
    for (const ifName of ["lo", "tap0"]) {
      const subject = tenant(list([BRIDGE]), { ifName });
      await expect(vetAttach(subject, ctx)).rejects.toMatchObject({
        code: Code.InvalidNetworkConfig,
        message: expect.stringContaining("already exists"),
      });
      expect(() => assertVouched(subject.conf, "ADD")).toThrow(/delegate gate/);
    }
    const free = tenant(list([BRIDGE]), { ifName: "net1" });
    const vetted = await vetAttach(free, ctx);
    expect(() => assertVouched(vetted, "ADD")).not.toThrow();
  });

  it("B88 the default network's name taken (a runtime's error) is code 4", async () => {
    const subject: GateSubject = {
      network: "cluster",
      ifName: "eth0",
      isDefault: true,
      conf: list([BRIDGE]),
    };
    const links: LinkProbe = { linkExists: async () => true };
    await expect(
      vetAttach(subject, { policy: POLICY, netns: "/var/run/netns/pod", links }),
    ).rejects.toMatchObject({ code: Code.InvalidEnv });
  });

  it("B88 a list vetted for DEL only is not run as an ADD", async () => {
    const vetted = vetRecorded(tenant(list([BRIDGE])), { policy: POLICY });
    expect(() => assertVouched(vetted, "DEL")).not.toThrow();
    expect(() => assertVouched(vetted, "ADD")).toThrow(/\(ADD\) without passing/);
    const ctx = { policy: POLICY, netns: "", links: noLinks };
    await expect(vetAttach(tenant(list([BRIDGE])), ctx)).resolves.toBeDefined();
  });
});

describe("a failed DEL's retry with the NAD's current config", () => {
  const recorded = tenant(list([BRIDGE]));

  it("B86 the same network and plugin types, policy passing: accepted", () => {
    const current = tenant(
      list([{ ...BRIDGE, ipam: { type: "host-local", subnet: "10.2.0.0/24" } }]),
    );
    expect(() =>
      assertVouched(vetReplacement(recorded, current, { policy: POLICY }), "DEL"),
    ).not.toThrow();
  });

  it("B86 another type, another IPAM, another network name, a refused type: refused", () => {
    const open = { ...POLICY, allowedPluginTypes: undefined };
    const cases: Array<[ConfList, RegExp]> = [
      [list([{ type: "macvlan", ipam: { type: "host-local" } }]), /macvlan\+host-local/],
      [list([{ type: "bridge", ipam: { type: "dhcp" } }]), /bridge\+dhcp/],
      [list([BRIDGE], "other"), /network name/],
      [list([BRIDGE, { type: "tuning" }]), /tuning/],
    ];
    for (const [conf, why] of cases)
      expect(() => vetReplacement(recorded, tenant(conf), { policy: open })).toThrow(why);
    expect(() =>
      vetReplacement(recorded, tenant(list([{ type: "evil" }])), { policy: POLICY }),
    ).toThrow(/allowedPluginTypes/);
  });
});

describe("libcni's side: what was vetted is what runs", () => {
  it("B86 a copy of a vouched list is not vouched; a vouched list is frozen deeply", () => {
    const conf = list([{ ...BRIDGE, args: { deep: { x: 1 } } }]);
    const vetted = vouch(conf);
    expect(() => assertVouched({ ...vetted }, "DEL")).toThrow(/delegate gate/);
    expect(Object.isFrozen(vetted.plugins[0])).toBe(true);
    expect(() => {
      (vetted.plugins[0] as { type: string }).type = "evil";
    }).toThrow(TypeError);
  });
});
