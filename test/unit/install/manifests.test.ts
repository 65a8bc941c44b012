/**
 * deploy/ as `kubectl kustomize` renders it (test/support/deploy-render.ts), validated offline
 * against the Kubernetes OpenAPI schemas (kubernetes-models' JSON-schema validators): the default
 * kustomization (service account, RBAC, DaemonSet; never the CRD, so `kubectl delete -k deploy/`
 * keeps every NAD), the CRD's own kustomization against N3.1, the RBAC against exactly the calls
 * Plexus makes (the methods of src/cluster/kube-api.ts KubeApi, and the list+watch of each informer
 * src/watch/watch-cache.ts WatchCaches builds, read from the source), the DaemonSet against what
 * the installer and the daemon need (no config removal on SIGTERM, metrics on a non-loopback
 * address), the PodMonitor example against the DaemonSet, and the uninstall patch applied to the
 * DaemonSet.
 */
import { readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { loadAll } from "js-yaml";
import * as admission from "kubernetes-models/admissionregistration.k8s.io/v1";
import * as apiextensions from "kubernetes-models/apiextensions.k8s.io/v1";
import * as apps from "kubernetes-models/apps/v1";
import * as rbac from "kubernetes-models/rbac.authorization.k8s.io/v1";
import * as core from "kubernetes-models/v1";
import ts from "typescript";
import { describe, expect, it } from "vitest";
import {
  DEFAULT_DAEMON_SOCKET,
  DEFAULT_POD_RESOURCES_SOCKET,
} from "../../../src/config/plugin-conf";
import { commandLine } from "../../../src/cli/commands";
import { SERVICE_ACCOUNT_DIR } from "../../../src/config/defaults";
import {
  DEPLOY,
  type Manifest,
  patchLocally,
  renderKustomization,
} from "../../support/deploy-render";
import { LAYOUTS, renderLayout } from "../../support/deploy-render";
import { REPO_ROOT } from "../../support/plexus-bin";

type Doc = Manifest;
const rendered = renderKustomization(".");
const crdRendered = renderKustomization("crd");
const all = [
  ...rendered.map((d) => ({ file: "deploy/", doc: d })),
  ...crdRendered.map((d) => ({ file: "deploy/crd/", doc: d })),
];
const find = (kind: string, name?: string) =>
  all.find((x) => x.doc.kind === kind && (name === undefined || x.doc.metadata.name === name))!
    .doc as Doc & Record<string, any>;

/** Every YAML file under deploy/, relative to it. */
function deployFiles(dir = DEPLOY): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return deployFiles(path);
    return name.endsWith(".yaml") ? [relative(DEPLOY, path)] : [];
  });
}

/** A flag's value in a container's command (`--name=value`), or undefined. */
function flagValue(command: string[], flag: string): string | undefined {
  const arg = command.find((a) => a.startsWith(`${flag}=`));
  return arg === undefined ? undefined : arg.slice(flag.length + 1);
}

const MODELS: Record<string, Record<string, unknown>> = {
  v1: core,
  "apps/v1": apps,
  "rbac.authorization.k8s.io/v1": rbac,
  "apiextensions.k8s.io/v1": apiextensions,
  "admissionregistration.k8s.io/v1": admission,
};

/** The kubernetes-models class for a manifest's apiVersion and kind. */
async function modelFor(doc: Doc): Promise<new (d: unknown) => { validate(): void }> {
  const model = MODELS[doc.apiVersion]?.[doc.kind];
  if (typeof model !== "function")
    throw new Error(`no kubernetes-models model for ${doc.apiVersion} ${doc.kind}`);
  return model as new (
    d: unknown,
  ) => { validate(): void };
}

/** The KubeApi interface's methods, read from src/cluster/kube-api.ts. */
function kubeApiMethods(): string[] {
  const src = ts.createSourceFile(
    "kube-api.ts",
    readFileSync(join(REPO_ROOT, "src/cluster/kube-api.ts"), "utf8"),
    ts.ScriptTarget.Latest,
  );
  const methods: string[] = [];
  src.forEachChild((n) => {
    if (ts.isInterfaceDeclaration(n) && n.name.text === "KubeApi")
      for (const m of n.members) if (ts.isMethodSignature(m)) methods.push(m.name.getText(src));
  });
  return methods;
}

function expectInformers(informers: Array<{ kind: string; list: string; watch: string }>): void {
  // No ResourceClaims informer: the daemon reads its pods' claims by name (get).
  expect(informers.map((i) => i.kind).sort()).toEqual(["nads", "pods", "resourceslices"]);
  expect(informers).toContainEqual({
    kind: "resourceslices",
    list: "resource.k8s.io/resourceslices",
    watch: "resource.k8s.io/resourceslices",
  });
  expect(informers).toContainEqual({ kind: "pods", list: "/pods", watch: "/pods" });
  expect(informers).toContainEqual({
    kind: "nads",
    list: "k8s.cni.cncf.io/network-attachment-definitions",
    watch: "k8s.cni.cncf.io/network-attachment-definitions",
  });
}

/** The ClusterRole `role` is bound to the ServiceAccount the DaemonSet runs as. */
function expectBoundToDaemonSet(role: any): void {
  const binding = find("ClusterRoleBinding", "plexus");
  const sa = find("ServiceAccount");
  const ds = find("DaemonSet");
  expect(binding.roleRef).toEqual({
    apiGroup: "rbac.authorization.k8s.io",
    kind: "ClusterRole",
    name: role.metadata.name,
  });
  expect(binding.subjects).toEqual([
    { kind: "ServiceAccount", name: sa.metadata.name, namespace: sa.metadata.namespace },
  ]);
  expect(ds.spec.template.spec.serviceAccountName).toBe(sa.metadata.name);
  expect(ds.metadata.namespace).toBe(sa.metadata.namespace);
}

/** The daemon container of the DaemonSet's pod, with its --name=value flags. */
type DaemonContainer = { pod: any; d: any; flags: Record<string, string> };

/** Every flag is one the `daemon` subcommand declares (not just some subcommand). */
function expectDaemonFlagsDeclared(flags: Record<string, string>): void {
  // The flags `plexus daemon` declares, as commander knows them.
  const daemon = commandLine(() => {}).commands.find((c) => c.name() === "daemon");
  const declared = new Set(daemon?.options.map((o) => o.long));
  expect(declared.size).toBeGreaterThan(0);
  for (const flag of Object.keys(flags)) expect(declared, `daemon flag ${flag}`).toContain(flag);
}

function expectHostSockets({ pod, d, flags }: DaemonContainer): void {
  // The socket: the plugin's default daemonSocket, in a mounted hostPath dir with the same path
  // on the node (the CNI binary runs on the host).
  expect(flags["--socket"]).toBe(DEFAULT_DAEMON_SOCKET);
  const socketDir = dirname(flags["--socket"]!);
  const runMount = d.volumeMounts.find((m: any) => m.mountPath === socketDir);
  expect(runMount, `a mount at ${socketDir}`).toBeDefined();
  expect(runMount.readOnly).not.toBe(true);
  const runVolume = pod.volumes.find((v: any) => v.name === runMount.name);
  expect(runVolume.hostPath).toEqual({ path: socketDir, type: "DirectoryOrCreate" });

  // M10: kubelet's pod-resources socket (the daemon's default --pod-resources-socket) is mounted
  // at the same path, writable (connecting to a unix socket needs write access).
  const prDir = dirname(DEFAULT_POD_RESOURCES_SOCKET);
  const prMount = d.volumeMounts.find((m: any) => m.mountPath === prDir);
  expect(prMount, `a mount at ${prDir}`).toBeDefined();
  expect(prMount.readOnly).not.toBe(true);
  expect(pod.volumes.find((v: any) => v.name === prMount.name).hostPath.path).toBe(prDir);
}

/**
 * Credentials: in-cluster (no --kubeconfig), the projected token and CA where both in-cluster
 * loaders (kubeconfig.ts for the REST client, client-node's loadFromCluster for the watches)
 * read them.
 */
function expectInClusterCredentials({ pod, d, flags }: DaemonContainer): void {
  expect(flags["--kubeconfig"]).toBeUndefined();
  expect(SERVICE_ACCOUNT_DIR).toBe("/var/run/secrets/kubernetes.io/serviceaccount");
  const saMount = d.volumeMounts.find((m: any) => m.mountPath === SERVICE_ACCOUNT_DIR);
  expect(saMount?.readOnly).toBe(true);
  const saSources = pod.volumes.find((v: any) => v.name === saMount.name).projected.sources;
  const paths = saSources.flatMap((s: any) =>
    s.serviceAccountToken
      ? [s.serviceAccountToken.path]
      : (s.configMap?.items ?? s.downwardAPI?.items ?? []).map((i: any) => i.path),
  );
  expect(paths).toEqual(expect.arrayContaining(["token", "ca.crt"]));
  expect(pod.automountServiceAccountToken).toBe(false);
}

/**
 * Metrics for an in-cluster Prometheus: --health-address binds every address of the node
 * (hostNetwork), not loopback, on the port declared as `metrics`; the kubelet's probes reach the
 * same listener on the node's loopback, which a wildcard bind includes.
 */
function expectMetricsAddress({ pod, d, flags }: DaemonContainer): void {
  const m = /^\[?([^\]]+)\]?:(\d+)$/.exec(flags["--health-address"] ?? "");
  expect(m, "--health-address HOST:PORT").not.toBeNull();
  const [host, port] = [m![1], Number(m![2])];
  expect(["0.0.0.0", "::"]).toContain(host);
  expect(pod.hostNetwork).toBe(true);
  expect(d.ports).toEqual([{ name: "metrics", containerPort: port, protocol: "TCP" }]);
  expect(d.livenessProbe.httpGet).toEqual({ host: "127.0.0.1", port, path: "/healthz" });
  expect(d.readinessProbe.httpGet).toEqual({ host: "127.0.0.1", port, path: "/readyz" });
}

describe("deploy/ manifests", () => {
  it("every manifest validates against the Kubernetes schemas (kubernetes-models); deploy/ holds no CRD, deploy/crd/ only the CRD", async () => {
    expect(rendered.map((d) => d.kind).sort()).toEqual([
      "ClusterRole",
      "ClusterRole",
      "ClusterRoleBinding",
      "ClusterRoleBinding",
      "DaemonSet",
      "ServiceAccount",
      ...Array(3).fill("ValidatingAdmissionPolicy"),
      ...Array(3).fill("ValidatingAdmissionPolicyBinding"),
    ]);
    expect(crdRendered.map((d) => `${d.kind} ${d.metadata.name}`)).toEqual([
      "CustomResourceDefinition network-attachment-definitions.k8s.cni.cncf.io",
    ]);
    for (const { file, doc } of all) {
      const Model = await modelFor(doc);
      expect(() => new Model(doc).validate(), `${file} ${doc.kind}`).not.toThrow();
    }
  });

  it("the validator is live: a DaemonSet with a wrongly typed field or a missing required one is rejected", async () => {
    const ds = structuredClone(find("DaemonSet"));
    const Model = await modelFor(ds);
    ds.spec.template.spec.containers[0].resources.limits.memory = { much: true };
    expect(() => new Model(ds).validate()).toThrow(/memory/);
    const noSelector = structuredClone(find("DaemonSet"));
    delete noSelector.spec.selector;
    expect(() => new Model(noSelector).validate()).toThrow(/selector/);
  });

  it("every file under deploy/ is used: listed by a kustomization, or the uninstall patch; none lists a missing file", () => {
    const used = new Set<string>();
    for (const k of deployFiles().filter((f) => f.endsWith("kustomization.yaml"))) {
      used.add(k);
      const doc = loadAll(readFileSync(join(DEPLOY, k), "utf8"))[0] as {
        kind: string;
        resources?: string[];
        components?: string[];
        patches?: { path?: string }[];
      };
      expect(doc.kind, k).toBe(k.startsWith("components/") ? "Component" : "Kustomization");
      // A patch is a file (path) or written inline (patch); only files are listed.
      const patchFiles = (doc.patches ?? []).flatMap((p) => (p.path ? [p.path] : []));
      const listed = [...(doc.resources ?? []), ...(doc.components ?? []), ...patchFiles];
      for (const r of listed) {
        const path = join(dirname(k), r);
        expect(() => statSync(join(DEPLOY, path)), `${k} lists ${r}`).not.toThrow();
        used.add(path);
      }
    }
    used.add("uninstall/daemonset-patch.yaml");
    // The layouts' components, listed by an operator's kustomization (docs/install.md).
    const components = LAYOUTS.flatMap((l) => (l.component ? [l.component] : []));
    for (const c of components) used.add(join("components", c, "kustomization.yaml"));
    expect(deployFiles().filter((f) => !used.has(f))).toEqual([]);
    // The CRD is reachable only through deploy/crd/ (`kubectl delete -k deploy/` keeps every NAD).
    const root = loadAll(readFileSync(join(DEPLOY, "kustomization.yaml"), "utf8"))[0] as {
      resources: string[];
    };
    expect(root.resources.some((r) => r.startsWith("crd"))).toBe(false);
  });

  it("N3.1 the CRD: k8s.cni.cncf.io/v1, namespaced, NPWG names, spec.config a string", () => {
    const crd = find("CustomResourceDefinition");
    expect(crd.apiVersion).toBe("apiextensions.k8s.io/v1");
    expect(crd.metadata.name).toBe("network-attachment-definitions.k8s.cni.cncf.io");
    expect(crd.spec.group).toBe("k8s.cni.cncf.io");
    expect(crd.spec.scope).toBe("Namespaced");
    expect(crd.spec.names).toEqual({
      plural: "network-attachment-definitions",
      singular: "network-attachment-definition",
      kind: "NetworkAttachmentDefinition",
      shortNames: ["nad", "net-attach-def"],
    });
    expect(crd.spec.versions.map((v: { name: string }) => v.name)).toEqual(["v1"]);
    const v1 = crd.spec.versions[0];
    expect(v1.served && v1.storage).toBe(true);
    const schema = v1.schema.openAPIV3Schema;
    // Structural: every node has a type; spec.config is a string and optional (N3.2).
    const untyped: string[] = [];
    const walk = (s: Record<string, any>, path: string) => {
      if (typeof s.type !== "string") untyped.push(path);
      for (const [k, sub] of Object.entries(s.properties ?? {}))
        walk(sub as Record<string, any>, `${path}.${k}`);
    };
    walk(schema, "$");
    expect(untyped).toEqual([]);
    expect(schema.properties.spec.properties.config.type).toBe("string");
    expect(schema.properties.spec.required ?? []).not.toContain("config");
  });

  it("RBAC grants exactly the calls the plugin makes (the KubeApi methods), nothing else, bound to the DaemonSet's account", () => {
    // The KubeApi interface's methods, read from the source: a new method fails here until mapped.
    const methods = kubeApiMethods();
    const calls: Record<string, string[]> = {
      getPod: ["/pods get"],
      getNad: ["k8s.cni.cncf.io/network-attachment-definitions get"],
      setNetworkStatus: ["/pods/status patch"],
      recordEvent: ["/events create"],
      getResourceClaim: ["resource.k8s.io/resourceclaims get"],
      listResourceSlices: ["resource.k8s.io/resourceslices list"],
      applyClaimDeviceStatus: ["resource.k8s.io/resourceclaims/status patch"],
      close: [],
    };
    expect(methods.sort()).toEqual(Object.keys(calls).sort());
    // The daemon's informers, read from the source: a new or changed one fails here until granted.
    const informers = daemonInformers();
    expectInformers(informers);
    const daemonCalls = informers.flatMap((i) => [`${i.list} list`, `${i.watch} watch`]);
    const role = find("ClusterRole", "plexus");
    const granted = (
      role.rules as Array<{
        apiGroups: string[];
        resources: string[];
        verbs: string[];
        resourceNames?: string[];
      }>
    ).flatMap((r) =>
      r.apiGroups.flatMap((g) =>
        r.resources.flatMap((res) => r.verbs.map((v) => `${g}/${res} ${v}`)),
      ),
    );
    // Exactly: a grant missing, extra or repeated fails. Plus the node-scoped-writes policies'
    // mark, a made-up resource no server serves (it grants nothing).
    const mark = "plexus.invalid/node-scoped-writes held-to-node";
    expect(granted.sort()).toEqual(
      [...new Set([...Object.values(calls).flat(), ...daemonCalls, mark])].sort(),
    );
    expect(
      (role.rules as Array<{ resourceNames?: string[] }>).every(
        (r) => r.resourceNames === undefined,
      ),
    ).toBe(true);
    expect(granted.join(" ")).not.toContain("*");
    expectBoundToDaemonSet(role);
  });

  // The flags of install and daemon: commands.ts, and the node path flags install shares with
  // uninstall. Each flag of a container's command must be one of them.
  const expectKnownFlags = (command: string[]) => {
    const known = ["src/cli/commands.ts", "src/cli/node-path-options.ts"]
      .map((f) => readFileSync(join(REPO_ROOT, f), "utf8"))
      .join("\n");
    for (const arg of command.slice(2)) {
      const flag = arg.split("=")[0];
      expect(known, `flag ${arg}`).toContain(`"${flag}`);
    }
  };

  it("M11 the DaemonSet: every node, host paths, a projected expiring token, `plexus install` with flags it knows", () => {
    const ds = find("DaemonSet");
    const pod = ds.spec.template.spec;
    expect(pod.hostNetwork).toBe(true);
    expect(pod.priorityClassName).toBe("system-node-critical");
    expect(pod.tolerations).toContainEqual({ operator: "Exists" });
    expect(ds.spec.updateStrategy.type).toBe("RollingUpdate");
    const hostPaths = Object.fromEntries(
      pod.volumes.filter((v: any) => v.hostPath).map((v: any) => [v.name, v.hostPath.path]),
    );
    expect(Object.values(hostPaths).sort()).toEqual([
      "/etc/cni/net.d",
      "/opt/cni/bin",
      "/run/plexus",
      "/var/lib/cni",
      "/var/lib/cni/plexus",
      "/var/lib/kubelet/pod-resources",
    ]);
    const projected = pod.volumes.find((v: any) => v.projected).projected.sources;
    const token = projected.find((s: any) => s.serviceAccountToken).serviceAccountToken;
    expect(token.expirationSeconds).toBeGreaterThanOrEqual(600);
    expect(pod.containers.map((x: any) => x.name)).toEqual(["install", "daemon"]);
    const c = pod.containers[0];
    expect(c.resources.requests && c.resources.limits).toBeTruthy();
    const mounts = Object.fromEntries(c.volumeMounts.map((m: any) => [m.name, m.mountPath]));
    // The installer writes the CNI host paths under /host; the daemon's socket dir and kubelet's
    // pod-resources dir (M10) are the daemon's, not its.
    const daemonOnly = new Set(["/run/plexus", "/var/lib/kubelet/pod-resources", "/var/lib/cni"]);
    for (const [name, path] of Object.entries(hostPaths))
      if (!daemonOnly.has(path)) expect(mounts[name], name).toBe(`/host${path}`);
    // The daemon's housekeeping runs delegates: the config, the binaries and their state at the
    // node's own paths (so the paths in the config hold), the first two read only; and its flags.
    const daemon = pod.containers[1];
    const daemonMounts = Object.fromEntries(daemon.volumeMounts.map((m: any) => [m.name, m]));
    for (const path of ["/etc/cni/net.d", "/opt/cni/bin", "/var/lib/cni"]) {
      const name = Object.keys(hostPaths).find((n) => hostPaths[n] === path)!;
      expect(daemonMounts[name]?.mountPath, path).toBe(path);
      expect(daemonMounts[name]?.readOnly === true, path).toBe(path !== "/var/lib/cni");
    }
    expectKnownFlags(daemon.command);
    const tokenMount = c.volumeMounts.find(
      (m: any) => m.name === pod.volumes.find((v: any) => v.projected).name,
    ).mountPath;
    expect(c.command.slice(0, 2)).toEqual(["/usr/local/bin/plexus", "install"]);
    expect(c.command).toContain(`--token-file=${tokenMount}/token`);
    expectKnownFlags(c.command);
  });

  describe.each(LAYOUTS)("M11 the $name layout", (layout) => {
    const docs = renderLayout(layout);
    const ds = docs.find((d) => d.kind === "DaemonSet") as Manifest & Record<string, any>;
    const pod = ds.spec.template.spec;
    const install = pod.containers.find((c: any) => c.name === "install");
    const flag = (name: string) => flagValue(install.command, name);

    it("validates; the installer's path flags name the layout's dirs, from the node", async () => {
      for (const d of docs) {
        const Model = await modelFor(d);
        expect(() => new Model(d).validate(), `${d.kind} ${d.metadata.name}`).not.toThrow();
      }
      expect(flag("--cni-conf-dir")).toBe(`/host${layout.confDir}`);
      expect(flag("--cni-bin-dir")).toBe(`/host${layout.binDir}`);
      expect(flag("--kubeconfig-file-host")).toBe(`${layout.confDir}/plexus.d/plexus.kubeconfig`);
      // Each flag once: the components replace the base's values, they do not append.
      const names = install.command.slice(2).map((a: string) => a.split("=")[0]);
      expect(new Set(names).size).toBe(names.length);
      // Every mount of the installer under /host is the node's same path.
      const volume = (name: string) => pod.volumes.find((v: any) => v.name === name);
      const hostPathOf = (name: string) => volume(name).hostPath?.path;
      for (const m of install.volumeMounts.filter((x: any) => x.mountPath.startsWith("/host/")))
        expect(`/host${hostPathOf(m.name)}`, m.name).toBe(m.mountPath);
      for (const dir of [layout.confDir, layout.binDir])
        expect(
          install.volumeMounts.map((m: any) => m.mountPath),
          dir,
        ).toContain(`/host${dir}`);
    });

    it("the platform's security fields: RuntimeDefault seccomp, spc_t, no privilege", () => {
      expect(pod.securityContext.seccompProfile).toEqual({ type: "RuntimeDefault" });
      expect(pod.securityContext.seLinuxOptions).toEqual({ type: "spc_t" });
      for (const c of pod.containers) {
        expect(c.securityContext.privileged ?? false, c.name).toBe(false);
        expect(c.securityContext.allowPrivilegeEscalation, c.name).toBe(false);
        expect(c.securityContext.capabilities.drop, c.name).toEqual(["ALL"]);
      }
    });
  });

  it("upgrade: the installer is not told to remove the config on SIGTERM, so a rolling update leaves no window in which new pods get the primary network only", () => {
    const pod = find("DaemonSet").spec.template.spec;
    for (const c of pod.containers as Array<{
      name: string;
      command?: string[];
      args?: string[];
    }>) {
      const argv = [...(c.command ?? []), ...(c.args ?? [])];
      expect(
        argv.filter((a) => a.split("=")[0] === "--cleanup-config-on-exit"),
        c.name,
      ).toEqual([]);
    }
    // The flag this guards against still exists (the check would be empty otherwise).
    expect(readFileSync(join(REPO_ROOT, "src/cli/commands.ts"), "utf8")).toContain(
      '"--cleanup-config-on-exit"',
    );
  });

  it("the daemon container: `plexus daemon` with flags it knows, the socket on the host where the plugin looks, in-cluster credentials, metrics on a non-loopback --health-address (the `metrics` port) that the probes reach on 127.0.0.1", () => {
    const ds = find("DaemonSet");
    const pod = ds.spec.template.spec;
    const d = pod.containers.find((x: any) => x.name === "daemon");
    expect(d, "daemon container").toBeDefined();
    expect(d.image).toBe(pod.containers[0].image);
    expect(d.command.slice(0, 2)).toEqual(["/usr/local/bin/plexus", "daemon"]);
    const flags = Object.fromEntries(
      d.command.slice(2).map((a: string) => {
        const i = a.indexOf("=");
        expect(i, `flag ${a} as --name=value`).toBeGreaterThan(0);
        return [a.slice(0, i), a.slice(i + 1)];
      }),
    );
    expectDaemonFlagsDeclared(flags);
    // The node name from the downward API.
    expect(flags["--node-name"]).toBe("$(NODE_NAME)");
    expect(d.env).toContainEqual({
      name: "NODE_NAME",
      valueFrom: { fieldRef: { fieldPath: "spec.nodeName" } },
    });
    const container = { pod, d, flags };
    expectHostSockets(container);
    expectInClusterCredentials(container);
    expectMetricsAddress(container);

    expect(d.resources).toEqual({
      requests: { cpu: "20m", memory: "64Mi" },
      limits: { memory: "256Mi" },
    });
    expect(d.securityContext).toEqual({
      runAsUser: 0,
      allowPrivilegeEscalation: false,
      readOnlyRootFilesystem: true,
      capabilities: { drop: ["ALL"] },
    });
  });

  it("deploy/monitoring/: a PodMonitor (not in deploy/) that scrapes the daemon's metrics port on the DaemonSet's pods", () => {
    expect(rendered.map((d) => d.kind)).not.toContain("PodMonitor");
    const monitors = renderKustomization("monitoring");
    // Beside it the alert rules and the dashboard (test/unit/install/fleet-manifests.test.ts).
    const podMonitors = monitors.filter((d) => d.kind === "PodMonitor");
    expect(podMonitors.map((d) => `${d.apiVersion} ${d.kind}`)).toEqual([
      "monitoring.coreos.com/v1 PodMonitor",
    ]);
    const pm = podMonitors[0]!;
    const ds = find("DaemonSet");
    const labels = ds.spec.template.metadata.labels as Record<string, string>;
    for (const [k, v] of Object.entries(pm.spec.selector.matchLabels as Record<string, string>))
      expect(labels[k], `selector ${k}`).toBe(v);
    expect(pm.spec.selector.matchExpressions).toBeUndefined();
    expect(pm.spec.namespaceSelector).toEqual({ matchNames: [ds.metadata.namespace] });
    const daemon = ds.spec.template.spec.containers.find((c: any) => c.name === "daemon");
    const endpoints = pm.spec.podMetricsEndpoints as Array<Record<string, unknown>>;
    expect(endpoints).toHaveLength(1);
    const ep = endpoints[0]!;
    expect(daemon.ports.map((p: any) => p.name)).toContain(ep.port);
    expect(ep).toMatchObject({ path: "/metrics", scheme: "http" });
  });

  it("deploy/uninstall/: the patch turns the rendered DaemonSet into `plexus uninstall --wait` on every node, with the installer's paths, the same image, no daemon", () => {
    const ds = find("DaemonSet");
    const patched = patchLocally(ds, "uninstall/daemonset-patch.yaml");
    const pod = patched.spec.template.spec;
    expect(pod.containers.map((c: any) => c.name)).toEqual(["install"]);
    const [c] = pod.containers;
    const install = ds.spec.template.spec.containers[0];
    expect(c.image).toBe(install.image);
    expect(c.volumeMounts).toEqual(install.volumeMounts);
    expect(c.command.slice(0, 2)).toEqual(["/usr/local/bin/plexus", "uninstall"]);
    expect(c.command).toContain("--wait");
    expect(c.command).not.toContain("--remove-state");
    // Every path the installer was given, the uninstall is given the same (it finds what was
    // written).
    for (const flag of [
      "--cni-conf-dir",
      "--cni-bin-dir",
      "--host-prefix",
      "--kubeconfig-file-host",
      "--cni-dir",
    ])
      expect(flagValue(c.command, flag), flag).toBe(flagValue(install.command, flag));
    // Every flag is one the `uninstall` subcommand declares.
    const cmd = ["src/cli/uninstall-command.ts", "src/cli/node-path-options.ts"]
      .map((f) => readFileSync(join(REPO_ROOT, f), "utf8"))
      .join("\n");
    for (const arg of c.command.slice(2))
      expect(cmd, `uninstall flag ${arg}`).toMatch(new RegExp(`"${arg.split("=")[0]}[ "]`));
    expect(patched.spec.updateStrategy.rollingUpdate.maxUnavailable).toBe("100%");
    // Everything else of the DaemonSet stays (service account, host paths, tolerations).
    expect(pod.volumes).toEqual(ds.spec.template.spec.volumes);
    expect(pod.serviceAccountName).toBe(ds.spec.template.spec.serviceAccountName);
    expect(pod.tolerations).toEqual(ds.spec.template.spec.tolerations);
  });
});

/**
 * Each `new Informer({ kind, path: watchPath, list: listOf(listPath, …), … })` in
 * src/watch/watch-cache.ts, with its paths evaluated from the string constants they are built of
 * (there and in src/kubeapi and src/cluster) and turned into RBAC's `group/resource`.
 */
type InformerCalls = { kind: string; list: string; watch: string };

function daemonInformers(): InformerCalls[] {
  const parse = (file: string) =>
    ts.createSourceFile(
      file,
      readFileSync(join(REPO_ROOT, "src", file), "utf8"),
      ts.ScriptTarget.Latest,
      true,
    );
  const files = [
    parse("watch/watch-cache.ts"),
    parse("watch/dra-watch.ts"),
    parse("kubeapi/rest-kube.ts"),
    parse("cluster/objects.ts"),
    parse("cluster/dra-objects.ts"),
  ];
  const evaluate = constEvaluator(files);
  const found: InformerCalls[] = [];
  const visit = (n: ts.Node) => {
    if (ts.isNewExpression(n) && ts.isIdentifier(n.expression) && n.expression.text === "Informer")
      found.push(informerCalls(n, evaluate));
    n.forEachChild(visit);
  };
  visit(files[0]!);
  visit(files[1]!);
  return found;
}

/** Evaluates a path expression: string literals, templates and the files' own constants. */
function constEvaluator(files: ts.SourceFile[]): (e: ts.Expression) => string {
  const consts = new Map<string, ts.Expression>();
  const collect = (n: ts.Node) => {
    if (ts.isVariableDeclaration(n) && ts.isIdentifier(n.name) && n.initializer)
      consts.set(n.name.text, n.initializer);
    n.forEachChild(collect);
  };
  files.forEach(collect);
  const evaluate = (e: ts.Expression): string => {
    if (ts.isStringLiteral(e) || ts.isNoSubstitutionTemplateLiteral(e)) return e.text;
    if (ts.isTemplateExpression(e))
      return (
        e.head.text + e.templateSpans.map((s) => evaluate(s.expression) + s.literal.text).join("")
      );
    if (ts.isIdentifier(e) && consts.has(e.text)) return evaluate(consts.get(e.text)!);
    throw new Error(`watch-cache.ts: cannot evaluate ${e.getText()} to a path`);
  };
  return evaluate;
}

/** The RBAC resource of a cluster-wide collection path ("/pods", "group/resource"). */
function collectionResource(path: string): string {
  const core = /^\/api\/v1\/([a-z-]+)$/.exec(path);
  if (core) return `/${core[1]}`;
  const grouped = /^\/apis\/([a-z0-9.-]+)\/[a-z0-9]+\/([a-z-]+)$/.exec(path);
  if (grouped) return `${grouped[1]}/${grouped[2]}`;
  throw new Error(
    `watch-cache.ts: ${path} is not a cluster-wide collection path; map it to RBAC by hand`,
  );
}

/** The initializer of property `name` of an object literal, if `obj` is one and has it. */
function propertyOf(obj: ts.Expression | undefined, name: string): ts.Expression | undefined {
  if (!obj || !ts.isObjectLiteralExpression(obj)) return undefined;
  return obj.properties.flatMap((p) =>
    ts.isPropertyAssignment(p) && ts.isIdentifier(p.name) && p.name.text === name
      ? [p.initializer]
      : [],
  )[0];
}

/** What one `new Informer({ kind, path, list })` lists and watches. */
function informerCalls(
  informer: ts.NewExpression,
  evaluate: (e: ts.Expression) => string,
): InformerCalls {
  const [opts] = informer.arguments ?? [];
  const [kind, watchPath, lister] = ["kind", "path", "list"].map((k) => propertyOf(opts, k));
  if (!kind || !watchPath || !lister || !ts.isCallExpression(lister) || !lister.arguments[0])
    throw new Error(`watch-cache.ts: unexpected Informer construction ${informer.getText()}`);
  // `listOf(path, …)`, or `lister(list, { path, … })`.
  const q = lister.arguments[1];
  const viaLister =
    ts.isIdentifier(lister.expression) &&
    lister.expression.text === "lister" &&
    q !== undefined &&
    ts.isObjectLiteralExpression(q);
  const listPath = viaLister ? propertyOf(q, "path") : lister.arguments[0];
  if (!listPath) throw new Error(`unexpected Informer list ${lister.getText()}`);
  return {
    kind: evaluate(kind),
    list: collectionResource(evaluate(listPath)),
    watch: collectionResource(evaluate(watchPath)),
  };
}
