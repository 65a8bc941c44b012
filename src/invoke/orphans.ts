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
import { readdirSync, readFileSync } from "node:fs";
import { logCompressorPids } from "../log/rotate";
import { libc } from "./libc";

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
 * Kills every child of Plexus that is not a running delegate (`running`) nor its own log
 * compressor (log/rotate.ts), with its group, until none is left; returns the pids killed (for the
 * log). Zombies are reaped on the way.
 */
export async function killOrphans(running: ReadonlySet<number>): Promise<number[]> {
  const c = libc();
  if (!subreaper || !c) return [];
  const killed: number[] = [];
  for (let round = 0; round < MAX_ROUNDS; round++) {
    const reaped = c.waitpid(-1, null, WNOHANG);
    if (reaped > 0) continue; // a zombie (an orphan that ended): look again
    if (reaped < 0) return killed; // ECHILD: no child at all
    const compressors = logCompressorPids();
    const orphans = childrenOfSelf().filter((pid) => !running.has(pid) && !compressors.has(pid));
    if (orphans.length === 0) return killed; // only running delegates
    for (const pid of orphans) {
      for (const target of [-pid, pid]) {
        try {
          process.kill(target, "SIGKILL");
        } catch {
          // Not a group leader, or gone meanwhile.
        }
      }
      killed.push(pid);
    }
    await new Promise((res) => setTimeout(res, 5));
  }
  return killed;
}

/** Live (not zombie) processes whose parent is this one: the one place /proc is read. */
function childrenOfSelf(): number[] {
  const self = process.pid;
  const out: number[] = [];
  let names: string[];
  try {
    names = readdirSync("/proc");
  } catch {
    return out;
  }
  for (const name of names) {
    const pid = Number(name);
    if (!Number.isInteger(pid) || pid <= 1 || pid === self) continue;
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, "latin1");
      const rest = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      if (Number(rest[1]) === self && rest[0] !== "Z") out.push(pid);
    } catch {
      // Gone meanwhile.
    }
  }
  return out;
}
