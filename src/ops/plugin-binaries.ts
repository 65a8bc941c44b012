/**
 * Whether the plugins of a network can run on this node, looked up as a call looks them up
 * (findInPath over `binDir`, then CNI_PATH: orchestrate/deps.ts), for `doctor` and `explain`: a
 * network whose binary is missing fails every ADD, so neither may call it fine.
 */
import { resolve } from "node:path";
import type { ConfList } from "../cni/conf";
import { asCniError, type CniError } from "../cni/errors";
import { quote } from "../cni/quote";
import { findInPath } from "../invoke/find";
import { isBuiltinPassthru } from "../libcni/conflist";

type Dirs = readonly string[];

/** The directories a call searches: `binDir` first, then CNI_PATH, each made absolute. */
export function pluginDirs(conf: { binDir?: string | undefined }, cniPath: Dirs): string[] {
  const dirs = conf.binDir ? [conf.binDir, ...cniPath] : [...cniPath];
  return dirs.filter((dir) => dir !== "").map((dir) => resolve(dir));
}

/** ADD's error for each plugin of the list whose executable is not in `dirs` (empty: all found). */
export async function missingPluginBinaries(conf: ConfList, dirs: Dirs): Promise<CniError[]> {
  const missing: CniError[] = [];
  for (const plugin of conf.plugins) {
    if (isBuiltinPassthru(plugin)) continue;
    try {
      await findInPath(plugin.type, dirs);
    } catch (err) {
      missing.push(asCniError(err).withContext(`network ${quote(conf.name)}`));
    }
  }
  return missing;
}
