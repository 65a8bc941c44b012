/**
 * C5.1: conversion between all seven result versions, against hand-written fixtures per version
 * family. The expected outputs below are written from libcni's `types/020`, `types/040` and
 * `types/100` conversion rules, not from this code's output.
 */
import { describe, expect, it } from "vitest";
import { Code } from "../../../../src/cni/errors";
import { convertResult, toResult } from "../../../../src/cni/result/convert";
import { familyOf, type AnyResult } from "../../../../src/cni/result/types";
import { ALL_VERSIONS } from "../../../../src/cni/version";

const dns = {
  nameservers: ["10.96.0.10", "fd00::10"],
  domain: "cluster.local",
  search: ["default.svc.cluster.local"],
  options: ["ndots:5"],
};

// ---- 0.1.0 / 0.2.0: ip4 and ip6, each with its routes.
const r020 = {
  cniVersion: "0.2.0",
  ip4: {
    ip: "10.1.0.5/24",
    gateway: "10.1.0.1",
    routes: [{ dst: "0.0.0.0/0", gw: "10.1.0.1" }, { dst: "192.168.0.0/16" }],
  },
  ip6: { ip: "fd00::5/64", gateway: "fd00::1", routes: [{ dst: "::/0", gw: "fd00::1" }] },
  dns,
  "example.com/extra": { from: "020" },
};
/** r020 in the 1.x shape: no interfaces, no interface indexes, routes in ip4-then-ip6 order. */
const r020as1x = {
  ips: [
    { address: "10.1.0.5/24", gateway: "10.1.0.1" },
    { address: "fd00::5/64", gateway: "fd00::1" },
  ],
  routes: [
    { dst: "0.0.0.0/0", gw: "10.1.0.1" },
    { dst: "192.168.0.0/16" },
    { dst: "::/0", gw: "fd00::1" },
  ],
  dns,
  "example.com/extra": { from: "020" },
};

// ---- 0.3.0 / 0.3.1 / 0.4.0: interfaces, ips with `version` and interface indexes.
const r040 = {
  cniVersion: "0.4.0",
  interfaces: [
    { name: "cni0", mac: "00:11:22:33:44:55" },
    { name: "veth1234", mac: "66:77:88:99:aa:bb" },
    { name: "eth0", mac: "0a:58:0a:01:00:05", sandbox: "/var/run/netns/p" },
  ],
  ips: [
    { version: "4", address: "10.1.0.5/24", gateway: "10.1.0.1", interface: 2 },
    { version: "6", address: "fd00::5/64", interface: 2 },
    { version: "4", address: "10.2.0.5/24", gateway: "10.2.0.1", interface: 2 },
  ],
  routes: [{ dst: "0.0.0.0/0", gw: "10.1.0.1" }, { dst: "::/0" }],
  dns,
  "example.com/extra": { from: "040" },
};
const r040as1x = {
  interfaces: r040.interfaces,
  ips: [
    { address: "10.1.0.5/24", gateway: "10.1.0.1", interface: 2 },
    { address: "fd00::5/64", interface: 2 },
    { address: "10.2.0.5/24", gateway: "10.2.0.1", interface: 2 },
  ],
  routes: r040.routes,
  dns,
  "example.com/extra": { from: "040" },
};
/**
 * libcni convertTo02x on r040: first IPv4, first IPv6, routes split by the family of dst;
 * interfaces gone.
 */
const r040as020 = {
  ip4: { ip: "10.1.0.5/24", gateway: "10.1.0.1", routes: [{ dst: "0.0.0.0/0", gw: "10.1.0.1" }] },
  ip6: { ip: "fd00::5/64", routes: [{ dst: "::/0" }] },
  dns,
  "example.com/extra": { from: "040" },
};

// ---- 1.0.0 / 1.1.0: interface mtu, socketPath, pciID; route mtu, priority, table, scope.
const r100 = {
  cniVersion: "1.1.0",
  interfaces: [
    { name: "eth0", mac: "0a:58:0a:01:00:05", mtu: 1450, sandbox: "/var/run/netns/p" },
    {
      name: "net1",
      mac: "0a:58:0a:09:00:05",
      mtu: 9000,
      sandbox: "/var/run/netns/p",
      socketPath: "/run/vhost/net1.sock",
      pciID: "0000:00:1f.6",
    },
  ],
  ips: [
    { address: "fd00::5/64", gateway: "fd00::1", interface: 0 },
    { address: "10.1.0.5/24", gateway: "10.1.0.1", interface: 0 },
    { address: "fd00:9::5/64", interface: 1 },
    { address: "10.9.0.5/24", interface: 1 },
  ],
  routes: [
    {
      dst: "0.0.0.0/0",
      gw: "10.1.0.1",
      mtu: 1400,
      advmss: 1360,
      priority: 10,
      table: 100,
      scope: 0,
    },
    { dst: "10.9.0.0/16", gw: "10.9.0.1", table: 200, scope: 253 },
    { dst: "::/0", gw: "fd00::1", priority: 1024 },
  ],
  dns,
  "example.com/extra": { from: "100" },
};
const r100as040ips = [
  { version: "6", address: "fd00::5/64", gateway: "fd00::1", interface: 0 },
  { version: "4", address: "10.1.0.5/24", gateway: "10.1.0.1", interface: 0 },
  { version: "6", address: "fd00:9::5/64", interface: 1 },
  { version: "4", address: "10.9.0.5/24", interface: 1 },
];
const r100as020 = {
  ip4: {
    ip: "10.1.0.5/24",
    gateway: "10.1.0.1",
    routes: [
      {
        dst: "0.0.0.0/0",
        gw: "10.1.0.1",
        mtu: 1400,
        advmss: 1360,
        priority: 10,
        table: 100,
        scope: 0,
      },
      { dst: "10.9.0.0/16", gw: "10.9.0.1", table: 200, scope: 253 },
    ],
  },
  ip6: {
    ip: "fd00::5/64",
    gateway: "fd00::1",
    routes: [{ dst: "::/0", gw: "fd00::1", priority: 1024 }],
  },
  dns,
  "example.com/extra": { from: "100" },
};

/**
 * Each source fixture at `version` with what every target family must get (cniVersion added by the
 * test).
 */
function sourceAt(version: string): {
  input: AnyResult;
  expected: Record<"020" | "040" | "100", Record<string, unknown>>;
} {
  switch (familyOf(version)) {
    case "020":
      return {
        input: { ...r020, cniVersion: version },
        expected: {
          "020": { ...r020 },
          "040": {
            ...r020as1x,
            ips: [
              { version: "4", ...r020as1x.ips[0] },
              { version: "6", ...r020as1x.ips[1] },
            ],
          },
          "100": r020as1x,
        },
      };
    case "040":
      return {
        input: { ...r040, cniVersion: version },
        expected: { "020": r040as020, "040": r040, "100": r040as1x },
      };
    case "100":
      return {
        input: { ...r100, cniVersion: version },
        expected: { "020": r100as020, "040": { ...r100, ips: r100as040ips }, "100": r100 },
      };
  }
}

function deepFreeze<T>(value: T): T {
  if (value && typeof value === "object") {
    Object.freeze(value);
    for (const v of Object.values(value)) deepFreeze(v);
  }
  return value;
}

describe.each(ALL_VERSIONS)("C5.1 converting a %s result", (from) => {
  describe.each(ALL_VERSIONS)("to %s", (to) => {
    it(`C5.1 ${from} → ${to} gives exactly the ${to} shape libcni gives (extra keys kept)`, () => {
      const { input, expected } = sourceAt(from);
      const out = convertResult(deepFreeze(structuredClone(input)), to);
      expect(out).toEqual({ ...expected[familyOf(to)], cniVersion: to });
    });

    it(`C5.1 ${from} → ${to} → ${from} keeps everything ${to} can carry`, () => {
      const { input } = sourceAt(from);
      const back = convertResult(convertResult(input, to), from);
      const lossy = familyOf(to) === "020" && familyOf(from) !== "020";
      if (!lossy) {
        // Between 0.3.0 and 1.1.0 nothing is lost: keys 0.4.0 does not define (interface mtu,
        // socketPath, pciID, route attributes) are passed through rather than dropped.
        expect(back).toEqual(input);
        return;
      }
      // Through 0.2.0 only the first IPv4 and IPv6 survive, without interfaces or indexes; routes
      // of a family survive with their attributes; dns and extra keys survive.
      const r = toResult(back);
      expect(r.interfaces).toBeUndefined();
      expect(r.ips).toEqual(
        familyOf(from) === "040"
          ? [{ address: "10.1.0.5/24", gateway: "10.1.0.1" }, { address: "fd00::5/64" }]
          : [
              { address: "10.1.0.5/24", gateway: "10.1.0.1" },
              { address: "fd00::5/64", gateway: "fd00::1" },
            ],
      );
      // Every fixture route has an IP of its family, so all come back, IPv4 ones first.
      expect(r.routes).toEqual([...(input as { routes: unknown[] }).routes].sort(byFamily));
      expect(r.dns).toEqual(dns);
      expect(r["example.com/extra"]).toEqual(
        (input as Record<string, unknown>)["example.com/extra"],
      );
    });
  });
});

/**
 * 0.2.0 keeps the IPv4 routes (under ip4) before the IPv6 ones (under ip6); stable within a family.
 */
function byFamily(left: unknown, right: unknown): number {
  const f = (r: unknown) => ((r as { dst: string }).dst.includes(":") ? 1 : 0);
  return f(left) - f(right);
}

describe("C5.1 libcni conversion rules", () => {
  it("C5.1 1.x → 0.2.0 takes the first IPv4 and the first IPv6, whatever their order", () => {
    const out = convertResult(r100, "0.2.0") as typeof r100as020;
    expect(out.ip4.ip).toBe("10.1.0.5/24");
    expect(out.ip6.ip).toBe("fd00::5/64");
  });

  it("C5.1 1.x → 0.2.0 with only IPv4 has no ip6, and an IPv6 route is dropped as libcni drops it", () => {
    const out = convertResult(
      {
        cniVersion: "1.0.0",
        ips: [{ address: "10.1.0.5/24" }],
        routes: [{ dst: "0.0.0.0/0" }, { dst: "::/0" }],
      },
      "0.2.0",
    );
    expect(out).toEqual({
      cniVersion: "0.2.0",
      ip4: { ip: "10.1.0.5/24", routes: [{ dst: "0.0.0.0/0" }] },
    });
  });

  it("C5.1 a result without any IP cannot become 0.1.0 or 0.2.0: code 1", () => {
    for (const to of ["0.1.0", "0.2.0"]) {
      expect(() =>
        convertResult({ cniVersion: "1.0.0", interfaces: [{ name: "eth0" }] }, to),
      ).toThrow(expect.objectContaining({ code: Code.IncompatibleVersion }));
      expect(() => convertResult({ cniVersion: "0.4.0", ips: [] }, to)).toThrow(
        expect.objectContaining({ code: Code.IncompatibleVersion }),
      );
    }
  });

  it("C5.1 a result without any IP converts fine between 0.3.0 and 1.1.0", () => {
    expect(
      convertResult({ cniVersion: "1.1.0", interfaces: [{ name: "eth0", mtu: 1500 }] }, "0.3.0"),
    ).toEqual({
      cniVersion: "0.3.0",
      interfaces: [{ name: "eth0", mtu: 1500 }],
    });
  });

  it("C5.1 0.2.0 → 1.x has no interfaces and no interface indexes", () => {
    const out = convertResult(r020, "1.0.0");
    expect(out).not.toHaveProperty("interfaces");
    expect(toResult(out).ips?.some((i) => "interface" in i)).toBe(false);
  });

  it('C5.1 → 0.3.x/0.4.0 each IP gets version "4" or "6" from its address, even over a stray version key', () => {
    const out = convertResult(
      {
        cniVersion: "1.0.0",
        ips: [{ address: "fd00::5/64", version: "4" } as never, { address: "10.0.0.1/8" }],
      },
      "0.4.0",
    );
    expect(out).toEqual({
      cniVersion: "0.4.0",
      ips: [
        { version: "6", address: "fd00::5/64" },
        { version: "4", address: "10.0.0.1/8" },
      ],
    });
  });

  it("C5.1 0.4.0 → 1.x drops `version` from every IP", () => {
    expect(JSON.stringify(convertResult(r040, "1.1.0"))).not.toContain('"version"');
  });

  it("C5.1 converting to an unknown version is code 1 listing the supported ones", () => {
    for (const v of ["2.0.0", "1.0", ""]) {
      expect(() => convertResult(r100, v)).toThrow(
        expect.objectContaining({
          code: Code.IncompatibleVersion,
          message: expect.stringContaining("0.1.0, 0.2.0"),
        }),
      );
    }
  });

  it("C5.1 toResult keeps the result's own version and does not touch its input", () => {
    const input = deepFreeze(structuredClone(r040));
    expect(toResult(input).cniVersion).toBe("0.4.0");
    expect(toResult(input)).toEqual({ ...r040as1x, cniVersion: "0.4.0" });
  });
});
