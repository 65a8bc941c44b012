/**
 * `logOptions` (M1): Multus rotates its log file with lumberjack (maxSize MB, maxBackups, maxAge
 * days, compress). Plexus is a short-lived process per pod, so it rotates when it opens the file:
 * if the file is over maxSize it is renamed to `<stem>-<timestamp><ext>`, and backups beyond
 * maxBackups or older than maxAge days are removed. Best effort: a rotation failure never fails
 * the CNI call.
 * - Only the backups this code writes are pruned (the stem, then its timestamp, then the
 *   extension): `plexus-daemon.log` beside `plexus.log` is another log, not a backup (B74).
 * - Concurrent processes take `<file>.rotate-lock` (O_EXCL) to rotate once; a lock older than a
 *   minute was left by a process killed mid-rotation (the runtime's SIGKILL) and is taken over,
 *   so one kill never disables rotation for good (B74).
 * - Compression (up to maxSize of text) runs in a detached child, so no CNI call waits for it:
 *   the executable runs itself as Bun (`BUN_BE_BUN`), Node runs itself; the child writes
 *   `<backup>.gz` by temp file and rename, then removes the backup.
 */
import {
  closeSync,
  constants,
  lstatSync,
  openSync,
  readdirSync,
  renameSync,
  statSync,
  unlinkSync,
} from "node:fs";
import { basename, dirname, extname, join } from "node:path";

export interface LogRotation {
  /** Megabytes; lumberjack's default is 100. */
  maxSize?: number;
  maxBackups?: number;
  /** Days. */
  maxAge?: number;
  compress?: boolean;
}

/**
 * A `.rotate-lock` older than this was left by a killed process: a rotation holds it for a stat
 * and a rename.
 */
const STALE_ROTATE_LOCK_MS = 60_000;

export function rotateIfNeeded(file: string, opts: LogRotation, now = new Date()): void {
  try {
    const maxBytes = (opts.maxSize ?? 100) * 1024 * 1024;
    if (sizeOf(file) >= maxBytes) rotate(file, opts, now, maxBytes);
    prune(file, opts, now);
  } catch {
    // Logging must never break pod networking.
  }
}

function sizeOf(file: string): number {
  try {
    return statSync(file).size;
  } catch {
    return -1;
  }
}

function parts(file: string): { dir: string; stem: string; ext: string } {
  const ext = extname(file);
  return { dir: dirname(file), stem: basename(file, ext), ext };
}

/** `plexus-2026-01-02T03-04-05.000Z.log`: the ISO time with `:` made file-name safe. */
export function backupName(file: string, at: Date): string {
  const { stem, ext } = parts(file);
  return `${stem}-${at.toISOString().replace(/:/g, "-")}${ext}`;
}

const escapeRegExp = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

/** backupName's timestamp: the ISO time with `-` for `:`. */
const STAMP = "\\d{4}-\\d{2}-\\d{2}T\\d{2}-\\d{2}-\\d{2}\\.\\d{3}Z";

/** Matches exactly the names backupName gives (and their `.gz`), for this file. */
function backupPattern(file: string): RegExp {
  const { stem, ext } = parts(file);
  return new RegExp(`^${escapeRegExp(stem)}-(${STAMP})${escapeRegExp(ext)}(?:\\.gz)?$`);
}

function rotate(file: string, opts: LogRotation, now: Date, maxBytes: number): void {
  const lock = takeRotateLock(`${file}.rotate-lock`, now);
  if (lock === undefined) return;
  try {
    // Another process may have rotated between our stat and our lock.
    if (sizeOf(file) < maxBytes) return;
    const backup = join(dirname(file), backupName(file, now));
    renameSync(file, backup);
    if (opts.compress) compressDetached(backup);
  } finally {
    closeSync(lock.fd);
    unlinkSync(lock.path);
  }
}

function takeRotateLock(path: string, now: Date): { fd: number; path: string } | undefined {
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      return {
        fd: openSync(path, constants.O_CREAT | constants.O_EXCL | constants.O_WRONLY, 0o600),
        path,
      };
    } catch {
      let age: number;
      try {
        age = now.getTime() - statSync(path).mtimeMs;
      } catch {
        continue; // released meanwhile: try again
      }
      if (age < STALE_ROTATE_LOCK_MS) return undefined; // a live rotation
      try {
        unlinkSync(path);
      } catch {
        // Another process took the stale lock over first; the next attempt tells.
      }
    }
  }
  return undefined;
}

/**
 * Gzips `backup` in a child that outlives this process (its own session, no stdio, a clean env).
 */
const GZIP_SCRIPT = `
const fs = require("node:fs"), zlib = require("node:zlib");
const src = process.env.PLEXUS_LOG_BACKUP, tmp = src + ".gz.tmp-" + process.pid;
fs.createReadStream(src)
  .pipe(zlib.createGzip())
  .pipe(fs.createWriteStream(tmp, { mode: 0o600, flags: "wx" }))
  .on("finish", () => { fs.renameSync(tmp, src + ".gz"); fs.unlinkSync(src); })
  .on("error", () => { try { fs.unlinkSync(tmp); } catch {} });
`;

/**
 * The compressors this process started. They are its children, not a delegate's leftovers: the
 * executable, which kills every child that is not a running delegate after each delegate ends
 * (invoke/orphans.ts), is given these to spare (orchestrate/node-deps.ts), or a slow compression
 * would be cut short.
 */
const compressors = new Set<number>();

export function logCompressorPids(): ReadonlySet<number> {
  return compressors;
}

function compressDetached(backup: string): void {
  // Loaded here, not at start-up: most calls never rotate, and every call would pay for the module.
  const { spawn } = process.getBuiltinModule("node:child_process");
  const child = spawn(process.execPath, ["-e", GZIP_SCRIPT], {
    detached: true,
    stdio: "ignore",
    env: { BUN_BE_BUN: "1", PLEXUS_LOG_BACKUP: backup },
  });
  if (child.pid !== undefined) compressors.add(child.pid);
  child.on("error", () => {}); // the backup stays uncompressed
  child.unref();
}

/**
 * Backups are ordered and aged by the time in their names (what this code wrote there), not by
 * mtime: a file copied or touched later is not younger. Only regular files count: a directory or
 * a symlink given a backup's name is not a backup, so it can neither take a place among the kept
 * ones (and push out the backup just rotated) nor be removed.
 */
function prune(file: string, opts: LogRotation, now: Date): void {
  if (opts.maxBackups === undefined && opts.maxAge === undefined) return;
  const { dir } = parts(file);
  const mine = backupPattern(file);
  const backups = readdirSync(dir)
    .flatMap((name) => {
      const at = backupTime(mine, name);
      if (at === undefined) return [];
      const path = join(dir, name);
      return isRegularFile(path) ? [{ path, at }] : [];
    })
    .sort((a, b) => b.at - a.at || (a.path < b.path ? 1 : -1));
  backups.forEach((b, i) => {
    const tooMany = opts.maxBackups !== undefined && opts.maxBackups > 0 && i >= opts.maxBackups;
    const maxAgeMs = (opts.maxAge ?? 0) * 86_400_000;
    const tooOld = maxAgeMs > 0 && now.getTime() - b.at > maxAgeMs;
    if (tooMany || tooOld) unlinkSync(b.path);
  });
}

/** The epoch ms in a backup's name; undefined for a name that is not one of this file's backups. */
function backupTime(mine: RegExp, name: string): number | undefined {
  const stamp = mine.exec(name)?.[1];
  if (stamp === undefined) return undefined;
  const [date, time] = stamp.split("T") as [string, string];
  const at = Date.parse(`${date}T${time.replace(/-/g, ":")}`);
  return Number.isNaN(at) ? undefined : at;
}

function isRegularFile(path: string): boolean {
  try {
    return lstatSync(path).isFile();
  } catch {
    return false;
  }
}
