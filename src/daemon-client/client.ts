/**
 * The CNI binary's side of the daemon (daemon mode): a {@link KubeApi} that asks `plexus daemon`
 * over its unix socket, and falls back to the direct API client (thin mode) — for this call and the
 * rest of this CNI call — as soon as the daemon is missing, refusing, slow (past `timeoutMs`),
 * answering garbage or failing on its side. The fallback is logged. Answers the daemon gives
 * with authority (no such pod, a bad name) are returned as they are, without a second opinion;
 * only a status write refused for a pod the daemon served unchecked (the runtime passed no
 * K8S_POD_UID) is reworded, to name that pod as replaced rather than the runtime's UID.
 *
 * A DEL never gets here when the record has its attachments (M7): it needs no Kubernetes at all.
 */
import { existsSync } from "node:fs";
import { CniError, Code, passedOnCode } from "../cni/errors";
import { type ApiTransport, socketTransport } from "../kubeapi/http-transport";
import type { KubeApi, PodEvent, PodWrite } from "../cluster/kube-api";
import {
  type ClaimDeviceStatus,
  type ClaimStatusOutcome,
  type ResourceSlice,
  trimResourceSlice,
} from "../cluster/dra-objects";
import type { ReadAnswer, ReadKind, ReadRef, ReadRow } from "../cluster/reads";
import { ObjectReader, READS, readThrough } from "../cluster/reads";
import type { Logger } from "../log/logger";
import type { Pod } from "../npwg/types";
import { AUTHORITATIVE_CODES, DAEMON_API, DAEMON_READS } from "./protocol";

/** The daemon could not give an answer: use the API directly. */
export class DaemonUnavailable extends Error {
  override name = "DaemonUnavailable";
}

export interface DaemonKubeOptions {
  socketPath: string;
  /** One request to the daemon (it answers reads from its caches, without the API server). */
  timeoutMs: number;
  /** Writes wait for the API server behind the daemon: this long. */
  writeTimeoutMs: number;
  /** The thin-mode client, built only on the first fallback. */
  direct: () => Promise<KubeApi | undefined>;
  log?: Logger | undefined;
}

export class DaemonKube extends ObjectReader implements KubeApi {
  private readonly http: ApiTransport;
  private readonly o: DaemonKubeOptions;
  private fellBack: string | undefined;
  private daemonRequests = 0;
  private directKube: KubeApi | undefined;
  /**
   * Pods the daemon served to a read without the runtime's K8S_POD_UID (`namespace/name` → the
   * served UID): nothing checked that copy, so a write it guards may find the pod replaced.
   */
  private readonly unchecked = new Map<string, { uid: string; source: string }>();

  constructor(options: DaemonKubeOptions) {
    super();
    this.o = options;
    this.http = socketTransport({ socketPath: options.socketPath, maxBytes: 4 * 1024 * 1024 });
  }

  /** Whether this CNI call has given up on the daemon, and why. */
  get fallbackReason(): string | undefined {
    return this.fellBack;
  }

  /**
   * Requests that reached the API server directly (thin fallback); the daemon's own are its
   * business.
   */
  get requestCount(): number {
    return this.directKube?.requestCount ?? 0;
  }

  get daemonRequestCount(): number {
    return this.daemonRequests;
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

  /**
   * D1: the claim's device status, written through the daemon's client (its connection, its
   * credentials); the answer says what the API server did, a refusal included (no second write
   * directly). A daemon that cannot be asked, or an older one (404): thin mode.
   */
  applyClaimDeviceStatus(
    claim: { namespace: string; name: string },
    devices: ClaimDeviceStatus[],
  ): Promise<ClaimStatusOutcome> {
    return this.via(
      "write claim device status",
      async () => {
        const body = { ...claim, devices };
        const r = await this.ask("POST", DAEMON_API.claimStatus, body, this.o.writeTimeoutMs);
        // The API server refused or failed the daemon's write: its answer, not thin mode's turn.
        const failed = r.failed as { code?: unknown; msg?: unknown } | undefined;
        if (failed && typeof failed.code === "number" && typeof failed.msg === "string")
          throw new CniError(passedOnCode(failed.code), failed.msg);
        if (!CLAIM_STATUS_OUTCOMES.has(r.outcome as ClaimStatusOutcome))
          throw new DaemonUnavailable(
            "the daemon answered a claim status write without an outcome",
          );
        return r.outcome as ClaimStatusOutcome;
      },
      (k) =>
        directOnly(k.applyClaimDeviceStatus, "write claim device status").call(k, claim, devices),
    );
  }

  setNetworkStatus(pod: PodWrite, statusJson: string): Promise<void> {
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
    ).catch((err: unknown) => {
      throw this.replacedPodError(err, pod);
    });
  }

  /**
   * A write refused as for a gone or recreated pod (3), guarded by the UID of a pod the daemon
   * served without the runtime's K8S_POD_UID: the API server's message would blame the runtime's
   * UID, but that UID was the daemon's copy, and it is that pod which was replaced.
   */
  private replacedPodError(err: unknown, pod: PodWrite): unknown {
    const served = this.unchecked.get(`${pod.namespace}/${pod.name}`);
    if (!(err instanceof CniError) || err.code !== Code.UnknownContainer) return err;
    if (!served || served.uid !== pod.uid) return err;
    const from = served.source === "cache" ? "from its cache" : "read from the API server";
    return new CniError(
      Code.UnknownContainer,
      `write network-status of pod ${pod.namespace}/${pod.name}: the pod the plexus daemon ` +
        `served this ADD (UID ${served.uid}, ${from}) was deleted, or replaced by a new pod of ` +
        `that name, before its network-status was written, so the API server refused the write ` +
        `guarded by that UID (the runtime passed no K8S_POD_UID to check the daemon's copy by)`,
      err.details,
      { cause: err },
    );
  }

  recordEvent(pod: PodWrite, event: PodEvent): Promise<void> {
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

  /**
   * One object through the daemon (a row of cluster/reads.ts, as DAEMON_READS carries it): asked,
   * its answer checked and trimmed as the API client trims it (an answer without the object asked
   * for means the daemon is unusable: thin mode), or read directly once this call has fallen
   * back. M10: an older daemon without a claim route (404) means thin mode too; the pod's UID lets
   * the daemon serve its cached claim only when the claim is reserved for this pod.
   */
  override read<K extends ReadKind>(kind: K, ref: ReadRef): Promise<ReadAnswer<K>> {
    const r: ReadRow = READS[kind];
    const { route, field, noun, podUid } = DAEMON_READS[kind];
    const daemon = async (): Promise<ReadAnswer<K>> => {
      const { namespace, name } = ref;
      const query = new URLSearchParams({
        namespace,
        name,
        ...(podUid && ref.podUid ? { [podUid]: ref.podUid } : {}),
      });
      const answer = await this.ask("GET", `${route}?${query}`, undefined, this.o.timeoutMs);
      const raw = answer[field];
      if (raw === null && r.optional) return undefined as ReadAnswer<K>;
      const obj =
        typeof raw === "object" && raw !== null
          ? r.trim(raw as Record<string, unknown>, namespace)
          : undefined;
      if (!obj || obj.metadata.name !== name)
        throw new DaemonUnavailable(`the daemon answered a ${noun} request without a ${noun}`);
      if (kind === "pod" && !ref.podUid) this.servedUnchecked(ref, obj as Pod, answer.source);
      return obj as ReadAnswer<K>;
    };
    return this.via(`get ${r.noun}`, daemon, (k) => readThrough(k, kind, ref));
  }

  /** A pod served without the runtime's K8S_POD_UID: a write it guards may find it replaced. */
  private servedUnchecked(ref: ReadRef, pod: Pod, source: unknown): void {
    if (!pod.metadata.uid) return;
    const served = typeof source === "string" ? source : "unknown";
    this.unchecked.set(`${ref.namespace}/${ref.name}`, { uid: pod.metadata.uid, source: served });
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
        `${what}: the plexus daemon is unavailable (${this.fellBack}) and no Kubernetes config ` +
          `allows a direct request`,
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

const CLAIM_STATUS_OUTCOMES: ReadonlySet<ClaimStatusOutcome> = new Set([
  "applied",
  "without-network-data",
  "claim-missing",
]);

function directOnly<F>(member: F | undefined, what: string): F {
  if (!member)
    throw new CniError(Code.Internal, `${what}: the direct API client does not serve DRA objects`);
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
