/**
 * The registry table: the resources the fake serves. Routing, RBAC attributes, LIST, WATCH and
 * bookmarks read it. Serving another resource is a row here (a stored key gets its own store and
 * watch history), a handler for its named objects in router.ts's `objectHandlers` (reads only by
 * default), and test controls to add objects.
 */

/**
 * The Dynamic Resource Allocation resources (resource.k8s.io/v1): namespaced ResourceClaims with
 * their status subresource (claim-status.ts), and cluster-scoped ResourceSlices, with the field
 * selectors kube-apiserver accepts for them (ResourceSlice: `metadata.name`, `spec.nodeName`,
 * `spec.driver`, not `spec.pool.name`; ResourceClaim: the metadata defaults) and its words for
 * one it does not. Two rows of the registry table, so they are stored, listed, watched and
 * authorized like pods and NADs.
 */
export type DraResource = "resourceclaims" | "resourceslices";
export const DRA_GROUP = "resource.k8s.io";
export const DRA_API_VERSION = `${DRA_GROUP}/v1`;

/**
 * A stored, watchable resource (a key of the registry table); events are create-only, not stored as
 * one.
 */
export type Resource = "pods" | "nads" | DraResource;

/** One resource the fake serves. */
export interface ResourceDef {
  /** The store and the watch history are per key. */
  key: Resource | "events";
  /** Cluster-scoped resources have no namespace in their path. */
  namespaced: boolean;
  group: string;
  version: string;
  plural: string;
  kind: string;
  listKind: string;
  /** Fields the apiserver indexes for field selectors. */
  fields: ReadonlySet<string>;
  /** Its 400's words for a field selector on another field (default: the pods' conversion's). */
  fieldError?: (label: string) => string;
  subresources: readonly string[];
}

/** The registry rows of DRA. */
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
    fieldError: (label: string) =>
      `"${label}" is not a known field selector: only "metadata.name", "metadata.namespace"`,
    subresources: ["status"],
  },
  {
    key: "resourceslices" as DraResource,
    namespaced: false,
    group: DRA_GROUP,
    version: "v1",
    plural: "resourceslices",
    kind: "ResourceSlice",
    listKind: "ResourceSliceList",
    fields: new Set(["metadata.name", "spec.nodeName", "spec.driver"]),
    fieldError: (label: string) =>
      `field label not supported for ${DRA_GROUP}/v1, Kind=ResourceSlice: ${label}`,
    subresources: [],
  },
] as const;

export const draKindOf = (resource: DraResource): string =>
  DRA_RESOURCE_DEFS.find((d) => d.key === resource)!.kind;
export const isNamespacedDra = (resource: DraResource): boolean =>
  DRA_RESOURCE_DEFS.find((d) => d.key === resource)!.namespaced;

const POD_FIELDS = new Set([
  "metadata.name",
  "metadata.namespace",
  "spec.nodeName",
  "spec.restartPolicy",
  "spec.schedulerName",
  "spec.serviceAccountName",
  "status.phase",
  "status.podIP",
  "status.nominatedNodeName",
]);
const NAD_FIELDS = new Set(["metadata.name", "metadata.namespace"]);

export const RESOURCES: readonly ResourceDef[] = [
  {
    key: "pods",
    namespaced: true,
    group: "",
    version: "v1",
    plural: "pods",
    kind: "Pod",
    listKind: "PodList",
    fields: POD_FIELDS,
    subresources: ["status"],
  },
  {
    key: "nads",
    namespaced: true,
    group: "k8s.cni.cncf.io",
    version: "v1",
    plural: "network-attachment-definitions",
    kind: "NetworkAttachmentDefinition",
    listKind: "NetworkAttachmentDefinitionList",
    fields: NAD_FIELDS,
    subresources: [],
  },
  ...["", "events.k8s.io"].map((group) => ({
    key: "events" as const,
    namespaced: true,
    group,
    version: "v1",
    plural: "events",
    kind: "Event",
    listKind: "EventList",
    fields: NAD_FIELDS,
    subresources: [],
  })),
  ...DRA_RESOURCE_DEFS,
];

export const defOf = (resource: Resource): ResourceDef =>
  RESOURCES.find((d) => d.key === resource)!;

export const apiVersionOf = (def: ResourceDef) =>
  def.group ? `${def.group}/${def.version}` : def.version;

/** The stored key of an object: "namespace/name" ("/name" when cluster-scoped). */
export function objectKey(namespace: string, name: string): string {
  return `${namespace}/${name}`;
}

/** The query-string booleans kube-apiserver accepts (Go's strconv.ParseBool). */
export const TRUE = new Set(["1", "t", "T", "true", "TRUE", "True"]);
