/**
 * The fake API server's Dynamic Resource Allocation resources (resource.k8s.io/v1): namespaced
 * ResourceClaims and cluster-scoped ResourceSlices, with the field selectors kube-apiserver
 * indexes for them (ResourceSlice: `spec.nodeName`, `spec.driver`, `spec.pool.name`). They are two
 * rows of the server's registry table (fake-apiserver.ts), so they are stored, listed, watched and
 * authorized (RBAC) with the same machinery as pods and NADs.
 */

export type DraResource = "resourceclaims" | "resourceslices";
export const DRA_GROUP = "resource.k8s.io";
export const DRA_API_VERSION = `${DRA_GROUP}/v1`;

/** The registry rows (the shape of fake-apiserver.ts's ResourceDef). */
export const DRA_RESOURCE_DEFS = [
  {
    key: "resourceclaims" as DraResource,
    namespaced: true,
    group: DRA_GROUP,
    version: "v1",
    plural: "resourceclaims",
    kind: "ResourceClaim",
    listKind: "ResourceClaimList",
    fields: new Set(["metadata.name", "metadata.namespace"]),
    subresources: [],
  },
  {
    key: "resourceslices" as DraResource,
    namespaced: false,
    group: DRA_GROUP,
    version: "v1",
    plural: "resourceslices",
    kind: "ResourceSlice",
    listKind: "ResourceSliceList",
    fields: new Set(["metadata.name", "spec.nodeName", "spec.driver", "spec.pool.name"]),
    subresources: [],
  },
] as const;

export const draKindOf = (r: DraResource): string => DRA_RESOURCE_DEFS.find((d) => d.key === r)!.kind;
export const isNamespacedDra = (r: DraResource): boolean => DRA_RESOURCE_DEFS.find((d) => d.key === r)!.namespaced;
