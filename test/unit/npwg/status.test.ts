import { describe, expect, it } from "vitest";
import { buildNetworkStatus, buildNetworkStatusAnnotation, checkAnnotationBudget } from "../../../src/npwg/status";
import { NETWORK_STATUS_ANNOTATION } from "../../../src/npwg/types";

const bridgeResult = {
  cniVersion: "1.0.0",
  interfaces: [
    { name: "cni0", mac: "00:11:22:33:44:55" },
    { name: "vethabc", mac: "66:77:88:99:aa:bb" },
    { name: "eth0", mac: "0a:58:0a:01:00:05", mtu: 1450, sandbox: "/var/run/netns/p" },
  ],
  ips: [
    { address: "10.1.0.5/24", gateway: "10.1.0.1", interface: 2 },
    { address: "fd00::5/64", interface: 2 },
    { address: "10.9.9.9/24", interface: 0 },
  ],
  dns: { nameservers: ["10.96.0.10"], domain: "cluster.local", search: ["ns.svc.cluster.local"], options: ["ndots:5"] },
};

describe("N5 network-status entries", () => {
  it("N5.3.1 N5.3.2 N5.3.3 N5.3.4 N5.3.5 N5.3.6 M6 the first sandbox interface, its IPs (no prefix), MAC, MTU, DNS, default", () => {
    expect(buildNetworkStatus({ name: "ns/net-a", isDefault: false, ifName: "net1", result: bridgeResult })).toEqual({
      name: "ns/net-a",
      interface: "eth0",
      ips: ["10.1.0.5", "fd00::5"],
      mac: "0a:58:0a:01:00:05",
      mtu: 1450,
      default: false,
      dns: { nameservers: ["10.96.0.10"], domain: "cluster.local", search: ["ns.svc.cluster.local"] },
    });
  });

  it("N5.2 N5.3.5 the default network's entry says default: true; M6 default is always written", () => {
    expect(buildNetworkStatus({ name: "cbr0", isDefault: true, ifName: "eth0", result: bridgeResult }).default).toBe(true);
    expect(buildNetworkStatus({ name: "x/y", isDefault: false, ifName: "net1" })).toHaveProperty("default", false);
  });

  it("N5.1.1 no result: a minimal entry (name, interface, default)", () => {
    expect(buildNetworkStatus({ name: "ns/net-a", isDefault: false, ifName: "net1" })).toEqual({ name: "ns/net-a", interface: "net1", default: false });
  });

  it("N5.3.3 without any sandbox interface, the IPs with no (or a negative) interface index", () => {
    const r = { cniVersion: "0.4.0", interfaces: [{ name: "br0" }], ips: [{ version: "4", address: "10.2.0.2/24" }, { version: "4", address: "10.3.0.2/24", interface: 0 }] };
    expect(buildNetworkStatus({ name: "n", isDefault: false, ifName: "net1", result: r as never })).toEqual({ name: "n", interface: "net1", ips: ["10.2.0.2"], default: false });
  });

  it("N5.3.2 N5.3.3 a 0.2.0 result: the CNI_IFNAME used, ip4 and ip6", () => {
    const r = { cniVersion: "0.2.0", ip4: { ip: "10.4.0.2/24" }, ip6: { ip: "fd04::2/64" } };
    expect(buildNetworkStatus({ name: "n", isDefault: false, ifName: "net3", result: r })).toEqual({ name: "n", interface: "net3", ips: ["10.4.0.2", "fd04::2"], default: false });
  });

  it("B59 an out-of-range interface index or a result without interfaces gives a minimal entry, no crash", () => {
    const r = { cniVersion: "1.0.0", ips: [{ address: "10.5.0.2/24", interface: 9 }] };
    expect(buildNetworkStatus({ name: "n", isDefault: false, ifName: "net1", result: r })).toEqual({ name: "n", interface: "net1", default: false });
  });

  it("M6 gateway from default-route and device-info are carried", () => {
    const s = buildNetworkStatus({ name: "n", isDefault: false, ifName: "net1", result: bridgeResult, gateway: ["10.1.0.1"], deviceInfo: { type: "pci", version: "1.1.0" } });
    expect(s.gateway).toEqual(["10.1.0.1"]);
    expect(s["device-info"]).toEqual({ type: "pci", version: "1.1.0" });
  });
});

describe("N5.2 B26 B27 the annotation", () => {
  it("N5.2 exactly one default entry, or it refuses", () => {
    const d = { name: "d", default: true };
    const o = { name: "o", default: false };
    expect(JSON.parse(buildNetworkStatusAnnotation([d, o]))).toEqual([d, o]);
    expect(() => buildNetworkStatusAnnotation([o])).toThrow();
    expect(() => buildNetworkStatusAnnotation([d, d])).toThrow();
  });

  it("B26 annotations that would pass 256 KiB with the status are refused with a clear message; B27 a user's pre-set status does not count", () => {
    const big = { "example.com/blob": "x".repeat(256 * 1024 - 200) };
    expect(() => checkAnnotationBudget(big, "[]".padEnd(400, " "))).toThrow(expect.objectContaining({ code: 7, message: expect.stringContaining("262144-byte limit") }));
    expect(() => checkAnnotationBudget({ [NETWORK_STATUS_ANNOTATION]: "y".repeat(200 * 1024) }, "[]")).not.toThrow();
  });
});
