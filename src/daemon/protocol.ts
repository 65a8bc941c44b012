/**
 * The daemon's API on its unix socket (daemon mode), shared by the server (server.ts) and the CNI
 * binary's client (client.ts). JSON over HTTP/1.1; errors carry the CNI code the binary should
 * return, so an authoritative answer ("no such pod") is not mistaken for a daemon failure.
 *
 *   GET  /v1/pod?namespace=&name=&uid=    → { pod, source: "cache" | "api" }
 *   GET  /v1/nad?namespace=&name=         → { nad | null, source }
 *   POST /v1/network-status  { namespace, name, uid?, status, deadlineMs } → { ok: true }
 *   POST /v1/event           { namespace, name, uid?, event }              → { ok: true } at once;
 *                            the daemon writes the event in the background (best effort, M9)
 *   GET  /v1/pod-devices?namespace=&name=&resourceNames=a,b&timeoutMs=
 *                                         → { devices: { resourceName: [deviceID, …] } } (M10: from
 *                            kubelet's pod-resources API over the daemon's one channel)
 *   GET  /v1/resource-claim, /v1/resource-slices   (M10, DRA: daemon/dra-routes.ts)
 *   POST /v1/claim-status { namespace, name, devices } → { outcome } (D1: a claim's device
 *                            status, applied through the daemon's client; dra-routes.ts)
 *   POST /v1/delegate-runs   { runs: [{ pluginType, verb, durationMs, result }] } → { ok, counted }
 *                            (M20: what a CNI call's delegates did, for /metrics; the caller sends
 *                            it at its end and never reads the answer: delegate-runs.ts)
 *   GET  /healthz  /readyz  /metrics (Prometheus text)
 *   error: HTTP 422 { error: { code, msg } }; HTTP 5xx means the daemon itself is unwell.
 */
export const DAEMON_API = {
  pod: "/v1/pod",
  nad: "/v1/nad",
  networkStatus: "/v1/network-status",
  event: "/v1/event",
  podDevices: "/v1/pod-devices",
  /** M10, DRA (dra-routes.ts). */
  resourceClaim: "/v1/resource-claim",
  resourceSlices: "/v1/resource-slices",
  /** D1 (dra-routes.ts). */
  claimStatus: "/v1/claim-status",
  /** M20 (delegate-runs.ts). */
  delegateRuns: "/v1/delegate-runs",
  healthz: "/healthz",
  readyz: "/readyz",
  metrics: "/metrics",
} as const;

/** CNI codes the daemon answers with authority: the binary returns them, no fallback. */
export const AUTHORITATIVE_CODES: ReadonlySet<number> = new Set([3, 6, 7]);
