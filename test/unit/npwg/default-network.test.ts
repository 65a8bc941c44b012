import { describe, expect, it } from "vitest";
import { parsePlexusConf } from "../../../src/config/plugin-conf";
import { resolveDefaultNetworks, type NetworkSource } from "../../../src/npwg/default-network";
import type { ConfFile } from "../../../src/npwg/nad";
import type { Nad, Pod } from "../../../src/npwg/types";

const cfg = (name: string, type = "bridge") => JSON.stringify({ cniVersion: "1.0.0", name, type });
const nadOf = (namespace: string, name: string, type = "bridge"): Nad => ({ metadata: { namespace, name }, spec: { config: cfg(name, type) } });

function source(o: { nads?: Nad[]; confDir?: ConfFile[]; paths?: Record<string, string>; dirs?: Record<string, ConfFile[]>; kube?: boolean } = {}): NetworkSource & { nadReads: string[] } {
  const nadReads: string[] = [];
  return {
    nadReads,
    ...(o.kube === false
      ? {}
      : {
          getNad: async (ns: string, name: string) => {
            nadReads.push(`${ns}/${name}`);
            return (o.nads ?? []).find((n) => n.metadata.namespace === ns && n.metadata.name === name);
          },
        }),
    confDirFiles: async () => o.confDir ?? [],
    readPath: async (p) => o.paths?.[p],
    listDir: async (p) => o.dirs?.[p],
  };
}

const pod = (namespace: string, annotations: Record<string, string> = {}): Pod => ({ metadata: { name: "p", namespace, annotations } });
const conf = (extra: Record<string, unknown>) => parsePlexusConf({ cniVersion: "1.0.0", name: "plexus", type: "plexus", ...extra });

describe("N6 M2 the cluster default network", () => {
  it("M2 a NAD of that name in multusNamespace wins over a config file of that name", async () => {
    const s = source({ nads: [nadOf("kube-system", "cbr0", "ptp")], confDir: [{ path: "/d/10-cbr0.conf", content: cfg("cbr0") }] });
    const r = await resolveDefaultNetworks(pod("app"), conf({ clusterNetwork: "cbr0" }), s);
    expect(r.clusterNetwork.network).toBe("kube-system/cbr0");
    expect(r.clusterNetwork.conf.plugins[0]?.type).toBe("ptp");
  });

  it("M2 then a confDir config whose name matches (.conflist before .conf)", async () => {
    const files = [
      { path: "/d/10-cbr0.conf", content: cfg("cbr0", "ptp") },
      { path: "/d/20-cbr0.conflist", content: JSON.stringify({ cniVersion: "1.0.0", name: "cbr0", plugins: [{ type: "bridge" }, { type: "portmap" }] }) },
    ];
    const r = await resolveDefaultNetworks(pod("app"), conf({ clusterNetwork: "cbr0" }), source({ confDir: files }));
    expect(r.clusterNetwork).toMatchObject({ network: "cbr0", conf: { plugins: [{ type: "bridge" }, { type: "portmap" }] } });
  });

  it("M2 then a directory (its first config file) or a file path", async () => {
    const dir = await resolveDefaultNetworks(pod("app"), conf({ clusterNetwork: "/etc/flannel" }), source({ dirs: { "/etc/flannel": [{ path: "/etc/flannel/20-b.conf", content: cfg("b") }, { path: "/etc/flannel/10-a.conf", content: cfg("a", "ptp") }] } }));
    expect(dir.clusterNetwork.network).toBe("a");
    const file = await resolveDefaultNetworks(pod("app"), conf({ clusterNetwork: "/etc/x/10-calico.conflist" }), source({ paths: { "/etc/x/10-calico.conflist": JSON.stringify({ cniVersion: "0.3.1", name: "k8s-pod-network", plugins: [{ type: "calico" }] }) } }));
    expect(file.clusterNetwork).toMatchObject({ network: "k8s-pod-network", conf: { cniVersion: "0.3.1" } });
  });

  it("M2 nothing found is 7 naming the value", async () => {
    await expect(resolveDefaultNetworks(pod("app"), conf({ clusterNetwork: "nope" }), source())).rejects.toMatchObject({ code: 7, message: expect.stringContaining('"nope"') });
  });

  it("B7 without Kubernetes access a clusterNetwork name is looked up in confDir only, never as a NAD", async () => {
    const s = source({ kube: false, confDir: [{ path: "/d/10-cbr0.conf", content: cfg("cbr0") }] });
    expect((await resolveDefaultNetworks(undefined, conf({ clusterNetwork: "cbr0" }), s)).clusterNetwork.network).toBe("cbr0");
  });

  it("N6 inline delegates: the first is the cluster network, the others are added to every pod", async () => {
    const c = conf({ delegates: [JSON.parse(cfg("d0")), JSON.parse(cfg("d1"))] });
    const r = await resolveDefaultNetworks(pod("app"), c, source());
    expect([r.clusterNetwork.network, ...r.defaultNetworks.map((d) => d.network)]).toEqual(["d0", "d1"]);
  });
});

describe("M3 defaultNetworks", () => {
  const s = () => source({ nads: [nadOf("kube-system", "cbr0"), nadOf("kube-system", "mon")] });
  it("M3 are added after the cluster network, read from multusNamespace", async () => {
    const r = await resolveDefaultNetworks(pod("app"), conf({ clusterNetwork: "cbr0", defaultNetworks: ["mon"] }), s());
    expect(r.defaultNetworks.map((d) => d.network)).toEqual(["kube-system/mon"]);
  });

  it("M3 are skipped for pods whose NAMESPACE is a system namespace (Multus compares the pod name)", async () => {
    const c = conf({ clusterNetwork: "cbr0", defaultNetworks: ["mon"], systemNamespaces: ["kube-system", "infra"] });
    expect((await resolveDefaultNetworks(pod("infra"), c, s())).defaultNetworks).toEqual([]);
    expect((await resolveDefaultNetworks({ metadata: { name: "infra", namespace: "app" } }, c, s())).defaultNetworks).toHaveLength(1);
  });

  it("M3 a missing defaultNetworks NAD is 7 naming it", async () => {
    await expect(resolveDefaultNetworks(pod("app"), conf({ clusterNetwork: "cbr0", defaultNetworks: ["gone"] }), s())).rejects.toMatchObject({ code: 7, message: expect.stringContaining("gone") });
  });
});

describe("M5 the v1.multus-cni.io/default-network override", () => {
  const nads = [nadOf("kube-system", "cbr0"), nadOf("kube-system", "alt"), nadOf("team-b", "alt")];
  it("M5 replaces the cluster network; a bare name means multusNamespace", async () => {
    const r = await resolveDefaultNetworks(pod("app", { "v1.multus-cni.io/default-network": "alt" }), conf({ clusterNetwork: "cbr0" }), source({ nads }));
    expect(r.clusterNetwork.network).toBe("kube-system/alt");
  });

  it("M5 namespace/name is allowed without isolation", async () => {
    const r = await resolveDefaultNetworks(pod("app", { "v1.multus-cni.io/default-network": "team-b/alt" }), conf({ clusterNetwork: "cbr0" }), source({ nads }));
    expect(r.clusterNetwork.network).toBe("team-b/alt");
  });

  it("M5 B24 N7.4 namespace isolation applies to the override too (Multus forgets it), before any NAD is read", async () => {
    const s = source({ nads });
    const c = conf({ clusterNetwork: "cbr0", namespaceIsolation: true });
    await expect(resolveDefaultNetworks(pod("app", { "v1.multus-cni.io/default-network": "team-b/alt" }), c, s)).rejects.toMatchObject({ code: 7, message: expect.stringContaining("refused") });
    expect(s.nadReads).toEqual([]);
  });

  it("B20 an override that is not a DNS-1123 reference is 7 before any request", async () => {
    const s = source({ nads });
    await expect(resolveDefaultNetworks(pod("app", { "v1.multus-cni.io/default-network": "../x" }), conf({ clusterNetwork: "cbr0" }), s)).rejects.toMatchObject({ code: 7 });
    expect(s.nadReads).toEqual([]);
  });
});
