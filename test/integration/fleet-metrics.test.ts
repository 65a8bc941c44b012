/**
 * The daemon's part of the fleet view, scraped from the bundled binary (`plexus daemon` against
 * the fake API server): the build it runs (`plexus_build_info`, the same version and commit as
 * `plexus --version`), whose config the node's runtime runs (`plexus_node_config_state`, read
 * from --cni-conf-dir at each scrape), the events it relays (`plexus_daemon_events_total`, where
 * TeardownAbandoned counts); and that every metric deploy/monitoring/'s rules and dashboard name
 * is one the daemon declares (the per-delegate ones included).
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { request } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { DaemonKube } from "../../src/daemon-client/client";
import { silentLogger } from "../../src/log/logger";
import { renderKustomization } from "../support/deploy-render";
import { startFakeApiServer, writeKubeconfig } from "../support/fake-apiserver";
import { PLEXUS_BIN, runPlexus, unixSocketStatus } from "../support/plexus-bin";
import {
  checkPromql,
  declaredMetrics,
  monitoringExpressions,
  templateMetrics,
} from "../support/promql";

/** Written by Prometheus itself for every target. */
const PROMETHEUS_OWN = new Set(["up"]);

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

function socketGet(socket: string, path: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const req = request({ socketPath: socket, path }, (res) => {
      let text = "";
      res.on("data", (c) => (text += c));
      res.on("end", () => resolve(text));
    });
    req.on("error", reject);
    req.end();
  });
}

const CALICO = JSON.stringify({
  cniVersion: "1.0.0",
  name: "k8s-pod-network",
  plugins: [{ type: "calico" }],
});
const PLEXUS = JSON.stringify({
  cniVersion: "1.0.0",
  name: "plexus-cni-network",
  plugins: [{ type: "plexus", clusterNetwork: "/etc/cni/net.d/10-calico.conflist" }],
});
const MULTUS = JSON.stringify({
  cniVersion: "1.0.0",
  name: "multus-cni-network",
  type: "multus",
  delegates: [JSON.parse(CALICO)],
});

/** The binary's daemon on a fake cluster, with a conf dir of its own; resolves once it answers. */
async function daemonWithConfDir() {
  const s = await startFakeApiServer();
  cleanups.push(() => s.close());
  const dir = mkdtempSync(join(tmpdir(), "plx-fleet-metrics-"));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  const confDir = join(dir, "net.d");
  mkdirSync(confDir);
  writeFileSync(join(confDir, "10-calico.conflist"), CALICO);
  const socket = join(dir, "plexus.sock");
  const args = ["daemon", "--kubeconfig", writeKubeconfig(s, { dir, tokenFile: true })];
  args.push("--node-name", "node-1", "--socket", socket, "--pod-resources-socket", "");
  args.push("--housekeeping-interval", "0", "--cni-conf-dir", confDir);
  const daemon: ChildProcess = spawn(PLEXUS_BIN, args, { cwd: "/", stdio: "ignore" });
  cleanups.push(async () => {
    if (daemon.exitCode !== null || daemon.signalCode !== null) return;
    const exited = new Promise((r) => daemon.once("exit", r));
    daemon.kill("SIGTERM");
    await exited;
  });
  await expect
    .poll(() => unixSocketStatus(socket, "/readyz"), { timeout: 15_000, interval: 20 })
    .toBe(200);
  return { confDir, socket, metrics: () => socketGet(socket, "/metrics") };
}

const sample = (text: string, series: string) =>
  new RegExp(`^${series.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")} (\\S+)$`, "m").exec(text)?.[1];

describe("the daemon's fleet metrics", () => {
  it("M11 plexus_build_info is the binary's version and commit; plexus_node_config_state follows the conf dir at each scrape", async () => {
    const d = await daemonWithConfDir();
    const version = (await runPlexus({ env: {}, args: ["--version"] })).stdout.trim();
    const [, v, commit] = /^(\S+) \(commit (\S+)\)$/.exec(version)!;
    let text = await d.metrics();
    expect(sample(text, `plexus_build_info{version="${v}",commit="${commit}"}`)).toBe("1");
    const states = (t: string) =>
      Object.fromEntries(
        ["plexus", "multus", "other", "none"].map((s) => [
          s,
          sample(t, `plexus_node_config_state{state="${s}"}`),
        ]),
      );
    // Only the primary network's config: the node has not switched.
    expect(states(text)).toEqual({ plexus: "0", multus: "0", other: "1", none: "0" });
    writeFileSync(join(d.confDir, "00-plexus.conflist"), PLEXUS);
    writeFileSync(join(d.confDir, "00-multus.conf"), MULTUS);
    text = await d.metrics();
    expect(states(text)).toEqual({ plexus: "0", multus: "1", other: "0", none: "0" });
    // The take-over's rename: Multus's config aside, Plexus's first.
    renameSync(join(d.confDir, "00-multus.conf"), join(d.confDir, "00-multus.conf.plexus-moved"));
    expect(states(await d.metrics())).toEqual({ plexus: "1", multus: "0", other: "0", none: "0" });
    rmSync(d.confDir, { recursive: true });
    expect(states(await d.metrics())).toEqual({ plexus: "0", multus: "0", other: "0", none: "1" });
  });

  it("M13 a TeardownAbandoned event a CNI call sends through the daemon counts in plexus_daemon_events_total", async () => {
    const d = await daemonWithConfDir();
    const kube = new DaemonKube({
      socketPath: d.socket,
      timeoutMs: 1000,
      writeTimeoutMs: 2000,
      direct: async () => undefined,
      log: silentLogger(),
    });
    cleanups.push(() => kube.close());
    const pod = { namespace: "app", name: "web" };
    const message = "teardown abandoned";
    await kube.recordEvent(pod, { type: "Warning", reason: "TeardownAbandoned", message });
    await kube.recordEvent(pod, { type: "Warning", reason: "TeardownAbandoned", message });
    await kube.recordEvent(pod, { type: "Normal", reason: "AddedInterface", message: "net1" });
    await kube.recordEvent(pod, { type: "Normal", reason: "no such reason!", message: "x" });
    const text = await d.metrics();
    const events = (type: string, reason: string) =>
      sample(text, `plexus_daemon_events_total{type="${type}",reason="${reason}"}`);
    expect(events("Warning", "TeardownAbandoned")).toBe("2");
    expect(events("Normal", "AddedInterface")).toBe("1");
    // A reason that is not a name is counted without becoming a label value of its own.
    expect(events("Normal", "Other")).toBe("1");
  });

  it("every metric deploy/monitoring/'s rules and dashboard name is declared by the daemon, the per-delegate ones included", async () => {
    const d = await daemonWithConfDir();
    const declared = declaredMetrics(await d.metrics());
    expect(declared).toContain("plexus_node_config_state");
    const monitoring = renderKustomization("monitoring");
    const used = new Set([
      ...monitoringExpressions(monitoring).flatMap((e) => checkPromql(e).metrics),
      ...templateMetrics(monitoring),
    ]);
    for (const name of [
      "plexus_daemon_cache_synced",
      "plexus_pods_missing_networks",
      "plexus_daemon_events_total",
      "plexus_build_info",
      "plexus_delegate_executions_total",
      "plexus_delegate_duration_seconds_bucket",
    ])
      expect(used).toContain(name);
    const unknown = [...used].filter((n) => !declared.has(n) && !PROMETHEUS_OWN.has(n));
    expect(unknown).toEqual([]);
    // The check is live: a name the daemon does not declare is caught.
    expect(declared.has("plexus_daemon_cache_synced_total")).toBe(false);
  });
});
