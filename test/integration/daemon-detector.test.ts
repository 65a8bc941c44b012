/**
 * The daemon's NetworksMissing detector against the fake API server: a pod Running
 * since before the daemon started, and one whose runtime never ran Plexus (Running, no
 * network-status), each get one Warning event and count in plexus_pods_missing_networks; pods with
 * their networks, hostNetwork pods and pods not Running get none; the detector makes no API read
 * (watches only). /metrics also carries prom-client's default process metrics.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { request } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { startDaemon } from "../../src/daemon/main";
import { silentLogger } from "../../src/log/logger";
import { NETWORK_STATUS_ANNOTATION, NETWORKS_ANNOTATION } from "../../src/npwg/types";
import { type FakeApiServer, startFakeApiServer, writeKubeconfig } from "../support/fake-apiserver";

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

function daemonGet(socket: string, path: string): Promise<string> {
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

const running = { phase: "Running" };
const withStatus = (networks: string) => ({
  [NETWORKS_ANNOTATION]: networks,
  [NETWORK_STATUS_ANNOTATION]: JSON.stringify([
    { name: "cbr0", interface: "eth0", default: true },
    { name: "app/net-a", interface: "net1", default: false },
  ]),
});

/**
 * The pods on the server before the daemon starts: one Running without its networks (it gets an
 * event), and four that must not: one with its networks, a hostNetwork pod, a Pending pod and a
 * pod of another node.
 */
function addPodsBeforeDaemon(server: FakeApiServer): void {
  const node = { nodeName: "node-1" };
  const asking = { [NETWORKS_ANNOTATION]: "net-a" };
  server.addPod({
    metadata: { name: "before", namespace: "app", uid: "uid-before", annotations: asking },
    spec: node,
    status: running,
  });
  server.addPod({
    metadata: { name: "fine", namespace: "app", annotations: withStatus("net-a") },
    spec: node,
    status: running,
  });
  server.addPod({
    metadata: { name: "host", namespace: "app", annotations: asking },
    spec: { ...node, hostNetwork: true },
    status: running,
  });
  server.addPod({
    metadata: { name: "pending", namespace: "app", annotations: asking },
    spec: node,
    status: { phase: "Pending" },
  });
  server.addPod({
    metadata: { name: "other-node", namespace: "app", annotations: asking },
    spec: { nodeName: "node-2" },
    status: running,
  });
}

/** The daemon of node-1 on `socket`, stopped after the test, once /readyz says it is ready. */
async function startReadyDaemon({ kubeconfig, socket }: { kubeconfig: string; socket: string }) {
  const d = await startDaemon(
    {
      kubeconfig,
      nodeName: "node-1",
      socket,
      apiRequestTimeout: "1",
      apiTotalTimeout: "3",
      missingNetworksGrace: "0.2",
    },
    {},
    silentLogger(),
  );
  cleanups.push(() => d.stop());
  await expect.poll(async () => daemonGet(socket, "/readyz"), { timeout: 5000 }).toContain("true");
}

/** The metric counts both pods; /metrics also carries prom-client's default process metrics. */
async function expectMissingMetric(socket: string): Promise<void> {
  const metrics = await daemonGet(socket, "/metrics");
  expect(metrics).toMatch(/^plexus_pods_missing_networks 2$/m);
  for (const name of [
    "process_cpu_user_seconds_total",
    "process_resident_memory_bytes",
    "nodejs_eventloop_lag_seconds",
    "nodejs_heap_size_used_bytes",
  ])
    expect(metrics).toContain(name);
}

describe("plexus daemon: pods Running without the networks they asked for", () => {
  it("one NetworksMissing event per pod (one from before the daemon, one a runtime set up without Plexus), counted in the metric; no API reads", async () => {
    const s = await startFakeApiServer();
    cleanups.push(() => s.close());
    const dir = mkdtempSync(join(tmpdir(), "plx-detector-"));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    const kubeconfig = writeKubeconfig(s, { dir, tokenFile: true });
    addPodsBeforeDaemon(s);
    const socket = join(dir, "plexus.sock");
    await startReadyDaemon({ kubeconfig, socket });
    s.addPod({
      metadata: {
        name: "skipped",
        namespace: "app",
        uid: "uid-skipped",
        annotations: { [NETWORKS_ANNOTATION]: "net-a,net-b@data0" },
      },
      spec: { nodeName: "node-1" },
      status: running,
    });

    const missing = () => s.events().filter((e) => e.reason === "NetworksMissing");
    await expect.poll(() => missing().length, { timeout: 8000 }).toBe(2);
    const byPod = Object.fromEntries(
      missing().map((e) => [(e.involvedObject as { name: string }).name, e]),
    );
    expect(Object.keys(byPod).sort()).toEqual(["before", "skipped"]);
    expect(byPod.before).toMatchObject({
      type: "Warning",
      involvedObject: { uid: "uid-before" },
      message: expect.stringContaining("app/net-a"),
    });
    expect(byPod.skipped!.message).toContain("app/net-a, app/net-b@data0");
    expect(byPod.skipped!.message).toContain("no network-status at all");
    await expectMissingMetric(socket);

    // Once per UID: more scans write nothing more; no GET beyond the lists and watches.
    await new Promise((r) => setTimeout(r, 2500));
    expect(missing()).toHaveLength(2);
    const reads = s.requests.filter(
      (q) =>
        q.method === "GET" &&
        !/^\/api\/v1\/pods$|network-attachment-definitions$|^\/apis\/resource\.k8s\.io\/v1\/resource(claims|slices)$/.test(
          q.path,
        ),
    );
    expect(reads).toEqual([]);
  });
});
