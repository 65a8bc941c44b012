/**
 * The daemon's API on its unix socket (daemon mode), shared by the server (server.ts) and the CNI
 * binary's client (client.ts). JSON over HTTP/1.1; errors carry the CNI code the binary should
 * return, so an authoritative answer ("no such pod") is not mistaken for a daemon failure.
 *
 *   GET  /v1/pod?namespace=&name=&uid=    → { pod, source: "cache" | "api" }
 *   GET  /v1/nad?namespace=&name=         → { nad | null, source }
 *   GET  /v1/resource-claim?namespace=&name=&podUid= → { claim | null, source }
 *                            (one shape for each object of cluster/reads.ts: DAEMON_READS)
 *   POST /v1/network-status  { namespace, name, uid?, status, deadlineMs } → { ok: true }
 *   POST /v1/event           { namespace, name, uid?, event }              → { ok: true } at once;
 *                            the daemon writes the event in the background (best effort, M9)
 *   GET  /v1/pod-devices?namespace=&name=&resourceNames=a,b&timeoutMs=
 *                                         → { devices: { resourceName: [deviceID, …] } } (M10: from
 *                            kubelet's pod-resources API over the daemon's one channel)
 *   GET  /v1/resource-slices              (M10, DRA: daemon/dra-routes.ts)
 *   POST /v1/claim-status { namespace, name, devices } → { outcome } (D1: a claim's device
 *                            status, applied through the daemon's client; dra-routes.ts)
 *   POST /v1/delegate-runs   { runs: [{ pluginType, verb, durationMs, result }] } → { ok, counted }
 *                            (M20: what a CNI call's delegates did, for /metrics; the caller sends
 *                            it at its end and never reads the answer: delegate-runs.ts)
 *   GET  /healthz  /readyz  /metrics (Prometheus text)
 *   error: HTTP 422 { error: { code, msg } }; HTTP 5xx means the daemon itself is unwell.
 */
import type { ReadKind } from "../cluster/reads";

export const DAEMON_API = {
  pod: "/v1/pod",
  nad: "/v1/nad",
  networkStatus: "/v1/network-status",
  event: "/v1/event",
  podDevices: "/v1/pod-devices",
  /** M10, DRA. */
  resourceClaim: "/v1/resource-claim",
  /** M10, DRA (dra-routes.ts). */
  resourceSlices: "/v1/resource-slices",
  /** D1 (dra-routes.ts). */
  claimStatus: "/v1/claim-status",
  /** M20 (delegate-runs.ts). */
  delegateRuns: "/v1/delegate-runs",
  healthz: "/healthz",
  readyz: "/readyz",
  metrics: "/metrics",
} as const;

/** How one object of cluster/reads.ts travels over the daemon's socket. */
export interface DaemonRead {
  route: string;
  /** The answer's field that holds the object (`null`: none, where the row allows it). */
  field: string;
  /** How the client names it when an answer lacks it: "the daemon answered a NAD request …". */
  noun: string;
  /** The query key of the ReadRef's podUid, when the daemon's cache is asked for a pod's copy. */
  podUid?: string;
  /** Its label in the daemon's cache metrics (metrics.ts). */
  metric: "pod" | "nad" | "resourceclaim";
}

/** Each row of cluster/reads.ts as the daemon serves it (server.ts) and its client asks it. */
export const DAEMON_READS: { readonly [K in ReadKind]: DaemonRead } = {
  pod: { route: DAEMON_API.pod, field: "pod", noun: "pod", podUid: "uid", metric: "pod" },
  nad: { route: DAEMON_API.nad, field: "nad", noun: "NAD", metric: "nad" },
  resourceClaim: {
    route: DAEMON_API.resourceClaim,
    field: "claim",
    noun: "claim",
    podUid: "podUid",
    metric: "resourceclaim",
  },
};

/** CNI codes the daemon answers with authority: the binary returns them, no fallback. */
export const AUTHORITATIVE_CODES: ReadonlySet<number> = new Set([3, 6, 7]);
