/**
 * The one way Plexus reads a file from a directory others can write to (its records and result
 * cache, a device plugin's device-info files, the manifests of a file-backed cluster, Multus's
 * cache): whatever sits at the path is input, not a file Plexus wrote.
 * - opened with O_NOFOLLOW (a symlink planted at the path is refused, never followed to a root-only
 *   file) and O_NONBLOCK (a FIFO planted there is opened without waiting for a writer);
 * - fstat of that same descriptor: only a regular file is read (a FIFO, a socket, a device or a
 *   directory is refused), and only up to a size cap, checked before reading and while reading;
 * - read from that descriptor: nothing is re-opened by path, so nothing can be swapped in between.
 * Synchronous on purpose, as atomic-file.ts is: a CNI process does one thing at a time.
 */
import { closeSync, constants, fstatSync, openSync, readSync } from "node:fs";

export type SharedFileRead =
  | { state: "found"; data: Buffer }
  | { state: "missing" }
  /** Not read: what is at the path is not a regular file, is too large, or cannot be opened. */
  | { state: "refused"; why: "not-regular" | "too-large" | "unreadable"; reason: string; size?: number };

const OPEN_FLAGS = constants.O_RDONLY | constants.O_NONBLOCK;

export interface SharedFileLimits {
  maxBytes: number;
  /**
   * Follow a symlink at the path: only for a directory where links are how admins work (the CNI
   * config dir, as libcni reads it). The target is still checked through the same descriptor.
   */
  followSymlink?: boolean;
}

/** Reads `path` as described above; never blocks, never follows a symlink at the path (unless asked). */
export function readSharedFile(path: string, limits: SharedFileLimits): SharedFileRead {
  let fd: number;
  try {
    fd = openSync(path, limits.followSymlink ? OPEN_FLAGS : OPEN_FLAGS | constants.O_NOFOLLOW);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    // ENOTDIR: a component of the path is a file, so there is nothing at the path.
    if (code === "ENOENT" || code === "ENOTDIR") return { state: "missing" };
    // O_NOFOLLOW on a symlink fails with ELOOP; opening a unix socket fails with ENXIO.
    if (code === "ELOOP")
      return { state: "refused", why: "not-regular", reason: "it is a symbolic link (not followed)" };
    if (code === "ENXIO") return { state: "refused", why: "not-regular", reason: "it is a socket, not a regular file" };
    return { state: "refused", why: "unreadable", reason: `it cannot be opened (${code ?? (err as Error).message})` };
  }
  try {
    const st = fstatSync(fd);
    if (!st.isFile())
      return { state: "refused", why: "not-regular", reason: `it is ${kindOf(st)}, not a regular file` };
    if (st.size > limits.maxBytes) return tooLarge(limits.maxBytes, st.size);
    // Read to the end, not to fstat's size: the file may grow meanwhile; one byte past the cap is enough.
    const chunks: Buffer[] = [];
    let total = 0;
    for (;;) {
      const chunk = Buffer.allocUnsafe(Math.min(Math.max(st.size + 1, 4096), limits.maxBytes + 1 - total));
      const got = readSync(fd, chunk, 0, chunk.length, null);
      if (got === 0) return { state: "found", data: Buffer.concat(chunks, total) };
      chunks.push(chunk.subarray(0, got));
      total += got;
      if (total > limits.maxBytes) return tooLarge(limits.maxBytes);
    }
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? String(err);
    return { state: "refused", why: "unreadable", reason: `it cannot be read (${code})` };
  } finally {
    closeSync(fd);
  }
}

function tooLarge(maxBytes: number, size?: number): SharedFileRead {
  if (size === undefined)
    return { state: "refused", why: "too-large", reason: `it grew past the ${maxBytes}-byte limit while being read` };
  return {
    state: "refused",
    why: "too-large",
    reason: `it is ${size} bytes, more than the ${maxBytes}-byte limit`,
    size,
  };
}

function kindOf(st: import("node:fs").Stats): string {
  if (st.isFIFO()) return "a FIFO";
  if (st.isSocket()) return "a socket";
  if (st.isDirectory()) return "a directory";
  if (st.isCharacterDevice() || st.isBlockDevice()) return "a device";
  return "not a regular file";
}
