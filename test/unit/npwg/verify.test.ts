import { describe, expect, it } from "vitest";
import type { Result } from "../../../src/cni/result/types";
import { verifyAttachment } from "../../../src/npwg/verify";
import type { NetworkSelection } from "../../../src/npwg/types";

/** A bridge-style result: host bridge and veth first, the pod's interface last. */
const result: Result = {
  cniVersion: "1.0.0",
  interfaces: [
    { name: "br0", mac: "aa:aa:aa:aa:aa:aa" },
    { name: "veth1" },
    { name: "net1", mac: "02:00:00:00:00:01", sandbox: "/var/run/netns/p" },
  ],
  ips: [
    { address: "10.1.0.5/24", interface: 2 },
    { address: "fd00::0005/64", interface: 2 },
    { address: "10.9.0.9/24", interface: 0 },
  ],
};
const sel = (extra: Partial<NetworkSelection>): NetworkSelection => ({
  name: "net-a",
  namespace: "ns",
  ...extra,
});

function failure(
  result: Result,
  selection: NetworkSelection,
  ifName = "net1",
): { code: number; message: string } {
  try {
    verifyAttachment(result, selection, ifName);
  } catch (e) {
    return e as { code: number; message: string };
  }
  throw new Error("expected the verification to fail");
}

describe("N4.1.2.1.3 requested IPs are checked after ADD", () => {
  it("N4.1.2.1.3 a selection without ips or mac asks for nothing to be checked", () => {
    expect(() => verifyAttachment({ cniVersion: "1.0.0" }, sel({}), "net1")).not.toThrow();
  });

  it.each([["10.1.0.5"], ["10.1.0.5/24"], ["fd00::5"], ["FD00:0::5/64"], ["fd00:0:0:0:0:0:0:5"]])(
    "N4.1.2.1.3 %s on the sandbox interface passes",
    (ip) => {
      expect(() => verifyAttachment(result, sel({ ips: [ip] }), "net1")).not.toThrow();
    },
  );

  it("N4.1.2.1.3 every requested IP must be there", () => {
    expect(() =>
      verifyAttachment(result, sel({ ips: ["10.1.0.5", "fd00::5"] }), "net1"),
    ).not.toThrow();
    expect(failure(result, sel({ ips: ["10.1.0.5", "10.1.0.6"] })).message).toContain(
      "requested IPs 10.1.0.6 were not assigned",
    );
  });

  it("N4.1.2.1.3 a requested prefix must match; without one the prefix is ignored", () => {
    expect(failure(result, sel({ ips: ["10.1.0.5/16"] }))).toMatchObject({
      code: 103,
      message: expect.stringContaining("10.1.0.5/16"),
    });
    expect(() => verifyAttachment(result, sel({ ips: ["10.1.0.5"] }), "net1")).not.toThrow();
  });

  it("N4.1.2.1.3 an address on a host-side interface does not count; the message names network, interface, wanted and got", () => {
    expect(failure(result, sel({ ips: ["10.9.0.9"] }))).toEqual(
      expect.objectContaining({
        code: 103,
        message: expect.stringMatching(
          /^network ns\/net-a \(net1\): requested IPs 10\.9\.0\.9 were not assigned \(got 10\.1\.0\.5\/24, fd00::0005\/64\)/,
        ),
      }),
    );
  });

  it("N4.1.2.1.3 a delegate that ignored the request (other address) fails with 103", () => {
    const r: Result = {
      cniVersion: "1.0.0",
      interfaces: [{ name: "net1", sandbox: "/p" }],
      ips: [{ address: "10.1.0.77/24", interface: 0 }],
    };
    expect(failure(r, sel({ ips: ["10.1.0.5/24"] }))).toMatchObject({
      code: 103,
      message: expect.stringContaining("got 10.1.0.77/24"),
    });
  });

  it("N4.1.2.1.3 no IPs at all: got none", () => {
    expect(failure({ cniVersion: "1.0.0" }, sel({ ips: ["10.1.0.5"] })).message).toContain(
      "(got none)",
    );
  });

  it("N4.1.2.1.3 N5.3.3 IPs that name no interface count (0.2.0 results, plugins that omit the index)", () => {
    const r: Result = { cniVersion: "0.2.0", ips: [{ address: "10.4.0.2/24" }] };
    expect(() => verifyAttachment(r, sel({ ips: ["10.4.0.2"] }), "net1")).not.toThrow();
    const neg: Result = {
      cniVersion: "1.0.0",
      interfaces: [{ name: "net1", sandbox: "/p" }],
      ips: [{ address: "10.4.0.2/24", interface: -1 }],
    };
    expect(() => verifyAttachment(neg, sel({ ips: ["10.4.0.2"] }), "net1")).not.toThrow();
  });

  it("N4.1.2.1.3 the attachment's interface is the sandbox one named like CNI_IFNAME when several have a sandbox", () => {
    const r: Result = {
      cniVersion: "1.0.0",
      interfaces: [
        { name: "other", sandbox: "/p" },
        { name: "net2", sandbox: "/p" },
      ],
      ips: [
        { address: "10.0.0.1/24", interface: 0 },
        { address: "10.0.0.2/24", interface: 1 },
      ],
    };
    expect(() => verifyAttachment(r, sel({ ips: ["10.0.0.2"] }), "net2")).not.toThrow();
    expect(failure(r, sel({ ips: ["10.0.0.1"] }), "net2").code).toBe(103);
  });

  it("N4.1.2.1.3 without sandbox information, an interface named CNI_IFNAME is the attachment's", () => {
    const r: Result = {
      cniVersion: "1.0.0",
      interfaces: [{ name: "br0" }, { name: "net1" }],
      ips: [
        { address: "10.0.0.9/24", interface: 1 },
        { address: "10.0.0.1/24", interface: 0 },
      ],
    };
    expect(() => verifyAttachment(r, sel({ ips: ["10.0.0.9"] }), "net1")).not.toThrow();
    expect(failure(r, sel({ ips: ["10.0.0.1"] })).code).toBe(103);
  });

  it("B59 N4.1.2.1.3 garbage addresses in the result are a verification failure, not a crash", () => {
    const r = {
      cniVersion: "1.0.0",
      interfaces: [{ name: "net1", sandbox: "/p" }],
      ips: [
        { address: "not-an-ip", interface: 0 },
        { address: "10.0.0.1/24/7", interface: 0 },
      ],
    } as Result;
    expect(failure(r, sel({ ips: ["10.0.0.1"] }))).toMatchObject({
      code: 103,
      message: expect.stringContaining("got not-an-ip, 10.0.0.1/24/7"),
    });
  });
});

describe("N4.1.2.1.4 the requested MAC is checked after ADD", () => {
  it.each([["02:00:00:00:00:01"], ["02-00-00-00-00-01"], ["02:00:00:00:00:01".toUpperCase()]])(
    "N4.1.2.1.4 %s matches the interface's (case and separator insensitive)",
    (mac) => {
      expect(() => verifyAttachment(result, sel({ mac }), "net1")).not.toThrow();
    },
  );

  it("N4.1.2.1.4 another MAC fails with 103 naming network, interface, wanted and got", () => {
    expect(failure(result, sel({ mac: "02:00:00:00:00:02" }))).toEqual(
      expect.objectContaining({
        code: 103,
        message: expect.stringMatching(
          /^network ns\/net-a \(net1\): requested MAC 02:00:00:00:00:02 was not set \(got 02:00:00:00:00:01\)/,
        ),
      }),
    );
  });

  it("N4.1.2.1.4 the MAC of a host-side interface does not count", () => {
    expect(failure(result, sel({ mac: "aa:aa:aa:aa:aa:aa" })).code).toBe(103);
  });

  it("N4.1.2.1.4 B59 an interface without a mac, or no interfaces at all, fails with got none", () => {
    const r: Result = { cniVersion: "1.0.0", interfaces: [{ name: "net1", sandbox: "/p" }] };
    expect(failure(r, sel({ mac: "02:00:00:00:00:01" })).message).toContain("(got none)");
    expect(failure({ cniVersion: "1.0.0" }, sel({ mac: "02:00:00:00:00:01" })).message).toContain(
      "(got none)",
    );
  });

  it("N4.1.2.1.4 a 20-byte InfiniBand address is compared too", () => {
    const ib = Array.from({ length: 20 }, (_, i) => (i + 16).toString(16)).join(":");
    const r: Result = {
      cniVersion: "1.0.0",
      interfaces: [{ name: "ib1", mac: ib, sandbox: "/p" }],
    };
    expect(() => verifyAttachment(r, sel({ mac: ib.toUpperCase() }), "ib1")).not.toThrow();
  });
});
