import { describe, expect, it } from "vitest";
import { checkNamespaceAccess } from "../../../src/npwg/isolation";
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

describe("N7.4 B24 namespace isolation", () => {
  const conf = { namespaceIsolation: true, globalNamespaces: ["shared"], multusNamespace: "kube-system" };
  it("N7.4 the pod's namespace, the global namespaces and multusNamespace are allowed", () => {
    for (const namespace of ["team-a", "shared", "kube-system"]) expect(() => checkNamespaceAccess({ podNamespace: "team-a", ref: { namespace, name: "n" }, conf })).not.toThrow();
  });

  it("B24 N7.4 another namespace is refused with 7 naming the reference and the rule", () => {
    expect(() => checkNamespaceAccess({ podNamespace: "team-a", ref: { namespace: "team-b", name: "n" }, conf, what: "default-network override" })).toThrow(
      expect.objectContaining({ code: 7, message: expect.stringMatching(/default-network override team-b\/n is refused.*namespaceIsolation/) }),
    );
  });

  it("N7.4 without isolation every namespace is allowed", () => {
    expect(() => checkNamespaceAccess({ podNamespace: "a", ref: { namespace: "b", name: "n" }, conf: { ...conf, namespaceIsolation: false } })).not.toThrow();
  });
});
