/**
 * The one "remove only our own" rule: which names in Plexus's state dir Plexus would have written,
 * so that every remover (uninstall's --remove-state, the sweep of a killed writer's temp files)
 * removes those and nothing else. What a directory holds beside them is someone else's, and a
 * directory that holds anything but Plexus's four subdirectories is not Plexus's state dir at all
 * (the parent of the state dir, copied from a Multus DaemonSet, holds host-local's reservations).
 * - records/, pending/: `<containerId>-<ifName>.json`; locks/: the same with `.lock`;
 *   results/: `<network>-<containerId>-<ifName>`; or `~<sha256>` plus the extension
 *   (state-names.ts);
 * - the temp files of Plexus's atomic writes, `.<one of those names>.tmp-<pid>-<seq>-<time>`.
 */
import { lstatSync, readdirSync, rmdirSync, unlinkSync } from "node:fs";
import { join } from "node:path";
import { interfaceNameProblem } from "../cni/validate";

/** Plexus's subdirectories of its state dir, with the extension of the names it writes there. */
const STATE_SUBDIRS: Readonly<Record<string, string>> = {
  records: ".json",
  pending: ".json",
  locks: ".lock",
  results: "",
};

const HASHED = /^~[0-9a-f]{64}$/;
const NAME_PART = /^[a-zA-Z0-9][a-zA-Z0-9_.-]*$/;
/**
 * `.<name>.tmp-<pid>-<seq>-<base36 time>` (atomic-file.ts), or `.<name>.tmp-<pid>-<time>` (the
 * installer's copy of the binary).
 */
const TEMP = /^\.(.+)\.tmp-(\d+)(?:-\d+)?-[0-9a-z]+$/;

/** The name a temp file stands for and its writer's pid; undefined for any other name. */
export function parseTempName(name: string): { target: string; pid: number } | undefined {
  const m = TEMP.exec(name);
  return m ? { target: m[1]!, pid: Number(m[2]) } : undefined;
}

/** Whether `name` in `<stateDir>/<subdir>/` is one Plexus would have written (temp files too). */
export function isOwnStateName(subdir: string, name: string): boolean {
  const ext = STATE_SUBDIRS[subdir];
  if (ext === undefined) return false;
  const target = parseTempName(name)?.target ?? name;
  if (!target.endsWith(ext)) return false;
  const stem = target.slice(0, target.length - ext.length);
  if (HASHED.test(stem)) return true;
  // Readable names: the container ID (and the network, for results) then the interface, by dashes.
  const cut = stem.lastIndexOf("-");
  if (cut <= 0) return false;
  const ifName = stem.slice(cut + 1);
  return NAME_PART.test(stem.slice(0, cut)) && interfaceNameProblem(ifName) === undefined;
}

/** Why `dir` is not a Plexus state dir (names what else it holds), or undefined when it is one. */
export function notStateDirReason(dir: string): string | undefined {
  const names = readdirSync(dir);
  const foreign = names.filter((n) => !isStateSubdir(dir, n));
  if (foreign.length > 0) {
    const shown = foreign.slice(0, 5).map((n) => JSON.stringify(n));
    const more = foreign.length > 5 ? ` and ${foreign.length - 5} more` : "";
    return `it holds ${shown.join(", ")}${more}, which Plexus never writes there`;
  }
  // libcni's own cache dir is also called results/: alone, it is no sign of Plexus.
  if (names.length === 1 && names[0] === "results")
    return "it holds only results/ (libcni's cache has that name too), no records/ locks/ pending/";
  return undefined;
}

function isStateSubdir(dir: string, name: string): boolean {
  return STATE_SUBDIRS[name] !== undefined && lstatSync(join(dir, name)).isDirectory();
}

export interface OwnStateRemoval {
  removed: number;
  /** What was left in place because Plexus did not write it (paths). */
  left: string[];
}

/**
 * Removes Plexus's own entries from a state dir it has checked with {@link notStateDirReason},
 * then each subdirectory that is empty, then the dir itself when empty. A planted directory or
 * anything with a foreign name is left, and listed.
 */
export function removeOwnState(dir: string): OwnStateRemoval {
  const out: OwnStateRemoval = { removed: 0, left: [] };
  for (const subdir of readdirSync(dir)) {
    const sub = join(dir, subdir);
    if (STATE_SUBDIRS[subdir] === undefined || !lstatSync(sub).isDirectory()) {
      out.left.push(sub);
      continue;
    }
    for (const name of readdirSync(sub)) {
      const path = join(sub, name);
      // unlink never follows a symlink; a directory under one of Plexus's names is not its file.
      if (isOwnStateName(subdir, name) && !lstatSync(path).isDirectory()) {
        unlinkSync(path);
        out.removed++;
      } else out.left.push(path);
    }
    removeIfEmpty(sub);
  }
  removeIfEmpty(dir);
  return out;
}

/** rmdir's answers that mean "leave it": not empty, gone, or not a directory (a symlink). */
const KEPT = new Set(["ENOTEMPTY", "EEXIST", "ENOENT", "ENOTDIR"]);

function removeIfEmpty(dir: string): void {
  try {
    rmdirSync(dir);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (!KEPT.has(code ?? "")) throw err;
  }
}
