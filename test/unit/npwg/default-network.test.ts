import { describe, expect, it } from "vitest";
import { parsePlexusConf } from "../../../src/config/plugin-conf";
import {
  parseDefaultNetworkAnnotation,
  resolveDefaultNetworks,
  type NetworkSource,
} from "../../../src/npwg/default-network";
import type { ConfFile } from "../../../src/npwg/nad";
import type { Nad, Pod } from "../../../src/npwg/types";

const cfg = (name: string, type = "bridge") => JSON.stringify({ cniVersion: "1.0.0", name, type });
const nadOf = (namespace: string, name: string, type = "bridge"): Nad => ({
  metadata: { namespace, name },
  spec: { config: cfg(name, type) },
});
const OVERRIDE = "v1.multus-cni.io/default-network";

interface Fake extends NetworkSource {
  /** Every I/O call in order: `nad ns/name`, `confDir`, `dir /p`, `read /p`. */
  calls: string[];
}

function source(
  options: {
    nads?: Nad[];
    confDir?: ConfFile[];
    paths?: Record<string, string>;
    dirs?: Record<string, ConfFile[]>;
    kube?: boolean;
    nadError?: Error;
  } = {},
): Fake {
  const calls: string[] = [];
  return {
    calls,
    ...(options.kube === false
      ? {}
      : {
          getNad: async (ns: string, name: string) => {
            calls.push(`nad ${ns}/${name}`);
            if (options.nadError) throw options.nadError;
            return (options.nads ?? []).find(
              (n) => n.metadata.namespace === ns && n.metadata.name === name,
            );
          },
        }),
    confDirFiles: async () => {
      calls.push("confDir");
      return options.confDir ?? [];
    },
    readPath: async (p) => {
      calls.push(`read ${p}`);
      const content = options.paths?.[p];
      return content === undefined ? undefined : { path: p, content };
    },
    listDir: async (p) => {
      calls.push(`dir ${p}`);
      return options.dirs?.[p];
    },
  };
}

const pod = (namespace: string, annotations: Record<string, string> = {}, name = "p"): Pod => ({
  metadata: { name, namespace, annotations },
});
const conf = (extra: Record<string, unknown>) =>
  parsePlexusConf({ cniVersion: "1.0.0", name: "plexus", type: "plexus", ...extra });
const names = (result: {
  clusterNetwork: { network: string };
  defaultNetworks: Array<{ network: string }>;
}) => [result.clusterNetwork.network, ...result.defaultNetworks.map((d) => d.network)];

describe("N6 M2 the cluster default network", () => {
  it("M2 a NAD of that name in multusNamespace wins over a config file of that name, and carries the NAD", async () => {
    const cbr0 = nadOf("kube-system", "cbr0", "ptp");
    const s = source({
      nads: [cbr0],
      confDir: [{ path: "/d/10-cbr0.conf", content: cfg("cbr0") }],
    });
    const r = await resolveDefaultNetworks(pod("app"), conf({ clusterNetwork: "cbr0" }), s);
    expect(r.clusterNetwork).toMatchObject({
      network: "kube-system/cbr0",
      conf: { plugins: [{ type: "ptp" }] },
      nad: cbr0,
    });
    expect(s.calls).toEqual(["nad kube-system/cbr0", "confDir"]);
  });

  it("M2 a NAD is looked up in multusNamespace, not in the pod's namespace", async () => {
    const s = source({ nads: [nadOf("app", "cbr0", "ptp"), nadOf("infra", "cbr0", "macvlan")] });
    const r = await resolveDefaultNetworks(
      pod("app"),
      conf({ clusterNetwork: "cbr0", multusNamespace: "infra" }),
      s,
    );
    expect(r.clusterNetwork.network).toBe("infra/cbr0");
    expect(r.clusterNetwork.conf.plugins[0]?.type).toBe("macvlan");
  });

  it("M2 N3.4.1 then a confDir config whose name matches (.conflist before .conf), with no nad", async () => {
    const files = [
      { path: "/d/10-cbr0.conf", content: cfg("cbr0", "ptp") },
      {
        path: "/d/20-cbr0.conflist",
        content: JSON.stringify({
          cniVersion: "1.0.0",
          name: "cbr0",
          plugins: [{ type: "bridge" }, { type: "portmap" }],
        }),
      },
    ];
    const r = await resolveDefaultNetworks(
      pod("app"),
      conf({ clusterNetwork: "cbr0" }),
      source({ confDir: files }),
    );
    expect(r.clusterNetwork).toEqual({
      network: "cbr0",
      conf: {
        cniVersion: "1.0.0",
        name: "cbr0",
        plugins: [{ type: "bridge" }, { type: "portmap" }],
      },
    });
    expect(r.warnings).toEqual([
      '/d/10-cbr0.conf also has "name": "cbr0"; using /d/20-cbr0.conflist',
    ]);
  });

  it("M2 then a directory: its first usable config file (broken ones skipped with a warning)", async () => {
    const dir = {
      "/etc/flannel": [
        { path: "/etc/flannel/20-b.conf", content: cfg("b") },
        { path: "/etc/flannel/10-a.conf", content: cfg("a", "ptp") },
        {
          path: "/etc/flannel/05-x.conflist",
          content: JSON.stringify({ cniVersion: "1.0.0", name: "x", plugins: [] }),
        },
      ],
    };
    const r = await resolveDefaultNetworks(
      pod("app"),
      conf({ clusterNetwork: "/etc/flannel" }),
      source({ dirs: dir }),
    );
    expect(r.clusterNetwork).toMatchObject({ network: "a", conf: { plugins: [{ type: "ptp" }] } });
    expect(r.warnings).toEqual(['/etc/flannel/05-x.conflist has no plugins in "plugins"; skipped']);
  });

  it("M2 a directory without a usable config is 7 naming it", async () => {
    const s = source({ dirs: { "/etc/empty": [{ path: "/etc/empty/a.conf", content: "{" }] } });
    await expect(
      resolveDefaultNetworks(pod("app"), conf({ clusterNetwork: "/etc/empty" }), s),
    ).rejects.toMatchObject({
      code: 7,
      message: expect.stringContaining('"/etc/empty" is a directory with no usable'),
    });
  });

  it("M2 then a file path (conflist or single conf); the path is never looked up as a NAD", async () => {
    const s = source({
      paths: {
        "/etc/x/10-calico.conflist": JSON.stringify({
          cniVersion: "0.3.1",
          name: "k8s-pod-network",
          plugins: [{ type: "calico" }],
        }),
      },
    });
    const file = await resolveDefaultNetworks(
      pod("app"),
      conf({ clusterNetwork: "/etc/x/10-calico.conflist" }),
      s,
    );
    expect(file.clusterNetwork).toEqual({
      network: "k8s-pod-network",
      conf: { cniVersion: "0.3.1", name: "k8s-pod-network", plugins: [{ type: "calico" }] },
    });
    expect(s.calls).toEqual([
      "confDir",
      "dir /etc/x/10-calico.conflist",
      "read /etc/x/10-calico.conflist",
    ]);
  });

  it.each([
    ["not JSON", "{", "not valid JSON"],
    ["a conf without type", JSON.stringify({ cniVersion: "1.0.0", name: "x" }), 'no "type"'],
    [
      "an empty conflist",
      JSON.stringify({ cniVersion: "1.0.0", name: "x", plugins: [] }),
      "at least one plugin",
    ],
  ])(
    "M2 B31 a clusterNetwork file that is %s is 7 naming the file",
    async (_label, content, text) => {
      const s = source({ paths: { "/etc/x/a.conf": content } });
      await expect(
        resolveDefaultNetworks(pod("app"), conf({ clusterNetwork: "/etc/x/a.conf" }), s),
      ).rejects.toMatchObject({
        code: 7,
        message: expect.stringMatching(
          new RegExp(`/etc/x/a\\.conf.*${text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}`),
        ),
      });
    },
  );

  it("M2 nothing found is 7 naming the value and what was tried", async () => {
    await expect(
      resolveDefaultNetworks(pod("app"), conf({ clusterNetwork: "nope" }), source()),
    ).rejects.toMatchObject({
      code: 7,
      message: expect.stringMatching(
        /^clusterNetwork "nope" names no network: no NetworkAttachmentDefinition nope in namespace kube-system; no config in the CNI config directory/,
      ),
    });
  });

  it("M2 an API error while reading the NAD fails the resolution instead of falling back to a file", async () => {
    const s = source({
      nadError: Object.assign(new Error("API down"), { code: 104 }),
      confDir: [{ path: "/d/cbr0.conf", content: cfg("cbr0") }],
    });
    await expect(
      resolveDefaultNetworks(pod("app"), conf({ clusterNetwork: "cbr0" }), s),
    ).rejects.toThrow("API down");
  });

  it("B7 without Kubernetes access a clusterNetwork name is looked up in confDir only, never as a NAD", async () => {
    const s = source({ kube: false, confDir: [{ path: "/d/10-cbr0.conf", content: cfg("cbr0") }] });
    expect(
      (await resolveDefaultNetworks(undefined, conf({ clusterNetwork: "cbr0" }), s)).clusterNetwork
        .network,
    ).toBe("cbr0");
    expect(s.calls).toEqual(["confDir"]);
  });

  it("N6 N6.2 inline delegates: the first is the cluster network, the others follow it, in order", async () => {
    const c = conf({
      delegates: [JSON.parse(cfg("d0")), JSON.parse(cfg("d1")), JSON.parse(cfg("d2"))],
    });
    const s = source();
    expect(names(await resolveDefaultNetworks(pod("app"), c, s))).toEqual(["d0", "d1", "d2"]);
    expect(s.calls).toEqual([]);
  });

  it("N6 clusterNetwork wins over inline delegates, with a warning", async () => {
    const c = conf({
      clusterNetwork: "cbr0",
      delegates: [JSON.parse(cfg("d0")), JSON.parse(cfg("d1"))],
    });
    const r = await resolveDefaultNetworks(
      pod("app"),
      c,
      source({ nads: [nadOf("kube-system", "cbr0")] }),
    );
    expect(names(r)).toEqual(["kube-system/cbr0"]);
    expect(r.warnings).toEqual([
      expect.stringContaining('both "clusterNetwork" and "delegates" are set'),
    ]);
  });
});

describe("M3 N6.2 defaultNetworks", () => {
  const s = () =>
    source({
      nads: [
        nadOf("kube-system", "cbr0"),
        nadOf("kube-system", "mon"),
        nadOf("kube-system", "log"),
      ],
      confDir: [{ path: "/d/side.conf", content: cfg("side", "ptp") }],
    });
  it("M3 N6.2 are added after the cluster network, in config order, read from multusNamespace", async () => {
    const r = await resolveDefaultNetworks(
      pod("app"),
      conf({ clusterNetwork: "cbr0", defaultNetworks: ["mon", "log"] }),
      s(),
    );
    expect(names(r)).toEqual(["kube-system/cbr0", "kube-system/mon", "kube-system/log"]);
  });

  it("M3 an entry may also name a confDir config (Multus resolves them like clusterNetwork)", async () => {
    const r = await resolveDefaultNetworks(
      pod("app"),
      conf({ clusterNetwork: "cbr0", defaultNetworks: ["side"] }),
      s(),
    );
    expect(r.defaultNetworks).toEqual([
      {
        network: "side",
        conf: {
          cniVersion: "1.0.0",
          name: "side",
          plugins: [{ type: "ptp", name: "side", cniVersion: "1.0.0" }],
        },
      },
    ]);
  });

  it("M3 are skipped for pods whose NAMESPACE is a system namespace (Multus compares the pod name)", async () => {
    const c = conf({
      clusterNetwork: "cbr0",
      defaultNetworks: ["mon"],
      systemNamespaces: ["kube-system", "infra"],
    });
    expect((await resolveDefaultNetworks(pod("infra"), c, s())).defaultNetworks).toEqual([]);
    expect(
      (await resolveDefaultNetworks(pod("app", {}, "infra"), c, s())).defaultNetworks,
    ).toHaveLength(1);
  });

  it("M3 systemNamespaces defaults to kube-system", async () => {
    const c = conf({ clusterNetwork: "cbr0", defaultNetworks: ["mon"] });
    const sys = s();
    expect((await resolveDefaultNetworks(pod("kube-system"), c, sys)).defaultNetworks).toEqual([]);
    expect(sys.calls).not.toContain("nad kube-system/mon");
  });

  it("M3 B28 a missing defaultNetworks entry is 7 naming it", async () => {
    await expect(
      resolveDefaultNetworks(
        pod("app"),
        conf({ clusterNetwork: "cbr0", defaultNetworks: ["gone"] }),
        s(),
      ),
    ).rejects.toMatchObject({
      code: 7,
      message: expect.stringContaining(
        'defaultNetworks entry "gone" names no network: no NetworkAttachmentDefinition gone in ' +
          "namespace kube-system",
      ),
    });
  });
});

describe("M5 the v1.multus-cni.io/default-network override", () => {
  const nads = [
    nadOf("kube-system", "cbr0"),
    nadOf("kube-system", "alt", "ptp"),
    nadOf("team-b", "alt", "macvlan"),
    nadOf("app", "mine", "ipvlan"),
    nadOf("kube-system", "mon"),
  ];
  it("M5 replaces the cluster network; a bare name means multusNamespace; defaultNetworks still follow", async () => {
    const s = source({ nads });
    const r = await resolveDefaultNetworks(
      pod("app", { [OVERRIDE]: "alt" }),
      conf({ clusterNetwork: "cbr0", defaultNetworks: ["mon"] }),
      s,
    );
    expect(names(r)).toEqual(["kube-system/alt", "kube-system/mon"]);
    expect(r.clusterNetwork.conf.plugins[0]?.type).toBe("ptp");
    expect(s.calls).not.toContain("nad kube-system/cbr0");
  });

  it("M5 with inline delegates only delegates[0] is replaced", async () => {
    const c = conf({ delegates: [JSON.parse(cfg("d0")), JSON.parse(cfg("d1"))] });
    expect(
      names(await resolveDefaultNetworks(pod("app", { [OVERRIDE]: "alt" }), c, source({ nads }))),
    ).toEqual(["kube-system/alt", "d1"]);
  });

  it("M5 namespace/name and Multus's JSON form (one element) are accepted", async () => {
    const c = conf({ clusterNetwork: "cbr0" });
    expect(
      (await resolveDefaultNetworks(pod("app", { [OVERRIDE]: "team-b/alt" }), c, source({ nads })))
        .clusterNetwork.network,
    ).toBe("team-b/alt");
    expect(
      (
        await resolveDefaultNetworks(
          pod("app", { [OVERRIDE]: '[{"name":"alt","namespace":"team-b"}]' }),
          c,
          source({ nads }),
        )
      ).clusterNetwork.network,
    ).toBe("team-b/alt");
    expect(
      (
        await resolveDefaultNetworks(
          pod("app", { [OVERRIDE]: '[{"name":"alt"}]' }),
          c,
          source({ nads }),
        )
      ).clusterNetwork.network,
    ).toBe("kube-system/alt");
  });

  it("M5 B24 N7.4 namespace isolation applies to the override too (Multus forgets it), before any NAD is read", async () => {
    const s = source({ nads });
    const c = conf({ clusterNetwork: "cbr0", namespaceIsolation: true });
    await expect(
      resolveDefaultNetworks(pod("app", { [OVERRIDE]: "team-b/alt" }), c, s),
    ).rejects.toMatchObject({
      code: 7,
      message: expect.stringContaining("team-b/alt is refused for a pod in namespace app"),
    });
    await expect(
      resolveDefaultNetworks(
        pod("app", { [OVERRIDE]: '[{"name":"alt","namespace":"team-b"}]' }),
        c,
        s,
      ),
    ).rejects.toMatchObject({ code: 7, message: expect.stringContaining("refused") });
    expect(s.calls).toEqual([]);
  });

  it("M5 N7.4 with isolation the override may still name multusNamespace (bare name) or the pod's own namespace", async () => {
    const c = conf({ clusterNetwork: "cbr0", namespaceIsolation: true });
    expect(
      (await resolveDefaultNetworks(pod("app", { [OVERRIDE]: "alt" }), c, source({ nads })))
        .clusterNetwork.network,
    ).toBe("kube-system/alt");
    expect(
      (await resolveDefaultNetworks(pod("app", { [OVERRIDE]: "app/mine" }), c, source({ nads })))
        .clusterNetwork.network,
    ).toBe("app/mine");
  });

  it("M5 B28 an override naming a missing NAD is 7 naming the pod, the reference and the annotation", async () => {
    await expect(
      resolveDefaultNetworks(
        pod("app", { [OVERRIDE]: "gone" }),
        conf({ clusterNetwork: "cbr0" }),
        source({ nads }),
      ),
    ).rejects.toMatchObject({
      code: 7,
      message:
        "pod app/p: network kube-system/gone (annotation v1.multus-cni.io/default-network): no " +
        'NetworkAttachmentDefinition named "gone" exists in namespace kube-system',
    });
  });

  it("M5 an empty override is ignored", async () => {
    expect(
      (
        await resolveDefaultNetworks(
          pod("app", { [OVERRIDE]: "  " }),
          conf({ clusterNetwork: "cbr0" }),
          source({ nads }),
        )
      ).clusterNetwork.network,
    ).toBe("kube-system/cbr0");
  });

  it.each([
    ["../x", "not a valid DNS-1123 label"],
    ["a/b/c", "expected name or namespace/name"],
    ["Alt", "not a valid DNS-1123 label"],
    ["alt,cbr0", "exactly one default network"],
    ["alt@eth1", "@interface cannot apply"],
    ["team-b/", "not a valid DNS-1123 label"],
    ["{}", "must be a list"],
    ["[]", "names 0 networks"],
    ['[{"name":"a"},{"name":"b"}]', "names 2 networks"],
    ["[1]", "must be an object"],
    ['[{"namespace":"x"}]', '"name" is required'],
    ['[{"name":"alt","ips":["10.0.0.1"]}]', '"ips" cannot apply to the default network'],
    ['[{"name":"alt","interface":"eth1"}]', '"interface" cannot apply'],
    ["[{", "not valid JSON"],
  ])("B20 M5 override %s is 7 before any request", async (value, text) => {
    const s = source({ nads });
    await expect(
      resolveDefaultNetworks(
        pod("app", { [OVERRIDE]: value }),
        conf({ clusterNetwork: "cbr0" }),
        s,
      ),
    ).rejects.toMatchObject({ code: 7, message: expect.stringContaining(text) });
    expect(s.calls).toEqual([]);
  });

  it("M5 parseDefaultNetworkAnnotation ignores unknown (reverse-domain) keys and treats an empty namespace as multusNamespace", () => {
    expect(
      parseDefaultNetworkAnnotation('[{"name":"alt","namespace":"","example.com/x":1}]', "infra"),
    ).toEqual({
      namespace: "infra",
      name: "alt",
    });
    expect(parseDefaultNetworkAnnotation(" team-b / alt ", "infra")).toEqual({
      namespace: "team-b",
      name: "alt",
    });
  });
});
