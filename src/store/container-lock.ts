/**
 * One container's lock (B64, B81): ADD, DEL, CHECK and GC of a (container, interface) take
 * `<cniDir>/locks/<name>.lock` with flock(2), so two calls for one container never interleave (an
 * ADD's rollback deleting what a concurrent ADD made; a DEL finishing while an ADD still attaches).
 *
 * Every delegate inherits the locked descriptor (as its fd 3): the lock is released only when the
 * last process holding it exits. A runtime that SIGKILLs Plexus at its deadline leaves the running
 * delegate alive; the DEL that follows cannot take the lock while that delegate could still create
 * its interface or reserve its IP. A waiter that finds the lock's taker dead first gives the
 * orphaned delegates ORPHAN_GRACE_MS to finish on their own (a delegate killed half-way through
 * its own bookkeeping, host-local between creating an IP's reservation file and writing the
 * container into it, leaves state its DEL cannot match), then kills the processes that still hold
 * that dead call's lock (the orphaned delegates and their children, with their process groups),
 * so a hung one holds the DEL up for the grace only. The lock file names its owner (pid, verb, and
 * a random mark every delegate carries as PLEXUS_CALL), for messages and for an admin's `ps`.
 *
 * Taking the lock writes the owner into the file. Should that write fail (a full cniDir), the call
 * keeps the lock without an owner (its leftovers are still found by the lock) and goes on: a DEL
 * that writes nothing succeeds on a full disk, an ADD fails with 5 when it writes its record,
 * before any delegate runs, and its lock file goes as it releases the lock.
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
  readlinkSync,
  statSync,
  unlinkSync,
  writeSync,
} from "node:fs";
import { basename, dirname, join } from "node:path";
import { CniError, Code } from "../cni/errors";
import type { Logger } from "../log/logger";
import { killProcessAndGroup } from "../sys/kill";
import { libc } from "../sys/libc";
import { otherProcessIds, readProcStat } from "../sys/proc";
import { ioError } from "./atomic-file";
import { readSharedFile } from "./shared-file";
import { stateFileName } from "./state-names";

const LOCK_EX = 2;
const LOCK_NB = 4;
const POLL_MS = 20;
const ORPHAN_SCAN_MS = 500;
/**
 * How long orphaned delegates may run on before a waiter kills them: a delegate's usual run, with
 * room.
 */
const ORPHAN_GRACE_MS = 1000;
/** The owner is a short JSON line; anything larger is not one. */
const OWNER_MAX_BYTES = 4096;

/** A held lock. */
export interface ContainerLock {
  /** The locked descriptor, for delegates to inherit (undefined: no flock here). */
  readonly fd: number | undefined;
  /** The call's mark, set as PLEXUS_CALL in every delegate's environment (undefined: no lock). */
  readonly marker?: string;
  /** Unlocks; with `remove`, first unlinks the file (the container has no state left). */
  release(options: { remove: boolean }): void;
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
  /**
   * False for housekeeping on another container's behalf (a pending DEL's retry, GC): it never
   * kills a dead call's delegates (its short wait could not give them their grace), it only finds
   * the lock busy and tries again later; the runtime's own call for the container does the killing.
   */
  killsOrphans?: boolean;
}

export type LockFactory = (request: LockRequest) => Promise<ContainerLock>;

export function lockPath(cniDir: string, containerId: string, ifName: string): string {
  return join(cniDir, "locks", stateFileName([containerId, ifName], ".lock"));
}

/** The container lock with flock where the runtime has it (the executable), else a no-op. */
export const acquireContainerLock: LockFactory = async (request) => {
  const flock = libc()?.flock;
  if (!flock) return NO_LOCK;
  const path = lockPath(request.cniDir, request.containerId, request.ifName);
  // A dead owner's leftovers are killed once the grace has passed (never later than the grace
  // before this call's own deadline), then /proc is read for them every ORPHAN_SCAN_MS.
  let scanAt =
    request.killsOrphans === false
      ? Number.POSITIVE_INFINITY
      : Math.min(Date.now() + ORPHAN_GRACE_MS, request.deadlineAt - ORPHAN_GRACE_MS);
  for (;;) {
    const fd = openLockFile(path);
    if (flock(fd, LOCK_EX | LOCK_NB) === 0) {
      // The file may have been removed (by the holder that finished) after we opened it: then
      // this lock is on a dead inode, and the next caller would lock a new file. Start over.
      if (sameFile(fd, path)) return heldLock(fd, path, request);
      closeSync(fd);
      continue;
    }
    closeSync(fd);
    if (Date.now() >= scanAt) {
      killOrphans(path, request.log);
      scanAt = Date.now() + ORPHAN_SCAN_MS;
    }
    if (Date.now() >= request.deadlineAt) {
      const owner = readOwner(path);
      throw new CniError(
        Code.TryAgainLater,
        `container ${request.containerId} (${request.ifName}) is busy: ` +
          `${owner ? `${owner.verb} by pid ${owner.pid}` : "another call"} holds its lock ` +
          `${path}; try again`,
      );
    }
    await new Promise((res) => setTimeout(res, POLL_MS));
  }
};

export const NO_LOCK: ContainerLock = { fd: undefined, release: () => {} };

/**
 * B44, B45: an unusable cniDir is an I/O error (5) naming the path, before any delegate runs.
 * Whatever sits at the path is input: a symlink is not followed (the owner written into the lock
 * file would truncate its target) and a FIFO is opened without waiting. Plexus only ever makes a
 * regular file under this name, so anything else there is removed once and the file made afresh.
 */
function openLockFile(path: string): number {
  const flags = constants.O_RDWR | constants.O_CREAT | constants.O_NOFOLLOW | constants.O_NONBLOCK;
  for (let attempt = 0; ; attempt++) {
    let fd: number | undefined;
    try {
      mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
      fd = openSync(path, flags, 0o600);
      if (fstatSync(fd).isFile()) return fd;
      closeSync(fd);
    } catch (err) {
      if (fd !== undefined) closeSync(fd);
      // ELOOP: a symlink (O_NOFOLLOW); ENXIO: a unix socket.
      const code = (err as NodeJS.ErrnoException).code;
      if (attempt > 0 || (code !== "ELOOP" && code !== "ENXIO"))
        throw ioError(`cannot take the container's lock ${path}`, err);
    }
    if (attempt > 0)
      throw ioError(`cannot take the container's lock ${path}`, new Error("not a regular file"));
    removePlanted(path);
  }
}

/** Removes what is at the lock path (the name, never a symlink's target); gone already is fine. */
function removePlanted(path: string): void {
  try {
    unlinkSync(path);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "ENOENT")
      throw ioError(`cannot take the container's lock ${path}: it is not a regular file`, err);
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
  /** The PLEXUS_CALL value of the owner's delegates (absent in files of older Plexus versions). */
  marker?: string;
}

/** The environment variable that marks a delegate (and what it starts) as this call's. */
export const CALL_MARK_ENV = "PLEXUS_CALL";

function heldLock(fd: number, path: string, request: LockRequest): ContainerLock {
  const marker = crypto.randomUUID();
  const buf = Buffer.from(
    JSON.stringify({ pid: process.pid, verb: request.verb, marker } satisfies Owner),
  );
  try {
    ftruncateSync(fd, 0);
    writeSync(fd, buf, 0, buf.byteLength, 0);
  } catch (err) {
    const e = ioError(`cannot write the owner of the container's lock ${path}`, err);
    request.log.warn(
      { err: e.message },
      "holding the container's lock without naming its owner in the lock file",
    );
  }
  return {
    fd,
    marker,
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

/**
 * The owner named in the lock file, read as any shared file is (never blocking on a FIFO planted
 * there).
 */
function readOwner(path: string): Owner | undefined {
  const file = readSharedFile(path, { maxBytes: OWNER_MAX_BYTES });
  if (file.state !== "found") return undefined;
  try {
    const v = JSON.parse(file.data.toString("utf8")) as Partial<Owner>;
    if (typeof v.pid !== "number" || typeof v.verb !== "string") return undefined;
    return typeof v.marker === "string"
      ? { pid: v.pid, verb: v.verb, marker: v.marker }
      : { pid: v.pid, verb: v.verb };
  } catch {
    return undefined;
  }
}

/**
 * Running: not gone, and not a zombie nobody has reaped yet (a killed Plexus whose runtime is slow
 * to wait).
 */
function alive(pid: number): boolean {
  const stat = readProcStat(pid);
  return stat !== undefined && stat.state !== "Z";
}

/**
 * The owner was killed (the runtime's deadline) while a delegate ran: that delegate and its
 * children hold the lock through their inherited descriptor and may still attach. They are found
 * by the lock itself, not by a path string nor by their environment: a process whose descriptor
 * is the lock file (the same device and inode, however cniDir was spelt: through a symlink or
 * relative) and holds the flock (its /proc/<pid>/fdinfo lists it) taken by a process that is no
 * longer running is that dead call's leftover, whatever its environment says (a delegate that
 * clears it cannot wedge the pod). /proc/locks names the lock's taker but not who holds it now,
 * so fdinfo is what tells. Each is killed with its process group, so that the waiting DEL tears
 * down from the record with nothing racing it; a live call's lock (its taker running) and another
 * Plexus are never touched.
 */
function killOrphans(path: string, log: Logger): void {
  let target: { dev: number; ino: number };
  try {
    target = statSync(path);
  } catch {
    return;
  }
  // While the lock's taker runs, nothing holding the lock is a dead call's leftover: one read of
  // /proc/locks spares the walk over every process's descriptors on each wait.
  if (takerRunning(target)) return;
  const killed: number[] = [];
  for (const pid of deadLockHolders(basename(path), target)) {
    if (killProcessAndGroup(pid)) killed.push(pid);
  }
  if (killed.length) {
    const owner = readOwner(path);
    log.warn(
      { ownerPid: owner?.pid, verb: owner?.verb, killed },
      "the call holding this container's lock was killed; killed the delegates it left running",
    );
  }
}

/** `<n>: FLOCK <kind> WRITE <pid> <major>:<minor>:<inode> …` of /proc/locks (`->` lines wait). */
const PROC_LOCKS_FLOCK =
  /^\d+:\s+FLOCK\s+\S+\s+WRITE\s+(-?\d+)\s+([0-9a-f]+):([0-9a-f]+):(\d+)\s/gm;
/**
 * /proc/locks lists every lock of the node: larger than this, it is not read (the walk decides).
 */
const PROC_LOCKS_MAX_BYTES = 4 * 1024 * 1024;

/**
 * Whether /proc/locks names a running taker for the flock on `target` (the same rule as
 * holdsDeadLock's, read once for the file instead of per descriptor). False when it names none,
 * or cannot be read: then the walk decides.
 */
function takerRunning(target: { dev: number; ino: number }): boolean {
  const file = readSharedFile("/proc/locks", { maxBytes: PROC_LOCKS_MAX_BYTES });
  if (file.state !== "found") return false;
  for (const m of file.data.toString("latin1").matchAll(PROC_LOCKS_FLOCK)) {
    const dev = deviceNumber(Number.parseInt(m[2]!, 16), Number.parseInt(m[3]!, 16));
    if (Number(m[4]) !== target.ino || dev !== target.dev) continue;
    const taker = Number(m[1]);
    return taker > 0 && alive(taker);
  }
  return false;
}

/** stat(2)'s st_dev from a major and minor number, as glibc's makedev composes it. */
function deviceNumber(major: number, minor: number): number {
  return (
    (minor & 0xff) +
    (major & 0xfff) * 0x100 +
    Math.floor(minor / 0x100) * 0x100000 +
    Math.floor(major / 0x1000) * 0x100000000000
  );
}

/** Processes other than Plexus holding the flock on the file `target` whose taker is dead. */
function deadLockHolders(name: string, target: { dev: number; ino: number }): number[] {
  const self = safeReadlink("/proc/self/exe");
  const out: number[] = [];
  for (const pid of otherProcessIds()) {
    const fds = safeReaddir(`/proc/${pid}/fd`);
    const holds = fds.some((fd) => holdsDeadLock({ pid, fd, name, target }));
    if (holds && safeReadlink(`/proc/${pid}/exe`) !== self) out.push(pid);
  }
  return out;
}

interface FdQuery {
  pid: number;
  fd: string;
  name: string;
  target: { dev: number; ino: number };
}

function holdsDeadLock(query: FdQuery): boolean {
  // The link's file name is only a cheap first filter (it is the same however cniDir was
  // reached); the identity is the inode, and the lock.
  const link = safeReadlink(`/proc/${query.pid}/fd/${query.fd}`);
  if (link === undefined || !(link === query.name || link.endsWith(`/${query.name}`))) return false;
  try {
    const st = statSync(`/proc/${query.pid}/fd/${query.fd}`);
    if (st.ino !== query.target.ino || st.dev !== query.target.dev) return false;
  } catch {
    return false;
  }
  const taker = flockTaker(`/proc/${query.pid}/fdinfo/${query.fd}`, query.target.ino);
  return taker !== undefined && (taker <= 0 || !alive(taker));
}

/** `lock: <n>: FLOCK <kind> WRITE <pid> <major>:<minor>:<inode> …`, pid and inode captured. */
const FDINFO_FLOCK =
  /^lock:\s+\d+:\s+FLOCK\s+\S+\s+WRITE\s+(-?\d+)\s+[0-9a-f]+:[0-9a-f]+:(\d+)\s/gm;

/**
 * The pid that took the flock this descriptor holds (`lock: 1: FLOCK ADVISORY WRITE <pid>
 * <maj>:<min>:<ino> 0 EOF`; 0 once that pid is gone), or undefined when it holds none.
 */
function flockTaker(fdinfo: string, ino: number): number | undefined {
  // fdinfo reports a size of 0: read to the end, as the shared-file reader does.
  const file = readSharedFile(fdinfo, { maxBytes: 64 * 1024 });
  if (file.state !== "found") return undefined;
  for (const m of file.data.toString("latin1").matchAll(FDINFO_FLOCK)) {
    if (Number(m[2]) === ino) return Number(m[1]);
  }
  return undefined;
}

function safeReaddir(dir: string): string[] {
  try {
    return readdirSync(dir);
  } catch {
    return [];
  }
}

function safeReadlink(path: string): string | undefined {
  try {
    return readlinkSync(path);
  } catch {
    return undefined;
  }
}
