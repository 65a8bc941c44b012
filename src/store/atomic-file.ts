/**
 * Atomic small-file writes for the result cache and the container record (C3.3, M7, B46, B48):
 * temp file in the same directory, fsync, rename, fsync of the directory. A reader sees the old
 * file or the new one, never a torn one; a failed write leaves no temp file behind.
 *
 * Synchronous system calls on purpose: a CNI process does one thing at a time, and each
 * `fs/promises` call is a thread-pool round trip that every pod would wait for.
 */
import {
  closeSync,
  fsyncSync,
  mkdirSync,
  openSync,
  readdirSync,
  renameSync,
  rmSync,
  writeSync,
} from "node:fs";
import { basename, dirname, join } from "node:path";
import { CniError, Code } from "../cni/errors";
import { parseTempName } from "./own-names";

let seq = 0;

export async function writeFileAtomic(
  path: string,
  data: string | Uint8Array,
  mode = 0o600,
): Promise<void> {
  writeFileAtomicSync(path, data, mode);
}

/** {@link writeFileAtomic} for callers that are synchronous themselves. */
export function writeFileAtomicSync(path: string, data: string | Uint8Array, mode = 0o600): void {
  const dir = dirname(path);
  // pid + sequence is unique among live writers; "wx" refuses a leftover of a dead one with the
  // same pid.
  const tmp = join(
    dir,
    `.${basename(path)}.tmp-${process.pid}-${++seq}-${Date.now().toString(36)}`,
  );
  try {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    const fd = openSync(tmp, "wx", mode);
    try {
      const buf = typeof data === "string" ? Buffer.from(data) : data;
      for (let off = 0; off < buf.byteLength; ) off += writeSync(fd, buf, off);
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    renameSync(tmp, path);
    syncDir(dir);
  } catch (err) {
    try {
      rmSync(tmp, { force: true });
    } catch {
      // Nothing more to do: the error below says what failed.
    }
    throw ioError(`cannot write ${path}`, err);
  }
}

function syncDir(dir: string): void {
  const fd = openSync(dir, "r");
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

export function ioError(what: string, err: unknown): CniError {
  const e = err as NodeJS.ErrnoException;
  const message = e.message ?? String(err);
  // Node's message already starts with the code ("ENOSPC: no space left on device, write").
  const code = e.code && !message.startsWith(e.code) ? `${e.code} ` : "";
  return new CniError(Code.IoFailure, `${what}: ${code}${message}`, undefined, { cause: err });
}

/** Removes a file; a missing file is fine (DEL is idempotent, C2.5). */
export async function removeFile(path: string): Promise<void> {
  try {
    // A directory planted at a state file's name (the name is Plexus's own, built from validated
    // names) goes too: refusing would fail every DEL of that container for good. rm never follows
    // a symlink, at the path or inside the tree.
    rmSync(path, { force: true, recursive: true });
  } catch (err) {
    throw ioError(`cannot remove ${path}`, err);
  }
}

const swept = new Set<string>();

/**
 * Removes the temp files that writers killed mid-write (the runtime's SIGKILL at its deadline, B64)
 * left in `dir`: their names carry the writer's pid, and a pid that no longer runs will never
 * rename its file. Once per directory per process; best effort.
 */
export function sweepDeadWriters(dir: string): void {
  if (swept.has(dir)) return;
  swept.add(dir);
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return;
  }
  for (const name of names) {
    const pid = parseTempName(name)?.pid;
    if (!pid || pid === process.pid || isRunning(pid)) continue;
    try {
      rmSync(join(dir, name), { force: true });
    } catch {
      // Another sweeper got it, or the dir is read-only: the next write's sweep tries again.
    }
  }
}

function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
}

/**
 * The state files in `dir` (temp files, which start with '.', left out); a missing dir has none.
 */
export function listStateFiles(dir: string): string[] {
  try {
    return readdirSync(dir).filter((n) => !n.startsWith("."));
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return [];
    throw ioError(`cannot list ${dir}`, err);
  }
}
