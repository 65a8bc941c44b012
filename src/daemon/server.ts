/**
 * `plexus daemon`'s HTTP API on a unix socket (0600, root only; protocol.ts): pods and NADs from
 * the watch caches, a live read through the API when the cache misses (a pod created just before
 * its ADD, a recreated pod whose UID the cache does not have yet, a NAD created a moment ago:
 * never a stale "not found"), network-status writes and events over one keep-alive client, the
 * delegate runs CNI calls hand over (M20), and /healthz, /readyz, /metrics. With `healthAddress`, a
 * second, plain-HTTP TCP listener serves only those three read-only routes (kubelet probes,
 * Prometheus); /v1/* stays on the root-only socket.
 */
import {
  chmodSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  renameSync,
  rmSync,
  type Stats,
  unlinkSync,
} from "node:fs";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { type AddressInfo, connect } from "node:net";
import { dirname, join } from "node:path";
import { COMMANDS } from "../cni/env";
import { CniError, Code, isCniError } from "../cni/errors";
import type { KubeApi, PodEvent } from "../cluster/kube-api";
import {
  READ_KINDS,
  type ReadKind,
  type ReadRef,
  READS,
  readThrough,
  validateReadRef,
} from "../cluster/reads";
import type { DelegateRun } from "../libcni/conflist";
import type { CacheStats } from "../watch/watch-cache";
import type { Logger } from "../log/logger";
import { validateDns1123Label } from "../npwg/dns1123";
import type { Nad, Pod } from "../npwg/types";
import type { DaemonMetrics } from "./metrics";
import { limitConnections } from "./connection-limit";
import { type DraCacheView, getResourceSlicesRoute, postClaimStatusRoute } from "./dra-routes";
import { DAEMON_API, DAEMON_READS } from "../daemon-client/protocol";

export interface CacheView {
  readonly synced: boolean;
  pod(namespace: string, name: string): Pod | undefined;
  nad(namespace: string, name: string): Nad | undefined;
  stats(): CacheStats;
}

export interface DaemonServerOptions {
  socketPath: string;
  cache: CacheView;
  /** M10: the DRA caches (claims, this node's slices); undefined: DRA reads are live. */
  dra?: DraCacheView | undefined;
  /** Live reads on a miss, status writes and events. */
  api: KubeApi;
  log: Logger;
  /**
   * Also serve /healthz, /readyz and /metrics (nothing else) over plain HTTP on this TCP address.
   */
  healthAddress?: { host: string; port: number } | undefined;
  /** prom-client's registry and the daemon's series (metrics.ts, loaded by the daemon only). */
  metrics: DaemonMetrics;
  /** M10: the pod's devices from kubelet's pod-resources API; undefined: the route answers 404. */
  podDevices?:
    | ((query: {
        namespace: string;
        name: string;
        resourceNames: string[];
        timeoutMs: number;
      }) => Promise<Map<string, string[]>>)
    | undefined;
}

export interface DaemonServer {
  readonly metrics: DaemonMetrics;
  /** The health listener's bound address (port 0 resolved), when `healthAddress` was given. */
  readonly healthAddress: AddressInfo | undefined;
  close(): Promise<void>;
}

/** The routes the TCP health listener serves: read-only, no pod or NAD data. */
const HEALTH_ROUTES: ReadonlySet<string> = new Set([
  DAEMON_API.healthz,
  DAEMON_API.readyz,
  DAEMON_API.metrics,
]);

const MAX_BODY_BYTES = 1024 * 1024;

/** An answer other than 200 decided before or outside the Kubernetes work, with its CNI code. */
class HttpFailure extends Error {
  constructor(
    readonly status: number,
    readonly code: Code,
    message: string,
  ) {
    super(message);
  }
}

/**
 * Claims `path` for the socket. Only a stale socket (one nobody answers on, left by a daemon that
 * was killed) is removed: another daemon answering there is a deployment error, and anything that
 * is not a socket (a regular file, a directory, a symlink) is someone's data or a wrong --socket,
 * never deleted.
 */
async function claimSocket(path: string): Promise<void> {
  mkdirSync(dirname(path), { recursive: true, mode: 0o755 });
  let st: Stats;
  try {
    st = lstatSync(path);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return;
    throw new CniError(
      Code.Internal,
      `daemon socket ${path}: cannot inspect it: ${(err as Error).message}`,
    );
  }
  if (!st.isSocket()) {
    const kind = st.isSymbolicLink()
      ? "a symlink"
      : st.isDirectory()
        ? "a directory"
        : "a file that is not a socket";
    throw new CniError(
      Code.Internal,
      `daemon socket ${path}: ${kind} is there; refusing to remove it (remove it yourself if it ` +
        `is a leftover, or pass another --socket)`,
    );
  }
  const alive = await new Promise<boolean>((resolve) => {
    const s = connect(path);
    s.once("connect", () => {
      s.destroy();
      resolve(true);
    });
    s.once("error", () => resolve(false));
  });
  if (alive)
    throw new CniError(
      Code.Internal,
      `daemon socket ${path} is in use by another process (is a second plexus daemon running?)`,
    );
  unlinkSync(path);
}

/**
 * The request's URL; undefined for a request-target `new URL` rejects (it would throw in the
 * listener and end the process).
 */
function requestUrl(req: IncomingMessage): URL | undefined {
  try {
    return new URL(req.url ?? "/", "http://plexus");
  } catch {
    return undefined;
  }
}

/** Writes one answer: a JSON body unless `type` says otherwise. */
function send(
  res: ServerResponse,
  status: number,
  body: unknown,
  type = "application/json",
  headers: Record<string, string> = {},
): void {
  const buf = Buffer.from(type === "application/json" ? JSON.stringify(body) : String(body));
  res.writeHead(status, { "content-type": type, "content-length": String(buf.length), ...headers });
  res.end(buf);
}

/** 400 for a request-target the URL parser refuses: nothing in it could be decoded (6). */
function badTarget(res: ServerResponse): void {
  send(
    res,
    400,
    { error: { code: Code.Decoding, msg: "malformed request target" } },
    "application/json",
    {
      connection: "close",
    },
  );
}

/**
 * A route this daemon does not serve: a CNI binary of another version asking (1), or /v1/* on the
 * health address.
 */
function noRoute(method: string | undefined, pathname: string, where = ""): HttpFailure {
  return new HttpFailure(404, Code.IncompatibleVersion, `no route ${method} ${pathname}${where}`);
}

function str(
  query: URLSearchParams | Record<string, unknown>,
  key: string,
  required = true,
): string | undefined {
  const v = query instanceof URLSearchParams ? query.get(key) : query[key];
  if (typeof v === "string" && v !== "") return v;
  if (required)
    throw new CniError(Code.InvalidNetworkConfig, `daemon request: "${key}" is missing`);
  return undefined;
}

async function readBody(req: IncomingMessage): Promise<Record<string, unknown>> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const c of req) {
    size += (c as Buffer).length;
    if (size > MAX_BODY_BYTES) throw new HttpFailure(413, Code.Decoding, "request body too large");
    chunks.push(c as Buffer);
  }
  try {
    const v = JSON.parse(Buffer.concat(chunks).toString("utf8")) as unknown;
    if (typeof v !== "object" || v === null || Array.isArray(v)) throw new Error("not an object");
    return v as Record<string, unknown>;
  } catch (err) {
    throw new HttpFailure(
      400,
      Code.Decoding,
      `request body is not a JSON object: ${(err as Error).message}`,
    );
  }
}

type Answer = [status: number, body: unknown, type?: string];
type Route = (req: IncomingMessage, url: URL) => Promise<Answer>;
type RouterDeps = Pick<
  DaemonServerOptions,
  "cache" | "api" | "log" | "metrics" | "podDevices" | "dra"
>;

/**
 * What a cache says of one object: its result for the metrics, and the answer when it gives one
 * (a hit; or the claim cache's own live read, which reports its source). No answer (a miss, or a
 * cached pod of another UID: stale): a live read. No cache for it: a live read, uncounted.
 */
type Cached =
  | { result: "hit" | "miss" | "stale"; served?: { object: unknown; source: "cache" | "api" } }
  | undefined;

/** Each object's cache, by its row of cluster/reads.ts. */
const CACHES: { readonly [K in ReadKind]: (deps: RouterDeps, ref: ReadRef) => Promise<Cached> } = {
  pod: async ({ cache }, ref) => {
    const cached = cache.pod(ref.namespace, ref.name);
    if (cached && (!ref.podUid || cached.metadata.uid === ref.podUid))
      return { result: "hit", served: { object: cached, source: "cache" } };
    return { result: cached ? "stale" : "miss" };
  },
  nad: async ({ cache }, ref) => {
    const cached = cache.nad(ref.namespace, ref.name);
    return cached
      ? { result: "hit", served: { object: cached, source: "cache" } }
      : { result: "miss" };
  },
  resourceClaim: async ({ dra }, ref) => {
    if (!dra) return undefined;
    const r = await dra.claim(ref);
    const result = r.source === "cache" ? "hit" : "miss";
    return { result, served: { object: r.claim, source: r.source } };
  },
};

/**
 * GET of one object of cluster/reads.ts (DAEMON_READS: /v1/pod, /v1/nad, /v1/resource-claim): the
 * cached copy when the cache may serve it (a pod's UID must match; a claim must be reserved for
 * the pod asking), else a live read, never a stale "not found". Names are checked as the API
 * client checks them.
 */
function readRoute(kind: ReadKind, deps: RouterDeps): Route {
  const { field, podUid, metric } = DAEMON_READS[kind];
  return async (_req, url) => {
    const q = url.searchParams;
    const ref = { namespace: str(q, "namespace")!, name: str(q, "name")! };
    validateReadRef(READS[kind], ref);
    const forPod = podUid ? str(q, podUid, false) : undefined;
    const cached = await CACHES[kind](deps, { ...ref, podUid: forPod });
    if (cached) deps.metrics.cacheLookup(metric, cached.result);
    const served = cached?.served ?? {
      object: await readThrough(deps.api, kind, ref),
      source: "api",
    };
    return [200, { [field]: served.object ?? null, source: served.source }];
  };
}

/**
 * POST /v1/network-status: written through the daemon's keep-alive client; the CNI call waits for
 * it.
 */
function postNetworkStatus({ api }: RouterDeps): Route {
  return async (req) => {
    const b = await readBody(req);
    const status = b.status;
    if (typeof status !== "string")
      throw new CniError(Code.InvalidNetworkConfig, 'daemon request: "status" must be a string');
    const uid = str(b, "uid", false);
    await api.setNetworkStatus(
      { namespace: str(b, "namespace")!, name: str(b, "name")!, ...(uid ? { uid } : {}) },
      status,
    );
    return [200, { ok: true }];
  };
}

/**
 * POST /v1/event: accepted at once and written in the background, as client-go's event recorder
 * does: the CNI call waits only for its status write. A failure is logged here.
 */
function postEvent({ api, log, metrics }: RouterDeps): Route {
  return async (req) => {
    const b = await readBody(req);
    const e = b.event as Partial<PodEvent> | undefined;
    if (
      !e ||
      (e.type !== "Normal" && e.type !== "Warning") ||
      typeof e.reason !== "string" ||
      typeof e.message !== "string"
    ) {
      throw new CniError(
        Code.InvalidNetworkConfig,
        'daemon request: "event" must have type Normal|Warning, reason and message',
      );
    }
    const uid = str(b, "uid", false);
    const pod = { namespace: str(b, "namespace")!, name: str(b, "name")!, ...(uid ? { uid } : {}) };
    metrics.eventRelayed(e.type, e.reason);
    void api
      .recordEvent(pod, { type: e.type, reason: e.reason, message: e.message })
      .catch((err: unknown) => {
        log.warn(
          {
            err: err instanceof Error ? err.message : String(err),
            pod: `${pod.namespace}/${pod.name}`,
            reason: e.reason,
          },
          "could not record the event",
        );
      });
    return [200, { ok: true }];
  };
}

/** A delegate's run lasting longer is no run Plexus made (delegateTimeoutSeconds is far less). */
const MAX_RUN_MS = 24 * 3600 * 1000;
const VERBS: ReadonlySet<string> = new Set(COMMANDS);

/** One run of a POST /v1/delegate-runs body, checked field by field; undefined: not one. */
function delegateRunOf(raw: unknown): DelegateRun | undefined {
  if (typeof raw !== "object" || raw === null) return undefined;
  const { pluginType, verb, durationMs, result } = raw as Record<string, unknown>;
  if (typeof pluginType !== "string" || typeof verb !== "string" || !VERBS.has(verb))
    return undefined;
  if (typeof durationMs !== "number" || !(durationMs >= 0 && durationMs <= MAX_RUN_MS))
    return undefined;
  if (result !== "success" && !Number.isInteger(result)) return undefined;
  return { pluginType, verb: verb as DelegateRun["verb"], durationMs, result: result as number };
}

/**
 * POST /v1/delegate-runs (M20): the delegate runs of a CNI call or a pass, counted. The caller
 * has closed its side already (it never reads the answer); an entry that is not a run is skipped.
 */
function postDelegateRuns({ metrics }: RouterDeps): Route {
  return async (req) => {
    const b = await readBody(req);
    if (!Array.isArray(b.runs))
      throw new CniError(Code.InvalidNetworkConfig, 'daemon request: "runs" must be an array');
    let counted = 0;
    for (const raw of b.runs) {
      const run = delegateRunOf(raw);
      if (!run) continue;
      metrics.delegateRan(run);
      counted++;
    }
    return [200, { ok: true, counted }];
  };
}

/**
 * GET /v1/pod-devices (M10): the pod's devices per resource name, from kubelet's pod-resources API.
 */
function getPodDevices({ podDevices }: RouterDeps): Route {
  return async (_req, url) => {
    if (!podDevices)
      throw new HttpFailure(
        404,
        Code.IncompatibleVersion,
        "this daemon does not serve pod-resources queries",
      );
    const q = url.searchParams;
    const namespace = validateDns1123Label(str(q, "namespace")!, "pod namespace");
    const name = str(q, "name")!;
    const resourceNames = str(q, "resourceNames")!.split(",").filter(Boolean);
    // The caller's budget, bounded: a query never holds a daemon connection for long.
    const timeoutMs = Math.min(Math.max(Number(q.get("timeoutMs")) || 10_000, 100), 60_000);
    const devices = await podDevices({ namespace, name, resourceNames, timeoutMs });
    return [200, { devices: Object.fromEntries(devices) }];
  };
}

/** Every route, by `METHOD path`; anything else is a 404. */
function router(deps: RouterDeps): Route {
  const { cache, metrics } = deps;
  const routes: Record<string, Route> = {
    [`GET ${DAEMON_API.healthz}`]: async () => [200, { ok: true }],
    [`GET ${DAEMON_API.readyz}`]: async () =>
      cache.synced ? [200, { ok: true }] : [503, { ok: false, why: "watch caches not synced" }],
    ...Object.fromEntries(
      READ_KINDS.map((kind) => [`GET ${DAEMON_READS[kind].route}`, readRoute(kind, deps)]),
    ),
    [`POST ${DAEMON_API.networkStatus}`]: postNetworkStatus(deps),
    [`POST ${DAEMON_API.event}`]: postEvent(deps),
    [`GET ${DAEMON_API.podDevices}`]: getPodDevices(deps),
    [`POST ${DAEMON_API.delegateRuns}`]: postDelegateRuns(deps),
    [`GET ${DAEMON_API.resourceSlices}`]: getResourceSlicesRoute(deps),
    [`POST ${DAEMON_API.claimStatus}`]: async (req) =>
      postClaimStatusRoute(deps)(await readBody(req)),
    [`GET ${DAEMON_API.metrics}`]: async () => [200, await metrics.render(), metrics.contentType],
  };
  return async (req, url) => {
    const route = Object.hasOwn(routes, `${req.method} ${url.pathname}`)
      ? routes[`${req.method} ${url.pathname}`]
      : undefined;
    if (!route) throw noRoute(req.method, url.pathname);
    return route(req, url);
  };
}

type Handler = (req: IncomingMessage, res: ServerResponse) => void;

/**
 * Routes one request and answers it: 200 or the route's status; an HttpFailure with its status and
 * code; a CniError as 422 with its code (authoritative for 3, 6, 7, protocol.ts); anything else
 * 500.
 */
function requestHandler(route: Route, { log, metrics }: RouterDeps): Handler {
  return (req, res) => {
    const t0 = performance.now();
    const url = requestUrl(req);
    if (!url) return badTarget(res);
    const routeName = url.pathname;
    const reply = (status: number, body: unknown, type?: string) => {
      send(res, status, body, type);
      metrics.request(routeName, status, performance.now() - t0);
    };
    route(req, url).then(
      ([status, body, type]) => reply(status, body, type),
      (err: unknown) => {
        if (err instanceof HttpFailure)
          return reply(err.status, { error: { code: err.code, msg: err.message } });
        if (isCniError(err)) {
          if (err.code === Code.ApiFailure) metrics.apiError(routeName);
          return reply(422, { error: { code: err.code, msg: err.message } });
        }
        log.error(
          { err: err instanceof Error ? err.message : String(err), route: routeName },
          "daemon request failed",
        );
        reply(500, {
          error: {
            code: Code.Internal,
            msg: `daemon bug: ${err instanceof Error ? err.message : String(err)}`,
          },
        });
      },
    );
  };
}

function closeServer(server: Server): Promise<void> {
  return new Promise<void>((resolve) => {
    server.close(() => resolve());
    server.closeAllConnections();
  });
}

function unlinkSocket(path: string): void {
  try {
    unlinkSync(path);
  } catch {
    // already gone
  }
}

/**
 * The root-only unix socket (0600), after claiming its path. It is bound inside a fresh 0700
 * directory beside `path`, made 0600 there, and renamed into place: nobody can connect before the
 * mode is right, and the process umask (global, shared with every other await) is never changed.
 */
async function listenOnSocket(path: string, handler: Handler, log: Logger): Promise<Server> {
  await claimSocket(path);
  const server: Server = createServer(handler);
  server.keepAliveTimeout = 5_000;
  const privateDir = mkdtempSync(join(dirname(path), ".plexus-socket-"));
  const bound = join(privateDir, "s");
  try {
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(bound, () => resolve());
    });
    chmodSync(bound, 0o600);
    renameSync(bound, path);
  } catch (err) {
    await closeServer(server);
    throw err;
  } finally {
    rmSync(privateDir, { recursive: true, force: true });
  }
  log.info({ socket: path }, "daemon API listening");
  return server;
}

/**
 * The plain-HTTP health listener. Anything but the health routes is a 404 here, before routing:
 * the TCP port is reachable by whoever can reach its address, the socket only by root.
 */
async function listenForHealth(
  address: { host: string; port: number },
  handler: Handler,
  log: Logger,
): Promise<Server> {
  const h = createServer((req, res) => {
    const url = requestUrl(req);
    if (!url) return badTarget(res);
    const pathname = url.pathname;
    if (HEALTH_ROUTES.has(pathname)) return handler(req, res);
    const e = noRoute(req.method, pathname, " on the health address");
    send(res, e.status, { error: { code: e.code, msg: e.message } });
  });
  h.keepAliveTimeout = 5_000;
  limitConnections(h);
  const { host, port } = address;
  try {
    await new Promise<void>((resolve, reject) => {
      h.once("error", reject);
      h.listen(port, host, () => resolve());
    });
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    throw new CniError(
      Code.Internal,
      `daemon health address ${host}:${port}: cannot listen: ${e.code ?? e.message}`,
      undefined,
      { cause: err },
    );
  }
  const bound = h.address() as AddressInfo;
  log.info(
    { address: bound.address, port: bound.port },
    "daemon health and metrics listening (HTTP)",
  );
  return h;
}

export async function startDaemonServer(options: DaemonServerOptions): Promise<DaemonServer> {
  const handler = requestHandler(router(options), options);
  const server = await listenOnSocket(options.socketPath, handler, options.log);
  let health: Server | undefined;
  if (options.healthAddress) {
    try {
      health = await listenForHealth(options.healthAddress, handler, options.log);
    } catch (err) {
      await closeServer(server);
      unlinkSocket(options.socketPath);
      throw err;
    }
  }
  let closed: Promise<void> | undefined;
  return {
    metrics: options.metrics,
    healthAddress: health ? (health.address() as AddressInfo) : undefined,
    close() {
      closed ??= Promise.all([closeServer(server), health ? closeServer(health) : undefined]).then(
        () => unlinkSocket(options.socketPath),
      );
      return closed;
    },
  };
}
