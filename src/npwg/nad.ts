/**
 * NetworkAttachmentDefinition → the delegate config it runs (N3.2, N3.4.1–N3.4.3), in the spec's
 * order: `spec.config`; else a `.conflist` in the CNI config directory whose `name` is the NAD's;
 * else a `.conf`/`.json` with that name; else the attachment fails. Multus takes whichever file
 * sorts first, so a `.conf` can shadow a `.conflist`; Plexus follows the spec.
 */
import { parseConfList, type ConfList } from "../cni/conf";
import { CniError, Code } from "../cni/errors";
import { decodeJson, isPlainObject } from "../cni/json";
import type { Nad } from "./types";

export interface ConfFile {
  path: string;
  content: string;
}

export interface ResolvedNad {
  conf: ConfList;
  /** "spec.config" or the file it came from. */
  source: string;
  /** N3.4.3 and skipped files: for the log. */
  warnings: string[];
}

export const MAX_NAD_CONFIG_BYTES = 1024 * 1024;

export function resolveNadConfig(nad: Nad, files: readonly ConfFile[], opts: { defaultVersion?: string } = {}): ResolvedNad {
  const ref = `${nad.metadata.namespace}/${nad.metadata.name}`;
  const what = `NetworkAttachmentDefinition ${ref}`;
  const warnings: string[] = [];
  const config = nad.spec?.config;
  if (typeof config === "string" && config.trim() !== "") {
    const value = decodeJson(config, { what: `${what} spec.config`, maxBytes: MAX_NAD_CONFIG_BYTES, code: Code.InvalidNetworkConfig });
    const conf = parse(value, `${what} spec.config`, nad, opts, warnings);
    return { conf, source: "spec.config", warnings };
  }
  if (config !== undefined && typeof config !== "string") {
    throw new CniError(Code.InvalidNetworkConfig, `${what}: spec.config must be a string holding JSON, got ${Array.isArray(config) ? "a list" : typeof config}`);
  }
  // N3.2: no spec.config: the network is known by the NAD's name, from the config directory.
  const file = pickConfFileByName(files, nad.metadata.name, warnings);
  if (file) return { conf: parse(file.value, `${what} (from ${file.path})`, nad, opts, warnings), source: file.path, warnings };
  throw new CniError(
    Code.InvalidNetworkConfig,
    `${what} has no spec.config and no .conflist, .conf or .json file in the CNI config directory has "name": ${JSON.stringify(nad.metadata.name)}`,
  );
}

/**
 * N3.4.1: the `.conflist` whose JSON `name` matches, else the `.conf`/`.json`; each group in file
 * name order. Unparsable files are skipped with a warning.
 */
export function pickConfFileByName(files: readonly ConfFile[], name: string, warnings: string[]): { path: string; value: Record<string, unknown> } | undefined {
  const byExt = (ext: RegExp) => files.filter((f) => ext.test(f.path)).sort((a, b) => a.path.localeCompare(b.path));
  for (const group of [byExt(/\.conflist$/), byExt(/\.(conf|json)$/)]) {
    for (const file of group) {
      let value: unknown;
      try {
        value = JSON.parse(file.content);
      } catch {
        warnings.push(`${file.path} is not valid JSON; skipped`);
        continue;
      }
      if (isPlainObject(value) && value.name === name) return { path: file.path, value };
    }
  }
  return undefined;
}

function parse(value: unknown, what: string, nad: Nad, opts: { defaultVersion?: string }, warnings: string[]): ConfList {
  if (!isPlainObject(value)) {
    const kind = value === null ? "null" : Array.isArray(value) ? "a list" : typeof value;
    throw new CniError(Code.InvalidNetworkConfig, `${what}: expected a CNI config object (a .conf or a .conflist), got ${kind}`);
  }
  // N3.4.3: a name other than the NAD's is kept (delegates' state is keyed by it) but worth a warning.
  if (typeof value.name === "string" && value.name !== nad.metadata.name) {
    warnings.push(`${what}: the config's name ${JSON.stringify(value.name)} differs from the NAD's name ${JSON.stringify(nad.metadata.name)}`);
  }
  // N3.4.2: a config without a name gets the NAD's.
  return parseConfList(value, { what, defaultName: nad.metadata.name, ...(opts.defaultVersion ? { defaultVersion: opts.defaultVersion } : {}) });
}
