/**
 * Pure helpers over the files of a CNI config directory (N3.4.1, M2, M11), given as
 * `{ path, content }` pairs by whoever did the I/O. Files are taken in byte order of their paths,
 * as libcni's `ConfFiles` sorts them (`sort.Strings`), not in locale order; a file that cannot be
 * used is skipped and reported in `warnings`, never fatal: one broken file in `/etc/cni/net.d` must
 * not take every pod down.
 */
import { decodeJson, isPlainObject, MAX_STDIN_BYTES } from "../cni/json";
import { getKeyFold, hasKeyFold } from "../cni/keys";

export interface ConfFile {
  path: string;
  content: string;
}

/** A config file picked from the directory, its JSON decoded (not yet validated as a CNI config). */
interface PickedConf {
  path: string;
  value: Record<string, unknown>;
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
      if (value && getKeyFold(value, "name") === name) matches.push({ path: file.path, value });
    }
  }
  const [picked, ...others] = matches;
  if (!picked) return { warnings };
  if (others.length)
    warnings.push(
      `${others.map((o) => o.path).join(", ")} also ${others.length > 1 ? "have" : "has"} "name": ${JSON.stringify(name)}; using ${picked.path}`,
    );
  return { picked, warnings };
}

/** Structurally usable: a conflist with a non-empty `plugins` list, or a single config with a `type`. */
function usableProblem(value: Record<string, unknown>): string | undefined {
  if (hasKeyFold(value, "plugins")) {
    const plugins = getKeyFold(value, "plugins");
    return Array.isArray(plugins) && plugins.length > 0 ? undefined : 'has no plugins in "plugins"';
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
 * installer's primary network, M11): what libcni's `ConfFiles` + first-file logic picks, except that
 * a broken or empty config is skipped with a warning instead of being chosen (B49).
 */
export function firstConfigFile(files: readonly ConfFile[], opts: FirstConfigOptions = {}): Picked {
  const warnings: string[] = [];
  for (const file of files.filter((f) => isConfigFileName(f.path)).sort(byPath)) {
    if (opts.exclude?.(file.path)) continue;
    const value = decode(file, warnings);
    if (!value) continue;
    const problem = usableProblem(value);
    if (problem) {
      warnings.push(`${file.path} ${problem}; skipped`);
      continue;
    }
    return { picked: { path: file.path, value }, warnings };
  }
  return { warnings };
}
