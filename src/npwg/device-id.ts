/**
 * The one rule for a device ID (M10) wherever it comes from (a pod's selection, kubelet's
 * allocation, a DRA attribute, Multus's cache) and for the DRA attribute values Plexus reads. A
 * device ID reaches a delegate as `deviceID` (sriov-cni and host-device act on that device as root)
 * and a file name (the device plugin's device-info file), so it must name one thing and nothing
 * else: visible ASCII only (no space, control, bidi or look-alike characters), bounded, no path
 * separator, no `..`, not `.`, and no leading `-` (a delegate that runs a tool must not read it as
 * an option). A resource name (a DRA `resourceName` attribute, a NAD's `resourceName` in a file
 * name) follows the same rule with exactly one `/`, between its domain and its name.
 */
import { CniError, Code } from "../cni/errors";
import { showValue } from "../cni/json";

/** Device plugins use PCI addresses and short names; DRA caps a string attribute at 64. */
export const MAX_DEVICE_ID_LENGTH = 128;
/** An extended resource name: a DNS subdomain (253), `/`, a name (63). */
export const MAX_RESOURCE_NAME_LENGTH = 317;

export type DeviceTextKind = "deviceID" | "resourceName";
/** What is wrong, in words for a message; undefined when nothing is. */
type Problem = string | undefined;

const LIMIT: Record<DeviceTextKind, number> = {
  deviceID: MAX_DEVICE_ID_LENGTH,
  resourceName: MAX_RESOURCE_NAME_LENGTH,
};

/** The first character outside visible ASCII, described for a message; undefined when none. */
function invisibleCharacter(value: string): string | undefined {
  for (let i = 0; i < value.length; i++) {
    const code = value.charCodeAt(i);
    if (code < 0x21 || code > 0x7e) {
      const hex = code.toString(16).toUpperCase().padStart(4, "0");
      return `U+${hex} at position ${i + 1}`;
    }
  }
  return undefined;
}

const ONE_NAME = "a device ID is one name, never a path";

function slashProblem(value: string, kind: DeviceTextKind): Problem {
  const slashes = value.split("/").length - 1;
  if (kind === "deviceID") return slashes ? `has a '/': ${ONE_NAME}` : undefined;
  if (slashes !== 1 || value.startsWith("/") || value.endsWith("/"))
    return "must be <domain>/<name>, with exactly one '/' between them";
  return undefined;
}

/** Paths and options: what no single name may be or hold. */
function pathProblem(value: string): Problem {
  if (value.includes("\\")) return `has a '\\': ${ONE_NAME}`;
  if (value === ".") return `is '.': ${ONE_NAME}`;
  if (value.includes("..")) return `has '..': ${ONE_NAME}`;
  if (value.startsWith("-")) return "starts with '-', which a tool would read as an option";
  return undefined;
}

/**
 * What is wrong with a device ID (or, with kind "resourceName", a resource name); undefined when
 * it may reach a delegate and a file name. The one check every surface calls.
 */
export function deviceTextProblem(value: unknown, kind: DeviceTextKind = "deviceID"): Problem {
  if (typeof value !== "string") return "must be a string";
  if (value === "") return "is empty";
  const limit = LIMIT[kind];
  if (value.length > limit) return `is ${value.length} characters long, more than ${limit}`;
  const invisible = invisibleCharacter(value);
  if (invisible) return `has ${invisible}: only visible ASCII characters are allowed`;
  return pathProblem(value) ?? slashProblem(value, kind);
}

export interface DeviceTextSource {
  /** Where the value came from, for the message ("network x: key \"deviceID\""). */
  what: string;
  kind?: DeviceTextKind;
}

/** The value, or a CniError (7) naming where it came from, the value and what is wrong with it. */
export function validateDeviceText(value: unknown, source: DeviceTextSource): string {
  const kind = source.kind ?? "deviceID";
  const problem = deviceTextProblem(value, kind);
  if (problem === undefined) return value as string;
  const noun = kind === "deviceID" ? "device ID" : "resource name";
  const msg = `${source.what} ${showValue(value)} is not a valid ${noun}: ${problem}`;
  throw new CniError(Code.InvalidNetworkConfig, msg);
}
