import { describe, expect, it } from "vitest";
import { resolveNadConfig, type ConfFile } from "../../../src/npwg/nad";
import type { Nad } from "../../../src/npwg/types";

const nad = (config?: unknown, name = "net-a"): Nad => ({ metadata: { name, namespace: "ns" }, ...(config === undefined ? {} : { spec: { config: config as string } }) });
const bridge = { cniVersion: "1.0.0", name: "net-a", type: "bridge", bridge: "br-a" };

describe("N3.4.1 NAD → delegate config", () => {
  it("N3.4.1 spec.config first: a single config becomes a one-plugin list", () => {
    const r = resolveNadConfig(nad(JSON.stringify(bridge)), [{ path: "/etc/cni/net.d/net-a.conflist", content: JSON.stringify({ ...bridge, plugins: [{ type: "macvlan" }] }) }]);
    expect(r.source).toBe("spec.config");
    expect(r.conf).toEqual({ cniVersion: "1.0.0", name: "net-a", plugins: [{ ...bridge }] });
  });

  it("N3.4.1 a conflist in spec.config keeps its plugins in order", () => {
    const r = resolveNadConfig(nad(JSON.stringify({ cniVersion: "1.0.0", name: "net-a", plugins: [{ type: "bridge" }, { type: "tuning", mac: "02:00:00:00:00:01" }] })), []);
    expect(r.conf.plugins.map((p) => p.type)).toEqual(["bridge", "tuning"]);
  });

  it("N3.2 N3.4.1 without spec.config, a .conflist whose name matches wins over a .conf that sorts first (Multus takes the .conf)", () => {
    const files: ConfFile[] = [
      { path: "/d/00-net-a.conf", content: JSON.stringify({ ...bridge, bridge: "from-conf" }) },
      { path: "/d/99-net-a.conflist", content: JSON.stringify({ cniVersion: "1.0.0", name: "net-a", plugins: [{ type: "bridge", bridge: "from-conflist" }] }) },
      { path: "/d/10-other.conflist", content: JSON.stringify({ cniVersion: "1.0.0", name: "other", plugins: [{ type: "bridge" }] }) },
    ];
    const r = resolveNadConfig(nad(), files);
    expect(r.source).toBe("/d/99-net-a.conflist");
    expect(r.conf.plugins[0]?.bridge).toBe("from-conflist");
  });

  it("N3.4.1 then a .conf or .json whose name matches; broken files are skipped with a warning", () => {
    const files: ConfFile[] = [
      { path: "/d/01-broken.conflist", content: "{nope" },
      { path: "/d/02-net-a.json", content: JSON.stringify(bridge) },
    ];
    const r = resolveNadConfig(nad(""), files);
    expect(r.source).toBe("/d/02-net-a.json");
    expect(r.warnings).toEqual(["/d/01-broken.conflist is not valid JSON; skipped"]);
  });

  it("B32 N3.4.1 no spec.config and no file of that name → 7 naming the NAD", () => {
    expect(() => resolveNadConfig(nad(), [{ path: "/d/x.conf", content: JSON.stringify({ ...bridge, name: "x" }) }])).toThrow(
      expect.objectContaining({ code: 7, message: expect.stringContaining("ns/net-a has no spec.config") }),
    );
  });

  it("N3.4.2 a config without a name gets the NAD's; N3.4.3 a different name is kept and warned about", () => {
    const { name: _n, ...unnamed } = bridge;
    expect(resolveNadConfig(nad(JSON.stringify(unnamed)), []).conf.name).toBe("net-a");
    const r = resolveNadConfig(nad(JSON.stringify({ ...bridge, name: "other-name" })), []);
    expect(r.conf.name).toBe("other-name");
    expect(r.warnings[0]).toContain('differs from the NAD\'s name "net-a"');
  });

  it.each([
    ["not JSON", "{not json"],
    ["JSON null", "null"],
    ["a list", "[]"],
    ["over 1 MiB", JSON.stringify({ ...bridge, pad: "x".repeat(1024 * 1024) })],
  ])("B29 spec.config %s → 7 naming the NAD", (_label, config) => {
    expect(() => resolveNadConfig(nad(config), [])).toThrow(expect.objectContaining({ code: 7, message: expect.stringContaining("ns/net-a") }));
  });

  it.each([
    ["empty plugins", { cniVersion: "1.0.0", name: "net-a", plugins: [] }],
    ["a plugin without type", { cniVersion: "1.0.0", name: "net-a", plugins: [{ bridge: "x" }] }],
    ["type with a path", { ...bridge, type: "../bin/sh" }],
  ])("B31 B30 %s → 7 naming the NAD", (_label, config) => {
    expect(() => resolveNadConfig(nad(JSON.stringify(config)), [])).toThrow(expect.objectContaining({ code: 7, message: expect.stringContaining("ns/net-a") }));
  });
});
