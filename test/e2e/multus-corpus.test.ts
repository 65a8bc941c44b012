/**
 * Multus's own configs (test/fixtures/multus-corpus, verbatim from Multus's repository) through
 * dist/plexus: each as published, and each with its keys in other cases (all lower case, ALL
 * UPPER CASE, and the Go field names Multus's structs carry, e.g. `ReadinessIndicatorFile`), run
 * through ADD and DEL on the real bridge, host-local and portmap plugins in a real namespace, the
 * pod and NADs on the fake API server over HTTPS. Adapted at run time, and only so: `type` becomes
 * `plexus` (the one change a drop-in asks for), node paths point into the test's directory, and
 * flannel (not installed here) becomes the bridge + host-local config flannel itself delegates to.
 * Subnets 10.221.x.0/24.
 */
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, expect, it } from "vitest";
import { startFakeApiServer, writeKubeconfig, type FakeApiServer } from "../support/fake-apiserver";
import { cniError } from "../support/plexus-bin";
import {
  describeE2e,
  links,
  NOTHING_LEFT,
  useE2eScope,
  type E2eScope,
  type Netns,
} from "../support/netns";
import { expectOk, expectSilentOk, hostLocal } from "./networks";

const CORPUS = fileURLToPath(new URL("../fixtures/multus-corpus/", import.meta.url));
const corpus = (file: string) => readFileSync(join(CORPUS, file), "utf8");
const json = (file: string) => JSON.parse(corpus(file)) as Record<string, unknown>;

const t = useE2eScope();
let api: FakeApiServer | undefined;
afterEach(async () => {
  await api?.close();
  api = undefined;
});

type Style = "as published" | "lower case" | "UPPER CASE" | "Go field names";
const STYLES: Style[] = ["as published", "lower case", "UPPER CASE", "Go field names"];
/**
 * Go matches a key against a field's JSON tag ignoring case; these are Multus's field names where
 * they match their tags that way but differ from the tag with a capital first letter.
 */
const GO_FIELDS: Record<string, string> = {
  cniVersion: "CNIVersion",
  cniDir: "CNIDir",
  readinessindicatorfile: "ReadinessIndicatorFile",
};

function recaseKey(key: string, style: Style): string {
  if (style === "lower case") return key.toLowerCase();
  if (style === "UPPER CASE") return key.toUpperCase();
  if (style === "Go field names") return GO_FIELDS[key] ?? key[0]!.toUpperCase() + key.slice(1);
  return key;
}

function recaseObject(obj: Record<string, unknown>, style: Style): Record<string, unknown> {
  return Object.fromEntries(Object.entries(obj).map(([k, v]) => [recaseKey(k, style), v]));
}

/**
 * Every key read as a struct field, in the given style: the meta config's, logOptions', each
 * delegate's and each of its plugins' top-level keys (Go plugins read theirs case-insensitively
 * too). Values, and maps such as `capabilities` whose keys are names, stay as they are.
 */
function recase(conf: Record<string, unknown>, style: Style): Record<string, unknown> {
  const out = recaseObject(conf, style);
  for (const [k, v] of Object.entries(out)) {
    if (k.toLowerCase() === "logoptions")
      out[k] = recaseObject(v as Record<string, unknown>, style);
    if (k.toLowerCase() === "delegates")
      out[k] = (v as Array<Record<string, unknown>>).map((d) => {
        const delegate = recaseObject(d, style);
        for (const [dk, dv] of Object.entries(delegate))
          if (dk.toLowerCase() === "plugins")
            delegate[dk] = (dv as Array<Record<string, unknown>>).map((p) =>
              recaseObject(p, style),
            );
        return delegate;
      });
  }
  return out;
}

interface Node {
  netd: string;
  kubeconfig: string;
  api: FakeApiServer;
  readiness: string;
  log: string;
}

async function node(scope: E2eScope): Promise<Node> {
  api = await startFakeApiServer();
  const netd = join(scope.root, "net.d");
  mkdirSync(netd, { recursive: true });
  return {
    netd,
    kubeconfig: writeKubeconfig(api, { dir: scope.root }),
    api,
    readiness: join(scope.root, "run-flannel-subnet.env"),
    log: join(scope.root, "multus.log"),
  };
}

/**
 * flannel's own delegation: a bridge with host-local (flannel's keys kept: bridge ignores them, as
 * Go does).
 */
function flannelAsBridge(
  scope: E2eScope,
  plugin: Record<string, unknown>,
  subnet: string,
): Record<string, unknown> {
  const { type: _flannel, ...rest } = plugin;
  return {
    ...rest,
    type: "bridge",
    bridge: scope.bridgeName(),
    isGateway: true,
    ipam: hostLocal(scope, subnet, { routes: [{ dst: "0.0.0.0/0" }] }),
  };
}

/** The node paths and plugins of a Multus config, adapted to this test (nothing else changes). */
function adapt(
  conf: Record<string, unknown>,
  scope: E2eScope,
  node: Node,
  subnet: string,
): Record<string, unknown> {
  const out: Record<string, unknown> = { ...conf, type: "plexus" };
  if ("kubeconfig" in out) out.kubeconfig = node.kubeconfig;
  if ("confDir" in out) out.confDir = node.netd;
  if ("cniDir" in out) out.cniDir = scope.cniDir;
  // Multus's default /var/lib/cni/multus is the host's: keep the test's state apart.
  else out.cniDir = scope.cniDir;
  if ("binDir" in out) out.binDir = "/usr/lib/cni";
  if ("logFile" in out) out.logFile = node.log;
  if ("readinessindicatorfile" in out) out.readinessindicatorfile = node.readiness;
  if (Array.isArray(out.delegates))
    out.delegates = (out.delegates as Array<Record<string, unknown>>).map((d) => {
      if (d.type === "flannel") return flannelAsBridge(scope, d, subnet);
      if (!Array.isArray(d.plugins)) return d;
      const plugins = (d.plugins as Array<Record<string, unknown>>).map((p) =>
        p.type === "flannel" ? flannelAsBridge(scope, p, subnet) : p,
      );
      return { ...d, plugins };
    });
  return out;
}

function podEnv(ns: Netns, namespace: string, name: string) {
  return {
    CNI_CONTAINERID: `ctr-${namespace}-${name}`,
    CNI_NETNS: ns.path,
    CNI_IFNAME: "eth0",
    CNI_ARGS: `IgnoreUnknown=1;K8S_POD_NAMESPACE=${namespace};K8S_POD_NAME=${name};K8S_POD_UID=uid-${name}`,
  };
}

/** An ADD without a pod (CNI_ARGS name none), in a fresh namespace. */
function noPodEnv(scope: E2eScope) {
  return { ...podEnv(scope.addNetns(), "none", "none"), CNI_ARGS: "IgnoreUnknown=1" };
}

const ifNames = (ns: Netns) =>
  links(ns.name)
    .map((l) => l.name)
    .filter((l) => l !== "lo")
    .sort();

function statusOf(node: Node, namespace: string, name: string): Array<Record<string, unknown>> {
  const annotations = (node.api.getPod(namespace, name)!.metadata.annotations ?? {}) as Record<
    string,
    string
  >;
  return JSON.parse(annotations["k8s.v1.cni.cncf.io/network-status"]!) as Array<
    Record<string, unknown>
  >;
}

/** One pod's ADD then DEL; returns its interfaces and network-status. */
async function addAndDel(
  scope: E2eScope,
  node: Node,
  conf: unknown,
  pod: { namespace: string; name: string },
  inspect: (ns: Netns) => void = () => {},
) {
  node.api.addPod({ metadata: { ...pod, uid: `uid-${pod.name}` } });
  const ns = scope.addNetns();
  const env = podEnv(ns, pod.namespace, pod.name);
  expectOk(await scope.run("ADD", conf, env));
  inspect(ns);
  const result = { interfaces: ifNames(ns), status: statusOf(node, pod.namespace, pod.name) };
  expectSilentOk(await scope.run("DEL", conf, env));
  return result;
}

/** docs/configuration.md's example with its unquoted key quoted (as published it is not JSON). */
const configurationMdQuoted = () =>
  JSON.parse(
    corpus("configuration-md-example.txt").replace(
      "allowTryDeleteOnErr:",
      '"allowTryDeleteOnErr":',
    ),
  ) as Record<string, unknown>;

/**
 * configuration.md's example on this node: its clusterNetwork file (flannel's 99-flannel.conf, as
 * a bridge) and its two defaultNetworks as NADs in multusNamespace, subnets
 * 10.221.<base*10+k>.0/24.
 * As published the defaultNetworks' names have capitals, which no Kubernetes object name may
 * (see the test of that); here the NADs and the config name them in lower case.
 */
function configurationMdNode(scope: E2eScope, node: Node, base: number): Record<string, unknown> {
  const clusterFile = join(node.netd, "99-flannel.conf");
  const subnet = (k: number) => `10.221.${base * 10 + k}.0/24`;
  writeFileSync(
    clusterFile,
    JSON.stringify(
      flannelAsBridge(scope, { cniVersion: "0.3.1", name: "cbr0", type: "flannel" }, subnet(0)),
    ),
  );
  const defaultNetworks = ["sidecarcrd", "examplenetwork"];
  for (const [i, name] of defaultNetworks.entries()) {
    const config = {
      cniVersion: "0.3.1",
      name,
      type: "bridge",
      bridge: scope.bridgeName(),
      ipam: hostLocal(scope, subnet(i + 1)),
    };
    node.api.addNad({
      metadata: { namespace: "kube-system", name },
      spec: { config: JSON.stringify(config) },
    });
  }
  return {
    ...adapt(configurationMdQuoted(), scope, node, subnet(0)),
    clusterNetwork: clusterFile,
    defaultNetworks,
  };
}

describeE2e(
  "e2e Multus's own configs (corpus), as published and with their keys in other cases",
  () => {
    it("M1 configuration.md's example as published is not JSON (an unquoted key): decode error 6, as Multus's json.Unmarshal fails", async () => {
      const { scope } = t;
      const e = cniError(
        await scope.run("ADD", corpus("configuration-md-example.txt"), noPodEnv(scope)),
      );
      expect(e.code).toBe(6);
      expect(e.msg).toMatch(/stdin config is not valid JSON/);
    });

    it("M12 configuration.md's auxiliary chain with the docs' own mytuning.conf (a sysctl on IFNAME): the chain runs on net3, which does not exist, so tuning fails; ADD fails and rolls back, as in Multus", async () => {
      const { scope } = t;
      const n = await node(scope);
      const conf = configurationMdNode(scope, n, 1);
      // configuration.md: /etc/cni/net.d/cni-chain-config/mytuning.conf, verbatim.
      mkdirSync(join(n.netd, "cni-chain-config"));
      writeFileSync(
        join(n.netd, "cni-chain-config", "mytuning.conf"),
        JSON.stringify({
          name: "mytuning",
          type: "tuning",
          sysctl: { "net.ipv4.conf.IFNAME.arp_filter": "1" },
        }),
      );
      n.api.addPod({ metadata: { namespace: "app", name: "web", uid: "uid-web" } });
      const ns = scope.addNetns();
      const e = cniError(await scope.run("ADD", conf, podEnv(ns, "app", "web")));
      expect(e.msg).toMatch(
        /cni-chain-config.*net3.*\/proc\/sys\/net\/ipv4\/conf\/net3\/arp_filter/,
      );
      expect(ifNames(ns)).toEqual([]);
      expectSilentOk(await scope.run("DEL", conf, podEnv(ns, "app", "web")));
      expect(scope.attachmentLeftovers()).toEqual(NOTHING_LEFT);
    });

    it.each(STYLES)(
      "M1 M2 M3 M12 configuration.md's example (%s): clusterNetwork file on eth0, both defaultNetworks on net1 and net2, the auxiliary chain for every pod; a systemNamespaces pod gets eth0 only; unknown key logged",
      async (style) => {
        const { scope } = t;
        const n = await node(scope);
        // The chain of Multus's own e2e test (subdirectory-chaining-passthru.yml.j2:
        // sysctltwiddle.conf).
        mkdirSync(join(n.netd, "cni-chain-config"));
        writeFileSync(
          join(n.netd, "cni-chain-config", "sysctltwiddle.conf"),
          JSON.stringify({
            cniVersion: "0.3.1",
            name: "sysctltwiddle",
            type: "tuning",
            sysctl: { "net.ipv4.conf.eth0.arp_filter": "1" },
          }),
        );
        const conf = recase(configurationMdNode(scope, n, 2), style);
        const arpFilter = (ns: Netns) =>
          expect(
            execFileSync("ip", [
              "netns",
              "exec",
              ns.name,
              "cat",
              "/proc/sys/net/ipv4/conf/eth0/arp_filter",
            ])
              .toString()
              .trim(),
          ).toBe("1");

        const app = await addAndDel(scope, n, conf, { namespace: "app", name: "web" }, arpFilter);
        expect(app.interfaces).toEqual(["eth0", "net1", "net2"]);
        expect(app.status.map((s) => [s.name, s.interface, s.ips, s.default])).toEqual([
          ["cbr0", "eth0", ["10.221.20.2"], true],
          ["kube-system/sidecarcrd", "net1", ["10.221.21.2"], false],
          ["kube-system/examplenetwork", "net2", ["10.221.22.2"], false],
        ]);
        const admin = await addAndDel(
          scope,
          n,
          conf,
          { namespace: "admin", name: "tool" },
          arpFilter,
        );
        expect(admin.interfaces).toEqual(["eth0"]);
        expect(admin.status.map((s) => s.name)).toEqual(["cbr0"]);
        expect(readFileSync(n.log, "utf8").toLowerCase()).toContain(
          "`allowtrydeleteonerr` is not a plexus key",
        );
        expect(scope.attachmentLeftovers()).toEqual(NOTHING_LEFT);
      },
    );

    it("M3 configuration.md's defaultNetworks as published (sidecarCRD: capitals, so no NAD can have the name) fail the ADD (7) naming the entry, as Multus finds no such NAD", async () => {
      const { scope } = t;
      const n = await node(scope);
      const clusterFile = join(n.netd, "99-flannel.conf");
      writeFileSync(
        clusterFile,
        JSON.stringify(
          flannelAsBridge(
            scope,
            { cniVersion: "0.3.1", name: "cbr0", type: "flannel" },
            "10.221.7.0/24",
          ),
        ),
      );
      const { auxiliaryCNIChainName: _aux, ...published } = configurationMdQuoted();
      const conf = { ...adapt(published, scope, n, "10.221.7.0/24"), clusterNetwork: clusterFile };
      n.api.addPod({ metadata: { namespace: "app", name: "web", uid: "uid-web" } });
      const ns = scope.addNetns();
      const e = cniError(await scope.run("ADD", conf, podEnv(ns, "app", "web")));
      expect([e.code, e.msg]).toEqual([
        7,
        expect.stringContaining('defaultNetworks entry "sidecarCRD" names no network'),
      ]);
      expect(ifNames(ns)).toEqual([]);
      expectSilentOk(await scope.run("DEL", conf, podEnv(ns, "app", "web")));
      expect(scope.attachmentLeftovers()).toEqual(NOTHING_LEFT);
    });

    it.each([
      "how-to-use-00-multus.conf",
      "multus-daemonset-70-multus.conf",
      "multus-daemonset-crio-70-multus.conf",
    ])(
      "M1 %s as published has no cniVersion: refused with 1 naming the versions (Go's skel would take it as 0.1.0)",
      async (file) => {
        const { scope } = t;
        const n = await node(scope);
        const e = cniError(
          await scope.run("ADD", adapt(json(file), scope, n, "10.221.9.0/24"), noPodEnv(scope)),
        );
        expect(e.code).toBe(1);
        expect(e.msg).toMatch(
          /cniVersion missing is not supported; supported versions: 0\.1\.0, .*1\.1\.0/,
        );
      },
    );

    it.each(STYLES)(
      "M1 N6.1.2 how-to-use's 00-multus.conf (%s, cniVersion 0.3.1): no ADD until the readiness file exists, then the delegate on eth0",
      async (style) => {
        const { scope } = t;
        const n = await node(scope);
        const adapted = {
          ...adapt(json("how-to-use-00-multus.conf"), scope, n, "10.221.5.0/24"),
          cniVersion: "0.3.1",
        };
        // Plexus's own key, to keep the wait short here (Multus waits up to 45 s as well).
        const conf = recase({ ...adapted, readinessTimeoutSeconds: 1 }, style);
        n.api.addPod({ metadata: { namespace: "app", name: "early", uid: "uid-early" } });
        const ns = scope.addNetns();
        const e = cniError(await scope.run("ADD", conf, podEnv(ns, "app", "early")));
        expect([e.code, e.msg]).toEqual([11, expect.stringContaining(n.readiness)]);
        expect(ifNames(ns)).toEqual([]);
        expectSilentOk(await scope.run("DEL", conf, podEnv(ns, "app", "early")));

        writeFileSync(n.readiness, "FLANNEL_NETWORK=10.221.0.0/16\n");
        const web = await addAndDel(scope, n, conf, { namespace: "app", name: "web" });
        expect(web.interfaces).toEqual(["eth0"]);
        expect(web.status.map((s) => [s.name, s.interface, s.ips, s.default])).toEqual([
          ["flannel.1", "eth0", ["10.221.5.2"], true],
        ]);
        expect(scope.attachmentLeftovers()).toEqual(NOTHING_LEFT);
      },
    );

    it.each(
      STYLES.flatMap((style) =>
        ["multus-daemonset-70-multus.conf", "multus-daemonset-crio-70-multus.conf"].map(
          (file) => [file, style] as const,
        ),
      ),
    )(
      "M1 K4 %s (%s, cniVersion 0.3.1): the delegate conflist (flannel, portmap) on eth0",
      async (file, style) => {
        const { scope } = t;
        const n = await node(scope);
        const conf = recase(
          { ...adapt(json(file), scope, n, "10.221.6.0/24"), cniVersion: "0.3.1" },
          style,
        );
        const web = await addAndDel(scope, n, conf, { namespace: "app", name: "web" });
        expect(web.interfaces).toEqual(["eth0"]);
        expect(web.status.map((s) => [s.name, s.interface, s.ips, s.default])).toEqual([
          ["default-cni-network", "eth0", ["10.221.6.2"], true],
        ]);
        expect(scope.attachmentLeftovers()).toEqual(NOTHING_LEFT);
      },
    );

    it("M1 thick-plugin.md's daemon config is not a CNI config: refused (7), as Multus's thin plugin refuses it", async () => {
      const { scope } = t;
      const e = cniError(
        await scope.run(
          "ADD",
          { ...json("thick-plugin-daemon-config.txt"), type: "plexus" },
          noPodEnv(scope),
        ),
      );
      expect(e.code).toBe(7);
      expect(existsSync(join(scope.cniDir, "records"))).toBe(false);
    });
  },
);
