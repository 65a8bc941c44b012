/**
 * A CNI call's questions to `plexus daemon` on the path that ships: Bun's fetch on the daemon's
 * unix socket (`socketTransport` in kubeapi/http-transport.ts, used by daemon-client/client.ts and
 * daemon-client/pod-devices-client.ts), run by Bun (ask-daemon.ts), against the daemon's own
 * server (daemon/server.ts) started here with its caches and API client in memory (FakeKube). Under
 * Node the same client goes through `node:http`.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it, onTestFinished } from "vitest";
import { Code } from "../../../src/cni/errors";
import { DaemonMetrics } from "../../../src/daemon/metrics";
import { type CacheView, startDaemonServer } from "../../../src/daemon/server";
import { silentLogger } from "../../../src/log/logger";
import { FakeKube } from "../../fakes/fake-kube";
import { runHarness } from "./bun-harness";

const RESOURCE = "intel.com/sriov";

/** The daemon's server on a socket of its own; `cached` is what its watch caches hold. */
async function daemon() {
  const dir = mkdtempSync(join(tmpdir(), "plx-shipped-daemon-"));
  const socketPath = join(dir, "daemon.sock");
  const cached = new FakeKube().addPod("ns", "p").addNad("ns", "net-a", { type: "bridge" });
  // The API server behind the daemon, for its live reads and writes.
  const api = new FakeKube().addPod("ns", "p");
  const cache: CacheView = {
    synced: true,
    pod: (namespace, name) => cached.pods.get(`${namespace}/${name}`),
    nad: (namespace, name) => cached.nads.get(`${namespace}/${name}`),
    stats: () => ({
      pods: cached.pods.size,
      nads: cached.nads.size,
      restarts: { pods: 0, nads: 0 },
      lists: { pods: 1, nads: 1 },
      errors: { pods: 0, nads: 0 },
    }),
  };
  const metrics = new DaemonMetrics(
    {
      cacheStats: () => cache.stats(),
      synced: () => true,
      apiRequests: () => api.requestCount,
      podsMissingNetworks: () => 0,
    },
    { defaultMetrics: false },
  );
  const podDevices = async (q: { name: string }) => new Map([[RESOURCE, [`${q.name}-vf0`]]]);
  const server = await startDaemonServer({
    socketPath,
    cache,
    api,
    log: silentLogger(),
    metrics,
    podDevices,
  });
  onTestFinished(async () => {
    await server.close();
    rmSync(dir, { recursive: true, force: true });
  });
  return { socketPath, api };
}

describe("a CNI call asks the daemon over Bun's fetch on its socket, run by Bun", () => {
  it("pod, NAD, status write and devices all through the daemon: no fallback", async () => {
    const { socketPath, api } = await daemon();
    const status = '[{"name":"ns/net-a","interface":"net1"}]';
    const reply = await runHarness("ask-daemon", {
      socketPath,
      asks: [
        { method: "getPod", args: ["ns", "p"] },
        { method: "getNad", args: ["ns", "net-a"] },
        {
          method: "setNetworkStatus",
          args: [{ namespace: "ns", name: "p", uid: "uid-p" }, status],
        },
        { method: "podDevices", args: ["ns", "p", [RESOURCE]] },
      ],
    });
    const [pod, nad, written, devices] = reply.answers as Array<{ ok: boolean; value: any }>;
    expect(pod).toMatchObject({ ok: true, value: { metadata: { name: "p", uid: "uid-p" } } });
    expect(nad).toMatchObject({ ok: true, value: { spec: { config: '{"type":"bridge"}' } } });
    expect(written).toEqual({ ok: true, value: null });
    expect(devices).toEqual({ ok: true, value: { [RESOURCE]: ["p-vf0"] } });
    expect(api.statuses).toEqual([{ pod: expect.objectContaining({ name: "p" }), value: status }]);
    expect(reply).toMatchObject({ daemonRequests: 3 });
    expect(reply.fallbackReason).toBeUndefined();
  });

  it("the daemon's own answer crosses the socket: a pod that does not exist is 3", async () => {
    const { socketPath, api } = await daemon();
    const reply = await runHarness("ask-daemon", {
      socketPath,
      asks: [{ method: "getPod", args: ["ns", "gone"] }],
    });
    expect(reply.answers).toEqual([
      { ok: false, code: Code.UnknownContainer, message: "pod ns/gone does not exist" },
    ]);
    expect(api.calls).toEqual(["getPod ns/gone"]);
    expect(reply.fallbackReason).toBeUndefined();
  });

  it("no daemon at the socket: given up on, naming it; no direct client: 104", async () => {
    const dir = mkdtempSync(join(tmpdir(), "plx-shipped-nodaemon-"));
    onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
    const socketPath = join(dir, "daemon.sock");
    const reply = await runHarness("ask-daemon", {
      socketPath,
      asks: [{ method: "getPod", args: ["ns", "p"] }],
    });
    const [answer] = reply.answers as Array<{ ok: boolean; code: number; message: string }>;
    expect(answer).toMatchObject({ ok: false, code: Code.ApiFailure });
    expect(answer!.message).toContain("the plexus daemon is unavailable");
    expect(reply.fallbackReason).toContain(socketPath);
  });
});
