/**
 * `plexus status`: the fleet at a glance, from the API server alone (in the spirit of
 * `cilium status`). One row per Plexus pod: its node, the version it runs (the install
 * container's image tag, else the pod's `app.kubernetes.io/version` label), whether the node has
 * switched (the install container's readiness probe, `plexus install --ready`: the runtime's
 * first config is Plexus's), whether the pod is Ready, and how many of the node's Running pods
 * lack a network their annotation asks for (the daemon's own rule, daemon/missing-networks.ts).
 * A node whose pods lack networks and that runs no Plexus pod gets a row too.
 */
import { existsSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import { escapeText, quote } from "../cni/quote";
import { trimPod } from "../cluster/objects";
import { DAEMON_DEFAULT_SECONDS } from "../config/defaults";
import { ExitCode } from "../command/exit-codes";
import { missingNetworks } from "../daemon/missing-networks";
import { loadKubeApi } from "../kubeapi/index";
import { createLogger } from "../log/logger";
import type { Pod } from "../npwg/types";
import { type Output, processOutput, runOps, UsageError, wantsJson } from "./context";

export interface StatusFlags {
  kubeconfig?: string | undefined;
  namespace?: string | undefined;
  selector?: string | undefined;
  output?: string | undefined;
  logLevel?: string | undefined;
  /** Seconds a pod must have run before it counts as missing networks (the daemon's grace). */
  missingNetworksGrace?: string | undefined;
}

/** One row of the table (and of `-o json`). */
export interface NodeStatus {
  node: string;
  /** `namespace/name` of the Plexus pod; undefined for a node that runs none. */
  pod?: string;
  version?: string;
  /** The install container's readiness; undefined when it has no `--ready` probe to say. */
  switched?: boolean;
  ready: boolean;
  podsMissingNetworks: number;
  notes: string[];
}

export interface FleetStatus {
  nodes: NodeStatus[];
  summary: {
    nodes: number;
    switched: number;
    ready: number;
    podsMissingNetworks: number;
    versions: Record<string, number>;
  };
}

type Raw = Record<string, unknown>;

const VERSION_LABEL = "app.kubernetes.io/version";
const INSTALL_CONTAINER = "install";

const obj = (value: unknown): Raw =>
  typeof value === "object" && value !== null && !Array.isArray(value) ? (value as Raw) : {};
const list = (value: unknown): Raw[] => (Array.isArray(value) ? value.map(obj) : []);
const text = (value: unknown): string | undefined =>
  typeof value === "string" && value !== "" ? value : undefined;

/** The tag of an image reference (`registry:5000/plexus:0.2.0@sha256:…` → `0.2.0`). */
export function imageTag(image: string): string | undefined {
  const name = image.split("@")[0]!;
  const last = name.slice(name.lastIndexOf("/") + 1);
  const colon = last.indexOf(":");
  return colon >= 0 && colon < last.length - 1 ? last.slice(colon + 1) : undefined;
}

function versionOf(pod: Raw, install: Raw | undefined): string | undefined {
  const image = text(install?.image);
  const labels = obj(obj(pod.metadata).labels);
  return (image && imageTag(image)) ?? text(labels[VERSION_LABEL]) ?? image?.split("@")[1];
}

/** Whether the pod's install container carries the switch probe (`plexus install --ready`). */
function hasSwitchProbe(install: Raw | undefined): boolean {
  const command = obj(obj(obj(install).readinessProbe).exec).command;
  return Array.isArray(command) && command.includes("--ready");
}

/** Pure: a Plexus pod as the API server returns it, as one row (its missing count still 0). */
export function plexusPodStatus(pod: Raw): NodeStatus {
  const meta = obj(pod.metadata);
  const spec = obj(pod.spec);
  const status = obj(pod.status);
  const install = list(spec.containers).find((c) => c.name === INSTALL_CONTAINER);
  const statuses = list(status.containerStatuses);
  const conditions = list(status.conditions);
  const ready = conditions.some((c) => c.type === "Ready" && c.status === "True");
  const notes: string[] = [];
  const phase = text(status.phase) ?? "Unknown";
  if (phase !== "Running") notes.push(`phase ${phase}`);
  if (meta.deletionTimestamp) notes.push("terminating");
  const notReady = statuses.filter((c) => c.ready !== true).map((c) => String(c.name));
  if (notReady.length) notes.push(`not ready: ${notReady.join(", ")}`);
  const restarts = statuses.reduce((n, c) => n + (Number(c.restartCount) || 0), 0);
  if (restarts > 0) notes.push(`${restarts} restart(s)`);
  let switched: boolean | undefined;
  if (hasSwitchProbe(install))
    switched = statuses.some((c) => c.name === INSTALL_CONTAINER && c.ready === true);
  else notes.push("no switch probe on the install container (a DaemonSet before it)");
  const version = versionOf(pod, install);
  return {
    node: text(spec.nodeName) ?? "(unscheduled)",
    pod: `${text(meta.namespace) ?? ""}/${text(meta.name) ?? ""}`,
    ...(version ? { version } : {}),
    ...(switched !== undefined ? { switched } : {}),
    ready,
    podsMissingNetworks: 0,
    notes,
  };
}

/** A pod as the missing-networks rule reads it: trimPod, and phase, hostNetwork, deletion. */
function detectorPod(raw: Raw): Pod | undefined {
  const pod = trimPod(raw, "");
  if (!pod) return undefined;
  const spec = obj(raw.spec);
  const phase = text(obj(raw.status).phase);
  const deleted = text(obj(raw.metadata).deletionTimestamp);
  if (deleted) pod.metadata.deletionTimestamp = deleted;
  if (spec.hostNetwork === true) pod.spec = { ...pod.spec, hostNetwork: true };
  if (phase) pod.status = { ...pod.status, phase };
  return pod;
}

/**
 * Pure: the node of a pod that has run past `graceMs` without a network it asked for, or
 * undefined. `now` and the pod's `status.startTime` decide the grace, as the daemon's first
 * sighting does for its event.
 */
export function nodeMissingNetworks(raw: Raw, at: { now: number; graceMs: number }) {
  const node = text(obj(raw.spec).nodeName);
  const pod = node ? detectorPod(raw) : undefined;
  if (!node || !pod || !missingNetworks(pod)) return undefined;
  const started = Date.parse(text(obj(raw.status).startTime) ?? "");
  if (Number.isFinite(started) && at.now - started < at.graceMs) return undefined;
  return node;
}

/** Pure: the rows and the summary from the Plexus pods and the per-node counts. */
export function fleetStatus(plexusPods: readonly Raw[], missing: ReadonlyMap<string, number>) {
  const rows = plexusPods.map(plexusPodStatus);
  for (const row of rows) row.podsMissingNetworks = missing.get(row.node) ?? 0;
  for (const [node, count] of missing)
    if (!rows.some((r) => r.node === node))
      rows.push({
        node,
        ready: false,
        podsMissingNetworks: count,
        notes: ["no Plexus pod on this node"],
      });
  rows.sort((a, b) => (a.node < b.node ? -1 : a.node > b.node ? 1 : 0));
  const versions: Record<string, number> = {};
  for (const r of rows)
    if (r.pod) versions[r.version ?? "?"] = (versions[r.version ?? "?"] ?? 0) + 1;
  const summary = {
    nodes: new Set(rows.map((r) => r.node)).size,
    switched: rows.filter((r) => r.switched === true).length,
    ready: rows.filter((r) => r.ready).length,
    podsMissingNetworks: rows.reduce((n, r) => n + r.podsMissingNetworks, 0),
    versions,
  };
  return { nodes: rows, summary } satisfies FleetStatus;
}

const yesNo = (value: boolean | undefined) => (value === undefined ? "?" : value ? "yes" : "no");

/** The table, then one summary line; every cell escaped (B98: names come from the cluster). */
export function renderStatus(status: FleetStatus): string {
  const head = ["NODE", "VERSION", "SWITCHED", "READY", "PODS MISSING NETWORKS", "POD", "NOTES"];
  const rows = status.nodes.map((r) =>
    [
      r.node,
      r.version ?? "-",
      r.pod ? yesNo(r.switched) : "-",
      r.pod ? yesNo(r.ready) : "-",
      String(r.podsMissingNetworks),
      r.pod ?? "-",
      r.notes.join("; "),
    ].map(escapeText),
  );
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (r: string[]) =>
    r
      .map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i]!)))
      .join("  ")
      .trimEnd();
  const s = status.summary;
  const versions = Object.entries(s.versions)
    .map(([v, n]) => `${escapeText(v)} (${n})`)
    .join(", ");
  const total =
    `${s.nodes} node(s): ${s.switched} switched, ${s.ready} ready, ` +
    `${s.podsMissingNetworks} pod(s) missing networks; versions: ${versions || "none"}`;
  return `${[line(head), ...rows.map(line), "", total].join("\n")}\n`;
}

/** Exit 0 only when every node runs a switched and Ready Plexus pod, and no pod lacks networks. */
function exitOf(status: FleetStatus): number {
  const fine = status.nodes.every(
    (r) => r.pod && r.switched !== false && r.ready && r.podsMissingNetworks === 0,
  );
  return status.nodes.length > 0 && fine ? ExitCode.Ok : ExitCode.Problem;
}

/** The kubeconfig as kubectl finds it: the flag, $KUBECONFIG's first file, ~/.kube/config. */
function kubeconfigOf(
  flag: string | undefined,
  env: Readonly<Record<string, string | undefined>>,
): string | undefined {
  if (flag) return flag;
  const fromEnv = env.KUBECONFIG?.split(":").find(Boolean);
  if (fromEnv) return fromEnv;
  const home = join(env.HOME ?? homedir(), ".kube", "config");
  return existsSync(home) ? home : undefined;
}

function graceMsOf(value: string | undefined): number {
  if (value === undefined) return DAEMON_DEFAULT_SECONDS.missingNetworksGrace * 1000;
  const n = Number(value);
  if (value.trim() === "" || !Number.isFinite(n) || n < 0)
    throw new UsageError(`--missing-networks-grace ${quote(value)}: expected seconds ≥ 0`);
  return n * 1000;
}

type Lister = (path: string, query: Record<string, string>) => Promise<Raw>;

/** Every item of a list, page by page (500 a page), each handed to `each` and not kept. */
async function eachItem(
  list: Lister,
  path: string,
  query: Record<string, string>,
  each: (o: Raw) => void,
) {
  let cont: string | undefined;
  do {
    const page = await list(path, { ...query, limit: "500", ...(cont ? { continue: cont } : {}) });
    for (const item of Array.isArray(page.items) ? page.items : []) each(obj(item));
    cont = text(obj(page.metadata).continue);
  } while (cont);
}

/** Reads the Plexus pods and every pod of the cluster (paged), and builds the status. */
async function readFleet(
  list: Lister,
  options: { namespace: string; selector: string; graceMs: number },
): Promise<FleetStatus> {
  const plexusPods: Raw[] = [];
  const ns = encodeURIComponent(options.namespace);
  const selector = { labelSelector: options.selector };
  await eachItem(list, `/api/v1/namespaces/${ns}/pods`, selector, (p) => plexusPods.push(p));
  const missing = new Map<string, number>();
  const at = { now: Date.now(), graceMs: options.graceMs };
  await eachItem(list, "/api/v1/pods", {}, (p) => {
    const node = nodeMissingNetworks(p, at);
    if (node) missing.set(node, (missing.get(node) ?? 0) + 1);
  });
  return fleetStatus(plexusPods, missing);
}

export function statusMain(
  flags: StatusFlags,
  io: { env?: Readonly<Record<string, string | undefined>>; out?: Output } = {},
): Promise<number> {
  const env = io.env ?? process.env;
  const out = io.out ?? processOutput;
  return runOps("status", out, async () => {
    const json = wantsJson(flags.output);
    const graceMs = graceMsOf(flags.missingNetworksGrace);
    const log = await createLogger(
      { logLevel: flags.logLevel ?? "panic", logToStderr: true },
      { component: "status" },
    );
    const kubeconfig = kubeconfigOf(flags.kubeconfig, env);
    const api = await loadKubeApi(
      { kubeconfig },
      {
        env,
        log,
        client: {
          retry: {
            requestTimeoutMs: DAEMON_DEFAULT_SECONDS.apiRequestTimeout * 1000,
            totalTimeoutMs: DAEMON_DEFAULT_SECONDS.apiTotalTimeout * 1000,
          },
          maxResponseBytes: 64 * 1024 * 1024,
          userAgent: "plexus-status",
        },
      },
    );
    if (!api)
      throw new Error(
        "no Kubernetes configuration: pass --kubeconfig, set KUBECONFIG, or run in a pod",
      );
    let status: FleetStatus;
    try {
      status = await readFleet((path, query) => api.list(path, query), {
        namespace: flags.namespace ?? "kube-system",
        selector: flags.selector ?? "app.kubernetes.io/name=plexus",
        graceMs,
      });
    } finally {
      await api.close();
    }
    out.out(json ? `${JSON.stringify(status, null, 2)}\n` : renderStatus(status));
    if (!status.nodes.some((r) => r.pod))
      out.err("plexus status: no Plexus pods found (is the namespace or the selector right?)\n");
    return exitOf(status);
  });
}
