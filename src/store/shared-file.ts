/**
 * The one way Plexus reads a file from a directory others can write to (its records and result
 * cache, a device plugin's device-info files, the manifests of a file-backed cluster, Multus's
 * cache, and every file the installer and uninstaller read): whatever sits at the path is input,
 * not a file Plexus wrote.
 * - The type is checked before any open that has side effects: the path is first opened with
 *   O_PATH (no read, no device driver's open, no wait for a FIFO's writer), fstat'ed, and only a
 *   regular file is opened for reading, through that same descriptor (/proc/self/fd), so a device
 *   node is never opened and nothing can be swapped in between. Without /proc, an lstat comes
 *   first and the opened file must be the one it saw (same device and inode).
 * - O_NOFOLLOW: a symlink planted at the path is refused, never followed to a root-only file;
 *   O_NONBLOCK on the real open: a FIFO swapped in cannot make it wait.
 * - Only up to a size cap, checked before reading and while reading.
 * Synchronous on purpose, as atomic-file.ts is: a CNI process does one thing at a time.
 */
import { closeSync, constants, fstatSync, lstatSync, openSync, readSync, statSync } from "node:fs";
import type { Stats } from "node:fs";

export type SharedFileRead =
  | { state: "found"; data: Buffer }
  | { state: "missing" }
  /** Not read: what is at the path is not a regular file, is too large, or cannot be opened. */
  | {
      state: "refused";
      why: "not-regular" | "too-large" | "unreadable";
      reason: string;
      size?: number;
    };

/** Linux's O_PATH (Node does not export it): a descriptor for fstat only, opening nothing. */
const O_PATH = 0o10000000;
const READ_FLAGS = constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOCTTY;

export interface SharedFileLimits {
  maxBytes: number;
  /**
   * Follow a symlink at the path: only for a directory where links are how admins work (the CNI
   * config dir, as libcni reads it). The target is still checked through the same descriptor.
   */
  followSymlink?: boolean;
}

type Opened = { fd: number; st: Stats } | Exclude<SharedFileRead, { state: "found" }>;

/**
 * Reads `path` as described above; never blocks, never follows a symlink at the path (unless
 * asked).
 */
export function readSharedFile(path: string, limits: SharedFileLimits): SharedFileRead {
  const opened = openRegularFile(path, limits);
  if (!("fd" in opened)) return opened;
  const { fd, st } = opened;
  try {
    if (st.size > limits.maxBytes) return tooLarge(limits.maxBytes, st.size);
    return readToEnd(fd, st.size, limits.maxBytes);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? String(err);
    return { state: "refused", why: "unreadable", reason: `it cannot be read (${code})` };
  } finally {
    closeSync(fd);
  }
}

/** To the end, not to fstat's size: the file may grow meanwhile; one byte past the cap will do. */
function readToEnd(fd: number, size: number, maxBytes: number): SharedFileRead {
  const chunks: Buffer[] = [];
  let total = 0;
  for (;;) {
    const chunk = Buffer.allocUnsafe(Math.min(Math.max(size + 1, 4096), maxBytes + 1 - total));
    const got = readSync(fd, chunk, 0, chunk.length, null);
    if (got === 0) return { state: "found", data: Buffer.concat(chunks, total) };
    chunks.push(chunk.subarray(0, got));
    total += got;
    if (total > maxBytes) return tooLarge(maxBytes);
  }
}

/** A read descriptor of the regular file at `path`, or why there is none; nothing else opened. */
function openRegularFile(path: string, limits: SharedFileLimits): Opened {
  const nofollow = limits.followSymlink ? 0 : constants.O_NOFOLLOW;
  let handle: number;
  try {
    handle = openSync(path, O_PATH | nofollow);
  } catch (err) {
    return openFailure(err);
  }
  try {
    const st = fstatSync(handle);
    if (!st.isFile()) return notRegular(st);
    let fd: number;
    try {
      fd = openSync(`/proc/self/fd/${handle}`, READ_FLAGS);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code !== "ENOENT" && code !== "ENOTDIR") return openFailure(err);
      return openWithoutProc(path, limits);
    }
    // The same inode as the O_PATH descriptor: its fstat stands.
    return { fd, st };
  } finally {
    closeSync(handle);
  }
}

/** No /proc (a bare chroot): lstat (stat when following) first, then the file it saw, or none. */
function openWithoutProc(path: string, limits: SharedFileLimits): Opened {
  let before: Stats;
  try {
    before = limits.followSymlink ? statSync(path) : lstatSync(path);
  } catch (err) {
    return openFailure(err);
  }
  if (!before.isFile()) return notRegular(before);
  let fd: number;
  try {
    fd = openSync(path, READ_FLAGS | (limits.followSymlink ? 0 : constants.O_NOFOLLOW));
  } catch (err) {
    return openFailure(err);
  }
  const st = fstatSync(fd);
  if (st.isFile() && st.dev === before.dev && st.ino === before.ino) return { fd, st };
  closeSync(fd);
  return { state: "refused", why: "unreadable", reason: "it was replaced while being opened" };
}

const SYMLINK = "it is a symbolic link (not followed)";

function refused(why: "not-regular" | "unreadable", reason: string): Opened {
  return { state: "refused", why, reason };
}

function openFailure(err: unknown): Opened {
  const code = (err as NodeJS.ErrnoException).code;
  // ENOTDIR: a component of the path is a file, so there is nothing at the path.
  if (code === "ENOENT" || code === "ENOTDIR") return { state: "missing" };
  // O_NOFOLLOW without O_PATH on a symlink fails with ELOOP; opening a unix socket with ENXIO.
  if (code === "ELOOP") return refused("not-regular", SYMLINK);
  if (code === "ENXIO") return refused("not-regular", "it is a socket, not a regular file");
  return refused("unreadable", `it cannot be opened (${code ?? (err as Error).message})`);
}

function notRegular(st: Stats): Opened {
  if (st.isSymbolicLink()) return refused("not-regular", SYMLINK);
  return refused("not-regular", `it is ${kindOf(st)}, not a regular file`);
}

function tooLarge(maxBytes: number, size?: number): SharedFileRead {
  if (size === undefined)
    return {
      state: "refused",
      why: "too-large",
      reason: `it grew past the ${maxBytes}-byte limit while being read`,
    };
  return {
    state: "refused",
    why: "too-large",
    reason: `it is ${size} bytes, more than the ${maxBytes}-byte limit`,
    size,
  };
}

function kindOf(st: Stats): string {
  if (st.isFIFO()) return "a FIFO";
  if (st.isSocket()) return "a socket";
  if (st.isDirectory()) return "a directory";
  if (st.isCharacterDevice() || st.isBlockDevice()) return "a device";
  return "not a regular file";
}
