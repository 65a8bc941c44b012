/**
 * The devices a pod's ResourceClaims give its networks (M10, DRA): for each claim, each allocated
 * device (`status.allocation.devices.results[]`, in allocation order) is looked up in the
 * ResourceSlices of its driver on the pod's node (one list per driver, field selectors
 * `spec.nodeName` and `spec.driver`; the pool's latest generation only), and its
 * `k8s.cni.cncf.io/deviceID` and `k8s.cni.cncf.io/resourceName` attributes file it under a
 * resource name, as Multus's DRA client does.
 *
 * Skipped as Multus skips them: a device with neither attribute (a GPU of the same pod), one with
 * only one of the two, and one in no slice, with a warning; a claim none of whose devices is a
 * network device is named in a warning of its own (D2). Read per pod (D2): the claims by name,
 * the slices of the pod's node and the claim's driver only. Stricter than Multus: a claim
 * missing, not generated or not allocated yet fails with 11 (kubelet retries; Multus fails too,
 * without the hint), an attribute of the wrong type with 7 (Multus ignores the attribute), and so
 * do a value the one device rule refuses (npwg/device-id.ts) and a device that two slices of one
 * pool and generation list.
 * Pods using the extended-resource mapping (`status.extendedResourceClaimStatus`): every device of
 * a mapped request must carry both attributes, with the mapping's resource name (else 7).
 */
import { CniError, Code } from "../cni/errors";
import type { Logger } from "../log/logger";
import { type DeviceTextKind, validateDeviceText } from "../npwg/device-id";
import type { Pod } from "../npwg/types";
import {
  DEVICE_ID_ATTRIBUTE,
  RESOURCE_NAME_ATTRIBUTE,
  type AllocationResult,
  type ResourceClaim,
  type ResourceSlice,
  type SliceDevice,
} from "../cluster/dra-objects";
import { podClaimRefs, type PodClaimRef, stringAttribute } from "./pod-claims";

/** What the DRA path reads; every {@link KubeApi} that supports DRA implements it. */
export interface DraReader {
  /**
   * `undefined` when the claim does not exist. `forPod`: the pod of the ADD (the daemon serves its
   * cached copy only when the claim is allocated and reserved for that pod's UID).
   */
  getResourceClaim(
    namespace: string,
    name: string,
    forPod?: { uid?: string | undefined },
  ): Promise<ResourceClaim | undefined>;
  /** The slices of one driver on one node (every node's without `nodeName`). */
  listResourceSlices(query: {
    nodeName?: string | undefined;
    driver: string;
  }): Promise<ResourceSlice[]>;
}

/** One network device a claim gave the pod. */
export interface ClaimDevice extends AllocationResult {
  deviceID: string;
  resourceName: string;
  /** The ResourceClaim's name (namespace: the pod's). */
  claim: string;
}

export interface PodClaimDevices {
  /** Per resource name, in allocation order (the caller sorts, with kubelet's). */
  byResource: Map<string, ClaimDevice[]>;
  /** The ResourceClaims read, for messages. */
  claims: string[];
  /** Allocated devices found in no slice (skipped with a warning): a later retry may find them. */
  notInSlice: number;
}

type Located = { state: "found"; device: SliceDevice } | { state: "no-slice" };

/** A device as the pool's latest generation lists it, and the slices that list it. */
interface Listed {
  device: SliceDevice;
  generation: number;
  slices: string[];
}

/**
 * Slices per driver, listed once per call; the pool's latest generation wins (older ones are
 * stale). A device that two slices of one pool and generation list (or one slice twice) is
 * refused when a claim's device is looked up there: which copy's attributes count would depend on
 * the order of the list, and Kubernetes counts such a pool as invalid.
 */
class SliceIndex {
  private readonly byDriver = new Map<string, Promise<Map<string, Listed>>>();
  constructor(
    private readonly reader: DraReader,
    private readonly nodeName: string | undefined,
  ) {}

  async locate(result: AllocationResult): Promise<Located> {
    let index = this.byDriver.get(result.driver);
    if (!index) this.byDriver.set(result.driver, (index = this.load(result.driver)));
    const listed = (await index).get(`${result.pool}\u0000${result.device}`);
    if (!listed) return { state: "no-slice" };
    if (listed.slices.length > 1) throw duplicateDevice(result, listed);
    return { state: "found", device: listed.device };
  }

  private async load(driver: string): Promise<Map<string, Listed>> {
    const slices = (
      await this.reader.listResourceSlices({ nodeName: this.nodeName, driver })
    ).filter(
      (s) =>
        s.spec.driver === driver &&
        (!this.nodeName || !s.spec.nodeName || s.spec.nodeName === this.nodeName),
    );
    const latest = new Map<string, number>();
    for (const s of slices)
      latest.set(
        s.spec.pool.name,
        Math.max(latest.get(s.spec.pool.name) ?? 0, s.spec.pool.generation),
      );
    const out = new Map<string, Listed>();
    for (const s of slices) {
      const generation = s.spec.pool.generation;
      if (generation !== latest.get(s.spec.pool.name)) continue;
      for (const d of s.spec.devices) {
        const key = `${s.spec.pool.name}\u0000${d.name}`;
        const seen = out.get(key);
        if (seen) seen.slices.push(s.metadata.name);
        else out.set(key, { device: d, generation, slices: [s.metadata.name] });
      }
    }
    return out;
  }
}

function duplicateDevice(result: AllocationResult, listed: Listed): CniError {
  const names = [...listed.slices].sort();
  const by =
    new Set(names).size === 1
      ? `ResourceSlice ${names[0]} lists it ${names.length} times`
      : `ResourceSlices ${names.join(", ")} each list it`;
  const pool = `driver ${result.driver}, pool ${result.pool}, generation ${listed.generation}`;
  const device = `device ${result.device} (${pool})`;
  return new CniError(
    Code.InvalidNetworkConfig,
    `${device}: ${by}; a pool's devices must be unique within one generation, so Plexus does ` +
      `not pick one copy; the driver ${result.driver} must republish the pool`,
  );
}

/**
 * The pod's claims' network devices. Read only for a pod with claims and a NAD with a resourceName.
 */
export async function podClaimDevices(
  pod: Pod,
  reader: DraReader,
  log: Logger,
): Promise<PodClaimDevices> {
  const slices = new SliceIndex(reader, pod.spec?.nodeName);
  const out: PodClaimDevices = { byResource: new Map(), claims: [], notInSlice: 0 };
  const add = (d: ClaimDevice) =>
    out.byResource.set(d.resourceName, [...(out.byResource.get(d.resourceName) ?? []), d]);
  // Independent reads in parallel: every claim, then each driver's slices (one list per driver).
  const claims = await Promise.all(
    podClaimRefs(pod).map((ref) => allocatedClaim(reader, pod, ref)),
  );
  const located = await Promise.all(
    claims.map((c) =>
      Promise.all(c.status!.allocation!.devices.results.map((r) => slices.locate(r))),
    ),
  );
  claims.forEach((claim, i) => {
    out.claims.push(claim.metadata.name);
    let contributed = 0;
    claim.status!.allocation!.devices.results.forEach((r, j) => {
      const at = located[i]![j]!;
      if (at.state === "no-slice") {
        out.notInSlice++;
        log.warn(
          {
            claim: claim.metadata.name,
            driver: r.driver,
            pool: r.pool,
            device: r.device,
            node: pod.spec?.nodeName,
          },
          "allocated device found in no ResourceSlice of its driver and pool on this node; skipped",
        );
        return;
      }
      const d = networkDevice(at.device, r, { claim: claim.metadata.name, strict: undefined, log });
      if (d) add(d);
      if (d) contributed++;
    });
    // D2: a claim of other devices (a GPU) is no error, but it is said.
    if (contributed === 0 && located[i]!.every((at) => at.state === "found"))
      log.warn(
        { claim: claim.metadata.name, devices: claim.status!.allocation!.devices.results.length },
        "ResourceClaim contributes no network device (none of its allocated devices carries " +
          `both ${DEVICE_ID_ATTRIBUTE} and ${RESOURCE_NAME_ATTRIBUTE}); skipped`,
      );
  });
  await addExtendedDevices(pod, { reader, slices, out, add, log });
  return out;
}

/**
 * The claim, allocated: 11 for what a retry can fix (not generated, missing, not allocated yet).
 */
async function allocatedClaim(
  reader: DraReader,
  pod: Pod,
  ref: PodClaimRef,
): Promise<ResourceClaim> {
  const namespace = pod.metadata.namespace;
  const entry = ref.podClaim
    ? `the pod's claim ${ref.podClaim}`
    : "the pod's extended-resource claim";
  if (!ref.claim)
    throw new CniError(
      Code.TryAgainLater,
      `${entry}: no ResourceClaim generated yet from template ` +
        `${ref.template ?? "(none named)"} (status.resourceClaimStatuses has no entry for it)`,
    );
  const claim = await reader.getResourceClaim(namespace, ref.claim, { uid: pod.metadata.uid });
  if (!claim)
    throw new CniError(
      Code.TryAgainLater,
      `${entry}: ResourceClaim ${namespace}/${ref.claim} does not exist`,
    );
  if (!claim.status?.allocation)
    throw new CniError(
      Code.TryAgainLater,
      `${entry}: ResourceClaim ${namespace}/${ref.claim} is not allocated yet (no ` +
        `status.allocation), so its devices are unknown`,
    );
  return claim;
}

/**
 * A device's network identity from its two attributes, or undefined (not a network device).
 * `strict` (the extended-resource mapping): both attributes required, with that resource name.
 */
function networkDevice(
  device: SliceDevice,
  result: AllocationResult,
  context: { claim: string; strict: string | undefined; log: Logger },
): ClaimDevice | undefined {
  const id = stringAttribute(device, DEVICE_ID_ATTRIBUTE);
  const rn = stringAttribute(device, RESOURCE_NAME_ATTRIBUTE);
  const where =
    `ResourceClaim ${context.claim}: device ${result.device} (driver ` +
    `${result.driver}, pool ${result.pool})`;
  checkAttribute(id, { where, name: DEVICE_ID_ATTRIBUTE, kind: "deviceID" });
  checkAttribute(rn, { where, name: RESOURCE_NAME_ATTRIBUTE, kind: "resourceName" });
  if (context.strict !== undefined) {
    if (id.state !== "found" || rn.state !== "found" || rn.value !== context.strict)
      throw new CniError(
        Code.InvalidNetworkConfig,
        `${where}: the extended resource ${context.strict} is mapped to request ` +
          `${result.request}, so the device must carry ${DEVICE_ID_ATTRIBUTE} and ` +
          `${RESOURCE_NAME_ATTRIBUTE}=${context.strict}, but it has ` +
          `${id.state === "found" ? "" : `no ${DEVICE_ID_ATTRIBUTE}, `}` +
          `${RESOURCE_NAME_ATTRIBUTE} ` +
          `${rn.state === "found" ? JSON.stringify(rn.value) : "absent"}`,
      );
  }
  if (id.state !== "found" || rn.state !== "found") {
    if (id.state === "found" || rn.state === "found")
      context.log.warn(
        { claim: context.claim, device: result.device, driver: result.driver, pool: result.pool },
        `device has only one of ${DEVICE_ID_ATTRIBUTE} and ${RESOURCE_NAME_ATTRIBUTE}; not a ` +
          `network device, skipped`,
      );
    return undefined;
  }
  return { ...result, deviceID: id.value, resourceName: rn.value, claim: context.claim };
}

/**
 * An attribute the device has is a typed string, and its value passes the one device rule
 * (npwg/device-id.ts): it reaches a delegate as `deviceID`, and a file name. Else 7.
 */
function checkAttribute(
  attribute: ReturnType<typeof stringAttribute>,
  field: { where: string; name: string; kind: DeviceTextKind },
): void {
  const what = `${field.where}: attribute ${field.name}`;
  if (attribute.state === "wrong-type") {
    const msg =
      `${what} must be a string ({"string": "…"}) in its ResourceSlice, but has ` +
      `${attribute.got}`;
    throw new CniError(Code.InvalidNetworkConfig, msg);
  }
  if (attribute.state === "found") validateDeviceText(attribute.value, { what, kind: field.kind });
}

/**
 * `status.extendedResourceClaimStatus`: each mapped request's devices, strictly (Multus's rule).
 */
async function addExtendedDevices(
  pod: Pod,
  input: {
    reader: DraReader;
    slices: SliceIndex;
    out: PodClaimDevices;
    add: (d: ClaimDevice) => void;
    log: Logger;
  },
): Promise<void> {
  const ext = pod.status?.extendedResourceClaimStatus;
  if (!ext) return;
  const claim = await allocatedClaim(input.reader, pod, { claim: ext.resourceClaimName });
  input.out.claims.push(claim.metadata.name);
  const results = claim.status!.allocation!.devices.results;
  for (const m of ext.requestMappings) {
    const mine = results.filter((r) => r.request === m.requestName);
    if (mine.length === 0)
      throw new CniError(
        Code.InvalidNetworkConfig,
        `ResourceClaim ${claim.metadata.name}: the extended resource ` +
          `${m.resourceName} (container ` +
          `${m.containerName}) is mapped to request ${m.requestName}, which has no allocated ` +
          `device`,
      );
    for (const r of mine) {
      const at = await input.slices.locate(r);
      if (at.state === "no-slice")
        throw new CniError(
          Code.TryAgainLater,
          `ResourceClaim ${claim.metadata.name}: device ${r.device} (driver ${r.driver}, pool ` +
            `${r.pool}) of the extended resource ${m.resourceName} is in no ResourceSlice on ` +
            `node ${pod.spec?.nodeName ?? "(unknown)"}`,
        );
      input.add(
        networkDevice(at.device, r, {
          claim: claim.metadata.name,
          strict: m.resourceName,
          log: input.log,
        })!,
      );
    }
  }
}
