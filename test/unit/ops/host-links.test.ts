/**
 * `plexus validate`'s host interfaces (ops/host-links.ts): which plugin keys name an interface
 * that must already exist, and that only a valid interface name ever becomes a /sys/class/net path.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { hostLinkProblems } from "../../../src/ops/host-links";
import { propertyRuns } from "../../support/property";

describe("hostLinkProblems", () => {
  it("macvlan, ipvlan, vlan master and host-device device are looked up; bridge, no master are not", () => {
    const asked: string[] = [];
    const exists = (name: string) => (asked.push(name), name === "eth0");
    const problems = hostLinkProblems(
      [
        { type: "macvlan", master: "eth0" },
        { type: "ipvlan", MASTER: "bond7" },
        { type: "vlan", master: "eth9", vlanId: 3 },
        { type: "host-device", device: "ens5f1" },
        { type: "macvlan" },
        { type: "bridge", bridge: "br-new" },
        { type: "sriov", deviceID: "0000:03:00.1" },
      ],
      exists,
    );
    expect(asked).toEqual(["eth0", "bond7", "eth9", "ens5f1"]);
    expect(problems).toEqual([
      expect.stringContaining('plugin ipvlan: master "bond7" does not exist on this node'),
      expect.stringContaining('plugin vlan: master "eth9" does not exist'),
      expect.stringContaining('plugin host-device: device "ens5f1" does not exist'),
    ]);
  });

  it("B20 an invalid interface name is reported and never looked up (no path from it)", () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 40 }), (name) => {
        const asked: string[] = [];
        const problems = hostLinkProblems(
          [{ type: "macvlan", master: name }],
          (n) => (asked.push(n), true),
        );
        const valid =
          name !== "" &&
          Buffer.byteLength(name) <= 15 &&
          !/[/:\s]/.test(name) &&
          name !== "." &&
          name !== "..";
        expect(asked).toEqual(valid ? [name] : []);
        if (name !== "" && !valid)
          expect(problems).toEqual([expect.stringContaining("is not a valid interface name")]);
        for (const n of asked) expect(n.includes("/")).toBe(false);
      }),
      propertyRuns({ seed: 20261126, numRuns: 300 }),
    );
  });
});
