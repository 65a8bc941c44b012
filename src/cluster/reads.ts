/**
 * The objects Plexus reads by name, declared once. A row is one object: its API resource (the
 * REST path, and the resource a 404's Status names), the rule its name follows, how an answer is
 * checked and trimmed, whether "no such object" is an answer or a failure, and the KubeApi method
 * that reads it. Each transport has one generic `read(kind, ref)` driven by these rows (the REST
 * client, the daemon's client and its routes, the manifest directory, the explain command's
 * manifest source); {@link ObjectReader} gives each of them the port's named reads over it.
 * Adding a read is a row, its method in kube-api.ts and its use; adding a field, its trim.
 *
 * Who may read them: the `plexus` ClusterRole grants `get` on each row's resource
 * (deploy/rbac.yaml; test/unit/cluster/reads.test.ts holds the two together), and the daemon
 * serves each row on its root-only socket (daemon-client/protocol.ts). ResourceSlices are not here:
 * they are listed by node and driver (KubeApi.listResourceSlices), never read by name.
 */
import { CniError, Code } from "../cni/errors";
import { validateDns1123Label } from "../npwg/dns1123";
import type { Nad, Pod } from "../npwg/types";
import { DRA_GROUP, DRA_VERSION, type ResourceClaim, trimResourceClaim } from "./dra-objects";
import type { KubeApi } from "./kube-api";
import { NAD_GROUP, NAD_PLURAL, NAD_VERSION, trimNad, trimPod } from "./objects";

/** One API resource: a request path, and what a 404's Status names (`group` "": the core group). */
export interface ApiResource {
  group: string;
  version: string;
  plural: string;
}

/** The object a read names, and the pod (K8S_POD_UID) the CNI call is for. */
export interface ReadRef {
  namespace: string;
  name: string;
  /**
   * The UID of the pod the call is for: the UID a pod read expects, the pod a claim must be
   * reserved for. A cache serves its copy only when it agrees (daemon/server.ts).
   */
  podUid?: string | undefined;
}

interface Named {
  metadata: { name: string };
}

/** One object Plexus reads by name; `Optional`: a missing one is `undefined`, not a failure. */
export interface ReadRow<T extends Named = Named, Optional extends boolean = boolean> {
  /** The object's kind: an API answer of another kind is undecodable (6). */
  kind: string;
  /** When set, an API answer must carry this apiVersion too. */
  apiVersion?: string;
  /** How messages name it: `get pod app/web`, `pod namespace …`. */
  noun: string;
  resource: ApiResource;
  /** B20: the name a DNS-1123 label or subdomain (the namespace is always a label). */
  name: "label" | "subdomain";
  /** A NAD or a claim that does not exist is an answer (B28); a pod that does not, code 3 (B38). */
  optional: Optional;
  /** The fields Plexus reads (objects.ts, dra-objects.ts), or undefined for anything else. */
  trim: (raw: Record<string, unknown>, fallbackNamespace: string) => T | undefined;
  /** The KubeApi method that reads it, for a KubeApi known only by the port (a fake, a wrapper). */
  port: (kube: KubeApi, ref: ReadRef) => Promise<Optional extends true ? T | undefined : T>;
}

function row<T extends Named, const Optional extends boolean>(
  r: ReadRow<T, Optional>,
): ReadRow<T, Optional> {
  return r;
}

export const READS = {
  pod: row({
    kind: "Pod",
    apiVersion: "v1",
    noun: "pod",
    resource: { group: "", version: "v1", plural: "pods" },
    name: "subdomain",
    optional: false,
    trim: trimPod,
    port: (kube, ref) => kube.getPod(ref.namespace, ref.name, ref.podUid),
  }),
  nad: row({
    kind: "NetworkAttachmentDefinition",
    noun: "NetworkAttachmentDefinition",
    resource: { group: NAD_GROUP, version: NAD_VERSION, plural: NAD_PLURAL },
    name: "label",
    optional: true,
    trim: trimNad,
    port: (kube, ref) => kube.getNad(ref.namespace, ref.name),
  }),
  /** M10, DRA: asked only for a pod with claims whose NADs carry a resourceName. */
  resourceClaim: row({
    kind: "ResourceClaim",
    noun: "ResourceClaim",
    resource: { group: DRA_GROUP, version: DRA_VERSION, plural: "resourceclaims" },
    name: "subdomain",
    optional: true,
    trim: trimResourceClaim,
    port: async (kube, ref) => {
      if (!kube.getResourceClaim)
        throw new CniError(
          Code.Internal,
          "get ResourceClaim: the Kubernetes access in use cannot read ResourceClaims",
        );
      return kube.getResourceClaim(ref.namespace, ref.name, { uid: ref.podUid });
    },
  }),
};

export type ReadKind = keyof typeof READS;
export const READ_KINDS = Object.keys(READS) as ReadKind[];

/** What a read of `K` answers: the trimmed object, or `undefined` where missing is an answer. */
export type ReadAnswer<K extends ReadKind> =
  (typeof READS)[K] extends ReadRow<infer T, infer Optional>
    ? Optional extends true
      ? T | undefined
      : T
    : never;

/** One row's read from any KubeApi, through the port's method. */
export function readThrough<K extends ReadKind>(
  kube: KubeApi,
  kind: K,
  ref: ReadRef,
): Promise<ReadAnswer<K>> {
  const r: ReadRow = READS[kind];
  return r.port(kube, ref) as Promise<ReadAnswer<K>>;
}

/**
 * The port's named reads (KubeApi's getPod, getNad, getResourceClaim) over a transport's one
 * generic read, the only one it implements.
 */
export abstract class ObjectReader {
  abstract read<K extends ReadKind>(kind: K, ref: ReadRef): Promise<ReadAnswer<K>>;

  getPod(namespace: string, name: string, uid?: string): Promise<Pod> {
    return this.read("pod", { namespace, name, podUid: uid });
  }

  getNad(namespace: string, name: string): Promise<Nad | undefined> {
    return this.read("nad", { namespace, name });
  }

  getResourceClaim(
    namespace: string,
    name: string,
    forPod?: { uid?: string | undefined },
  ): Promise<ResourceClaim | undefined> {
    return this.read("resourceClaim", { namespace, name, podUid: forPod?.uid });
  }
}

/** An object's name as the API server checks most (ValidatePodName): no `/`, no `..`. */
const SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

export function isDns1123Subdomain(value: string): boolean {
  return value.length <= 253 && SUBDOMAIN.test(value);
}

/** B20: a DNS-1123 subdomain, or 7 naming `what` and the value, before it reaches a path. */
export function validateSubdomain(value: string, what: string): string {
  if (!isDns1123Subdomain(value)) {
    throw new CniError(
      Code.InvalidNetworkConfig,
      `${what} ${JSON.stringify(value.slice(0, 80))} is not a valid pod name (DNS-1123 subdomain)`,
    );
  }
  return value;
}

/** B20: a read's namespace and name as its row says, before either reaches a path or a cache. */
export function validateReadRef(r: ReadRow, ref: ReadRef): void {
  validateDns1123Label(ref.namespace, `${r.noun} namespace`);
  if (r.name === "label") validateDns1123Label(ref.name, `${r.noun} name`);
  else validateSubdomain(ref.name, `${r.noun} name`);
}
