/**
 * Dynamic Resource Allocation (resource.k8s.io/v1) as Plexus reads it (M10): the few fields of a
 * pod, a ResourceClaim and a ResourceSlice that tell which device a network's delegate gets.
 * Every reader of cluster data (the API client, the daemon's caches, the manifest directory) keeps
 * these trimmed shapes, so a cached claim or slice holds these fields only, not its whole object.
 *
 * A network device driver publishes, per device of its ResourceSlice, the attributes
 * `k8s.cni.cncf.io/deviceID` (what the delegate gets as `deviceID`) and
 * `k8s.cni.cncf.io/resourceName` (what a NAD's `k8s.v1.cni.cncf.io/resourceName` names), the
 * contract Multus's DRA client reads. Attribute values are typed: `{ "string": "0000:07:00.1" }`.
 */
import { isPlainObject } from "../cni/json";
import type { PodClaimSpec, PodClaimStatus } from "../npwg/types";

export const DRA_GROUP = "resource.k8s.io";
export const DRA_VERSION = "v1";
export const DEVICE_ID_ATTRIBUTE = "k8s.cni.cncf.io/deviceID";
export const RESOURCE_NAME_ATTRIBUTE = "k8s.cni.cncf.io/resourceName";
const KEPT_ATTRIBUTES = [DEVICE_ID_ATTRIBUTE, RESOURCE_NAME_ATTRIBUTE] as const;
/** The two slice attributes Plexus reads. */
export type KeptAttribute = (typeof KEPT_ATTRIBUTES)[number];

/** One device of a claim's allocation (`status.allocation.devices.results[]`), in allocation order. */
export interface AllocationResult {
  driver: string;
  pool: string;
  device: string;
  request: string;
}

/** A pod the claim is reserved for (`status.reservedFor[]` with resource "pods" of the core group). */
interface PodReservation {
  resource: "pods";
  name: string;
  uid: string;
}

/** The API's bound on `status.reservedFor`. */
const RESERVED_FOR_MAX = 256;

export interface ResourceClaim {
  metadata: { name: string; namespace: string; uid?: string; resourceVersion?: string };
  /**
   * `allocation` absent: not allocated (yet). `reservedFor`: the pods that may use it; while a pod
   * is there the API server refuses to change or clear the allocation (the daemon's cache relies
   * on that, watch/claim-cache.ts).
   */
  status?: {
    allocation?: { devices: { results: AllocationResult[] }; nodeSelector?: unknown };
    reservedFor?: PodReservation[];
  };
}

export interface SliceDevice {
  name: string;
  /** Only the two attributes Plexus reads, values as published (typed objects). */
  attributes?: Partial<Record<KeptAttribute, unknown>>;
}

export interface ResourceSlice {
  metadata: { name: string; resourceVersion?: string };
  spec: {
    driver: string;
    nodeName?: string;
    pool: { name: string; generation: number };
    devices: SliceDevice[];
  };
}

/**
 * D1 (KEP-4817): Plexus's part of one entry of a claim's `status.devices`, written by server-side
 * apply with its own field manager. The entry is keyed by driver, pool and device, and belongs to
 * the driver too: Plexus applies only the keys, `networkData` and its own condition, so a
 * driver's `data` and conditions are never Plexus's to change.
 */
export interface ClaimDeviceStatus {
  driver: string;
  pool: string;
  device: string;
  /** Absent when another manager (the driver) reports the device's networkData itself. */
  networkData?: NetworkDeviceData;
  conditions: DeviceCondition[];
}

/** `NetworkDeviceData`: the interface in the pod, its addresses as CIDRs, its MAC. */
export interface NetworkDeviceData {
  interfaceName: string;
  ips: string[];
  hardwareAddress?: string;
}

/** A `metav1.Condition` as Plexus writes it (status True: the attachment is up). */
interface DeviceCondition {
  type: string;
  status: "True";
  reason: string;
  message: string;
  lastTransitionTime: string;
}

/** D1: Plexus's field manager, and the condition it owns in each entry it reports. */
export const CLAIM_STATUS_MANAGER = "plexus";
export const ATTACHED_CONDITION = "plexus.cni.cncf.io/Attached";

/**
 * What a status write did: applied as asked; applied without networkData, which another manager
 * owns with other values (the driver reports it); or nothing, the claim being gone.
 */
export type ClaimStatusOutcome = "applied" | "without-network-data" | "claim-missing";

/** The API's bounds on an entry's fields (resource/v1 types.go). */
export const NETWORK_DATA_LIMITS = { interfaceName: 256, ips: 16, hardwareAddress: 128 } as const;

const str = (value: unknown): string | undefined =>
  typeof value === "string" && value !== "" ? value : undefined;
const arr = (value: unknown): unknown[] => (Array.isArray(value) ? value : []);

/** The fields of a ResourceClaim Plexus reads, or undefined for anything else. */
export function trimResourceClaim(
  obj: Record<string, unknown>,
  fallbackNamespace: string,
): ResourceClaim | undefined {
  if (obj.kind !== undefined && obj.kind !== "ResourceClaim") return undefined;
  const m = isPlainObject(obj.metadata) ? obj.metadata : undefined;
  const name = str(m?.name);
  if (!m || !name) return undefined;
  const claim: ResourceClaim = {
    metadata: {
      name,
      namespace: str(m.namespace) ?? fallbackNamespace,
      ...(str(m.uid) ? { uid: m.uid as string } : {}),
      ...(str(m.resourceVersion) ? { resourceVersion: m.resourceVersion as string } : {}),
    },
  };
  const status = isPlainObject(obj.status) ? obj.status : undefined;
  const allocation = isPlainObject(status?.allocation) ? status.allocation : undefined;
  if (!allocation) return claim;
  const devices = isPlainObject(allocation.devices) ? allocation.devices : {};
  const results = arr(devices.results).flatMap((r) => {
    if (!isPlainObject(r)) return [];
    const [driver, pool, device] = [str(r.driver), str(r.pool), str(r.device)];
    return driver && pool && device
      ? [{ driver, pool, device, request: str(r.request) ?? "" }]
      : [];
  });
  const reservedFor = podReservations(status!.reservedFor);
  claim.status = {
    allocation: {
      devices: { results },
      ...(allocation.nodeSelector !== undefined ? { nodeSelector: allocation.nodeSelector } : {}),
    },
    ...(reservedFor.length ? { reservedFor } : {}),
  };
  return claim;
}

/** The pods of `status.reservedFor` (other consumers are not pods a CNI call is for), bounded as the API bounds it. */
function podReservations(value: unknown): PodReservation[] {
  return arr(value)
    .slice(0, RESERVED_FOR_MAX)
    .flatMap((r) => {
      if (
        !isPlainObject(r) ||
        r.resource !== "pods" ||
        (r.apiGroup !== undefined && r.apiGroup !== "")
      )
        return [];
      const [name, uid] = [str(r.name), str(r.uid)];
      return name && uid ? [{ resource: "pods" as const, name, uid }] : [];
    });
}

/** The fields of a ResourceSlice Plexus reads: driver, node, pool, and each device's two attributes. */
export function trimResourceSlice(obj: Record<string, unknown>): ResourceSlice | undefined {
  if (obj.kind !== undefined && obj.kind !== "ResourceSlice") return undefined;
  const m = isPlainObject(obj.metadata) ? obj.metadata : undefined;
  const spec = isPlainObject(obj.spec) ? obj.spec : undefined;
  const pool = isPlainObject(spec?.pool) ? spec.pool : undefined;
  const [name, driver, poolName] = [str(m?.name), str(spec?.driver), str(pool?.name)];
  if (!m || !spec || !name || !driver || !poolName) return undefined;
  const devices = arr(spec.devices).flatMap((d): SliceDevice[] => {
    if (!isPlainObject(d) || !str(d.name)) return [];
    const attrs = isPlainObject(d.attributes) ? d.attributes : {};
    const kept = Object.fromEntries(
      KEPT_ATTRIBUTES.filter((k) => k in attrs).map((k) => [k, attrs[k]]),
    );
    return [{ name: d.name as string, ...(Object.keys(kept).length ? { attributes: kept } : {}) }];
  });
  return {
    metadata: {
      name,
      ...(str(m.resourceVersion) ? { resourceVersion: m.resourceVersion as string } : {}),
    },
    spec: {
      driver,
      ...(str(spec.nodeName) ? { nodeName: spec.nodeName as string } : {}),
      pool: {
        name: poolName,
        generation: typeof pool!.generation === "number" ? pool!.generation : 0,
      },
      devices,
    },
  };
}

/**
 * A pod's DRA fields (spec.resourceClaims, status.resourceClaimStatuses and
 * status.extendedResourceClaimStatus, the containers' extended resources), only when it has
 * claims: a pod without any keeps its trimmed shape unchanged.
 */
export function trimPodClaims(obj: Record<string, unknown>): {
  spec?: PodClaimSpec;
  status?: PodClaimStatus;
} {
  const spec = isPlainObject(obj.spec) ? obj.spec : {};
  const status = isPlainObject(obj.status) ? obj.status : {};
  const resourceClaims = arr(spec.resourceClaims).flatMap((c) => {
    if (!isPlainObject(c) || !str(c.name)) return [];
    return [
      {
        name: c.name as string,
        ...(str(c.resourceClaimName) ? { resourceClaimName: c.resourceClaimName as string } : {}),
        ...(str(c.resourceClaimTemplateName)
          ? { resourceClaimTemplateName: c.resourceClaimTemplateName as string }
          : {}),
      },
    ];
  });
  const statuses = arr(status.resourceClaimStatuses).flatMap((c) =>
    isPlainObject(c) && str(c.name)
      ? [
          {
            name: c.name as string,
            ...(str(c.resourceClaimName)
              ? { resourceClaimName: c.resourceClaimName as string }
              : {}),
          },
        ]
      : [],
  );
  const extended = trimExtendedClaimStatus(status.extendedResourceClaimStatus);
  if (resourceClaims.length === 0 && statuses.length === 0 && !extended) return {};
  const containers = (v: unknown) =>
    arr(v).flatMap((c) =>
      isPlainObject(c) && str(c.name) ? [{ name: c.name as string, resources: extendedOf(c) }] : [],
    );
  return {
    spec: {
      ...(resourceClaims.length ? { resourceClaims } : {}),
      containers: containers(spec.containers),
      ...(arr(spec.initContainers).length
        ? { initContainers: containers(spec.initContainers) }
        : {}),
    },
    status: {
      ...(statuses.length ? { resourceClaimStatuses: statuses } : {}),
      ...(extended ? { extendedResourceClaimStatus: extended } : {}),
    },
  };
}

/** status.extendedResourceClaimStatus: the claim behind the containers' extended resources. */
function trimExtendedClaimStatus(value: unknown): PodClaimStatus["extendedResourceClaimStatus"] {
  const ext = isPlainObject(value) ? value : undefined;
  if (!ext || !str(ext.resourceClaimName)) return undefined;
  return {
    resourceClaimName: ext.resourceClaimName as string,
    requestMappings: arr(ext.requestMappings).flatMap((r) =>
      isPlainObject(r) && str(r.resourceName) && str(r.requestName)
        ? [
            {
              containerName: str(r.containerName) ?? "",
              resourceName: r.resourceName as string,
              requestName: r.requestName as string,
            },
          ]
        : [],
    ),
  };
}

/** A container's extended resources: names with a domain (cpu, memory, hugepages-… have none). */
function extendedOf(container: Record<string, unknown>): {
  requests?: Record<string, string>;
  limits?: Record<string, string>;
} {
  const r = isPlainObject(container.resources) ? container.resources : {};
  const pick = (v: unknown) =>
    isPlainObject(v)
      ? Object.fromEntries(
          Object.entries(v)
            .filter(([k]) => k.includes("/"))
            .map(([k, q]) => [k, String(q)]),
        )
      : {};
  const [requests, limits] = [pick(r.requests), pick(r.limits)];
  return {
    ...(Object.keys(requests).length ? { requests } : {}),
    ...(Object.keys(limits).length ? { limits } : {}),
  };
}

/**
 * D1: one entry of a status write as the daemon receives it (from the CNI binary), or undefined
 * for anything not of that shape or beyond the API's bounds.
 */
export function trimClaimDeviceStatus(raw: unknown): ClaimDeviceStatus | undefined {
  if (!isPlainObject(raw)) return undefined;
  const [driver, pool, device] = [str(raw.driver), str(raw.pool), str(raw.device)];
  const conditions = arr(raw.conditions).flatMap((c) => trimCondition(c) ?? []);
  if (!driver || !pool || !device || conditions.length !== arr(raw.conditions).length)
    return undefined;
  const out: ClaimDeviceStatus = { driver, pool, device, conditions };
  if (raw.networkData === undefined) return out;
  const data = isPlainObject(raw.networkData) ? raw.networkData : {};
  const ips = arr(data.ips);
  const name = data.interfaceName;
  const mac = data.hardwareAddress;
  const bounded = (v: unknown, max: number) => typeof v === "string" && v.length <= max;
  if (
    !bounded(name, NETWORK_DATA_LIMITS.interfaceName) ||
    ips.length > NETWORK_DATA_LIMITS.ips ||
    !ips.every((ip) => bounded(ip, 64)) ||
    (mac !== undefined && !bounded(mac, NETWORK_DATA_LIMITS.hardwareAddress))
  )
    return undefined;
  out.networkData = {
    interfaceName: name as string,
    ips: ips as string[],
    ...(mac !== undefined ? { hardwareAddress: mac as string } : {}),
  };
  return out;
}

function trimCondition(raw: unknown): DeviceCondition | undefined {
  if (!isPlainObject(raw) || raw.status !== "True") return undefined;
  const [type, reason, at] = [str(raw.type), str(raw.reason), str(raw.lastTransitionTime)];
  const message = typeof raw.message === "string" ? raw.message : undefined;
  if (!type || !reason || !at || message === undefined || message.length > 32768) return undefined;
  return { type, status: "True", reason, message, lastTransitionTime: at };
}
