/**
 * Whether a CNI config is Multus's own (thin's type `multus`, thick's shim `multus-shim`): the
 * installer never takes one as the primary network and moves it aside on a take-over (M11); and
 * whether it wraps Plexus (M18), which no pass of the installer keeps or puts back.
 */
import { basename } from "node:path";
import { decodeJson, isPlainObject } from "../cni/json";
import { getKeyFold } from "../cni/keys";
import { plexusEntry } from "../config/plugin-conf";
import { MAX_CONF_FILE_BYTES } from "../npwg/conf-dir";
import { PLEXUS_CONF_NAME } from "./options";

/** Multus thin's plugin type and Multus thick's shim (its config has the same name and place). */
const MULTUS_TYPES = new Set(["multus", "multus-shim"]);

/** A Multus nested deeper than this is not followed (the JSON is capped at 1 MiB anyway). */
const MAX_NESTING = 16;

/** The Multus plugin entries of a config: itself, or the `multus` plugins of a conflist. */
function multusEntries(value: Record<string, unknown>): Record<string, unknown>[] {
  const type = getKeyFold(value, "type");
  if (typeof type === "string" && MULTUS_TYPES.has(type)) return [value];
  const plugins = getKeyFold(value, "plugins");
  if (!Array.isArray(plugins)) return [];
  return plugins.filter((p): p is Record<string, unknown> => {
    const t = isPlainObject(p) ? getKeyFold(p, "type") : undefined;
    return typeof t === "string" && MULTUS_TYPES.has(t);
  });
}

/** True for a config (single or list) whose plugin is Multus thin or Multus thick's shim. */
export function isMultusConfig(value: Record<string, unknown>): boolean {
  return multusEntries(value).length > 0;
}

/**
 * M18: a Multus config that runs Plexus as its primary network: a delegate is a config of type
 * `plexus` (or a Multus config that wraps one), or `clusterNetwork` names Plexus's file. Multus's
 * entrypoint renders one when Plexus's config is the first other file of the conf dir (after a
 * take-over): both then attach the pod's networks, and its ADDs fail.
 */
export function wrapsPlexus(value: Record<string, unknown>, depth = 0): boolean {
  if (depth > MAX_NESTING) return false;
  return multusEntries(value).some((entry) => {
    const cluster = getKeyFold(entry, "clusterNetwork");
    if (typeof cluster === "string" && basename(cluster) === PLEXUS_CONF_NAME) return true;
    const delegates = getKeyFold(entry, "delegates");
    if (!Array.isArray(delegates)) return false;
    return delegates.some(
      (d) => isPlainObject(d) && (plexusEntry(d) !== undefined || wrapsPlexus(d, depth + 1)),
    );
  });
}

/** What a conf dir file is to the take-over: another config, Multus's, or Multus's over Plexus. */
export type MultusKind = "other" | "multus" | "wraps-plexus";

/** The file's JSON read for {@link MultusKind} (an unreadable file is not Multus's). */
export function multusKindOf(content: string): MultusKind {
  let value: unknown;
  try {
    value = decodeJson(content, { what: "config", maxBytes: MAX_CONF_FILE_BYTES });
  } catch {
    return "other";
  }
  if (!isPlainObject(value) || !isMultusConfig(value)) return "other";
  return wrapsPlexus(value) ? "wraps-plexus" : "multus";
}

/** The file's JSON names Multus's plugin (an unreadable file is not Multus's). */
export function isMultusConfigText(content: string): boolean {
  return multusKindOf(content) !== "other";
}
