/**
 * {@link KubeApi} over the API server's REST protocol: the calls the plugin makes (a GET of each
 * object cluster/reads.ts declares, merge-patch pods/status, create event; for DRA list slices,
 * apply a claim's device status) on an {@link ApiTransport}, with bounded retries. No
 * @kubernetes/client-node here: its initialisation would be paid by every pod sandbox, and a few
 * JSON requests need none of its model classes.
 *
 * Failures become CniErrors: 3 pod not found (B38, B43), 6 undecodable answer (B40), 7 bad names
 * (B20), 104 everything else after bounded retries (B34–B37, B41, B42).
 */
import { hostname } from "node:os";
import { CniError, Code, isCniError } from "../cni/errors";
import { isPlainObject } from "../cni/json";
import type { Logger } from "../log/logger";
import { validateDns1123Label } from "../npwg/dns1123";
import { NETWORK_STATUS_ANNOTATION } from "../npwg/types";
import {
  type ApiTransport,
  DecodeError,
  HttpTransport,
  RETRYABLE_TRANSPORT,
  shortLivedTransport,
  TransportError,
  type HttpAnswer,
} from "./http-transport";
import {
  CLAIM_STATUS_MANAGER,
  type ClaimDeviceStatus,
  type ClaimStatusOutcome,
  DRA_GROUP,
  DRA_VERSION,
  type ResourceSlice,
  trimResourceSlice,
} from "../cluster/dra-objects";
import { NAD_GROUP, NAD_PLURAL } from "../cluster/objects";
import type { ApiResource, ReadAnswer, ReadKind, ReadRef, ReadRow } from "../cluster/reads";
import { ObjectReader, READS, validateReadRef, validateSubdomain } from "../cluster/reads";
import { eventForPeople, type KubeApi, type PodEvent, type PodWrite } from "../cluster/kube-api";
import type { KubeSource } from "./kubeconfig";
import {
  backoffMs,
  DEFAULT_RETRY_POLICY,
  parseRetryAfter,
  RetriesExhausted,
  type RetryClock,
  type RetryPolicy,
  type RetryVerdict,
  realClock,
  withRetry,
} from "./retry";

const EVENT_COMPONENT = "plexus";

export interface KubeClientOptions {
  retry?: Partial<RetryPolicy> | undefined;
  /** 409 answers to the status write before giving up (B42). Default 5. */
  conflictRetries?: number | undefined;
  /** Largest response body accepted (B41). Default 4 MiB (etcd's object limit is 1.5 MiB). */
  maxResponseBytes?: number | undefined;
  /** Absolute cap (epoch ms) on every operation, e.g. the ADD's own budget (B35). */
  deadlineAt?: number | undefined;
  log?: Logger | undefined;
  clock?: RetryClock | undefined;
  /**
   * A process that makes its few requests and exits (the CNI binary): Bun's fetch where it runs
   * in Bun (see {@link shortLivedTransport}), whose pooled connection {@link RestKube.close} cannot
   * release. Never for the daemon.
   */
  shortLived?: boolean | undefined;
  /** Connections kept to the API server at once (default 4). */
  maxSockets?: number | undefined;
  /** User-Agent of every request, so audit logs tell the CNI binary from the daemon. */
  userAgent?: string | undefined;
}

const DEFAULT_MAX_RESPONSE_BYTES = 4 * 1024 * 1024;
const DEFAULT_CONFLICT_RETRIES = 5;

/** What a metav1.Status says, as far as Plexus reads it. */
export interface ApiStatus {
  message?: string;
  reason?: string;
  /**
   * `details.causes`: which field a 422 Invalid is about, what a 504 Timeout was
   * (ResourceVersionTooLarge).
   */
  causes?: { reason?: string; field?: string; message?: string }[];
  /**
   * `details.name`, `details.kind` (the resource, e.g. `pods`), `details.group`: which object a
   * 404 is about.
   */
  details?: { name?: string; kind?: string; group?: string };
}

/** A non-2xx answer: its code and the metav1.Status it carried, if any. */
export class ApiStatusError extends Error {
  override name = "ApiStatusError";
  readonly code: number;
  readonly headers: Record<string, string>;
  readonly status: ApiStatus;
  /** The body's first bytes, for a message when it is no Status (a plain `404 page not found`). */
  readonly bodyStart: string;
  constructor(answer: HttpAnswer) {
    const status = statusOf(answer.body);
    const reason = status.reason ? ` ${status.reason}` : "";
    super(`HTTP ${answer.status}${reason}${status.message ? `: ${status.message}` : ""}`);
    this.code = answer.status;
    this.headers = answer.headers;
    this.status = status;
    this.bodyStart = answer.body.subarray(0, 80).toString("utf8").trim();
  }
}

function statusOf(body: Buffer): ApiStatus {
  try {
    const b = JSON.parse(body.toString("utf8")) as Record<string, unknown>;
    if (typeof b !== "object" || b === null) return {};
    const details = b.details as Record<string, unknown> | undefined;
    const causes = Array.isArray(details?.causes)
      ? details.causes.filter(
          (c): c is NonNullable<ApiStatus["causes"]>[number] => typeof c === "object" && c !== null,
        )
      : [];
    return {
      ...(typeof b.message === "string" ? { message: b.message } : {}),
      ...(typeof b.reason === "string" ? { reason: b.reason } : {}),
      ...(causes.length ? { causes } : {}),
      ...(isPlainObject(details) ? { details: namedDetails(details) } : {}),
    };
  } catch {
    return {};
  }
}

function namedDetails(details: Record<string, unknown>): NonNullable<ApiStatus["details"]> {
  const out: NonNullable<ApiStatus["details"]> = {};
  for (const k of ["name", "kind", "group"] as const)
    if (typeof details[k] === "string") out[k] = details[k];
  return out;
}

/**
 * The API server's answer behind an error (followed through CniError and RetriesExhausted causes).
 */
export function apiStatusIn(err: unknown): ApiStatusError | undefined {
  for (let e = err, depth = 0; e && depth < 8; depth++) {
    if (e instanceof ApiStatusError) return e;
    e = e instanceof RetriesExhausted ? e.lastError : (e as { cause?: unknown }).cause;
  }
  return undefined;
}

/** The one resource Plexus lists rather than reads by name (cluster/reads.ts has the rest). */
export const SLICE_RESOURCE: ApiResource = {
  group: DRA_GROUP,
  version: DRA_VERSION,
  plural: "resourceslices",
};

/** An object's path: `/api/v1/…` in the core group, else `/apis/<group>/<version>/…`. */
function objectPath(resource: ApiResource, ref: { namespace: string; name: string }): string {
  const { group, version, plural } = resource;
  const api = group ? `/apis/${group}/${version}` : `/api/${version}`;
  return `${api}/namespaces/${ref.namespace}/${plural}/${ref.name}`;
}

export type NotFound = "missing" | "not-served";

/**
 * What a 404 means, read as kube-apiserver writes it: a missing object is a NotFound Status whose
 * `details` name it (its name, its resource as `kind`, its `group`); a group, version or resource
 * the server does not serve (a CRD not installed, an API not enabled) falls through its handler
 * chain to Go's `http.NotFound`, the plain text `404 page not found`, with no Status at all. So a
 * 404 is "missing" only when its Status names the object asked for; any other 404 (a list has no
 * name) is "not-served". Undefined: not a 404. The one classifier of every read (pods, NADs,
 * claims, slices).
 */
export function notFoundIn(err: unknown, api: ApiResource, name?: string): NotFound | undefined {
  const s = apiStatusIn(err);
  if (s?.code !== 404) return undefined;
  const d = s.status.details;
  const namesIt =
    name !== undefined &&
    s.status.reason === "NotFound" &&
    d?.name === name &&
    d.kind === api.plural &&
    (d.group ?? "") === api.group;
  return namesIt ? "missing" : "not-served";
}

/** What the operator can do when a resource is not served, by API group. */
const NOT_SERVED_HINT: Record<string, string> = {
  "": "is the kubeconfig's server URL the API server itself, without a path of a proxy in front?",
  [NAD_GROUP]: `is the NetworkAttachmentDefinition CRD (${NAD_PLURAL}.${NAD_GROUP}) installed?`,
  [DRA_GROUP]: "Dynamic Resource Allocation is not enabled on the cluster",
};

/** Code 104 for a resource the API server does not serve, naming its API and what to check. */
interface NotServed {
  what: string;
  server: string;
  resource: ApiResource;
  err: unknown;
}

function notServedError(notServed: NotServed): CniError {
  const { group, version, plural } = notServed.resource;
  const api = group ? `${group}/${version}` : version;
  const s = apiStatusIn(notServed.err);
  const answer = s?.status.message ?? s?.bodyStart ?? "";
  const said = `HTTP 404${answer ? ` ${JSON.stringify(answer)}` : ""}`;
  const hint = NOT_SERVED_HINT[group] ?? "is that API installed?";
  const served = `the API server ${notServed.server} does not serve ${plural} of API ${api}`;
  return new CniError(
    Code.ApiFailure,
    `${notServed.what}: ${served} (${said}, not a NotFound status naming the object): ${hint}`,
    undefined,
    { cause: notServed.err },
  );
}

/**
 * A 422 Invalid about `metadata.uid`: a patch carrying the old UID met a pod recreated under the
 * same name.
 */
/** B20: the names of the pod a write is for, checked before any request. */
function validatePodWrite(pod: PodWrite): void {
  validateDns1123Label(pod.namespace, "pod namespace");
  validateSubdomain(pod.name, "pod name");
}

function isUidChangeRefused(err: unknown): err is ApiStatusError {
  return isApiStatus(err, 422) && (err.status.causes ?? []).some((c) => c.field === "metadata.uid");
}

/**
 * D1: the applied configuration: the claim by name, Plexus's entries and nothing else. No entry
 * left: no status at all (an empty list would be a value of its own that nobody owns).
 */
function claimApplyConfig(
  claim: { namespace: string; name: string },
  devices: ClaimDeviceStatus[],
): Record<string, unknown> {
  return {
    apiVersion: `${DRA_GROUP}/${DRA_VERSION}`,
    kind: "ResourceClaim",
    metadata: { name: claim.name, namespace: claim.namespace },
    ...(devices.length > 0 ? { status: { devices } } : {}),
  };
}

/** A 409 from server-side apply whose conflicting fields all lie in an entry's `networkData`. */
function networkDataConflict(err: unknown): boolean {
  const s = apiStatusIn(err);
  if (s?.code !== 409) return false;
  const conflicts = (s.status.causes ?? []).filter((c) => c.reason === "FieldManagerConflict");
  return (
    conflicts.length > 0 && conflicts.every((c) => /\]\.networkData(\.|$)/.test(c.field ?? ""))
  );
}

/** B40: an answer of another kind than the row's (or apiVersion, where the row names one): 6. */
function wrongKind(obj: Record<string, unknown>, r: ReadRow, what: string): CniError {
  const version = r.apiVersion;
  const kind = JSON.stringify(obj.kind ?? null);
  const apiVersion = version ? ` (apiVersion ${JSON.stringify(obj.apiVersion ?? null)})` : "";
  const wanted = version ? `${version} ${r.kind}` : r.kind;
  return new CniError(
    Code.Decoding,
    `${what}: the API server answered with kind ${kind}${apiVersion} instead of a ${wanted}`,
  );
}

/** Transport failures before the request could reach the server. */
const NEVER_SENT: ReadonlySet<TransportError["kind"]> = new Set(["refused", "dns"]);

function isApiStatus(err: unknown, code: number): err is ApiStatusError {
  return err instanceof ApiStatusError && err.code === code;
}

/**
 * B34, B35, B36: what is worth another attempt. A request that is not idempotent (an event's
 * create) is repeated only when it surely never reached the server (refused, no such host) or the
 * server said it did nothing (429): after a reset, a timeout or a 5xx it may have been applied.
 */
function classifyForRetry(err: unknown, now = Date.now(), idempotent = true): RetryVerdict {
  if (err instanceof TransportError) {
    const retry = idempotent ? RETRYABLE_TRANSPORT.has(err.kind) : NEVER_SENT.has(err.kind);
    return { retry };
  }
  if (err instanceof ApiStatusError && !idempotent) {
    return err.code === 429
      ? { retry: true, afterMs: parseRetryAfter(err.headers["retry-after"], now) }
      : { retry: false };
  }
  // The watch cache waited for a resourceVersion it has not seen: the caller lists at "" instead
  // (client-go's reflector).
  if (
    err instanceof ApiStatusError &&
    (err.status.causes ?? []).some((c) => c.reason === "ResourceVersionTooLarge")
  )
    return { retry: false };
  if (err instanceof ApiStatusError) {
    if (
      err.code === 429 ||
      err.code === 500 ||
      err.code === 502 ||
      err.code === 503 ||
      err.code === 504
    ) {
      return { retry: true, afterMs: parseRetryAfter(err.headers["retry-after"], now) };
    }
  }
  return { retry: false };
}

/** One object's read, for {@link RestKube}'s 404 handling. */
interface ObjectRead {
  resource: ApiResource;
  name: string;
  what: string;
}

export class RestKube extends ObjectReader implements KubeApi {
  private readonly http: ApiTransport;
  private readonly policy: RetryPolicy;
  private readonly conflictRetries: number;
  private readonly clock: RetryClock;
  /** Where the server and credentials came from (the daemon's watches use the same). */
  readonly source: KubeSource;
  private readonly opts: KubeClientOptions;
  private readonly base: URL;

  constructor(source: KubeSource, opts: KubeClientOptions = {}) {
    super();
    this.source = source;
    this.opts = opts;
    this.base = new URL(source.server);
    const transport = {
      tls: source.tls,
      maxBytes: opts.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES,
      maxSockets: opts.maxSockets,
    };
    this.http = opts.shortLived ? shortLivedTransport(transport) : new HttpTransport(transport);
    this.policy = { ...DEFAULT_RETRY_POLICY, ...opts.retry };
    this.conflictRetries = opts.conflictRetries ?? DEFAULT_CONFLICT_RETRIES;
    this.clock = opts.clock ?? realClock;
  }

  get requestCount(): number {
    return this.http.sent;
  }

  /**
   * One object by name (a row of cluster/reads.ts): its namespace and name checked (B20), a GET
   * of its path, a 404 naming it read as the row says (`undefined`, or 3 for a pod), and the
   * answer checked for its kind and trimmed (6 otherwise).
   */
  override async read<K extends ReadKind>(kind: K, ref: ReadRef): Promise<ReadAnswer<K>> {
    const r: ReadRow = READS[kind];
    validateReadRef(r, ref);
    const { namespace, name } = ref;
    const what = `get ${r.noun} ${namespace}/${name}`;
    let obj: Record<string, unknown>;
    try {
      obj = await this.call("GET", objectPath(r.resource, ref));
    } catch (err) {
      if (!this.isMissing(err, { resource: r.resource, name, what }))
        throw this.toCniError(err, what);
      if (r.optional) return undefined as ReadAnswer<K>;
      throw new CniError(
        Code.UnknownContainer,
        `${what}: the ${r.noun} does not exist (HTTP 404 from ${this.source.server})`,
      );
    }
    const version = r.apiVersion;
    const found =
      obj.kind === r.kind && (!version || obj.apiVersion === version)
        ? r.trim(obj, namespace)
        : undefined;
    if (!found) throw wrongKind(obj, r, what);
    return found as ReadAnswer<K>;
  }

  /** M10, DRA: LIST the ResourceSlices of one driver on one node (server-side field selectors). */
  async listResourceSlices(query: {
    nodeName?: string | undefined;
    driver: string;
  }): Promise<ResourceSlice[]> {
    const fieldSelector = [
      ...(query.nodeName ? [`spec.nodeName=${query.nodeName}`] : []),
      `spec.driver=${query.driver}`,
    ].join(",");
    const path = `/apis/${DRA_GROUP}/${DRA_VERSION}/resourceslices`;
    const l = await this.list(path, { fieldSelector }).catch((err: unknown) => {
      if (notFoundIn(err, SLICE_RESOURCE) !== "not-served") throw err;
      const what = `list ResourceSlices (${fieldSelector})`;
      throw notServedError({ what, server: this.source.server, resource: SLICE_RESOURCE, err });
    });
    if (l.kind !== "ResourceSliceList" || !Array.isArray(l.items))
      throw new CniError(
        Code.Decoding,
        `list ResourceSlices (${fieldSelector}): the API server answered with kind ` +
          `${JSON.stringify(l.kind ?? null)} instead of a ResourceSliceList`,
      );
    // An item without `kind` (as list items come) is taken as a ResourceSlice by the trim.
    return l.items.flatMap((x) => trimResourceSlice(x as Record<string, unknown>) ?? []);
  }

  /**
   * D1: server-side apply of Plexus's part of the claim's `status.devices` (field manager
   * `plexus`, on `resourceclaims/status`): the API server merges the entries into the driver's by
   * their keys and keeps what other managers own, and a repeated apply changes nothing, so the
   * runtime's retries are harmless. A 409 whose conflicts are all in `networkData` means the
   * driver reports it itself: the entries are applied once more without it. A claim gone (404):
   * nothing to write.
   */
  async applyClaimDeviceStatus(
    claim: { namespace: string; name: string },
    devices: ClaimDeviceStatus[],
  ): Promise<ClaimStatusOutcome> {
    validateDns1123Label(claim.namespace, "ResourceClaim namespace");
    validateSubdomain(claim.name, "ResourceClaim name");
    const what = `write the device status of ResourceClaim ${claim.namespace}/${claim.name}`;
    const path =
      `${objectPath(READS.resourceClaim.resource, claim)}/status` +
      `?fieldManager=${CLAIM_STATUS_MANAGER}`;
    const deadlineAt = this.operationDeadline();
    const apply = (entries: ClaimDeviceStatus[]) =>
      this.call("PATCH", path, {
        body: JSON.stringify(claimApplyConfig(claim, entries)),
        contentType: "application/apply-patch+yaml",
        deadlineAt,
      });
    const read = { resource: READS.resourceClaim.resource, name: claim.name, what };
    try {
      await apply(devices);
      return "applied";
    } catch (err) {
      if (this.isMissing(err, read)) return "claim-missing";
      if (!networkDataConflict(err)) throw this.toCniError(err, what);
      this.opts.log?.info(
        { claim: `${claim.namespace}/${claim.name}`, err: apiStatusIn(err)?.message },
        "another manager owns the devices' networkData; applying Plexus's condition alone",
      );
    }
    try {
      await apply(devices.map(({ networkData: _, ...entry }) => entry));
      return "without-network-data";
    } catch (err) {
      if (this.isMissing(err, read)) return "claim-missing";
      throw this.toCniError(err, what);
    }
  }

  /**
   * N5, M6: a JSON merge patch of the annotation on `pods/{name}/status`. With `uid` the patch
   * carries `metadata.uid`. PATCH sets no storage precondition, but the UID is immutable: a pod
   * recreated under the same name (another UID) refuses the patch with 422 Invalid on
   * `metadata.uid`, so the old sandbox's status never lands on the new pod (M8) — code 3.
   *
   * B42: a merge patch without resourceVersion is retried inside kube-apiserver (GuaranteedUpdate)
   * and never answers 409; a 409 comes only from something between (an aggregator, a webhook, a
   * server that is not kube-apiserver). It is retried up to `conflictRetries` times, the UID
   * re-checked each time, then fails with 104 (the ADD tears down).
   * B43: 404 (the pod was deleted during the ADD) fails with 3, unlike Multus, which tolerates it
   * (k8snetworkplumbingwg/multus-cni#1407): the sandbox is going away, so tearing the ADD down
   * costs nothing, while reporting success would leave a status-less attachment behind if the
   * "deleted" pod was in fact a stale cache or a recreated one.
   */
  async setNetworkStatus(pod: PodWrite, statusJson: string): Promise<void> {
    validatePodWrite(pod);
    const what = `write network-status of pod ${pod.namespace}/${pod.name}`;
    const body = JSON.stringify({
      metadata: {
        ...(pod.uid ? { uid: pod.uid } : {}),
        annotations: { [NETWORK_STATUS_ANNOTATION]: statusJson },
      },
    });
    const deadlineAt = this.operationDeadline();
    for (let conflicts = 0; ; ) {
      try {
        await this.call("PATCH", `${objectPath(READS.pod.resource, pod)}/status`, {
          body,
          contentType: "application/merge-patch+json",
          deadlineAt,
        });
        return;
      } catch (err) {
        if (this.isMissing(err, { resource: READS.pod.resource, name: pod.name, what }))
          throw new CniError(
            Code.UnknownContainer,
            `${what}: the pod no longer exists (HTTP 404; deleted during ADD)`,
          );
        if (isUidChangeRefused(err)) {
          throw new CniError(
            Code.UnknownContainer,
            `${what}: the pod was deleted and recreated: the API server refused the runtime's ` +
              `K8S_POD_UID ${pod.uid} as a change of the pod's UID (HTTP 422 Invalid: ` +
              `${err.status.message ?? "metadata.uid is immutable"})`,
          );
        }
        if (!isApiStatus(err, 409)) throw this.toCniError(err, what);
        conflicts++;
        await this.afterConflict({ pod, what, conflicts, err, deadlineAt });
      }
    }
  }

  /**
   * One 409 on the status write: the UID re-checked, then a backoff, or 104 when out of attempts or
   * time.
   */
  private async afterConflict(conflict: {
    pod: PodWrite;
    what: string;
    conflicts: number;
    err: ApiStatusError;
    deadlineAt: number;
  }): Promise<void> {
    const { pod, what, conflicts } = conflict;
    if (pod.uid) await this.checkUid(pod as { namespace: string; name: string; uid: string }, what);
    if (conflicts > this.conflictRetries) {
      throw new CniError(
        Code.ApiFailure,
        `${what}: HTTP 409 Conflict ${conflicts} times, giving up ` +
          `(${conflict.err.status.message ?? "conflict"})`,
      );
    }
    const delay = backoffMs(conflicts, this.policy, this.clock.random);
    if (this.clock.now() + delay >= conflict.deadlineAt)
      throw new CniError(
        Code.ApiFailure,
        `${what}: HTTP 409 Conflict ${conflicts} times before the deadline`,
      );
    this.opts.log?.debug({ conflicts, delay }, "network-status write conflicted; retrying");
    await this.clock.sleep(delay);
  }

  private async checkUid(
    pod: { namespace: string; name: string; uid: string },
    what: string,
  ): Promise<void> {
    const current = await this.getPod(pod.namespace, pod.name).catch((err: unknown) => {
      if (isCniError(err) && err.code === Code.UnknownContainer)
        throw new CniError(
          Code.UnknownContainer,
          `${what}: the pod no longer exists (deleted during ADD)`,
        );
      throw err;
    });
    if (current.metadata.uid && current.metadata.uid !== pod.uid) {
      throw new CniError(
        Code.UnknownContainer,
        `${what}: UID mismatch: the runtime's K8S_POD_UID is ${pod.uid} but the API has ` +
          `${current.metadata.uid} (the pod was deleted and recreated)`,
      );
    }
  }

  /**
   * M9: a core/v1 Event on the pod. Best effort, the caller logs failures. A create is not
   * idempotent: a second attempt after a 5xx, a reset or a timeout could record the event twice,
   * so it follows only a refused connection or a 429 (see {@link classifyForRetry}).
   */
  async recordEvent(pod: PodWrite, raw: PodEvent): Promise<void> {
    validatePodWrite(pod);
    const event = eventForPeople(raw);
    const now = new Date().toISOString();
    const host = hostname();
    const body = {
      apiVersion: "v1",
      kind: "Event",
      metadata: { generateName: `${pod.name}.`, namespace: pod.namespace },
      involvedObject: {
        apiVersion: "v1",
        kind: "Pod",
        name: pod.name,
        namespace: pod.namespace,
        ...(pod.uid ? { uid: pod.uid } : {}),
      },
      reason: event.reason,
      message: event.message,
      type: event.type,
      source: { component: EVENT_COMPONENT, host },
      reportingComponent: EVENT_COMPONENT,
      reportingInstance: host,
      firstTimestamp: now,
      lastTimestamp: now,
      count: 1,
    };
    try {
      await this.call("POST", `/api/v1/namespaces/${pod.namespace}/events`, {
        body: JSON.stringify(body),
        contentType: "application/json",
        maxAttempts: 2,
        idempotent: false,
      });
    } catch (err) {
      throw this.toCniError(
        err,
        `record event ${event.reason} on pod ${pod.namespace}/${pod.name}`,
      );
    }
  }

  /** GET a list (the daemon's informers), with the same retries; `query` is URL-encoded here. */
  async list(path: string, query: Record<string, string> = {}): Promise<Record<string, unknown>> {
    const qs = new URLSearchParams(query).toString();
    try {
      return await this.call("GET", qs ? `${path}?${qs}` : path);
    } catch (err) {
      throw this.toCniError(err, `list ${path}`);
    }
  }

  /** Destroys the keep-alive sockets (B36). */
  async close(): Promise<void> {
    this.http.close();
  }

  /** A 404 naming the object: true; a resource not served: 104 thrown; anything else: false. */
  private isMissing(err: unknown, read: ObjectRead): boolean {
    const verdict = notFoundIn(err, read.resource, read.name);
    if (verdict === "not-served")
      throw notServedError({
        what: read.what,
        server: this.source.server,
        resource: read.resource,
        err,
      });
    return verdict === "missing";
  }

  private operationDeadline(): number {
    return Math.min(
      this.clock.now() + this.policy.totalTimeoutMs,
      this.opts.deadlineAt ?? Number.POSITIVE_INFINITY,
    );
  }

  /** One API call with the retry policy; each attempt gets its own deadline as an AbortSignal. */
  private call(
    method: string,
    path: string,
    options: {
      body?: string;
      contentType?: string;
      deadlineAt?: number;
      maxAttempts?: number;
      idempotent?: boolean;
    } = {},
  ): Promise<Record<string, unknown>> {
    const url = new URL(this.base.pathname.replace(/\/+$/, "") + path, this.base);
    return withRetry(
      async (timeoutMs) => {
        const ac = new AbortController();
        const timer = setTimeout(() => ac.abort(), timeoutMs);
        try {
          const headers = {
            "user-agent": this.opts.userAgent ?? "plexus-cni",
            ...(await this.source.auth.headers()),
            ...(options.contentType ? { "content-type": options.contentType } : {}),
          };
          const answer = await this.http.request({
            method,
            url,
            headers,
            body: options.body,
            signal: ac.signal,
          });
          // An admission policy's Warn action (a token that names no node,
          // docs/node-scoped-writes.md).
          const warning = answer.headers.warning;
          if (warning)
            this.opts.log?.warn(
              { method, path, warning },
              "the API server answered with a warning",
            );
          if (answer.status < 200 || answer.status >= 300) throw new ApiStatusError(answer);
          return answer.json ?? {};
        } finally {
          clearTimeout(timer);
        }
      },
      {
        policy: options.maxAttempts
          ? { ...this.policy, maxAttempts: options.maxAttempts }
          : this.policy,
        classify: (err) => classifyForRetry(err, this.clock.now(), options.idempotent ?? true),
        deadlineAt: options.deadlineAt ?? this.opts.deadlineAt,
        clock: this.clock,
        onRetry: (err, attempt, delayMs) =>
          this.opts.log?.debug(
            { attempt, delayMs, err: describe(err) },
            "API request failed; retrying",
          ),
      },
    );
  }

  private toCniError(err: unknown, what: string): CniError {
    if (isCniError(err)) return err;
    if (err instanceof RetriesExhausted) {
      const inner = this.toCniError(err.lastError, what);
      return new CniError(inner.code, `${inner.message}; ${err.message}`, inner.details, {
        cause: err,
      });
    }
    if (err instanceof DecodeError)
      return new CniError(
        Code.Decoding,
        `${what}: the API server answered ${err.message}`,
        undefined,
        { cause: err },
      );
    if (err instanceof ApiStatusError) {
      const s = err.status;
      // A body that is no Status (a 404 for a path not served is plain text) is quoted as it came.
      const plain = !s.reason && err.bodyStart ? JSON.stringify(err.bodyStart) : undefined;
      const said = s.message ?? plain;
      const detail = said ? `: ${said}` : "";
      if (err.code === 401 || err.code === 403) {
        // B37: the status and where the credentials came from, so the operator knows what to fix.
        return new CniError(
          Code.ApiFailure,
          `${what}: HTTP ${err.code} ${err.code === 401 ? "Unauthorized" : "Forbidden"} from ` +
            `${this.source.server} with the credentials of ${this.source.credentials}${detail}`,
          undefined,
          { cause: err },
        );
      }
      return new CniError(
        Code.ApiFailure,
        `${what}: HTTP ${err.code}${s.reason ? ` ${s.reason}` : ""} from ` +
          `${this.source.server}${detail}`,
        undefined,
        { cause: err },
      );
    }
    return new CniError(
      Code.ApiFailure,
      `${what}: ${describe(err)} (${this.source.server})`,
      undefined,
      {
        cause: err,
      },
    );
  }
}

function describe(err: unknown): string {
  if (err instanceof ApiStatusError) return `HTTP ${err.code}`;
  return err instanceof Error ? err.message : String(err);
}
