/**
 * `plexus daemon`: the DaemonSet's long-running container. Watch caches of this node's
 * pods and of every NAD (and, M10, this node's ResourceSlices and its pods' ResourceClaims), one
 * keep-alive API client for live reads, status writes and events, and the socket API the CNI binary
 * asks first (server.ts), and optionally /healthz, /readyz and /metrics over plain HTTP on
 * --health-address (the DaemonSet's probes). SIGTERM/SIGINT close the socket (the binary then uses
 * the API directly) and the health listener, and stop the watches.
 * With a housekeeping pass (the CLI wires ops/housekeeping.ts), a timer retries the node's records
 * of failed DELs off every pod's path (nodestate/pending.ts).
 */
import { isIP } from "node:net";
import { hostname } from "node:os";
import {
  DAEMON_DEFAULT_SECONDS,
  DEFAULT_CONF_DIR,
  DEFAULT_DAEMON_SOCKET,
  DEFAULT_POD_RESOURCES_SOCKET,
} from "../config/defaults";
import { readRuntimeConfig } from "../install/config-state";
import { kubeletDevices } from "../kubelet/pod-devices";
import { loadKubeApi } from "../kubeapi/index";
import { createLogger, type Logger } from "../log/logger";
import { Limiter } from "../watch/limiter";
import { HotplugReconciler, parseConcurrency, parseNamespaces, type HotplugPass } from "./hotplug";
import { MissingNetworksDetector } from "./missing-networks";
import { startDaemonServer } from "./server";
import { ExitCode } from "../command/exit-codes";

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
  /** Seconds between housekeeping passes (default 30); "0" turns housekeeping off. */
  housekeepingInterval?: string | undefined;
  /** Reconcile running pods' networks with their annotation (hotplug.ts); off unless set. */
  hotPlug?: boolean | string | undefined;
  /** Comma-separated namespaces hot-plug is limited to (unset: all). */
  hotPlugNamespaces?: string | undefined;
  /** Hot-plug reconciles (and ResourceClaim reads ahead) at a time on the node (default 4). */
  hotPlugConcurrency?: string | undefined;
  /** The node's CNI conf dir as mounted here: whose config the runtime runs (the metrics). */
  cniConfDir?: string | undefined;
}

/**
 * One housekeeping pass (`plexus records retry`, run by the CLI as a process of its own); it may
 * throw, the timer logs it and goes on.
 */
export type HousekeepingPass = (o: { intervalMs: number; log: Logger }) => Promise<unknown>;

export interface RunningDaemon {
  stop(): Promise<void>;
  readonly socketPath: string;
  /** The health listener's bound address (port 0 resolved), when --health-address was given. */
  readonly healthAddress: { host: string; port: number } | undefined;
}

/**
 * `127.0.0.1:9405`, `[::1]:9405`, `localhost:9405`; the host is required (0.0.0.0 for every
 * address).
 */
export function parseHealthAddress(value: string): { host: string; port: number } {
  const m = /^(?:\[([^\]]+)\]|([^:[\]]+)):(\d{1,5})$/.exec(value);
  const host = m?.[1] ?? m?.[2];
  const port = Number(m?.[3]);
  if (!m || !host || port > 65535 || (m[1] !== undefined && isIP(m[1]) !== 6)) {
    throw new Error(
      `--health-address ${JSON.stringify(value)}: expected HOST:PORT, e.g. 127.0.0.1:9405 or ` +
        `[::1]:9405 (0.0.0.0:PORT for every address)`,
    );
  }
  return { host, port };
}

/**
 * The daemon's flags, checked and with their defaults: a wrong value is a usage error before
 * anything starts.
 */
export interface DaemonSettings {
  kubeconfig: string | undefined;
  nodeName: string;
  socketPath: string;
  healthAddress: { host: string; port: number } | undefined;
  requestTimeoutMs: number;
  totalTimeoutMs: number;
  missingNetworksGraceMs: number;
  podResourcesSocket: string;
  /** 0: no housekeeping timer. */
  housekeepingIntervalMs: number;
  hotPlug: boolean;
  hotPlugNamespaces: ReadonlySet<string> | undefined;
  hotPlugConcurrency: number;
  confDir: string;
}

/**
 * A flag in seconds: a finite number above 0 (`abc` would make every timeout NaN, that is none).
 */
function seconds(value: string | undefined, flag: string, fallback: number): number {
  if (value === undefined) return fallback * 1000;
  const n = Number(value);
  if (value.trim() === "" || !Number.isFinite(n) || n <= 0)
    throw new Error(
      `--${flag} ${JSON.stringify(value)}: expected a number of seconds greater than 0, e.g. ` +
        `${fallback}`,
    );
  return n * 1000;
}

export function resolveDaemonFlags(
  flags: DaemonFlags,
  env: Readonly<Record<string, string | undefined>>,
): DaemonSettings {
  return {
    kubeconfig: flags.kubeconfig,
    nodeName: flags.nodeName || env.NODE_NAME || hostname(),
    socketPath: flags.socket || DEFAULT_DAEMON_SOCKET,
    healthAddress:
      flags.healthAddress !== undefined ? parseHealthAddress(flags.healthAddress) : undefined,
    requestTimeoutMs: seconds(
      flags.apiRequestTimeout,
      "api-request-timeout",
      DAEMON_DEFAULT_SECONDS.apiRequestTimeout,
    ),
    totalTimeoutMs: seconds(
      flags.apiTotalTimeout,
      "api-total-timeout",
      DAEMON_DEFAULT_SECONDS.apiTotalTimeout,
    ),
    missingNetworksGraceMs: seconds(
      flags.missingNetworksGrace,
      "missing-networks-grace",
      DAEMON_DEFAULT_SECONDS.missingNetworksGrace,
    ),
    podResourcesSocket: flags.podResourcesSocket ?? DEFAULT_POD_RESOURCES_SOCKET,
    housekeepingIntervalMs: housekeepingMs(flags.housekeepingInterval),
    hotPlug: flags.hotPlug === true || flags.hotPlug === "true",
    hotPlugNamespaces: parseNamespaces(flags.hotPlugNamespaces),
    hotPlugConcurrency: parseConcurrency(flags.hotPlugConcurrency),
    confDir: flags.cniConfDir || DEFAULT_CONF_DIR,
  };
}

/**
 * `--housekeeping-interval`: seconds above 0 and at most an hour (DELs believe a stamp at most
 * twice that far ahead, record.ts), or "0" for no housekeeping timer.
 */
function housekeepingMs(value: string | undefined): number {
  if (value?.trim() === "0") return 0;
  const ms = seconds(value, "housekeeping-interval", DAEMON_DEFAULT_SECONDS.housekeepingInterval);
  if (ms > 3600_000) throw new Error(`--housekeeping-interval ${value}: at most 3600 seconds`);
  return ms;
}

/**
 * How long stop() may take: a watch or an API close that hangs must not keep a terminating pod
 * alive.
 */
const STOP_TIMEOUT_MS = 10_000;

type ApiClient = NonNullable<Awaited<ReturnType<typeof loadKubeApi>>>;

async function connectApi(
  settings: DaemonSettings,
  env: Readonly<Record<string, string | undefined>>,
  log: Logger,
) {
  const api = await loadKubeApi(
    { kubeconfig: settings.kubeconfig },
    {
      env,
      log,
      client: {
        retry: {
          requestTimeoutMs: settings.requestTimeoutMs,
          totalTimeoutMs: settings.totalTimeoutMs,
        },
        // A list page is 500 objects (watch/watch-cache.ts), at most 1.5 MiB each in etcd; the CNI
        // process keeps its 4 MiB cap.
        maxResponseBytes: 256 * 1024 * 1024,
        userAgent: "plexus-daemon",
      },
    },
  );
  if (!api)
    throw new Error(
      "no Kubernetes configuration: pass --kubeconfig or run in-cluster " +
        "(KUBERNETES_SERVICE_HOST/PORT)",
    );
  return api;
}

/** The watch caches, the missing-networks detector and the metrics over them (none started yet). */
async function buildServices(settings: DaemonSettings, api: ApiClient, log: Logger) {
  // The watch caches (@kubernetes/client-node) and prom-client (metrics.ts) load with the daemon
  // only: a CNI call never needs them.
  const [{ WatchCaches }, { DraCaches }, { DaemonMetrics }] = await Promise.all([
    import("../watch/watch-cache"),
    import("../watch/dra-watch"),
    import("./metrics"),
  ]);
  const watchOptions = {
    source: api.source,
    nodeName: settings.nodeName,
    list: (path: string, query: Record<string, string>) => api.list(path, query),
    log,
  };
  const caches = new WatchCaches(watchOptions);
  // One limiter of the node's background work: hot-plug reconciles and claim reads ahead.
  const limiter = new Limiter(settings.hotPlugConcurrency);
  const getClaim = (namespace: string, name: string) =>
    api.read("resourceClaim", { namespace, name });
  const dra = new DraCaches({ ...watchOptions, getClaim, limiter });
  caches.onPodEvent((event, pod) => dra.podEvent(event, pod));
  const detector = new MissingNetworksDetector({
    pods: () => caches.listPods(),
    api,
    log,
    graceMs: settings.missingNetworksGraceMs,
  });
  const metrics = new DaemonMetrics({
    cacheStats: () => caches.stats(),
    synced: () => caches.synced,
    draStats: () => dra.stats(),
    apiRequests: () => api.requestCount ?? 0,
    podsMissingNetworks: () => detector.flagged,
    nodeConfigState: () => readRuntimeConfig(settings.confDir).state,
  });
  return { caches, dra, detector, metrics, limiter };
}

/**
 * M10: one channel to kubelet for the daemon's life, opened on the first query ("" turns it off).
 */
function podDevicesChannel(socket: string) {
  const kubelet = socket ? kubeletDevices(socket) : undefined;
  const query = kubelet
    ? (q: { namespace: string; name: string; resourceNames: string[]; timeoutMs: number }) =>
        kubelet.devices(q)
    : undefined;
  return { query, close: () => kubelet?.close() };
}

/**
 * Runs `pass` now and then every `intervalMs` after the previous pass ended (passes never
 * overlap); a pass that throws is logged. stop() waits for a pass under way.
 */
export function startHousekeeping(
  pass: HousekeepingPass | undefined,
  options: { intervalMs: number; log: Logger },
): { stop(): Promise<void> } {
  if (!pass || options.intervalMs <= 0) return { stop: async () => {} };
  const log = options.log.child({ component: "housekeeping" });
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> | undefined;
  let stopped = false;
  let lastError = "";
  const run = () => {
    running = pass({ intervalMs: options.intervalMs, log })
      .then(
        () => {
          lastError = "";
        },
        (err: unknown) => {
          const message = err instanceof Error ? err.message : String(err);
          // Once per cause (a node without a Plexus config would say so every pass).
          if (message === lastError) log.debug({ err: message }, "housekeeping pass failed");
          else log.warn({ err: message }, "housekeeping pass failed");
          lastError = message;
        },
      )
      .finally(() => {
        if (!stopped) timer = setTimeout(run, options.intervalMs);
      });
  };
  timer = setTimeout(run, 0);
  return {
    stop: async () => {
      stopped = true;
      clearTimeout(timer);
      await running;
    },
  };
}

type Services = Awaited<ReturnType<typeof buildServices>>;

/** With --hot-plug: the reconciler, fed by the pod watch (registered before the caches start). */
function startHotplug(
  settings: DaemonSettings,
  services: Pick<Services, "caches" | "metrics" | "limiter"> & {
    pass: HotplugPass | undefined;
    log: Logger;
  },
): HotplugReconciler | undefined {
  if (!settings.hotPlug || !services.pass) return undefined;
  const reconciler = new HotplugReconciler({
    pass: services.pass,
    log: services.log,
    namespaces: settings.hotPlugNamespaces,
    metrics: services.metrics,
    limiter: services.limiter,
  });
  services.caches.onPodEvent((how, pod) => reconciler.observe(pod, how));
  services.log.info(
    {
      namespaces: settings.hotPlugNamespaces ? [...settings.hotPlugNamespaces] : "all",
      concurrency: settings.hotPlugConcurrency,
    },
    "hot-plug on",
  );
  return reconciler;
}

/** Runs `stop`, but returns after STOP_TIMEOUT_MS whatever it still waits for, with a warning. */
export async function bounded(
  stop: () => Promise<void>,
  log: Logger,
  timeoutMs = STOP_TIMEOUT_MS,
): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<"timeout">((resolve) => {
    timer = setTimeout(() => resolve("timeout"), timeoutMs);
  });
  const outcome = await Promise.race([stop().then(() => "done" as const), timeout]).finally(() =>
    clearTimeout(timer),
  );
  if (outcome === "timeout")
    log.warn(
      { timeoutMs },
      "the daemon did not stop within its bound (a watch or API connection hangs); exiting anyway",
    );
}

/** Starts the daemon; resolves once the socket listens (the caches fill in the background). */
export async function startDaemon(
  flags: DaemonFlags,
  env: Readonly<Record<string, string | undefined>>,
  log: Logger,
  housekeeping?: HousekeepingPass,
  hotplug?: HotplugPass,
): Promise<RunningDaemon> {
  const s = resolveDaemonFlags(flags, env);
  const api = await connectApi(s, env, log);
  const { caches, dra, detector, metrics, limiter } = await buildServices(s, api, log);
  const kubelet = podDevicesChannel(s.podResourcesSocket);
  let server: Awaited<ReturnType<typeof startDaemonServer>>;
  try {
    server = await startDaemonServer({
      socketPath: s.socketPath,
      cache: caches,
      dra,
      api,
      log,
      healthAddress: s.healthAddress,
      metrics,
      podDevices: kubelet.query,
    });
  } catch (err) {
    await api.close();
    throw err;
  }
  const reconciler = startHotplug(s, { pass: hotplug, caches, metrics, limiter, log });
  void dra.start();
  void caches
    .start()
    .then(() => log.info({ node: s.nodeName, ...caches.stats() }, "watch caches synced"));
  detector.start();
  const intervalMs = s.housekeepingIntervalMs;
  const keeper = startHousekeeping(housekeeping, { intervalMs, log });
  return {
    socketPath: s.socketPath,
    healthAddress: server.healthAddress
      ? { host: server.healthAddress.address, port: server.healthAddress.port }
      : undefined,
    stop: () =>
      bounded(async () => {
        await detector.stop();
        await keeper.stop();
        await reconciler?.stop();
        await server.close();
        await caches.stop();
        await dra.stop();
        kubelet.close();
        await api.close();
      }, log),
  };
}

/** What the CLI wires: each a process of its own (cli/housekeeping-pass.ts, hotplug-pass.ts). */
export interface DaemonPasses {
  housekeeping?: HousekeepingPass;
  hotplug?: HotplugPass;
}

export async function daemonMain(flags: DaemonFlags, passes: DaemonPasses = {}): Promise<number> {
  try {
    resolveDaemonFlags(flags, process.env);
  } catch (err) {
    process.stderr.write(`plexus daemon: ${(err as Error).message}\n`);
    return ExitCode.Usage;
  }
  const log = await createLogger(
    {
      logLevel: flags.logLevel ?? "info",
      logToStderr: true,
      pretty: process.stderr.isTTY === true,
    },
    { component: "daemon" },
  );
  let daemon: RunningDaemon;
  try {
    daemon = await startDaemon(flags, process.env, log, passes.housekeeping, passes.hotplug);
  } catch (err) {
    log.error({ err: err instanceof Error ? err.message : String(err) }, "daemon failed to start");
    return ExitCode.Problem;
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
  return ExitCode.Ok;
}
