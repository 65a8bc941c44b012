import { describe, expect, it } from "vitest";
import { convertResult, toResult } from "../../../../src/cni/result/convert";
import { decodeResult } from "../../../../src/cni/result/decode";
import type { Result, Result020, Result040 } from "../../../../src/cni/result/types";
import { ALL_VERSIONS } from "../../../../src/cni/version";

/** A 1.1.0 result with everything the format carries, dual-stack. */
const full: Result = {
  cniVersion: "1.1.0",
  interfaces: [
    { name: "cni0", mac: "00:11:22:33:44:55" },
    { name: "eth0", mac: "0a:58:0a:01:00:05", mtu: 1450, sandbox: "/var/run/netns/p", socketPath: "/run/x.sock", pciID: "0000:00:1f.6" },
  ],
  ips: [
    { address: "10.1.0.5/24", gateway: "10.1.0.1", interface: 1 },
    { address: "fd00::5/64", gateway: "fd00::1", interface: 1 },
    { address: "10.9.0.5/24", interface: 1 },
  ],
  routes: [
    { dst: "0.0.0.0/0", gw: "10.1.0.1", mtu: 1400, priority: 10, table: 100, scope: 0 },
    { dst: "::/0", gw: "fd00::1" },
  ],
  dns: { nameservers: ["10.96.0.10"], domain: "cluster.local", search: ["default.svc.cluster.local"], options: ["ndots:5"] },
  "example.com/extra": { kept: true },
};

const v020: Result020 = {
  cniVersion: "0.2.0",
  ip4: { ip: "10.1.0.5/24", gateway: "10.1.0.1", routes: [{ dst: "0.0.0.0/0", gw: "10.1.0.1" }] },
  ip6: { ip: "fd00::5/64", routes: [{ dst: "::/0" }] },
  dns: { nameservers: ["10.96.0.10"] },
};

const v040: Result040 = {
  cniVersion: "0.4.0",
  interfaces: [{ name: "eth0", mac: "0a:58:0a:01:00:05", sandbox: "/var/run/netns/p" }],
  ips: [
    { version: "4", address: "10.1.0.5/24", gateway: "10.1.0.1", interface: 0 },
    { version: "6", address: "fd00::5/64", interface: 0 },
  ],
  routes: [{ dst: "0.0.0.0/0", gw: "10.1.0.1" }],
};

describe("C5.1 result conversion between all versions", () => {
  describe.each(ALL_VERSIONS)("to %s", (to) => {
    it(`C5.1 from 1.1.0, 0.4.0 and 0.2.0 to ${to}: the version is set and the shape is that version's`, () => {
      for (const from of [full, v040, v020]) {
        const out = convertResult(from, to) as Record<string, unknown>;
        expect(out.cniVersion).toBe(to);
        if (to === "0.1.0" || to === "0.2.0") {
          expect(out).not.toHaveProperty("ips");
          expect(out).not.toHaveProperty("interfaces");
          expect((out as unknown as Result020).ip4?.ip).toBe("10.1.0.5/24");
        } else {
          expect(out).not.toHaveProperty("ip4");
          const ips = out.ips as Array<Record<string, unknown>>;
          expect(ips[0]?.address).toBe("10.1.0.5/24");
          if (to.startsWith("0.")) expect(ips.map((i) => i.version)).toEqual(ips.map((i) => (String(i.address).includes(":") ? "6" : "4")));
          else expect(ips.every((i) => !("version" in i))).toBe(true);
        }
      }
    });

    it(`C5.1 a round trip 1.1.0 → ${to} → 1.1.0 keeps what ${to} can carry`, () => {
      const back = toResult(convertResult(full, to));
      if (to === "0.1.0" || to === "0.2.0") {
        // The first IPv4 and the first IPv6, routes split by family; no interfaces (libcni convertTo02x).
        expect(back.ips).toEqual([
          { address: "10.1.0.5/24", gateway: "10.1.0.1" },
          { address: "fd00::5/64", gateway: "fd00::1" },
        ]);
        expect(back.routes?.map((r) => r.dst)).toEqual(["0.0.0.0/0", "::/0"]);
        expect(back.interfaces).toBeUndefined();
      } else {
        expect(back.ips).toEqual(full.ips);
        expect(back.interfaces).toEqual(full.interfaces);
        expect(back.routes).toEqual(full.routes);
      }
      expect(back.dns?.nameservers).toEqual(["10.96.0.10"]);
      expect(back["example.com/extra"]).toEqual({ kept: true });
    });
  });

  it("C5.1 0.2.0 → 1.x: ip4/ip6 become ips without interface, their routes are merged", () => {
    expect(toResult(v020)).toEqual({
      cniVersion: "0.2.0",
      ips: [{ address: "10.1.0.5/24", gateway: "10.1.0.1" }, { address: "fd00::5/64" }],
      routes: [{ dst: "0.0.0.0/0", gw: "10.1.0.1" }, { dst: "::/0" }],
      dns: { nameservers: ["10.96.0.10"] },
    });
  });

  it("C5.1 a result without any IP cannot become 0.2.0 (code 1), as in libcni", () => {
    expect(() => convertResult({ cniVersion: "1.0.0", interfaces: [{ name: "eth0" }] }, "0.2.0")).toThrow(expect.objectContaining({ code: 1 }));
    expect(() => convertResult(full, "2.0.0")).toThrow(expect.objectContaining({ code: 1 }));
  });
});

describe("B55 B56 B58 B59 decoding a delegate's output", () => {
  it.each(["garbage", '{"cniVersion":"1.0.0",', "null", '{"cniVersion":"1.0.0"} trailing', "[]", ""])("B55 %j is code 100", (out) => {
    expect(() => decodeResult(out, "1.0.0", "plugin x")).toThrow(expect.objectContaining({ code: 100 }));
  });

  it("B56 exit 0 with an error object is that error", () => {
    expect(() => decodeResult('{"cniVersion":"1.0.0","code":11,"msg":"busy"}', "1.0.0", "plugin x")).toThrow(
      expect.objectContaining({ code: 11, message: expect.stringContaining("busy") }),
    );
  });

  it("B58 a result without or with an empty cniVersion is read as the config's version (cni#895); an unknown one is 100", () => {
    expect(decodeResult('{"ips":[{"version":"4","address":"10.0.0.2/24"}]}', "0.4.0", "p").cniVersion).toBe("0.4.0");
    expect(decodeResult('{"cniVersion":"","ip4":{"ip":"10.0.0.2/24"}}', "0.2.0", "p").cniVersion).toBe("0.2.0");
    expect(() => decodeResult('{"cniVersion":"7.0.0"}', "1.0.0", "p")).toThrow(expect.objectContaining({ code: 100 }));
    expect(() => decodeResult('{"cniVersion":"1.0.0","ips":[{"address":5}]}', "1.0.0", "p")).toThrow(expect.objectContaining({ code: 100, message: expect.stringContaining("ips[0].address") }));
  });

  it("B59 results missing interfaces or sandbox, or with an out-of-range interface index, still decode", () => {
    expect(toResult(decodeResult('{"cniVersion":"1.0.0","ips":[{"address":"10.0.0.2/24","interface":7}]}', "1.0.0", "p")).ips?.[0]?.interface).toBe(7);
    expect(decodeResult('{"cniVersion":"1.0.0","interfaces":[{"name":"eth0"}]}', "1.0.0", "p")).toMatchObject({ interfaces: [{ name: "eth0" }] });
  });
});
