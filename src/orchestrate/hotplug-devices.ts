/**
 * Hot-plug's devices (hotplug-diff.ts): the planner picks the pod's devices for the annotation as
 * it is now, in its order, as an ADD would (planning/devices.ts); but the attachments of the
 * running pod that stay keep the devices they hold. So a new attachment whose picked device one
 * that stays holds takes another device the planner picked for that resource, one nobody holds; a
 * new attachment whose own selection asked for that device (`deviceID`) is refused instead. Each
 * new attachment's device-info copy is named after the interface it finally gets.
 */
import { cniDeviceInfoPath } from "../npwg/device-info";
import { withDevice } from "../planning/devices";
import type { Attachment, AttachmentDevice } from "../nodestate/record";

/** Where a new attachment's device-info copy goes (the config's directory, the sandbox). */
export interface DeviceContext {
  deviceInfoDir: string;
  containerId: string;
}

interface Settled {
  attach: Attachment[];
  refused: Array<{ attachment: Attachment; reason: string }>;
}

const keyOf = (d: AttachmentDevice) => `${d.resourceName}\n${d.deviceID}`;

/** `attach` with devices no attachment that stays holds; `staying` and `wanted` as in the diff. */
export function settleDevices(
  attach: readonly Attachment[],
  pod: { staying: readonly Attachment[]; wanted: readonly Attachment[]; ctx: DeviceContext },
): Settled {
  const holder = new Map<string, Attachment>();
  for (const att of pod.staying) if (att.device) holder.set(keyOf(att.device), att);
  // First the new attachments whose picked device is free: they keep it.
  const clash = attach.filter((att) => att.device && holder.has(keyOf(att.device)));
  for (const att of attach)
    if (att.device && !clash.includes(att)) holder.set(keyOf(att.device), att);
  const out: Settled = { attach: [], refused: [] };
  for (const att of attach) {
    if (!att.device) {
      out.attach.push(att);
      continue;
    }
    // A device the selection asked for by its ID is that one or none.
    const spare = () =>
      att.device?.from === "pod" ? undefined : spareDevice(att.device!, pod.wanted, holder);
    const device = clash.includes(att) ? spare() : att.device;
    if (device === undefined) {
      out.refused.push({ attachment: att, reason: heldReason(att, att.device, holder) });
      continue;
    }
    holder.set(keyOf(device), att);
    out.attach.push(rebind(att, device, pod.ctx));
  }
  return out;
}

/** A device the planner picked for `device`'s resource that no attachment holds. */
function spareDevice(
  device: AttachmentDevice,
  wanted: readonly Attachment[],
  holder: ReadonlyMap<string, Attachment>,
): AttachmentDevice | undefined {
  for (const w of wanted) {
    const d = w.device;
    // One a selection asked for is that selection's: its source is not known here.
    if (d?.resourceName !== device.resourceName || d.from === "pod") continue;
    if (!holder.has(keyOf(d))) return d;
  }
  return undefined;
}

function heldReason(
  att: Attachment,
  device: AttachmentDevice,
  holder: ReadonlyMap<string, Attachment>,
): string {
  const other = holder.get(keyOf(device));
  const by = other
    ? `${other.network} on ${other.ifName} holds it`
    : "another attachment holds " + "it";
  const asked = device.from === "pod" ? "its selection asks for" : "it would take";
  return (
    `network ${att.network} (resource ${device.resourceName}): ${asked} device ` +
    `${device.deviceID}, but ${by}, and the pod has no other device of that resource free; ` +
    "a running pod's attachment keeps its device"
  );
}

/** The attachment on its final interface with `device`, its device-info copy named after both. */
function rebind(att: Attachment, device: AttachmentDevice, ctx: DeviceContext): Attachment {
  const { infoFile: _, ...bare } = device;
  const infoFile = cniDeviceInfoPath(ctx.deviceInfoDir, {
    network: att.conf.name,
    containerId: ctx.containerId,
    ifName: att.ifName,
  });
  const { CNIDeviceInfoFile: _file, ...caps } = att.capabilityArgs ?? {};
  return withDevice({ ...att, capabilityArgs: caps }, infoFile ? { ...bare, infoFile } : bare);
}
