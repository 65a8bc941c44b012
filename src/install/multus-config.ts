/**
 * Whether a CNI config is Multus's own (thin's type `multus`, thick's shim `multus-shim`): the
 * installer never takes one as the primary network and moves it aside on a take-over (M11).
 */
import { decodeJson, isPlainObject } from "../cni/json";
import { getKeyFold } from "../cni/keys";
import { MAX_CONF_FILE_BYTES } from "../npwg/conf-dir";

/** Multus thin's plugin type and Multus thick's shim (its config has the same name and place). */
const MULTUS_TYPES = new Set(["multus", "multus-shim"]);

/** True for a config (single or list) whose plugin is Multus thin or Multus thick's shim. */
export function isMultusConfig(value: Record<string, unknown>): boolean {
  const type = getKeyFold(value, "type");
  if (typeof type === "string" && MULTUS_TYPES.has(type)) return true;
  const plugins = getKeyFold(value, "plugins");
  return (
    Array.isArray(plugins) &&
    plugins.some((p) => {
      const t = isPlainObject(p) ? getKeyFold(p, "type") : undefined;
      return typeof t === "string" && MULTUS_TYPES.has(t);
    })
  );
}

/** The file's JSON names Multus's plugin (an unreadable file is not Multus's). */
export function isMultusConfigText(content: string): boolean {
  try {
    const value = decodeJson(content, { what: "config", maxBytes: MAX_CONF_FILE_BYTES });
    return isPlainObject(value) && isMultusConfig(value);
  } catch {
    return false;
  }
}
