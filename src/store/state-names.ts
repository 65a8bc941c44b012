/**
 * File names of Plexus's per-container state (records, the result cache), from the identity they
 * hold: `<a>-<b>-<c>` as libcni names its cache (readable, and what `ls` shows an admin) when that
 * is unambiguous and fits a file name, else `~<sha256 of the identity>`. Identities are made of
 * `[A-Za-z0-9_.-]` (validated names), so:
 * - splitting a readable name at its last dashes gives the parts back only when no part but the
 *   first holds a dash: otherwise (container `abc`, interface `net1-x`) and (container `abc-net1`,
 *   interface `x`) would share a file. Such identities, and those too long for a file name (a
 *   tenant's 200-character network name), get the hashed name;
 * - `~` never occurs in a readable name, so the two forms cannot collide.
 * Each file also holds its identity, checked on read.
 */
import { validateContainerId, validateInterfaceName, validateNetworkName } from "../cni/validate";

/** NAME_MAX of every Linux file system Plexus runs on. */
const MAX_FILE_NAME_BYTES = 255;

export function stateFileName(parts: readonly string[], ext = ""): string {
  const readable = `${parts.join("-")}${ext}`;
  const unambiguous = parts.slice(1).every((p) => !p.includes("-"));
  if (unambiguous && Buffer.byteLength(readable) <= MAX_FILE_NAME_BYTES) return readable;
  // node:crypto only here, when a name needs it: loading it (it brings the stream classes with
  // it) would cost every call (docs/benchmarks.md, "Levers, measured").
  const { createHash } = process.getBuiltinModule("node:crypto");
  return `~${createHash("sha256").update(parts.join("\n")).digest("hex")}${ext}`;
}

/**
 * Why names read back from a state file cannot become part of a path, or undefined when they can:
 * the rules CNI_CONTAINERID, CNI_IFNAME and a network's `name` were checked against when the file
 * was written (cni/validate.ts, the same validators). A file failing them was not written by
 * Plexus for a CNI call.
 */
export function stateNamesProblem(names: {
  containerId: string;
  ifNames: readonly string[];
  networks: readonly string[];
}): string | undefined {
  try {
    validateContainerId(names.containerId);
    for (const ifName of names.ifNames) validateInterfaceName(ifName, "interface name");
    for (const network of names.networks) validateNetworkName(network, "state file");
    return undefined;
  } catch (err) {
    return (err as Error).message;
  }
}
