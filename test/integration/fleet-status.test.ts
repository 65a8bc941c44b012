/**
 * `plexus status` (the bundled binary) against the fake API server, as a cluster administrator:
 * the plexus pods are the rendered DaemonSet's template placed on nodes in different states
 * (switched and ready; not switched; an older DaemonSet without the switch probe, on an older
 * version; Pending), with the pods of the cluster around them (Running without their networks,
 * with them, hostNetwork, just started): over 500, so the pod list is paged. The table,
 * `-o json` and the exit statuses; only reads reach the API server.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { NETWORK_STATUS_ANNOTATION, NETWORKS_ANNOTATION } from "../../src/npwg/types";
import { renderKustomization } from "../support/deploy-render";
import {
  ADMIN_TOKEN,
  type FakeApiServer,
  startFakeApiServer,
  writeKubeconfig,
} from "../support/fake-apiserver";
import { runPlexus } from "../support/plexus-bin";

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

const template = renderKustomization(".").find((d) => d.kind === "DaemonSet")!.spec.template;
const LONG_AGO = new Date(Date.now() - 3600_000).toISOString();

interface PlexusPodState {
  version: string;
  /** The install container's readiness (the switch probe's verdict). */
  switched: boolean;
  daemonReady?: boolean;
  /** An older DaemonSet: no readiness probe on the install container. */
  withoutProbe?: boolean;
  phase?: string;
}

/** The DaemonSet's pod on `node`, its containers' statuses as the kubelet would report them. */
function plexusPod(node: string, state: PlexusPodState) {
  const spec = structuredClone(template.spec);
  spec.nodeName = node;
  for (const c of spec.containers) {
    c.image = `registry.example.com/plexus:${state.version}`;
    if (state.withoutProbe && c.name === "install") delete c.readinessProbe;
  }
  const phase = state.phase ?? "Running";
  const ready = { install: state.switched, daemon: state.daemonReady ?? true };
  const running = phase === "Running";
  return {
    metadata: {
      name: `plexus-${node}`,
      namespace: "kube-system",
      labels: template.metadata.labels,
    },
    spec,
    status: {
      phase,
      ...(running ? { startTime: LONG_AGO } : {}),
      conditions: [
        { type: "Ready", status: running && ready.install && ready.daemon ? "True" : "False" },
      ],
      containerStatuses: running
        ? spec.containers.map((c: { name: "install" | "daemon" }) => ({
            name: c.name,
            ready: ready[c.name],
            restartCount: 0,
          }))
        : [],
    },
  };
}

/** A workload pod on `node` asking for net-a: with its network-status or not, started when. */
function appPod(
  name: string,
  node: string,
  how: { has?: boolean; startTime?: string; namespace?: string } = {},
) {
  const annotations: Record<string, string> = { [NETWORKS_ANNOTATION]: "net-a" };
  if (how.has)
    annotations[NETWORK_STATUS_ANNOTATION] = JSON.stringify([
      { name: "cbr0", interface: "eth0", default: true },
      { name: "app/net-a", interface: "net1" },
    ]);
  return {
    metadata: { name, namespace: how.namespace ?? "app", annotations },
    spec: { nodeName: node },
    status: { phase: "Running", startTime: how.startTime ?? LONG_AGO },
  };
}

/** Four nodes in different states, a fifth with no Plexus pod, and 510 pods with their networks. */
async function fleet(): Promise<FakeApiServer> {
  const s = await startFakeApiServer();
  cleanups.push(() => s.close());
  s.addPod(plexusPod("node-a", { version: "0.2.0", switched: true }));
  s.addPod(plexusPod("node-b", { version: "0.2.0", switched: false }));
  s.addPod(plexusPod("node-c", { version: "0.1.0", switched: true, withoutProbe: true }));
  s.addPod(plexusPod("node-d", { version: "0.2.0", switched: false, phase: "Pending" }));
  for (let i = 0; i < 510; i++) s.addPod(appPod(`fine-${i}`, "node-a", { has: true }));
  s.addPod(appPod("lacking-1", "node-b"));
  // In namespace "zz": past the first page of the cluster-wide list.
  s.addPod(appPod("lacking-2", "node-b", { namespace: "zz" }));
  s.addPod(appPod("orphan", "node-e"));
  // Not counted: just started (the daemon's grace), host network, not Running.
  s.addPod(appPod("starting", "node-a", { startTime: new Date().toISOString() }));
  s.addPod({ ...appPod("host", "node-a"), spec: { nodeName: "node-a", hostNetwork: true } });
  s.addPod({ ...appPod("pending", "node-a"), status: { phase: "Pending" } });
  return s;
}

async function status(s: FakeApiServer, args: string[] = []) {
  const dir = mkdtempSync(join(tmpdir(), "plx-status-"));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  const kubeconfig = writeKubeconfig(s, { dir, token: ADMIN_TOKEN });
  return runPlexus({ env: { HOME: dir }, args: ["status", "--kubeconfig", kubeconfig, ...args] });
}

/** The table's rows as cells (columns are two or more spaces apart). */
const rows = (stdout: string) =>
  stdout
    .split("\n\n")[0]!
    .split("\n")
    .map((l) => l.split(/ {2,}/));

describe("plexus status: the fleet from the API server", () => {
  it("M11 one row per node: version, switched, ready, pods missing networks; a summary; exit 1 while any node is not right", async () => {
    const s = await fleet();
    const r = await status(s);
    expect(r.stderr).toBe("");
    expect(r.code).toBe(1);
    const table = rows(r.stdout);
    expect(table[0]).toEqual([
      "NODE",
      "VERSION",
      "SWITCHED",
      "READY",
      "PODS MISSING NETWORKS",
      "POD",
      "NOTES",
    ]);
    expect(table.slice(1).map((c) => c.slice(0, 6))).toEqual([
      ["node-a", "0.2.0", "yes", "yes", "0", "kube-system/plexus-node-a"],
      ["node-b", "0.2.0", "no", "no", "2", "kube-system/plexus-node-b"],
      ["node-c", "0.1.0", "?", "yes", "0", "kube-system/plexus-node-c"],
      ["node-d", "0.2.0", "no", "no", "0", "kube-system/plexus-node-d"],
      ["node-e", "-", "-", "-", "1", "-"],
    ]);
    const notes = Object.fromEntries(table.slice(1).map((c) => [c[0], c[6] ?? ""]));
    expect(notes["node-a"]).toBe("");
    expect(notes["node-b"]).toBe("not ready: install");
    expect(notes["node-c"]).toMatch(/no switch probe/);
    expect(notes["node-d"]).toBe("phase Pending");
    expect(notes["node-e"]).toBe("no Plexus pod on this node");
    expect(r.stdout.trim().split("\n").at(-1)).toBe(
      "5 node(s): 1 switched, 2 ready, 3 pod(s) missing networks; versions: 0.2.0 (3), 0.1.0 (1)",
    );
    // A question, not a change: only GETs, the cluster-wide pod list paged.
    expect(s.requests.every((q) => q.method === "GET")).toBe(true);
    const pages = s.requests.filter((q) => q.path === "/api/v1/pods");
    expect(pages.length).toBeGreaterThanOrEqual(2);
    expect(new URLSearchParams(pages[1]!.query).get("continue")).toBeTruthy();
  });

  it("M11 -o json carries the same per node, the summary with the versions", async () => {
    const r = await status(await fleet(), ["-o", "json"]);
    expect(r.code).toBe(1);
    const out = JSON.parse(r.stdout);
    expect(out.nodes.find((n: { node: string }) => n.node === "node-b")).toEqual({
      node: "node-b",
      pod: "kube-system/plexus-node-b",
      version: "0.2.0",
      switched: false,
      ready: false,
      podsMissingNetworks: 2,
      notes: ["not ready: install"],
    });
    expect(out.nodes.find((n: { node: string }) => n.node === "node-c").switched).toBeUndefined();
    expect(out.summary).toEqual({
      nodes: 5,
      switched: 1,
      ready: 2,
      podsMissingNetworks: 3,
      versions: { "0.2.0": 3, "0.1.0": 1 },
    });
  });

  it("M11 exit 0 when every node has switched, is ready and has no pod missing networks", async () => {
    const s = await startFakeApiServer();
    cleanups.push(() => s.close());
    for (const node of ["node-a", "node-b"])
      s.addPod(plexusPod(node, { version: "0.2.0", switched: true }));
    s.addPod(appPod("web", "node-a", { has: true }));
    const r = await status(s);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain("2 node(s): 2 switched, 2 ready, 0 pod(s) missing networks");
  });

  it("exit 1 with a word on stderr when no Plexus pod is found; 2 for a wrong flag; 3 without an API server", async () => {
    const s = await startFakeApiServer();
    cleanups.push(() => s.close());
    const none = await status(s, ["-n", "elsewhere"]);
    expect(none.code).toBe(1);
    expect(none.stderr).toContain("no Plexus pods found");
    expect((await status(s, ["-o", "yaml"])).code).toBe(2);
    expect((await status(s, ["--missing-networks-grace", "soon"])).code).toBe(2);
    const home = mkdtempSync(join(tmpdir(), "plx-status-home-"));
    cleanups.push(() => rmSync(home, { recursive: true, force: true }));
    const lost = await runPlexus({ env: { HOME: home }, args: ["status"] });
    expect(lost.code).toBe(3);
    expect(lost.stderr).toContain("no Kubernetes configuration");
    await s.close();
    const down = await status(s, []);
    expect(down.code).toBe(3);
    expect(down.stderr).toMatch(/^plexus status: /);
  });
});
