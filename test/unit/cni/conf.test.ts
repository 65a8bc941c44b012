import { describe, expect, it } from "vitest";
import { parseConfList } from "../../../src/cni/conf";
import { Code } from "../../../src/cni/errors";

const what = "NAD default/net-a";

describe("K3 a single conf becomes a one-plugin list", () => {
  it("K3 name and cniVersion are copied into the plugin; its own keys pass through untouched", () => {
    const l = parseConfList(
      {
        cniVersion: "0.3.1",
        name: "net-a",
        type: "bridge",
        bridge: "br0",
        ipam: { type: "host-local", subnet: "10.1.0.0/24" },
      },
      { what },
    );
    expect(l).toEqual({
      cniVersion: "0.3.1",
      name: "net-a",
      plugins: [
        {
          cniVersion: "0.3.1",
          name: "net-a",
          type: "bridge",
          bridge: "br0",
          ipam: { type: "host-local", subnet: "10.1.0.0/24" },
        },
      ],
    });
  });

  it("N3.4.2 a missing name and version take the defaults given; given ones win", () => {
    expect(
      parseConfList({ type: "macvlan" }, { what, defaultName: "net-a", defaultVersion: "1.0.0" }),
    ).toMatchObject({
      name: "net-a",
      cniVersion: "1.0.0",
    });
    expect(
      parseConfList(
        { name: "own", cniVersion: "0.4.0", type: "macvlan" },
        { what, defaultName: "net-a", defaultVersion: "1.0.0" },
      ),
    ).toMatchObject({
      name: "own",
      cniVersion: "0.4.0",
    });
  });

  it("C3.2 plugin capabilities must be a map of booleans (code 7 naming the key otherwise)", () => {
    expect(
      parseConfList(
        { cniVersion: "1.0.0", name: "n", type: "portmap", capabilities: { portMappings: true } },
        { what },
      ).plugins[0]?.capabilities,
    ).toEqual({ portMappings: true });
    expect(() =>
      parseConfList(
        { cniVersion: "1.0.0", name: "n", type: "portmap", capabilities: { portMappings: "yes" } },
        { what },
      ),
    ).toThrow(
      expect.objectContaining({
        code: Code.InvalidNetworkConfig,
        message: expect.stringContaining("capabilities.portMappings"),
      }),
    );
  });
});

describe("B13 B14 versions and names of delegate configs", () => {
  it.each([undefined, "9.9.9", "1.0"])(
    "B13 cniVersion %j without a default is code 1 listing the supported versions",
    (cniVersion) => {
      expect(() => parseConfList({ cniVersion, name: "n", type: "bridge" }, { what })).toThrow(
        expect.objectContaining({
          code: Code.IncompatibleVersion,
          message: expect.stringMatching(/NAD default\/net-a.*0\.1\.0, 0\.2\.0/),
        }),
      );
    },
  );

  it.each([undefined, "", "a/b", "-x"])("B14 name %j without a default is code 7", (name) => {
    expect(() => parseConfList({ cniVersion: "1.0.0", name, type: "bridge" }, { what })).toThrow(
      expect.objectContaining({ code: Code.InvalidNetworkConfig }),
    );
  });
});

describe("C4.2 B29 B30 B31 B17 refused delegate configs", () => {
  it.each([null, [], "str", 5])("B29 %j is not a config: code 7 saying what was found", (value) => {
    expect(() => parseConfList(value, { what })).toThrow(
      expect.objectContaining({
        code: Code.InvalidNetworkConfig,
        message: expect.stringContaining(what),
      }),
    );
  });

  it.each(["../bin/sh", "/bin/sh", "sh\u0000", "", "a\\b", "bridge x"])(
    "C4.2 B30 plugin type %j is refused with 7, in a conf and in a conflist",
    (type) => {
      expect(() => parseConfList({ cniVersion: "1.0.0", name: "n", type }, { what })).toThrow(
        expect.objectContaining({ code: Code.InvalidNetworkConfig }),
      );
      expect(() =>
        parseConfList(
          { cniVersion: "1.0.0", name: "n", plugins: [{ type: "bridge" }, { type }] },
          { what },
        ),
      ).toThrow(
        expect.objectContaining({
          code: Code.InvalidNetworkConfig,
          message: expect.stringContaining("plugin 1"),
        }),
      );
    },
  );

  it("B31 a conflist with empty plugins, or a plugin without type, is 7 naming the network", () => {
    expect(() => parseConfList({ cniVersion: "1.0.0", name: "n", plugins: [] }, { what })).toThrow(
      expect.objectContaining({
        code: Code.InvalidNetworkConfig,
        message: expect.stringContaining("at least one plugin"),
      }),
    );
    expect(() =>
      parseConfList({ cniVersion: "1.0.0", name: "n", plugins: [{ bridge: "br0" }] }, { what }),
    ).toThrow(
      expect.objectContaining({
        code: Code.InvalidNetworkConfig,
        message: expect.stringMatching(/NAD default\/net-a \(network n\) plugin 0.*no "type"/),
      }),
    );
    expect(() =>
      parseConfList({ cniVersion: "1.0.0", name: "n", plugins: "bridge" }, { what }),
    ).toThrow(expect.objectContaining({ code: Code.InvalidNetworkConfig }));
    expect(() =>
      parseConfList({ cniVersion: "1.0.0", name: "n", plugins: [null] }, { what }),
    ).toThrow(expect.objectContaining({ code: Code.InvalidNetworkConfig }));
    expect(() => parseConfList({ cniVersion: "1.0.0", name: "n" }, { what })).toThrow(
      expect.objectContaining({
        code: Code.InvalidNetworkConfig,
        message: expect.stringContaining('no "type"'),
      }),
    );
  });

  it('B17 "Type" beside "type" is 7 at the top, in a conflist and in a plugin', () => {
    expect(() =>
      parseConfList({ cniVersion: "1.0.0", name: "n", type: "bridge", Type: "macvlan" }, { what }),
    ).toThrow(expect.objectContaining({ code: 7 }));
    expect(() =>
      parseConfList(
        { cniVersion: "1.0.0", name: "n", Name: "m", plugins: [{ type: "bridge" }] },
        { what },
      ),
    ).toThrow(expect.objectContaining({ code: 7 }));
    expect(() =>
      parseConfList(
        { cniVersion: "1.0.0", name: "n", plugins: [{ type: "bridge", TYPE: "x" }] },
        { what },
      ),
    ).toThrow(expect.objectContaining({ code: 7 }));
  });
});

describe("N7.1 conflists", () => {
  it("N7.1 disableCheck/disableGC are read as booleans, string forms too; plugins keep their order and keys", () => {
    const l = parseConfList(
      {
        cniVersion: "1.1.0",
        name: "n",
        disableCheck: "true",
        disableGC: false,
        plugins: [{ type: "bridge", isGateway: true }, { type: "tuning" }],
      },
      { what },
    );
    expect(l).toEqual({
      cniVersion: "1.1.0",
      name: "n",
      disableCheck: true,
      disableGC: false,
      plugins: [{ type: "bridge", isGateway: true }, { type: "tuning" }],
    });
    expect(
      parseConfList(
        { cniVersion: "1.1.0", name: "n", disableCheck: "false", plugins: [{ type: "bridge" }] },
        { what },
      ).disableCheck,
    ).toBe(false);
    expect(
      parseConfList({ cniVersion: "1.1.0", name: "n", plugins: [{ type: "bridge" }] }, { what }),
    ).not.toHaveProperty("disableCheck");
  });

  it("N7.1 disableCheck of another type is code 7 naming the key", () => {
    expect(() =>
      parseConfList(
        { cniVersion: "1.1.0", name: "n", disableCheck: "yes", plugins: [{ type: "bridge" }] },
        { what },
      ),
    ).toThrow(
      expect.objectContaining({ code: 7, message: expect.stringContaining("disableCheck") }),
    );
  });
});
