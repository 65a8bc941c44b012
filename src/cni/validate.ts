/**
 * Validators for the identifiers CNI passes around, after libcni's `pkg/utils/utils.go`.
 * Each throws a CniError with the code the caller names (4 for env, 7 for config).
 */
import { showValue as show } from "./json";
import { CniError, Code } from "./errors";

const CONTAINER_ID = /^[a-zA-Z0-9][a-zA-Z0-9_.-]*$/;
/**
 * Container IDs become file names under cniDir; 64 hex is the norm, leave room, stay far below
 * NAME_MAX.
 */
export const MAX_CONTAINER_ID_LENGTH = 200;
/** IFNAMSIZ is 16 including the NUL. */
const MAX_IFNAME_LENGTH = 15;
const NETWORK_NAME = /^[a-zA-Z0-9][a-zA-Z0-9_.-]*$/;
/**
 * Network names end up in file names, logs and events: bounded as Kubernetes bounds an object name.
 */
const MAX_NETWORK_NAME_LENGTH = 253;

/** C2.1: non-empty, starts alphanumeric, then alphanumerics, `_`, `.`, `-`. */
export function validateContainerId(id: string, code: Code = Code.InvalidEnv): string {
  if (id === "")
    throw new CniError(
      code,
      "CNI_CONTAINERID is empty; expected an ID such as the sandbox's 64-hex-digit ID",
    );
  if (id.length > MAX_CONTAINER_ID_LENGTH || !CONTAINER_ID.test(id)) {
    throw new CniError(
      code,
      `CNI_CONTAINERID ${show(id)} is invalid: it must start with a letter or digit, continue ` +
        `with letters, digits, '_', '.' or '-', and be at most ` +
        `${MAX_CONTAINER_ID_LENGTH} characters`,
    );
  }
  return id;
}

/** Why an interface name is invalid, or undefined when it is valid (C2.1, N4.1.2.1.5, B3). */
export function interfaceNameProblem(name: string): string | undefined {
  if (name === "") return "it is empty";
  if (Buffer.byteLength(name) > MAX_IFNAME_LENGTH)
    return `it is longer than ${MAX_IFNAME_LENGTH} bytes`;
  if (name === "." || name === "..") return "'.' and '..' are not interface names";
  if (/[/:\s]/.test(name)) return "it contains '/', ':' or whitespace";
  // Linux takes more, but a name from a tenant's annotation ends up in records, logs and `ip link`:
  // NUL, control and bidi characters, and look-alikes (a Cyrillic "е" in "еth0") are refused.
  if (!/^[A-Za-z0-9_.-]+$/.test(name))
    return "it may contain only ASCII letters, digits, '_', '.' and '-'";
  return undefined;
}

export function validateInterfaceName(
  name: string,
  what = "CNI_IFNAME",
  code: Code = Code.InvalidEnv,
): string {
  const problem = interfaceNameProblem(name);
  if (problem) throw new CniError(code, `${what} ${show(name)} is invalid: ${problem}`);
  return name;
}

/** libcni ValidateNetworkName (B14). */
export function validateNetworkName(name: unknown, where: string): string {
  if (typeof name !== "string" || name === "") {
    throw new CniError(
      Code.InvalidNetworkConfig,
      `${where}: "name" is missing; every network config needs a name`,
    );
  }
  if (name.length > MAX_NETWORK_NAME_LENGTH) {
    throw new CniError(
      Code.InvalidNetworkConfig,
      `${where}: network name ${show(name)} is longer than ${MAX_NETWORK_NAME_LENGTH} characters ` +
        `(a DNS-1123 subdomain's limit); use a shorter "name"`,
    );
  }
  if (!NETWORK_NAME.test(name)) {
    throw new CniError(
      Code.InvalidNetworkConfig,
      `${where}: network name ${show(name)} is invalid: it must start with a letter or digit and ` +
        `contain only letters, digits, '_', '.' and '-'`,
    );
  }
  return name;
}

/**
 * C4.2, B30: a plugin `type` is a bare file name. Checked before any lookup so that
 * `../bin/sh` or `/bin/sh` never reaches the file system.
 */
export function validatePluginType(type: unknown, where: string): string {
  if (typeof type !== "string" || type === "") {
    throw new CniError(Code.InvalidNetworkConfig, `${where}: plugin "type" is missing or empty`);
  }
  if (
    type.includes("/") ||
    type.includes("\\") ||
    type.includes("..") ||
    type.includes("\0") ||
    type.length > 255 ||
    /\s/.test(type)
  ) {
    throw new CniError(
      Code.InvalidNetworkConfig,
      `${where}: plugin type ${show(type)} is invalid: it must be a bare file name found in ` +
        `CNI_PATH (no '/', '\\', '..', NUL or whitespace)`,
    );
  }
  return type;
}
