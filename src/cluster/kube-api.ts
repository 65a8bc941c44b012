/**
 * The seam between orchestration and the Kubernetes API, which unit tests fake
 * (test/fakes/fake-kube.ts).
 * Implementations: a directory of manifests (file-cluster.ts) for the embedded default and runtimes
 * without a cluster; the API server's REST protocol (kubeapi/rest-kube.ts, loaded only on the
 * paths that need it); the node daemon's caches over its socket (daemon-client/client.ts). The
 * objects read by name are declared once, in reads.ts: each implementation has one generic read
 * over that table, and the named reads below come from it (reads.ts `ObjectReader`).
 */
import { escapeText } from "../cni/quote";
import type { Nad, Pod } from "../npwg/types";
import type {
  ClaimDeviceStatus,
  ClaimStatusOutcome,
  ResourceClaim,
  ResourceSlice,
} from "./dra-objects";

export interface PodEvent {
  type: "Normal" | "Warning";
  /** `AddedInterface`, `NoNetworkFound`, … (M9). */
  reason: string;
  message: string;
}

/**
 * B98: the event as it leaves the process. Its message carries text from outside (a NAD's type,
 * a delegate's error) that `kubectl describe` and `kubectl get events` print on an admin's
 * terminal; every implementation of {@link KubeApi.recordEvent} that writes an event passes it
 * through here, so no caller has to remember.
 */
export function eventForPeople(event: PodEvent): PodEvent {
  return { ...event, reason: escapeText(event.reason), message: escapeText(event.message) };
}

/** The pod a write is for: `uid`, when given, must still match (M8). */
export interface PodWrite {
  namespace: string;
  name: string;
  uid?: string;
}

export interface KubeApi {
  /**
   * Throws CniError: code 3 when the pod does not exist (B38), 104 for API failures (B34–B41).
   * `uid`, the runtime's K8S_POD_UID, lets a cache tell a stale entry from the pod asked for.
   */
  getPod(namespace: string, name: string, uid?: string): Promise<Pod>;
  /** `undefined` when the NAD does not exist (404, B28); throws for other failures. */
  getNad(namespace: string, name: string): Promise<Nad | undefined>;
  /**
   * Writes the network-status annotation on the pod's status subresource with a merge patch,
   * retrying on conflict (B42). `uid`, when given, must still match (M8).
   */
  setNetworkStatus(pod: PodWrite, statusJson: string): Promise<void>;
  /** Best effort: failures are logged, never fail the ADD (M9). */
  recordEvent(pod: PodWrite, event: PodEvent): Promise<void>;
  /**
   * M10, DRA: a ResourceClaim of the pod's namespace (`undefined` when it does not exist). Asked
   * only for a pod with claims whose NADs carry a resourceName (dra/claim-devices.ts); `forPod`,
   * the pod of that ADD, tells the daemon's cache which copy it may serve (watch/claim-cache.ts).
   */
  getResourceClaim?(
    namespace: string,
    name: string,
    forPod?: { uid?: string | undefined },
  ): Promise<ResourceClaim | undefined>;
  /** M10, DRA: the ResourceSlices of one driver on one node (cluster-scoped). */
  listResourceSlices?(query: {
    nodeName?: string | undefined;
    driver: string;
  }): Promise<ResourceSlice[]>;
  /**
   * D1: Plexus's part of a ResourceClaim's `status.devices`, exactly these entries (server-side
   * apply on `resourceclaims/status`, field manager `plexus`); none takes its part out. Entries
   * whose networkData another manager owns are applied again without it. The caller treats a
   * failure as a warning: it never fails the pod's ADD.
   */
  applyClaimDeviceStatus?(
    claim: { namespace: string; name: string },
    devices: ClaimDeviceStatus[],
  ): Promise<ClaimStatusOutcome>;
  /** Requests made so far (benchmarks: API requests per ADD). */
  readonly requestCount?: number;
  /** Releases connections (B36); safe to call more than once. */
  close?(): Promise<void>;
}
