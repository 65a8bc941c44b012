/**
 * IP text as the annotation's `ips` and the verification of a delegate's result read it
 * (N4.1.2.1.3): the same verdict as node:net's isIPv4/isIPv6 (Go's ParseIP rules), zones refused.
 */
import { isIPv4, isIPv6 } from "node:net";
import { describe, expect, it } from "vitest";
import { canonicalIp, isIpText } from "../../../src/cni/ip-text";

const CASES = [
  "1.2.3.4",
  "01.2.3.4",
  "1.2.3",
  "256.1.1.1",
  "0.0.0.0",
  "0.0.0.00",
  "1.2.3.04",
  "1.2.3.4.5",
  "0x1.2.3.4",
  "1.2.3.4 ",
  "1.2.3.4\n",
  "",
  "١.2.3.4",
  "::1",
  "::",
  "::ffff:1.2.3.4",
  "::ffff:01.2.3.4",
  "::ffff:1.2.3",
  "::ffff:1.2.3.256",
  "1::2::3",
  "FD00::0005",
  "1:2:3:4:5:6:7:8",
  "1:2:3:4:5:6:7:8:9",
  "1:2:3:4:5:6:7::",
  "1:2:3:4:5:6:7:8::",
  "1:2:3:4:5:6:1.2.3.4",
  "1:2:3:4:5:6:7:1.2.3.4",
  "a::b::",
  "::1.2.3.4",
  " ::1",
  "::1 ",
  "\t::1",
  "::1\n",
  "fe80::",
  "12345::1",
  "g::1",
  ":1",
  "1:",
  ":::",
  "::1]",
  "[::1",
  "::1:80",
  "::%",
];

describe("N4.1.2.1.3 IP addresses as text", () => {
  it.each(CASES.map((c) => [JSON.stringify(c), c]))(
    "N4.1.2.1.3 %s: the verdict of node:net",
    (_, text) => {
      expect(isIpText(text)).toBe(text.includes(":") ? isIPv6(text) : isIPv4(text));
    },
  );

  it("N4.1.2.1.3 a zone is refused, though node:net takes it", () => {
    expect(isIPv6("fe80::1%eth0")).toBe(true);
    expect(isIpText("fe80::1%eth0")).toBe(false);
    expect(canonicalIp("fe80::1%eth0")).toBeUndefined();
  });

  it("N4.1.2.1.3 canonical text: IPv6 compressed in lower case (RFC 5952), IPv4 as written", () => {
    expect(canonicalIp("FD00::0005")).toBe("fd00::5");
    expect(canonicalIp("0:0:0:0:0:0:0:1")).toBe("::1");
    expect(canonicalIp("2001:db8:0:0:1:0:0:1")).toBe("2001:db8::1:0:0:1");
    expect(canonicalIp("::ffff:1.2.3.4")).toBe("::ffff:102:304");
    expect(canonicalIp("10.1.0.5")).toBe("10.1.0.5");
    expect(canonicalIp("10.1.0.05")).toBeUndefined();
    expect(canonicalIp("not an address")).toBeUndefined();
  });
});
