import { describe, expect, it } from "vitest";
import { parseConfList } from "../../../src/cni/conf";
import { Code } from "../../../src/cni/errors";
import { decodeJson } from "../../../src/cni/json";
import { ALL_VERSIONS, versionInfo } from "../../../src/cni/version";
import { parsePlexusConf } from "../../../src/config/plugin-conf";

async function codeOf(fn: () => unknown): Promise<number | undefined> {
  try {
    await fn();
  } catch (err) {
    return (err as { code?: number }).code;
  }
  return undefined;
}

const base = { cniVersion: "1.0.0", name: "plexus", type: "plexus", delegates: [{ cniVersion: "1.0.0", name: "net-a", type: "bridge" }] };

describe("C2.3 C2.7 codes and versions", () => {
  it("C2.7 VERSION lists all seven versions, 0.1.0 through 1.1.0", () => {
    expect(versionInfo()).toEqual({ cniVersion: "1.1.0", supportedVersions: ["0.1.0", "0.2.0", "0.3.0", "0.3.1", "0.4.0", "1.0.0", "1.1.0"] });
    expect(ALL_VERSIONS).toHaveLength(7);
  });

  it("C2.3 the error codes are the spec's", () => {
    expect(Code).toMatchObject({ IncompatibleVersion: 1, UnsupportedField: 2, UnknownContainer: 3, InvalidEnv: 4, IoFailure: 5, Decoding: 6, InvalidNetworkConfig: 7, TryAgainLater: 11, PluginNotAvailable: 50, PluginLimited: 51 });
    for (const [name, code] of Object.entries(Code)) if (!["PluginNotAvailable", "PluginLimited"].includes(name) && code > 11) expect(code).toBeGreaterThanOrEqual(100);
  });
});

describe("B11 B12 B17 decoding stdin", () => {
  it.each(["", "   ", "null", "[]", '"str"', '{"cniVersion":'])("B11 %j is code 6 (or 7 for valid JSON that is not an object)", async (text) => {
    const code = await codeOf(() => parsePlexusConf(decodeJson(text, { what: "stdin config" })));
    expect(code).toBe(Code.Decoding);
  });

  it("B12 over 1 MiB is refused with 6 before parsing; 10^5-deep nesting is 6, not a stack overflow", async () => {
    expect(await codeOf(() => decodeJson("x".repeat(64 * 1024 * 1024), { what: "stdin config" }))).toBe(6);
    const deep = "[".repeat(100_000) + "]".repeat(100_000);
    expect(await codeOf(() => decodeJson(deep, { what: "stdin config", maxBytes: 1 << 20 }))).toBe(6);
  });

  it.each([
    ['{"__proto__":{"polluted":1},"cniVersion":"1.0.0"}', "__proto__"],
    ['{"cniVersion":"1.0.0","delegates":[{"constructor":{}}]}', "constructor"],
  ])("B17 %s is refused with 7 naming the key", async (text, key) => {
    expect(() => decodeJson(text, { what: "stdin config" })).toThrow(expect.objectContaining({ code: 7, message: expect.stringContaining(key) }));
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it("B17 \"Type\" beside \"type\" (ambiguous to Go's case-insensitive decoder) is 7, in the config and in a delegate", () => {
    expect(() => parsePlexusConf({ ...base, Type: "x" })).toThrow(expect.objectContaining({ code: 7, message: expect.stringContaining('"Type"') }));
    expect(() => parsePlexusConf({ ...base, delegates: [{ cniVersion: "1.0.0", name: "a", type: "bridge", Type: "macvlan" }] })).toThrow(
      expect.objectContaining({ code: 7 }),
    );
  });
});

describe("B13 B14 B16 the Plexus config", () => {
  it.each([undefined, "9.9.9", "1.0", 1])("B13 cniVersion %j is code 1 listing the supported versions", (v) => {
    expect(() => parsePlexusConf({ ...base, cniVersion: v })).toThrow(expect.objectContaining({ code: 1, message: expect.stringContaining("0.1.0, 0.2.0") }));
  });

  it.each([undefined, "", "a/b", "-x", "a b"])("B14 name %j is code 7", (name) => {
    expect(() => parsePlexusConf({ ...base, name })).toThrow(expect.objectContaining({ code: 7 }));
  });

  it("B16 no delegates and no clusterNetwork, or an empty list, is 7 naming both keys; DEL and GC accept it (the record has the networks)", () => {
    for (const c of [{ ...base, delegates: undefined }, { ...base, delegates: [] }]) {
      expect(() => parsePlexusConf(c)).toThrow(expect.objectContaining({ code: 7, message: expect.stringMatching(/clusterNetwork.*delegates/) }));
      expect(parsePlexusConf(c, { requireNetworks: false }).delegates).toEqual([]);
    }
    expect(parsePlexusConf({ ...base, delegates: undefined, clusterNetwork: "cbr0" }).clusterNetwork).toBe("cbr0");
  });

  it("M1 defaults are Multus's (cniDir is Plexus's own) and unknown keys are collected, not refused", () => {
    const c = parsePlexusConf({ ...base, somethingNew: 1, globalNamespaces: "a, b,,c" });
    expect(c).toMatchObject({
      cniDir: "/var/lib/cni/plexus",
      confDir: "/etc/cni/net.d",
      systemNamespaces: ["kube-system"],
      multusNamespace: "kube-system",
      namespaceIsolation: false,
      logToStderr: true,
      globalNamespaces: ["a", "b", "c"],
      retryDeleteOnError: false,
      delegateTimeoutMs: 60_000,
      unknownKeys: ["somethingNew"],
    });
    expect(c.logLevel).toBeUndefined();
    expect(() => parsePlexusConf({ ...base, logLevel: "loud" })).toThrow(expect.objectContaining({ code: 7, message: expect.stringContaining("logLevel") }));
    for (const l of ["debug", "verbose", "error", "panic", "info", "warn"]) expect(parsePlexusConf({ ...base, logLevel: l }).logLevel).toBe(l);
  });

  it("M1 a delegate without cniVersion inherits the config's; a single conf becomes a one-plugin list with name and version injected", () => {
    const c = parsePlexusConf({ ...base, cniVersion: "0.4.0", delegates: [{ name: "n", type: "bridge", bridge: "br0" }] });
    expect(c.delegates[0]).toEqual({ cniVersion: "0.4.0", name: "n", plugins: [{ type: "bridge", bridge: "br0", name: "n", cniVersion: "0.4.0" }] });
  });

  it("C2.9 `cni.dev/valid-attachments` is read for GC", () => {
    const c = parsePlexusConf({ ...base, "cni.dev/valid-attachments": [{ containerID: "c1", ifname: "eth0" }] });
    expect(c.validAttachments).toEqual([{ containerID: "c1", ifname: "eth0" }]);
  });
});

describe("C4.2 B30 B31 delegate configs", () => {
  it.each(["../bin/sh", "/bin/sh", "sh\u0000", "", "a\\b", "bridge x"])("C4.2 B30 plugin type %j is refused with 7 before any lookup", (type) => {
    expect(() => parseConfList({ cniVersion: "1.0.0", name: "n", type }, { what: "delegate" })).toThrow(expect.objectContaining({ code: 7 }));
  });

  it("B31 a conflist with empty plugins, or a plugin without type, is 7 naming the network", () => {
    expect(() => parseConfList({ cniVersion: "1.0.0", name: "n", plugins: [] }, { what: "NAD x/n" })).toThrow(
      expect.objectContaining({ code: 7, message: expect.stringContaining("at least one plugin") }),
    );
    expect(() => parseConfList({ cniVersion: "1.0.0", name: "n", plugins: [{ bridge: "br0" }] }, { what: "NAD x/n" })).toThrow(
      expect.objectContaining({ code: 7, message: expect.stringMatching(/NAD x\/n.*no "type"/) }),
    );
  });

  it("N7.1 a conflist keeps disableCheck/disableGC (string forms too) and its plugins in order", () => {
    const l = parseConfList({ cniVersion: "1.1.0", name: "n", disableCheck: "true", plugins: [{ type: "bridge" }, { type: "tuning" }] }, { what: "d" });
    expect(l).toMatchObject({ cniVersion: "1.1.0", name: "n", disableCheck: true, plugins: [{ type: "bridge" }, { type: "tuning" }] });
  });
});
