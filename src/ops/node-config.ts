/**
 * The Plexus config a node's runtime would pass to Plexus, for the person-facing commands: the
 * file named with --config, else the config file the runtime picks from the CNI config directory
 * (libcni order: the first usable `.conf`/`.conflist`/`.json` by name). A conflist's Plexus plugin
 * gets the list's `name` and `cniVersion`, as libcni injects them.
 */
import { readFileSync } from "node:fs";
import { CniError, Code } from "../cni/errors";
import { decodeJson, isPlainObject } from "../cni/json";
import {
  DEFAULT_CONF_DIR,
  parsePlexusConf,
  plexusEntry,
  type PlexusConf,
} from "../config/plugin-conf";
import { readConfDir } from "../install/primary";
import { firstConfigFile } from "../npwg/conf-dir";

export interface RuntimeChoice {
  /** The file the runtime uses (undefined: the directory has no usable config). */
  path?: string;
  value?: Record<string, unknown>;
  /** Whether that file runs Plexus. */
  isPlexus: boolean;
  warnings: string[];
}

export interface NodeConfig {
  path: string;
  conf: PlexusConf;
}

/** What the runtime picks from `confDir` (libcni order). */
export function runtimeConfig(confDir: string): RuntimeChoice {
  const { files, warnings } = readConfDir(confDir);
  const picked = firstConfigFile(files);
  warnings.push(...picked.warnings);
  if (!picked.picked) return { isPlexus: false, warnings };
  return {
    path: picked.picked.path,
    value: picked.picked.value,
    isPlexus: plexusEntry(picked.picked.value) !== undefined,
    warnings,
  };
}

/** Reads and parses the Plexus config (the same parser as a CNI call's stdin). */
export function loadNodeConfig(source: {
  config?: string | undefined;
  confDir?: string | undefined;
}): NodeConfig {
  let path = source.config;
  let value: unknown;
  if (path) {
    let text: string;
    try {
      text = readFileSync(path, "utf8");
    } catch (err) {
      throw new CniError(
        Code.InvalidNetworkConfig,
        `config ${path} cannot be read: ${(err as NodeJS.ErrnoException).code ?? String(err)}`,
        undefined,
        { cause: err },
      );
    }
    value = decodeJson(text, { what: `config ${path}`, exactNumbers: true }); // B92, as a CNI call
  } else {
    const dir = source.confDir ?? DEFAULT_CONF_DIR;
    const choice = runtimeConfig(dir);
    if (!choice.path || !choice.value) {
      throw new CniError(
        Code.InvalidNetworkConfig,
        `no CNI config in ${dir}: the runtime has no network to run; pass the Plexus config ` +
          `with --config FILE`,
      );
    }
    if (!choice.isPlexus) {
      throw new CniError(
        Code.InvalidNetworkConfig,
        `the runtime's config ${choice.path} does not run Plexus (no plugin of type "plexus"); ` +
          `pass the Plexus config with --config FILE`,
      );
    }
    path = choice.path;
    value = choice.value;
  }
  if (!isPlainObject(value))
    throw new CniError(Code.InvalidNetworkConfig, `config ${path} is not a JSON object`);
  const entry = plexusEntry(value) ?? value;
  return { path, conf: parsePlexusConf(entry) };
}
