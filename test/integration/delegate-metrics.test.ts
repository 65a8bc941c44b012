/**
 * M20: per-delegate metrics through dist/plexus. A pod's ADD and DEL run with `plexus daemon`
 * on the node (the fake API server behind it); each delegate run the CNI process made reaches the
 * daemon's /metrics as `plexus_delegate_executions_total{plugin_type,verb,result}` and
 * `plexus_delegate_duration_seconds{plugin_type,verb}`. The hand-off never waits on the daemon:
 * an ADD whose daemon socket is a listener that never answers exits 0 with its result. Plugin
 * types come from tenants' NADs: a flood of distinct names stays within the label bound.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { request } from "node:http";
import { createServer, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it, onTestFinished } from "vitest";
import { delegateRunLog } from "../../src/daemon-client/delegate-runs";
import { startFakeApiServer, writeKubeconfig } from "../support/fake-apiserver";
import {
  cniError,
  PLEXUS_BIN,
  runPlexus,
  singleJson,
  TEST_PATH,
  unixSocketStatus,
} from "../support/plexus-bin";
import { useSandbox } from "./use-sandbox";

const ctx = useSandbox();
const NETWORKS = "k8s.v1.cni.cncf.io/networks";
const POD_ARGS = "IgnoreUnknown=1;K8S_POD_NAMESPACE=app;K8S_POD_NAME=web;K8S_POD_UID=uid-web";
/** The daemon's bound on distinct plugin_type values (daemon/metrics.ts). */
const MAX_PLUGIN_TYPES = 64;

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

/** The fake cluster (pod app/web asking for net-beta) and `plexus daemon` for node-1 on it. */
async function nodeWithDaemon(netBeta: Record<string, unknown>) {
  const api = await startFakeApiServer();
  onTestFinished(() => api.close());
  api.addPod({
    metadata: {
      namespace: "app",
      name: "web",
      uid: "uid-web",
      annotations: { [NETWORKS]: "net-beta" },
    },
    spec: { nodeName: "node-1" },
  });
  api.addNad({
    metadata: { namespace: "app", name: "net-beta" },
    spec: { config: JSON.stringify(netBeta) },
  });
  // The daemon's own directory: it outlives the sandbox's check for leftover processes.
  const dir = mkdtempSync(join(tmpdir(), "plx-delegate-metrics-"));
  onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
  const kubeconfig = writeKubeconfig(api, { dir, tokenFile: true });
  const socket = join(dir, "plexus.sock");
  const args = ["daemon", "--kubeconfig", kubeconfig, "--node-name", "node-1"];
  args.push("--socket", socket, "--pod-resources-socket", "", "--housekeeping-interval", "0");
  const daemon: ChildProcess = spawn(PLEXUS_BIN, args, { cwd: "/", stdio: "ignore" });
  onTestFinished(async () => {
    if (daemon.exitCode !== null || daemon.signalCode !== null) return;
    const exited = new Promise((r) => daemon.once("exit", r));
    daemon.kill("SIGTERM");
    await exited;
  });
  await expect
    .poll(() => unixSocketStatus(socket, "/readyz"), { timeout: 15_000, interval: 20 })
    .toBe(200);
  return { api, kubeconfig, socket, metrics: () => socketGet(socket, "/metrics") };
}

/** The samples (`series value`) whose series starts with `prefix`, sorted. */
function samples(text: string, prefix: string): string[] {
  return text
    .split("\n")
    .filter((line) => line.startsWith(prefix))
    .sort();
}

/** A unix socket that accepts connections and keeps what they send, and never answers. */
async function hungListener(path: string): Promise<{ received: () => string }> {
  let received = "";
  const sockets = new Set<Socket>();
  const server = createServer((s) => {
    sockets.add(s);
    s.on("data", (chunk) => (received += chunk.toString("utf8")));
    s.on("error", () => {});
  });
  await new Promise<void>((resolve) => server.listen(path, resolve));
  onTestFinished(async () => {
    for (const s of sockets) s.destroy();
    await new Promise((r) => server.close(r));
    rmSync(path, { force: true });
  });
  return { received: () => received };
}

describe("M20 per-delegate metrics on the node daemon's /metrics", () => {
  it("M20 an ADD and a DEL through the daemon: each delegate run counted by plugin type, verb and result (a failing DEL as 7), with its duration", async () => {
    const { sb } = ctx;
    const beta = sb.delegate("net-beta", {
      type: "beta",
      behaviours: { DEL: { do: "error", error: { code: 7, msg: "beta refuses" } } },
    });
    const node = await nodeWithDaemon(beta);
    const conf = sb.config([sb.delegate("net-alpha", { type: "alpha" })], {
      kubeconfig: node.kubeconfig,
      daemonSocket: node.socket,
    });
    const add = await sb.run("ADD", conf, { CNI_ARGS: POD_ARGS });
    expect(add.code, add.stdout + add.stderr).toBe(0);
    const del = await sb.run("DEL", conf, { CNI_ARGS: POD_ARGS });
    expect(cniError(del).code).toBe(7);
    expect(sb.calls()).toEqual(["ADD net-alpha", "ADD net-beta", "DEL net-beta", "DEL net-alpha"]);
    const count = 'plexus_delegate_executions_total{plugin_type="beta",verb="DEL",result="7"}';
    await expect
      .poll(async () => samples(await node.metrics(), count), { timeout: 5000 })
      .toEqual([`${count} 1`]);
    const text = await node.metrics();
    expect(samples(text, "plexus_delegate_executions_total{")).toEqual([
      'plexus_delegate_executions_total{plugin_type="alpha",verb="ADD",result="success"} 1',
      'plexus_delegate_executions_total{plugin_type="alpha",verb="DEL",result="success"} 1',
      'plexus_delegate_executions_total{plugin_type="beta",verb="ADD",result="success"} 1',
      'plexus_delegate_executions_total{plugin_type="beta",verb="DEL",result="7"} 1',
    ]);
    expect(samples(text, "plexus_delegate_duration_seconds_count{")).toEqual([
      'plexus_delegate_duration_seconds_count{plugin_type="alpha",verb="ADD"} 1',
      'plexus_delegate_duration_seconds_count{plugin_type="alpha",verb="DEL"} 1',
      'plexus_delegate_duration_seconds_count{plugin_type="beta",verb="ADD"} 1',
      'plexus_delegate_duration_seconds_count{plugin_type="beta",verb="DEL"} 1',
    ]);
    // A run's time is the delegate process's: more than nothing, and within the call's.
    for (const line of samples(text, "plexus_delegate_duration_seconds_sum{")) {
      const seconds = Number(line.split(" ").pop());
      expect(seconds, line).toBeGreaterThan(0);
      expect(seconds * 1000, line).toBeLessThan(Math.max(add.durationMs, del.durationMs));
    }
  });

  it("M20 a hot-plug pass, a process of its own, hands its delegate runs to the daemon too", async () => {
    const { sb } = ctx;
    const node = await nodeWithDaemon(sb.delegate("net-beta", { type: "beta" }));
    const conf = sb.config([sb.delegate("net-alpha", { type: "alpha" })], {
      kubeconfig: node.kubeconfig,
      daemonSocket: node.socket,
    });
    const add = await sb.run("ADD", conf, { CNI_ARGS: POD_ARGS });
    expect(add.code, add.stdout + add.stderr).toBe(0);
    // The pod's user asks for one more network; the daemon's reconcile runs `plexus hotplug`.
    const gamma = sb.delegate("net-gamma", { type: "gamma" });
    node.api.addNad({
      metadata: { namespace: "app", name: "net-gamma" },
      spec: { config: JSON.stringify(gamma) },
    });
    const pod = node.api.getPod("app", "web")!;
    const written = pod.metadata.annotations as Record<string, string>;
    const annotations = { ...written, [NETWORKS]: "net-beta, net-gamma" };
    node.api.addPod({ ...pod, metadata: { ...pod.metadata, annotations } });
    const confDir = join(sb.root, "net.d");
    mkdirSync(confDir);
    writeFileSync(join(confDir, "00-plexus.conf"), JSON.stringify(conf));
    const pass = await runPlexus({
      env: { PATH: TEST_PATH, PLX_IT_MARK: sb.marker },
      args: [
        "hotplug",
        "app/web",
        "-o",
        "json",
        "--cni-conf-dir",
        confDir,
        "--cni-path",
        sb.binDir,
      ],
      cwd: sb.root,
    });
    expect(pass.code, pass.stdout + pass.stderr).toBe(0);
    expect(singleJson(pass.stdout)).toMatchObject({ attached: [expect.anything()] });
    const gammaAdd = 'plexus_delegate_executions_total{plugin_type="gamma",verb="ADD"';
    await expect
      .poll(async () => samples(await node.metrics(), gammaAdd), { timeout: 5000 })
      .toEqual([`${gammaAdd},result="success"} 1`]);
  });

  it("M20 an ADD whose daemon socket never answers exits 0 with its result: the runs were written, no answer awaited", async () => {
    const { sb } = ctx;
    const socket = join(sb.root, "hung.sock");
    const listener = await hungListener(socket);
    const conf = sb.config([sb.delegate("net-alpha", { type: "alpha" })], {
      daemonSocket: socket,
    });
    const add = await sb.run("ADD", conf);
    expect(add.code, add.stdout + add.stderr).toBe(0);
    expect(singleJson(add.stdout)).toMatchObject({ interfaces: [{ name: "eth0" }] });
    // The hand-off reached the listener, which has not answered to this day.
    await expect.poll(listener.received, { timeout: 5000 }).toMatch(/"pluginType":"alpha"/);
    expect(listener.received()).toMatch(/^POST \/v1\/delegate-runs HTTP\/1\.1\r\n/);
    expect(listener.received()).toMatch(/"verb":"ADD","durationMs":[\d.e+-]+,"result":"success"/);
  });

  it("M20 a flood of distinct plugin types stays within the label bound; a type with no binary on the node is no run at all", async () => {
    const { sb } = ctx;
    const node = await nodeWithDaemon(sb.delegate("net-beta", { type: "beta" }));
    // A tenant's NAD naming a plugin the node does not have: the ADD fails, nothing ran.
    const ghost = { cniVersion: "1.0.0", name: "net-ghost", type: "ghost-plugin-0" };
    const refused = await sb.run("ADD", sb.config([ghost], { daemonSocket: node.socket }));
    expect(cniError(refused).code).toBe(7);
    // Many distinct names, as a node's CNI calls would hand them over if each had a binary.
    const runs = delegateRunLog(node.socket);
    const flood = 3 * MAX_PLUGIN_TYPES;
    for (let i = 0; i < flood; i++)
      runs.observe({ pluginType: `tenant-${i}`, verb: "ADD", durationMs: 1, result: "success" });
    runs.observe({ pluginType: "bad\nname", verb: "ADD", durationMs: 1, result: 12345 });
    await runs.handOff();
    const total = (t: string) =>
      samples(t, "plexus_delegate_executions_total{")
        .map((l) => Number(l.split(" ").pop()))
        .reduce((a, b) => a + b, 0);
    await expect.poll(async () => total(await node.metrics()), { timeout: 5000 }).toBe(flood + 1);
    const text = await node.metrics();
    const types = new Set(
      samples(text, "plexus_delegate_executions_total{").map(
        (l) => /plugin_type="([^"]*)"/.exec(l)![1],
      ),
    );
    expect(types.size).toBe(MAX_PLUGIN_TYPES + 1);
    expect(types.has("other")).toBe(true);
    expect(types.has("ghost-plugin-0")).toBe(false);
    expect(samples(text, 'plexus_delegate_executions_total{plugin_type="other"')).toEqual([
      `plexus_delegate_executions_total{plugin_type="other",verb="ADD",result="other"} 1`,
      `plexus_delegate_executions_total{plugin_type="other",verb="ADD",result="success"} ` +
        `${flood - MAX_PLUGIN_TYPES}`,
    ]);
    const histogram = samples(text, "plexus_delegate_duration_seconds_count{");
    expect(histogram).toHaveLength(MAX_PLUGIN_TYPES + 1);
  });
});
