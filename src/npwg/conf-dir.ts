/**
 * Pure helpers over the files of a CNI config directory (N3.4.1, M2, M11), given as
 * `{ path, content }` pairs by whoever did the I/O. Files are taken in byte order of their paths,
 * as libcni's `ConfFiles` sorts them (`sort.Strings`), not in locale order; a file that cannot be
 * used is skipped and reported in `warnings`, never fatal: one broken file in `/etc/cni/net.d` must
 * not take every pod down. A picked `.conflist` then takes the plugins of the folder named after
 * its network, as libcni loads a conflist file (withFolderPlugins).
 */
import { isTrueFlag, parsePlugin } from "../cni/conf";
import { CniError, Code } from "../cni/errors";
import { assertNoCaseCollisions, decodeJson, isPlainObject, MAX_STDIN_BYTES } from "../cni/json";
import { getKeyFold, hasKeyFold, withKeysFold } from "../cni/keys";
import { validateNetworkName } from "../cni/validate";

export interface ConfFile {
  path: string;
  content: string;
  /**
   * Reads the folder named after a network beside this file (`<directory>/<network name>/`),
   * whose `.conf` files libcni appends to a conflist's plugins: read on demand, only for the file
   * picked for a network. Absent where the file does not come from a directory listing.
   */
  pluginFolder?: (networkName: string) => PluginFolder | undefined;
}

/** One `.conf` file of a network's plugin folder: its text, or why it cannot be read. */
export type PluginFile = { path: string; content: string } | { path: string; problem: string };

/** What a network's plugin folder holds, as read by whoever does the I/O. */
export interface PluginFolder {
  /** The folder's path. */
  dir: string;
  /** Its `.conf` files (not its subdirectories), in byte order of their names. */
  files: PluginFile[];
  /** Why the folder itself cannot be listed; its files are then unknown. */
  problem?: string;
}

/**
 * A config file picked from the directory, its JSON decoded (not yet validated as a CNI config).
 */
export interface PickedConf {
  path: string;
  value: Record<string, unknown>;
  /** The file's plugin folder reader, when it came from a directory listing. */
  pluginFolder?: ConfFile["pluginFolder"];
}

export interface Picked {
  picked?: PickedConf;
  /** Skipped files and ambiguities, for the log. */
  warnings: string[];
}

const LIST_FILE = /\.conflist$/;
const SINGLE_FILE = /\.(conf|json)$/;
/** The same cap as stdin: a CNI config larger than this is not one. */
export const MAX_CONF_FILE_BYTES = MAX_STDIN_BYTES;

export function isConfigFileName(path: string): boolean {
  return LIST_FILE.test(path) || SINGLE_FILE.test(path);
}

function pickOf(file: ConfFile, value: Record<string, unknown>): PickedConf {
  return file.pluginFolder
    ? { path: file.path, value, pluginFolder: file.pluginFolder }
    : { path: file.path, value };
}

/** Byte order for ASCII names, like Go's `sort.Strings` (localeCompare would put `B` after `a`). */
function byPath(left: ConfFile, right: ConfFile): number {
  return left.path < right.path ? -1 : left.path > right.path ? 1 : 0;
}

function decode(file: ConfFile, warnings: string[]): Record<string, unknown> | undefined {
  let value: unknown;
  try {
    // B92: the file's numbers reach its delegates as written.
    const opts = { what: file.path, maxBytes: MAX_CONF_FILE_BYTES, exactNumbers: true };
    value = decodeJson(file.content, opts);
  } catch (err) {
    warnings.push(`${(err as Error).message}; skipped`);
    return undefined;
  }
  if (!isPlainObject(value)) {
    warnings.push(`${file.path} is not a JSON object; skipped`);
    return undefined;
  }
  return value;
}

/**
 * N3.4.1 steps 2 and 3: the `.conflist` whose JSON `name` is `name`, else the `.conf`/`.json` with
 * that name; within each group the first in path order. Multus takes whichever matching file sorts
 * first, so `00-x.conf` shadows `10-x.conflist` there; here a `.conflist` always wins. Another file
 * with the same name is reported, since only one of them is used.
 */
export function pickByName(files: readonly ConfFile[], name: string): Picked {
  const warnings: string[] = [];
  const matches: PickedConf[] = [];
  for (const group of [LIST_FILE, SINGLE_FILE]) {
    for (const file of files.filter((f) => group.test(f.path)).sort(byPath)) {
      const value = decode(file, warnings);
      if (value && getKeyFold(value, "name") === name) matches.push(pickOf(file, value));
    }
  }
  const [picked, ...others] = matches;
  if (!picked) return { warnings };
  if (others.length)
    warnings.push(
      `${others.map((o) => o.path).join(", ")} also ` +
        `${others.length > 1 ? "have" : "has"} "name": ` +
        `${JSON.stringify(name)}; using ${picked.path}`,
    );
  return { picked, warnings };
}

/**
 * Structurally usable: a conflist with a non-empty `plugins` list, or a single config with a
 * `type`; or a `.conflist` without `plugins` whose network's folder holds plugin files (libcni
 * 1.3 loads such a conflist from its folder alone).
 */
function usableProblem(file: ConfFile, value: Record<string, unknown>): string | undefined {
  if (!hasKeyFold(value, "plugins") && hasFolderPlugins(file, value)) return undefined;
  if (hasKeyFold(value, "plugins")) {
    const plugins = getKeyFold(value, "plugins");
    return Array.isArray(plugins) && plugins.length > 0
      ? undefined
      : "has no plugins in " + '"plugins"';
  }
  const type = getKeyFold(value, "type");
  return typeof type === "string" && type !== "" ? undefined : 'has no "type" (and no "plugins")';
}

export interface FirstConfigOptions {
  /** Files never to pick, by path: Plexus's own config, its temp files (M11, B49). */
  exclude?: (path: string) => boolean;
}

/**
 * The alphabetically first usable `.conf`/`.conflist`/`.json` file (M2's directory case, and the
 * installer's primary network, M11): what libcni's `ConfFiles` + first-file logic picks, except
 * that a broken or empty config is skipped with a warning instead of being chosen (B49).
 */
export function firstConfigFile(files: readonly ConfFile[], opts: FirstConfigOptions = {}): Picked {
  const warnings: string[] = [];
  for (const file of files.filter((f) => isConfigFileName(f.path)).sort(byPath)) {
    if (opts.exclude?.(file.path)) continue;
    const value = decode(file, warnings);
    if (!value) continue;
    const problem = usableProblem(file, value);
    if (problem) {
      warnings.push(`${file.path} ${problem}; skipped`);
      continue;
    }
    return { picked: pickOf(file, value), warnings };
  }
  return { warnings };
}

/**
 * A valid network name (libcni's `ValidateNetworkName`): one path component, never `.` or `..`,
 * so the only folder it can name is the one beside the file.
 */
function isNetworkName(name: unknown): name is string {
  try {
    validateNetworkName(name, "");
    return true;
  } catch {
    return false;
  }
}

/** A `.conflist` whose network's folder is to be read and has files (or cannot be listed). */
function hasFolderPlugins(file: ConfFile, value: Record<string, unknown>): boolean {
  if (!LIST_FILE.test(file.path) || isTrueFlag(getKeyFold(value, "loadOnlyInlinedPlugins")))
    return false;
  const name = getKeyFold(value, "name");
  const folder = isNetworkName(name) ? file.pluginFolder?.(name) : undefined;
  return folder !== undefined && (folder.problem !== undefined || folder.files.length > 0);
}

function invalid(msg: string): CniError {
  return new CniError(Code.InvalidNetworkConfig, msg);
}

/**
 * One plugin file of the folder, decoded and checked as a plugin config (libcni's
 * `NetworkPluginConfFromBytes`: JSON with a `type`); a file that is not one fails the network,
 * since running the network without a plugin its administrator put there is worse.
 */
function folderPlugin(file: PluginFile): Record<string, unknown> {
  const what = `plugin file ${file.path}`;
  if ("problem" in file) throw invalid(`${what} cannot be read: ${file.problem}`);
  const value = decodeJson(file.content, {
    what,
    maxBytes: MAX_CONF_FILE_BYTES,
    code: Code.InvalidNetworkConfig,
    exactNumbers: true, // B92
  });
  if (!isPlainObject(value)) throw invalid(`${what} is not a JSON object (a plugin config)`);
  parsePlugin(value, what);
  return value;
}

/**
 * A picked config as libcni 1.3 loads a conflist file (`NetworkConfFromFile`): unless
 * `loadOnlyInlinedPlugins` is true, the `.conf` files of the folder named after the network,
 * beside the file, are appended to its `plugins` in name order (the folder may stand in for
 * `plugins` altogether). `loadOnlyInlinedPlugins: true` without `plugins` is refused, as libcni
 * refuses it. A `.conf` or `.json` file takes no folder (libcni reads those as one plugin); nor
 * does a config whose `name` or `plugins` is malformed: parsing it names that.
 */
export function withFolderPlugins(picked: PickedConf): Record<string, unknown> {
  const { path, value } = picked;
  if (!LIST_FILE.test(path)) return value;
  assertNoCaseCollisions(value, "the conflist");
  const hasPlugins = hasKeyFold(value, "plugins");
  if (isTrueFlag(getKeyFold(value, "loadOnlyInlinedPlugins"))) {
    if (hasPlugins) return value;
    throw invalid('"loadOnlyInlinedPlugins" is true, but the conflist has no "plugins" to run');
  }
  const name = getKeyFold(value, "name");
  const inline = hasPlugins ? getKeyFold(value, "plugins") : [];
  // An empty `plugins` is refused before any folder is read, as libcni refuses it.
  const inlineOk = Array.isArray(inline) && (!hasPlugins || inline.length > 0);
  if (!isNetworkName(name) || !inlineOk) return value;
  const folder = picked.pluginFolder?.(name);
  if (!folder) return value;
  if (folder.problem) throw invalid(`plugin folder ${folder.dir} ${folder.problem}`);
  if (folder.files.length === 0) return value;
  const extra = folder.files.map(folderPlugin);
  return withKeysFold(value, { plugins: [...inline, ...extra] });
}
