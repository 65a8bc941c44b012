/**
 * SIGKILL for what a delegate leaves behind, the one way every caller sends it: the delegate's
 * process group at its deadline (invoke/spawn-bun.ts), an orphan re-parented to Plexus
 * (invoke/orphans.ts), a dead call's delegate that still holds a container's lock
 * (store/container-lock.ts). A process that left the group (setsid) escapes a group kill: those
 * callers find it again by its parent or by the lock, and kill it in turn.
 */

/**
 * Whether `pid` may name a group or a process to kill: never init nor Plexus itself, and never 0
 * or below, which kill(2) reads as "this process's group" or "every process".
 */
function killable(pid: number): boolean {
  return Number.isInteger(pid) && pid > 1 && pid !== process.pid;
}

/** SIGKILLs the process group `pgid`; false when there is none (gone) or it is not one to kill. */
export function killGroup(pgid: number): boolean {
  if (!killable(pgid)) return false;
  try {
    process.kill(-pgid, "SIGKILL");
    return true;
  } catch {
    return false;
  }
}

/**
 * SIGKILLs the process group that `pid` leads, then `pid` itself (it may lead none: then the
 * group kill finds nothing). True when the process itself was still there to be killed.
 */
export function killProcessAndGroup(pid: number): boolean {
  if (!killable(pid)) return false;
  killGroup(pid);
  try {
    process.kill(pid, "SIGKILL");
    return true;
  } catch {
    return false;
  }
}
