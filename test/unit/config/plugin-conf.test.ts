import { describe, expect, it } from "vitest";
import { Code } from "../../../src/cni/errors";
import { decodeJson } from "../../../src/cni/json";
import {
  DEFAULT_CNI_DIR,
  DEFAULT_MULTUS_CACHE_DIR,
  parsePlexusConf,
} from "../../../src/config/plugin-conf";

const base = {
  cniVersion: "1.0.0",
  name: "plexus",
  type: "plexus",
  delegates: [{ cniVersion: "1.0.0", name: "net-a", type: "bridge" }],
};

/** What the CLI does with stdin: decode, then parse. */
function fromStdin(text: string) {
  return parsePlexusConf(decodeJson(text, { what: "stdin config" }));
}

function codeOf(fn: () => unknown): number | string {
  try {
    fn();
  } catch (err) {
    return (err as { code: number }).code;
  }
  return "no error";
}

describe("B11 B17 stdin that is not a usable object", () => {
  it.each([
    "",
    "   ",
    "null",
    "[]",
    '"str"',
    "5",
    "true",
    '{"cniVersion":',
    '{"cniVersion":"1.0.0"',
  ])("B11 %j is code 6", (text) => {
    expect(codeOf(() => fromStdin(text))).toBe(Code.Decoding);
  });

  it("B17 __proto__ and constructor keys are 7 and pollute nothing", () => {
    expect(
      codeOf(() => fromStdin(`{"cniVersion":"1.0.0","name":"p","__proto__":{"polluted":1}}`)),
    ).toBe(Code.InvalidNetworkConfig);
    expect(
      codeOf(() => fromStdin(`{"cniVersion":"1.0.0","name":"p","delegates":[{"constructor":{}}]}`)),
    ).toBe(Code.InvalidNetworkConfig);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it('B17 "Type" beside "type" (ambiguous to Go\'s case-insensitive decoder) is 7 naming both, in the config and in a delegate', () => {
    expect(() => parsePlexusConf({ ...base, Type: "x" })).toThrow(
      expect.objectContaining({ code: 7, message: expect.stringMatching(/"type".*"Type"/) }),
    );
    expect(() =>
      parsePlexusConf({
        ...base,
        delegates: [{ cniVersion: "1.0.0", name: "a", type: "bridge", Type: "macvlan" }],
      }),
    ).toThrow(
      expect.objectContaining({ code: 7, message: expect.stringContaining("delegates[0]") }),
    );
  });
});

describe("B13 B14 B16 required keys", () => {
  it.each([undefined, "9.9.9", "1.0", "", 1])(
    "B13 cniVersion %j is code 1 listing the supported versions",
    (v) => {
      expect(() => parsePlexusConf({ ...base, cniVersion: v })).toThrow(
        expect.objectContaining({
          code: Code.IncompatibleVersion,
          message: expect.stringContaining("0.1.0, 0.2.0, 0.3.0, 0.3.1, 0.4.0, 1.0.0, 1.1.0"),
        }),
      );
    },
  );

  it("B13 a delegate with an unsupported cniVersion is code 1 naming the delegate", () => {
    expect(() =>
      parsePlexusConf({ ...base, delegates: [{ cniVersion: "9.9.9", name: "a", type: "bridge" }] }),
    ).toThrow(
      expect.objectContaining({ code: 1, message: expect.stringContaining("delegates[0]") }),
    );
  });

  it.each([undefined, "", "a/b", "-x", "a b", 7])("B14 name %j is code 7", (name) => {
    expect(() => parsePlexusConf({ ...base, name })).toThrow(
      expect.objectContaining({ code: Code.InvalidNetworkConfig }),
    );
  });

  it("B16 no delegates and no clusterNetwork, or an empty list, is 7 naming both keys", () => {
    for (const c of [
      { ...base, delegates: undefined },
      { ...base, delegates: [] },
      { ...base, delegates: [], clusterNetwork: "" },
    ]) {
      expect(() => parsePlexusConf(c)).toThrow(
        expect.objectContaining({
          code: 7,
          message: expect.stringMatching(/clusterNetwork.*delegates/),
        }),
      );
    }
  });

  it("B16 DEL and GC (requireNetworks false) accept it: the record has the networks", () => {
    expect(
      parsePlexusConf({ ...base, delegates: [] }, { requireNetworks: false }).delegates,
    ).toEqual([]);
  });

  it("M2 clusterNetwork alone is enough", () => {
    const c = parsePlexusConf({ ...base, delegates: undefined, clusterNetwork: "cbr0" });
    expect(c).toMatchObject({ clusterNetwork: "cbr0", delegates: [] });
  });

  it("B30 a delegate with a path as type is 7 naming the delegate", () => {
    expect(() =>
      parsePlexusConf({
        ...base,
        delegates: [{ cniVersion: "1.0.0", name: "a", type: "../bin/sh" }],
      }),
    ).toThrow(
      expect.objectContaining({ code: 7, message: expect.stringContaining("delegates[0]") }),
    );
  });
});

describe("M1 Multus config keys and defaults", () => {
  it("M1 defaults are Multus's (cniDir is Plexus's own)", () => {
    const c = parsePlexusConf(base);
    expect(DEFAULT_CNI_DIR).toBe("/var/lib/cni/plexus");
    expect(c).toMatchObject({
      cniVersion: "1.0.0",
      name: "plexus",
      type: "plexus",
      cniDir: "/var/lib/cni/plexus",
      confDir: "/etc/cni/net.d",
      systemNamespaces: ["kube-system"],
      multusNamespace: "kube-system",
      namespaceIsolation: false,
      globalNamespaces: [],
      defaultNetworks: [],
      logToStderr: true,
      capabilities: {},
      runtimeConfig: {},
      retryDeleteOnError: false,
      delegateTimeoutMs: 60_000,
      unknownKeys: [],
    });
    for (const k of [
      "kubeconfig",
      "binDir",
      "clusterNetwork",
      "readinessindicatorfile",
      "logFile",
      "logLevel",
      "logOptions",
      "validAttachments",
    ]) {
      expect(c).not.toHaveProperty(k);
    }
  });

  it("M1 every Multus key given is taken as given", () => {
    const c = parsePlexusConf({
      ...base,
      kubeconfig: "/etc/cni/net.d/plexus.d/plexus.kubeconfig",
      confDir: "/etc/x",
      cniDir: "/var/lib/x",
      binDir: "/opt/bin",
      clusterNetwork: "k8s-pod-network",
      defaultNetworks: ["sidecar"],
      systemNamespaces: ["a", "b"],
      multusNamespace: "plexus",
      namespaceIsolation: true,
      globalNamespaces: ["g1", "g2"],
      readinessindicatorfile: "/run/ready",
      logFile: "/var/log/plexus.log",
      logLevel: "verbose",
      logToStderr: false,
      logOptions: { maxAge: 5, maxSize: 10, maxBackups: 3, compress: true },
      capabilities: { portMappings: true },
      runtimeConfig: { portMappings: [{ hostPort: 8080, containerPort: 80, protocol: "tcp" }] },
      retryDeleteOnError: true,
    });
    expect(c).toMatchObject({
      kubeconfig: "/etc/cni/net.d/plexus.d/plexus.kubeconfig",
      confDir: "/etc/x",
      cniDir: "/var/lib/x",
      binDir: "/opt/bin",
      clusterNetwork: "k8s-pod-network",
      defaultNetworks: ["sidecar"],
      systemNamespaces: ["a", "b"],
      multusNamespace: "plexus",
      namespaceIsolation: true,
      globalNamespaces: ["g1", "g2"],
      readinessindicatorfile: "/run/ready",
      logFile: "/var/log/plexus.log",
      logLevel: "verbose",
      logToStderr: false,
      logOptions: { maxAge: 5, maxSize: 10, maxBackups: 3, compress: true },
      capabilities: { portMappings: true },
      runtimeConfig: { portMappings: [{ hostPort: 8080, containerPort: 80, protocol: "tcp" }] },
      retryDeleteOnError: true,
      unknownKeys: [],
    });
  });

  it("M1 globalNamespaces as Multus's comma-separated string becomes a list, blanks dropped", () => {
    expect(
      parsePlexusConf({ ...base, globalNamespaces: "default, kube-public,,x " }).globalNamespaces,
    ).toEqual(["default", "kube-public", "x"]);
    expect(parsePlexusConf({ ...base, globalNamespaces: "" }).globalNamespaces).toEqual([]);
  });

  it.each([
    "debug",
    "verbose",
    "error",
    "panic",
    "DEBUG",
    "Verbose",
    "trace",
    "info",
    "warn",
    "fatal",
    "silent",
  ])("M1 logLevel %j is accepted", (l) => {
    expect(parsePlexusConf({ ...base, logLevel: l }).logLevel).toBe(l);
  });

  it.each(["loud", "warning", "5", " debug"])(
    "M1 logLevel %j is code 7 naming the key and the accepted values",
    (l) => {
      expect(() => parsePlexusConf({ ...base, logLevel: l })).toThrow(
        expect.objectContaining({
          code: 7,
          message: expect.stringMatching(/logLevel.*debug, verbose, error or panic/),
        }),
      );
    },
  );

  it("M1 an empty logLevel means the default and is not kept", () => {
    expect(parsePlexusConf({ ...base, logLevel: "" })).not.toHaveProperty("logLevel");
  });

  it("M1 unknown keys are collected for a debug log, not refused; keys that belong to every CNI config are not unknown", () => {
    const c = parsePlexusConf({
      ...base,
      somethingNew: 1,
      "x.io/y": {},
      args: { cni: {} },
      ipam: {},
      dns: {},
    });
    expect(c.unknownKeys).toEqual(["somethingNew", "x.io/y"]);
  });

  it.each([
    ["cniDir", ""],
    ["confDir", ""],
    ["systemNamespaces", "kube-system"],
    ["namespaceIsolation", "true"],
    ["logToStderr", "false"],
    ["delegates", { type: "bridge" }],
    ["capabilities", { portMappings: "yes" }],
    ["delegateTimeoutSeconds", 0],
    ["delegateTimeoutSeconds", 100_000],
    ["maxNetworks", 1.5],
  ])("M1 %s = %j has the wrong type or range: code 7 naming the key", (key, value) => {
    expect(() => parsePlexusConf({ ...base, [key]: value })).toThrow(
      expect.objectContaining({ code: 7, message: expect.stringContaining(key) }),
    );
  });

  it('multusCacheDir (migration from Multus): Multus\'s own cniDir by default, a path as given, "" turns it off, a non-string is code 7', () => {
    expect(DEFAULT_MULTUS_CACHE_DIR).toBe("/var/lib/cni/multus");
    expect(parsePlexusConf(base).multusCacheDir).toBe("/var/lib/cni/multus");
    expect(parsePlexusConf({ ...base, multusCacheDir: "/var/lib/x/multus" }).multusCacheDir).toBe(
      "/var/lib/x/multus",
    );
    expect(parsePlexusConf({ ...base, multusCacheDir: "" }).multusCacheDir).toBe("");
    expect(parsePlexusConf({ ...base, multusCacheDir: "" }).unknownKeys).toEqual([]);
    expect(() => parsePlexusConf({ ...base, multusCacheDir: false })).toThrow(
      expect.objectContaining({ code: 7, message: expect.stringContaining("multusCacheDir") }),
    );
  });

  it("M1 timeouts in seconds become milliseconds", () => {
    const c = parsePlexusConf({
      ...base,
      delegateTimeoutSeconds: 2.5,
      readinessTimeoutSeconds: 0,
      apiRequestTimeoutSeconds: 1,
      apiTotalTimeoutSeconds: 3,
    });
    expect(c).toMatchObject({
      delegateTimeoutMs: 2500,
      readinessTimeoutMs: 0,
      apiRequestTimeoutMs: 1000,
      apiTotalTimeoutMs: 3000,
    });
  });
});

describe("M1 delegates", () => {
  it("M1 a delegate without cniVersion inherits the config's; a single conf becomes a one-plugin list with name and version injected", () => {
    const c = parsePlexusConf({
      ...base,
      cniVersion: "0.4.0",
      delegates: [{ name: "n", type: "bridge", bridge: "br0" }],
    });
    expect(c.delegates[0]).toEqual({
      cniVersion: "0.4.0",
      name: "n",
      plugins: [{ type: "bridge", bridge: "br0", name: "n", cniVersion: "0.4.0" }],
    });
  });

  it("M1 a conflist delegate keeps its own version and plugins in order; delegates keep their order", () => {
    const c = parsePlexusConf({
      ...base,
      delegates: [
        {
          cniVersion: "0.3.1",
          name: "k8s-pod-network",
          plugins: [{ type: "calico" }, { type: "portmap", capabilities: { portMappings: true } }],
        },
        { name: "second", type: "macvlan" },
      ],
    });
    expect(c.delegates.map((d) => [d.name, d.cniVersion, d.plugins.map((p) => p.type)])).toEqual([
      ["k8s-pod-network", "0.3.1", ["calico", "portmap"]],
      ["second", "1.0.0", ["macvlan"]],
    ]);
  });

  it("M1 a delegate without a name is code 7 (Multus requires it too)", () => {
    expect(() => parsePlexusConf({ ...base, delegates: [{ type: "bridge" }] })).toThrow(
      expect.objectContaining({ code: 7, message: expect.stringContaining("delegates[0]") }),
    );
  });
});

describe("C2.9 GC's valid attachments", () => {
  it("C2.9 `cni.dev/valid-attachments` is read for GC, extra keys dropped; it is not an unknown key", () => {
    const c = parsePlexusConf({
      ...base,
      "cni.dev/valid-attachments": [
        { containerID: "c1", ifname: "eth0", extra: 1 },
        { containerID: "c2", ifname: "net1" },
      ],
    });
    expect(c.validAttachments).toEqual([
      { containerID: "c1", ifname: "eth0" },
      { containerID: "c2", ifname: "net1" },
    ]);
    expect(c.unknownKeys).toEqual([]);
    expect(parsePlexusConf({ ...base, "cni.dev/valid-attachments": [] }).validAttachments).toEqual(
      [],
    );
  });

  it("C2.9 a malformed attachment list is code 7", () => {
    expect(() =>
      parsePlexusConf({ ...base, "cni.dev/valid-attachments": [{ containerID: "c1" }] }),
    ).toThrow(expect.objectContaining({ code: 7 }));
    expect(() => parsePlexusConf({ ...base, "cni.dev/valid-attachments": "c1" })).toThrow(
      expect.objectContaining({ code: 7 }),
    );
  });
});

describe("B91 paths in the config are absolute", () => {
  const pathKeys = [
    "cniDir",
    "multusCacheDir",
    "logFile",
    "deviceInfoDir",
    "fileClusterDir",
    "confDir",
    "binDir",
    "kubeconfig",
    "readinessindicatorfile",
    "daemonSocket",
    "podResourcesSocket",
  ];

  it.each(
    pathKeys.flatMap((key) => ["state", "./state", "../var/lib", "a/b"].map((v) => [key, v])),
  )("B91 %s %j is refused with 7 naming the key, the value and an absolute path", (key, value) => {
    expect(() => parsePlexusConf({ ...base, [key]: value })).toThrow(
      expect.objectContaining({
        code: Code.InvalidNetworkConfig,
        message: expect.stringMatching(
          new RegExp(`key "${key}" is ${JSON.stringify(value).replace(/[.]/g, "\\.")}.*absolute`),
        ),
      }),
    );
  });

  it("B91 Multus's spelling of a key is held to the same rule (CNIDir, LogFile, …)", () => {
    for (const [key, canonical] of [
      ["CNIDir", "cniDir"],
      ["ReadinessIndicatorFile", "readinessindicatorfile"],
      ["LogFile", "logFile"],
    ] as const)
      expect(() => parsePlexusConf({ ...base, [key]: "rel" })).toThrow(
        expect.objectContaining({ code: 7, message: expect.stringContaining(`"${canonical}"`) }),
      );
  });

  it('B91 absolute paths pass, and "" keeps meaning unset or off where it did', () => {
    const absolute = Object.fromEntries(pathKeys.map((k) => [k, `/abs/${k}`]));
    const conf = parsePlexusConf({ ...base, ...absolute });
    expect(conf.cniDir).toBe("/abs/cniDir");
    expect(conf.logFile).toBe("/abs/logFile");
    const empty = parsePlexusConf({
      ...base,
      multusCacheDir: "",
      daemonSocket: "",
      kubeconfig: "",
      logFile: "",
      binDir: "",
      readinessindicatorfile: "",
    });
    expect(empty.multusCacheDir).toBe("");
    expect(empty.daemonSocket).toBe("");
    expect(empty.logFile).toBeUndefined();
  });

  it("B91 clusterNetwork and defaultNetworks stay names: no leading / is no error", () => {
    const conf = parsePlexusConf({
      cniVersion: "1.0.0",
      name: "plexus",
      clusterNetwork: "primary-net",
      defaultNetworks: ["net-a"],
    });
    expect(conf.clusterNetwork).toBe("primary-net");
  });
});
