import { describe, expect, it } from "vitest";
import { Code } from "../../../src/cni/errors";
import {
  interfaceNameProblem,
  MAX_CONTAINER_ID_LENGTH,
  validateContainerId,
  validateInterfaceName,
  validateNetworkName,
  validatePluginType,
} from "../../../src/cni/validate";

describe("C2.1 B2 container IDs", () => {
  it.each(["../../etc/x", "a/b", "-x", "_x", ".x", "", "a b", "a\u0000b", "x".repeat(1024 * 1024)])(
    "B2 %# is refused with code 4 by default",
    (id) => {
      expect(() => validateContainerId(id)).toThrow(
        expect.objectContaining({ code: Code.InvalidEnv }),
      );
    },
  );

  it("B2 the caller chooses the code (a record read back from disk is a config problem, not env)", () => {
    expect(() => validateContainerId("a/b", Code.InvalidNetworkConfig)).toThrow(
      expect.objectContaining({ code: Code.InvalidNetworkConfig }),
    );
  });

  it("B2 the length limit is inclusive and keeps file names far below NAME_MAX", () => {
    expect(MAX_CONTAINER_ID_LENGTH).toBeLessThanOrEqual(255 - 32);
    expect(validateContainerId("a".repeat(MAX_CONTAINER_ID_LENGTH))).toHaveLength(
      MAX_CONTAINER_ID_LENGTH,
    );
    expect(() => validateContainerId("a".repeat(MAX_CONTAINER_ID_LENGTH + 1))).toThrow(
      expect.objectContaining({ code: Code.InvalidEnv }),
    );
  });

  it("B2 a long refused ID is shown truncated with its length", () => {
    try {
      validateContainerId("/".repeat(5000));
      expect.unreachable();
    } catch (err) {
      expect((err as Error).message).toContain("5000 characters");
      expect((err as Error).message.length).toBeLessThan(500);
    }
  });
});

describe("C2.1 B3 interface names (libcni ValidateInterfaceName)", () => {
  it.each([
    ["", "empty"],
    ["a".repeat(16), "longer than 15 bytes"],
    [".", "'.' and '..'"],
    ["..", "'.' and '..'"],
    ["eth0:1", "'/', ':' or whitespace"],
    ["a b", "'/', ':' or whitespace"],
    ["a/b", "'/', ':' or whitespace"],
    ["a\tb", "'/', ':' or whitespace"],
  ])("B3 %j is invalid: %s", (name, why) => {
    expect(interfaceNameProblem(name)).toContain(why);
    expect(() => validateInterfaceName(name)).toThrow(
      expect.objectContaining({
        code: Code.InvalidEnv,
        message: expect.stringContaining("CNI_IFNAME"),
      }),
    );
  });

  it("B3 N4.1.2.1.5 the same check serves an annotation's `interface` with code 7 and its own label", () => {
    expect(() =>
      validateInterfaceName("eth0/1", "interface of net-a", Code.InvalidNetworkConfig),
    ).toThrow(
      expect.objectContaining({
        code: Code.InvalidNetworkConfig,
        message: expect.stringContaining("interface of net-a"),
      }),
    );
  });

  it("B3 valid names have no problem", () => {
    for (const n of ["eth0", "net1", "a".repeat(15), "veth.1-x_y", "..."])
      expect(interfaceNameProblem(n)).toBeUndefined();
  });
});

describe("B14 network names (libcni ValidateNetworkName)", () => {
  it.each([undefined, null, 5, "", "a/b", "-a", ".a", "a b", "a:b", "ä"])(
    "B14 %j is code 7",
    (name) => {
      expect(() => validateNetworkName(name, "stdin config")).toThrow(
        expect.objectContaining({
          code: Code.InvalidNetworkConfig,
          message: expect.stringContaining("stdin config"),
        }),
      );
    },
  );

  it("B14 letters, digits, '_', '.', '-' after an alphanumeric pass", () => {
    for (const n of ["plexus", "k8s-pod-network", "net_1.a", "0", "n".repeat(253)])
      expect(validateNetworkName(n, "x")).toBe(n);
  });

  it("B14 a name longer than 253 characters (a tenant's NAD config) is code 7 naming the limit", () => {
    expect(() => validateNetworkName("n".repeat(254), "NAD app/x spec.config")).toThrow(
      expect.objectContaining({
        code: Code.InvalidNetworkConfig,
        message: expect.stringContaining("longer than 253 characters"),
      }),
    );
  });
});

describe("C4.2 B30 plugin types are bare file names", () => {
  it.each([
    "../bin/sh",
    "/bin/sh",
    "sh\u0000",
    "",
    "bin/sh",
    "..",
    "a\\b",
    "bridge x",
    "bridge\n",
    "x".repeat(256),
  ])("C4.2 B30 type %j is refused with code 7 naming the config", (type) => {
    expect(() => validatePluginType(type, "NAD default/net-a")).toThrow(
      expect.objectContaining({
        code: Code.InvalidNetworkConfig,
        message: expect.stringContaining("NAD default/net-a"),
      }),
    );
  });

  it.each([undefined, null, 1, ["bridge"], { name: "bridge" }])(
    "C4.2 B30 a non-string type %j is code 7",
    (type) => {
      expect(() => validatePluginType(type, "d")).toThrow(
        expect.objectContaining({ code: Code.InvalidNetworkConfig }),
      );
    },
  );

  it("C4.2 ordinary plugin names pass unchanged", () => {
    for (const t of ["bridge", "host-local", "macvlan", "sbr", "x.y_z", "x".repeat(255)])
      expect(validatePluginType(t, "d")).toBe(t);
  });
});
