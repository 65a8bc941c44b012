/**
 * The request path through the fake, as kube-apiserver's handler chain orders it: read the body,
 * log, authenticate (401), authorize (403), injected faults, then the handler the path names
 * (`/api/v1/…` or `/apis/<group>/<version>/…` and the registry table): GET, LIST and WATCH of a
 * stored kind, PUT and PATCH of pods and their status and of ResourceClaims' status
 * (claim-status.ts), POST of Events. Every error is a
 * `metav1.Status` (status.ts); a group version the server does not serve is a plain 404.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Socket } from "node:net";
import type { AdmissionOutcome, FakeAdmission } from "./admission.ts";
import { handleClaim } from "./claim-status.ts";
import { type Fault, type FaultRules, playFault, writeAnswer } from "./faults.ts";
import { listFromCache, listFromStorage, listOptions, servesFromStorage } from "./list.ts";
import { isObject, mergePatch, strategicMergePatch } from "./patch.ts";
import {
  authenticate,
  type Authenticators,
  denied,
  type RbacPolicy,
  type RequestAttributes,
  type UserInfo,
} from "./rbac.ts";
import {
  apiVersionOf,
  defOf,
  objectKey,
  RESOURCES,
  type Resource,
  type ResourceDef,
  TRUE,
} from "./resources.ts";
import { parseFieldSelector, parseLabelSelector } from "./selectors.ts";
import {
  HttpError,
  methodNotAllowed,
  notFound,
  notFoundResource,
  notServed,
  send,
  sendHttpError,
  statusBody,
} from "./status.ts";
import type { ObjectStore } from "./store.ts";
import type { Filter, KubeObject, LoggedRequest } from "./types.ts";
import { type WatchHub, type WatchPlan, watchPlan } from "./watch.ts";

/**
 * A request as kube-apiserver's RequestInfoFactory reads its path: the attributes RBAC decides on.
 */
interface RequestInfo extends RequestAttributes {
  apiVersion: string;
}

/** Everything a request meets on its way: the server's parts, built by server.ts. */
export interface ServerContext {
  store: ObjectStore;
  watches: WatchHub;
  admission: FakeAdmission;
  /** Undefined: RBAC off (`rbac: false`). */
  rbac: RbacPolicy | undefined;
  authn: Authenticators;
  faults: FaultRules;
  requests: LoggedRequest[];
  /** The raw TCP sockets (a reset goes to the one under a TLS socket). */
  sockets: ReadonlySet<Socket>;
  /** performance.now() at start: the log's time origin. */
  started: number;
  latencyMs: number | undefined;
  unserved: readonly string[] | undefined;
  /** ResourceClaim status writes checked per driver (claim-status.ts); undefined: on. */
  draGranularStatusAuthorization?: boolean | undefined;
  /** A timer the server clears on close. */
  later: (ms: number) => Promise<void>;
}

/** One request on its way to a handler. */
export interface Call {
  method: string;
  info: RequestInfo;
  q: URLSearchParams;
  req: IncomingMessage;
  body: string;
  /** The fault injected for this request, if it is one a handler plays out (`racing-write`). */
  fault: Fault | undefined;
  logged: LoggedRequest;
  user: UserInfo;
}

type Answer = [number, unknown];

const VERBS: Record<string, string> = { POST: "create", PUT: "update", PATCH: "patch" };

/**
 * `/api/v1/…` or `/apis/<group>/<version>/…`; undefined for a non-resource path (`/version`,
 * `/healthz`).
 */
export function requestInfo(
  method: string,
  path: string,
  query: URLSearchParams,
): RequestInfo | undefined {
  const parts = path.split("/").filter(Boolean).map(decodeURIComponent);
  let apiGroup = "";
  let rest: string[];
  if (parts[0] === "api" && parts.length >= 3) rest = parts.slice(2);
  else if (parts[0] === "apis" && parts.length >= 4) {
    apiGroup = parts[1]!;
    rest = parts.slice(3);
  } else return undefined;
  const apiVersion = parts[0] === "api" ? parts[1]! : parts[2]!;
  let namespace = "";
  if (rest[0] === "namespaces" && rest.length > 2) {
    namespace = rest[1]!;
    rest = rest.slice(2);
  }
  const [resource = "", name = "", subresource = ""] = rest;
  let verb =
    VERBS[method] ??
    (method === "DELETE" ? (name ? "delete" : "deletecollection") : name ? "get" : "list");
  if (TRUE.has(query.get("watch") ?? "")) verb = "watch";
  return { verb, apiGroup, apiVersion, namespace, resource, name, subresource };
}

/** LIST, or the plan of a WATCH, of a collection (`ns` undefined: all namespaces). */
function handleList(
  ctx: ServerContext,
  call: Call,
  collection: { resource: Resource; ns: string | undefined },
): Answer | WatchPlan {
  const { q } = call;
  const { resource, ns } = collection;
  const fieldFilter = parseFieldSelector(q.get("fieldSelector"), resource);
  const labelFilter = parseLabelSelector(q.get("labelSelector"));
  const filter: Filter = (o) =>
    (ns === undefined || o.metadata.namespace === ns) && fieldFilter(o) && labelFilter(o);
  if (call.info.verb === "watch") return watchPlan({ resource, filter }, q);
  const options = listOptions(q);
  const servedFrom = servesFromStorage(options) ? "etcd" : "watch-cache";
  const list = { resource, filter, options };
  const page =
    servedFrom === "etcd" ? listFromStorage(ctx.store, list) : listFromCache(ctx.store, list);
  call.logged.list = { servedFrom, resourceVersion: options.resourceVersion };
  const def = defOf(resource);
  const body = { apiVersion: apiVersionOf(def), kind: def.listKind, ...page };
  return [200, body];
}

/** Admission of a write: a denial thrown as kube-apiserver answers it, warnings on the answer. */
function admitter(ctx: ServerContext, call: Call, operation: "CREATE" | "UPDATE") {
  return (oldObject: KubeObject | null, object: KubeObject) => {
    const outcome: AdmissionOutcome = ctx.admission.review({
      info: call.info,
      user: call.user,
      operation,
      object,
      oldObject,
    });
    if (outcome.warnings.length) (call.logged.warnings ??= []).push(...outcome.warnings);
    if (!outcome.denial) return;
    const e = new HttpError(outcome.denial.code, outcome.denial.message, outcome.denial.details);
    e.reason = outcome.denial.reason;
    throw e;
  };
}

function parseBody(body: string): Record<string, unknown> {
  try {
    const v = JSON.parse(body) as unknown;
    if (!isObject(v)) throw new Error("not an object");
    return v;
  } catch (err) {
    throw new HttpError(
      400,
      `the body of the request was in an unknown format: ${(err as Error).message}`,
    );
  }
}

/** The patch types implemented (JSON patch is not: 415). */
const PATCHES = new Map<string, (target: unknown, patch: unknown) => unknown>([
  ["application/merge-patch+json", mergePatch],
  ["application/strategic-merge-patch+json", strategicMergePatch],
]);

/** GET, PUT and PATCH of a pod or its status subresource. */
function handlePods(ctx: ServerContext, call: Call, pod: { ns: string; name: string }): Answer {
  const { method } = call;
  const { ns, name } = pod;
  const sub = call.info.subresource === "status";
  if (method === "GET") {
    const current = ctx.store.objects("pods").get(objectKey(ns, name));
    if (!current) notFound("pods", name);
    return [200, current];
  }
  const update = { ns, name, sub, racingWrite: call.fault?.kind === "racing-write" };
  const admit = admitter(ctx, call, "UPDATE");
  if (method === "PUT") {
    const next = parseBody(call.body);
    if (next.kind !== undefined && next.kind !== "Pod")
      throw new HttpError(400, `kind ${String(next.kind)} does not match Pod`);
    // An update's object carries its UID, which becomes a storage precondition (409, not 422).
    const uid = isObject(next.metadata) && next.metadata.uid ? next.metadata.uid : undefined;
    return [
      200,
      ctx.store.updatePod({ ...update, uidPrecondition: uid, mutate: () => next, admit }),
    ];
  }
  if (method === "PATCH") {
    const ct = (call.req.headers["content-type"] ?? "").split(";")[0]!.trim();
    const apply = PATCHES.get(ct);
    if (!apply)
      throw new HttpError(
        415,
        `the fake API server does not implement patch type ${JSON.stringify(ct)}`,
      );
    const patch = parseBody(call.body);
    // No storage precondition: the patch applies to whatever is stored, UID and resourceVersion
    // included.
    const mutate = (current: KubeObject) => apply(current, patch) as Record<string, unknown>;
    return [200, ctx.store.updatePod({ ...update, uidPrecondition: undefined, mutate, admit })];
  }
  throw methodNotAllowed(method);
}

/** GET of a named object of a read-only resource (the default handler). */
function handleGet(ctx: ServerContext, call: Call, def: ResourceDef): Answer {
  if (call.method !== "GET") throw methodNotAllowed(call.method);
  const name = call.info.name;
  const obj = ctx.store.objects(def.key as Resource).get(objectKey(call.info.namespace, name));
  if (obj) return [200, obj];
  // kube-apiserver's NewNotFound: the resource as `kind`, its group beside it (omitted for core).
  const what = def.group ? `${def.plural}.${def.group}` : def.plural;
  throw new HttpError(404, `${what} "${name}" not found`, {
    name,
    ...(def.group ? { group: def.group } : {}),
    kind: def.plural,
  });
}

/** POST of an Event (core v1 or events.k8s.io/v1): stored create-only, never watched. */
function handleEvent(ctx: ServerContext, call: Call, def: ResourceDef): Answer {
  const ns = call.info.namespace;
  if (call.method !== "POST" || call.info.name || !ns) throw methodNotAllowed(call.method);
  const ev = parseBody(call.body) as KubeObject;
  const meta = (isObject(ev.metadata) ? ev.metadata : {}) as Record<string, unknown>;
  if (meta.namespace !== undefined && meta.namespace !== ns)
    throw new HttpError(
      400,
      "the namespace of the provided object does not match the namespace sent on the request",
    );
  const { store } = ctx;
  const name =
    typeof meta.name === "string" && meta.name
      ? meta.name
      : `${String(meta.generateName ?? "event.")}${store.nextUid().toString(36)}`;
  const stored = {
    ...ev,
    apiVersion: apiVersionOf(def),
    kind: "Event",
    metadata: {
      ...meta,
      name,
      namespace: ns,
      uid: `event-uid-${store.nextUid()}`,
      resourceVersion: store.nextRv(),
    },
  } as KubeObject;
  admitter(ctx, call, "CREATE")(null, stored);
  store.events.push(stored);
  return [201, stored];
}

/** Resources whose named objects take more than GET. */
const objectHandlers: Partial<
  Record<Resource, (ctx: ServerContext, call: Call, obj: { ns: string; name: string }) => Answer>
> = { pods: handlePods, resourceclaims: handleClaim };

/**
 * The handler of each resource in the registry table (GET/LIST/WATCH of a stored kind, or
 * create-only).
 */
export function route(ctx: ServerContext, call: Call): Answer | WatchPlan {
  const { info } = call;
  const policyObject = ctx.admission.serve(info, call.method);
  if (policyObject) return policyObject;
  const def = RESOURCES.find(
    (d) => d.group === info.apiGroup && d.version === info.apiVersion && d.plural === info.resource,
  );
  if (!def || (info.subresource && !def.subresources.includes(info.subresource)))
    throw notFoundResource();
  if (def.key === "events") return handleEvent(ctx, call, def);
  const ns = info.namespace || undefined;
  if (!info.name) {
    if (call.method !== "GET") throw methodNotAllowed(call.method);
    return handleList(ctx, call, { resource: def.key, ns });
  }
  if (def.namespaced !== Boolean(ns)) throw notFoundResource();
  const handler = objectHandlers[def.key];
  if (handler) return handler(ctx, call, { ns: ns ?? "", name: info.name });
  return handleGet(ctx, call, def);
}

/** The request as logged: what it asked, when, with which TLS name. */
async function logRequest(ctx: ServerContext, req: IncomingMessage): Promise<LoggedRequest> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  const url = new URL(req.url ?? "/", "http://x");
  const sni = (req.socket as { servername?: string | false }).servername;
  const logged: LoggedRequest = {
    method: (req.method ?? "GET").toUpperCase(),
    path: url.pathname,
    query: url.search,
    contentType: req.headers["content-type"],
    userAgent: req.headers["user-agent"],
    time: performance.now() - ctx.started,
    body: Buffer.concat(chunks).toString("utf8"),
    ...(sni ? { servername: sni } : {}),
  };
  ctx.requests.push(logged);
  return logged;
}

/** 403 for what RBAC does not grant, with the details kube-apiserver's Forbidden carries. */
function sendForbidden(res: ServerResponse, message: string, info: RequestInfo | undefined) {
  const details = info
    ? { name: info.name || undefined, group: info.apiGroup || undefined, kind: info.resource }
    : undefined;
  const body = statusBody(
    403,
    message,
    "Forbidden",
    details && JSON.parse(JSON.stringify(details)),
  );
  send(res, 403, body);
}

/**
 * Authentication (401), then the path read as a request (its attributes) and authorization (403):
 * undefined when answered.
 */
function admitRequest(
  ctx: ServerContext,
  http: { req: IncomingMessage; res: ServerResponse },
  request: { logged: LoggedRequest; q: URLSearchParams },
): { user: UserInfo; info: RequestInfo | undefined } | undefined {
  const { logged } = request;
  const who = authenticate(http.req, ctx.authn);
  if (!who) return void send(http.res, 401, statusBody(401, "Unauthorized"));
  logged.user = who.user.name;
  logged.authenticatedBy = who.by;
  const { method, path } = logged;
  const info = requestInfo(method, path, request.q);
  const forbidden = denied(ctx.rbac, { user: who.user, info, method, path });
  if (forbidden) return void sendForbidden(http.res, forbidden, info);
  return { user: who.user, info };
}

/** The handler chain of one request (see the file's comment). */
export async function onRequest(
  ctx: ServerContext,
  req: IncomingMessage,
  res: ServerResponse,
): Promise<void> {
  const logged = await logRequest(ctx, req);
  const { method, path } = logged;
  const q = new URLSearchParams(logged.query);
  if (ctx.latencyMs) await ctx.later(ctx.latencyMs);
  const admitted = admitRequest(ctx, { req, res }, { logged, q });
  if (!admitted) return;
  const { user, info } = admitted;
  const isWatch = TRUE.has(q.get("watch") ?? "");
  const faults = ctx.faults.take({ method, path, isWatch, query: logged.query });
  for (const f of faults) if (f.kind === "delay") await ctx.later(f.ms);
  const fault = faults.find((f) => f.kind !== "delay");
  if (playFault(res, fault, ctx.sockets)) return;
  if (info && ctx.unserved?.includes(`${info.apiGroup}/${info.apiVersion}`)) return notServed(res);
  let routed: Answer | WatchPlan;
  try {
    if (!info) throw notFoundResource();
    routed = route(ctx, { method, info, q, req, body: logged.body, fault, logged, user });
  } catch (err) {
    if (!(err instanceof HttpError)) throw err;
    return sendHttpError(res, err);
  }
  if (!Array.isArray(routed)) return ctx.watches.start(res, routed, fault);
  const [code, body] = routed;
  await writeAnswer(res, { code, body, warnings: logged.warnings, fault }, ctx.later);
}
