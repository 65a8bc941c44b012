/**
 * Each node layout of deploy/ (the base and the components of deploy/components/) end to end,
 * every container as rendered: a temp dir stands in for the node's `/`, with the layout's CNI
 * config dir and plugin dirs; the rendered `install` container's command installs into it; the
 * runtime's ADD of a pod runs the installed binary with the installed config; then the `daemon`
 * container's passes run as the daemon runs them (daemon/main.ts, cli/self-command.ts): a hot-plug
 * of the pod's new network (`plexus hotplug`) and, after a DEL that failed, a housekeeping pass
 * (`plexus records retry`). Each runs in a view of the node built from its container's rendered
 * volumes and volume mounts (test/support/node-view.ts): a node path its container does not
 * mount does not exist for it, as in the pod. So a component that moves the installer's paths
 * and not the daemon's fails here: the config the installer writes names the kubeconfig and the
 * primary network's config under the layout's conf dir, and the runtime's plugins are in the
 * layout's plugin dirs. The API server is the fake one (the kubeconfig the installer writes names
 * it); the namespaces are real, with real bridge, host-local and static. Subnets 10.229.x.0/24.
 */
import { copyFileSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, expect, it } from "vitest";
import { DEFAULT_CONF_DIR } from "../../src/config/defaults";
import {
  containerMounts,
  LAYOUTS,
  type Layout,
  type Manifest,
  renderLayout,
} from "../support/deploy-render";
import { startFakeApiServer, type FakeApiServer } from "../support/fake-apiserver";
import { CNI_BIN_DIR, describeE2e, links, NETNS_DIR, useE2eScope } from "../support/netns";
import type { E2eScope, Netns } from "../support/netns";
import { type Bind, runInView, type View, VIEW_TOOLS } from "../support/node-view";
import { PLEXUS_BIN, singleJson } from "../support/plexus-bin";
import { PLUGIN_VERSION } from "./networks";

const t = useE2eScope();
let api: FakeApiServer | undefined;
afterEach(async () => {
  await api?.close();
  api = undefined;
});

type Container = { name: string; command: string[]; [k: string]: any };

/** One layout's node: its rendered DaemonSet, the dir standing in for its `/`, the API server. */
interface Node {
  scope: E2eScope;
  layout: Layout;
  ds: Manifest;
  root: string;
  /** The service-account token and CA the kubelet would project (the fake server's). */
  secrets: string;
  api: FakeApiServer;
  subnets: { primary: string; nad: string };
}

/**
 * A node path, where it is here: under the node's root, except the pods' network namespaces,
 * which are this machine's (the test makes them with `ip netns`).
 */
function hostPathOf(node: Node, path: string): string {
  return path === NETNS_DIR || path.startsWith(`${NETNS_DIR}/`) ? path : join(node.root, path);
}

const containerOf = (node: Node, name: string): Container =>
  node.ds.spec.template.spec.containers.find((c: Container) => c.name === name);

/**
 * The container's view: each volume mount from its volume as rendered (a hostPath from the
 * node, the projected token from `secrets`), the image's executable at its command's path.
 */
function containerView(node: Node, name: string, extra: Bind[] = []): View {
  const binds: Bind[] = containerMounts(node.ds, name).map((m) => {
    if (m.hostPath === undefined) {
      const projected = node.ds.spec.template.spec.volumes.find(
        (v: { name: string }) => v.name === m.volume,
      ).projected;
      if (!projected) throw new Error(`${name} mounts ${m.volume}: no stand-in for its kind`);
      return { target: m.mountPath, source: node.secrets, readOnly: true };
    }
    const source = hostPathOf(node, m.hostPath);
    // The kubelet makes a DirectoryOrCreate hostPath; any other type must be there already.
    if (m.hostPathType === "DirectoryOrCreate") mkdirSync(source, { recursive: true });
    return { target: m.mountPath, source, readOnly: m.readOnly };
  });
  const container = containerOf(node, name);
  binds.push({ target: container.command[0]!, source: PLEXUS_BIN, readOnly: true }, ...extra);
  const root = join(node.scope.root, `view-${name}`);
  mkdirSync(root, { recursive: true });
  return { root, binds, readOnlyRoot: container.securityContext?.readOnlyRootFilesystem === true };
}

/** The node itself, as the runtime sees it: its whole root, and the pods' namespaces. */
const nodeView = (node: Node): View => ({
  root: node.root,
  binds: [{ target: NETNS_DIR, source: hostPathOf(node, NETNS_DIR) }],
});

/**
 * What enabling hot-plug adds to the daemon container (beside `--hot-plug` in
 * deploy/daemonset.yaml): the node's network namespaces. The layout does not move them.
 */
const hotPlugMounts = (node: Node): Bind[] => [
  { target: NETNS_DIR, source: hostPathOf(node, NETNS_DIR) },
];

/** A `--name=value` flag of a rendered command. */
function flagOf(command: readonly string[], name: string): string | undefined {
  return command.find((a) => a.startsWith(`${name}=`))?.slice(name.length + 1);
}

/**
 * The argv of one of the daemon's passes, as src/cli/self-command.ts builds it from the daemon's
 * own flags (their defaults where the command gives none: src/cli/commands.ts).
 */
function daemonPassArgv(daemon: Container, command: string[]): string[] {
  const confDir = flagOf(daemon.command, "--cni-conf-dir") ?? DEFAULT_CONF_DIR;
  const cniPath = flagOf(daemon.command, "--cni-path") ?? "/opt/cni/bin";
  const level = flagOf(daemon.command, "--log-level") ?? "info";
  const exe = daemon.command[0]!;
  return [exe, ...command, "--log-level", level, "--cni-conf-dir", confDir, "--cni-path", cniPath];
}

function baseEnv(node: Node): Record<string, string> {
  const [mk, mv] = node.scope.marker.split("=") as [string, string];
  // The in-cluster address the kubelet gives every container; the installer's kubeconfig names it.
  return {
    [mk]: mv,
    KUBERNETES_SERVICE_HOST: "127.0.0.1",
    KUBERNETES_SERVICE_PORT: String(node.api.port),
    NODE_NAME: "node-1",
  };
}

/** The layout's node: its CNI dirs, the primary network's config, the plugins, the API objects. */
async function makeNode(scope: E2eScope, layout: Layout, octet: number): Promise<Node> {
  api = await startFakeApiServer();
  const ds = renderLayout(layout).find((d) => d.kind === "DaemonSet")!;
  const subnets = { primary: `10.229.${octet}`, nad: `10.229.${octet + 1}` };
  const secrets = join(scope.root, "secrets");
  mkdirSync(secrets, { recursive: true });
  writeFileSync(join(secrets, "token"), api.token);
  writeFileSync(join(secrets, "ca.crt"), api.caPem);
  const node: Node = { scope, layout, ds, root: join(scope.root, "node"), secrets, api, subnets };
  mkdirSync(join(node.root, layout.confDir), { recursive: true });
  // host-local's default dataDir, /var/lib/cni/networks: the node's.
  const ipam = { type: "host-local", subnet: `${subnets.primary}.0/24` };
  const primary = { type: "bridge", bridge: scope.bridgeName(), isGateway: true, ipam };
  const list = { cniVersion: PLUGIN_VERSION, name: "primary-net", plugins: [primary] };
  writeFileSync(join(node.root, layout.confDir, "10-primary.conflist"), JSON.stringify(list));
  // The primary network's plugins in the first plugin dir, the NAD's in the last (CRI-O as
  // packaged: a primary network's own in /opt/cni/bin, the reference plugins in /usr/libexec/cni).
  installPlugins(node, layout.pluginDirs[0]!, ["bridge", "host-local"]);
  installPlugins(node, layout.pluginDirs.at(-1)!, ["bridge", "static"]);
  const nadIpam = { type: "static", addresses: [{ address: `${subnets.nad}.5/24` }] };
  const nadConf = { type: "bridge", bridge: scope.bridgeName(), ipam: nadIpam };
  const config = JSON.stringify({ cniVersion: PLUGIN_VERSION, name: "net-a", ...nadConf });
  api.addNad({ metadata: { namespace: "app", name: "net-a" }, spec: { config } });
  api.addPod({
    metadata: { namespace: "app", name: "web", uid: "uid-web" },
    spec: { nodeName: "node-1", containers: [{ name: "main", image: "busybox" }] },
    status: { phase: "Running" },
  });
  return node;
}

function installPlugins(node: Node, dir: string, plugins: string[]): void {
  mkdirSync(join(node.root, dir), { recursive: true });
  for (const p of plugins) copyFileSync(join(CNI_BIN_DIR, p), join(node.root, dir, p));
}

const failure = (what: string, r: { status: number | null; stdout: string; stderr: string }) =>
  `${what}: exit ${r.status}\nstdout: ${r.stdout}\nstderr: ${r.stderr}`;

/** The rendered install container's command, once, then its readiness probe. */
async function install(node: Node): Promise<void> {
  const container = containerOf(node, "install");
  const view = containerView(node, "install");
  const argv = [...container.command, "--once", "--primary-config-timeout=20"];
  const inst = await runInView(view, argv, { env: baseEnv(node) });
  expect(inst.status, failure("install", inst)).toBe(0);
  const probe = container.readinessProbe.exec.command as string[];
  const ready = await runInView(view, probe, { env: baseEnv(node) });
  expect(ready.status, failure("the install container's readiness probe", ready)).toBe(0);
}

/** The runtime's CNI call: the first config of the conf dir, the plugin from its plugin dirs. */
function runtimeCall(node: Node, command: string, env: Record<string, string>) {
  const { layout } = node;
  const confDir = join(node.root, layout.confDir);
  const first = readdirSync(confDir)
    .filter((f) => /\.(conf|conflist|json)$/.test(f))
    .sort()[0];
  expect(first, "the config the runtime loads").toBe("00-plexus.conflist");
  const list = JSON.parse(readFileSync(join(confDir, first!), "utf8"));
  const stdin = JSON.stringify({
    ...list.plugins[0],
    name: list.name,
    cniVersion: list.cniVersion,
  });
  const dir = layout.pluginDirs.find((d) => readdirSync(join(node.root, d)).includes("plexus"));
  expect(dir, "a plugin dir holding plexus").toBeDefined();
  return runInView(nodeView(node), [join(dir!, "plexus")], {
    env: {
      ...baseEnv(node),
      CNI_COMMAND: command,
      CNI_PATH: layout.pluginDirs.join(":"),
      CNI_ARGS: "IgnoreUnknown=1;K8S_POD_NAMESPACE=app;K8S_POD_NAME=web;K8S_POD_UID=uid-web",
      ...env,
    },
    input: stdin,
  });
}

const podEnv = (ns: Netns) => ({
  CNI_CONTAINERID: "ctr-web",
  CNI_NETNS: ns.path,
  CNI_IFNAME: "eth0",
});

/** The pod's interfaces and their addresses, `eth0 10.229.1.2/24`. */
const podLinks = (ns: Netns) =>
  links(ns.name)
    .filter((l) => l.name !== "lo")
    .map((l) => `${l.name} ${l.addresses.join(" ")}`)
    .sort();

/** The pod's annotation asks for net-a; the daemon's `plexus hotplug` attaches it. */
async function hotPlug(node: Node, ns: Netns): Promise<void> {
  const pod = node.api.getPod("app", "web")!;
  const annotations = {
    ...(pod.metadata.annotations as Record<string, string> | undefined),
    "k8s.v1.cni.cncf.io/networks": "net-a",
  };
  node.api.addPod({ ...pod, metadata: { ...pod.metadata, annotations } });
  const daemon = containerOf(node, "daemon");
  const view = containerView(node, "daemon", hotPlugMounts(node));
  const argv = daemonPassArgv(daemon, ["hotplug", "app/web", "-o", "json", "--uid", "uid-web"]);
  const r = await runInView(view, argv, { env: baseEnv(node), timeoutMs: 60_000 });
  expect(r.status, failure("the daemon's hot-plug", r)).toBe(0);
  const report = JSON.parse(r.stdout.trim().split("\n").at(-1)!);
  expect(report.attached, r.stdout).toHaveLength(1);
  expect(podLinks(ns)).toEqual([
    `eth0 ${node.subnets.primary}.2/24`,
    `net1 ${node.subnets.nad}.5/24`,
  ]);
  const status = node.api.getPod("app", "web")!.metadata.annotations as Record<string, string>;
  const names = JSON.parse(status["k8s.v1.cni.cncf.io/network-status"]!).map(
    (s: { name: string; interface: string }) => `${s.name}@${s.interface}`,
  );
  expect(names).toEqual(["primary-net@eth0", "app/net-a@net1"]);
}

/** Plexus's records and host-local's reservations on the node. */
function nodeState(node: Node) {
  const list = (dir: string) => {
    try {
      return readdirSync(join(node.root, dir));
    } catch {
      return [];
    }
  };
  const reservations = list("/var/lib/cni/networks/primary-net").filter((f) => /^\d/.test(f));
  return {
    records: list("/var/lib/cni/plexus/records"),
    pending: list("/var/lib/cni/plexus/pending"),
    reservations,
  };
}

/**
 * The runtime's DEL finds none of the delegates (its CNI_PATH an empty dir): it fails and the
 * record stays, pending; the runtime removes the sandbox. The daemon's housekeeping pass then
 * tears both networks down with its own plugin path and state mounts.
 */
async function failedDelThenHousekeeping(node: Node, ns: Netns): Promise<void> {
  mkdirSync(join(node.root, "empty"), { recursive: true });
  const del = await runtimeCall(node, "DEL", { ...podEnv(ns), CNI_PATH: "/empty" });
  expect(del.status, failure("the DEL without delegates", del)).not.toBe(0);
  expect(nodeState(node)).toMatchObject({ records: [expect.any(String)] });
  expect(nodeState(node).pending).toHaveLength(1);
  node.scope.deleteNetns(ns);
  const daemon = containerOf(node, "daemon");
  const interval = Number(flagOf(daemon.command, "--housekeeping-interval") ?? 30);
  const argv = [...daemonPassArgv(daemon, ["records", "retry"])];
  argv.push("--housekeeper", String(2 * interval));
  const env = baseEnv(node);
  const r = await runInView(containerView(node, "daemon"), argv, { env, timeoutMs: 90_000 });
  expect(r.status, failure("the daemon's housekeeping pass", r)).toBe(0);
  expect(r.stdout, r.stderr).toMatch(/retried 1 pending record\(s\); 0 still pending/);
  expect(nodeState(node)).toEqual({ records: [], pending: [], reservations: [] });
}

describeE2e(
  "e2e deploy/ node layouts: installer, runtime and daemon on the layout's paths",
  () => {
    it.each(LAYOUTS.map((l, i) => [l.name, l, i] as const))(
      "M11 M13 M15 %s: installer, runtime ADD, and the daemon's hot-plug and housekeeping, each seeing only its rendered mounts",
      async (_name, layout, index) => {
        const { scope } = t;
        const node = await makeNode(scope, layout, 1 + 2 * index);
        await install(node);
        const ns = scope.addNetns();
        const add = await runtimeCall(node, "ADD", podEnv(ns));
        expect(add.status, failure("the runtime's ADD", add)).toBe(0);
        expect(singleJson(add.stdout)).toHaveProperty("ips");
        expect(podLinks(ns)).toEqual([`eth0 ${node.subnets.primary}.2/24`]);
        await hotPlug(node, ns);
        await failedDelThenHousekeeping(node, ns);
      },
    );
  },
  { tools: VIEW_TOOLS },
);
