/**
 * The fake API server's Dynamic Resource Allocation resources (resource.k8s.io/v1): namespaced
 * ResourceClaims and cluster-scoped ResourceSlices, with the field selectors kube-apiserver
 * indexes for them (ResourceSlice: `spec.nodeName`, `spec.driver`, `spec.pool.name`). The server
 * (fake-apiserver.ts) stores, lists and watches them with the same machinery as pods and NADs.
 */

export const DRA_RESOURCES = {
  resourceclaims: {
    kind: "ResourceClaim",
    namespaced: true,
    fields: new Set(["metadata.name", "metadata.namespace"]),
  },
  resourceslices: {
    kind: "ResourceSlice",
    namespaced: false,
    fields: new Set(["metadata.name", "spec.nodeName", "spec.driver", "spec.pool.name"]),
  },
} as const;

export type DraResource = keyof typeof DRA_RESOURCES;
export const DRA_API_VERSION = "resource.k8s.io/v1";

const NAMESPACED = /^\/apis\/resource\.k8s\.io\/v1\/namespaces\/([^/]+)\/(resourceclaims)(?:\/([^/]+))?$/;
const CLUSTER = /^\/apis\/resource\.k8s\.io\/v1\/(resourceclaims|resourceslices)(?:\/([^/]+))?$/;

/** A DRA path: the resource, the namespace (undefined: all, or cluster-scoped) and the name (undefined: the collection). */
export function matchDraPath(
  path: string,
): { resource: DraResource; namespace: string | undefined; name: string | undefined } | undefined {
  let m = NAMESPACED.exec(path);
  if (m) return { resource: m[2] as DraResource, namespace: decodeURIComponent(m[1]!), name: opt(m[3]) };
  m = CLUSTER.exec(path);
  if (!m) return undefined;
  const resource = m[1] as DraResource;
  // GET of one claim needs its namespace; a cluster-wide path names only the collection.
  if (DRA_RESOURCES[resource].namespaced && m[2] !== undefined) return undefined;
  return { resource, namespace: undefined, name: opt(m[2]) };
}

const opt = (s: string | undefined) => (s === undefined ? undefined : decodeURIComponent(s));

export function isDraResource(r: string): r is DraResource {
  return Object.hasOwn(DRA_RESOURCES, r);
}

/** The store key of a DRA object (cluster-scoped objects have an empty namespace). */
export function draKey(resource: DraResource, namespace: string | undefined, name: string): string {
  return `${DRA_RESOURCES[resource].namespaced ? (namespace ?? "default") : ""}/${name}`;
}
