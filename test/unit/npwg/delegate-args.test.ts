import { describe, expect, it } from "vitest";
import type { ConfList } from "../../../src/cni/conf";
import { buildPluginConf } from "../../../src/exec/conflist";
import { applySelection } from "../../../src/npwg/delegate-args";

const list: ConfList = {
  cniVersion: "1.0.0",
  name: "net-a",
  plugins: [
    { type: "bridge", ipam: { type: "static" }, capabilities: { ips: true }, args: { cni: { keep: 1 }, other: true } },
    { type: "tuning", capabilities: { mac: true } },
  ],
};
const sel = { name: "net-a", namespace: "ns" };

describe("M4 N4.1.2.1.3 N4.1.2.1.4 selection → delegate", () => {
  it("N4.1.2.1.3 N4.1.2.1.4 ips and mac go to every plugin as args.cni, merged with what it had; the input is not mutated", () => {
    const before = JSON.stringify(list);
    const { conf, capabilityArgs } = applySelection(list, { ...sel, ips: ["10.1.0.9/24"], mac: "02:00:00:00:00:09" });
    expect(conf.plugins[0]!.args).toEqual({ cni: { keep: 1, ips: ["10.1.0.9/24"], mac: "02:00:00:00:00:09" }, other: true });
    expect(conf.plugins[1]!.args).toEqual({ cni: { ips: ["10.1.0.9/24"], mac: "02:00:00:00:00:09" } });
    expect(capabilityArgs).toEqual({ ips: ["10.1.0.9/24"], mac: "02:00:00:00:00:09" });
    expect(JSON.stringify(list)).toBe(before);
  });

  it("M4 C3.2 capability values reach only the plugins that declare them, as runtimeConfig", () => {
    const { conf, capabilityArgs } = applySelection(list, { ...sel, ips: ["10.1.0.9/24"], mac: "02:00:00:00:00:09" });
    expect(buildPluginConf(conf, conf.plugins[0]!, capabilityArgs).runtimeConfig).toEqual({ ips: ["10.1.0.9/24"] });
    expect(buildPluginConf(conf, conf.plugins[1]!, capabilityArgs).runtimeConfig).toEqual({ mac: "02:00:00:00:00:09" });
  });

  it("M4 cni-args are merged into args.cni of every plugin", () => {
    const { conf } = applySelection(list, { ...sel, cniArgs: { vlan: 7 } });
    expect(conf.plugins.map((p) => (p.args as { cni: unknown }).cni)).toEqual([{ keep: 1, vlan: 7 }, { vlan: 7 }]);
  });

  it.each([
    ["portMappings", { portMappings: [{ hostPort: 1 }] }],
    ["bandwidth", { bandwidth: { ingressRate: 1 } }],
    ["infinibandGUID", { infinibandGuid: "c2:11:22:33:44:55:66:77" }],
    ["deviceID", { deviceID: "0000:00:1f.6" }],
  ])("M4 a requested %s that no plugin declares fails with 7 naming it (Multus drops it)", (cap, extra) => {
    expect(() => applySelection(list, { ...sel, ...extra })).toThrow(expect.objectContaining({ code: 7, message: expect.stringContaining(`"${cap}"`) }));
  });

  it("M4 a selection asking nothing changes nothing", () => {
    expect(applySelection(list, sel)).toEqual({ conf: list, capabilityArgs: {} });
  });
});
