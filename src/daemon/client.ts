/**
 * The CNI binary's side of the daemon (issue 5): a {@link KubeApi} that asks `plexus daemon` over
 * its unix socket, and falls back to the direct API client (thin mode) — for this call and the
 * rest of this CNI call — as soon as the daemon is missing, refusing, slow (past `timeoutMs`),
 * answering garbage or failing on its side. The fallback is logged. Answers the daemon gives
 * with authority (no such pod, a bad name) are returned as they are, without a second opinion.
 *
 * A DEL never gets here when the record has its attachments (M7): it needs no Kubernetes at all.
 */
import { existsSync } from "node:fs";
import { CniError, Code, passedOnCode } from "../cni/errors";
import { type ApiTransport, socketTransport } from "../k8s/http-transport";
import type { KubeApi, PodEvent } from "../k8s/kube-api";
import {
  type ResourceClaim,
  type ResourceSlice,
  trimResourceClaim,
  trimResourceSlice,
} from "../k8s/dra";
import { trimNad, trimPod } from "../k8s/rest-kube";
import type { Logger } from "../log/logger";
import type { Nad, Pod } from "../npwg/types";
import { AUTHORITATIVE_CODES, DAEMON_API } from "./protocol";

/** The daemon could not give an answer: use the API directly. */
export class DaemonUnavailable extends Error {
  override name = "DaemonUnavailable";
}

export interface DaemonKubeOptions {
  socketPath: string;
  /** One request to the daemon (reads from its cache answer in well under a millisecond). */
  timeoutMs: number;
  /** Writes wait for the API server behind the daemon: this long. */
  writeTimeoutMs: number;
  /** The thin-mode client, built only on the first fallback. */
  direct: () => Promise<KubeApi | undefined>;
  log?: Logger | undefined;
}

export class DaemonKube implements KubeApi {
  private readonly http: ApiTransport;
  private readonly o: DaemonKubeOptions;
  private fellBack: string | undefined;
  private daemonRequests = 0;
  private directKube: KubeApi | undefined;

  constructor(options: DaemonKubeOptions) {
    this.o = options;
    this.http = socketTransport({ socketPath: options.socketPath, maxBytes: 4 * 1024 * 1024 });
  }

  /** Whether this CNI call has given up on the daemon, and why. */
  get fallbackReason(): string | undefined {
    return this.fellBack;
  }

  /** Requests that reached the API server directly (thin fallback); the daemon's own are its business. */
  get requestCount(): number {
    return this.directKube?.requestCount ?? 0;
  }

  get daemonRequestCount(): number {
    return this.daemonRequests;
  }

  getPod(namespace: string, name: string, uid?: string): Promise<Pod> {
    return this.via(
      "get pod",
      async () => {
        const r = await this.ask(
          "GET",
          `${DAEMON_API.pod}?${new URLSearchParams({ namespace, name, ...(uid ? { uid } : {}) })}`,
          undefined,
          this.o.timeoutMs,
        );
        const pod =
          typeof r.pod === "object" && r.pod !== null
            ? trimPod(r.pod as Record<string, unknown>, namespace)
            : undefined;
        if (!pod || pod.metadata.name !== name)
          throw new DaemonUnavailable("the daemon answered a pod request without a pod");
        return pod;
      },
      (k) => k.getPod(namespace, name),
    );
  }

  getNad(namespace: string, name: string): Promise<Nad | undefined> {
    return this.via(
      "get NAD",
      async () => {
        const r = await this.ask(
          "GET",
          `${DAEMON_API.nad}?${new URLSearchParams({ namespace, name })}`,
          undefined,
          this.o.timeoutMs,
        );
        if (r.nad === null) return undefined;
        const nad =
          typeof r.nad === "object" && r.nad !== undefined
            ? trimNad(r.nad as Record<string, unknown>, namespace)
            : undefined;
        if (!nad || nad.metadata.name !== name)
          throw new DaemonUnavailable("the daemon answered a NAD request without a NAD");
        return nad;
      },
      (k) => k.getNad(namespace, name),
    );
  }

  /**
   * M10, DRA: the daemon's cached claim (or its live read); an older daemon (404) means thin mode.
   * The pod's UID lets the daemon serve its copy only when the claim is reserved for this pod.
   */
  getResourceClaim(
    namespace: string,
    name: string,
    forPod?: { uid?: string | undefined },
  ): Promise<ResourceClaim | undefined> {
    const query = new URLSearchParams({
      namespace,
      name,
      ...(forPod?.uid ? { podUid: forPod.uid } : {}),
    });
    return this.via(
      "get ResourceClaim",
      async () => {
        const r = await this.ask(
          "GET",
          `${DAEMON_API.resourceClaim}?${query}`,
          undefined,
          this.o.timeoutMs,
        );
        if (r.claim === null) return undefined;
        const claim =
          typeof r.claim === "object"
            ? trimResourceClaim(r.claim as Record<string, unknown>, namespace)
            : undefined;
        if (!claim || claim.metadata.name !== name)
          throw new DaemonUnavailable("the daemon answered a claim request without a claim");
        return claim;
      },
      (k) => directOnly(k.getResourceClaim, "get ResourceClaim").call(k, namespace, name),
    );
  }

  /** M10, DRA: this node's slices of one driver, from the daemon's watch. */
  listResourceSlices(query: {
    nodeName?: string | undefined;
    driver: string;
  }): Promise<ResourceSlice[]> {
    return this.via(
      "list ResourceSlices",
      async () => {
        const params = new URLSearchParams({
          driver: query.driver,
          ...(query.nodeName ? { nodeName: query.nodeName } : {}),
        });
        const r = await this.ask(
          "GET",
          `${DAEMON_API.resourceSlices}?${params}`,
          undefined,
          this.o.timeoutMs,
        );
        if (!Array.isArray(r.slices))
          throw new DaemonUnavailable("the daemon answered a slices request without slices");
        return r.slices.flatMap((x) => trimResourceSlice(x as Record<string, unknown>) ?? []);
      },
      (k) => directOnly(k.listResourceSlices, "list ResourceSlices").call(k, query),
    );
  }

  setNetworkStatus(
    pod: { namespace: string; name: string; uid?: string },
    statusJson: string,
  ): Promise<void> {
    return this.via(
      "write network-status",
      async () => {
        await this.ask(
          "POST",
          DAEMON_API.networkStatus,
          { ...pod, status: statusJson },
          this.o.writeTimeoutMs,
        );
      },
      (k) => k.setNetworkStatus(pod, statusJson),
    );
  }

  recordEvent(
    pod: { namespace: string; name: string; uid?: string },
    event: PodEvent,
  ): Promise<void> {
    return this.via(
      "record event",
      async () => {
        await this.ask("POST", DAEMON_API.event, { ...pod, event }, this.o.writeTimeoutMs);
      },
      (k) => k.recordEvent(pod, event),
    );
  }

  async close(): Promise<void> {
    this.http.close();
    await this.directKube?.close?.();
  }

  private async via<T>(
    what: string,
    daemon: () => Promise<T>,
    direct: (k: KubeApi) => Promise<T>,
  ): Promise<T> {
    if (!this.fellBack) {
      try {
        return await daemon();
      } catch (err) {
        if (!(err instanceof DaemonUnavailable)) throw err;
        this.fellBack = err.message;
        this.o.log?.warn(
          { socket: this.o.socketPath, op: what, why: err.message },
          "plexus daemon unavailable; asking the API server directly (thin mode)",
        );
      }
    }
    this.directKube ??= await this.o.direct();
    if (!this.directKube)
      throw new CniError(
        Code.ApiFailure,
        `${what}: the plexus daemon is unavailable (${this.fellBack}) and no Kubernetes config allows a direct request`,
      );
    return direct(this.directKube);
  }

  private async ask(
    method: string,
    path: string,
    body: unknown,
    timeoutMs: number,
  ): Promise<Record<string, unknown>> {
    this.daemonRequests++;
    const ac = new AbortController();
    const timer = setTimeout(() => ac.abort(), timeoutMs);
    let answer;
    try {
      answer = await this.http.request({
        method,
        url: new URL(`http://plexus${path}`),
        headers: body === undefined ? {} : { "content-type": "application/json" },
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: ac.signal,
      });
    } catch (err) {
      throw new DaemonUnavailable(`${(err as Error).message} (${this.o.socketPath})`);
    } finally {
      clearTimeout(timer);
    }
    if (answer.status === 200 && answer.json) return answer.json;
    if (answer.status === 422) {
      const e = parseError(answer.body);
      if (e && AUTHORITATIVE_CODES.has(e.code)) throw new CniError(passedOnCode(e.code), e.msg);
      throw new DaemonUnavailable(
        `the daemon failed: ${e ? `${e.code} ${e.msg}` : "HTTP 422 without an error"}`,
      );
    }
    throw new DaemonUnavailable(`the daemon answered HTTP ${answer.status}`);
  }
}

function directOnly<F>(member: F | undefined, what: string): F {
  if (!member)
    throw new CniError(Code.Internal, `${what}: the direct API client cannot read DRA objects`);
  return member;
}

function parseError(body: Buffer): { code: number; msg: string } | undefined {
  try {
    const v = JSON.parse(body.toString("utf8")) as { error?: { code?: unknown; msg?: unknown } };
    if (typeof v.error?.code === "number" && typeof v.error.msg === "string")
      return { code: v.error.code, msg: v.error.msg };
  } catch {
    // garbage
  }
  return undefined;
}

/** Whether a daemon socket exists to ask (no socket: thin mode at once, no connect attempt). */
export function daemonSocketPresent(path: string): boolean {
  return path !== "" && existsSync(path);
}
