import { describe, expect, it } from "vitest";
import type { ConfList } from "../../../src/cni/conf";
import { buildPluginConf } from "../../../src/libcni/conflist";
import { applySelection } from "../../../src/npwg/delegate-args";

const list: ConfList = {
  cniVersion: "1.0.0",
  name: "net-a",
  plugins: [
    {
      type: "bridge",
      ipam: { type: "static" },
      capabilities: { ips: true },
      args: { cni: { keep: 1 }, other: true },
    },
    { type: "tuning", capabilities: { mac: true } },
  ],
};
const all: ConfList = {
  cniVersion: "1.0.0",
  name: "net-all",
  plugins: [
    { type: "sriov", capabilities: { deviceID: true, infinibandGUID: true, mac: true } },
    { type: "portmap", capabilities: { portMappings: true } },
    { type: "bandwidth", capabilities: { bandwidth: true } },
  ],
};
const sel = { name: "net-a", namespace: "ns" };

describe("M4 N4.1.2.1.3 N4.1.2.1.4 selection → delegate", () => {
  it("N4.1.2.1.3 N4.1.2.1.4 ips and mac go to every plugin as args.cni, merged with what it had; the input is not mutated", () => {
    const before = JSON.stringify(list);
    const { conf, capabilityArgs } = applySelection(list, {
      ...sel,
      ips: ["10.1.0.9/24"],
      mac: "02:00:00:00:00:09",
    });
    expect(conf.plugins[0]!.args).toEqual({
      cni: { keep: 1, ips: ["10.1.0.9/24"], mac: "02:00:00:00:00:09" },
      other: true,
    });
    expect(conf.plugins[1]!.args).toEqual({
      cni: { ips: ["10.1.0.9/24"], mac: "02:00:00:00:00:09" },
    });
    expect(capabilityArgs).toEqual({ ips: ["10.1.0.9/24"], mac: "02:00:00:00:00:09" });
    expect(JSON.stringify(list)).toBe(before);
  });

  it("M4 the result shares nothing with the input: changing it leaves the NAD's config alone", () => {
    const { conf } = applySelection(list, { ...sel, cniArgs: { vlan: 7 } });
    (conf.plugins[0]!.ipam as { type: string }).type = "changed";
    (conf.plugins[0]!.args as { cni: Record<string, unknown> }).cni.keep = 2;
    expect(list.plugins[0]!.ipam).toEqual({ type: "static" });
    expect(list.plugins[0]!.args).toEqual({ cni: { keep: 1 }, other: true });
  });

  it("M4 C3.2 capability values reach only the plugins that declare them, as runtimeConfig", () => {
    const { conf, capabilityArgs } = applySelection(list, {
      ...sel,
      ips: ["10.1.0.9/24"],
      mac: "02:00:00:00:00:09",
    });
    expect(buildPluginConf(conf, conf.plugins[0]!, capabilityArgs).runtimeConfig).toEqual({
      ips: ["10.1.0.9/24"],
    });
    expect(buildPluginConf(conf, conf.plugins[1]!, capabilityArgs).runtimeConfig).toEqual({
      mac: "02:00:00:00:00:09",
    });
  });

  it("M4 infiniband-guid, portMappings, bandwidth and deviceID become the CNI capabilities infinibandGUID, portMappings, bandwidth, deviceID", () => {
    const { conf, capabilityArgs } = applySelection(all, {
      ...sel,
      infinibandGuid: "c2:11:22:33:44:55:66:77",
      portMappings: [{ hostPort: 8080, containerPort: 80, protocol: "tcp" }],
      bandwidth: { ingressRate: 1000 },
      deviceID: "0000:00:1f.6",
    });
    expect(capabilityArgs).toEqual({
      infinibandGUID: "c2:11:22:33:44:55:66:77",
      portMappings: [{ hostPort: 8080, containerPort: 80, protocol: "tcp" }],
      bandwidth: { ingressRate: 1000 },
      deviceID: "0000:00:1f.6",
    });
    // None of these has an args.cni form: the plugins' configs are unchanged.
    expect(conf).toEqual(all);
    expect(buildPluginConf(conf, conf.plugins[0]!, capabilityArgs).runtimeConfig).toEqual({
      infinibandGUID: "c2:11:22:33:44:55:66:77",
      deviceID: "0000:00:1f.6",
    });
    expect(buildPluginConf(conf, conf.plugins[1]!, capabilityArgs).runtimeConfig).toEqual({
      portMappings: [{ hostPort: 8080, containerPort: 80, protocol: "tcp" }],
    });
  });

  it("M4 cni-args are merged into args.cni of every plugin, the selection's keys winning; ips/mac win over cni-args of the same name", () => {
    const { conf } = applySelection(list, {
      ...sel,
      cniArgs: { vlan: 7, keep: 2, ips: ["10.9.9.9"] },
      ips: ["10.1.0.9/24"],
    });
    expect(conf.plugins.map((p) => (p.args as { cni: unknown }).cni)).toEqual([
      { keep: 2, vlan: 7, ips: ["10.1.0.9/24"] },
      { keep: 2, vlan: 7, ips: ["10.1.0.9/24"] },
    ]);
  });

  it.each([
    ["portMappings", { portMappings: [{ hostPort: 1 }] }],
    ["bandwidth", { bandwidth: { ingressRate: 1 } }],
    ["infinibandGUID", { infinibandGuid: "c2:11:22:33:44:55:66:77" }],
    ["deviceID", { deviceID: "0000:00:1f.6" }],
  ])(
    "M4 a requested %s that no plugin declares fails with 7 naming it and the network (Multus drops it)",
    (cap, extra) => {
      expect(() => applySelection(list, { ...sel, ...extra })).toThrow(
        expect.objectContaining({
          code: 7,
          message: expect.stringMatching(
            new RegExp(`^network ns/net-a .*"${cap}".*"${cap}": true`),
          ),
        }),
      );
    },
  );

  it("M4 N4.1.2.1.3 N4.1.2.1.4 ips and mac are never refused for an undeclared capability: args.cni carries them to every plugin, runtimeConfig to none", () => {
    const noCaps: ConfList = {
      cniVersion: "1.0.0",
      name: "plain",
      plugins: [{ type: "macvlan", ipam: { type: "static" } }, { type: "tuning" }],
    };
    const { conf, capabilityArgs } = applySelection(noCaps, {
      ...sel,
      ips: ["10.1.0.9/24"],
      mac: "02:00:00:00:00:09",
    });
    for (const p of conf.plugins) {
      expect(p.args).toEqual({ cni: { ips: ["10.1.0.9/24"], mac: "02:00:00:00:00:09" } });
      expect(buildPluginConf(conf, p, capabilityArgs).runtimeConfig).toBeUndefined();
    }
  });

  it("M4 ips beside an undeclared portMappings request: only portMappings is named", () => {
    const noCaps: ConfList = {
      cniVersion: "1.0.0",
      name: "plain",
      plugins: [{ type: "macvlan", ipam: { type: "static" } }],
    };
    expect(() =>
      applySelection(noCaps, { ...sel, ips: ["10.1.0.9/24"], portMappings: [{ hostPort: 1 }] }),
    ).toThrow(
      expect.objectContaining({
        code: 7,
        message: expect.stringMatching(/requests "portMappings", but/),
      }),
    );
  });

  it("M4 a capability declared false does not count; several missing ones are named together", () => {
    const off: ConfList = {
      cniVersion: "1.0.0",
      name: "off",
      plugins: [{ type: "portmap", capabilities: { portMappings: false } }],
    };
    expect(() =>
      applySelection(off, {
        ...sel,
        portMappings: [{ hostPort: 1 }],
        bandwidth: { ingressRate: 1 },
      }),
    ).toThrow(
      expect.objectContaining({
        code: 7,
        message: expect.stringContaining(
          '"portMappings", "bandwidth", but no plugin of the network declares those capabilities',
        ),
      }),
    );
  });

  it("M4 an empty portMappings list or bandwidth object asks for nothing and needs no capability", () => {
    expect(applySelection(list, { ...sel, portMappings: [], bandwidth: {} })).toEqual({
      conf: list,
      capabilityArgs: {},
    });
  });

  it("M4 a selection asking nothing changes nothing", () => {
    expect(applySelection(list, sel)).toEqual({ conf: list, capabilityArgs: {} });
  });
});
