/**
 * `plexus daemon` (issue 5): the DaemonSet's long-running container. Watch caches of this node's
 * pods and of every NAD, one keep-alive API client for live reads, status writes and events, and
 * the socket API the CNI binary asks first (server.ts), and optionally /healthz, /readyz and
 * /metrics over plain HTTP on --health-address (the DaemonSet's probes). SIGTERM/SIGINT close the
 * socket (the binary then uses the API directly) and the health listener, and stop the watches.
 */
import { isIP } from "node:net";
import { hostname } from "node:os";
import { DEFAULT_DAEMON_SOCKET, DEFAULT_POD_RESOURCES_SOCKET } from "../config/plugin-conf";
import type { PodResourcesClient } from "../k8s/pod-resources";
import { loadApiBundle, loadKubeApi } from "../k8s/index";
import { readKubeconfig } from "../k8s/kubeconfig";
import { createLogger, type Logger } from "../log/logger";
import { MissingNetworksDetector } from "./missing-networks";
import { startDaemonServer } from "./server";

export interface DaemonFlags {
  kubeconfig?: string | undefined;
  nodeName?: string | undefined;
  socket?: string | undefined;
  logLevel?: string | undefined;
  apiRequestTimeout?: string | undefined;
  apiTotalTimeout?: string | undefined;
  /** HOST:PORT ([v6]:PORT) for the HTTP health/metrics listener; off when unset. */
  healthAddress?: string | undefined;
  /** Seconds a Running pod may lack its networks before the NetworksMissing event (default 30). */
  missingNetworksGrace?: string | undefined;
  /** M10: kubelet's pod-resources socket ("" turns the daemon's pod-resources route off). */
  podResourcesSocket?: string | undefined;
}

export interface RunningDaemon {
  stop(): Promise<void>;
  readonly socketPath: string;
  /** The health listener's bound address (port 0 resolved), when --health-address was given. */
  readonly healthAddress: { host: string; port: number } | undefined;
}

/** `127.0.0.1:9405`, `[::1]:9405`, `localhost:9405`; the host is required (0.0.0.0 for every address). */
export function parseHealthAddress(value: string): { host: string; port: number } {
  const m = /^(?:\[([^\]]+)\]|([^:[\]]+)):(\d{1,5})$/.exec(value);
  const host = m?.[1] ?? m?.[2];
  const port = Number(m?.[3]);
  if (!m || !host || port > 65535 || (m[1] !== undefined && isIP(m[1]) !== 6)) {
    throw new Error(
      `--health-address ${JSON.stringify(value)}: expected HOST:PORT, e.g. 127.0.0.1:9405 or [::1]:9405 (0.0.0.0:PORT for every address)`,
    );
  }
  return { host, port };
}

/** Starts the daemon; resolves once the socket listens (the caches fill in the background). */
export async function startDaemon(
  f: DaemonFlags,
  env: Readonly<Record<string, string | undefined>>,
  log: Logger,
): Promise<RunningDaemon> {
  const nodeName = f.nodeName || env.NODE_NAME || hostname();
  const socketPath = f.socket || DEFAULT_DAEMON_SOCKET;
  const healthAddress = f.healthAddress !== undefined ? parseHealthAddress(f.healthAddress) : undefined;
  const api = await loadKubeApi(
    { kubeconfig: f.kubeconfig },
    {
      env,
      log,
      client: {
        retry: {
          requestTimeoutMs: Number(f.apiRequestTimeout ?? 10) * 1000,
          totalTimeoutMs: Number(f.apiTotalTimeout ?? 30) * 1000,
        },
        // A list page is 500 objects (watch-cache.ts), at most 1.5 MiB each in etcd; the CNI
        // process keeps its 4 MiB cap.
        maxResponseBytes: 256 * 1024 * 1024,
        userAgent: "plexus-daemon",
      },
    },
  );
  if (!api)
    throw new Error("no Kubernetes configuration: pass --kubeconfig or run in-cluster (KUBERNETES_SERVICE_HOST/PORT)");
  // prom-client (metrics.ts) loads with the daemon only: a CNI call never needs it.
  const [bundle, { DaemonMetrics }] = await Promise.all([loadApiBundle(), import("./metrics")]);
  const kubeconfig = f.kubeconfig ? { path: f.kubeconfig, raw: await readKubeconfig(f.kubeconfig) } : undefined;
  const caches = new bundle.WatchCaches({ kubeconfig, nodeName, list: (path, query) => api.list(path, query), log });
  const dra = new bundle.DraCaches({ kubeconfig, nodeName, list: (path, query) => api.list(path, query), log });
  const detector = new MissingNetworksDetector({
    pods: () => caches.listPods(),
    api,
    log,
    graceMs: Number(f.missingNetworksGrace ?? 30) * 1000,
  });
  const metrics = new DaemonMetrics({
    cacheStats: () => caches.stats(),
    synced: () => caches.synced,
    draStats: () => dra.stats(),
    apiRequests: () => api.requestCount ?? 0,
    podsMissingNetworks: () => detector.flagged,
  });
  // M10: one channel to kubelet for the daemon's life, opened on the first query.
  const podResourcesSocket = f.podResourcesSocket ?? DEFAULT_POD_RESOURCES_SOCKET;
  let kubelet: PodResourcesClient | undefined;
  const podDevices = podResourcesSocket
    ? async (q: { namespace: string; name: string; resourceNames: string[]; timeoutMs: number }) => {
        kubelet ??= new (await import("../k8s/pod-resources")).PodResourcesClient(podResourcesSocket);
        return kubelet.devices(q);
      }
    : undefined;
  let server: Awaited<ReturnType<typeof startDaemonServer>>;
  try {
    server = await startDaemonServer({ socketPath, cache: caches, dra, api, log, healthAddress, metrics, podDevices });
  } catch (err) {
    await api.close();
    throw err;
  }
  void dra.start();
  void caches.start().then(() => log.info({ node: nodeName, ...caches.stats() }, "watch caches synced"));
  detector.start();
  return {
    socketPath,
    healthAddress: server.healthAddress
      ? { host: server.healthAddress.address, port: server.healthAddress.port }
      : undefined,
    async stop() {
      await detector.stop();
      await server.close();
      await caches.stop();
      await dra.stop();
      kubelet?.close();
      await api.close();
    },
  };
}

export async function daemonMain(f: DaemonFlags): Promise<number> {
  const log = await createLogger(
    { logLevel: f.logLevel ?? "info", logToStderr: true, pretty: process.stderr.isTTY === true },
    { component: "daemon" },
  );
  let daemon: RunningDaemon;
  try {
    daemon = await startDaemon(f, process.env, log);
  } catch (err) {
    log.error({ err: err instanceof Error ? err.message : String(err) }, "daemon failed to start");
    return 1;
  }
  await new Promise<void>((resolve) => {
    const onSignal = (sig: string) => {
      log.info({ signal: sig }, "signal received; stopping");
      resolve();
    };
    process.once("SIGTERM", onSignal);
    process.once("SIGINT", onSignal);
  });
  await daemon.stop();
  return 0;
}
