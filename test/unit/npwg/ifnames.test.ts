import { describe, expect, it } from "vitest";
import { assignInterfaceNames } from "../../../src/npwg/ifnames";
import type { NetworkSelection } from "../../../src/npwg/types";

const sel = (name: string, interfaceRequest?: string): NetworkSelection => ({ name, namespace: "ns", ...(interfaceRequest ? { interfaceRequest } : {}) });

describe("N4.1.2.1.5 N4.2 interface names", () => {
  it("N4.2 generated names are net1, net2, … by position; explicit ones are kept", () => {
    expect(assignInterfaceNames([sel("a"), sel("b", "eth5"), sel("c")], "eth0")).toEqual(["net1", "eth5", "net3"]);
  });

  it("N4.2 the same network twice gets two distinct interfaces", () => {
    expect(assignInterfaceNames([sel("a"), sel("a")], "eth0")).toEqual(["net1", "net2"]);
  });

  it("N4.2 a generated name taken by an explicit request moves to the next free number; all names stay unique", () => {
    const names = assignInterfaceNames([sel("a"), sel("b", "net1"), sel("c", "net3"), sel("d")], "eth0");
    expect(names).toEqual(["net2", "net1", "net3", "net4"]);
    expect(new Set(names).size).toBe(names.length);
  });

  it("N4.1.2.1.5 an interface requested twice fails naming both items", () => {
    expect(() => assignInterfaceNames([sel("a", "net7"), sel("b", "net7")], "eth0")).toThrow(
      expect.objectContaining({ code: 7, message: expect.stringMatching(/item 2 \(ns\/b\).*"net7".*item 1 \(ns\/a\)/) }),
    );
  });

  it("N4.1.2.1.5 the default network's interface cannot be requested", () => {
    expect(() => assignInterfaceNames([sel("a", "eth0")], "eth0")).toThrow(expect.objectContaining({ code: 7, message: expect.stringContaining("default network") }));
  });
});
