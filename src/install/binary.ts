/**
 * M11, B51: the binary reaches the CNI bin dir by copy to a temp file in the same directory, fsync,
 * chmod, rename. Writing over the old file in place fails with ETXTBSY while a runtime executes it
 * (the "text file busy" Multus users hit), and a kubelet could exec a half-written file; a rename
 * swaps the directory entry, so a running process keeps its inode and a new exec sees a whole file.
 */
import { createHash } from "node:crypto";
import {
  chmodSync,
  closeSync,
  copyFileSync,
  fsyncSync,
  openSync,
  readSync,
  renameSync,
  rmSync,
  statSync,
} from "node:fs";
import { basename, dirname, join } from "node:path";
import { ioError } from "../store/atomic-file";

export type CopyOutcome = "installed" | "unchanged";

function sameContent(a: string, b: string): boolean {
  try {
    const have = statSync(b);
    // Only a regular file is hashed: a FIFO planted at the destination would block the read.
    if (!have.isFile() || statSync(a).size !== have.size) return false;
  } catch {
    return false;
  }
  return hashFile(a) === hashFile(b);
}

/** In 1 MiB reads: the binary is over 100 MiB and the installer's memory limit is small. */
function hashFile(path: string): string {
  const h = createHash("sha256");
  const buf = Buffer.alloc(1024 * 1024);
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

/** Installs `source` as `dest` (mode 0755) unless `dest` already has the same bytes and mode. */
export function installBinary(source: string, dest: string): CopyOutcome {
  try {
    if (sameContent(source, dest) && (statSync(dest).mode & 0o777) === 0o755) return "unchanged";
  } catch {
    // Unreadable destination: replace it.
  }
  const tmp = join(dirname(dest), `.${basename(dest)}.tmp-${process.pid}-${Date.now().toString(36)}`);
  // The copy reads the source: only a regular file (a FIFO would block the installer for good).
  const what = `cannot install ${source} as ${dest}`;
  if (!statSync(source).isFile()) throw ioError(what, new Error("not a regular file"));
  try {
    copyFileSync(source, tmp);
    chmodSync(tmp, 0o755);
    fsyncPath(tmp, "r");
    renameSync(tmp, dest);
    fsyncPath(dirname(dest), "r");
  } catch (err) {
    rmSync(tmp, { force: true });
    throw ioError(`cannot install ${source} as ${dest}`, err);
  }
  return "installed";
}
