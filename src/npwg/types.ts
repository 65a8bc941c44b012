/**
 * NPWG nouns shared by the pure resolution code (src/npwg) and the cluster-facing layers
 * (src/cluster and above). Names follow the spec: NetworkSelection (one element of the networks
 * annotation), Nad, NetworkStatus.
 */

/** Minimal pod shape Plexus reads (trimmed, as the daemon will cache it). */
export interface Pod {
  metadata: {
    name: string;
    namespace: string;
    uid?: string;
    resourceVersion?: string;
    annotations?: Record<string, string>;
    /** Kept by the daemon's watch cache only (the missing-networks detector). */
    deletionTimestamp?: string;
  };
  /** `hostNetwork`, and `status.phase` below: kept by the daemon's watch cache only. */
  spec?: { nodeName?: string; hostNetwork?: boolean } & PodClaimSpec;
  status?: { phase?: string } & PodClaimStatus;
}

/**
 * A pod's Dynamic Resource Allocation fields (resource.k8s.io/v1), kept only for a pod that has
 * claims (cluster/dra-objects.ts trims them): its claims, and the extended resources its containers
 * request.
 */
export interface PodClaimSpec {
  resourceClaims?: Array<{
    name: string;
    resourceClaimName?: string;
    resourceClaimTemplateName?: string;
  }>;
  /** Only the extended resources (names with a domain) of each container's requests and limits. */
  containers?: Array<{
    name: string;
    resources?: { requests?: Record<string, string>; limits?: Record<string, string> };
  }>;
  initContainers?: PodClaimSpec["containers"];
}

export interface PodClaimStatus {
  /**
   * The claims generated from templates: `name` (the pod's entry) → `resourceClaimName` (unset:
   * none needed).
   */
  resourceClaimStatuses?: Array<{ name: string; resourceClaimName?: string }>;
  /**
   * Extended resources satisfied by DRA: one claim, each request mapped to a container's resource.
   */
  extendedResourceClaimStatus?: {
    resourceClaimName: string;
    requestMappings: Array<{ containerName: string; resourceName: string; requestName: string }>;
  };
}

/** NetworkAttachmentDefinition, k8s.cni.cncf.io/v1 (N3.1, N3.2). */
export interface Nad {
  apiVersion?: string;
  kind?: string;
  metadata: {
    name: string;
    namespace: string;
    annotations?: Record<string, string>;
    resourceVersion?: string;
  };
  spec?: { config?: string };
}

/** One requested attachment from `k8s.v1.cni.cncf.io/networks` (N4.1, M4). */
export interface NetworkSelection {
  /** NAD name (DNS-1123 label, N3.3). */
  name: string;
  /** Resolved: the annotation's namespace, else the pod's (N4.1.2.1.2). */
  namespace: string;
  /** `interface` (or the older `interfaceRequest`, or `@ifname` in comma form) (N4.1.2.1.5). */
  interfaceRequest?: string;
  ips?: string[];
  mac?: string;
  infinibandGuid?: string;
  /** `cni-args`: merged into `args.cni` of every plugin of this attachment (M4). */
  cniArgs?: Record<string, unknown>;
  portMappings?: unknown[];
  bandwidth?: Record<string, unknown>;
  /** Gateways: this attachment carries the pod's default route (M4). */
  defaultRoute?: string[];
  deviceID?: string;
  /**
   * M19: the device pool (extended resource) this attachment takes, instead of the NAD's own
   * `resourceName`; only one the NAD's `allowedResourceNames` lists (or its own) is taken.
   */
  resourceName?: string;
}

/** One entry of `k8s.v1.cni.cncf.io/network-status` (N5, M6). */
export interface NetworkStatus {
  name: string;
  interface?: string;
  ips?: string[];
  mac?: string;
  mtu?: number;
  default: boolean;
  dns?: { nameservers?: string[]; domain?: string; search?: string[] };
  gateway?: string[];
  "device-info"?: Record<string, unknown>;
}

export const NETWORKS_ANNOTATION = "k8s.v1.cni.cncf.io/networks";
export const NETWORK_STATUS_ANNOTATION = "k8s.v1.cni.cncf.io/network-status";
export const DEFAULT_NETWORK_ANNOTATION = "v1.multus-cni.io/default-network";
export const RESOURCE_NAME_ANNOTATION = "k8s.v1.cni.cncf.io/resourceName";
/** M19: the resources (comma-separated) a selection's own `resourceName` may pick on this NAD. */
export const ALLOWED_RESOURCE_NAMES_ANNOTATION = "k8s.v1.cni.cncf.io/allowedResourceNames";
