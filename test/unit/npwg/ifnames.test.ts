import { describe, expect, it } from "vitest";
import { assignInterfaceNames } from "../../../src/npwg/ifnames";
import type { NetworkSelection } from "../../../src/npwg/types";

const sel = (name: string, interfaceRequest?: string): NetworkSelection => ({
  name,
  namespace: "ns",
  ...(interfaceRequest ? { interfaceRequest } : {}),
});

describe("N4.1.2.1.5 N4.2 interface names", () => {
  it("N4.2 generated names are net1, net2, … by position (Multus numbering); explicit ones are kept", () => {
    expect(assignInterfaceNames([sel("a"), sel("b", "eth5"), sel("c")], "eth0")).toEqual([
      "net1",
      "eth5",
      "net3",
    ]);
  });

  it("N4.2 no selections, no names", () => {
    expect(assignInterfaceNames([], "eth0")).toEqual([]);
  });

  it("N4.2 the same network twice gets two distinct interfaces", () => {
    expect(assignInterfaceNames([sel("a"), sel("a"), sel("a")], "eth0")).toEqual([
      "net1",
      "net2",
      "net3",
    ]);
  });

  it("N4.2 a generated name taken by an explicit request moves to the next free number; all names stay unique", () => {
    const names = assignInterfaceNames(
      [sel("a"), sel("b", "net1"), sel("c", "net3"), sel("d")],
      "eth0",
    );
    expect(names).toEqual(["net2", "net1", "net3", "net4"]);
    expect(new Set(names).size).toBe(names.length);
  });

  it("N4.2 an explicit request for a later position's name pushes that later one along", () => {
    // The first selection asks for net2; the second would be net2 by position and becomes net3.
    expect(assignInterfaceNames([sel("a", "net2"), sel("b"), sel("c")], "eth0")).toEqual([
      "net2",
      "net3",
      "net4",
    ]);
  });

  it("N4.2 a default interface named like a generated one is skipped", () => {
    expect(assignInterfaceNames([sel("a"), sel("b")], "net1")).toEqual(["net2", "net3"]);
  });

  it("N4.2 names are unique for many selections", () => {
    const sels = Array.from({ length: 32 }, (_, i) =>
      i % 3 === 0 ? sel(`n${i}`, `net${32 - i}`) : sel(`n${i}`),
    );
    const names = assignInterfaceNames(sels, "eth0");
    expect(new Set([...names, "eth0"]).size).toBe(33);
  });

  it("N4.1.2.1.5 an interface requested twice fails naming both items", () => {
    expect(() => assignInterfaceNames([sel("a", "net7"), sel("b", "net7")], "eth0")).toThrow(
      expect.objectContaining({
        code: 7,
        message:
          'networks annotation item 2 (ns/b): interface "net7" is already used by networks ' +
          "annotation item 1 (ns/a)",
      }),
    );
  });

  it("N4.1.2.1.5 the caller can label items, so numbers are the user's when config default networks come first", () => {
    const label = (s: NetworkSelection, i: number) =>
      i < 1 ? `defaultNetworks entry ${i + 1}` : `networks annotation item ${i} (${s.name})`;
    expect(() =>
      assignInterfaceNames([sel("d"), sel("a", "x1"), sel("b", "x1")], "eth0", { label }),
    ).toThrow(
      expect.objectContaining({
        code: 7,
        message:
          'networks annotation item 2 (b): interface "x1" is already used by networks annotation ' +
          "item 1 (a)",
      }),
    );
    // The config's default network is still numbered by position: net1, then the annotation's.
    expect(assignInterfaceNames([sel("d"), sel("a"), sel("b", "net9")], "eth0", { label })).toEqual(
      ["net1", "net2", "net9"],
    );
  });

  it("N4.1.2.1.5 B23 the default network's interface cannot be requested (whatever CNI_IFNAME is)", () => {
    expect(() => assignInterfaceNames([sel("a", "eth0")], "eth0")).toThrow(
      expect.objectContaining({
        code: 7,
        message: expect.stringContaining('interface "eth0" is already used by the default network'),
      }),
    );
    expect(() => assignInterfaceNames([sel("a"), sel("b", "pod0")], "pod0")).toThrow(
      expect.objectContaining({ code: 7, message: expect.stringContaining("item 2 (ns/b)") }),
    );
  });
});
