/**
 * M11, B51: the binary reaches the CNI bin dir by copy to a temp file in the same directory, fsync,
 * chmod, rename. Writing over the old file in place fails with ETXTBSY while a runtime executes it
 * (the "text file busy" Multus users hit), and a kubelet could exec a half-written file; a rename
 * swaps the directory entry, so a running process keeps its inode and a new exec sees a whole file.
 *
 * The copy streams through one small buffer and flushes the written pages to disk every few MiB:
 * page cache counts against the install container's memory limit, and dirty pages cannot be
 * reclaimed until they are written back, so an unbounded in-kernel copy (copy_file_range) of the
 * whole executable stalls or is OOM-killed under a small limit. Clean pages are reclaimed at once.
 */
import { createHash } from "node:crypto";
import {
  chmodSync,
  closeSync,
  constants,
  fdatasyncSync,
  fsyncSync,
  openSync,
  readSync,
  renameSync,
  rmSync,
  statSync,
  writeSync,
} from "node:fs";
import { basename, dirname, join } from "node:path";
import { ioError } from "../store/atomic-file";

export type CopyOutcome = "installed" | "unchanged";

function sameContent(left: string, right: string): boolean {
  try {
    const have = statSync(right);
    // Only a regular file is hashed: a FIFO planted at the destination would block the read.
    if (!have.isFile() || statSync(left).size !== have.size) return false;
  } catch {
    return false;
  }
  return hashFile(left) === hashFile(right);
}

/** The copy's and the hash's read size. */
const CHUNK_BYTES = 1024 * 1024;
/** How much the copy writes before it waits for those pages to reach the disk (fdatasync). */
const FLUSH_BYTES = 8 * CHUNK_BYTES;

/** In chunks: the binary is large and the installer's memory limit is small. */
function hashFile(path: string): string {
  const h = createHash("sha256");
  const buf = Buffer.alloc(CHUNK_BYTES);
  const fd = openSync(path, "r");
  try {
    for (let n = readSync(fd, buf); n > 0; n = readSync(fd, buf)) h.update(buf.subarray(0, n));
  } finally {
    closeSync(fd);
  }
  return h.digest("hex");
}

function fsyncPath(path: string, flags: string): void {
  const fd = openSync(path, flags);
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/**
 * Copies `source` into the new file `tmp` (created here, never an existing one or a symlink) and
 * syncs it. At most one chunk is in this process's memory and at most FLUSH_BYTES of the file's
 * pages are dirty at any time.
 */
function streamCopy(source: string, tmp: string): void {
  const from = openSync(source, constants.O_RDONLY);
  try {
    const flags = constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW;
    const to = openSync(tmp, flags, 0o700);
    try {
      const buf = Buffer.allocUnsafe(CHUNK_BYTES);
      let unflushed = 0;
      for (let n = readSync(from, buf); n > 0; n = readSync(from, buf)) {
        for (let off = 0; off < n; ) off += writeSync(to, buf, off, n - off);
        unflushed += n;
        if (unflushed >= FLUSH_BYTES) {
          fdatasyncSync(to);
          unflushed = 0;
        }
      }
      fsyncSync(to);
    } finally {
      closeSync(to);
    }
  } finally {
    closeSync(from);
  }
}

/** Installs `source` as `dest` (mode 0755) unless `dest` already has the same bytes and mode. */
export function installBinary(source: string, dest: string): CopyOutcome {
  try {
    if (sameContent(source, dest) && (statSync(dest).mode & 0o777) === 0o755) return "unchanged";
  } catch {
    // Unreadable destination: replace it.
  }
  const tmp = join(
    dirname(dest),
    `.${basename(dest)}.tmp-${process.pid}-${Date.now().toString(36)}`,
  );
  // The copy reads the source: only a regular file (a FIFO would block the installer for good).
  const what = `cannot install ${source} as ${dest}`;
  try {
    if (!statSync(source).isFile()) throw new Error("not a regular file");
    streamCopy(source, tmp);
    chmodSync(tmp, 0o755);
    fsyncPath(tmp, "r");
    renameSync(tmp, dest);
    fsyncPath(dirname(dest), "r");
  } catch (err) {
    rmSync(tmp, { force: true });
    throw ioError(what, err);
  }
  return "installed";
}
