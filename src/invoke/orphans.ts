/**
 * No process a delegate starts may outlive the Plexus call that ran it (B52, B63): a grandchild
 * that left the delegate's process group (`setsid`) escapes the deadline's group kill, and could
 * attach an interface or take an IP after the call rolled back.
 *
 * Plexus makes itself the child subreaper (prctl PR_SET_CHILD_SUBREAPER) before its first
 * delegate: every orphan a delegate leaves is then re-parented to Plexus, not to init. After each
 * delegate ends, `waitpid(-1, WNOHANG)` tells, without reading /proc, whether Plexus has any child
 * left (no delegate runs then: they run one at a time): "none" is the usual answer and costs one
 * system call. Only when one is left is /proc read, for the processes whose parent is Plexus, and
 * each is SIGKILLed with its process group; their own children become Plexus's in turn, so this
 * repeats until none is left (bounded).
 */
import { killProcessAndGroup } from "../sys/kill";
import { libc } from "../sys/libc";
import { otherProcessIds, readProcStat } from "../sys/proc";

const PR_SET_CHILD_SUBREAPER = 36;
const WNOHANG = 1;
const MAX_ROUNDS = 50;

let subreaper: boolean | undefined;

/** Once per process; false where it cannot be (Node, no libc): then nothing is re-parented here. */
export function becomeSubreaper(): boolean {
  if (subreaper !== undefined) return subreaper;
  const c = libc();
  subreaper = c !== null && c.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) === 0;
  return subreaper;
}

/**
 * Kills every child of Plexus that is not `spared` (the running delegates, and children the caller
 * started itself: the log's compressors), with its group, until none is left; returns the pids
 * killed (for the log). Zombies are reaped on the way.
 */
export async function killOrphans(spared: (pid: number) => boolean): Promise<number[]> {
  const c = libc();
  if (!subreaper || !c) return [];
  const killed: number[] = [];
  for (let round = 0; round < MAX_ROUNDS; round++) {
    const reaped = c.waitpid(-1, null, WNOHANG);
    if (reaped > 0) continue; // a zombie (an orphan that ended): look again
    if (reaped < 0) return killed; // ECHILD: no child at all
    const orphans = childrenOfSelf().filter((pid) => !spared(pid));
    if (orphans.length === 0) return killed; // only spared ones
    for (const pid of orphans) {
      killProcessAndGroup(pid);
      killed.push(pid);
    }
    await new Promise((res) => setTimeout(res, 5));
  }
  return killed;
}

/** Live (not zombie) processes whose parent is this one. */
function childrenOfSelf(): number[] {
  return otherProcessIds().filter((pid) => {
    const stat = readProcStat(pid);
    return stat !== undefined && stat.ppid === process.pid && stat.state !== "Z";
  });
}
