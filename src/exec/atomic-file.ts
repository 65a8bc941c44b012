/**
 * Atomic small-file writes for the result cache and the container record (C3.3, M7, B46, B48):
 * temp file in the same directory, fsync, rename, fsync of the directory. A reader sees the old
 * file or the new one, never a torn one; a failed write leaves no temp file behind.
 */
import { mkdir, open, rename, rm } from "node:fs/promises";
import { basename, dirname, join } from "node:path";
import { CniError, Code } from "../cni/errors";

let seq = 0;

export async function writeFileAtomic(path: string, data: string | Uint8Array, mode = 0o600): Promise<void> {
  const dir = dirname(path);
  // pid + sequence is unique among live writers; "wx" refuses a leftover of a dead one with the same pid.
  const tmp = join(dir, `.${basename(path)}.tmp-${process.pid}-${++seq}-${Date.now().toString(36)}`);
  try {
    await mkdir(dir, { recursive: true, mode: 0o700 });
    const fh = await open(tmp, "wx", mode);
    try {
      await fh.writeFile(data);
      await fh.sync();
    } finally {
      await fh.close();
    }
    await rename(tmp, path);
    await syncDir(dir);
  } catch (err) {
    await rm(tmp, { force: true }).catch(() => {});
    throw ioError(`cannot write ${path}`, err);
  }
}

async function syncDir(dir: string): Promise<void> {
  const fh = await open(dir, "r");
  try {
    await fh.sync();
  } finally {
    await fh.close();
  }
}

export function ioError(what: string, err: unknown): CniError {
  const e = err as NodeJS.ErrnoException;
  return new CniError(Code.IoFailure, `${what}: ${e.code ? `${e.code} ` : ""}${e.message ?? String(err)}`);
}

/** Removes a file; a missing file is fine (DEL is idempotent, C2.5). */
export async function removeFile(path: string): Promise<void> {
  try {
    await rm(path, { force: true });
  } catch (err) {
    throw ioError(`cannot remove ${path}`, err);
  }
}
