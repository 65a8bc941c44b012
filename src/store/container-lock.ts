/**
 * One container's lock (issue 13 R1, R2): ADD, DEL, CHECK and GC of a (container, interface) take
 * `<cniDir>/locks/<name>.lock` with flock(2), so two calls for one container never interleave (an
 * ADD's rollback deleting what a concurrent ADD made; a DEL finishing while an ADD still attaches).
 *
 * Every delegate inherits the locked descriptor (as its fd 3): the lock is released only when the
 * last process holding it exits. A runtime that SIGKILLs Plexus at its deadline leaves the running
 * delegate alive; the DEL that follows cannot take the lock while that delegate could still create
 * its interface or reserve its IP. The lock file names its owner (pid, verb): a waiter that finds
 * the owner dead kills the processes still holding the file open (the orphaned delegates and their
 * children, with their process groups), so the DEL goes on at once instead of waiting for them.
 *
 * flock has no Node or Bun API: the executable (Bun) calls libc's through bun:ffi. Under Node
 * (development and unit tests) there is no lock; the integration and end-to-end tests run the
 * executable.
 */
import {
  closeSync,
  constants,
  fstatSync,
  ftruncateSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  statSync,
  unlinkSync,
  writeSync,
} from "node:fs";
import { dirname, join } from "node:path";
import { CniError, Code } from "../cni/errors";
import type { Logger } from "../log/logger";
import { ioError } from "./atomic-file";
import { stateFileName } from "./state-names";

const LOCK_EX = 2;
const LOCK_NB = 4;
const POLL_MS = 20;

/** A held lock. */
export interface ContainerLock {
  /** The locked descriptor, for delegates to inherit (undefined: no flock here). */
  readonly fd: number | undefined;
  /** Unlocks; with `remove`, first unlinks the file (the container has no state left). */
  release(o: { remove: boolean }): void;
}

export interface LockRequest {
  cniDir: string;
  containerId: string;
  ifName: string;
  /** Epoch ms: past it, a busy lock fails the call with 11 (try again). */
  deadlineAt: number;
  /** ADD, DEL, … for the file's content and messages. */
  verb: string;
  log: Logger;
}

export type LockFactory = (r: LockRequest) => Promise<ContainerLock>;

type Flock = (fd: number, op: number) => number;

let flockFn: Flock | null | undefined;

/** libc's flock through bun:ffi, or null where that is not available (Node). */
function libcFlock(): Flock | null {
  if (flockFn !== undefined) return flockFn;
  flockFn = null;
  if (typeof (globalThis as { Bun?: unknown }).Bun === "undefined") return flockFn;
  try {
    const ffi = require("bun:ffi") as {
      dlopen: (lib: string, s: object) => { symbols: { flock: Flock } };
      FFIType: Record<string, number>;
    };
    const lib = ffi.dlopen("libc.so.6", {
      flock: { args: [ffi.FFIType.i32, ffi.FFIType.i32], returns: ffi.FFIType.i32 },
    });
    flockFn = lib.symbols.flock;
  } catch {
    flockFn = null;
  }
  return flockFn;
}

export function lockPath(cniDir: string, containerId: string, ifName: string): string {
  return join(cniDir, "locks", stateFileName([containerId, ifName], ".lock"));
}

/** The container lock with flock where the runtime has it (the executable), else a no-op. */
export const acquireContainerLock: LockFactory = async (r) => {
  const flock = libcFlock();
  if (!flock) return NO_LOCK;
  const path = lockPath(r.cniDir, r.containerId, r.ifName);
  for (;;) {
    const fd = openLockFile(path);
    if (flock(fd, LOCK_EX | LOCK_NB) === 0) {
      // The file may have been removed (by the holder that finished) after we opened it: then
      // this lock is on a dead inode, and the next caller would lock a new file. Start over.
      if (sameFile(fd, path)) return heldLock(fd, path, r.verb);
      closeSync(fd);
      continue;
    }
    closeSync(fd);
    killOrphans(path, r.log);
    if (Date.now() >= r.deadlineAt) {
      const owner = readOwner(path);
      throw new CniError(
        Code.TryAgainLater,
        `container ${r.containerId} (${r.ifName}) is busy: ${owner ? `${owner.verb} by pid ${owner.pid}` : "another call"} holds its lock ${path}; try again`,
      );
    }
    await new Promise((res) => setTimeout(res, POLL_MS));
  }
};

export const NO_LOCK: ContainerLock = { fd: undefined, release: () => {} };

/** B44, B45: an unusable cniDir is an I/O error (5) naming the path, before any delegate runs. */
function openLockFile(path: string): number {
  try {
    mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
    return openSync(path, constants.O_RDWR | constants.O_CREAT, 0o600);
  } catch (err) {
    throw ioError(`cannot take the container's lock ${path}`, err);
  }
}

function sameFile(fd: number, path: string): boolean {
  try {
    return fstatSync(fd).ino === statSync(path).ino;
  } catch {
    return false;
  }
}

interface Owner {
  pid: number;
  verb: string;
}

function heldLock(fd: number, path: string, verb: string): ContainerLock {
  const buf = Buffer.from(JSON.stringify({ pid: process.pid, verb } satisfies Owner));
  ftruncateSync(fd, 0);
  writeSync(fd, buf, 0, buf.byteLength, 0);
  return {
    fd,
    release: ({ remove }) => {
      if (remove) {
        try {
          unlinkSync(path);
        } catch {
          // Gone already.
        }
      }
      closeSync(fd);
    },
  };
}

function readOwner(path: string): Owner | undefined {
  try {
    const v = JSON.parse(readFileSync(path, "utf8")) as Partial<Owner>;
    return typeof v.pid === "number" && typeof v.verb === "string" ? (v as Owner) : undefined;
  } catch {
    return undefined;
  }
}

/** Running: not gone, and not a zombie nobody has reaped yet (a killed Plexus whose runtime is slow to wait). */
function alive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3) !== "Z";
  } catch {
    return false;
  }
}

/**
 * The owner was killed (the runtime's deadline) while a delegate ran: that delegate and its
 * children hold the lock through their inherited descriptor and may still attach. They are found
 * by the file they hold open and killed with their process groups, so that the waiting DEL tears
 * down from the record with nothing racing it. Another Plexus (a waiter polling the lock) is never
 * killed: only processes running another executable are.
 */
function killOrphans(path: string, log: Logger): void {
  const owner = readOwner(path);
  if (!owner || alive(owner.pid)) return;
  let target: { dev: number; ino: number };
  try {
    target = statSync(path);
  } catch {
    return;
  }
  const killed: number[] = [];
  for (const pid of holders(path, target)) {
    try {
      process.kill(-pid, "SIGKILL");
    } catch {
      // Not a group leader: the process alone.
    }
    try {
      process.kill(pid, "SIGKILL");
      killed.push(pid);
    } catch {
      // Gone meanwhile.
    }
  }
  if (killed.length)
    log.warn(
      { ownerPid: owner.pid, verb: owner.verb, killed },
      "the call holding this container's lock was killed; killed the delegates it left running",
    );
}

/** Processes other than Plexus with `path` open (the inode, not just the name). */
function holders(path: string, target: { dev: number; ino: number }): number[] {
  const self = safeReadlink("/proc/self/exe");
  const out: number[] = [];
  for (const name of safeReaddir("/proc")) {
    const pid = Number(name);
    if (!Number.isInteger(pid) || pid <= 1 || pid === process.pid) continue;
    const fds = safeReaddir(`/proc/${pid}/fd`);
    const holds = fds.some((fd) => {
      const link = safeReadlink(`/proc/${pid}/fd/${fd}`);
      if (link !== path) return false;
      try {
        const st = statSync(`/proc/${pid}/fd/${fd}`);
        return st.ino === target.ino && st.dev === target.dev;
      } catch {
        return false;
      }
    });
    if (holds && safeReadlink(`/proc/${pid}/exe`) !== self) out.push(pid);
  }
  return out;
}

function safeReaddir(dir: string): string[] {
  try {
    return readdirSync(dir);
  } catch {
    return [];
  }
}

function safeReadlink(p: string): string | undefined {
  try {
    return readlinkSync(p);
  } catch {
    return undefined;
  }
}
