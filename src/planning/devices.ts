/**
 * Device-plugin networks (M10): an attachment whose NAD carries `k8s.v1.cni.cncf.io/resourceName`
 * gets one of the devices kubelet allocated to the pod for that resource (pod-resources API),
 * handed to its delegate as `deviceID` (top level of every plugin, and `runtimeConfig.deviceID`
 * where declared) with `runtimeConfig.CNIDeviceInfoFile`; the NPWG device-info file is copied
 * before the delegate runs and read back into network-status after (nodestate/device-info.ts).
 *
 * Several attachments of one resource take the pod's devices in order (sorted, across all its
 * containers, as Multus does), one each. The allocation wins, as in Multus: a `deviceID` in the
 * pod's own selection is taken only when it is one of those devices (it then takes that one), else
 * the ADD fails (7); a tenant who may annotate a pod must not move a device it was never allocated
 * (another tenant's VF, the host's) into it. Every device ID passes npwg/device-id.ts. The record
 * keeps the device, so DEL asks kubelet nothing.
 *
 * DRA (resource.k8s.io/v1): a pod with ResourceClaims also gets the network devices its claims were
 * allocated (dra/claim-devices.ts), combined with kubelet's and sorted, as Multus combines them.
 *
 * Per attachment (M19, the design of Multus's per-selection resourceName): a selection's own
 * `resourceName` picks the pool that attachment takes its device from, when the NAD offers it (its
 * `k8s.v1.cni.cncf.io/allowedResourceNames` lists it, or it is the NAD's own resourceName); one
 * NAD then serves several pools. The NAD's owner decides which pools a pod may pick, so any other
 * name is refused (7): a tenant who may annotate a pod must not reach another pool's devices
 * through a NAD that never offered them. The allocation still wins within the pool picked.
 */
import type { PodRef } from "../cni/args";
import { asCniError, CniError, Code } from "../cni/errors";
import { showValue } from "../cni/json";
import { withKeysFold } from "../cni/keys";
import type { PlexusConf } from "../config/plugin-conf";
import { RESOURCE_NAME_ATTRIBUTE } from "../cluster/dra-objects";
import { podHasClaims, requestedExtendedResources } from "../dra/pod-claims";
import {
  type ClaimDevice,
  type DraReader,
  type PodClaimDevices,
  podClaimDevices,
} from "../dra/claim-devices";
import type { Logger } from "../log/logger";
import { cniDeviceInfoPath } from "../npwg/device-info";
import { deviceTextProblem } from "../npwg/device-id";
import {
  ALLOWED_RESOURCE_NAMES_ANNOTATION,
  type NetworkSelection,
  type Pod,
  RESOURCE_NAME_ANNOTATION,
} from "../npwg/types";
import type { Attachment, AttachmentDevice } from "../nodestate/record";

export type { AttachmentDevice };

/** The pod's device IDs per resource name (kubelet's pod-resources API, or a fake in tests). */
export type PodDevicesLookup = (query: {
  namespace: string;
  name: string;
  resourceNames: string[];
}) => Promise<Map<string, string[]>>;

/** What the device code reads of a NAD: its annotations. */
type AnnotatedNad = { metadata?: { annotations?: Record<string, string> | undefined } } | undefined;

export function resourceNameOf(nad: AnnotatedNad): string | undefined {
  const v = nad?.metadata?.annotations?.[RESOURCE_NAME_ANNOTATION]?.trim();
  return v ? v : undefined;
}

/** M19: the NAD's `allowedResourceNames`, each trimmed, empty entries left out. */
function allowedResourceNamesOf(nad: AnnotatedNad): string[] {
  const list = nad?.metadata?.annotations?.[ALLOWED_RESOURCE_NAMES_ANNOTATION] ?? "";
  const names = list.split(",").map((name) => name.trim());
  return [...new Set(names.filter((name) => name !== ""))];
}

/**
 * M10, M19: the resource (device pool) an attachment of `nad` takes: the selection's own
 * `resourceName` when the NAD offers it (listed in its `allowedResourceNames`, or its own
 * `resourceName`), else the NAD's `resourceName`; undefined: no device. A name the NAD does not
 * offer is refused (7), naming it and what the NAD offers.
 */
export function attachmentResourceName(
  nad: AnnotatedNad,
  selection: Pick<NetworkSelection, "name" | "namespace" | "resourceName"> | undefined,
): string | undefined {
  const own = resourceNameOf(nad);
  const asked = selection?.resourceName;
  if (selection === undefined || asked === undefined || asked === own) return own;
  const allowed = allowedResourceNamesOf(nad);
  if (allowed.includes(asked)) return asked;
  throw notOffered({ network: `${selection.namespace}/${selection.name}`, asked, own, allowed });
}

function notOffered(choice: {
  network: string;
  asked: string;
  own: string | undefined;
  allowed: string[];
}): CniError {
  const { own, allowed } = choice;
  const shown = allowed.slice(0, 8).map((name) => showValue(name));
  if (allowed.length > 8) shown.push(`… (${allowed.length} in all)`);
  const ownText = own ? `its own ${RESOURCE_NAME_ANNOTATION} is ${showValue(own)}` : undefined;
  const listText = allowed.length
    ? `its ${ALLOWED_RESOURCE_NAMES_ANNOTATION} lists only ${shown.join(", ")}`
    : `it has no ${ALLOWED_RESOURCE_NAMES_ANNOTATION}`;
  const nad =
    own || allowed.length
      ? `the NAD does not offer it: ${[listText, ownText].filter(Boolean).join(" and ")}`
      : `the NAD offers no device pool: it has neither ${RESOURCE_NAME_ANNOTATION} nor ` +
        ALLOWED_RESOURCE_NAMES_ANNOTATION;
  const msg = [
    `network ${choice.network}: the pod's selection asks for resourceName`,
    `${showValue(choice.asked)},`,
    `but ${nad};`,
    own
      ? `name one the NAD offers, drop "resourceName" to take the NAD's own, or have the NAD list`
      : `name one the NAD offers, drop "resourceName" (no device then), or have the NAD list`,
    `${showValue(choice.asked)} in ${ALLOWED_RESOURCE_NAMES_ANNOTATION}`,
  ];
  return new CniError(Code.InvalidNetworkConfig, msg.join(" "));
}

export interface AssignContext {
  ref: PodRef;
  containerId: string;
  conf: Pick<PlexusConf, "deviceInfoDir">;
  /** Wired by the caller (sources/pod-devices-lookup.ts: the daemon, else kubelet's socket). */
  lookup?: PodDevicesLookup | undefined;
  /** DRA: the pod as read (its claims), and what reads its ResourceClaims and ResourceSlices. */
  pod?: Pod | undefined;
  dra?: Partial<DraReader> | undefined;
  log: Logger;
  /**
   * DEL without a record: a device that cannot be learnt (kubelet down, the pod's allocation gone)
   * leaves the attachment without one, with a warning, instead of failing the plan.
   */
  bestEffort?: boolean | undefined;
}

interface Wanted {
  att: Attachment;
  i: number;
  resourceName: string;
}

/** The attachments with their devices; `resourceNames[i]` is attachment i's NAD annotation. */
export async function assignDevices(
  attachments: Attachment[],
  resourceNames: ReadonlyArray<string | undefined>,
  ctx: AssignContext,
): Promise<Attachment[]> {
  const wanted = attachments
    .map((att, i) => ({ att, i, resourceName: resourceNames[i] }))
    .filter((w): w is Wanted => !!w.resourceName);
  if (wanted.length === 0) return attachments;
  const allocated = await allocatedDevices(wanted, ctx);
  const picks = pickDevices(wanted, allocated, ctx);
  const out = [...attachments];
  for (const w of wanted) {
    const got = picks.get(w.i);
    if (got === undefined) {
      ctx.log.warn(
        { network: w.att.network, resourceName: w.resourceName },
        "no device known for this network; its delegate gets no deviceID",
      );
      out[w.i] = withoutDevice(w.att);
      continue;
    }
    out[w.i] = withDevice(w.att, deviceOf(w, got, { own: !!w.att.selection?.deviceID, ctx }));
  }
  return out;
}

/**
 * Which allocated device each network of a resource takes: a selection's own `deviceID` first,
 * only when it is one of the pod's devices of that resource (the allocation wins, as in Multus: a
 * tenant must not move a device it was never given into its pod), then the others in order.
 */
function pickDevices(wanted: Wanted[], allocated: AllocatedDevices, ctx: AssignContext): Picks {
  const picks: Picks = new Map();
  const taken = new Map<Allocated, Wanted>();
  for (const w of wanted) {
    const own = w.att.selection?.deviceID;
    if (!own) continue;
    const devices = allocated.byResource.get(w.resourceName) ?? [];
    const device = devices.find((d) => d.deviceID === own && !taken.has(d));
    if (device) {
      taken.set(device, w);
      picks.set(w.i, device);
    } else if (!ctx.bestEffort) throw notAllocated(w, { own, devices, taken });
  }
  if (!ctx.bestEffort) checkEnoughDevices(wanted, allocated);
  const untaken = (devices: Allocated[]) => devices.filter((d) => !taken.has(d));
  const free = new Map([...allocated.byResource].map(([r, devices]) => [r, untaken(devices)]));
  for (const w of wanted) {
    if (w.att.selection?.deviceID) continue;
    const device = free.get(w.resourceName)?.shift();
    if (device) picks.set(w.i, device);
  }
  return picks;
}

/** Attachment index → its device. */
type Picks = Map<number, Allocated>;

/** A selection's own deviceID, the pod's devices of that network's resource, and who took which. */
interface OwnChoice {
  own: string;
  devices: Allocated[];
  taken: Map<Allocated, Wanted>;
}

/** A selection's deviceID that is not one of the pod's devices of the network's resource: 7. */
function notAllocated(wanted: Wanted, choice: OwnChoice): CniError {
  const source = (d: Allocated) => (d.claim ? `ResourceClaim ${d.claim.claim}` : "kubelet");
  const ids = choice.devices.map((d) => `${d.deviceID} (${source(d)})`);
  const more = ids.length > 8 ? `, … (${ids.length} in all)` : "";
  const shown = ids.slice(0, 8).join(", ") + more;
  const other = [...choice.taken].find(([d]) => d.deviceID === choice.own)?.[1];
  const why = other
    ? `the network ${other.att.network} on ${other.att.ifName} already takes it`
    : `the devices allocated to the pod for ${wanted.resourceName} are ${shown || "none"}`;
  const msg = [
    `network ${wanted.att.network} (resource ${wanted.resourceName}):`,
    `the pod's selection asks for deviceID ${JSON.stringify(choice.own)}, but ${why};`,
    'the allocated device wins: drop "deviceID" from the selection or name one of those devices',
  ];
  return new CniError(Code.InvalidNetworkConfig, msg.join(" "));
}

/** One device a network can take: from kubelet (a device plugin), or from a claim (DRA). */
interface Allocated {
  deviceID: string;
  claim?: ClaimDevice;
}

interface AllocatedDevices {
  /** Per resource name, sorted by device ID (as Multus sorts the combined list). */
  byResource: Map<string, Allocated[]>;
  kubelet: { asked: Set<string>; counts: Map<string, number> };
  claims?: PodClaimDevices;
}

function deviceOf(
  wanted: Wanted,
  got: Allocated,
  scope: { own: boolean; ctx: AssignContext },
): AttachmentDevice {
  const c = got.claim;
  const device: AttachmentDevice = {
    resourceName: wanted.resourceName,
    deviceID: got.deviceID,
    from: scope.own ? "pod" : c ? "claim" : "kubelet",
    ...(c
      ? {
          claim: {
            name: c.claim,
            driver: c.driver,
            pool: c.pool,
            device: c.device,
            request: c.request,
          },
        }
      : {}),
  };
  const infoFile = cniDeviceInfoPath(scope.ctx.conf.deviceInfoDir, {
    network: wanted.att.conf.name,
    containerId: scope.ctx.containerId,
    ifName: wanted.att.ifName,
  });
  if (infoFile) device.infoFile = infoFile;
  scope.ctx.log.info(
    {
      network: wanted.att.network,
      ifName: wanted.att.ifName,
      resourceName: device.resourceName,
      deviceID: device.deviceID,
      from: device.from,
      ...(c ? { claim: c.claim, device: c.device } : {}),
    },
    "device chosen",
  );
  return device;
}

/**
 * The devices of the resources the networks need. A pod without claims: kubelet's, for every
 * resource (as before DRA). A pod with claims: its claims' devices, plus kubelet's for the
 * resources a container requests as extended resources (not those DRA maps); both combined and
 * sorted per resource, as Multus does.
 */
async function allocatedDevices(wanted: Wanted[], ctx: AssignContext): Promise<AllocatedDevices> {
  const resources = [...new Set(wanted.map((w) => w.resourceName))];
  const pod = ctx.pod;
  const dra = pod !== undefined && podHasClaims(pod) && resources.length > 0;
  const mapped = new Set(
    pod?.status?.extendedResourceClaimStatus?.requestMappings.map((m) => m.resourceName),
  );
  const requested = pod ? requestedExtendedResources(pod) : new Set<string>();
  const asked = new Set(
    dra ? resources.filter((r) => requested.has(r) && !mapped.has(r)) : resources,
  );
  const [kubelet, claims] = await Promise.all([
    asked.size ? lookupDevices([...asked], ctx) : new Map<string, string[]>(),
    dra ? readClaimDevices(pod, wanted, ctx) : undefined,
  ]);
  const byResource = new Map<string, Allocated[]>();
  for (const r of resources) {
    const all: Allocated[] = [
      ...(kubelet.get(r) ?? []).map((deviceID) => ({ deviceID })),
      ...(claims?.byResource.get(r) ?? []).map((c) => ({ deviceID: c.deviceID, claim: c })),
    ];
    byResource.set(
      r,
      all.sort((a, b) => (a.deviceID < b.deviceID ? -1 : a.deviceID > b.deviceID ? 1 : 0)),
    );
  }
  const counts = new Map([...kubelet].map(([r, ids]) => [r, ids.length]));
  return { byResource, kubelet: { asked, counts }, ...(claims ? { claims } : {}) };
}

async function readClaimDevices(
  pod: Pod,
  wanted: Wanted[],
  ctx: AssignContext,
): Promise<PodClaimDevices | undefined> {
  const { getResourceClaim, listResourceSlices } = ctx.dra ?? {};
  const networks = [
    ...new Set(wanted.map((w) => `${w.att.network} (resourceName ${w.resourceName})`)),
  ].join(", ");
  try {
    if (!getResourceClaim || !listResourceSlices)
      throw new CniError(
        Code.Internal,
        "the Kubernetes access in use cannot read ResourceClaims: a bug in the wiring",
      );
    const reader: DraReader = {
      getResourceClaim: getResourceClaim.bind(ctx.dra),
      listResourceSlices: listResourceSlices.bind(ctx.dra),
    };
    return await podClaimDevices(pod, reader, ctx.log);
  } catch (err) {
    if (!ctx.bestEffort) throw asCniError(err).withContext(`the device of network(s) ${networks}`);
    ctx.log.warn({ err: (err as Error).message }, "the pod's claimed devices could not be learnt");
    return undefined;
  }
}

/**
 * More networks of a resource than devices: 7, or 11 when a device missing from its slice may
 * appear.
 */
function checkEnoughDevices(wanted: Wanted[], allocated: AllocatedDevices): void {
  for (const r of new Set(wanted.map((w) => w.resourceName))) {
    const asking = wanted.filter((w) => w.resourceName === r);
    const have = allocated.byResource.get(r)?.length ?? 0;
    if (asking.length <= have) continue;
    const networks =
      `${asking.length} network(s) ` + `(${asking.map((w) => w.att.network).join(", ")})`;
    const claims = allocated.claims;
    if (!claims)
      throw new CniError(
        Code.InvalidNetworkConfig,
        `resource ${r}: ${networks} need a device each, but kubelet allocated ${have} to the ` +
          `pod; request ${asking.length} of ${r} in the pod's container resources`,
      );
    const fromClaims = claims.byResource.get(r)?.length ?? 0;
    const kubelet = allocated.kubelet.asked.has(r)
      ? `${allocated.kubelet.counts.get(r) ?? 0} from kubelet`
      : "kubelet not asked (no container requests it as an extended resource)";
    const missing = claims.notInSlice
      ? `; ${claims.notInSlice} allocated device(s) are in no ResourceSlice yet`
      : "";
    throw new CniError(
      claims.notInSlice ? Code.TryAgainLater : Code.InvalidNetworkConfig,
      `resource ${r}: ${networks} need a device each, but only ${have} carry ` +
        `${RESOURCE_NAME_ATTRIBUTE}=${r}: ${fromClaims} from ResourceClaim(s) ` +
        `${claims.claims.join(", ") || "(none)"}, ${kubelet}${missing}; allocate ` +
        `${asking.length} devices ` +
        `of ${r} to the pod`,
    );
  }
}

async function lookupDevices(
  resourceNames: string[],
  ctx: AssignContext,
): Promise<Map<string, string[]>> {
  const { lookup } = ctx;
  if (!lookup)
    throw new CniError(
      Code.Internal,
      `no pod-resources lookup given for ${resourceNames.join(", ")}: a bug in the wiring ` +
        `(Deps.podDevices)`,
    );
  try {
    const { namespace, name } = ctx.ref;
    const devices = await lookup({ namespace, name, resourceNames });
    return new Map(resourceNames.map((r) => [r, checkedKubeletIds(r, devices.get(r) ?? [], ctx)]));
  } catch (err) {
    if (!ctx.bestEffort) throw err;
    ctx.log.warn(
      { resourceNames, err: (err as Error).message },
      "the pod's devices could not be learnt from kubelet",
    );
    return new Map();
  }
}

/**
 * kubelet's device IDs pass the one device rule (npwg/device-id.ts): a device plugin publishes
 * them, and each may reach a delegate and a file name. One that fails it fails the ADD (7); a DEL
 * without a record leaves it out, with a warning.
 */
function checkedKubeletIds(resourceName: string, ids: string[], ctx: AssignContext): string[] {
  return ids.filter((id) => {
    const problem = deviceTextProblem(id);
    if (!problem) return true;
    if (!ctx.bestEffort)
      throw new CniError(
        Code.InvalidNetworkConfig,
        `resource ${resourceName}: kubelet's pod-resources API lists device ${showValue(id)} ` +
          `for the pod, which is not a valid device ID: ${problem}; ` +
          `the device plugin serving ${resourceName} publishes it`,
      );
    ctx.log.warn({ resourceName, problem }, "a device ID from kubelet is not valid; left out");
    return false;
  });
}

/** A network that gets no device: no `deviceID` capability value either. */
function withoutDevice(att: Attachment): Attachment {
  if (att.capabilityArgs?.deviceID === undefined) return att;
  const { deviceID: _, ...caps } = att.capabilityArgs;
  const out: Attachment = { ...att };
  if (Object.keys(caps).length) out.capabilityArgs = caps;
  else delete out.capabilityArgs;
  return out;
}

/**
 * The delegate's view: `deviceID` in every plugin, the capability values for those that declare
 * them.
 */
export function withDevice(att: Attachment, device: AttachmentDevice): Attachment {
  const caps: Record<string, unknown> = { ...att.capabilityArgs, deviceID: device.deviceID };
  if (device.infoFile) caps.CNIDeviceInfoFile = device.infoFile;
  return {
    ...att,
    conf: {
      ...att.conf,
      plugins: att.conf.plugins.map((p) => withKeysFold(p, { deviceID: device.deviceID })),
    },
    capabilityArgs: caps,
    device,
  };
}
