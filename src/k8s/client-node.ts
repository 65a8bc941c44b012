/**
 * {@link KubeApi} over the API server with @kubernetes/client-node 2 (the typed CoreV1Api and
 * CustomObjectsApi, KubeConfig for credentials), with its transport replaced: client-node's
 * default fetch has no timeout (kubernetes-client/javascript#1613), no response size limit and a
 * new connection pool per request. {@link NodeHttpLibrary} is one keep-alive `https.Agent`, a
 * deadline per attempt (headers and body), a size cap (B41), and a check that a 2xx answer is
 * JSON (B40) — all before client-node's deserialiser sees the body.
 *
 * Failures become CniErrors: 3 pod not found (B38, B43), 6 undecodable answer (B40), 7 bad names
 * (B20) or kubeconfig (B15), 104 everything else after bounded retries (B34–B37, B41, B42).
 */
import * as http from "node:http";
import * as https from "node:https";
import { hostname } from "node:os";
import {
  ApiException,
  CoreV1Api,
  CustomObjectsApi,
  type CoreV1Event,
  type ConfigurationOptions,
  type KubeConfig,
  Observable,
  type PromiseHttpLibrary,
  type RequestContext,
  ResponseContext,
  ServerConfiguration,
  type V1Pod,
  createConfiguration,
  wrapHttpLibrary,
} from "@kubernetes/client-node";
import { CniError, Code, isCniError } from "../cni/errors";
import type { Logger } from "../log/logger";
import { validateDns1123Label } from "../npwg/dns1123";
import { NETWORK_STATUS_ANNOTATION, type Nad, type Pod } from "../npwg/types";
import type { KubeApi, PodEvent } from "./kube-api";
import type { KubeSource } from "./kubeconfig";
import { backoffMs, DEFAULT_RETRY_POLICY, parseRetryAfter, RetriesExhausted, type RetryClock, type RetryPolicy, type RetryVerdict, realClock, withRetry } from "./retry";

export const NAD_GROUP = "k8s.cni.cncf.io";
export const NAD_VERSION = "v1";
export const NAD_PLURAL = "network-attachment-definitions";
export const EVENT_COMPONENT = "plexus";

export interface ClientNodeOptions {
  retry?: Partial<RetryPolicy> | undefined;
  /** 409 answers to the status write before giving up (B42). Default 5. */
  conflictRetries?: number | undefined;
  /** Largest response body accepted (B41). Default 4 MiB (etcd's object limit is 1.5 MiB). */
  maxResponseBytes?: number | undefined;
  /** Absolute cap (epoch ms) on every operation, e.g. the ADD's own budget (B35). */
  deadlineAt?: number | undefined;
  log?: Logger | undefined;
  clock?: RetryClock | undefined;
}

export const DEFAULT_MAX_RESPONSE_BYTES = 4 * 1024 * 1024;
export const DEFAULT_CONFLICT_RETRIES = 5;

/** A transport-level failure: no HTTP answer to classify. */
export class TransportError extends Error {
  override name = "TransportError";
  constructor(
    readonly kind: "timeout" | "reset" | "refused" | "dns" | "too-large" | "tls" | "other",
    message: string,
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}

/** A 2xx answer that is not the JSON object asked for (B40). */
export class DecodeError extends Error {
  override name = "DecodeError";
}

const RETRYABLE_TRANSPORT = new Set<TransportError["kind"]>(["timeout", "reset", "refused", "dns"]);

function transportError(err: unknown): TransportError {
  if (err instanceof TransportError) return err;
  const e = err as NodeJS.ErrnoException;
  const code = e.code ?? "";
  const msg = `${code ? `${code}: ` : ""}${e.message}`;
  if (code === "ECONNREFUSED") return new TransportError("refused", msg, { cause: err });
  if (code === "ECONNRESET" || code === "EPIPE" || code === "ECONNABORTED" || code === "ERR_STREAM_PREMATURE_CLOSE") return new TransportError("reset", msg, { cause: err });
  if (code === "ENOTFOUND" || code === "EAI_AGAIN") return new TransportError("dns", msg, { cause: err });
  if (code === "ETIMEDOUT" || code === "EHOSTUNREACH" || code === "ENETUNREACH") return new TransportError("timeout", msg, { cause: err });
  if (code.startsWith("ERR_TLS") || code.includes("CERT") || code.startsWith("ERR_SSL")) return new TransportError("tls", msg, { cause: err });
  return new TransportError("other", msg, { cause: err });
}

/**
 * client-node's HTTP seam (`httpApi`), over node:http(s). The deadline arrives as the request's
 * AbortSignal (set per attempt by a middleware); hitting it destroys the socket, so a hung or
 * trickling server leaves nothing behind (B36).
 */
export class NodeHttpLibrary implements PromiseHttpLibrary {
  sent = 0;
  private readonly agent: http.Agent;

  constructor(
    tls: https.AgentOptions | undefined,
    private readonly maxBytes: number,
  ) {
    this.agent = tls ? new https.Agent({ ...tls, keepAlive: true, maxSockets: 4 }) : new http.Agent({ keepAlive: true, maxSockets: 4 });
  }

  send(ctx: RequestContext): Promise<ResponseContext> {
    this.sent++;
    const url = new URL(ctx.getUrl());
    const signal = ctx.getSignal();
    const body = ctx.getBody() as string | undefined;
    const lib = url.protocol === "https:" ? https : http;
    return new Promise<ResponseContext>((resolve, reject) => {
      let settled = false;
      const fail = (err: unknown) => {
        if (settled) return;
        settled = true;
        req.destroy();
        reject(transportError(err));
      };
      const headers: Record<string, string> = { accept: "application/json", ...ctx.getHeaders() };
      const req = lib.request(url, { method: ctx.getHttpMethod(), headers, agent: this.agent });
      req.setNoDelay(true);
      const onAbort = () => fail(new TransportError("timeout", `no complete answer within the request timeout (${ctx.getHttpMethod()} ${url.pathname})`));
      if (signal?.aborted) return onAbort();
      signal?.addEventListener("abort", onAbort, { once: true });
      const done = () => signal?.removeEventListener("abort", onAbort);
      req.on("error", (err) => {
        done();
        fail(err);
      });
      req.on("response", (res) => {
        const declared = Number(res.headers["content-length"]);
        if (declared > this.maxBytes) {
          done();
          return fail(new TransportError("too-large", `response of ${declared} bytes exceeds the ${this.maxBytes}-byte limit`));
        }
        const chunks: Buffer[] = [];
        let size = 0;
        res.on("data", (c: Buffer) => {
          size += c.length;
          if (size > this.maxBytes) {
            done();
            fail(new TransportError("too-large", `response exceeds the ${this.maxBytes}-byte limit`));
          } else chunks.push(c);
        });
        res.on("error", (err) => {
          done();
          fail(err);
        });
        res.on("close", () => {
          if (!res.complete) {
            done();
            fail(new TransportError("reset", `connection closed after ${size} bytes of the answer`));
          }
        });
        res.on("end", () => {
          done();
          if (settled) return;
          settled = true;
          const buf = Buffer.concat(chunks);
          const status = res.statusCode ?? 0;
          const flat: Record<string, string> = {};
          for (const [k, v] of Object.entries(res.headers)) if (v !== undefined) flat[k] = Array.isArray(v) ? v.join(", ") : v;
          if (status >= 200 && status < 300) {
            const problem = jsonProblem(flat["content-type"], buf);
            if (problem) return reject(new DecodeError(`HTTP ${status} with ${problem}`));
          }
          resolve(new ResponseContext(status, flat, { text: async () => buf.toString("utf8"), binary: async () => buf, stream: () => null }));
        });
      });
      req.end(body);
    });
  }

  close(): void {
    this.agent.destroy();
  }
}

function jsonProblem(contentType: string | undefined, body: Buffer): string | undefined {
  const mediaType = (contentType ?? "").split(";")[0]!.trim().toLowerCase();
  if (mediaType !== "application/json") return `content-type ${JSON.stringify(contentType ?? "")} instead of application/json (${JSON.stringify(body.subarray(0, 60).toString("utf8"))}…)`;
  try {
    const v = JSON.parse(body.toString("utf8")) as unknown;
    if (typeof v !== "object" || v === null || Array.isArray(v)) return "a JSON body that is not an object";
  } catch (err) {
    return `a body that is not valid JSON (${body.length} bytes: ${(err as Error).message})`;
  }
  return undefined;
}

/** Pod names are DNS-1123 subdomains (ValidatePodName); `.`, `..` and `%2e` are not (B20). */
const SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
function validatePodName(value: string, what: string): string {
  if (value.length > 253 || !SUBDOMAIN.test(value)) {
    throw new CniError(Code.InvalidNetworkConfig, `${what} ${JSON.stringify(value.slice(0, 80))} is not a valid pod name (DNS-1123 subdomain)`);
  }
  return value;
}

interface StatusBody {
  message?: string;
  reason?: string;
}

function statusOf(err: ApiException<unknown>): StatusBody {
  let body = err.body;
  if (typeof body === "string") {
    try {
      body = JSON.parse(body);
    } catch {
      return {};
    }
  }
  if (typeof body !== "object" || body === null) return {};
  const b = body as Record<string, unknown>;
  return { ...(typeof b.message === "string" ? { message: b.message } : {}), ...(typeof b.reason === "string" ? { reason: b.reason } : {}) };
}

export function isApiStatus(err: unknown, code: number): err is ApiException<unknown> {
  return err instanceof ApiException && err.code === code;
}

/** B34, B35, B36: what is worth another attempt. */
export function classifyForRetry(err: unknown, now = Date.now()): RetryVerdict {
  if (err instanceof TransportError) return RETRYABLE_TRANSPORT.has(err.kind) ? { retry: true } : { retry: false };
  if (err instanceof ApiException) {
    if (err.code === 429 || err.code === 500 || err.code === 502 || err.code === 503 || err.code === 504) {
      return { retry: true, afterMs: parseRetryAfter(err.headers?.["retry-after"], now) };
    }
  }
  return { retry: false };
}

export class ClientNodeKube implements KubeApi {
  private readonly core: CoreV1Api;
  private readonly custom: CustomObjectsApi;
  private readonly policy: RetryPolicy;
  private readonly conflictRetries: number;
  private readonly clock: RetryClock;

  private constructor(
    private readonly source: KubeSource,
    private readonly http: NodeHttpLibrary,
    private readonly opts: ClientNodeOptions,
  ) {
    const config = createConfiguration({
      baseServer: new ServerConfiguration(source.server, {}),
      httpApi: wrapHttpLibrary(http),
      authMethods: { default: credentialsOf(source.kc) },
    });
    this.core = new CoreV1Api(config);
    this.custom = new CustomObjectsApi(config);
    this.policy = { ...DEFAULT_RETRY_POLICY, ...opts.retry };
    this.conflictRetries = opts.conflictRetries ?? DEFAULT_CONFLICT_RETRIES;
    this.clock = opts.clock ?? realClock;
  }

  /** TLS material is read once here (a CA file that cannot be read is a config error, 7). */
  static async create(source: KubeSource, opts: ClientNodeOptions = {}): Promise<ClientNodeKube> {
    const o: https.RequestOptions = {};
    try {
      await source.kc.applyToHTTPSOptions(o);
    } catch (err) {
      throw new CniError(Code.InvalidNetworkConfig, `${source.credentials}: credentials cannot be loaded: ${(err as Error).message}`);
    }
    const tls = source.server.startsWith("https:")
      ? { ca: o.ca, cert: o.cert, key: o.key, ...(o.rejectUnauthorized === false ? { rejectUnauthorized: false } : {}), ...(o.servername ? { servername: o.servername } : {}) }
      : undefined;
    return new ClientNodeKube(source, new NodeHttpLibrary(tls, opts.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES), opts);
  }

  get requestCount(): number {
    return this.http.sent;
  }

  async getPod(namespace: string, name: string): Promise<Pod> {
    validateDns1123Label(namespace, "pod namespace");
    validatePodName(name, "pod name");
    const what = `get pod ${namespace}/${name}`;
    let pod: V1Pod;
    try {
      pod = await this.retrying((opt) => this.core.readNamespacedPod({ name, namespace }, opt));
    } catch (err) {
      if (isApiStatus(err, 404)) throw new CniError(Code.UnknownContainer, `${what}: the pod does not exist (HTTP 404 from ${this.source.server})`);
      throw this.toCniError(err, what);
    }
    if (pod.kind !== "Pod" || pod.apiVersion !== "v1" || !pod.metadata?.name) {
      throw new CniError(Code.Decoding, `${what}: the API server answered with kind ${JSON.stringify(pod.kind ?? null)} (apiVersion ${JSON.stringify(pod.apiVersion ?? null)}) instead of a v1 Pod`);
    }
    const m = pod.metadata;
    return {
      metadata: {
        name: m.name!,
        namespace: m.namespace ?? namespace,
        ...(m.uid ? { uid: m.uid } : {}),
        ...(m.resourceVersion ? { resourceVersion: m.resourceVersion } : {}),
        ...(m.annotations ? { annotations: { ...m.annotations } } : {}),
      },
      ...(pod.spec?.nodeName ? { spec: { nodeName: pod.spec.nodeName } } : {}),
    };
  }

  async getNad(namespace: string, name: string): Promise<Nad | undefined> {
    validateDns1123Label(namespace, "NetworkAttachmentDefinition namespace");
    validateDns1123Label(name, "NetworkAttachmentDefinition name");
    const what = `get NetworkAttachmentDefinition ${namespace}/${name}`;
    let obj: unknown;
    try {
      obj = await this.retrying((opt) => this.custom.getNamespacedCustomObject({ group: NAD_GROUP, version: NAD_VERSION, namespace, plural: NAD_PLURAL, name }, opt));
    } catch (err) {
      if (isApiStatus(err, 404)) return undefined;
      throw this.toCniError(err, what);
    }
    const o = obj as Record<string, unknown>;
    const meta = o.metadata as Record<string, unknown> | undefined;
    if (o.kind !== "NetworkAttachmentDefinition" || typeof meta?.name !== "string") {
      throw new CniError(Code.Decoding, `${what}: the API server answered with kind ${JSON.stringify(o.kind ?? null)} instead of a NetworkAttachmentDefinition`);
    }
    const spec = o.spec as Record<string, unknown> | undefined;
    return {
      apiVersion: String(o.apiVersion),
      kind: "NetworkAttachmentDefinition",
      metadata: {
        name: meta.name,
        namespace: typeof meta.namespace === "string" ? meta.namespace : namespace,
        ...(isStringMap(meta.annotations) ? { annotations: { ...meta.annotations } } : {}),
        ...(typeof meta.resourceVersion === "string" ? { resourceVersion: meta.resourceVersion } : {}),
      },
      ...(spec && typeof spec === "object" ? { spec: typeof spec.config === "string" ? { config: spec.config } : {} } : {}),
    };
  }

  /**
   * N5, M6: a JSON merge patch of the annotation on `pods/{name}/status`. With `uid` the patch
   * carries `metadata.uid`, which the API server treats as a precondition (M8: a recreated pod
   * must not receive the old sandbox's status); a 409 is then re-checked against the pod.
   *
   * B42: a 409 that persists after `conflictRetries` attempts fails with 104 (the ADD tears down).
   * B43: 404 (the pod was deleted during the ADD) fails with 3, unlike Multus, which tolerates it
   * (k8snetworkplumbingwg/multus-cni#1407): the sandbox is going away, so tearing the ADD down
   * costs nothing, while reporting success would leave a status-less attachment behind if the
   * "deleted" pod was in fact a stale cache or a recreated one.
   */
  async setNetworkStatus(pod: { namespace: string; name: string; uid?: string }, statusJson: string): Promise<void> {
    validateDns1123Label(pod.namespace, "pod namespace");
    validatePodName(pod.name, "pod name");
    const what = `write network-status of pod ${pod.namespace}/${pod.name}`;
    const body = { metadata: { ...(pod.uid ? { uid: pod.uid } : {}), annotations: { [NETWORK_STATUS_ANNOTATION]: statusJson } } };
    const deadlineAt = this.operationDeadline();
    for (let conflicts = 0; ; ) {
      try {
        await this.retrying(
          (opt) => this.core.patchNamespacedPodStatus({ name: pod.name, namespace: pod.namespace, body }, opt),
          { contentType: "application/merge-patch+json", deadlineAt },
        );
        return;
      } catch (err) {
        if (isApiStatus(err, 404)) throw new CniError(Code.UnknownContainer, `${what}: the pod no longer exists (HTTP 404; deleted during ADD)`);
        if (!isApiStatus(err, 409)) throw this.toCniError(err, what);
        conflicts++;
        if (pod.uid) await this.checkUid(pod as { namespace: string; name: string; uid: string }, what);
        if (conflicts > this.conflictRetries) {
          throw new CniError(Code.ApiFailure, `${what}: HTTP 409 Conflict ${conflicts} times, giving up (${statusOf(err).message ?? "conflict"})`);
        }
        const delay = backoffMs(conflicts, this.policy, this.clock.random);
        if (this.clock.now() + delay >= deadlineAt) throw new CniError(Code.ApiFailure, `${what}: HTTP 409 Conflict ${conflicts} times before the deadline`);
        this.opts.log?.debug({ conflicts, delay }, "network-status write conflicted; retrying");
        await this.clock.sleep(delay);
      }
    }
  }

  private async checkUid(pod: { namespace: string; name: string; uid: string }, what: string): Promise<void> {
    const current = await this.getPod(pod.namespace, pod.name).catch((err: unknown) => {
      if (isCniError(err) && err.code === Code.UnknownContainer) throw new CniError(Code.UnknownContainer, `${what}: the pod no longer exists (deleted during ADD)`);
      throw err;
    });
    if (current.metadata.uid && current.metadata.uid !== pod.uid) {
      throw new CniError(Code.UnknownContainer, `${what}: UID mismatch: the runtime's K8S_POD_UID is ${pod.uid} but the API has ${current.metadata.uid} (the pod was deleted and recreated)`);
    }
  }

  /** M9: a core/v1 Event on the pod. Best effort: one attempt plus one retry, the caller logs failures. */
  async recordEvent(pod: { namespace: string; name: string; uid?: string }, event: PodEvent): Promise<void> {
    validateDns1123Label(pod.namespace, "pod namespace");
    validatePodName(pod.name, "pod name");
    const now = new Date();
    const body: CoreV1Event = {
      apiVersion: "v1",
      kind: "Event",
      metadata: { generateName: `${pod.name}.`, namespace: pod.namespace },
      involvedObject: { apiVersion: "v1", kind: "Pod", name: pod.name, namespace: pod.namespace, ...(pod.uid ? { uid: pod.uid } : {}) },
      reason: event.reason,
      message: event.message,
      type: event.type,
      source: { component: EVENT_COMPONENT, host: hostname() },
      reportingComponent: EVENT_COMPONENT,
      reportingInstance: hostname(),
      firstTimestamp: now,
      lastTimestamp: now,
      count: 1,
    };
    try {
      await this.retrying((opt) => this.core.createNamespacedEvent({ namespace: pod.namespace, body }, opt), { maxAttempts: 2 });
    } catch (err) {
      throw this.toCniError(err, `record event ${event.reason} on pod ${pod.namespace}/${pod.name}`);
    }
  }

  /** Destroys the keep-alive sockets (B36). */
  async close(): Promise<void> {
    this.http.close();
  }

  private operationDeadline(): number {
    return Math.min(this.clock.now() + this.policy.totalTimeoutMs, this.opts.deadlineAt ?? Number.POSITIVE_INFINITY);
  }

  /** One API call with the retry policy; each attempt gets its own deadline as an AbortSignal. */
  private retrying<T>(
    call: (opt: ConfigurationOptions) => Promise<T>,
    o: { contentType?: string; deadlineAt?: number; maxAttempts?: number } = {},
  ): Promise<T> {
    return withRetry(
      async (timeoutMs) => {
        const ac = new AbortController();
        const timer = setTimeout(() => ac.abort(), timeoutMs);
        try {
          return await call({
            middleware: [
              {
                pre: (ctx) => {
                  ctx.setSignal(ac.signal);
                  if (o.contentType) ctx.setHeaderParam("Content-Type", o.contentType);
                  return new Observable(Promise.resolve(ctx));
                },
                post: (res) => new Observable(Promise.resolve(res)),
              },
            ],
            middlewareMergeStrategy: "append",
          });
        } finally {
          clearTimeout(timer);
        }
      },
      {
        policy: o.maxAttempts ? { ...this.policy, maxAttempts: o.maxAttempts } : this.policy,
        classify: (err) => classifyForRetry(err, this.clock.now()),
        deadlineAt: o.deadlineAt ?? this.opts.deadlineAt,
        clock: this.clock,
        onRetry: (err, attempt, delayMs) => this.opts.log?.debug({ attempt, delayMs, err: describe(err) }, "API request failed; retrying"),
      },
    );
  }

  private toCniError(err: unknown, what: string): CniError {
    if (isCniError(err)) return err;
    if (err instanceof RetriesExhausted) {
      const inner = this.toCniError(err.lastError, what);
      return new CniError(inner.code, `${inner.message}; ${err.message}`, inner.details, { cause: err });
    }
    if (err instanceof DecodeError) return new CniError(Code.Decoding, `${what}: the API server answered ${err.message}`, undefined, { cause: err });
    if (err instanceof ApiException) {
      const s = statusOf(err);
      const detail = s.message ? `: ${s.message}` : "";
      if (err.code === 401 || err.code === 403) {
        // B37: the status and where the credentials came from, so the operator knows what to fix.
        return new CniError(
          Code.ApiFailure,
          `${what}: HTTP ${err.code} ${err.code === 401 ? "Unauthorized" : "Forbidden"} from ${this.source.server} with the credentials of ${this.source.credentials}${detail}`,
          undefined,
          { cause: err },
        );
      }
      return new CniError(Code.ApiFailure, `${what}: HTTP ${err.code}${s.reason ? ` ${s.reason}` : ""} from ${this.source.server}${detail}`, undefined, { cause: err });
    }
    return new CniError(Code.ApiFailure, `${what}: ${describe(err)} (${this.source.server})`, undefined, { cause: err });
  }
}

function describe(err: unknown): string {
  if (err instanceof ApiException) return `HTTP ${err.code}`;
  return err instanceof Error ? err.message : String(err);
}

function isStringMap(v: unknown): v is Record<string, string> {
  return typeof v === "object" && v !== null && !Array.isArray(v) && Object.values(v).every((x) => typeof x === "string");
}

/**
 * Auth headers from the kubeconfig, per request (a token file is re-read as client-node's
 * FileAuth decides). Unlike `KubeConfig.applySecurityAuthentication` it builds no undici
 * dispatcher: the transport is {@link NodeHttpLibrary}'s agent.
 */
function credentialsOf(kc: KubeConfig) {
  return {
    getName: () => "plexus-kubeconfig",
    async applySecurityAuthentication(ctx: RequestContext): Promise<void> {
      const o: https.RequestOptions = {};
      await kc.applyToHTTPSOptions(o);
      for (const [k, v] of Object.entries(o.headers ?? {})) if (v !== undefined) ctx.setHeaderParam(k, String(v));
      if (o.auth) ctx.setHeaderParam("Authorization", `Basic ${Buffer.from(o.auth).toString("base64")}`);
    },
  };
}

export interface CreateKubeOptions extends ClientNodeOptions {
  source: KubeSource;
}

export function createClientNodeKube(o: CreateKubeOptions): Promise<ClientNodeKube> {
  const { source, ...rest } = o;
  return ClientNodeKube.create(source, rest);
}
