/**
 * `logOptions` (M1): Multus rotates its log file with lumberjack (maxSize MB, maxBackups, maxAge
 * days, compress). Plexus is a short-lived process per pod, so it rotates when it opens the file:
 * if the file is over maxSize it is renamed to `<name>-<timestamp>.log` (gzipped when compress),
 * and backups beyond maxBackups or older than maxAge days are removed. Best effort: a rotation
 * failure never fails the CNI call.
 */
import {
  closeSync,
  openSync,
  readdirSync,
  readFileSync,
  renameSync,
  statSync,
  unlinkSync,
  writeFileSync,
  constants,
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

export function rotateIfNeeded(file: string, opts: LogRotation, now = new Date()): void {
  try {
    const maxBytes = (opts.maxSize ?? 100) * 1024 * 1024;
    let size: number;
    try {
      size = statSync(file).size;
    } catch {
      return;
    }
    if (size >= maxBytes) rotate(file, opts, now);
    prune(file, opts, now);
  } catch {
    // Logging must never break pod networking.
  }
}

function backupPrefix(file: string): { dir: string; stem: string; ext: string } {
  const ext = extname(file);
  return { dir: dirname(file), stem: basename(file, ext), ext };
}

function rotate(file: string, opts: LogRotation, now: Date): void {
  const { dir, stem, ext } = backupPrefix(file);
  const stamp = now.toISOString().replace(/[:]/g, "-");
  const backup = join(dir, `${stem}-${stamp}${ext}`);
  // A lock file keeps two concurrent Plexus processes from rotating the same file twice.
  const lock = `${file}.rotate-lock`;
  let fd: number;
  try {
    fd = openSync(lock, constants.O_CREAT | constants.O_EXCL | constants.O_WRONLY, 0o600);
  } catch {
    return;
  }
  try {
    renameSync(file, backup);
    if (opts.compress) {
      writeFileSync(`${backup}.gz`, process.getBuiltinModule("node:zlib").gzipSync(readFileSync(backup)));
      unlinkSync(backup);
    }
  } finally {
    closeSync(fd);
    unlinkSync(lock);
  }
}

function prune(file: string, opts: LogRotation, now: Date): void {
  if (opts.maxBackups === undefined && opts.maxAge === undefined) return;
  const { dir, stem, ext } = backupPrefix(file);
  const backups = readdirSync(dir)
    .filter((n) => n.startsWith(`${stem}-`) && (n.endsWith(ext) || n.endsWith(`${ext}.gz`)))
    .map((n) => ({ path: join(dir, n), mtime: statSync(join(dir, n)).mtimeMs }))
    .sort((a, b) => b.mtime - a.mtime);
  backups.forEach((b, i) => {
    const tooMany = opts.maxBackups !== undefined && opts.maxBackups > 0 && i >= opts.maxBackups;
    const tooOld = opts.maxAge !== undefined && opts.maxAge > 0 && now.getTime() - b.mtime > opts.maxAge * 86_400_000;
    if (tooMany || tooOld) unlinkSync(b.path);
  });
}
