/**
 * Device information files (NPWG device-info specification, M10): a device plugin writes
 * `<dir>/dp/<resourceName with / as ->-<deviceID>-device.json`; Plexus copies it to
 * `<dir>/cni/<network>-<containerID>_<ifName>` before the delegate runs (the delegate, told the
 * path as `runtimeConfig.CNIDeviceInfoFile`, may rewrite it), reads that copy back after ADD for
 * the attachment's network-status `device-info`, and removes it on DEL.
 *
 * Paths are built only from names checked here (no `/`, no `..`; device IDs and resource names by
 * the one rule of device-id.ts); reads are bounded. A missing or malformed file is never an error:
 * the ADD goes on without `device-info`, with a warning.
 */
import { mkdirSync, unlinkSync } from "node:fs";
import { dirname, join } from "node:path";
import { isPlainObject } from "../cni/json";
import { describeJsonSyntaxError } from "../cni/json-syntax";
import { writeFileAtomicSync } from "../store/atomic-file";
import { readSharedFile } from "../store/shared-file";
import { deviceTextProblem } from "./device-id";

/** A device-info file is a few hundred bytes; anything larger is not one. */
export const MAX_DEVICE_INFO_BYTES = 64 * 1024;

/**
 * A file-name component: letters, digits, `.`, `_`, `-`, `:` (PCI addresses), not starting with
 * `.`.
 */
const SAFE = /^[A-Za-z0-9_:-][A-Za-z0-9_.:-]*$/;
/** Linux's NAME_MAX: a longer file name cannot exist (the names here are ASCII: bytes = length). */
const MAX_FILE_NAME = 255;

const safe = (text: string) => SAFE.test(text) && text.length <= 253;

/**
 * The device plugin's file, or undefined when a name cannot be part of a path: the resource name
 * and the device ID pass the one device rule (device-id.ts), so the file stays in `<dir>/dp`.
 */
export function dpDeviceInfoPath(
  dir: string,
  resourceName: string,
  deviceID: string,
): string | undefined {
  if (deviceTextProblem(resourceName, "resourceName")) return undefined;
  if (deviceTextProblem(deviceID)) return undefined;
  const file = `${resourceName.replace("/", "-")}-${deviceID}-device.json`;
  return file.length <= MAX_FILE_NAME ? join(dir, "dp", file) : undefined;
}

export interface CniDeviceInfoName {
  /** The delegate config's network name (as Multus names the file). */
  network: string;
  containerId: string;
  ifName: string;
}

/** Plexus's copy for one attachment, or undefined when a name cannot be part of a path. */
export function cniDeviceInfoPath(dir: string, name: CniDeviceInfoName): string | undefined {
  if (!safe(name.network) || !safe(name.containerId) || !safe(name.ifName)) return undefined;
  const file = `${name.network}-${name.containerId}_${name.ifName}`;
  return file.length <= MAX_FILE_NAME ? join(dir, "cni", file) : undefined;
}

export type DeviceInfoRead =
  | { state: "missing" }
  | { state: "malformed"; reason: string }
  | { state: "found"; info: Record<string, unknown>; text: string };

/**
 * Reads and checks one device-info file: a JSON object, at most MAX_DEVICE_INFO_BYTES. The device
 * plugin's directory is shared: a symlink there is not followed (a root-only file's contents would
 * end up in the pod's network-status), a FIFO does not block the ADD (B72, B73).
 */
export function readDeviceInfo(path: string): DeviceInfoRead {
  const file = readSharedFile(path, { maxBytes: MAX_DEVICE_INFO_BYTES });
  if (file.state === "missing") return file;
  if (file.state === "refused") return { state: "malformed", reason: `not read: ${file.reason}` };
  const text = file.data.toString("utf8");
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch {
    return { state: "malformed", reason: `not valid JSON ${describeJsonSyntaxError(text)}` };
  }
  if (!isPlainObject(v)) return { state: "malformed", reason: "not a JSON object" };
  return { state: "found", info: v, text };
}

/**
 * Writes Plexus's copy (the directory made if needed) by temp file and rename: whatever was at the
 * path, a symlink planted there included, is replaced, never written through (B73). The caller
 * decides what a failure means.
 */
export function writeCniDeviceInfo(path: string, text: string): void {
  mkdirSync(dirname(path), { recursive: true, mode: 0o755 });
  writeFileAtomicSync(path, text, 0o644);
}

/** Removes Plexus's copy; a file already gone is fine. */
export function removeCniDeviceInfo(path: string): void {
  try {
    unlinkSync(path);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "ENOENT") throw err;
  }
}
