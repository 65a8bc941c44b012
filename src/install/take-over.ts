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
 * there would become the runtime's config in between. The way back is the same rename reversed,
 * done when the take-over is turned off: Multus's config sorts first again at once.
 */
import { readdirSync, renameSync } from "node:fs";
import { basename, join } from "node:path";
import type { Logger } from "../log/logger";
import { isConfigFileName } from "../npwg/conf-dir";
import { isMultusConfigText } from "./multus-config";
import { readConfDir } from "./primary";

/** The suffix a Multus config is renamed to: libcni reads only `.conf`, `.conflist` and `.json`. */
export const MOVED_SUFFIX = ".plexus-moved";
export type TakeOverPlan =
  | { action: "none" }
  | { action: "move"; names: string[] }
  | { action: "blocked"; name: string };

/**
 * Pure: what the take-over does with the conf dir's config files (names and contents, any order).
 * `plexusName` is Plexus's own config, already written.
 */
export function planTakeOver(
  files: ReadonlyArray<{ name: string; content: string }>,
  plexusName: string,
): TakeOverPlan {
  // libcni's order: byte order of the names (Go's sort.Strings).
  const before = files
    .filter((f) => isConfigFileName(f.name) && f.name < plexusName)
    .sort((a, b) => (a.name < b.name ? -1 : 1));
  const multus = before.filter((f) => isMultusConfigText(f.content));
  if (multus.length === 0) return { action: "none" };
  const other = before.find((f) => !multus.includes(f));
  if (other) return { action: "blocked", name: other.name };
  return { action: "move", names: multus.map((f) => f.name) };
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
  const { files } = readConfDir(options.confDir);
  const named = files.map((f) => ({ name: basename(f.path), content: f.content }));
  const plan = planTakeOver(named, options.plexusName);
  if (plan.action === "blocked") {
    if (blocked.last !== plan.name)
      log.error(
        { confDir: options.confDir, blocking: plan.name },
        `Multus's config sorts first, but ${plan.name} also sorts before ${options.plexusName}: ` +
          "not taking over from Multus (the runtime would run that file in between): move it",
      );
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
