/**
 * The primary (cluster default) network's config (M11): the alphabetically first `.conf`,
 * `.conflist` or `.json` in the CNI conf dir that is not Plexus's own, as libcni orders them. A
 * config that is empty, unparsable, a conflist without plugins, or not a valid CNI config is
 * refused with a warning, and so are Plexus's own config, any config of type `plexus` (a renamed
 * copy would make Plexus delegate to itself), Multus's configs (types `multus` and `multus-shim`:
 * Plexus replaces Multus, never wraps it; see take-over.ts) and hidden files, where atomic writers
 * (Plexus included) keep their temp files (B49).
 */
import { type Dirent, lstatSync, readdirSync } from "node:fs";
import { readSharedFile } from "../store/shared-file";
import { basename, join } from "node:path";
import { parseConfList, type ConfList } from "../cni/conf";
import { isPlainObject } from "../cni/json";
import { getKeyFold } from "../cni/keys";
import {
  firstConfigFile,
  isConfigFileName,
  MAX_CONF_FILE_BYTES,
  type ConfFile,
} from "../npwg/conf-dir";
import { conflistUnknownKeys, type UnknownKey } from "../config/unknown-keys";
import { PLEXUS_CONF_NAME } from "./options";
import { isMultusConfig } from "./multus-config";

export interface PrimaryConfig {
  path: string;
  /** The file's text, to notice when it changes. */
  content: string;
  conf: ConfList;
  /**
   * Top-level keys of a conflist that libcni does not read (M1: named in the log, never silent).
   */
  unknownKeys: UnknownKey[];
}

export interface PrimaryChoice {
  primary?: PrimaryConfig;
  /** Refused files, for the log. */
  warnings: string[];
  /**
   * Multus's configs passed over, as expected during a migration (take-over.ts moves them aside):
   * for the log at info level, not as warnings.
   */
  notes: string[];
}

export interface ChoosePrimaryOptions {
  /** --primary-config-file-name: only this file is considered. */
  fileName?: string | undefined;
}

function isPlexusType(value: Record<string, unknown>): boolean {
  if (getKeyFold(value, "type") === "plexus") return true;
  const plugins = getKeyFold(value, "plugins");
  return (
    Array.isArray(plugins) &&
    plugins.some((p) => isPlainObject(p) && getKeyFold(p, "type") === "plexus")
  );
}

/** Pure: picks the primary config from the conf dir's files. */
export function choosePrimary(
  files: readonly ConfFile[],
  opts: ChoosePrimaryOptions = {},
): PrimaryChoice {
  const warnings: string[] = [];
  const notes: string[] = [];
  const refused = new Set<string>();
  const candidates = files.filter((f) => {
    const name = basename(f.path);
    if (name === PLEXUS_CONF_NAME) return false;
    if (opts.fileName !== undefined && name !== opts.fileName) return false;
    if (name.startsWith(".")) {
      warnings.push(
        `${f.path} is a hidden file (an atomic writer's temp file, perhaps Plexus's own); not a ` +
          `primary config`,
      );
      return false;
    }
    return true;
  });
  for (;;) {
    const picked = firstConfigFile(candidates, { exclude: (p) => refused.has(p) });
    warnings.push(...picked.warnings.filter((w) => !warnings.includes(w)));
    if (!picked.picked) return { warnings, notes };
    const { path, value } = picked.picked;
    refused.add(path);
    if (isPlexusType(value)) {
      warnings.push(`${path} is a Plexus config (type "plexus"); not a primary config`);
      continue;
    }
    if (isMultusConfig(value)) {
      const why = "Plexus replaces Multus, never wraps it: not a primary config";
      notes.push(`${path} is Multus's config; ${why}`);
      continue;
    }
    try {
      const conf = parseConfList(value, { what: path });
      const content = candidates.find((f) => f.path === path)!.content;
      const unknownKeys = conflistUnknownKeys(value);
      return { primary: { path, content, conf, unknownKeys }, warnings, notes };
    } catch (err) {
      warnings.push(`${(err as Error).message}; refused as the primary config`);
    }
  }
}

/** A config file of the conf dir that the shared reader refused, and why. */
interface RefusedConfFile {
  path: string;
  reason: string;
}

export interface ConfDirRead {
  files: ConfFile[];
  /**
   * Files libcni's `ConfFiles` lists (a `.conf`, `.conflist` or `.json` name that is not a
   * directory) but that cannot be read as a config: too large, a FIFO, a socket, a device, a
   * symlink to a directory or to nothing. The runtime still loads them, in name order (B90).
   */
  refused: RefusedConfFile[];
  /** The refused files and the ones that cannot be read, for the log. */
  warnings: string[];
}

/** The conf dir's config files (by name) and the ones it cannot read; a missing dir has none. */
export function readConfDir(dir: string): ConfDirRead {
  const read: ConfDirRead = { files: [], refused: [], warnings: [] };
  let entries: Dirent[];
  try {
    entries = readdirSync(dir, { withFileTypes: true });
  } catch {
    return read;
  }
  for (const entry of entries) {
    // libcni skips directories (not symlinks to them: those it lists, and fails to read).
    if (entry.isDirectory() || !isConfigFileName(entry.name)) continue;
    const path = join(dir, entry.name);
    // libcni follows symlinks in the conf dir; the target is still checked (shared-file.ts).
    const file = readSharedFile(path, { maxBytes: MAX_CONF_FILE_BYTES, followSymlink: true });
    if (file.state === "found") read.files.push({ path, content: file.data.toString("utf8") });
    else if (file.state === "refused") refuse(read, path, file.reason);
    // Missing: vanished between readdir and read (the next pass sees the directory as it is
    // then), or a symlink to nothing, which libcni lists all the same.
    else if (isSymlink(path)) refuse(read, path, "it is a symbolic link to nothing");
  }
  return read;
}

function refuse(read: ConfDirRead, path: string, reason: string): void {
  read.refused.push({ path, reason });
  read.warnings.push(`${path} is not a CNI config: ${reason}`);
}

function isSymlink(path: string): boolean {
  try {
    return lstatSync(path).isSymbolicLink();
  } catch {
    return false;
  }
}
