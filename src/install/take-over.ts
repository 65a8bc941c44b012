/**
 * Taking a node over from Multus in place, and handing it back (M11). The runtime (libcni's
 * `ConfFiles`, as containerd and CRI-O call it) runs the config file whose name sorts first among
 * the `.conf`, `.conflist` and `.json` files of the conf dir. Multus's `00-multus.conf` sorts
 * before Plexus's `00-plexus.conflist`, so installing Plexus beside Multus changes nothing until
 * Multus's config is out of the way. The take-over keeps the runtime working at every instant:
 *
 * 1. Plexus's config is already in place (written by temp file + rename, sorting after Multus's),
 *    so the first file is still Multus's, which works while Multus's DaemonSet runs.
 * 2. Each Multus config that sorts before Plexus's is renamed to `<name>.plexus-moved` (one atomic
 *    rename each, in name order): an extension libcni ignores, so the file is kept for the way
 *    back. After the last rename the first file is Plexus's.
 *
 * It is done only when every config file sorting before Plexus's is a Multus config: another file
 * there would become the runtime's config in between. That includes a file Plexus cannot read (too
 * large, a FIFO, a symlink to a directory): libcni lists every such name that is not a directory.
 * The way back is the same rename reversed, done when the take-over is turned off: Multus's config
 * sorts first again at once.
 */
import { readdirSync, renameSync } from "node:fs";
import { basename, join } from "node:path";
import type { Logger } from "../log/logger";
import { decodeJson, isPlainObject } from "../cni/json";
import { isConfigFileName, MAX_CONF_FILE_BYTES } from "../npwg/conf-dir";
import { isMultusConfigText } from "./multus-config";
import { readConfDir } from "./primary";

/** The suffix a Multus config is renamed to: libcni reads only `.conf`, `.conflist` and `.json`. */
export const MOVED_SUFFIX = ".plexus-moved";

/**
 * A config file of the conf dir as libcni lists it (any `.conf`, `.conflist` or `.json` name that
 * is not a directory): its text, or why it cannot be read (primary.ts, `readConfDir`).
 */
export type ConfDirEntry = { name: string; content: string } | { name: string; refused: string };

/** A config file sorting before Plexus's that is not Multus's, and why it is not. */
export interface TakeOverBlocker {
  name: string;
  why: string;
}

export type TakeOverPlan =
  | { action: "none" }
  | { action: "move"; names: string[] }
  | ({ action: "blocked" } & TakeOverBlocker);

/** libcni's order: byte order of the names (Go's sort.Strings). */
function sortedBefore(entries: readonly ConfDirEntry[], plexusName: string): ConfDirEntry[] {
  return entries
    .filter((f) => isConfigFileName(f.name) && f.name < plexusName)
    .sort((a, b) => (a.name < b.name ? -1 : 1));
}

function isMultusEntry(entry: ConfDirEntry): boolean {
  return "content" in entry && isMultusConfigText(entry.content);
}

/**
 * Pure: the config files sorting before Plexus's that are not Multus's, in libcni's order. With
 * Multus's moved aside, the first of them would be the runtime's config; one that cannot be read
 * (too large, a FIFO) counts as much as any other, since the runtime loads it all the same (B90).
 */
export function takeOverBlockers(
  entries: readonly ConfDirEntry[],
  plexusName: string,
): TakeOverBlocker[] {
  return sortedBefore(entries, plexusName)
    .filter((f) => !isMultusEntry(f))
    .map((f) => ({ name: f.name, why: whyBlocks(f) }));
}

function whyBlocks(entry: ConfDirEntry): string {
  if ("refused" in entry) return `cannot be read as a CNI config (${entry.refused})`;
  try {
    const value = decodeJson(entry.content, { what: entry.name, maxBytes: MAX_CONF_FILE_BYTES });
    if (isPlainObject(value)) return "is not Multus's config";
  } catch {
    // Falls through: not JSON.
  }
  return "is not a CNI config (not a JSON object)";
}

/**
 * Pure: what the take-over does with the conf dir's config files (any order). `plexusName` is
 * Plexus's own config, already written.
 */
export function planTakeOver(entries: readonly ConfDirEntry[], plexusName: string): TakeOverPlan {
  const multus = sortedBefore(entries, plexusName).filter(isMultusEntry);
  if (multus.length === 0) return { action: "none" };
  const [blocker] = takeOverBlockers(entries, plexusName);
  if (blocker) return { action: "blocked", ...blocker };
  return { action: "move", names: multus.map((f) => f.name) };
}

/** The conf dir's config files as `planTakeOver` takes them. */
export function confDirEntries(confDir: string): ConfDirEntry[] {
  const dir = readConfDir(confDir);
  return [
    ...dir.files.map((f) => ({ name: basename(f.path), content: f.content })),
    ...dir.refused.map((f) => ({ name: basename(f.path), refused: f.reason })),
  ];
}

export interface TakeOverOptions {
  /** The conf dir as the installer opens it. */
  confDir: string;
  /** Plexus's config file name in it. */
  plexusName: string;
}

/** The file that last blocked a take-over, to log it once. */
export interface Blocked {
  last?: string;
}

/** Moves Multus's configs aside when Plexus's config can come first; logs what it did. */
export function takeOverFromMultus(
  options: TakeOverOptions,
  blocked: Blocked,
  log: Logger,
): string[] {
  const plan = planTakeOver(confDirEntries(options.confDir), options.plexusName);
  if (plan.action === "blocked") {
    if (blocked.last !== plan.name) logBlocked(options, plan, log);
    blocked.last = plan.name;
    return [];
  }
  delete blocked.last;
  if (plan.action === "none") return [];
  for (const name of plan.names) {
    renameSync(join(options.confDir, name), join(options.confDir, `${name}${MOVED_SUFFIX}`));
    log.info(
      { config: join(options.confDir, name), keptAs: `${name}${MOVED_SUFFIX}` },
      "took over from Multus: its config is moved aside (kept for the way back)",
    );
  }
  return plan.names;
}

/** Names the file that keeps the take-over from happening, and what to do about it (B90). */
function logBlocked(options: TakeOverOptions, blocker: TakeOverBlocker, log: Logger): void {
  const path = join(options.confDir, blocker.name);
  log.error(
    { confDir: options.confDir, blocking: path, why: blocker.why },
    `not taking over from Multus: Multus's config sorts first, but ${blocker.name} also sorts ` +
      `before ${options.plexusName} and ${blocker.why}; with Multus's config moved aside the ` +
      `runtime would load ${path} first. Move it out of ${options.confDir}, or rename it to ` +
      "end in neither .conf, .conflist nor .json; a running installer then takes over at its " +
      "next pass",
  );
}

/** The way back: every config Plexus moved aside goes back under its name, so Multus's is first. */
export function handBackToMultus(options: TakeOverOptions, log: Logger): string[] {
  let names: string[];
  try {
    names = readdirSync(options.confDir);
  } catch {
    return [];
  }
  const back: string[] = [];
  for (const moved of names.filter((n) => n.endsWith(MOVED_SUFFIX)).sort()) {
    const name = moved.slice(0, -MOVED_SUFFIX.length);
    // Only a config name, and never over a file someone wrote since (Multus's entrypoint, say).
    if (!isConfigFileName(name) || names.includes(name)) continue;
    renameSync(join(options.confDir, moved), join(options.confDir, name));
    const config = join(options.confDir, name);
    log.info({ config }, "handed the node back to Multus: its config is restored");
    back.push(name);
  }
  return back;
}
