/** Config keys decoded as Go's encoding/json decodes them (M1): exact first, then ignoring case. */
import { describe, expect, it } from "vitest";
import { parseConfList } from "../../../src/cni/conf";
import { canonicalizeKeys, getKeyFold, KeySet } from "../../../src/cni/keys";
import { parsePlexusConf } from "../../../src/config/plugin-conf";
import { nearestKey, reportUnknownKeys } from "../../../src/config/unknown-keys";

describe("M1 keys match as Go matches them", () => {
  const keys = new KeySet(["clusterNetwork", "readinessindicatorfile"]);

  it("M1 a key in any case selects the known key; values keep their case; unknown keys are listed", () => {
    const { value, unknown } = canonicalizeKeys(
      { ClusterNetwork: "/Etc/CNI/A.conf", ReadinessIndicatorFile: "/Run/X", clusterNetwrok: 1 },
      keys,
    );
    expect(value).toEqual({
      clusterNetwork: "/Etc/CNI/A.conf",
      readinessindicatorfile: "/Run/X",
      clusterNetwrok: 1,
    });
    expect(unknown).toEqual(["clusterNetwrok"]);
  });

  it("M1 an object already spelled canonically is returned as it is (no copy on the hot path)", () => {
    const obj = { clusterNetwork: "a" };
    expect(canonicalizeKeys(obj, keys).value).toBe(obj);
  });

  it("M1 getKeyFold prefers the exact key, else the first that matches ignoring case", () => {
    expect(getKeyFold({ name: "exact" }, "name")).toBe("exact");
    expect(getKeyFold({ NAME: "upper" }, "name")).toBe("upper");
    expect(getKeyFold({}, "name")).toBeUndefined();
  });
});

describe("M1 the Plexus config (the meta config) in other cases", () => {
  it("M1 Multus keys in other cases are Plexus's keys: kubeConfig, ConfDir, CNIDir, readinessIndicatorFile, Delegates…", () => {
    const c = parsePlexusConf({
      CNIVersion: "1.0.0",
      Name: "multus-cni-network",
      TYPE: "plexus",
      kubeConfig: "/etc/cni/net.d/multus.d/multus.kubeconfig",
      ConfDir: "/etc/cni/multus/net.d",
      CNIDir: "/var/lib/cni/x",
      readinessIndicatorFile: "/run/flannel/subnet.env",
      NamespaceIsolation: true,
      GlobalNamespaces: "a,b",
      LogLevel: "debug",
      Delegates: [
        {
          CNIVersion: "0.3.1",
          Name: "cbr0",
          Type: "bridge",
          IPAM: { Type: "host-local", Subnet: "10.1.0.0/24" },
        },
      ],
    });
    expect(c).toMatchObject({
      name: "multus-cni-network",
      type: "plexus",
      kubeconfig: "/etc/cni/net.d/multus.d/multus.kubeconfig",
      confDir: "/etc/cni/multus/net.d",
      cniDir: "/var/lib/cni/x",
      readinessindicatorfile: "/run/flannel/subnet.env",
      namespaceIsolation: true,
      globalNamespaces: ["a", "b"],
      logLevel: "debug",
      unknownKeys: [],
    });
    // The delegate: the keys Plexus reads are read in any case; the rest (and every value) as
    // given.
    expect(c.delegates[0]).toMatchObject({ name: "cbr0", cniVersion: "0.3.1" });
    expect(c.delegates[0]!.plugins[0]).toEqual({
      cniVersion: "0.3.1",
      name: "cbr0",
      type: "bridge",
      ipam: { type: "host-local", Subnet: "10.1.0.0/24" },
    });
  });

  it("B17 M1 two keys of one object differing only in case stay refused (Go would take the last silently)", () => {
    expect(() =>
      parsePlexusConf({ cniVersion: "1.0.0", name: "p", clusterNetwork: "a", ClusterNetwork: "b" }),
    ).toThrow(
      expect.objectContaining({
        code: 7,
        message: expect.stringMatching(/both "clusterNetwork" and "ClusterNetwork"/),
      }),
    );
    expect(() =>
      parseConfList(
        { cniVersion: "1.0.0", name: "n", type: "bridge", ipam: { type: "a", Type: "b" } },
        { what: "d" },
      ),
    ).toThrow(expect.objectContaining({ code: 7 }));
  });

  it("M1 a conflist's keys in other cases (Plugins, Name, CNIVersion) are read; the plugins' own keys pass as given", () => {
    const l = parseConfList(
      {
        CNIVersion: "1.0.0",
        NAME: "net",
        Plugins: [{ TYPE: "bridge", Bridge: "br9" }, { type: "tuning" }],
      },
      { what: "NAD default/net" },
    );
    expect(l.name).toBe("net");
    expect(l.plugins.map((p) => p.type)).toEqual(["bridge", "tuning"]);
    expect(l.plugins[0]).toEqual({ type: "bridge", Bridge: "br9" });
  });

  it("M1 unknown keys are named with the nearest known key; Multus's thick-only keys as having no effect", () => {
    const c = parsePlexusConf({
      cniVersion: "1.0.0",
      name: "p",
      clusterNetwrok: "x",
      delegates: [{ cniVersion: "1.0.0", name: "a", type: "bridge" }],
      chrootDir: "/hostroot",
      SocketDir: "/run/multus",
      whatever: 1,
    });
    expect(c.unknownKeys).toEqual(["clusterNetwrok", "chrootDir", "SocketDir", "whatever"]);
    const msgs = reportUnknownKeys(c.unknownKeys, ["clusterNetwork", "confDir"], "the config").map(
      (r) => r.msg,
    );
    expect(msgs).toEqual([
      "the config: `clusterNetwrok` is not a Plexus key; did you mean `clusterNetwork`?",
      "the config: `chrootDir` is a key of Multus's thick-plugin daemon: accepted, has no effect " +
        "here",
      "the config: `SocketDir` is a key of Multus's thick-plugin daemon: accepted, has no effect " +
        "here",
      "the config: `whatever` is not a Plexus key and is ignored",
    ]);
    expect(nearestKey("logfiel", ["logFile", "logLevel"])).toBe("logFile");
  });

  it("M1 a conflist fed to the binary by hand is explained: what libcni would hand the plugin instead", () => {
    const conflist = {
      cniVersion: "1.0.0",
      name: "plexus-cni-network",
      plugins: [{ type: "plexus", clusterNetwork: "/etc/cni/net.d/10-bridge.conflist" }],
    };
    expect(() => parsePlexusConf(conflist)).toThrow(
      expect.objectContaining({
        code: 7,
        message: expect.stringContaining(
          'is a conflist (it has "plugins"), not a plugin config: a runtime (libcni) never ' +
            "passes " +
            'a list to a plugin; it runs each entry of "plugins" in turn, with the list\'s ' +
            '"name" ' +
            "and " +
            '"cniVersion" injected. For this list it would hand Plexus: ' +
            '{"type":"plexus","clusterNetwork":"/etc/cni/net.d/10-bridge.conflist","name":"plexus-cni-network","cniVersion":"1.0.0"}',
        ),
      }),
    );
  });

  it("M1 M12 auxiliaryCNIChainName is a Plexus key in any case (Multus 4.3's auxiliary chain)", () => {
    const c = parsePlexusConf({
      cniVersion: "1.0.0",
      name: "p",
      clusterNetwork: "/etc/cni/net.d/a.conf",
      AuxiliaryCNIChainName: "chain",
    });
    expect([c.auxiliaryCNIChainName, c.unknownKeys]).toEqual(["chain", []]);
  });
});
