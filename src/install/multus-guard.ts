/**
 * M18: once the take-over has moved Multus's config aside, Multus's DaemonSet may still run, and
 * its entrypoint renders the config again whenever its container starts (a pod restart, a reboot):
 * Multus v4's thin entrypoint wraps the first other config of the conf dir, Plexus's by then, into
 * `00-multus.conf`, which sorts first again and fails every ADD until a pass removes it.
 *
 * A guard keeps that file from ever appearing: an empty-but-for-a-note directory under each name
 * Multus writes, so its write fails (the entrypoint opens `00-multus.conf.new`, then renames it to
 * `00-multus.conf`, or `00-multus.conflist` for CNI 1.0.0; thick's daemon writes `00-multus.conf`
 * in place). libcni skips directories, so the runtime never sees one; Multus's container exits and
 * restarts, which is harmless, until its DaemonSet is deleted. The guard is made under a hidden
 * temp name, its note written, then renamed into place in one rename: a guard is either whole or
 * absent. Only a directory holding exactly that note is Plexus's, and only such a one is removed
 * (by the way back, and by `plexus uninstall`).
 */
import { lstatSync, mkdirSync, readdirSync, renameSync, rmdirSync, rmSync } from "node:fs";
import { unlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";

/** The note inside a guard: why the directory is there, for a person listing the conf dir. */
const NOTE = "PLEXUS-GUARD";
const NOTE_TEXT =
  "Plexus's installer put this directory here after taking over from Multus, so that Multus's\n" +
  "entrypoint (its DaemonSet still running) cannot write its config again under this name.\n" +
  "The runtime skips directories. `plexus install --no-take-over-multus` (the way back) and\n" +
  "`plexus uninstall` remove it; once Multus's DaemonSet is deleted you may remove it too.\n";
const TEMP_PREFIX = ".plexus-guard-";

/**
 * The names a Multus config `name` may be written under again: itself, the other of `.conf` and
 * `.conflist` (thin picks by the CNI version), and thin's temp file `<base>.conf.new`.
 */
export function guardNames(name: string): string[] {
  const base = name.replace(/\.(conflist|conf|json)$/, "");
  return [...new Set([`${base}.conf.new`, name, `${base}.conf`, `${base}.conflist`])];
}

/** Whether `path` is a guard Plexus made: a directory (not a symlink) holding only its note. */
export function isGuard(path: string): boolean {
  try {
    if (!lstatSync(path).isDirectory()) return false;
    const inside = readdirSync(path);
    return inside.length === 1 && inside[0] === NOTE && lstatSync(join(path, NOTE)).isFile();
  } catch {
    return false;
  }
}

/** The guards in `confDir`, by name. */
export function listGuards(confDir: string, names: readonly string[]): string[] {
  return names.filter((n) => !n.startsWith(".") && isGuard(join(confDir, n)));
}

export type GuardResult = "placed" | "present" | "occupied";

/**
 * Puts a guard under `name` unless one is there; "occupied" when something else is (a file, or a
 * directory that is not Plexus's): the caller deals with it and tries again.
 */
export function placeGuard(confDir: string, name: string): GuardResult {
  const path = join(confDir, name);
  if (isGuard(path)) return "present";
  const temp = join(confDir, `${TEMP_PREFIX}${process.pid}-${Date.now().toString(36)}`);
  mkdirSync(temp, { mode: 0o755 });
  try {
    writeFileSync(join(temp, NOTE), NOTE_TEXT, { mode: 0o644 });
    // Fails over a file (ENOTDIR) or a directory with anything in it (ENOTEMPTY, EEXIST).
    renameSync(temp, path);
    return "placed";
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === "ENOTDIR" || code === "ENOTEMPTY" || code === "EEXIST" || code === "EISDIR")
      return "occupied";
    throw err;
  } finally {
    rmSync(temp, { recursive: true, force: true });
  }
}

/** Removes the guard under `name`; false when none of Plexus's is there. */
export function removeGuard(confDir: string, name: string): boolean {
  const path = join(confDir, name);
  if (!isGuard(path)) return false;
  unlinkSync(join(path, NOTE));
  rmdirSync(path);
  return true;
}

/** The names inside a directory (not through a symlink); undefined for anything else. */
function entriesOf(path: string): string[] | undefined {
  try {
    return lstatSync(path).isDirectory() ? readdirSync(path) : undefined;
  } catch {
    return undefined;
  }
}

/** A guard a killed installer left under its temp name: removed when it is one. */
export function sweepGuardTemps(confDir: string, names: readonly string[]): void {
  for (const name of names) {
    if (!name.startsWith(TEMP_PREFIX)) continue;
    const path = join(confDir, name);
    if (entriesOf(path)?.every((n) => n === NOTE)) rmSync(path, { recursive: true, force: true });
  }
}
