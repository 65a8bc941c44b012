/**
 * A node for the delegate gate's end-to-end tests (gate.test.ts, gate-model.test.ts): Plexus under
 * namespaceIsolation with `allowedPluginTypes` [bridge, host-local], a cluster that is a manifest
 * directory (fileClusterDir) whose pod app/web and NADs a tenant edits, and a CNI_PATH of its own:
 * bridge and host-local are wrappers that log their stdin and run the real plugins from
 * /usr/lib/cni; every other type a tenant may write (evil, macvlan, tuning, sriov) is a recording
 * plugin that logs and succeeds. So every delegate run, allowed or not, is in one log, with the
 * config it was given. The pod's network namespace holds a `tap0` (a veth whose host end this
 * node made) with an address Plexus did not give it, as KubeVirt's virt-launcher makes one.
 */
import {
  chmodSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";
import { CNI_BIN_DIR, ip, ipTry, linkExists, links, netnsExists } from "../support/netns";
import type { E2eScope, Netns } from "../support/netns";
import { runPlexus, TEST_PATH, type RunResult } from "../support/plexus-bin";
import { bridgeNet, hostLocal, plexusConf } from "./networks";

const ALLOWED_TYPES = ["bridge", "host-local"] as const;
/** Types a tenant may write into a NAD that the policy refuses: each one only logs and succeeds. */
const RECORDING_TYPES = ["evil", "macvlan", "tuning", "sriov"] as const;
export const POD_ARGS =
  "IgnoreUnknown=1;K8S_POD_NAMESPACE=app;K8S_POD_NAME=web;K8S_POD_UID=uid-web";
export const DEVICE = "0000:af:00.1";
/** The address the pod's own `tap0` holds; Plexus never gave it. */
const TAP_ADDRESS = "99.9/24";

/** One delegate run, as the wrappers logged it. */
interface Invocation {
  type: string;
  command: string;
  ifName: string;
  containerId: string;
  stdin: string;
  /** CNI_NETNS the delegate was given ("" for none). */
  netns: string;
}

/** The pod's sandbox namespace with its pre-made `tap0` and the host end of that veth. */
export interface PodNetns extends Netns {
  tapHost: string;
  tapAddress: string;
}

/** One attachment as a record file holds it. */
interface RecordedAttachment {
  network: string;
  ifName: string;
  conf: { name: string; plugins: Array<Record<string, unknown>> };
}

interface RecordFile {
  file: string;
  containerId: string;
  ifName: string;
  delFailedAt?: string;
  attachments: RecordedAttachment[];
}

const wrapperScript = (type: string, log: string) => `#!/bin/sh
in=$(cat)
line=$(printf '%s' "$in" | tr '\\n\\t' '  ')
printf '%s\\t%s\\t%s\\t%s\\t%s\\t%s\\n' '${type}' "$CNI_COMMAND" "$CNI_IFNAME" "$CNI_CONTAINERID" \\
  "$line" "$CNI_NETNS" >> '${log}'
printf '%s' "$in" | exec '${join(CNI_BIN_DIR, type)}'
`;

const recordingScript = (type: string, log: string) => `#!/bin/sh
in=$(cat)
line=$(printf '%s' "$in" | tr '\\n\\t' '  ')
printf '%s\\t%s\\t%s\\t%s\\t%s\\t%s\\n' '${type}' "$CNI_COMMAND" "$CNI_IFNAME" "$CNI_CONTAINERID" \\
  "$line" "$CNI_NETNS" >> '${log}'
case "$CNI_COMMAND" in
VERSION) printf '{"cniVersion":"1.1.0","supportedVersions":["0.3.1","0.4.0","1.0.0","1.1.0"]}' ;;
ADD) printf '{"cniVersion":"1.0.0","interfaces":[],"ips":[]}' ;;
esac
exit 0
`;

/** A Go-style fold good enough for the device keys: ASCII case, U+017F as `s`, U+212A as `k`. */
const foldish = (key: string) => key.replaceAll("\u017f", "s").replaceAll("\u212a", "k");
const DEVICE_KEY = /^(deviceid|pcibusid)$/i;

/** Every key anywhere in `value` that a Go plugin reads as `deviceID` or `pciBusID`. */
function deviceKeysIn(value: unknown, path = ""): string[] {
  if (Array.isArray(value)) return value.flatMap((v, i) => deviceKeysIn(v, `${path}[${i}]`));
  if (value === null || typeof value !== "object") return [];
  return Object.entries(value).flatMap(([key, child]) => [
    ...(DEVICE_KEY.test(foldish(key)) ? [`${path}${key}`] : []),
    ...deviceKeysIn(child, `${path}${key}.`),
  ]);
}

export class GateNode {
  readonly binDir: string;
  readonly confDir: string;
  readonly clusterDir: string;
  readonly logPath: string;
  readonly confPath: string;
  /** Plexus's config, as the runtime hands it on stdin (cniVersion 1.1.0, for GC). */
  readonly conf: Record<string, unknown>;
  private readonly nads = new Map<string, string | undefined>();
  private networks = "[]";

  constructor(
    readonly scope: E2eScope,
    options: { cbr0Subnet: string },
  ) {
    this.binDir = join(scope.root, "bin");
    this.confDir = join(scope.root, "net.d");
    this.clusterDir = join(scope.root, "cluster");
    this.logPath = join(scope.root, "delegates.log");
    this.confPath = join(this.confDir, "00-plexus.conf");
    for (const dir of [this.binDir, this.confDir, this.clusterDir]) mkdirSync(dir);
    this.installPlugins();
    const cbr0 = bridgeNet({
      name: "cbr0",
      bridge: scope.bridgeName(),
      isGateway: true,
      ipam: hostLocal(scope, options.cbr0Subnet, { routes: [{ dst: "0.0.0.0/0" }] }),
    });
    const cbr0Path = join(this.confDir, "10-cbr0.conflist");
    writeFileSync(cbr0Path, JSON.stringify({ cniVersion: "1.0.0", name: "cbr0", plugins: [cbr0] }));
    this.conf = plexusConf(scope, [], {
      cniVersion: "1.1.0",
      clusterNetwork: cbr0Path,
      confDir: this.confDir,
      fileClusterDir: this.clusterDir,
      namespaceIsolation: true,
      allowedPluginTypes: [...ALLOWED_TYPES],
      // Nothing is given up during a test: a record dropped is one whose attachment is gone.
      failedDelRetrySeconds: 3600,
    });
    delete this.conf.delegates;
    writeFileSync(this.confPath, JSON.stringify(this.conf));
    this.writeCluster();
  }

  private installPlugins(): void {
    const write = (type: string, text: string) => {
      writeFileSync(join(this.binDir, type), text);
      chmodSync(join(this.binDir, type), 0o755);
    };
    for (const type of ALLOWED_TYPES) write(type, wrapperScript(type, this.logPath));
    for (const type of RECORDING_TYPES) write(type, recordingScript(type, this.logPath));
  }

  /**
   * An administrator's file in the CNI config directory with the network name `name` and a type
   * the policy refuses: what a tenant's NAD without `spec.config` would pick up by name.
   */
  addAdminConfFile(name: string, type: (typeof RECORDING_TYPES)[number]): void {
    const conf = { cniVersion: "1.0.0", name, type, master: "plx-nothing" };
    writeFileSync(join(this.confDir, `50-${name}.conf`), JSON.stringify(conf));
  }

  /** A tenant's NAD in namespace app: its config, or undefined for a NAD without `spec.config`. */
  setNad(name: string, config: unknown): void {
    this.nads.set(name, config === undefined ? undefined : JSON.stringify(config));
    this.writeCluster();
  }

  /** The pod's `k8s.v1.cni.cncf.io/networks` annotation, as a tenant's kubectl would set it. */
  setNetworks(value: string): void {
    this.networks = value;
    this.writeCluster();
  }

  private writeCluster(): void {
    const nads = [...this.nads].map(([name, config]) => ({
      apiVersion: "k8s.cni.cncf.io/v1",
      kind: "NetworkAttachmentDefinition",
      metadata: { namespace: "app", name },
      spec: config === undefined ? {} : { config },
    }));
    const pod = {
      apiVersion: "v1",
      kind: "Pod",
      metadata: {
        namespace: "app",
        name: "web",
        uid: "uid-web",
        annotations: { "k8s.v1.cni.cncf.io/networks": this.networks },
      },
      spec: { nodeName: "node-1" },
    };
    const list = { apiVersion: "v1", kind: "List", items: [pod, ...nads] };
    writeFileSync(join(this.clusterDir, "objects.json"), JSON.stringify(list));
  }

  /**
   * A bridge + host-local config for a tenant's NAD (the list's name is the NAD's). `capable`
   * declares the capabilities a selection's deviceID and portMappings travel by, so that what
   * refuses them is the gate, not a missing capability.
   */
  bridgeConf(
    name: string,
    options: { subnet: string; bridge: string; dataDir?: string; capable?: boolean },
  ) {
    const ipam = { ...hostLocal(this.scope, options.subnet) };
    if (options.dataDir) ipam.dataDir = options.dataDir;
    const extra = options.capable ? { capabilities: { portMappings: true, deviceID: true } } : {};
    const plugin = bridgeNet({ name, bridge: options.bridge, ipam, extra });
    return { cniVersion: "1.0.0", name, plugins: [plugin as Record<string, unknown>] };
  }

  /** The pod's sandbox namespace, with `tap0` (its host end on the node) holding an address. */
  addPodNetns(subnetPrefix: string): PodNetns {
    const ns = this.scope.addNetns();
    const [tapHost, peer] = this.scope.addVethPair();
    ip(["link", "set", peer, "netns", ns.name]);
    ip(["link", "set", peer, "name", "tap0"], { netns: ns.name });
    const tapAddress = `${subnetPrefix}.${TAP_ADDRESS}`;
    ip(["addr", "add", tapAddress, "dev", "tap0"], { netns: ns.name });
    ip(["link", "set", "tap0", "up"], { netns: ns.name });
    return { ...ns, tapHost, tapAddress };
  }

  /** A CNI call as the runtime makes it, with this node's CNI_PATH. */
  run(command: string, env: Record<string, string | undefined>): Promise<RunResult> {
    return this.scope.run(command, this.conf, { CNI_PATH: this.binDir, ...env });
  }

  /** The runtime's call for the pod's sandbox `containerId` in `netnsPath` ("" when gone). */
  runPod(command: "ADD" | "DEL" | "CHECK", containerId: string, netnsPath: string) {
    const env = { CNI_CONTAINERID: containerId, CNI_NETNS: netnsPath, CNI_IFNAME: "eth0" };
    return this.run(command, { ...env, CNI_ARGS: POD_ARGS });
  }

  /** A CNI GC listing the attachments the runtime still has. */
  gc(valid: Array<{ containerID: string; ifname: string }>): Promise<RunResult> {
    const stdin = { ...this.conf, "cni.dev/valid-attachments": valid };
    return this.scope.run("GC", stdin, { CNI_PATH: this.binDir });
  }

  /** A person's (or the daemon's) plexus command on this node. */
  command(args: string[]): Promise<RunResult> {
    const [mk, mv] = this.scope.marker.split("=") as [string, string];
    const common = ["--cni-conf-dir", this.confDir, "--cni-path", this.binDir];
    return runPlexus({ env: { PATH: TEST_PATH, [mk]: mv }, args: [...args, ...common] });
  }

  /** One hot-plug reconcile of app/web, as the daemon's --hot-plug runs it. */
  hotplug(): Promise<RunResult> {
    return this.command(["hotplug", "app/web", "-o", "json"]);
  }

  /** One housekeeping pass (the daemon's timer runs the same command). */
  housekeeping(): Promise<RunResult> {
    return this.command(["records", "retry"]);
  }

  /**
   * From now on every DEL (and ADD) of host-local for `network` fails, its reservations kept:
   * host-local locks `<dataDir>/<network>/lock`, which becomes a directory it cannot open.
   */
  breakDel(network: string, dataDir = this.scope.dataDir): void {
    const lock = join(dataDir, network, "lock");
    rmSync(lock, { force: true, recursive: true });
    mkdirSync(lock, { recursive: true });
  }

  repairDel(network: string, dataDir = this.scope.dataDir): void {
    rmSync(join(dataDir, network, "lock"), { force: true, recursive: true });
  }

  invocations(): Invocation[] {
    if (!existsSync(this.logPath)) return [];
    return readFileSync(this.logPath, "utf8")
      .split("\n")
      .filter(Boolean)
      .map((line) => {
        const fields = line.split("\t");
        const [type = "", command = "", ifName = "", containerId = "", stdin = ""] = fields;
        return { type, command, ifName, containerId, stdin, netns: fields[5] ?? "" };
      });
  }

  /** Every run of a type outside the allow-list, as `type COMMAND ifName`. */
  disallowedRuns(): string[] {
    const allowed = new Set<string>(ALLOWED_TYPES);
    return this.invocations()
      .filter((i) => !allowed.has(i.type))
      .map((i) => `${i.type} ${i.command} ${i.ifName}`);
  }

  /** Every device key a delegate was given, as `type COMMAND: key`. */
  deviceKeysGiven(): string[] {
    return this.invocations().flatMap((i) => {
      let parsed: unknown;
      try {
        parsed = JSON.parse(i.stdin);
      } catch {
        return i.stdin.trim() === "" ? [] : [`${i.type} ${i.command}: stdin is not JSON`];
      }
      return deviceKeysIn(parsed).map((key) => `${i.type} ${i.command}: ${key}`);
    });
  }

  /** The container records in `<cniDir>/records`. */
  records(): RecordFile[] {
    const dir = join(this.scope.cniDir, "records");
    const names = existsSync(dir) ? readdirSync(dir).filter((n) => n.endsWith(".json")) : [];
    return names.map((file) => ({
      file,
      ...(JSON.parse(readFileSync(join(dir, file), "utf8")) as Omit<RecordFile, "file">),
    }));
  }

  /** host-local's reservations (any dataDir given): `{network, ip, containerId, ifName}`. */
  reservations(dataDirs: readonly string[] = [this.scope.dataDir]) {
    const out: Array<{ network: string; ip: string; containerId: string; ifName: string }> = [];
    for (const dataDir of dataDirs) {
      if (!existsSync(dataDir)) continue;
      for (const network of readdirSync(dataDir)) {
        const dir = join(dataDir, network);
        for (const ipName of readdirSync(dir).filter((n) => /^[\d.]+$/.test(n))) {
          const [containerId = "", ifName = ""] = readFileSync(join(dir, ipName), "utf8")
            .split(/\r?\n/)
            .map((s) => s.trim());
          out.push({ network, ip: ipName, containerId, ifName });
        }
      }
    }
    return out;
  }
}

/**
 * B88's half of the invariants: whatever Plexus did, the pod's `lo` (with 127.0.0.1) and `tap0`
 * (with its address, and its host end on the node) are still there while the namespace is.
 */
export function foreignLinkProblems(pod: PodNetns): string[] {
  if (!netnsExists(pod.name)) return [];
  const problems: string[] = [];
  const lo = ipTry(["-j", "addr", "show", "dev", "lo"], { netns: pod.name });
  if (lo.status !== 0 || !lo.stdout.includes('"127.0.0.1"'))
    problems.push(`${pod.name}: lo or its 127.0.0.1 is gone`);
  const tap = links(pod.name).find((l) => l.name === "tap0");
  if (!tap) problems.push(`${pod.name}: tap0 is gone`);
  else if (!tap.addresses.includes(pod.tapAddress))
    problems.push(`${pod.name}: tap0 lost ${pod.tapAddress} (has ${tap.addresses.join(", ")})`);
  if (!linkExists(pod.tapHost)) problems.push(`tap0's host end ${pod.tapHost} is gone`);
  return problems;
}

/** The interfaces of the pod's namespace that Plexus made: all but `lo` and `tap0`. */
export function plexusLinks(pod: PodNetns): string[] {
  if (!netnsExists(pod.name)) return [];
  return links(pod.name)
    .map((l) => l.name)
    .filter((n) => n !== "lo" && n !== "tap0")
    .sort();
}

/**
 * B86's "the record stays until the attachment is really gone": each interface Plexus made in a
 * pod's namespace that still exists, and each host-local reservation, is named by a record.
 */
export function unrecordedAttachments(
  node: GateNode,
  pods: ReadonlyArray<{ containerId: string; netns: PodNetns }>,
  dataDirs?: readonly string[],
): string[] {
  const attachments = node.records().flatMap((r) => r.attachments.map((a) => ({ ...a, r })));
  const recorded = new Set(attachments.map((a) => `${a.r.containerId}/${a.ifName}`));
  const reserving = new Set(
    attachments.map((a) => `${a.r.containerId}/${a.ifName}/${a.conf.name}`),
  );
  const problems: string[] = [];
  for (const { containerId, netns } of pods)
    for (const name of plexusLinks(netns))
      if (!recorded.has(`${containerId}/${name}`))
        problems.push(`interface ${name} of ${containerId} exists; no record names it`);
  for (const r of node.reservations(dataDirs))
    if (!reserving.has(`${r.containerId}/${r.ifName}/${r.network}`))
      problems.push(
        `${r.network}/${r.ip} is reserved for ${r.containerId}/${r.ifName}; no record names it`,
      );
  return problems;
}
