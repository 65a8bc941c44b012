/**
 * A fake Kubernetes API server the project owns (issue 3): real node:https (or node:http) on
 * 127.0.0.1:0, speaking enough of the REST protocol for @kubernetes/client-node — pods and their
 * status subresource (GET, PUT, merge and strategic-merge PATCH, resourceVersion and UID
 * preconditions → 409), NetworkAttachmentDefinitions (GET, LIST), Events (core v1 and
 * events.k8s.io/v1) — with a `metav1.Status` body for every error, a request log, and faults
 * injected per route (STYLE: modelled on client-node's `setupMockSystem` test server).
 *
 * Every socket gets TCP_NODELAY and every response is written in one piece with Content-Length,
 * so benchmarks do not measure delayed ACKs. `await using` (or `close()`) destroys every socket.
 */
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { createServer as createHttpServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { createServer as createHttpsServer } from "node:https";
import type { Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";

const TLS_DIR = join(import.meta.dirname, "tls");
export const TEST_CA_PEM = readFileSync(join(TLS_DIR, "ca.crt"), "utf8");
const SERVER_CERT = readFileSync(join(TLS_DIR, "server.crt"), "utf8");
const SERVER_KEY = readFileSync(join(TLS_DIR, "server.key"), "utf8");

export type KubeObject = { apiVersion?: string; kind?: string; metadata: Record<string, unknown> & { name: string; namespace?: string }; [k: string]: unknown };

/** What a matching request gets instead of (or before) normal handling. */
export type Fault =
  | { kind: "status"; code: number; reason?: string; message?: string; retryAfter?: string }
  /** Close the connection without an answer (RST). */
  | { kind: "reset" }
  /** Never answer; the socket stays open until the client gives up. */
  | { kind: "hang" }
  /** Send the headers (Content-Length of a real answer), then nothing. */
  | { kind: "hang-after-headers" }
  /** Send headers, then the real answer a few bytes at a time (`chunked`: without Content-Length). */
  | { kind: "slow-body"; chunkBytes?: number; intervalMs?: number; chunked?: boolean }
  /** 200 with a JSON body of `bytes` (default 10 MiB). */
  | { kind: "huge-body"; bytes?: number }
  /** 200 text/html, as a captive portal or a proxy error page. */
  | { kind: "html" }
  /** 200 application/json whose body is the first half of the real answer (consistent framing). */
  | { kind: "truncated" }
  /** 200 with a List where an object was asked for. */
  | { kind: "wrong-kind" }
  /** Wait, then handle normally. */
  | { kind: "delay"; ms: number };

export interface FaultMatcher {
  method?: string;
  /** Exact pathname, or a RegExp tested against it. */
  path?: string | RegExp;
  /** How many matching requests get the fault (default: all). */
  times?: number;
}

export interface LoggedRequest {
  method: string;
  path: string;
  query: string;
  contentType: string | undefined;
  /** ms since the server started. */
  time: number;
  body: string;
}

interface Rule {
  match: FaultMatcher;
  fault: Fault;
  left: number;
}

export interface FakeApiServerOptions {
  /** Default true (the kubeconfig then carries the test CA). */
  tls?: boolean;
  /** Bearer token every request must carry (default "plexus-test-token"). */
  token?: string;
  /** Added to every request, before faults (ms). */
  latencyMs?: number;
}

export interface FakeApiServer extends AsyncDisposable {
  readonly url: string;
  readonly port: number;
  readonly caPem: string;
  token: string;
  readonly requests: LoggedRequest[];
  addPod(pod: Partial<KubeObject> & { metadata: { name: string; namespace?: string } & Record<string, unknown> }): KubeObject;
  getPod(namespace: string, name: string): KubeObject | undefined;
  deletePod(namespace: string, name: string): void;
  addNad(nad: { metadata: { name: string; namespace?: string } & Record<string, unknown>; spec?: { config?: string } }): KubeObject;
  events(): KubeObject[];
  inject(match: FaultMatcher, fault: Fault): void;
  clearFaults(): void;
  /** Open TCP connections right now. */
  connectionCount(): number;
  close(): Promise<void>;
}

const PODS = /^\/api\/v1\/namespaces\/([^/]+)\/pods(?:\/([^/]+)(\/status)?)?$/;
const NADS = /^\/apis\/k8s\.cni\.cncf\.io\/v1\/namespaces\/([^/]+)\/network-attachment-definitions(?:\/([^/]+))?$/;
const CORE_EVENTS = /^\/api\/v1\/namespaces\/([^/]+)\/events$/;
const EVENTS_V1 = /^\/apis\/events\.k8s\.io\/v1\/namespaces\/([^/]+)\/events$/;

const REASONS: Record<number, string> = { 400: "BadRequest", 401: "Unauthorized", 403: "Forbidden", 404: "NotFound", 405: "MethodNotAllowed", 409: "Conflict", 415: "UnsupportedMediaType", 422: "Invalid", 429: "TooManyRequests", 500: "InternalError", 503: "ServiceUnavailable", 504: "Timeout" };

/** Plain fields, not parameter properties: the benchmark loads this file with Node's type stripping. */
class HttpError extends Error {
  readonly code: number;
  readonly details?: Record<string, unknown>;
  constructor(code: number, message: string, details?: Record<string, unknown>) {
    super(message);
    this.code = code;
    if (details) this.details = details;
  }
}

export function statusBody(code: number, message: string, reason = REASONS[code] ?? "Unknown", details?: Record<string, unknown>): Record<string, unknown> {
  return { kind: "Status", apiVersion: "v1", metadata: {}, status: "Failure", message, reason, ...(details ? { details } : {}), code };
}

/** RFC 7386 JSON merge patch. */
export function mergePatch(target: unknown, patch: unknown): unknown {
  if (!isObject(patch)) return patch;
  const out: Record<string, unknown> = isObject(target) ? { ...target } : {};
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) delete out[k];
    else out[k] = mergePatch(out[k], v);
  }
  return out;
}

/**
 * Strategic merge patch, the part that differs from a merge patch and matters for pods: lists of
 * objects with a `name` (containers, volumes, env…) merge by name instead of being replaced.
 * `$patch: delete` on such an element removes it.
 */
export function strategicMergePatch(target: unknown, patch: unknown): unknown {
  if (Array.isArray(patch) && Array.isArray(target) && patch.every((p) => isObject(p) && typeof p.name === "string")) {
    const out = [...target];
    for (const p of patch as Record<string, unknown>[]) {
      const i = out.findIndex((t) => isObject(t) && t.name === p.name);
      if (p.$patch === "delete") {
        if (i >= 0) out.splice(i, 1);
      } else if (i >= 0) out[i] = strategicMergePatch(out[i], p);
      else out.push(p);
    }
    return out;
  }
  if (!isObject(patch)) return patch;
  const out: Record<string, unknown> = isObject(target) ? { ...target } : {};
  for (const [k, v] of Object.entries(patch)) {
    if (k === "$patch") continue;
    if (v === null) delete out[k];
    else out[k] = strategicMergePatch(out[k], v);
  }
  return out;
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

export async function startFakeApiServer(opts: FakeApiServerOptions = {}): Promise<FakeApiServer> {
  const tls = opts.tls ?? true;
  const started = performance.now();
  const pods = new Map<string, KubeObject>();
  const nads = new Map<string, KubeObject>();
  const events: KubeObject[] = [];
  const requests: LoggedRequest[] = [];
  const rules: Rule[] = [];
  const sockets = new Set<Socket>();
  const pending = new Set<NodeJS.Timeout>();
  let resourceVersion = 1000;
  let uidCounter = 0;
  const nextRv = () => String(++resourceVersion);

  const state = { token: opts.token ?? "plexus-test-token" };

  function send(res: ServerResponse, code: number, body: unknown, headers: Record<string, string> = {}): void {
    const buf = Buffer.from(JSON.stringify(body));
    res.writeHead(code, { "content-type": "application/json", "content-length": String(buf.length), ...headers });
    res.end(buf);
  }

  function later(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const t = setTimeout(() => {
        pending.delete(t);
        resolve();
      }, ms);
      pending.add(t);
    });
  }

  function takeFault(method: string, path: string): Fault[] {
    const out: Fault[] = [];
    for (const r of rules) {
      if (r.left <= 0) continue;
      if (r.match.method && r.match.method.toUpperCase() !== method) continue;
      if (r.match.path !== undefined && (typeof r.match.path === "string" ? r.match.path !== path : !r.match.path.test(path))) continue;
      r.left--;
      out.push(r.fault);
      if (r.fault.kind !== "delay") break;
    }
    return out;
  }

  function podKey(ns: string, name: string) {
    return `${ns}/${name}`;
  }

  function notFound(resource: string, name: string): never {
    throw new HttpError(404, `${resource} "${name}" not found`, { name, kind: resource });
  }

  function conflict(resource: string, name: string, why: string): never {
    throw new HttpError(409, `Operation cannot be fulfilled on ${resource} "${name}": ${why}`, { name, kind: resource });
  }

  function parseBody(body: string): Record<string, unknown> {
    try {
      const v = JSON.parse(body) as unknown;
      if (!isObject(v)) throw new Error("not an object");
      return v;
    } catch (err) {
      throw new HttpError(400, `the body of the request was in an unknown format: ${(err as Error).message}`);
    }
  }

  function writePod(ns: string, name: string, sub: boolean, next: Record<string, unknown>, current: KubeObject): KubeObject {
    const meta = (isObject(next.metadata) ? next.metadata : {}) as Record<string, unknown>;
    const curMeta = current.metadata;
    if (meta.uid !== undefined && meta.uid !== curMeta.uid) {
      throw new HttpError(409, `Operation cannot be fulfilled on pods "${name}": Precondition failed: UID in precondition: ${String(meta.uid)}, UID in object meta: ${String(curMeta.uid)}`, {
        name,
        kind: "pods",
      });
    }
    if (meta.resourceVersion !== undefined && meta.resourceVersion !== curMeta.resourceVersion) {
      conflict("pods", name, "the object has been modified; please apply your changes to the latest version and try again");
    }
    // The status subresource keeps the spec; the main resource keeps the status (as the apiserver).
    const merged: KubeObject = {
      ...(next as KubeObject),
      apiVersion: "v1",
      kind: "Pod",
      metadata: { ...meta, name, namespace: ns, uid: curMeta.uid, creationTimestamp: curMeta.creationTimestamp, resourceVersion: nextRv() },
    };
    if (sub) merged.spec = current.spec;
    else merged.status = current.status;
    pods.set(podKey(ns, name), merged);
    return merged;
  }

  function handlePods(method: string, ns: string, name: string | undefined, sub: boolean, req: IncomingMessage, body: string): [number, unknown] {
    if (!name) {
      if (method !== "GET") throw new HttpError(405, `method ${method} not allowed`);
      const items = [...pods.values()].filter((p) => p.metadata.namespace === ns);
      return [200, { apiVersion: "v1", kind: "PodList", metadata: { resourceVersion: String(resourceVersion) }, items }];
    }
    const current = pods.get(podKey(ns, name));
    if (!current) notFound("pods", name);
    if (method === "GET") return [200, current];
    if (method === "PUT") {
      const next = parseBody(body);
      if (next.kind !== undefined && next.kind !== "Pod") throw new HttpError(400, `kind ${String(next.kind)} does not match Pod`);
      return [200, writePod(ns, name, sub, next, current)];
    }
    if (method === "PATCH") {
      const ct = (req.headers["content-type"] ?? "").split(";")[0]!.trim();
      if (ct !== "application/merge-patch+json" && ct !== "application/strategic-merge-patch+json") {
        throw new HttpError(415, `the fake API server does not implement patch type ${JSON.stringify(ct)}`);
      }
      const patch = parseBody(body);
      const next = ct === "application/merge-patch+json" ? mergePatch(current, patch) : strategicMergePatch(current, patch);
      // A precondition in the patch is checked against the stored object, not the merge result.
      const pMeta = isObject(patch.metadata) ? patch.metadata : {};
      const nextObj = next as Record<string, unknown>;
      const nextMeta = { ...(nextObj.metadata as Record<string, unknown>) };
      if (pMeta.uid === undefined) delete nextMeta.uid;
      if (pMeta.resourceVersion === undefined) delete nextMeta.resourceVersion;
      return [200, writePod(ns, name, sub, { ...nextObj, metadata: nextMeta }, current)];
    }
    throw new HttpError(405, `method ${method} not allowed`);
  }

  function handleNads(method: string, ns: string, name: string | undefined): [number, unknown] {
    if (method !== "GET") throw new HttpError(405, `method ${method} not allowed`);
    if (!name) {
      const items = [...nads.values()].filter((n) => n.metadata.namespace === ns);
      return [200, { apiVersion: "k8s.cni.cncf.io/v1", kind: "NetworkAttachmentDefinitionList", metadata: { resourceVersion: String(resourceVersion) }, items }];
    }
    const nad = nads.get(podKey(ns, name));
    if (!nad) notFound("network-attachment-definitions.k8s.cni.cncf.io", name);
    return [200, nad];
  }

  function handleEvent(method: string, ns: string, body: string, apiVersion: string): [number, unknown] {
    if (method !== "POST") throw new HttpError(405, `method ${method} not allowed`);
    const ev = parseBody(body) as KubeObject;
    const meta = (isObject(ev.metadata) ? ev.metadata : {}) as Record<string, unknown>;
    if (meta.namespace !== undefined && meta.namespace !== ns) throw new HttpError(400, "the namespace of the provided object does not match the namespace sent on the request");
    const name = typeof meta.name === "string" && meta.name ? meta.name : `${String(meta.generateName ?? "event.")}${(++uidCounter).toString(36)}`;
    const stored = { ...ev, apiVersion, kind: "Event", metadata: { ...meta, name, namespace: ns, uid: `event-uid-${++uidCounter}`, resourceVersion: nextRv() } } as KubeObject;
    events.push(stored);
    return [201, stored];
  }

  function route(method: string, path: string, req: IncomingMessage, body: string): [number, unknown] {
    let m: RegExpExecArray | null;
    if ((m = PODS.exec(path))) return handlePods(method, decodeURIComponent(m[1]!), m[2] === undefined ? undefined : decodeURIComponent(m[2]), m[3] !== undefined, req, body);
    if ((m = NADS.exec(path))) return handleNads(method, decodeURIComponent(m[1]!), m[2] === undefined ? undefined : decodeURIComponent(m[2]));
    if ((m = CORE_EVENTS.exec(path))) return handleEvent(method, decodeURIComponent(m[1]!), body, "v1");
    if ((m = EVENTS_V1.exec(path))) return handleEvent(method, decodeURIComponent(m[1]!), body, "events.k8s.io/v1");
    throw new HttpError(404, "the server could not find the requested resource");
  }

  async function onRequest(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const body = Buffer.concat(chunks).toString("utf8");
    const url = new URL(req.url ?? "/", "http://x");
    const method = (req.method ?? "GET").toUpperCase();
    const path = url.pathname;
    requests.push({ method, path, query: url.search, contentType: req.headers["content-type"], time: performance.now() - started, body });

    if (opts.latencyMs) await later(opts.latencyMs);
    if (req.headers.authorization !== `Bearer ${state.token}`) return send(res, 401, statusBody(401, "Unauthorized"));

    const faults = takeFault(method, path);
    for (const f of faults) if (f.kind === "delay") await later(f.ms);
    const fault = faults.find((f) => f.kind !== "delay");
    if (fault?.kind === "status") {
      return send(res, fault.code, statusBody(fault.code, fault.message ?? `injected ${fault.code}`, fault.reason), fault.retryAfter ? { "retry-after": fault.retryAfter } : {});
    }
    if (fault?.kind === "reset") {
      // RST, not FIN: on TLS the reset goes to the TCP socket underneath.
      const raw = [...sockets].find((s) => s.remotePort === req.socket.remotePort) ?? req.socket;
      raw.resetAndDestroy();
      return;
    }
    if (fault?.kind === "hang") return;
    if (fault?.kind === "html") {
      const html = Buffer.from("<!DOCTYPE html><html><head><title>Proxy Login</title></head><body>Please log in</body></html>");
      res.writeHead(200, { "content-type": "text/html; charset=utf-8", "content-length": String(html.length) });
      return void res.end(html);
    }
    if (fault?.kind === "huge-body") {
      const n = fault.bytes ?? 10 * 1024 * 1024;
      const buf = Buffer.alloc(n, 0x20);
      buf.write('{"kind":"Pod","apiVersion":"v1","metadata":{"name":"x"},"pad":"', 0);
      buf.write('"}', n - 2);
      res.writeHead(200, { "content-type": "application/json", "content-length": String(n) });
      return void res.end(buf);
    }
    if (fault?.kind === "wrong-kind") {
      return send(res, 200, { apiVersion: "v1", kind: "List", metadata: {}, items: [] });
    }

    let code: number;
    let answer: unknown;
    try {
      [code, answer] = route(method, path, req, body);
    } catch (err) {
      if (!(err instanceof HttpError)) throw err;
      return send(res, err.code, statusBody(err.code, err.message, undefined, err.details));
    }
    const buf = Buffer.from(JSON.stringify(answer));
    if (fault?.kind === "truncated") {
      const half = buf.subarray(0, Math.floor(buf.length / 2));
      res.writeHead(200, { "content-type": "application/json", "content-length": String(half.length) });
      return void res.end(half);
    }
    if (fault?.kind === "hang-after-headers" || fault?.kind === "slow-body") {
      const chunked = fault.kind === "slow-body" && fault.chunked;
      res.writeHead(code, { "content-type": "application/json", ...(chunked ? {} : { "content-length": String(buf.length) }) });
      res.flushHeaders();
      if (fault.kind === "hang-after-headers") return;
      const step = fault.chunkBytes ?? 1;
      for (let i = 0; i < buf.length && !res.destroyed; i += step) {
        await later(fault.intervalMs ?? 50);
        if (res.destroyed) return;
        res.write(buf.subarray(i, i + step));
      }
      return void res.end();
    }
    res.writeHead(code, { "content-type": "application/json", "content-length": String(buf.length) });
    res.end(buf);
  }

  const handler = (req: IncomingMessage, res: ServerResponse) => {
    onRequest(req, res).catch((err: unknown) => {
      if (!res.headersSent) send(res, 500, statusBody(500, `fake API server bug: ${(err as Error).message}`));
      else res.destroy();
    });
  };
  const server: Server = tls ? createHttpsServer({ cert: SERVER_CERT, key: SERVER_KEY }, handler) : createHttpServer(handler);
  server.keepAliveTimeout = 30_000;
  server.on("connection", (s: Socket) => {
    s.setNoDelay(true);
    sockets.add(s);
    s.on("close", () => sockets.delete(s));
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => resolve());
  });
  const port = (server.address() as { port: number }).port;
  let closed: Promise<void> | undefined;

  const api: FakeApiServer = {
    url: `${tls ? "https" : "http"}://127.0.0.1:${port}`,
    port,
    caPem: TEST_CA_PEM,
    get token() {
      return state.token;
    },
    set token(t: string) {
      state.token = t;
    },
    requests,
    addPod(pod) {
      const ns = pod.metadata.namespace ?? "default";
      const stored: KubeObject = {
        apiVersion: "v1",
        kind: "Pod",
        spec: { nodeName: "node-1", containers: [{ name: "main", image: "busybox" }] },
        status: { phase: "Pending" },
        ...pod,
        metadata: { uid: `pod-uid-${++uidCounter}`, creationTimestamp: new Date().toISOString(), ...pod.metadata, namespace: ns, resourceVersion: nextRv() },
      };
      pods.set(podKey(ns, pod.metadata.name), stored);
      return stored;
    },
    getPod: (ns, name) => pods.get(podKey(ns, name)),
    deletePod(ns, name) {
      pods.delete(podKey(ns, name));
    },
    addNad(nad) {
      const ns = nad.metadata.namespace ?? "default";
      const stored: KubeObject = {
        apiVersion: "k8s.cni.cncf.io/v1",
        kind: "NetworkAttachmentDefinition",
        ...nad,
        metadata: { uid: `nad-uid-${++uidCounter}`, ...nad.metadata, namespace: ns, resourceVersion: nextRv() },
      };
      nads.set(podKey(ns, nad.metadata.name), stored);
      return stored;
    },
    events: () => [...events],
    inject(match, fault) {
      rules.push({ match, fault, left: match.times ?? Number.POSITIVE_INFINITY });
    },
    clearFaults() {
      rules.length = 0;
    },
    connectionCount: () => sockets.size,
    close() {
      closed ??= (async () => {
        for (const t of pending) clearTimeout(t);
        const socketsClosed = [...sockets].map((s) => new Promise<void>((resolve) => (s.closed ? resolve() : s.once("close", () => resolve()))));
        const serverClosed = new Promise<void>((resolve) => server.close(() => resolve()));
        for (const s of sockets) s.destroy();
        server.closeAllConnections();
        await Promise.all([serverClosed, ...socketsClosed]);
      })();
      return closed;
    },
    [Symbol.asyncDispose]() {
      return api.close();
    },
  };
  return api;
}

export interface KubeconfigOptions {
  /** Directory to write into (default: a new temp dir). */
  dir?: string;
  fileName?: string;
  /** Token to put in the kubeconfig (default: the server's). */
  token?: string;
  /** Write the token to a file and reference it with `tokenFile` instead. */
  tokenFile?: boolean;
}

/** A kubeconfig (YAML, token auth, inline CA) pointing at the fake server; returns its path. */
export function writeKubeconfig(server: Pick<FakeApiServer, "url" | "caPem" | "token">, o: KubeconfigOptions = {}): string {
  const dir = o.dir ?? mkdtempSync(join(tmpdir(), "plx-kubeconfig-"));
  const path = join(dir, o.fileName ?? "kubeconfig");
  const token = o.token ?? server.token;
  let auth = `    token: ${token}`;
  if (o.tokenFile) {
    const tokenPath = join(dir, `${o.fileName ?? "kubeconfig"}.token`);
    writeFileSync(tokenPath, token);
    auth = `    tokenFile: ${tokenPath}`;
  }
  const tlsLine = server.url.startsWith("https:") ? `    certificate-authority-data: ${Buffer.from(server.caPem).toString("base64")}` : "    insecure-skip-tls-verify: true";
  writeFileSync(
    path,
    [
      "apiVersion: v1",
      "kind: Config",
      "clusters:",
      "- name: fake",
      "  cluster:",
      `    server: ${server.url}`,
      tlsLine,
      "users:",
      "- name: plexus",
      "  user:",
      auth,
      "contexts:",
      "- name: fake",
      "  context:",
      "    cluster: fake",
      "    user: plexus",
      "current-context: fake",
      "",
    ].join("\n"),
  );
  return path;
}
