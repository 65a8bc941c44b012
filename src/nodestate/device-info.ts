/**
 * An attachment's copy of the NPWG device-info file (M10): made from the device plugin's before
 * the delegate's ADD, read back into network-status after, removed with the attachment. The copy
 * is the node's state for that attachment, named from the record's names.
 */
import type { PlexusConf } from "../config/plugin-conf";
import type { Logger } from "../log/logger";
import {
  cniDeviceInfoPath,
  dpDeviceInfoPath,
  readDeviceInfo,
  removeCniDeviceInfo,
  writeCniDeviceInfo,
} from "../npwg/device-info";
import type { Attachment } from "./record";

/** Before the delegate's ADD: the device plugin's file, if any, becomes this attachment's copy. */
export function prepareDeviceInfo(
  att: Attachment,
  conf: Pick<PlexusConf, "deviceInfoDir">,
  log: Logger,
): void {
  const d = att.device;
  if (!d?.infoFile) return;
  const dp = dpDeviceInfoPath(conf.deviceInfoDir, d.resourceName, d.deviceID);
  const read = dp ? readDeviceInfo(dp) : ({ state: "missing" } as const);
  if (read.state === "missing")
    return void log.debug(
      { network: att.network, path: dp },
      "no device-info file from the device plugin",
    );
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

/**
 * After the delegate's ADD: the attachment's device-info (as the delegate left it), for
 * network-status.
 */
export function deviceInfoAfterAdd(
  att: Attachment,
  log: Logger,
): Record<string, unknown> | undefined {
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

/**
 * On DEL (and rollback): this attachment's copy, from names (never from a path the record holds).
 */
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
