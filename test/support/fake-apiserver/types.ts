/** The fake API server's public shapes: its objects, its options, its test controls. */
import type { TokenBinding } from "./admission.ts";
import type { Fault, FaultMatcher } from "./faults.ts";
import type { UserInfo } from "./rbac.ts";
import type { DraResource, Resource } from "./resources.ts";

export type KubeObject = {
  apiVersion?: string;
  kind?: string;
  metadata: Record<string, unknown> & { name: string; namespace?: string };
  [k: string]: unknown;
};

export type Filter = (obj: KubeObject) => boolean;

/** One change, as kube-apiserver's watch cache keeps it: the object after and before. */
export interface HistoryEvent {
  rv: number;
  type: "ADDED" | "MODIFIED" | "DELETED";
  resource: Resource;
  /** After the change; for DELETED the last state with the deletion's resourceVersion. */
  obj: KubeObject;
  prev: KubeObject | undefined;
  json?: string;
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
   * `deployDir`), evaluated on every write (admission.ts). `false`: none, as a
   * cluster without the node-scoped-writes component. Off by default with `rbac: false`.
   */
  admission?: false | { deployDir?: string };
  /** The node the server's own token was issued on (default "node-1", the fixtures' node). */
  node?: string;
  /**
   * Ask for a client certificate (TLS only) and authenticate one the test CA signed as its CN/O.
   */
  clientCertificates?: boolean;
  /**
   * Interval of BOOKMARK events on watches with `allowWatchBookmarks=true` (default 60 s, about
   * what kube-apiserver sends; tests of bookmarks set it short).
   */
  bookmarkIntervalMs?: number;
  /**
   * API group versions this server does not serve (`resource.k8s.io/v1`: DRA off;
   * `k8s.cni.cncf.io/v1`: the NAD CRD not installed). Every path under one is answered as
   * kube-apiserver answers a path no handler serves (see status.ts's `notServed`).
   */
  unserved?: string[];
  /**
   * ResourceClaim status writes need `resourceclaims/driver` per driver they change (granular
   * status authorization, on by default from Kubernetes 1.36); `false`: a cluster before 1.36,
   * or with the DRAResourceClaimGranularStatusAuthorization gate off.
   */
  draGranularStatusAuthorization?: boolean;
}

export type NadInput = {
  metadata: { name: string; namespace?: string } & Record<string, unknown>;
  spec?: { config?: string };
};

export type PodInput = Partial<KubeObject> & {
  metadata: { name: string; namespace?: string } & Record<string, unknown>;
};

export interface FakeApiServer extends AsyncDisposable {
  readonly url: string;
  readonly port: number;
  readonly caPem: string;
  token: string;
  readonly requests: LoggedRequest[];
  addPod(pod: PodInput): KubeObject;
  getPod(namespace: string, name: string): KubeObject | undefined;
  /** Emits DELETED to watches; false (and nothing emitted) when the pod does not exist. */
  deletePod(namespace: string, name: string): boolean;
  /** Adds or replaces (then the event is MODIFIED) a NAD. */
  addNad(nad: NadInput): KubeObject;
  /** Many NADs at once (one write per open watch): linear in the count. */
  addNads(nads: NadInput[]): KubeObject[];
  deleteNad(namespace: string, name: string): boolean;
  /** Adds or replaces a ResourceClaim or ResourceSlice. */
  addDra(
    resource: DraResource,
    obj: Partial<KubeObject> & { metadata: { name: string; namespace?: string } },
  ): KubeObject;
  /** The current global resourceVersion. */
  resourceVersion(): string;
  /** Ends every open watch stream cleanly (terminating chunk); with `abort`, destroys their
   * connections instead (the client sees a network error). Returns how many were open. */
  dropWatches(options?: { abort?: boolean }): number;
  /**
   * Forgets the whole event history: a watch resuming from an older resourceVersion is expired
   * (410).
   */
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
  issueToken(binding?: Omit<TokenBinding, "namespace" | "serviceAccount">): string;
  /** What bindings with the Audit action recorded. */
  admissionAudit(): string[];
  inject(match: FaultMatcher, fault: Fault): void;
  clearFaults(): void;
  /** Open TCP connections right now. */
  connectionCount(): number;
  /** Destroys every connection, watch streams included. */
  close(): Promise<void>;
}
