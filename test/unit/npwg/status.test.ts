import { describe, expect, it } from "vitest";
import {
  buildNetworkStatus,
  buildNetworkStatusAnnotation,
  checkAnnotationBudget,
  MAX_ANNOTATIONS_BYTES,
} from "../../../src/npwg/status";
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
  dns: {
    nameservers: ["10.96.0.10"],
    domain: "cluster.local",
    search: ["ns.svc.cluster.local"],
    options: ["ndots:5"],
  },
};

describe("N5 network-status entries", () => {
  it("N5.3.1 N5.3.2 N5.3.3 N5.3.4 N5.3.5 N5.3.6 M6 the first sandbox interface, its IPs (no prefix), MAC, MTU, DNS, default", () => {
    expect(
      buildNetworkStatus({
        name: "ns/net-a",
        isDefault: false,
        ifName: "net1",
        result: bridgeResult,
      }),
    ).toEqual({
      name: "ns/net-a",
      interface: "eth0",
      ips: ["10.1.0.5", "fd00::5"],
      mac: "0a:58:0a:01:00:05",
      mtu: 1450,
      default: false,
      dns: {
        nameservers: ["10.96.0.10"],
        domain: "cluster.local",
        search: ["ns.svc.cluster.local"],
      },
    });
  });

  it("N5.2 N5.3.5 the default network's entry says default: true; M6 default is always written", () => {
    expect(
      buildNetworkStatus({ name: "cbr0", isDefault: true, ifName: "eth0", result: bridgeResult })
        .default,
    ).toBe(true);
    expect(buildNetworkStatus({ name: "x/y", isDefault: false, ifName: "net1" })).toHaveProperty(
      "default",
      false,
    );
  });

  it("N5.1.1 no result: a minimal entry (name, interface, default)", () => {
    expect(buildNetworkStatus({ name: "ns/net-a", isDefault: false, ifName: "net1" })).toEqual({
      name: "ns/net-a",
      interface: "net1",
      default: false,
    });
  });

  it("N5.3.3 without any sandbox interface, the IPs with no (or a negative) interface index", () => {
    const r = {
      cniVersion: "0.4.0",
      interfaces: [{ name: "br0" }],
      ips: [
        { version: "4", address: "10.2.0.2/24" },
        { version: "4", address: "10.3.0.2/24", interface: 0 },
      ],
    };
    expect(
      buildNetworkStatus({ name: "n", isDefault: false, ifName: "net1", result: r as never }),
    ).toEqual({
      name: "n",
      interface: "net1",
      ips: ["10.2.0.2"],
      default: false,
    });
  });

  it("N5.3.2 N5.3.3 a 0.2.0 result: the CNI_IFNAME used, ip4 and ip6", () => {
    const r = { cniVersion: "0.2.0", ip4: { ip: "10.4.0.2/24" }, ip6: { ip: "fd04::2/64" } };
    expect(buildNetworkStatus({ name: "n", isDefault: false, ifName: "net3", result: r })).toEqual({
      name: "n",
      interface: "net3",
      ips: ["10.4.0.2", "fd04::2"],
      default: false,
    });
  });

  it("B59 an out-of-range interface index or a result without interfaces gives a minimal entry, no crash", () => {
    const r = { cniVersion: "1.0.0", ips: [{ address: "10.5.0.2/24", interface: 9 }] };
    expect(buildNetworkStatus({ name: "n", isDefault: false, ifName: "net1", result: r })).toEqual({
      name: "n",
      interface: "net1",
      default: false,
    });
  });

  it("N5.3.2 N5.3.3 a 0.4.0 result is read like 1.0.0 (first sandbox interface, its IPs)", () => {
    const r = {
      ...bridgeResult,
      cniVersion: "0.4.0",
      ips: bridgeResult.ips.map((ip) => ({ ...ip, version: ip.address.includes(":") ? "6" : "4" })),
    };
    expect(
      buildNetworkStatus({ name: "n", isDefault: false, ifName: "net1", result: r as never }),
    ).toMatchObject({
      interface: "eth0",
      ips: ["10.1.0.5", "fd00::5"],
      mac: "0a:58:0a:01:00:05",
    });
  });

  it("N5.1.1 N5.3.2 with several sandbox interfaces the first one is the entry's", () => {
    const r = {
      cniVersion: "1.0.0",
      interfaces: [
        { name: "host" },
        { name: "a0", sandbox: "/p", mac: "02:00:00:00:00:0a" },
        { name: "b0", sandbox: "/p", mac: "02:00:00:00:00:0b" },
      ],
      ips: [
        { address: "10.0.0.2/24", interface: 2 },
        { address: "10.0.0.1/24", interface: 1 },
      ],
    };
    expect(buildNetworkStatus({ name: "n", isDefault: false, ifName: "net1", result: r })).toEqual({
      name: "n",
      interface: "a0",
      mac: "02:00:00:00:00:0a",
      ips: ["10.0.0.1"],
      default: false,
    });
  });

  it("N5.3.4 no mac on the sandbox interface: no mac key; N5.3.6 dns without content: no dns key", () => {
    const r = {
      cniVersion: "1.0.0",
      interfaces: [{ name: "eth0", sandbox: "/p" }],
      ips: [{ address: "10.0.0.1/24", interface: 0 }],
      dns: { options: ["ndots:5"] },
    };
    const s = buildNetworkStatus({ name: "d", isDefault: true, ifName: "eth0", result: r });
    expect(s).toEqual({ name: "d", interface: "eth0", ips: ["10.0.0.1"], default: true });
    expect(s).not.toHaveProperty("mac");
    expect(s).not.toHaveProperty("dns");
  });

  it("N5.3.6 only the DNS fields that are present are written", () => {
    const r = { cniVersion: "1.0.0", dns: { search: ["a.b"] } };
    expect(
      buildNetworkStatus({ name: "n", isDefault: false, ifName: "net1", result: r }).dns,
    ).toEqual({
      search: ["a.b"],
    });
  });

  it.each([
    [
      "an empty sandbox",
      {
        cniVersion: "1.0.0",
        interfaces: [{ name: "net1", sandbox: "" }],
        ips: [{ address: "10.0.0.1/24", interface: 0 }],
      },
    ],
    ["interfaces not a list", { cniVersion: "1.0.0", interfaces: { name: "x" }, ips: "nope" }],
    [
      "garbage entries",
      {
        cniVersion: "1.0.0",
        interfaces: [null, 5, { sandbox: "/p" }],
        ips: [null, { address: 7 }, { interface: 0 }],
      },
    ],
    [
      "a 0.4.0 result whose ips is not a list",
      { cniVersion: "0.4.0", ips: { address: "10.0.0.1/24" } },
    ],
    [
      "dns of the wrong shape",
      { cniVersion: "1.0.0", dns: { nameservers: "10.0.0.10", search: [1, 2] } },
    ],
    [
      "mtu not a positive integer",
      { cniVersion: "1.0.0", interfaces: [{ name: "x0", sandbox: "/p", mtu: -1 }] },
    ],
  ])("B59 a result with %s gives a small entry, no crash", (_what, r) => {
    const s = buildNetworkStatus({
      name: "n",
      isDefault: false,
      ifName: "net1",
      result: r as never,
    });
    expect(s).toMatchObject({ name: "n", default: false });
    expect(typeof s.interface).toBe("string");
    expect(s).not.toHaveProperty("ips");
    expect(s).not.toHaveProperty("dns");
    expect(s).not.toHaveProperty("mtu");
  });

  it("N5.3.3 without a sandbox interface, IPs with a negative index count too", () => {
    const r = {
      cniVersion: "1.0.0",
      ips: [{ address: "10.6.0.2/24", interface: -1 }, { address: "10.6.0.3/24" }],
    };
    expect(
      buildNetworkStatus({ name: "n", isDefault: false, ifName: "net1", result: r }).ips,
    ).toEqual(["10.6.0.2", "10.6.0.3"]);
  });

  it("M6 gateway from default-route and device-info are carried", () => {
    const s = buildNetworkStatus({
      name: "n",
      isDefault: false,
      ifName: "net1",
      result: bridgeResult,
      gateway: ["10.1.0.1"],
      deviceInfo: { type: "pci", version: "1.1.0" },
    });
    expect(s.gateway).toEqual(["10.1.0.1"]);
    expect(s["device-info"]).toEqual({ type: "pci", version: "1.1.0" });
  });
});

describe("N5.2 B26 B27 the annotation", () => {
  it("N5.2 exactly one default entry, or it refuses", () => {
    const d = { name: "d", default: true };
    const o = { name: "o", default: false };
    expect(JSON.parse(buildNetworkStatusAnnotation([d, o]))).toEqual([d, o]);
    expect(() => buildNetworkStatusAnnotation([o])).toThrow(
      expect.objectContaining({ code: 999, message: expect.stringContaining("has 0") }),
    );
    expect(() => buildNetworkStatusAnnotation([d, d])).toThrow(
      expect.objectContaining({ code: 999, message: expect.stringContaining("has 2") }),
    );
    expect(() => buildNetworkStatusAnnotation([])).toThrow(expect.objectContaining({ code: 999 }));
  });

  it("B26 annotations that would pass 256 KiB with the status are refused with a clear message; B27 a user's pre-set status does not count", () => {
    const big = { "example.com/blob": "x".repeat(256 * 1024 - 200) };
    expect(() => checkAnnotationBudget(big, "[]".padEnd(400, " "))).toThrow(
      expect.objectContaining({ code: 7, message: expect.stringContaining("262144-byte limit") }),
    );
    expect(() =>
      checkAnnotationBudget({ [NETWORK_STATUS_ANNOTATION]: "y".repeat(200 * 1024) }, "[]"),
    ).not.toThrow();
  });

  it("B26 a network-status made large by a network's echoed dns names its size, the largest entry, its network and field, not the pod's annotations", () => {
    const search = Array.from({ length: 3000 }, (_, i) => `zone${i}.example.com`.padEnd(90, "x"));
    const value = buildNetworkStatusAnnotation([
      { name: "cluster", interface: "eth0", default: true },
      { name: "app/big-dns", interface: "net1", default: false, dns: { search } },
    ]);
    const valueBytes = Buffer.byteLength(value);
    expect(valueBytes).toBeGreaterThan(MAX_ANNOTATIONS_BYTES);
    const err = (() => {
      try {
        checkAnnotationBudget({ "example.com/note": "short" }, value);
      } catch (e) {
        return e as { code: number; message: string };
      }
      return undefined;
    })();
    expect(err?.code).toBe(7);
    expect(err?.message).toContain(`the network-status value is ${valueBytes} bytes`);
    expect(err?.message).toMatch(/largest entry is network "app\/big-dns"'s, \d+ bytes/);
    expect(err?.message).toMatch(/\d+ of them its "dns"/);
    expect(err?.message).toContain('the largest, "example.com/note"');
    expect(err?.message).toContain("make the network of the largest entry return less");
    expect(err?.message).not.toContain("shorten the pod's annotations");
  });

  it("B26 the limit is the API server's: keys and values in bytes, exactly 256 KiB allowed", () => {
    expect(MAX_ANNOTATIONS_BYTES).toBe(262144);
    const status = "[]";
    const fixed = Buffer.byteLength(NETWORK_STATUS_ANNOTATION) + status.length + "k".length;
    expect(() =>
      checkAnnotationBudget({ k: "x".repeat(MAX_ANNOTATIONS_BYTES - fixed) }, status),
    ).not.toThrow();
    expect(() =>
      checkAnnotationBudget({ k: "x".repeat(MAX_ANNOTATIONS_BYTES - fixed + 1) }, status),
    ).toThrow(expect.objectContaining({ code: 7 }));
    // Multi-byte characters count as bytes, not characters.
    expect(() =>
      checkAnnotationBudget({ k: "é".repeat((MAX_ANNOTATIONS_BYTES - fixed) / 2 + 1) }, status),
    ).toThrow(expect.objectContaining({ code: 7 }));
  });
});
