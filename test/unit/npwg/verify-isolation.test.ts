import { describe, expect, it } from "vitest";
import { verifyAttachment } from "../../../src/npwg/verify";

const result = {
  cniVersion: "1.0.0",
  interfaces: [{ name: "br0" }, { name: "net1", mac: "02:00:00:00:00:01", sandbox: "/var/run/netns/p" }],
  ips: [
    { address: "10.1.0.5/24", interface: 1 },
    { address: "fd00::0005/64", interface: 1 },
    { address: "10.9.0.9/24", interface: 0 },
  ],
};
const sel = { name: "net-a", namespace: "ns" };

describe("N4.1.2.1.3 N4.1.2.1.4 verification after ADD", () => {
  it("N4.1.2.1.3 requested IPs on the sandbox interface pass, with or without prefix, IPv6 in any notation", () => {
    expect(() => verifyAttachment(result, { ...sel, ips: ["10.1.0.5/24", "fd00::5"] }, "net1")).not.toThrow();
  });

  it("N4.1.2.1.3 an IP not assigned to the interface fails with 103 naming wanted and got", () => {
    expect(() => verifyAttachment(result, { ...sel, ips: ["10.9.0.9"] }, "net1")).toThrow(
      expect.objectContaining({ code: 103, message: expect.stringMatching(/ns\/net-a \(net1\).*10\.9\.0\.9.*got 10\.1\.0\.5/) }),
    );
  });

  it("N4.1.2.1.4 the requested MAC must be the interface's (case and separator insensitive)", () => {
    expect(() => verifyAttachment(result, { ...sel, mac: "02-00-00-00-00-01".toUpperCase() }, "net1")).not.toThrow();
    expect(() => verifyAttachment(result, { ...sel, mac: "02:00:00:00:00:02" }, "net1")).toThrow(expect.objectContaining({ code: 103, message: expect.stringContaining("02:00:00:00:00:02") }));
  });
});
