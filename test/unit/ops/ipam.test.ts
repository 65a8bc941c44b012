/** `plexus validate`'s IPAM checks: subnets, ranges inside them, overlaps. */
import { describe, expect, it } from "vitest";
import { checkIpam, overlaps, parseCidr } from "../../../src/ops/ipam";

describe("parseCidr", () => {
  it("IPv4 and IPv6 prefixes, host bits ignored; garbage refused", () => {
    expect(parseCidr("10.1.2.3/24")).toEqual({ family: 4, first: 0x0a010200n, last: 0x0a0102ffn });
    expect(parseCidr("fd00::/120")).toEqual({
      family: 6,
      first: 0xfd00n << 112n,
      last: (0xfd00n << 112n) | 0xffn,
    });
    expect(parseCidr("::ffff:10.0.0.0/120")?.family).toBe(6);
    for (const bad of ["10.1.2.0", "10.1.2.0/33", "10.1.2/24", "x/8", "fd00::/129"])
      expect(parseCidr(bad)).toBeUndefined();
  });
});

describe("checkIpam", () => {
  it("host-local ranges: inside the subnet, ordered, gateway inside; the ranges it hands out", () => {
    const ok = checkIpam(
      {
        type: "host-local",
        ranges: [
          [
            {
              subnet: "10.0.0.0/24",
              rangeStart: "10.0.0.10",
              rangeEnd: "10.0.0.20",
              gateway: "10.0.0.1",
            },
          ],
          [{ subnet: "fd00::/64" }],
        ],
      },
      "p",
    );
    expect(ok.errors).toEqual([]);
    expect(ok.ranges.map((r) => r.text)).toEqual([
      "10.0.0.10-10.0.0.20 in 10.0.0.0/24",
      "fd00::/64",
    ]);
    const bad = checkIpam(
      {
        type: "host-local",
        subnet: "10.0.0.0/24",
        rangeStart: "10.0.0.30",
        rangeEnd: "10.0.0.20",
        gateway: "10.0.1.1",
      },
      "p",
    );
    expect(bad.errors).toEqual([
      "p: ipam: gateway 10.0.1.1 is outside subnet 10.0.0.0/24",
      "p: ipam: rangeStart 10.0.0.30 is after rangeEnd 10.0.0.20",
    ]);
    expect(checkIpam({ type: "host-local", subnet: "10.0.0.0/40" }, "p").errors).toEqual([
      'p: ipam: subnet "10.0.0.0/40" is not an address/prefix (e.g. 10.1.0.0/24)',
    ]);
    expect(
      checkIpam(
        { type: "host-local", ranges: [[{ subnet: "10.0.0.0/24", rangeEnd: "fd00::1" }]] },
        "p",
      ).errors,
    ).toEqual(['p: ipam.ranges[0][0]: rangeEnd "fd00::1" is not an IPv4 address']);
  });

  it("whereabouts and static; other IPAM types are not checked", () => {
    expect(
      checkIpam({ type: "whereabouts", range: "10.2.0.0/24", range_start: "10.2.0.5" }, "p")
        .ranges[0]!.text,
    ).toBe("10.2.0.5-… in 10.2.0.0/24");
    expect(checkIpam({ type: "whereabouts", range: "10.2.0.10-10.2.0.20/24" }, "p").errors).toEqual(
      [],
    );
    expect(checkIpam({ type: "static", addresses: [{ address: "10.3.0.5" }] }, "p").errors).toEqual(
      ['p: ipam.addresses[0].address "10.3.0.5" is not an address/prefix'],
    );
    expect(checkIpam({ type: "dhcp" }, "p")).toEqual({ errors: [], ranges: [] });
  });

  it("overlaps: same family and intersecting", () => {
    const [a] = checkIpam(
      { type: "host-local", subnet: "10.0.0.0/24", rangeStart: "10.0.0.100" },
      "p",
    ).ranges;
    const [b] = checkIpam({ type: "host-local", subnet: "10.0.0.0/25" }, "p").ranges;
    const [c] = checkIpam({ type: "host-local", subnet: "10.0.0.0/26" }, "p").ranges;
    expect(overlaps(a!, b!)).toBe(true);
    expect(overlaps(a!, c!)).toBe(false);
  });
});
