/**
 * A fake Kubernetes API server the project owns: real node:https (or node:http) on 127.0.0.1:0,
 * answering as kube-apiserver does where Plexus depends on it (modelled on client-node's
 * `setupMockSystem` test server; kube-apiserver is the reference for every answer):
 *
 * - Authentication: the bearer token authenticates as the service account `deploy/` ships, with
 *   the extra of a token bound to a pod on `node` (default node-1); so does a bound token the
 *   server issued (`issueToken`: a signed JWT with the `kubernetes.io` claims, its own node or
 *   none). With `clientCertificates`, a client certificate signed by the test CA as its CN (user)
 *   and O (groups). Anything else is 401.
 * - Admission: the ValidatingAdmissionPolicies `deploy/` ships, on every write
 *   (test/support/fake-admission.ts), on by default.
 * - Authorization: RBAC from the roles and bindings `deploy/` ships (the RBAC section below), on by
 *   default: a request they do not grant is 403 Forbidden, worded as kube-apiserver words it;
 *   the cluster administrator token (`ADMIN_TOKEN`, system:masters) is not subject to it.
 * - Resources come from one registry table (`RESOURCES`): pods and their status subresource (GET,
 *   LIST, WATCH, PUT, merge and strategic-merge PATCH), NetworkAttachmentDefinitions (GET, LIST,
 *   WATCH), Events (create, core v1 and events.k8s.io/v1). A new resource is a row and a handler.
 * - Writes as the generic registry store does them: PUT carries the object's UID as a storage
 *   precondition (409); PATCH carries none, so a UID change is a validation error (422 Invalid,
 *   `metadata.uid` "field is immutable"); a resourceVersion that does not match is 409; a write
 *   that races another is re-read and re-applied inside the server (GuaranteedUpdate), never a 409
 *   to a patch without resourceVersion (the `racing-write` fault shows it; an injected 409 is the
 *   only way a client ever sees one).
 * - LIST as the cacher decides: resourceVersion unset is a quorum read from "etcd"; "0", or N
 *   without limit, is served from the watch cache (limit ignored, as before servers could page
 *   from it); limit with N, Exact and continue go to "etcd", at a snapshot of the requested
 *   revision, 410 Expired once compacted — continue tokens included, with the inconsistent-
 *   continue token kube-apiserver hands back. Every LIST is logged with where it was served from.
 * - WATCH of pods and NADs, per namespace and across namespaces: field and label selectors, one
 *   global resourceVersion, a history of events that watches resume from, and — as the watch
 *   cache — a resume from a compacted resourceVersion answered with a 200 stream whose only event
 *   is `ERROR` carrying a 410 `Expired` Status. Test controls: `dropWatches()`, `compactHistory()`,
 *   `watchCount()`.
 * - Every error is a `metav1.Status`; faults are injected per route; every request is logged.
 *
 * Every socket gets TCP_NODELAY and every response is written in one piece with Content-Length,
 * so benchmarks do not measure delayed ACKs. `await using` (or `close()`) destroys every socket.
 */
import { execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import {
  createServer as createHttpServer,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from "node:http";
import { createServer as createHttpsServer } from "node:https";
import type { Socket } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import type { TLSSocket } from "node:tls";
import { loadAll } from "js-yaml";
import type { AdmissionOutcome, FakeAdmission, TokenBinding } from "./fake-admission";

const TLS_DIR = join(import.meta.dirname, "tls");
/**
 * A cluster administrator's token (group system:masters, which kube-apiserver authorizes before
 * RBAC): for tests of the fake's own protocol on requests Plexus never makes. Plexus's own
 * requests carry the service account's token and meet the shipped RBAC.
 */
export const ADMIN_TOKEN = "plexus-test-admin";
const ADMIN_USER: UserInfo = {
  name: "kubernetes-admin",
  groups: ["system:masters", "system:authenticated"],
};
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
  | {
      kind: "status";
      code: number;
      reason?: string;
      message?: string;
      retryAfter?: string;
      details?: Record<string, unknown>;
    }
  /**
   * Another client writes the object between this request's read and its write (etcd's
   * compare-and-swap fails): the fake re-reads and re-applies the update, as GuaranteedUpdate does.
   */
  | { kind: "racing-write" }
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
  /** Tested against the query string (`?a=b&…`). */
  query?: RegExp;
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
  /** Who the request authenticated as (undefined: 401). */
  user?: string | undefined;
  /** Admission's `Warning` headers on the answer (a binding's Warn action). */
  warnings?: string[];
  /** How the credentials were presented. */
  authenticatedBy?: "token" | "client-certificate" | undefined;
  /** For a LIST: where the cacher served it from ("etcd": a quorum read of storage). */
  list?: { servedFrom: "watch-cache" | "etcd"; resourceVersion: string } | undefined;
}

interface Rule {
  match: FaultMatcher;
  fault: Fault;
  left: number;
}

export interface FakeApiServerOptions {
  /** Default true (the kubeconfig then carries the test CA). */
  tls?: boolean;
  /** Bearer token every request must carry (default: a bound token the server issued on `node`). */
  token?: string;
  /** Added to every request, before faults (ms); for a watch, before the stream starts. */
  latencyMs?: number;
  /** Events kept for watches to resume from (default 100,000); older ones are compacted away. */
  historyLimit?: number;
  /** How a watch resuming from a compacted resourceVersion is refused: "event" (default, as
   * kube-apiserver's watch cache: 200 and one ERROR event with a 410 Expired Status) or
   * "status" (HTTP 410 with the Status as the body). client-node relists on both. */
  expiredWatch?: "event" | "status";
  /**
   * RBAC, on by default: the roles and bindings of `deploy/` (or `deployDir`), for the service
   * account `deploy/` defines, which the bearer token authenticates as. `false` only for a test
   * about something else than the API's permissions.
   */
  rbac?: false | { deployDir?: string };
  /**
   * Admission, on by default: the ValidatingAdmissionPolicies and bindings of `deploy/` (or
   * `deployDir`), evaluated on every write (test/support/fake-admission.ts). `false`: none, as a
   * cluster without the node-scoped-writes component. Off by default with `rbac: false`.
   */
  admission?: false | { deployDir?: string };
  /** The node the server's own token was issued on (default "node-1", the fixtures' node). */
  node?: string;
  /** Ask for a client certificate (TLS only) and authenticate one the test CA signed as its CN/O. */
  clientCertificates?: boolean;
  /** Interval of BOOKMARK events on watches with `allowWatchBookmarks=true` (default 60 s, about what kube-apiserver sends; tests of bookmarks set it short). */
  bookmarkIntervalMs?: number;
  /**
   * API group versions this server does not serve (`resource.k8s.io/v1`: DRA off;
   * `k8s.cni.cncf.io/v1`: the NAD CRD not installed). Every path under one is answered as
   * kube-apiserver answers a path no handler serves (see {@link notServed}).
   */
  unserved?: string[];
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
    pod: Partial<KubeObject> & {
      metadata: { name: string; namespace?: string } & Record<string, unknown>;
    },
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
  /** Updates re-read and re-applied after a racing write (GuaranteedUpdate's retries). */
  storageRetries(): number;
  /** The user the bearer token authenticates as. */
  readonly user: UserInfo;
  /**
   * A bound token (a JWT with the `kubernetes.io` claims) of the shipped service account, issued
   * on `node` (none: a token that names no node), which the server then authenticates.
   */
  issueToken(b?: Omit<TokenBinding, "namespace" | "serviceAccount">): string;
  /** What bindings with the Audit action recorded. */
  admissionAudit(): string[];
  inject(match: FaultMatcher, fault: Fault): void;
  clearFaults(): void;
  /** Open TCP connections right now. */
  connectionCount(): number;
  /** Destroys every connection, watch streams included. */
  close(): Promise<void>;
}

// ---------------------------------------------------------------------------------------------
// RBAC, as kube-apiserver's RBAC authorizer decides it: the rules of every (Cluster)Role bound to
// the user, its name or one of its groups, by a (Cluster)RoleBinding; a request no rule grants is
// 403 Forbidden with kube-apiserver's wording. The roles and the identity come from the manifests
// Plexus ships (`deploy/`, followed through its kustomization.yaml), read at test time: a test that
// makes a request the shipped RBAC does not grant fails, whatever the manifests grant later.
// (Here rather than in a module of its own: the benchmarks load this file with Node's type
// stripping, which resolves no extension-less relative import.)
// ---------------------------------------------------------------------------------------------

/** Who a request is from (kube-apiserver's user.Info): a token's service account or a certificate's CN/O. */
export interface UserInfo {
  name: string;
  groups: string[];
  uid?: string;
  /** A bound token's extra (`authentication.kubernetes.io/node-name`, …): fake-admission.ts. */
  extra?: Record<string, string[]>;
}

/** What a request asks to do (kube-apiserver's authorizer.Attributes for a resource request). */
export interface RequestAttributes {
  verb: string;
  apiGroup: string;
  resource: string;
  subresource: string;
  namespace: string;
  name: string;
}

export interface PolicyRule {
  apiGroups?: string[];
  resources?: string[];
  verbs: string[];
  resourceNames?: string[];
  nonResourceURLs?: string[];
}

interface Binding {
  kind: "ClusterRoleBinding" | "RoleBinding";
  /** A RoleBinding's namespace: it grants only there. */
  namespace: string | undefined;
  roleRef: { kind: string; name: string };
  subjects: { kind: string; name: string; namespace?: string }[];
}

export interface RbacPolicy {
  clusterRoles: Map<string, PolicyRule[]>;
  /** "namespace/name" → rules. */
  roles: Map<string, PolicyRule[]>;
  bindings: Binding[];
  /** The service accounts the manifests define, as user names (`system:serviceaccount:<ns>:<name>`). */
  serviceAccounts: UserInfo[];
}

export const DEPLOY_DIR = join(import.meta.dirname, "..", "..", "deploy");

type Doc = Record<string, any>;

/**
 * The YAML documents a kustomization directory renders from: its `resources` (directories
 * followed), then its `components` in order, each adding to and patching the set so far, as
 * kustomize applies them; a `patches` entry is a file naming its target by kind and name, merged in.
 */
function kustomizationDocs(dir: string, seen = new Set<string>(), out: Doc[] = []): Doc[] {
  if (seen.has(dir)) return out;
  seen.add(dir);
  const file = ["kustomization.yaml", "kustomization.yml", "Kustomization"]
    .map((f) => join(dir, f))
    .find((f) => existsSync(f));
  if (!file) throw new Error(`fake API server RBAC: no kustomization file in ${dir}`);
  const k = loadAll(readFileSync(file, "utf8"))[0] as Doc;
  for (const r of (k.resources ?? []) as string[]) {
    const p = join(dirname(file), r);
    if (statSync(p).isDirectory()) out.push(...kustomizationDocs(p, seen));
    else
      for (const d of loadAll(readFileSync(p, "utf8")))
        if (d && typeof d === "object") out.push(d as Doc);
  }
  for (const c of (k.components ?? []) as string[])
    kustomizationDocs(join(dirname(file), c), seen, out);
  for (const { path } of (k.patches ?? []) as { path: string }[]) {
    const patch = loadAll(readFileSync(join(dirname(file), path), "utf8"))[0] as Doc;
    const i = out.findIndex(
      (d) => d.kind === patch.kind && d.metadata?.name === patch.metadata?.name,
    );
    if (i < 0) throw new Error(`fake API server: patch ${path} in ${dir} matches no object`);
    out[i] = mergePatch(out[i], patch) as Doc;
  }
  return out;
}

/** The RBAC objects and service accounts Plexus ships (default: everything `kubectl apply -k deploy/` creates). */
export function loadShippedRbac(dir = DEPLOY_DIR): RbacPolicy {
  const policy: RbacPolicy = {
    clusterRoles: new Map(),
    roles: new Map(),
    bindings: [],
    serviceAccounts: [],
  };
  for (const d of kustomizationDocs(dir)) {
    const ns = d.metadata?.namespace as string | undefined;
    if (d.kind === "ClusterRole") policy.clusterRoles.set(d.metadata.name, d.rules ?? []);
    else if (d.kind === "Role")
      policy.roles.set(`${ns ?? "default"}/${d.metadata.name}`, d.rules ?? []);
    else if (d.kind === "ClusterRoleBinding" || d.kind === "RoleBinding")
      policy.bindings.push({
        kind: d.kind,
        namespace: d.kind === "RoleBinding" ? (ns ?? "default") : undefined,
        roleRef: d.roleRef,
        subjects: d.subjects ?? [],
      });
    else if (d.kind === "ServiceAccount")
      policy.serviceAccounts.push(serviceAccountUser(ns ?? "default", d.metadata.name));
  }
  return policy;
}

/** The user a service account's token authenticates as (serviceaccount.MakeUsername and its groups). */
export function serviceAccountUser(namespace: string, name: string): UserInfo {
  return {
    name: `system:serviceaccount:${namespace}:${name}`,
    groups: [
      "system:serviceaccounts",
      `system:serviceaccounts:${namespace}`,
      "system:authenticated",
    ],
  };
}

function appliesTo(
  s: Binding["subjects"][number],
  user: UserInfo,
  bindingNs: string | undefined,
): boolean {
  if (s.kind === "User") return s.name === user.name;
  if (s.kind === "Group") return user.groups.includes(s.name);
  if (s.kind === "ServiceAccount")
    return user.name === `system:serviceaccount:${s.namespace ?? bindingNs}:${s.name}`;
  return false;
}

const has = (list: string[] | undefined, v: string) =>
  (list ?? []).some((x) => x === "*" || x === v);

function ruleAllows(r: PolicyRule, a: RequestAttributes): boolean {
  if (!has(r.verbs, a.verb) || !has(r.apiGroups, a.apiGroup)) return false;
  const combined = a.subresource ? `${a.resource}/${a.subresource}` : a.resource;
  const resourceOk = (r.resources ?? []).some(
    (x) =>
      x === "*" ||
      x === combined ||
      (a.subresource && x === `*/${a.subresource}`) ||
      (!a.subresource && x === a.resource),
  );
  if (!resourceOk) return false;
  return !r.resourceNames?.length || r.resourceNames.includes(a.name);
}

/** Whether any binding that applies to the user grants the request (RBAC is allow-only: no deny rules). */
export function authorize(policy: RbacPolicy, user: UserInfo, a: RequestAttributes): boolean {
  for (const b of policy.bindings) {
    if (b.namespace !== undefined && b.namespace !== a.namespace) continue;
    if (!b.subjects.some((s) => appliesTo(s, user, b.namespace))) continue;
    const rules =
      b.roleRef.kind === "ClusterRole"
        ? policy.clusterRoles.get(b.roleRef.name)
        : policy.roles.get(`${b.namespace}/${b.roleRef.name}`);
    if ((rules ?? []).some((r) => ruleAllows(r, a))) return true;
  }
  return false;
}

/** kube-apiserver's words for a denied resource request (responsewriters.forbiddenMessage, errors.NewForbidden). */
export function forbiddenMessage(user: UserInfo, a: RequestAttributes): string {
  const resource = a.subresource ? `${a.resource}/${a.subresource}` : a.resource;
  const where = a.namespace ? `in the namespace "${a.namespace}"` : "at the cluster scope";
  const qualified = a.apiGroup ? `${a.resource}.${a.apiGroup}` : a.resource;
  const subject = a.name ? `${qualified} "${a.name}"` : qualified;
  return `${subject} is forbidden: User "${user.name}" cannot ${a.verb} resource "${resource}" in API group "${a.apiGroup}" ${where}`;
}

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
  /** A Status's own `metadata.continue` (an expired continuation's replacement token). */
  listContinue?: string;
  constructor(code: number, message: string, details?: Record<string, unknown>) {
    super(message);
    this.code = code;
    if (details) this.details = details;
  }
}

/** A stored, watchable resource (a key of the registry table); events are create-only, not stored as one. */
type Resource = "pods" | "nads" | DraResource;

/** One request on its way to a handler. */
interface Call {
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

/**
 * The Dynamic Resource Allocation resources (resource.k8s.io/v1): namespaced ResourceClaims and
 * cluster-scoped ResourceSlices, with the field selectors kube-apiserver indexes for them
 * (ResourceSlice: `spec.nodeName`, `spec.driver`, `spec.pool.name`). Two rows of the registry
 * table below, so they are stored, listed, watched and authorized like pods and NADs. (Here, not
 * in a module of their own: the soak and the benchmarks load this file with Node's type
 * stripping, which resolves no extension-less import.)
 */
export type DraResource = "resourceclaims" | "resourceslices";
export const DRA_GROUP = "resource.k8s.io";
export const DRA_API_VERSION = `${DRA_GROUP}/v1`;

/** The registry rows (the shape of fake-apiserver.ts's ResourceDef). */
export const DRA_RESOURCE_DEFS = [
  {
    key: "resourceclaims" as DraResource,
    namespaced: true,
    group: DRA_GROUP,
    version: "v1",
    plural: "resourceclaims",
    kind: "ResourceClaim",
    listKind: "ResourceClaimList",
    fields: new Set(["metadata.name", "metadata.namespace"]),
    subresources: [],
  },
  {
    key: "resourceslices" as DraResource,
    namespaced: false,
    group: DRA_GROUP,
    version: "v1",
    plural: "resourceslices",
    kind: "ResourceSlice",
    listKind: "ResourceSliceList",
    fields: new Set(["metadata.name", "spec.nodeName", "spec.driver", "spec.pool.name"]),
    subresources: [],
  },
] as const;

export const draKindOf = (r: DraResource): string =>
  DRA_RESOURCE_DEFS.find((d) => d.key === r)!.kind;
export const isNamespacedDra = (r: DraResource): boolean =>
  DRA_RESOURCE_DEFS.find((d) => d.key === r)!.namespaced;

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

/**
 * One resource the fake serves: routing, RBAC attributes, LIST, WATCH and bookmarks read it from
 * this table. Serving another resource is a row here (a stored key gets its own store and watch
 * history), a handler for its named objects in `startFakeApiServer`'s `objectHandlers` (reads only
 * by default), and test controls to add objects.
 */
interface ResourceDef {
  /** The store and the watch history are per key. */
  key: Resource | "events";
  /** Cluster-scoped resources have no namespace in their path. */
  namespaced: boolean;
  group: string;
  version: string;
  plural: string;
  kind: string;
  listKind: string;
  /** Fields the apiserver indexes for field selectors. */
  fields: ReadonlySet<string>;
  subresources: readonly string[];
}

const RESOURCES: readonly ResourceDef[] = [
  {
    key: "pods",
    namespaced: true,
    group: "",
    version: "v1",
    plural: "pods",
    kind: "Pod",
    listKind: "PodList",
    fields: POD_FIELDS,
    subresources: ["status"],
  },
  {
    key: "nads",
    namespaced: true,
    group: "k8s.cni.cncf.io",
    version: "v1",
    plural: "network-attachment-definitions",
    kind: "NetworkAttachmentDefinition",
    listKind: "NetworkAttachmentDefinitionList",
    fields: NAD_FIELDS,
    subresources: [],
  },
  ...["", "events.k8s.io"].map((group) => ({
    key: "events" as const,
    namespaced: true,
    group,
    version: "v1",
    plural: "events",
    kind: "Event",
    listKind: "EventList",
    fields: NAD_FIELDS,
    subresources: [],
  })),
  ...DRA_RESOURCE_DEFS,
];

const defOf = (r: Resource): ResourceDef => RESOURCES.find((d) => d.key === r)!;

/** A request as kube-apiserver's RequestInfoFactory reads its path: the attributes RBAC decides on. */
interface RequestInfo extends RequestAttributes {
  apiVersion: string;
}

const VERBS: Record<string, string> = { POST: "create", PUT: "update", PATCH: "patch" };

/** `/api/v1/…` or `/apis/<group>/<version>/…`; undefined for a non-resource path (`/version`, `/healthz`). */
function requestInfo(method: string, path: string, q: URLSearchParams): RequestInfo | undefined {
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
  if (TRUE.has(q.get("watch") ?? "")) verb = "watch";
  return { verb, apiGroup, apiVersion, namespace, resource, name, subresource };
}

/** Paths kube-apiserver's default roles (system:discovery, system:public-info-viewer) open to any authenticated user. */
const DISCOVERY = /^\/(api|apis|version|healthz|livez|readyz)(\/.*)?$/;

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
    if (!m)
      throw new HttpError(
        400,
        `invalid field selector: ${JSON.stringify(term)}: does not contain an operator`,
      );
    const [, field, op, value] = m as unknown as [string, string, string, string];
    if (!defOf(resource).fields.has(field))
      throw new HttpError(400, `field label not supported: ${field}`);
    terms.push(
      op === "!=" ? (o) => fieldValue(o, field) !== value : (o) => fieldValue(o, field) === value,
    );
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
      terms.push(
        op === "in"
          ? (l) => k in l && list.has(String(l[k]))
          : (l) => !(k in l) || !list.has(String(l[k])),
      );
    } else if ((m = new RegExp(`^${KEY}\\s*(==|!=|=)\\s*([-A-Za-z0-9_.]*)$`).exec(term))) {
      const [k, op, v] = [m[1]!, m[2]!, m[3]!];
      terms.push(
        op === "!=" ? (l) => !(k in l) || String(l[k]) !== v : (l) => k in l && String(l[k]) === v,
      );
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

const apiVersionOf = (d: ResourceDef) => (d.group ? `${d.group}/${d.version}` : d.version);

/** A LIST's options, validated as kube-apiserver validates ListOptions (422 for a bad combination, as it). */
interface ListOptions {
  resourceVersion: string;
  match: string;
  limit: number;
  continue: string;
}

interface ListPage {
  metadata: Record<string, unknown>;
  items: KubeObject[];
}

function listOptions(q: URLSearchParams): ListOptions {
  const o = {
    resourceVersion: q.get("resourceVersion") ?? "",
    match: q.get("resourceVersionMatch") ?? "",
    limit: Math.max(0, Number(q.get("limit") ?? 0) || 0),
    continue: q.get("continue") ?? "",
  };
  if (o.resourceVersion !== "" && !/^\d+$/.test(o.resourceVersion))
    throw new HttpError(400, `invalid resource version: ${JSON.stringify(o.resourceVersion)}`);
  const forbidden: string[] = [];
  if (o.match) {
    if (!o.resourceVersion)
      forbidden.push("resourceVersionMatch is forbidden unless resourceVersion is provided");
    if (o.continue) forbidden.push("resourceVersionMatch is forbidden when continue is provided");
    if (o.match !== "Exact" && o.match !== "NotOlderThan")
      throw invalidListOptions(`resourceVersionMatch: Unsupported value: "${o.match}"`);
    if (o.match === "Exact" && o.resourceVersion === "0")
      forbidden.push('resourceVersionMatch "exact" is forbidden for resourceVersion "0"');
  }
  if (forbidden.length)
    throw invalidListOptions(
      forbidden.map((f) => `resourceVersionMatch: Forbidden: ${f}`).join(", "),
    );
  if (o.continue && o.resourceVersion !== "" && o.resourceVersion !== "0")
    throw new HttpError(400, "specifying resource version is not allowed when using continue");
  return o;
}

function invalidListOptions(why: string): HttpError {
  return new HttpError(422, `ListOptions.meta.k8s.io "" is invalid: ${why}`, {
    group: "meta.k8s.io",
    kind: "ListOptions",
  });
}

/**
 * The cacher's choice (as before consistent reads from the cache): etcd for a quorum read (no
 * resourceVersion), a continuation, a limit with a resourceVersion other than "0", or Exact; the
 * watch cache for "0" (its limit ignored) and "not older than N" without a limit.
 */
function servesFromStorage(o: ListOptions): boolean {
  return (
    o.resourceVersion === "" ||
    o.continue !== "" ||
    (o.limit > 0 && o.resourceVersion !== "0") ||
    (o.match !== "" && o.match !== "NotOlderThan")
  );
}

/** The cacher (after waiting for its cache) and etcd (a future revision) both answer 504 with this cause. */
function tooLargeResourceVersion(rv: number, current: number): HttpError {
  const e = new HttpError(504, `Too large resource version: ${rv}, current: ${current}`, {
    causes: [{ reason: "ResourceVersionTooLarge", message: "Too large resource version" }],
    retryAfterSeconds: 1,
  });
  e.reason = "Timeout";
  return e;
}

/** A continue token: the revision of the first page and the key to resume at (base64url JSON). */
function encodeContinue(rv: number, start: string): string {
  return Buffer.from(JSON.stringify({ v: "meta.k8s.io/v1", rv, start })).toString("base64url");
}

function decodeContinue(token: string): { rv: number; start: string } {
  try {
    const t = JSON.parse(Buffer.from(token, "base64url").toString("utf8")) as Record<
      string,
      unknown
    >;
    if (t.v !== "meta.k8s.io/v1" || typeof t.rv !== "number" || typeof t.start !== "string")
      throw new Error();
    return { rv: t.rv, start: t.start };
  } catch {
    throw new HttpError(400, "continue key is not valid: the token does not decode");
  }
}

/** A continuation from a compacted revision: 410, with a token that resumes at the newest revision (inconsistently). */
function continueExpired(start: string): HttpError {
  const e = new HttpError(
    410,
    "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list.",
  );
  e.listContinue = encodeContinue(-1, start);
  return e;
}

/**
 * A path no handler serves (a CRD not installed, an API group not enabled): kube-apiserver's
 * handler chain ends in its notfoundhandler, which answers with Go's `http.NotFound`: 404, the
 * plain text `404 page not found`, no metav1.Status (staging/src/k8s.io/apiserver/pkg/util/
 * notfoundhandler). Only a missing object gets a NotFound Status naming it.
 */
function notServed(res: ServerResponse): void {
  const body = "404 page not found\n";
  res.writeHead(404, {
    "content-type": "text/plain; charset=utf-8",
    "x-content-type-options": "nosniff",
    "content-length": String(Buffer.byteLength(body)),
  });
  res.end(body);
}

export function statusBody(
  code: number,
  message: string,
  reason = REASONS[code] ?? "Unknown",
  details?: Record<string, unknown>,
  listContinue?: string,
): Record<string, unknown> {
  return {
    kind: "Status",
    apiVersion: "v1",
    metadata: listContinue ? { continue: listContinue } : {},
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
  if (
    Array.isArray(patch) &&
    Array.isArray(target) &&
    patch.every((p) => isObject(p) && typeof p.name === "string")
  ) {
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

/** fake-admission.ts, imported by its file name: this file is also loaded with Node's type stripping. */
async function loadFakeAdmission(
  opts: FakeApiServerOptions,
  o: { user: UserInfo; pods: () => Iterable<KubeObject> },
): Promise<FakeAdmission> {
  const mod = (await import(
    new URL("./fake-admission.ts", import.meta.url).href
  )) as typeof import("./fake-admission");
  // rbac: false (a test about something else than permissions) turns admission off unless asked for.
  const off = opts.admission === false || (opts.rbac === false && opts.admission === undefined);
  const dir = off ? undefined : ((opts.admission || undefined)?.deployDir ?? DEPLOY_DIR);
  return mod.createFakeAdmission({ docs: dir ? kustomizationDocs(dir) : [], ...o });
}

export async function startFakeApiServer(opts: FakeApiServerOptions = {}): Promise<FakeApiServer> {
  const tls = opts.tls ?? true;
  const started = performance.now();
  /** The stored objects of each resource, by "namespace/name" ("/name" when cluster-scoped). */
  const stores = new Map<Resource, Map<string, KubeObject>>();
  const storeOf = (resource: Resource): Map<string, KubeObject> => {
    let store = stores.get(resource);
    if (!store) stores.set(resource, (store = new Map()));
    return store;
  };
  const pods = storeOf("pods");
  const nads = storeOf("nads");
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

  const state = { token: opts.token ?? "" };
  let storageRetries = 0;
  const rbac: RbacPolicy | undefined =
    opts.rbac === false ? undefined : loadShippedRbac(opts.rbac?.deployDir);
  // The token is the shipped service account's (the DaemonSet's projected token, the installer's kubeconfig).
  const saUser: UserInfo =
    (rbac ?? loadShippedRbac()).serviceAccounts[0] ?? serviceAccountUser("default", "default");
  const admission = await loadFakeAdmission(opts, { user: saUser, pods: () => pods.values() });
  // The DaemonSet's pod-bound token on the fixtures' node: a test-chosen `token` stands for it too.
  const ownToken = admission.issueToken({ node: opts.node ?? "node-1", pod: "plexus-fake" });
  const tokenUser: UserInfo = admission.authenticate(ownToken)!;
  state.token ||= ownToken;

  /** kube-apiserver's authenticators, x509 first: a verified client certificate, else the bearer token. */
  function authenticate(
    req: IncomingMessage,
  ): { user: UserInfo; by: "token" | "client-certificate" } | undefined {
    const socket = req.socket as Partial<TLSSocket>;
    if (opts.clientCertificates && socket.authorized) {
      const subject = socket.getPeerCertificate?.()?.subject as
        | Record<string, string | string[]>
        | undefined;
      const cn = subject?.CN;
      if (typeof cn === "string" && cn) {
        const o = subject?.O;
        const groups = [...(Array.isArray(o) ? o : o ? [o] : []), "system:authenticated"];
        return { user: { name: cn, groups }, by: "client-certificate" };
      }
    }
    if (req.headers.authorization === `Bearer ${state.token}`)
      return { user: tokenUser, by: "token" };
    if (req.headers.authorization === `Bearer ${ADMIN_TOKEN}`)
      return { user: ADMIN_USER, by: "token" };
    const bound = admission.authenticate(req.headers.authorization?.replace(/^Bearer /, "") ?? "");
    return bound ? { user: bound, by: "token" } : undefined;
  }

  /** RBAC's decision, or undefined when allowed: discovery paths are open to every authenticated user. */
  function denied(
    user: UserInfo,
    info: RequestInfo | undefined,
    method: string,
    path: string,
  ): string | undefined {
    // kube-apiserver authorizes the system:masters group before RBAC is asked.
    if (!rbac || user.groups.includes("system:masters")) return undefined;
    if (!info) {
      if (method === "GET" && DISCOVERY.test(path)) return undefined;
      return `forbidden: User "${user.name}" cannot ${method.toLowerCase()} path "${path}"`;
    }
    return authorize(rbac, user, info) ? undefined : forbiddenMessage(user, info);
  }

  function send(
    res: ServerResponse,
    code: number,
    body: unknown,
    headers: Record<string, string> = {},
  ): void {
    const buf = Buffer.from(JSON.stringify(body));
    res.writeHead(code, {
      "content-type": "application/json",
      "content-length": String(buf.length),
      ...headers,
    });
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

  function takeFault(method: string, path: string, isWatch: boolean, query: string): Fault[] {
    const out: Fault[] = [];
    for (const r of rules) {
      if (r.left <= 0) continue;
      if (r.match.watch !== undefined && r.match.watch !== isWatch) continue;
      if (r.match.method && r.match.method.toUpperCase() !== method) continue;
      if (r.match.query && !r.match.query.test(query)) continue;
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

  function put(resource: Resource, key: string, obj: KubeObject): HistoryEvent {
    const store = storeOf(resource);
    const prev = store.get(key);
    store.set(key, obj);
    return {
      rv: Number(obj.metadata.resourceVersion),
      type: prev ? "MODIFIED" : "ADDED",
      resource,
      obj,
      prev,
    };
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
    const def = defOf(resource);
    const [apiVersion, kind] = [apiVersionOf(def), def.kind];
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
    c: Call,
    resource: Resource,
    ns: string | undefined,
  ): [number, unknown] | WatchPlan {
    const { q } = c;
    const fieldFilter = parseFieldSelector(q.get("fieldSelector"), resource);
    const labelFilter = parseLabelSelector(q.get("labelSelector"));
    const filter: Filter = (o) =>
      (ns === undefined || o.metadata.namespace === ns) && fieldFilter(o) && labelFilter(o);
    if (c.info.verb === "watch") return watchPlan(resource, filter, q);
    const o = listOptions(q);
    const servedFrom = servesFromStorage(o) ? "etcd" : "watch-cache";
    const page =
      servedFrom === "etcd"
        ? listFromStorage(resource, filter, o)
        : listFromCache(resource, filter, o);
    c.logged.list = { servedFrom, resourceVersion: o.resourceVersion };
    const def = defOf(resource);
    return [
      200,
      {
        apiVersion: apiVersionOf(def),
        kind: def.listKind,
        metadata: page.metadata,
        items: page.items,
      },
    ];
  }

  function watchPlan(resource: Resource, filter: Filter, q: URLSearchParams): WatchPlan {
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

  /** The watch cache: always caught up here, so "0" and "not older than N ≤ now" are the current state, whole (no paging). */
  function listFromCache(resource: Resource, filter: Filter, o: ListOptions): ListPage {
    const rv = Number(o.resourceVersion || 0);
    if (rv > resourceVersion) throw tooLargeResourceVersion(rv, resourceVersion);
    return {
      metadata: { resourceVersion: String(resourceVersion) },
      items: [...storeOf(resource).values()].filter(filter),
    };
  }

  /**
   * etcd: a quorum read at the newest revision, or at the requested one (Exact, and a limit with a
   * resourceVersion), in key order, paged by `limit`; a continuation reads the first page's revision.
   */
  function listFromStorage(resource: Resource, filter: Filter, o: ListOptions): ListPage {
    const h = historyOf(resource);
    let at = resourceVersion;
    let start = "";
    if (o.continue) {
      const token = decodeContinue(o.continue);
      start = token.start;
      // -1: the inconsistent continuation handed out with a 410, at the newest revision.
      if (token.rv !== -1) {
        if (token.rv < h.compactedRv) throw continueExpired(token.start);
        at = token.rv;
      }
    } else if (
      o.resourceVersion !== "" &&
      o.resourceVersion !== "0" &&
      o.match !== "NotOlderThan" &&
      o.limit > 0
    ) {
      at = Number(o.resourceVersion);
    } else if (o.match === "Exact") at = Number(o.resourceVersion);
    const from = Number(o.resourceVersion || 0);
    if (at > resourceVersion || from > resourceVersion)
      throw tooLargeResourceVersion(Math.max(at, from), resourceVersion);
    if (at < h.compactedRv)
      throw new HttpError(410, "The resourceVersion for the provided list is too old.");
    const matching = [...snapshotAt(resource, at)].filter(
      ([key, obj]) => key >= start && filter(obj),
    );
    matching.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    const page = o.limit > 0 ? matching.slice(0, o.limit) : matching;
    const metadata: Record<string, unknown> = { resourceVersion: String(at) };
    if (page.length < matching.length) {
      metadata.continue = encodeContinue(at, `${page.at(-1)![0]}\u0000`);
      metadata.remainingItemCount = matching.length - page.length;
    }
    return { metadata, items: page.map(([, obj]) => obj) };
  }

  /** The store as it was at revision `rv`: the retained history undone back to it. */
  function snapshotAt(resource: Resource, rv: number): Map<string, KubeObject> {
    const store = storeOf(resource);
    if (rv >= resourceVersion) return store;
    const h = historyOf(resource);
    const snap = new Map(store);
    for (let i = h.events.length - 1; i >= h.start && h.events[i]!.rv > rv; i--) {
      const e = h.events[i]!;
      const key = podKey(e.obj.metadata.namespace ?? "", e.obj.metadata.name);
      if (e.prev) snap.set(key, e.prev);
      else snap.delete(key);
    }
    return snap;
  }

  /** Starts a watch stream: expiry, the first batch (current state or replayed history), then live. */
  async function startWatch(
    res: ServerResponse,
    plan: WatchPlan,
    fault: Fault | undefined,
  ): Promise<void> {
    const h = historyOf(plan.resource);
    if (!plan.sendInitial && plan.since! < h.compactedRv) {
      const message = `too old resource version: ${plan.since} (${h.compactedRv})`;
      if (opts.expiredWatch === "status")
        return send(res, 410, statusBody(410, message, "Expired"));
      res.writeHead(200, { "content-type": "application/json", "transfer-encoding": "chunked" });
      res.end(eventLine("ERROR", JSON.stringify(statusBody(410, message, "Expired"))));
      return;
    }
    const w: Watcher = {
      resource: plan.resource,
      filter: plan.filter,
      res,
      timers: [],
      queue: undefined,
    };
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
      throw new HttpError(
        400,
        `the body of the request was in an unknown format: ${(err as Error).message}`,
      );
    }
  }

  /**
   * An update as the generic registry store makes it: `preconditions` (PUT: the object's UID) are
   * checked against storage (409); `mutate` turns the stored object into the new one (PATCH applies
   * the patch to it); a resourceVersion in the result other than the stored one is 409; then the
   * update is validated (a changed UID is 422 Invalid). A racing write makes the compare-and-swap
   * fail: the object is re-read and `mutate` re-applied, as GuaranteedUpdate does.
   */
  function updatePod(u: {
    ns: string;
    name: string;
    sub: boolean;
    uidPrecondition: unknown;
    mutate: (current: KubeObject) => Record<string, unknown>;
    racingWrite: boolean;
    admit: (old: KubeObject, next: KubeObject) => void;
  }): KubeObject {
    const key = podKey(u.ns, u.name);
    for (let attempt = 0; ; attempt++) {
      const current = pods.get(key);
      if (!current) notFound("pods", u.name);
      const curMeta = current.metadata;
      if (u.uidPrecondition !== undefined && u.uidPrecondition !== curMeta.uid) {
        const why = `Precondition failed: UID in precondition: ${String(u.uidPrecondition)}, UID in object meta: ${String(curMeta.uid)}`;
        conflict("pods", u.name, why);
      }
      const next = u.mutate(current);
      const meta = (isObject(next.metadata) ? next.metadata : {}) as Record<string, unknown>;
      if (meta.resourceVersion !== undefined && meta.resourceVersion !== curMeta.resourceVersion) {
        conflict(
          "pods",
          u.name,
          "the object has been modified; please apply your changes to the latest version and try again",
        );
      }
      if (meta.uid !== undefined && meta.uid !== "" && meta.uid !== curMeta.uid)
        invalidUid(u.name, meta.uid);
      if (u.racingWrite && attempt === 0) {
        // Another writer lands first: this write's compare-and-swap on the old revision fails.
        const racer = { ...current, metadata: { ...curMeta, resourceVersion: nextRv() } };
        record([put("pods", key, racer)]);
        storageRetries++;
        continue;
      }
      // The status subresource keeps the spec; the main resource keeps the status (as the apiserver).
      const merged: KubeObject = {
        ...(next as KubeObject),
        apiVersion: "v1",
        kind: "Pod",
        metadata: {
          ...meta,
          name: u.name,
          namespace: u.ns,
          uid: curMeta.uid,
          creationTimestamp: curMeta.creationTimestamp,
          resourceVersion: nextRv(),
        },
      };
      if (u.sub) merged.spec = current.spec;
      else merged.status = current.status;
      u.admit(current, {
        ...merged,
        metadata: { ...merged.metadata, resourceVersion: curMeta.resourceVersion },
      });
      record([put("pods", key, merged)]);
      return merged;
    }
  }

  /** rest.BeforeUpdate's validation of object meta: the UID is immutable. */
  function invalidUid(name: string, uid: unknown): never {
    const what = `Invalid value: ${JSON.stringify(String(uid))}: field is immutable`;
    const e = new HttpError(422, `Pod "${name}" is invalid: metadata.uid: ${what}`, {
      name,
      kind: "Pod",
      causes: [{ reason: "FieldValueInvalid", message: what, field: "metadata.uid" }],
    });
    throw e;
  }

  function handlePods(c: Call, ns: string, name: string, sub: boolean): [number, unknown] {
    const { method } = c;
    if (method === "GET") {
      const current = pods.get(podKey(ns, name));
      if (!current) notFound("pods", name);
      return [200, current];
    }
    const racingWrite = c.fault?.kind === "racing-write";
    if (method === "PUT") {
      const next = parseBody(c.body);
      if (next.kind !== undefined && next.kind !== "Pod")
        throw new HttpError(400, `kind ${String(next.kind)} does not match Pod`);
      // An update's object carries its UID, which becomes a storage precondition (409, not 422).
      const uid = isObject(next.metadata) && next.metadata.uid ? next.metadata.uid : undefined;
      const admit = admitter(c, "UPDATE");
      return [
        200,
        updatePod({ ns, name, sub, uidPrecondition: uid, mutate: () => next, racingWrite, admit }),
      ];
    }
    if (method === "PATCH") {
      const ct = (c.req.headers["content-type"] ?? "").split(";")[0]!.trim();
      if (
        ct !== "application/merge-patch+json" &&
        ct !== "application/strategic-merge-patch+json"
      ) {
        throw new HttpError(
          415,
          `the fake API server does not implement patch type ${JSON.stringify(ct)}`,
        );
      }
      const patch = parseBody(c.body);
      const apply = ct === "application/merge-patch+json" ? mergePatch : strategicMergePatch;
      // No storage precondition: the patch applies to whatever is stored, UID and resourceVersion included.
      const mutate = (current: KubeObject) => apply(current, patch) as Record<string, unknown>;
      const admit = admitter(c, "UPDATE");
      return [
        200,
        updatePod({ ns, name, sub, uidPrecondition: undefined, mutate, racingWrite, admit }),
      ];
    }
    throw new HttpError(405, `method ${method} not allowed`);
  }

  /** Admission of a write: a denial thrown as kube-apiserver answers it, warnings on the answer. */
  function admitter(c: Call, operation: "CREATE" | "UPDATE") {
    return (oldObject: KubeObject | null, object: KubeObject) => {
      const outcome: AdmissionOutcome = admission.review({
        info: c.info,
        user: c.user,
        operation,
        object,
        oldObject,
      });
      if (outcome.warnings.length) (c.logged.warnings ??= []).push(...outcome.warnings);
      if (!outcome.denial) return;
      const e = new HttpError(outcome.denial.code, outcome.denial.message, outcome.denial.details);
      e.reason = outcome.denial.reason;
      throw e;
    };
  }

  /** GET of a named object of a read-only resource (the default handler). */
  function handleGet(c: Call, def: ResourceDef, ns: string, name: string): [number, unknown] {
    if (c.method !== "GET") throw new HttpError(405, `method ${c.method} not allowed`);
    const obj = storeOf(def.key as Resource).get(podKey(ns, name));
    // kube-apiserver's NewNotFound: the resource as `kind`, its group beside it (omitted for core).
    if (!obj)
      throw new HttpError(
        404,
        `${def.group ? `${def.plural}.${def.group}` : def.plural} "${name}" not found`,
        {
          name,
          ...(def.group ? { group: def.group } : {}),
          kind: def.plural,
        },
      );
    return [200, obj];
  }

  /** Resources whose named objects take more than GET. */
  const objectHandlers: Partial<
    Record<Resource, (c: Call, ns: string, name: string) => [number, unknown]>
  > = {
    pods: (c, ns, name) => handlePods(c, ns, name, c.info.subresource === "status"),
  };

  function handleEvent(c: Call, def: ResourceDef): [number, unknown] {
    const ns = c.info.namespace;
    if (c.method !== "POST" || c.info.name || !ns)
      throw new HttpError(405, `method ${c.method} not allowed`);
    const ev = parseBody(c.body) as KubeObject;
    const meta = (isObject(ev.metadata) ? ev.metadata : {}) as Record<string, unknown>;
    if (meta.namespace !== undefined && meta.namespace !== ns)
      throw new HttpError(
        400,
        "the namespace of the provided object does not match the namespace sent on the request",
      );
    const name =
      typeof meta.name === "string" && meta.name
        ? meta.name
        : `${String(meta.generateName ?? "event.")}${(++uidCounter).toString(36)}`;
    const stored = {
      ...ev,
      apiVersion: apiVersionOf(def),
      kind: "Event",
      metadata: {
        ...meta,
        name,
        namespace: ns,
        uid: `event-uid-${++uidCounter}`,
        resourceVersion: nextRv(),
      },
    } as KubeObject;
    admitter(c, "CREATE")(null, stored);
    events.push(stored);
    return [201, stored];
  }

  /** The handler of each resource in the registry table (GET/LIST/WATCH of a stored kind, or create-only). */
  function route(c: Call): [number, unknown] | WatchPlan {
    const { info } = c;
    const policyObject = admission.serve(info, c.method);
    if (policyObject) return policyObject;
    const def = RESOURCES.find(
      (d) =>
        d.group === info.apiGroup && d.version === info.apiVersion && d.plural === info.resource,
    );
    if (!def || (info.subresource && !def.subresources.includes(info.subresource)))
      throw new HttpError(404, "the server could not find the requested resource");
    if (def.key === "events") return handleEvent(c, def);
    const ns = info.namespace || undefined;
    if (!info.name) {
      if (c.method !== "GET") throw new HttpError(405, `method ${c.method} not allowed`);
      return handleList(c, def.key, ns);
    }
    if (def.namespaced !== Boolean(ns))
      throw new HttpError(404, "the server could not find the requested resource");
    const handler = objectHandlers[def.key];
    return handler ? handler(c, ns ?? "", info.name) : handleGet(c, def, ns ?? "", info.name);
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
    const logged: LoggedRequest = {
      method,
      path,
      query: url.search,
      contentType: req.headers["content-type"],
      userAgent: req.headers["user-agent"],
      time: performance.now() - started,
      body,
      ...(sni ? { servername: sni } : {}),
    };
    requests.push(logged);

    if (opts.latencyMs) await later(opts.latencyMs);
    const who = authenticate(req);
    if (!who) return send(res, 401, statusBody(401, "Unauthorized"));
    logged.user = who.user.name;
    logged.authenticatedBy = who.by;
    const info = requestInfo(method, path, url.searchParams);
    const forbidden = denied(who.user, info, method, path);
    if (forbidden) {
      const details = info
        ? { name: info.name || undefined, group: info.apiGroup || undefined, kind: info.resource }
        : undefined;
      return send(
        res,
        403,
        statusBody(403, forbidden, "Forbidden", details && JSON.parse(JSON.stringify(details))),
      );
    }

    const faults = takeFault(method, path, isWatch, url.search);
    for (const f of faults) if (f.kind === "delay") await later(f.ms);
    const fault = faults.find((f) => f.kind !== "delay");
    if (fault?.kind === "status") {
      return send(
        res,
        fault.code,
        statusBody(
          fault.code,
          fault.message ?? `injected ${fault.code}`,
          fault.reason,
          fault.details,
        ),
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
      res.writeHead(200, {
        "content-type": "text/html; charset=utf-8",
        "content-length": String(html.length),
      });
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

    if (info && opts.unserved?.includes(`${info.apiGroup}/${info.apiVersion}`))
      return notServed(res);
    let routed: [number, unknown] | WatchPlan;
    try {
      if (!info) throw new HttpError(404, "the server could not find the requested resource");
      routed = route({
        method,
        info,
        q: url.searchParams,
        req,
        body,
        fault,
        logged,
        user: who.user,
      });
    } catch (err) {
      if (!(err instanceof HttpError)) throw err;
      const retryAfter = err.details?.retryAfterSeconds;
      return send(
        res,
        err.code,
        statusBody(err.code, err.message, err.reason, err.details, err.listContinue),
        typeof retryAfter === "number" ? { "retry-after": String(retryAfter) } : {},
      );
    }
    if (!Array.isArray(routed)) return startWatch(res, routed, fault);
    const [code, answer] = routed;
    const buf = Buffer.from(JSON.stringify(answer));
    if (fault?.kind === "truncated") {
      const half = buf.subarray(0, Math.floor(buf.length / 2));
      res.writeHead(200, {
        "content-type": "application/json",
        "content-length": String(half.length),
      });
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
    const headers: Record<string, string | string[]> = {
      "content-type": "application/json",
      "content-length": String(buf.length),
    };
    if (logged.warnings) headers.warning = logged.warnings.map((w) => `299 - ${JSON.stringify(w)}`);
    res.writeHead(code, headers);
    res.end(buf);
  }

  const handler = (req: IncomingMessage, res: ServerResponse) => {
    onRequest(req, res).catch((err: unknown) => {
      if (!res.headersSent)
        send(res, 500, statusBody(500, `fake API server bug: ${(err as Error).message}`));
      else res.destroy();
    });
  };
  // As kube-apiserver with --client-ca-file: a certificate is asked for, not required; one that does
  // not verify authenticates nobody (the request then needs a token).
  const clientCa = opts.clientCertificates
    ? { requestCert: true, rejectUnauthorized: false, ca: [TEST_CA_PEM] }
    : {};
  const server: Server = tls
    ? createHttpsServer({ cert: SERVER_CERT, key: SERVER_KEY, ...clientCa }, handler)
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
      const ns = isNamespacedDra(resource) ? (obj.metadata.namespace ?? "default") : "";
      const key = podKey(ns, obj.metadata.name);
      const existing = storeOf(resource).get(key)?.metadata;
      const stored: KubeObject = {
        apiVersion: DRA_API_VERSION,
        kind: draKindOf(resource),
        ...obj,
        metadata: {
          uid: existing?.uid ?? `dra-uid-${++uidCounter}`,
          ...obj.metadata,
          ...(ns ? { namespace: ns } : {}),
          resourceVersion: nextRv(),
        },
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
      for (const h of histories.values())
        Object.assign(h, { events: [], start: 0, compactedRv: resourceVersion });
      for (const d of RESOURCES)
        if (d.key !== "events") historyOf(d.key).compactedRv = resourceVersion;
    },
    watchCount: () => watchers.size,
    events: () => [...events],
    storageRetries: () => storageRetries,
    user: tokenUser,
    issueToken: (b = {}) => admission.issueToken(b),
    admissionAudit: () => admission.audit,
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
          (s) =>
            new Promise<void>((resolve) =>
              s.closed ? resolve() : s.once("close", () => resolve()),
            ),
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
  /**
   * Authenticate with a test client certificate (test/support/tls/README.md) instead of a token:
   * inline (`client-certificate-data`/`client-key-data`) or as file paths (`client-certificate`/`client-key`).
   */
  clientCertificate?: { name: ClientCertName; as: "data" | "file" };
}

/** The client certificates in test/support/tls (see its README). */
export type ClientCertName = "plexus" | "other" | "selfsigned";

export function clientCertFiles(name: ClientCertName): { cert: string; key: string } {
  return { cert: join(TLS_DIR, `client-${name}.crt`), key: join(TLS_DIR, `client-${name}.key`) };
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
  if (o.clientCertificate) {
    const files = clientCertFiles(o.clientCertificate.name);
    auth =
      o.clientCertificate.as === "file"
        ? `    client-certificate: ${files.cert}\n    client-key: ${files.key}`
        : `    client-certificate-data: ${readFileSync(files.cert).toString("base64")}\n    client-key-data: ${readFileSync(files.key).toString("base64")}`;
  } else if (o.tokenFile) {
    const tokenPath = join(dir, `${o.fileName ?? "kubeconfig"}.token`);
    writeFileSync(tokenPath, token);
    auth = `    tokenFile: ${tokenPath}`;
  }
  // A plain-http server gets no TLS line at all, as `kubectl proxy` users write it.
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
  const args = [
    "req",
    "-x509",
    "-newkey",
    "ec",
    "-pkeyopt",
    "ec_paramgen_curve:prime256v1",
    "-nodes",
  ];
  execFileSync(
    "openssl",
    [
      ...args,
      "-keyout",
      join(dir, "k.pem"),
      "-out",
      join(dir, "ca.pem"),
      "-subj",
      "/CN=other-ca",
      "-days",
      "1",
    ],
    {
      stdio: "ignore",
    },
  );
  return readFileSync(join(dir, "ca.pem"), "utf8");
}
