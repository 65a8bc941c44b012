/**
 * A fake Kubernetes API server the project owns (issue 3): real node:https (or node:http) on
 * 127.0.0.1:0, speaking enough of the REST protocol for @kubernetes/client-node — pods and their
 * status subresource (GET, PUT, merge and strategic-merge PATCH, resourceVersion and UID
 * preconditions → 409), NetworkAttachmentDefinitions (GET, LIST), Events (core v1 and
 * events.k8s.io/v1) — with a `metav1.Status` body for every error, a request log, and faults
 * injected per route (STYLE: modelled on client-node's `setupMockSystem` test server).
 *
 * LIST and WATCH of pods and NADs, per namespace and across namespaces, for informers
 * (client-node's `ListWatch`): field and label selectors, one global resourceVersion, a history
 * of events that watches resume from, and — as kube-apiserver's watch cache — a resume from a
 * resourceVersion older than that history answered with a 200 stream whose only event is
 * `ERROR` carrying a 410 `Expired` Status (the client then relists). Test controls:
 * `dropWatches()`, `compactHistory()`, `watchCount()`.
 *
 * Every socket gets TCP_NODELAY and every response is written in one piece with Content-Length,
 * so benchmarks do not measure delayed ACKs. `await using` (or `close()`) destroys every socket.
 */
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer as createHttpServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { createServer as createHttpsServer } from "node:https";
import type { Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  DRA_API_VERSION,
  DRA_RESOURCES,
  type DraResource,
  draKey,
  isDraResource,
  matchDraPath,
} from "./fake-apiserver-dra";

const TLS_DIR = join(import.meta.dirname, "tls");
export const TEST_CA_PEM = readFileSync(join(TLS_DIR, "ca.crt"), "utf8");
const SERVER_CERT = readFileSync(join(TLS_DIR, "server.crt"), "utf8");
const SERVER_KEY = readFileSync(join(TLS_DIR, "server.key"), "utf8");

export type KubeObject = {
  apiVersion?: string;
  kind?: string;
  metadata: Record<string, unknown> & { name: string; namespace?: string };
  [k: string]: unknown;
};

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
  /** Only watch requests (`true`) or only non-watch requests (`false`); default both. */
  watch?: boolean;
}

export interface LoggedRequest {
  method: string;
  path: string;
  query: string;
  contentType: string | undefined;
  userAgent: string | undefined;
  /** ms since the server started. */
  time: number;
  body: string;
  /** The TLS SNI name the client sent (HTTPS only; undefined without one). */
  servername?: string | undefined;
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
  /** Added to every request, before faults (ms); for a watch, before the stream starts. */
  latencyMs?: number;
  /** Events kept for watches to resume from (default 100,000); older ones are compacted away. */
  historyLimit?: number;
  /** How a watch resuming from a compacted resourceVersion is refused: "event" (default, as
   * kube-apiserver's watch cache: 200 and one ERROR event with a 410 Expired Status) or
   * "status" (HTTP 410 with the Status as the body). client-node relists on both. */
  expiredWatch?: "event" | "status";
  /** Interval of BOOKMARK events on watches with `allowWatchBookmarks=true` (default 60 s, about what kube-apiserver sends; tests of bookmarks set it short). */
  bookmarkIntervalMs?: number;
}

type NadInput = {
  metadata: { name: string; namespace?: string } & Record<string, unknown>;
  spec?: { config?: string };
};

export interface FakeApiServer extends AsyncDisposable {
  readonly url: string;
  readonly port: number;
  readonly caPem: string;
  token: string;
  readonly requests: LoggedRequest[];
  addPod(
    pod: Partial<KubeObject> & { metadata: { name: string; namespace?: string } & Record<string, unknown> },
  ): KubeObject;
  getPod(namespace: string, name: string): KubeObject | undefined;
  /** Emits DELETED to watches; false (and nothing emitted) when the pod does not exist. */
  deletePod(namespace: string, name: string): boolean;
  /** Adds or replaces (then the event is MODIFIED) a NAD. */
  addNad(nad: NadInput): KubeObject;
  /** Many NADs at once (one write per open watch): linear in the count. */
  addNads(nads: NadInput[]): KubeObject[];
  deleteNad(namespace: string, name: string): boolean;
  /** Adds or replaces a ResourceClaim or ResourceSlice (fake-apiserver-dra.ts). */
  addDra(
    resource: DraResource,
    obj: Partial<KubeObject> & { metadata: { name: string; namespace?: string } },
  ): KubeObject;
  /** The current global resourceVersion. */
  resourceVersion(): string;
  /** Ends every open watch stream cleanly (terminating chunk); with `abort`, destroys their
   * connections instead (the client sees a network error). Returns how many were open. */
  dropWatches(o?: { abort?: boolean }): number;
  /** Forgets the whole event history: a watch resuming from an older resourceVersion is expired (410). */
  compactHistory(): void;
  /** Open watch streams right now. */
  watchCount(): number;
  events(): KubeObject[];
  inject(match: FaultMatcher, fault: Fault): void;
  clearFaults(): void;
  /** Open TCP connections right now. */
  connectionCount(): number;
  /** Destroys every connection, watch streams included. */
  close(): Promise<void>;
}

const PODS = /^\/api\/v1\/namespaces\/([^/]+)\/pods(?:\/([^/]+)(\/status)?)?$/;
const ALL_PODS = /^\/api\/v1\/pods$/;
const ALL_NADS = /^\/apis\/k8s\.cni\.cncf\.io\/v1\/network-attachment-definitions$/;
const NADS = /^\/apis\/k8s\.cni\.cncf\.io\/v1\/namespaces\/([^/]+)\/network-attachment-definitions(?:\/([^/]+))?$/;
const CORE_EVENTS = /^\/api\/v1\/namespaces\/([^/]+)\/events$/;
const EVENTS_V1 = /^\/apis\/events\.k8s\.io\/v1\/namespaces\/([^/]+)\/events$/;

const REASONS: Record<number, string> = {
  400: "BadRequest",
  401: "Unauthorized",
  403: "Forbidden",
  404: "NotFound",
  405: "MethodNotAllowed",
  409: "Conflict",
  410: "Expired",
  415: "UnsupportedMediaType",
  422: "Invalid",
  429: "TooManyRequests",
  500: "InternalError",
  503: "ServiceUnavailable",
  504: "Timeout",
};

/** Plain fields, not parameter properties: the benchmark loads this file with Node's type stripping. */
class HttpError extends Error {
  readonly code: number;
  readonly details?: Record<string, unknown>;
  reason?: string;
  constructor(code: number, message: string, details?: Record<string, unknown>) {
    super(message);
    this.code = code;
    if (details) this.details = details;
  }
}

type Resource = "pods" | "nads" | DraResource;
type Filter = (o: KubeObject) => boolean;

/** One change, as kube-apiserver's watch cache keeps it: the object after and before. */
interface HistoryEvent {
  rv: number;
  type: "ADDED" | "MODIFIED" | "DELETED";
  resource: Resource;
  /** After the change; for DELETED the last state with the deletion's resourceVersion. */
  obj: KubeObject;
  prev: KubeObject | undefined;
  json?: string;
}

interface Watcher {
  resource: Resource;
  filter: Filter;
  res: ServerResponse;
  timers: NodeJS.Timeout[];
  /** Output held back while a slow-body fault writes the first batch. */
  queue: string[] | undefined;
}

/** What `route` answers for a watch request: the stream is started by `startWatch`. */
interface WatchPlan {
  resource: Resource;
  filter: Filter;
  /** Undefined: start with ADDED for the current state (no resourceVersion, or "0"). */
  since: number | undefined;
  sendInitial: boolean;
  /** sendInitialEvents=true: the first batch ends with the `k8s.io/initial-events-end` bookmark. */
  initialEventsEnd: boolean;
  bookmarks: boolean;
  timeoutMs: number | undefined;
}

const POD_FIELDS = new Set([
  "metadata.name",
  "metadata.namespace",
  "spec.nodeName",
  "spec.restartPolicy",
  "spec.schedulerName",
  "spec.serviceAccountName",
  "status.phase",
  "status.podIP",
  "status.nominatedNodeName",
]);
const NAD_FIELDS = new Set(["metadata.name", "metadata.namespace"]);

function fieldValue(o: KubeObject, field: string): string {
  let v: unknown = o;
  for (const k of field.split(".")) v = isObject(v) ? v[k] : undefined;
  return v === undefined || v === null ? "" : String(v);
}

/** `a=b,c==d,e!=f` over the fields the apiserver indexes for the resource; else 400 as it does. */
function parseFieldSelector(sel: string | null, resource: Resource): Filter {
  const terms: Filter[] = [];
  for (const raw of (sel ?? "").split(",")) {
    const term = raw.trim();
    if (!term) continue;
    const m = /^([^!=\s]+)\s*(==|!=|=)\s*(.*)$/.exec(term);
    if (!m) throw new HttpError(400, `invalid field selector: ${JSON.stringify(term)}: does not contain an operator`);
    const [, field, op, value] = m as unknown as [string, string, string, string];
    const fields = isDraResource(resource)
      ? DRA_RESOURCES[resource].fields
      : resource === "pods"
        ? POD_FIELDS
        : NAD_FIELDS;
    if (!(fields as ReadonlySet<string>).has(field)) throw new HttpError(400, `field label not supported: ${field}`);
    terms.push(op === "!=" ? (o) => fieldValue(o, field) !== value : (o) => fieldValue(o, field) === value);
  }
  return terms.length === 0 ? () => true : (o) => terms.every((t) => t(o));
}

/** Equality- and set-based label selectors (`a=b`, `a!=b`, `a`, `!a`, `a in (x,y)`, `a notin (x)`). */
function parseLabelSelector(sel: string | null): Filter {
  const parts: string[] = [];
  let depth = 0;
  let cur = "";
  for (const ch of sel ?? "") {
    if (ch === "(") depth++;
    if (ch === ")") depth--;
    if (ch === "," && depth === 0) {
      parts.push(cur);
      cur = "";
    } else cur += ch;
  }
  parts.push(cur);
  const KEY = "([A-Za-z0-9][-A-Za-z0-9_./]*)";
  const terms: ((labels: Record<string, unknown>) => boolean)[] = [];
  for (const raw of parts) {
    const term = raw.trim();
    if (!term) continue;
    let m: RegExpExecArray | null;
    if ((m = new RegExp(`^!\\s*${KEY}$`).exec(term))) {
      const k = m[1]!;
      terms.push((l) => !(k in l));
    } else if ((m = new RegExp(`^${KEY}\\s+(in|notin)\\s*\\(([^)]*)\\)$`).exec(term))) {
      const [k, op, list] = [m[1]!, m[2]!, new Set(m[3]!.split(",").map((v) => v.trim()))];
      terms.push(op === "in" ? (l) => k in l && list.has(String(l[k])) : (l) => !(k in l) || !list.has(String(l[k])));
    } else if ((m = new RegExp(`^${KEY}\\s*(==|!=|=)\\s*([-A-Za-z0-9_.]*)$`).exec(term))) {
      const [k, op, v] = [m[1]!, m[2]!, m[3]!];
      terms.push(op === "!=" ? (l) => !(k in l) || String(l[k]) !== v : (l) => k in l && String(l[k]) === v);
    } else if ((m = new RegExp(`^${KEY}$`).exec(term))) {
      const k = m[1]!;
      terms.push((l) => k in l);
    } else throw new HttpError(400, `unable to parse requirement: ${JSON.stringify(term)}`);
  }
  if (terms.length === 0) return () => true;
  return (o) => {
    const labels = isObject(o.metadata.labels) ? o.metadata.labels : {};
    return terms.every((t) => t(labels));
  };
}

const TRUE = new Set(["1", "t", "T", "true", "TRUE", "True"]);

export function statusBody(
  code: number,
  message: string,
  reason = REASONS[code] ?? "Unknown",
  details?: Record<string, unknown>,
): Record<string, unknown> {
  return {
    kind: "Status",
    apiVersion: "v1",
    metadata: {},
    status: "Failure",
    message,
    reason,
    ...(details ? { details } : {}),
    code,
  };
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
  const draStores: Partial<Record<DraResource, Map<string, KubeObject>>> = {};
  const events: KubeObject[] = [];
  const requests: LoggedRequest[] = [];
  const rules: Rule[] = [];
  const sockets = new Set<Socket>();
  const pending = new Set<NodeJS.Timeout>();
  const FIRST_RV = 1000;
  let resourceVersion = FIRST_RV;
  let uidCounter = 0;
  const nextRv = () => String(++resourceVersion);
  /**
   * One window of events per resource, as kube-apiserver keeps one watch cache per resource type:
   * a flood of pod events does not expire a NAD watch. Retained events are events[start..]; every
   * event of that resource with rv > compactedRv is retained.
   */
  interface History {
    events: HistoryEvent[];
    start: number;
    compactedRv: number;
  }
  const histories = new Map<Resource, History>();
  const historyOf = (r: Resource): History => {
    let h = histories.get(r);
    if (!h) histories.set(r, (h = { events: [], start: 0, compactedRv: FIRST_RV }));
    return h;
  };
  const historyLimit = opts.historyLimit ?? 100_000;
  const watchers = new Set<Watcher>();

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

  function takeFault(method: string, path: string, isWatch: boolean): Fault[] {
    const out: Fault[] = [];
    for (const r of rules) {
      if (r.left <= 0) continue;
      if (r.match.watch !== undefined && r.match.watch !== isWatch) continue;
      if (r.match.method && r.match.method.toUpperCase() !== method) continue;
      if (
        r.match.path !== undefined &&
        (typeof r.match.path === "string" ? r.match.path !== path : !r.match.path.test(path))
      )
        continue;
      r.left--;
      out.push(r.fault);
      if (r.fault.kind !== "delay") break;
    }
    return out;
  }

  function podKey(ns: string, name: string) {
    return `${ns}/${name}`;
  }

  function withRv(o: KubeObject, rv: number): KubeObject {
    return { ...o, metadata: { ...o.metadata, resourceVersion: String(rv) } };
  }

  function eventLine(type: string, json: string): string {
    return `{"type":"${type}","object":${json}}\n`;
  }

  /** The event as this watch sees it (kube-apiserver's cacheWatcher.convertToWatchEvent): an
   * object leaving the selector is DELETED (its previous state at the event's RV), entering it ADDED. */
  function project(w: Watcher, e: HistoryEvent): string | undefined {
    if (e.resource !== w.resource) return undefined;
    const was = e.prev !== undefined && w.filter(e.prev);
    const is = e.type !== "DELETED" && w.filter(e.obj);
    if (is) return eventLine(was ? "MODIFIED" : "ADDED", (e.json ??= JSON.stringify(e.obj)));
    if (!was) return undefined;
    if (e.type === "DELETED") return eventLine("DELETED", (e.json ??= JSON.stringify(e.obj)));
    return eventLine("DELETED", JSON.stringify(withRv(e.prev!, e.rv)));
  }

  function writeTo(w: Watcher, text: string): void {
    if (!text) return;
    if (w.queue) w.queue.push(text);
    else if (!w.res.destroyed && !w.res.writableEnded) w.res.write(text);
  }

  /** Appends to the history (trimmed to historyLimit) and pushes to the open watches, one write each. */
  function record(evts: HistoryEvent[]): void {
    if (evts.length === 0) return;
    for (const e of evts) {
      const h = historyOf(e.resource);
      h.events.push(e);
      if (h.events.length - h.start > historyLimit) {
        h.start += 1;
        h.compactedRv = h.events[h.start - 1]!.rv;
        if (h.start > 1024 && h.start * 2 > h.events.length) {
          h.events = h.events.slice(h.start);
          h.start = 0;
        }
      }
    }
    for (const w of watchers) {
      let text = "";
      for (const e of evts) text += project(w, e) ?? "";
      writeTo(w, text);
    }
  }

  function storeOf(resource: Resource): Map<string, KubeObject> {
    if (isDraResource(resource)) return (draStores[resource] ??= new Map());
    return resource === "pods" ? pods : nads;
  }

  function put(resource: Resource, key: string, obj: KubeObject): HistoryEvent {
    const store = storeOf(resource);
    const prev = store.get(key);
    store.set(key, obj);
    return { rv: Number(obj.metadata.resourceVersion), type: prev ? "MODIFIED" : "ADDED", resource, obj, prev };
  }

  function remove(resource: Resource, ns: string, name: string): boolean {
    const store = storeOf(resource);
    const prev = store.get(podKey(ns, name));
    if (!prev) return false;
    store.delete(podKey(ns, name));
    const rv = Number(nextRv());
    record([{ rv, type: "DELETED", resource, obj: withRv(prev, rv), prev }]);
    return true;
  }

  function bookmarkLine(resource: Resource, initialEventsEnd = false): string {
    const [apiVersion, kind] = isDraResource(resource)
      ? [DRA_API_VERSION, DRA_RESOURCES[resource].kind]
      : resource === "pods"
        ? ["v1", "Pod"]
        : ["k8s.cni.cncf.io/v1", "NetworkAttachmentDefinition"];
    const metadata: Record<string, unknown> = { resourceVersion: String(resourceVersion) };
    if (initialEventsEnd) metadata.annotations = { "k8s.io/initial-events-end": "true" };
    return eventLine("BOOKMARK", JSON.stringify({ kind, apiVersion, metadata }));
  }

  function stopWatcher(w: Watcher): void {
    for (const t of w.timers) clearTimeout(t);
    w.timers.length = 0;
    watchers.delete(w);
  }

  function endWatch(w: Watcher, abort = false): void {
    stopWatcher(w);
    if (abort) w.res.destroy();
    else if (!w.res.destroyed && !w.res.writableEnded) w.res.end();
  }

  /** LIST, or the plan of a WATCH, of a collection (`ns` undefined: all namespaces). */
  function handleList(
    method: string,
    resource: Resource,
    ns: string | undefined,
    q: URLSearchParams,
  ): [number, unknown] | WatchPlan {
    if (method !== "GET") throw new HttpError(405, `method ${method} not allowed`);
    const fieldFilter = parseFieldSelector(q.get("fieldSelector"), resource);
    const labelFilter = parseLabelSelector(q.get("labelSelector"));
    const filter: Filter = (o) => (ns === undefined || o.metadata.namespace === ns) && fieldFilter(o) && labelFilter(o);
    if (TRUE.has(q.get("watch") ?? "")) {
      const rvParam = q.get("resourceVersion") ?? "";
      if (rvParam !== "" && !/^\d+$/.test(rvParam))
        throw new HttpError(400, `invalid resource version: ${JSON.stringify(rvParam)}`);
      const since = rvParam === "" || rvParam === "0" ? undefined : Number(rvParam);
      const initialEventsEnd = TRUE.has(q.get("sendInitialEvents") ?? "");
      const timeout = q.get("timeoutSeconds");
      return {
        resource,
        filter,
        since,
        sendInitial: since === undefined || initialEventsEnd,
        initialEventsEnd,
        bookmarks: TRUE.has(q.get("allowWatchBookmarks") ?? ""),
        timeoutMs: timeout ? Number(timeout) * 1000 : undefined,
      };
    }
    const matching: [string, KubeObject][] = [];
    for (const [key, o] of storeOf(resource)) if (filter(o)) matching.push([key, o]);
    const metadata: Record<string, unknown> = { resourceVersion: String(resourceVersion) };
    let items = matching.map(([, o]) => o);
    const limit = Number(q.get("limit") ?? 0);
    const cont = q.get("continue");
    if (limit > 0 || cont) {
      // Pages in key order (as etcd), the continue token is the last key handed out.
      matching.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
      let from = 0;
      if (cont) {
        let after: string;
        try {
          after = (JSON.parse(Buffer.from(cont, "base64url").toString("utf8")) as { after: string }).after;
        } catch {
          throw new HttpError(400, "continue key is not valid: illegal base64 data");
        }
        while (from < matching.length && matching[from]![0] <= after) from++;
      }
      const page = matching.slice(from, limit > 0 ? from + limit : undefined);
      items = page.map(([, o]) => o);
      const left = matching.length - from - page.length;
      if (left > 0 && page.length > 0) {
        metadata.continue = Buffer.from(JSON.stringify({ after: page.at(-1)![0] })).toString("base64url");
        metadata.remainingItemCount = left;
      }
    }
    return [
      200,
      isDraResource(resource)
        ? { apiVersion: DRA_API_VERSION, kind: `${DRA_RESOURCES[resource].kind}List`, metadata, items }
        : resource === "pods"
          ? { apiVersion: "v1", kind: "PodList", metadata, items }
          : { apiVersion: "k8s.cni.cncf.io/v1", kind: "NetworkAttachmentDefinitionList", metadata, items },
    ];
  }

  /** Starts a watch stream: expiry, the first batch (current state or replayed history), then live. */
  async function startWatch(res: ServerResponse, plan: WatchPlan, fault: Fault | undefined): Promise<void> {
    const h = historyOf(plan.resource);
    if (!plan.sendInitial && plan.since! < h.compactedRv) {
      const message = `too old resource version: ${plan.since} (${h.compactedRv})`;
      if (opts.expiredWatch === "status") return send(res, 410, statusBody(410, message, "Expired"));
      res.writeHead(200, { "content-type": "application/json", "transfer-encoding": "chunked" });
      res.end(eventLine("ERROR", JSON.stringify(statusBody(410, message, "Expired"))));
      return;
    }
    const w: Watcher = { resource: plan.resource, filter: plan.filter, res, timers: [], queue: undefined };
    let first = "";
    if (plan.sendInitial) {
      for (const o of storeOf(plan.resource).values())
        if (plan.filter(o)) first += eventLine("ADDED", JSON.stringify(o));
      if (plan.initialEventsEnd && plan.bookmarks) first += bookmarkLine(plan.resource, true);
    } else {
      // Binary search for the first retained event after `since`.
      let lo = h.start;
      let hi = h.events.length;
      while (lo < hi) {
        const mid = (lo + hi) >> 1;
        if (h.events[mid]!.rv > plan.since!) hi = mid;
        else lo = mid + 1;
      }
      for (let i = lo; i < h.events.length; i++) first += project(w, h.events[i]!) ?? "";
    }
    res.writeHead(200, {
      "content-type": "application/json",
      "transfer-encoding": "chunked",
      "cache-control": "no-cache, private",
    });
    if (fault?.kind === "hang-after-headers") return void res.flushHeaders();
    if (fault?.kind === "truncated") {
      const text = first || bookmarkLine(plan.resource);
      return void res.end(text.slice(0, Math.floor(text.length / 2)));
    }
    watchers.add(w);
    res.on("close", () => stopWatcher(w));
    if (plan.bookmarks) {
      const tick = () => {
        writeTo(w, bookmarkLine(plan.resource));
        w.timers[0] = setTimeout(tick, opts.bookmarkIntervalMs ?? 60_000);
      };
      w.timers[0] = setTimeout(tick, opts.bookmarkIntervalMs ?? 60_000);
    }
    if (plan.timeoutMs !== undefined) {
      w.timers[1] = setTimeout(() => {
        if (plan.bookmarks) writeTo(w, bookmarkLine(plan.resource));
        endWatch(w);
      }, plan.timeoutMs);
    }
    if (fault?.kind === "slow-body") {
      // The first batch a few bytes at a time; live events wait behind it.
      w.queue = [];
      const buf = Buffer.from(first);
      const step = fault.chunkBytes ?? 1;
      for (let i = 0; i < buf.length && !res.destroyed; i += step) {
        await later(fault.intervalMs ?? 50);
        if (res.destroyed) return;
        res.write(buf.subarray(i, i + step));
      }
      const queued = w.queue.join("");
      w.queue = undefined;
      writeTo(w, queued);
      return;
    }
    if (first) res.write(first);
    else res.flushHeaders();
  }

  function notFound(resource: string, name: string): never {
    throw new HttpError(404, `${resource} "${name}" not found`, { name, kind: resource });
  }

  function conflict(resource: string, name: string, why: string): never {
    throw new HttpError(409, `Operation cannot be fulfilled on ${resource} "${name}": ${why}`, {
      name,
      kind: resource,
    });
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

  function writePod(
    ns: string,
    name: string,
    sub: boolean,
    next: Record<string, unknown>,
    current: KubeObject,
  ): KubeObject {
    const meta = (isObject(next.metadata) ? next.metadata : {}) as Record<string, unknown>;
    const curMeta = current.metadata;
    if (meta.uid !== undefined && meta.uid !== curMeta.uid) {
      throw new HttpError(
        409,
        `Operation cannot be fulfilled on pods "${name}": Precondition failed: UID in precondition: ${String(meta.uid)}, UID in object meta: ${String(curMeta.uid)}`,
        {
          name,
          kind: "pods",
        },
      );
    }
    if (meta.resourceVersion !== undefined && meta.resourceVersion !== curMeta.resourceVersion) {
      conflict(
        "pods",
        name,
        "the object has been modified; please apply your changes to the latest version and try again",
      );
    }
    // The status subresource keeps the spec; the main resource keeps the status (as the apiserver).
    const merged: KubeObject = {
      ...(next as KubeObject),
      apiVersion: "v1",
      kind: "Pod",
      metadata: {
        ...meta,
        name,
        namespace: ns,
        uid: curMeta.uid,
        creationTimestamp: curMeta.creationTimestamp,
        resourceVersion: nextRv(),
      },
    };
    if (sub) merged.spec = current.spec;
    else merged.status = current.status;
    record([put("pods", podKey(ns, name), merged)]);
    return merged;
  }

  function handlePods(
    method: string,
    ns: string,
    name: string,
    sub: boolean,
    req: IncomingMessage,
    body: string,
  ): [number, unknown] {
    const current = pods.get(podKey(ns, name));
    if (!current) notFound("pods", name);
    if (method === "GET") return [200, current];
    if (method === "PUT") {
      const next = parseBody(body);
      if (next.kind !== undefined && next.kind !== "Pod")
        throw new HttpError(400, `kind ${String(next.kind)} does not match Pod`);
      return [200, writePod(ns, name, sub, next, current)];
    }
    if (method === "PATCH") {
      const ct = (req.headers["content-type"] ?? "").split(";")[0]!.trim();
      if (ct !== "application/merge-patch+json" && ct !== "application/strategic-merge-patch+json") {
        throw new HttpError(415, `the fake API server does not implement patch type ${JSON.stringify(ct)}`);
      }
      const patch = parseBody(body);
      const next =
        ct === "application/merge-patch+json" ? mergePatch(current, patch) : strategicMergePatch(current, patch);
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

  function handleNads(method: string, ns: string, name: string): [number, unknown] {
    if (method !== "GET") throw new HttpError(405, `method ${method} not allowed`);
    const nad = nads.get(podKey(ns, name));
    if (!nad) notFound("network-attachment-definitions.k8s.cni.cncf.io", name);
    return [200, nad];
  }

  function handleEvent(method: string, ns: string, body: string, apiVersion: string): [number, unknown] {
    if (method !== "POST") throw new HttpError(405, `method ${method} not allowed`);
    const ev = parseBody(body) as KubeObject;
    const meta = (isObject(ev.metadata) ? ev.metadata : {}) as Record<string, unknown>;
    if (meta.namespace !== undefined && meta.namespace !== ns)
      throw new HttpError(400, "the namespace of the provided object does not match the namespace sent on the request");
    const name =
      typeof meta.name === "string" && meta.name
        ? meta.name
        : `${String(meta.generateName ?? "event.")}${(++uidCounter).toString(36)}`;
    const stored = {
      ...ev,
      apiVersion,
      kind: "Event",
      metadata: { ...meta, name, namespace: ns, uid: `event-uid-${++uidCounter}`, resourceVersion: nextRv() },
    } as KubeObject;
    events.push(stored);
    return [201, stored];
  }

  function route(
    method: string,
    path: string,
    q: URLSearchParams,
    req: IncomingMessage,
    body: string,
  ): [number, unknown] | WatchPlan {
    let m: RegExpExecArray | null;
    if (ALL_PODS.test(path)) return handleList(method, "pods", undefined, q);
    if (ALL_NADS.test(path)) return handleList(method, "nads", undefined, q);
    if ((m = PODS.exec(path))) {
      const ns = decodeURIComponent(m[1]!);
      if (m[2] === undefined) return handleList(method, "pods", ns, q);
      return handlePods(method, ns, decodeURIComponent(m[2]), m[3] !== undefined, req, body);
    }
    if ((m = NADS.exec(path))) {
      const ns = decodeURIComponent(m[1]!);
      if (m[2] === undefined) return handleList(method, "nads", ns, q);
      return handleNads(method, ns, decodeURIComponent(m[2]));
    }
    const dra = matchDraPath(path);
    if (dra && dra.name === undefined) return handleList(method, dra.resource, dra.namespace, q);
    if (dra && method === "GET")
      return [
        200,
        storeOf(dra.resource).get(draKey(dra.resource, dra.namespace, dra.name!)) ??
          notFound(`${dra.resource}.resource.k8s.io`, dra.name!),
      ];
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
    const isWatch = TRUE.has(url.searchParams.get("watch") ?? "");
    const sni = (req.socket as { servername?: string | false }).servername;
    requests.push({
      method,
      path,
      query: url.search,
      contentType: req.headers["content-type"],
      userAgent: req.headers["user-agent"],
      time: performance.now() - started,
      body,
      ...(sni ? { servername: sni } : {}),
    });

    if (opts.latencyMs) await later(opts.latencyMs);
    if (req.headers.authorization !== `Bearer ${state.token}`) return send(res, 401, statusBody(401, "Unauthorized"));

    const faults = takeFault(method, path, isWatch);
    for (const f of faults) if (f.kind === "delay") await later(f.ms);
    const fault = faults.find((f) => f.kind !== "delay");
    if (fault?.kind === "status") {
      return send(
        res,
        fault.code,
        statusBody(fault.code, fault.message ?? `injected ${fault.code}`, fault.reason),
        fault.retryAfter ? { "retry-after": fault.retryAfter } : {},
      );
    }
    if (fault?.kind === "reset") {
      // RST, not FIN: on TLS the reset goes to the TCP socket underneath.
      const raw = [...sockets].find((s) => s.remotePort === req.socket.remotePort) ?? req.socket;
      raw.resetAndDestroy();
      return;
    }
    if (fault?.kind === "hang") return;
    if (fault?.kind === "html") {
      const html = Buffer.from(
        "<!DOCTYPE html><html><head><title>Proxy Login</title></head><body>Please log in</body></html>",
      );
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

    let routed: [number, unknown] | WatchPlan;
    try {
      routed = route(method, path, url.searchParams, req, body);
    } catch (err) {
      if (!(err instanceof HttpError)) throw err;
      return send(res, err.code, statusBody(err.code, err.message, err.reason, err.details));
    }
    if (!Array.isArray(routed)) return startWatch(res, routed, fault);
    const [code, answer] = routed;
    const buf = Buffer.from(JSON.stringify(answer));
    if (fault?.kind === "truncated") {
      const half = buf.subarray(0, Math.floor(buf.length / 2));
      res.writeHead(200, { "content-type": "application/json", "content-length": String(half.length) });
      return void res.end(half);
    }
    if (fault?.kind === "hang-after-headers" || fault?.kind === "slow-body") {
      const chunked = fault.kind === "slow-body" && fault.chunked;
      res.writeHead(code, {
        "content-type": "application/json",
        ...(chunked ? {} : { "content-length": String(buf.length) }),
      });
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
  const server: Server = tls
    ? createHttpsServer({ cert: SERVER_CERT, key: SERVER_KEY }, handler)
    : createHttpServer(handler);
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
      const key = podKey(ns, pod.metadata.name);
      // Re-adding an existing pod replaces it (MODIFIED), keeping its identity unless given.
      const existing = pods.get(key)?.metadata;
      const stored: KubeObject = {
        apiVersion: "v1",
        kind: "Pod",
        spec: { nodeName: "node-1", containers: [{ name: "main", image: "busybox" }] },
        status: { phase: "Pending" },
        ...pod,
        metadata: {
          uid: existing?.uid ?? `pod-uid-${++uidCounter}`,
          creationTimestamp: existing?.creationTimestamp ?? new Date().toISOString(),
          ...pod.metadata,
          namespace: ns,
          resourceVersion: nextRv(),
        },
      };
      record([put("pods", key, stored)]);
      return stored;
    },
    getPod: (ns, name) => pods.get(podKey(ns, name)),
    deletePod: (ns, name) => remove("pods", ns, name),
    addNad: (nad) => api.addNads([nad])[0]!,
    addNads(list) {
      const out: KubeObject[] = [];
      const evts: HistoryEvent[] = [];
      for (const nad of list) {
        const ns = nad.metadata.namespace ?? "default";
        const key = podKey(ns, nad.metadata.name);
        const existing = nads.get(key)?.metadata;
        const stored: KubeObject = {
          apiVersion: "k8s.cni.cncf.io/v1",
          kind: "NetworkAttachmentDefinition",
          ...nad,
          metadata: {
            uid: existing?.uid ?? `nad-uid-${++uidCounter}`,
            ...nad.metadata,
            namespace: ns,
            resourceVersion: nextRv(),
          },
        };
        evts.push(put("nads", key, stored));
        out.push(stored);
      }
      record(evts);
      return out;
    },
    deleteNad: (ns, name) => remove("nads", ns, name),
    addDra(resource, obj) {
      const key = draKey(resource, obj.metadata.namespace, obj.metadata.name);
      const stored: KubeObject = {
        apiVersion: DRA_API_VERSION,
        kind: DRA_RESOURCES[resource].kind,
        ...obj,
        metadata: { uid: `dra-uid-${++uidCounter}`, ...obj.metadata, resourceVersion: nextRv() },
      };
      record([put(resource, key, stored)]);
      return stored;
    },
    resourceVersion: () => String(resourceVersion),
    dropWatches(o = {}) {
      const open = [...watchers];
      for (const w of open) endWatch(w, o.abort);
      return open.length;
    },
    compactHistory() {
      for (const h of histories.values()) Object.assign(h, { events: [], start: 0, compactedRv: resourceVersion });
      for (const r of ["pods", "nads"] as const) historyOf(r).compactedRv = resourceVersion;
    },
    watchCount: () => watchers.size,
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
        for (const d of ownedTempDirs.get(api) ?? []) rmSync(d, { recursive: true, force: true });
        for (const t of pending) clearTimeout(t);
        for (const w of [...watchers]) stopWatcher(w);
        const socketsClosed = [...sockets].map(
          (s) => new Promise<void>((resolve) => (s.closed ? resolve() : s.once("close", () => resolve()))),
        );
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

/** Temp dirs writeKubeconfig made for a server, removed by that server's close(). */
const ownedTempDirs = new WeakMap<object, string[]>();
function ownedTempDir(owner: object): string {
  const dir = mkdtempSync(join(tmpdir(), "plx-kubeconfig-"));
  ownedTempDirs.set(owner, [...(ownedTempDirs.get(owner) ?? []), dir]);
  return dir;
}

/** A kubeconfig (YAML, token auth, inline CA) pointing at the fake server; returns its path. */
export function writeKubeconfig(
  server: Pick<FakeApiServer, "url" | "caPem" | "token">,
  o: KubeconfigOptions = {},
): string {
  const dir = o.dir ?? ownedTempDir(server);
  const path = join(dir, o.fileName ?? "kubeconfig");
  const token = o.token ?? server.token;
  let auth = `    token: ${token}`;
  if (o.tokenFile) {
    const tokenPath = join(dir, `${o.fileName ?? "kubeconfig"}.token`);
    writeFileSync(tokenPath, token);
    auth = `    tokenFile: ${tokenPath}`;
  }
  // A plain-http server gets no TLS line at all, as `kubectl proxy` users write it (issue 10 item 6).
  const tlsLines = server.url.startsWith("https:")
    ? [`    certificate-authority-data: ${Buffer.from(server.caPem).toString("base64")}`]
    : [];
  writeFileSync(
    path,
    [
      "apiVersion: v1",
      "kind: Config",
      "clusters:",
      "- name: fake",
      "  cluster:",
      `    server: ${server.url}`,
      ...tlsLines,
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

/** A CA the fake server's certificate does not chain to (PEM), made with openssl in `dir`: for "wrong CA" tests. */
export function otherCaPem(dir: string): string {
  const args = ["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"];
  execFileSync(
    "openssl",
    [...args, "-keyout", join(dir, "k.pem"), "-out", join(dir, "ca.pem"), "-subj", "/CN=other-ca", "-days", "1"],
    {
      stdio: "ignore",
    },
  );
  return readFileSync(join(dir, "ca.pem"), "utf8");
}
