/**
 * DRA's pure resolution over the trimmed objects (M10): which claims a pod uses, whether a claim
 * is allocated and reserved for it, and what a device's typed attribute holds. The objects and
 * their trims are in cluster/dra-objects.ts; the walk from claims to devices in claim-devices.ts.
 */
import { isPlainObject } from "../cni/json";
import type { KeptAttribute, ResourceClaim, SliceDevice } from "../cluster/dra-objects";
import type { Pod } from "../npwg/types";

/**
 * Whether the claim is allocated and reserved for the pod of this UID (kubelet starts no pod
 * otherwise).
 */
export function allocatedForPod(claim: ResourceClaim, podUid: string): boolean {
  return Boolean(
    claim.status?.allocation && claim.status.reservedFor?.some((r) => r.uid === podUid),
  );
}

/** Whether the pod has any claim (a pod without one reads no DRA object at all). */
export function podHasClaims(pod: Pod): boolean {
  return Boolean(
    pod.spec?.resourceClaims?.length ||
      pod.status?.resourceClaimStatuses?.length ||
      pod.status?.extendedResourceClaimStatus,
  );
}

/** The extended resources the pod's containers request (kubelet's device plugins serve these). */
export function requestedExtendedResources(pod: Pod): Set<string> {
  const out = new Set<string>();
  for (const c of [...(pod.spec?.containers ?? []), ...(pod.spec?.initContainers ?? [])]) {
    for (const k of Object.keys(c.resources?.requests ?? {})) out.add(k);
    for (const k of Object.keys(c.resources?.limits ?? {})) out.add(k);
  }
  return out;
}

/** One claim the pod uses: its entry name in the pod, and the ResourceClaim's name once known. */
export interface PodClaimRef {
  /** `spec.resourceClaims[].name`; for the extended-resource claim, undefined. */
  podClaim?: string;
  /**
   * Undefined: a template's claim not generated yet (status.resourceClaimStatuses has no entry).
   */
  claim?: string;
  template?: string;
}

/**
 * The pod's claims, in spec order: a claim named directly (`resourceClaimName`), or generated from
 * a template, whose name is in `status.resourceClaimStatuses` (an entry without a name: no claim
 * was needed, nothing to read). Status entries of no spec entry count too, as Multus reads only
 * those. A claim named by two entries is read once.
 */
export function podClaimRefs(pod: Pod): PodClaimRef[] {
  const statuses = new Map((pod.status?.resourceClaimStatuses ?? []).map((s) => [s.name, s]));
  const out: PodClaimRef[] = [];
  const seen = new Set<string>();
  for (const c of pod.spec?.resourceClaims ?? []) {
    seen.add(c.name);
    if (c.resourceClaimName) out.push({ podClaim: c.name, claim: c.resourceClaimName });
    else {
      const s = statuses.get(c.name);
      if (s && !s.resourceClaimName) continue;
      out.push({
        podClaim: c.name,
        ...(s?.resourceClaimName ? { claim: s.resourceClaimName } : {}),
        ...(c.resourceClaimTemplateName ? { template: c.resourceClaimTemplateName } : {}),
      });
    }
  }
  for (const s of statuses.values())
    if (!seen.has(s.name) && s.resourceClaimName)
      out.push({ podClaim: s.name, claim: s.resourceClaimName });
  // One claim named by two entries gives its devices once.
  return out.filter((r, i) => !r.claim || out.findIndex((x) => x.claim === r.claim) === i);
}

/**
 * The string of a typed attribute value (`{ "string": "…" }`), "absent", or "wrong type" (with
 * what it is).
 */
export function stringAttribute(
  device: SliceDevice,
  name: KeptAttribute,
): { state: "absent" } | { state: "found"; value: string } | { state: "wrong-type"; got: string } {
  if (!device.attributes || !(name in device.attributes)) return { state: "absent" };
  const v = device.attributes[name];
  if (isPlainObject(v) && typeof v.string === "string" && v.string !== "")
    return { state: "found", value: v.string };
  const got = isPlainObject(v)
    ? v.string === ""
      ? "an empty string"
      : Object.keys(v).join(", ") || "an empty object"
    : JSON.stringify(v);
  return { state: "wrong-type", got: String(got).slice(0, 80) };
}

/** The names of the ResourceClaims the pod uses, known so far (its extended-resource claim too). */
export function podClaimNames(pod: Pod): string[] {
  const names = podClaimRefs(pod).flatMap((r) => (r.claim ? [r.claim] : []));
  const ext = pod.status?.extendedResourceClaimStatus?.resourceClaimName;
  return [...new Set(ext ? [...names, ext] : names)];
}
