/**
 * Device-plugin networks (M10): an attachment whose NAD carries `k8s.v1.cni.cncf.io/resourceName`
 * gets one of the devices kubelet allocated to the pod for that resource (pod-resources API),
 * handed to its delegate as `deviceID` (top level of every plugin, and `runtimeConfig.deviceID`
 * where declared) with `runtimeConfig.CNIDeviceInfoFile`; the NPWG device-info file is copied
 * before the delegate runs and read back into network-status after.
 *
 * Several attachments of one resource take the pod's devices in order (sorted, across all its
 * containers, as Multus does), one each. A `deviceID` in the pod's own selection wins and takes
 * none of them. The record keeps the device, so DEL asks kubelet nothing.
 */
import type { PodRef } from "../cni/args";
import { CniError, Code } from "../cni/errors";
import type { PlexusConf } from "../config/plugin-conf";
import type { Logger } from "../log/logger";
import {
  cniDeviceInfoPath,
  dpDeviceInfoPath,
  readDeviceInfo,
  removeCniDeviceInfo,
  writeCniDeviceInfo,
} from "../npwg/device-info";
import { RESOURCE_NAME_ANNOTATION } from "../npwg/types";
import type { Attachment, AttachmentDevice } from "./record";

export type { AttachmentDevice };

/** The pod's device IDs per resource name (kubelet's pod-resources API, or a fake in tests). */
export type PodDevicesLookup = (q: {
  namespace: string;
  name: string;
  resourceNames: string[];
}) => Promise<Map<string, string[]>>;

export function resourceNameOf(
  nad: { metadata?: { annotations?: Record<string, string> | undefined } } | undefined,
): string | undefined {
  const v = nad?.metadata?.annotations?.[RESOURCE_NAME_ANNOTATION]?.trim();
  return v ? v : undefined;
}

export interface AssignContext {
  ref: PodRef;
  containerId: string;
  conf: Pick<PlexusConf, "deviceInfoDir">;
  /** Wired by the caller (daemon/pod-devices-lookup.ts: the daemon, else kubelet's socket). */
  lookup?: PodDevicesLookup | undefined;
  log: Logger;
  /**
   * DEL without a record: a device that cannot be learnt (kubelet down, the pod's allocation gone)
   * leaves the attachment without one, with a warning, instead of failing the plan.
   */
  bestEffort?: boolean | undefined;
}

/** The attachments with their devices; `resourceNames[i]` is attachment i's NAD annotation. */
export async function assignDevices(
  attachments: Attachment[],
  resourceNames: ReadonlyArray<string | undefined>,
  ctx: AssignContext,
): Promise<Attachment[]> {
  const wanted = attachments
    .map((att, i) => ({ att, i, resourceName: resourceNames[i] }))
    .filter((w): w is { att: Attachment; i: number; resourceName: string } => !!w.resourceName);
  if (wanted.length === 0) return attachments;
  const fromKubelet = wanted.filter((w) => !w.att.selection?.deviceID);
  const resources = [...new Set(fromKubelet.map((w) => w.resourceName))];
  const allocated = resources.length ? await lookupDevices(resources, ctx) : new Map<string, string[]>();
  for (const r of ctx.bestEffort ? [] : resources) {
    const asking = fromKubelet.filter((w) => w.resourceName === r);
    const have = allocated.get(r) ?? [];
    if (asking.length > have.length) {
      throw new CniError(
        Code.InvalidNetworkConfig,
        `resource ${r}: ${asking.length} network(s) (${asking.map((w) => w.att.network).join(", ")}) need a device each, but kubelet allocated ${have.length} to the pod; request ${asking.length} of ${r} in the pod's container resources`,
      );
    }
  }
  const next = new Map<string, number>();
  const out = [...attachments];
  for (const w of wanted) {
    const own = w.att.selection?.deviceID;
    const k = next.get(w.resourceName) ?? 0;
    if (!own) next.set(w.resourceName, k + 1);
    const deviceID = own ?? allocated.get(w.resourceName)?.[k];
    if (deviceID === undefined) {
      ctx.log.warn(
        { network: w.att.network, resourceName: w.resourceName },
        "no device known for this network; its delegate gets no deviceID",
      );
      continue;
    }
    const device: AttachmentDevice = { resourceName: w.resourceName, deviceID, from: own ? "pod" : "kubelet" };
    const infoFile = cniDeviceInfoPath(ctx.conf.deviceInfoDir, {
      network: w.att.conf.name,
      containerId: ctx.containerId,
      ifName: w.att.ifName,
    });
    if (infoFile) device.infoFile = infoFile;
    ctx.log.info(
      {
        network: w.att.network,
        ifName: w.att.ifName,
        resourceName: device.resourceName,
        deviceID: device.deviceID,
        from: device.from,
      },
      "device chosen",
    );
    out[w.i] = withDevice(w.att, device);
  }
  return out;
}

async function lookupDevices(resourceNames: string[], ctx: AssignContext): Promise<Map<string, string[]>> {
  const { lookup } = ctx;
  if (!lookup)
    throw new CniError(
      Code.Internal,
      `no pod-resources lookup given for ${resourceNames.join(", ")}: a bug in the wiring (Deps.podDevices)`,
    );
  try {
    return await lookup({ namespace: ctx.ref.namespace, name: ctx.ref.name, resourceNames });
  } catch (err) {
    if (!ctx.bestEffort) throw err;
    ctx.log.warn({ resourceNames, err: (err as Error).message }, "the pod's devices could not be learnt from kubelet");
    return new Map();
  }
}

/** The delegate's view: `deviceID` in every plugin, the capability values for those that declare them. */
function withDevice(att: Attachment, device: AttachmentDevice): Attachment {
  const caps: Record<string, unknown> = { ...att.capabilityArgs, deviceID: device.deviceID };
  if (device.infoFile) caps.CNIDeviceInfoFile = device.infoFile;
  return {
    ...att,
    conf: { ...att.conf, plugins: att.conf.plugins.map((p) => ({ ...p, deviceID: device.deviceID })) },
    capabilityArgs: caps,
    device,
  };
}

/** Before the delegate's ADD: the device plugin's file, if any, becomes this attachment's copy. */
export function prepareDeviceInfo(att: Attachment, conf: Pick<PlexusConf, "deviceInfoDir">, log: Logger): void {
  const d = att.device;
  if (!d?.infoFile) return;
  const dp = dpDeviceInfoPath(conf.deviceInfoDir, d.resourceName, d.deviceID);
  const read = dp ? readDeviceInfo(dp) : ({ state: "missing" } as const);
  if (read.state === "missing")
    return void log.debug({ network: att.network, path: dp }, "no device-info file from the device plugin");
  if (read.state === "malformed")
    return void log.warn(
      { network: att.network, path: dp, reason: read.reason },
      "device plugin's device-info file ignored: malformed",
    );
  try {
    writeCniDeviceInfo(d.infoFile, read.text);
  } catch (err) {
    log.warn(
      { network: att.network, path: d.infoFile, err: (err as Error).message },
      "cannot write the device-info file for the delegate; the ADD goes on without it",
    );
  }
}

/** After the delegate's ADD: the attachment's device-info (as the delegate left it), for network-status. */
export function deviceInfoAfterAdd(att: Attachment, log: Logger): Record<string, unknown> | undefined {
  if (!att.device?.infoFile) return undefined;
  const read = readDeviceInfo(att.device.infoFile);
  if (read.state === "found") return read.info;
  if (read.state === "malformed")
    log.warn(
      { network: att.network, path: att.device.infoFile, reason: read.reason },
      "device-info file ignored: malformed; network-status has no device-info",
    );
  return undefined;
}

/** On DEL (and rollback): this attachment's copy, from names (never from a path the record holds). */
export function removeDeviceInfo(
  att: Attachment,
  req: { containerId: string },
  conf: Pick<PlexusConf, "deviceInfoDir">,
  log: Logger,
): void {
  if (!att.device) return;
  const path = cniDeviceInfoPath(conf.deviceInfoDir, {
    network: att.conf.name,
    containerId: req.containerId,
    ifName: att.ifName,
  });
  if (!path) return;
  try {
    removeCniDeviceInfo(path);
  } catch (err) {
    log.warn({ path, err: (err as Error).message }, "cannot remove the device-info file");
  }
}
