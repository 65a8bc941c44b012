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
 * 3. M18: guards (multus-guard.ts) keep Multus's entrypoint from writing its config again while
 *    its DaemonSet still runs: the one under its temp file's name goes in before the rename, the
 *    others right after. A kept copy is never written over (kept-copies.ts), and a Multus config
 *    that wraps Plexus, which that entrypoint renders once Plexus's config comes first, is never
 *    kept: it is removed, and said so in the log and an Event (alerts.ts).
 *
 * It is done only when every config file sorting before Plexus's is a Multus config: another file
 * there would become the runtime's config in between. That includes a file Plexus cannot read (too
 * large, a FIFO, a symlink to a directory): libcni lists every such name that is not a directory.
 * The way back (hand-back.ts) is the same rename reversed, done when the take-over is turned off:
 * Multus's config sorts first again at once.
 */
import { existsSync, lstatSync, renameSync, unlinkSync } from "node:fs";
import { basename, join } from "node:path";
import type { Logger } from "../log/logger";
import { decodeJson, isPlainObject } from "../cni/json";
import { isConfigFileName, MAX_CONF_FILE_BYTES } from "../npwg/conf-dir";
import { type Alert, digestOf, type Said, sayOnce } from "./alerts";
import {
  confDirNames,
  keptCopiesOf,
  keptName,
  readConfText,
  readKeptCopies,
  restorable,
} from "./kept-copies";
import { isMultusConfigText, multusKindOf } from "./multus-config";
import { guardNames, listGuards, placeGuard, sweepGuardTemps } from "./multus-guard";
import { readConfDir } from "./primary";

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

/** What the passes remember about Multus, to say each change once rather than on every pass. */
export interface MultusMemory {
  /** The file that last kept the installer from taking over from Multus. */
  blocked?: string;
  said: Said;
  /** Multus's own kubeconfig as last seen (its entrypoint rewrites it on every start). */
  multusKubeconfig?: string;
}

export function newMultusMemory(): MultusMemory {
  return { said: new Set() };
}

export interface TakeOverResult {
  /** The Multus configs moved aside or removed, by name. */
  moved: string[];
  alerts: Alert[];
}

/** A pass retries this often when Multus's entrypoint wrote again while the pass ran. */
const MAX_ATTEMPTS = 5;

/** Moves Multus's configs aside when Plexus's config can come first; logs what it did. */
export function takeOverFromMultus(
  options: TakeOverOptions,
  memory: MultusMemory,
  log: Logger,
): TakeOverResult {
  const result: TakeOverResult = { moved: [], alerts: [] };
  sweepGuardTemps(options.confDir, confDirNames(options.confDir));
  for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
    const plan = planTakeOver(confDirEntries(options.confDir), options.plexusName);
    if (plan.action === "blocked") {
      if (memory.blocked !== plan.name) logBlocked(options, plan, log);
      memory.blocked = plan.name;
      return result;
    }
    delete memory.blocked;
    if (plan.action === "none") break;
    for (const name of plan.names) takeOverOne({ options, memory, log, result }, name);
  }
  result.alerts.push(...noticeMultusEntrypoint(options, memory, log));
  return result;
}

interface PassContext {
  options: TakeOverOptions;
  memory: MultusMemory;
  log: Logger;
  result: TakeOverResult;
}

/**
 * One Multus config out of the way: its entrypoint's temp name guarded first, so that it cannot
 * write again meanwhile; the file read again then, and kept or (wrapping Plexus) removed; its
 * other names guarded after.
 */
function takeOverOne(ctx: PassContext, name: string): void {
  const { confDir } = ctx.options;
  const [tempName, ...names] = guardNames(name);
  guardTempName(confDir, tempName!);
  const path = join(confDir, name);
  const text = readConfText(path);
  // Gone, or no longer Multus's: the next attempt sees the directory as it is now.
  if (text === undefined) return;
  const kind = multusKindOf(text);
  if (kind === "other") return;
  if (kind === "wraps-plexus") discardWrapping(ctx, name, text);
  else keepMultusConfig(ctx, name, text);
  ctx.result.moved.push(name);
  for (const guarded of names) placeGuard(confDir, guarded);
}

/** Multus thin's temp file is its own while it writes; one left over is removed for the guard. */
function guardTempName(confDir: string, name: string): void {
  for (let i = 0; i < MAX_ATTEMPTS; i++) {
    if (placeGuard(confDir, name) !== "occupied") return;
    const path = join(confDir, name);
    try {
      if (!lstatSync(path).isFile()) return;
      unlinkSync(path);
    } catch {
      // Renamed or removed by its writer meanwhile: try the guard again.
    }
  }
}

/** A Multus config of its own: kept for the way back, never over an earlier kept copy. */
function keepMultusConfig(ctx: PassContext, name: string, text: string): void {
  const { confDir } = ctx.options;
  const path = join(confDir, name);
  const copies = keptCopiesOf(confDirNames(confDir)).get(name) ?? [];
  const newest = copies.at(-1);
  if (newest && readConfText(join(confDir, newest.name)) === text) {
    unlinkSync(path);
    ctx.log.info(
      { config: path, keptAs: newest.name },
      "Multus's config was written again as it is kept: removed, the kept copy stays",
    );
    return;
  }
  let order = (newest?.order ?? 0) + 1;
  while (existsSync(join(confDir, keptName(name, order)))) order++;
  const kept = keptName(name, order);
  renameSync(path, join(confDir, kept));
  ctx.log.info(
    { config: path, keptAs: kept },
    "took over from Multus: its config is moved aside (kept for the way back)",
  );
  ctx.result.alerts.push({
    type: "Normal",
    reason: "TookOverFromMultus",
    message:
      `took over from Multus: ${path} moved aside as ${kept}; the runtime runs Plexus's ` +
      ctx.options.plexusName,
  });
}

/** M18: a Multus config that wraps Plexus is removed, never kept; said once per change. */
function discardWrapping(ctx: PassContext, name: string, text: string): void {
  const { confDir, plexusName } = ctx.options;
  const path = join(confDir, name);
  unlinkSync(path);
  const copies = keptCopiesOf(confDirNames(confDir)).get(name) ?? [];
  const back = restorable(readKeptCopies(confDir, copies));
  const message =
    `${path} is Multus's config wrapping Plexus's ${plexusName} (written again by Multus's ` +
    "entrypoint after the take-over: Multus's DaemonSet still runs). Every ADD through it " +
    "fails, so it was removed, not kept; " +
    (back
      ? `the way back restores ${back.name}. `
      : "no kept copy of Multus's own config is left for the way back. ") +
    "Once every node has switched, delete Multus's DaemonSet";
  sayOnce(ctx.memory.said, `wraps:${name}:${digestOf(text)}`, () => {
    ctx.log.error({ config: path }, message);
    ctx.result.alerts.push({ type: "Warning", reason: "MultusConfigWrapsPlexus", message });
  });
}

/**
 * Multus thin's entrypoint rewrites its kubeconfig (`multus.d/multus.kubeconfig`) every time it
 * starts: once the node has switched (a guard is in place), a change there means Multus's
 * DaemonSet still runs a pod on this node. Said once per change.
 */
function noticeMultusEntrypoint(
  options: TakeOverOptions,
  memory: MultusMemory,
  log: Logger,
): Alert[] {
  const path = join(options.confDir, "multus.d", "multus.kubeconfig");
  let stamp: string;
  try {
    const st = lstatSync(path);
    stamp = `${st.ino}:${st.mtimeMs}:${st.size}`;
  } catch {
    return [];
  }
  const first = memory.multusKubeconfig === undefined;
  const changed = memory.multusKubeconfig !== stamp;
  memory.multusKubeconfig = stamp;
  if (first || !changed) return [];
  if (listGuards(options.confDir, confDirNames(options.confDir)).length === 0) return [];
  const message =
    `Multus's entrypoint started again on this node (it rewrote ${path}): Multus's DaemonSet ` +
    "still runs. Plexus's guards keep it from writing its config, so its container exits and " +
    "restarts; once every node has switched, delete Multus's DaemonSet";
  log.warn({ kubeconfig: path }, message);
  return [{ type: "Warning", reason: "MultusStillRunning", message }];
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
