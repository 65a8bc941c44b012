/**
 * The processes of the node as /proc shows them, read one way by every caller: which processes
 * there are, and each one's `/proc/<pid>/stat` line (proc_pid_stat(5)).
 */
import { readdirSync, readFileSync } from "node:fs";

/** The fields of `/proc/<pid>/stat` that Plexus reads. */
export interface ProcStat {
  pid: number;
  /** The command name: any bytes but NUL, spaces and parentheses included (read as latin1). */
  comm: string;
  /** R, S, D, Z (a zombie nobody has reaped yet), T, … */
  state: string;
  ppid: number;
  pgid: number;
  /** When the process started, in clock ticks after boot: with the pid, names one process. */
  starttime: number;
}

/** Fields after `comm`, counted from `state` (field 3 of proc_pid_stat(5)). */
const AFTER_COMM = { state: 0, ppid: 1, pgid: 2, starttime: 19 } as const;

/**
 * Parses one `/proc/<pid>/stat` line; undefined when it is not one. `comm` is printed as it is,
 * between parentheses, and may itself hold `) (` or digits: the last `)` of the line ends it (no
 * field after it can hold one).
 */
export function parseProcStat(line: string): ProcStat | undefined {
  const open = line.indexOf(" (");
  const close = line.lastIndexOf(")");
  if (open < 1 || close < open + 2 || line[close + 1] !== " ") return undefined;
  const pid = integer(line.slice(0, open));
  const rest = line.slice(close + 2).split(" ");
  const state = rest[AFTER_COMM.state] ?? "";
  const ppid = integer(rest[AFTER_COMM.ppid]);
  const pgid = integer(rest[AFTER_COMM.pgid]);
  const starttime = integer(rest[AFTER_COMM.starttime]);
  if (pid === undefined || ppid === undefined || pgid === undefined) return undefined;
  if (starttime === undefined || !/^[A-Za-z]$/.test(state)) return undefined;
  return { pid, comm: line.slice(open + 2, close), state, ppid, pgid, starttime };
}

function integer(text: string | undefined): number | undefined {
  if (text === undefined || !/^-?\d+$/.test(text)) return undefined;
  const value = Number(text);
  return Number.isSafeInteger(value) ? value : undefined;
}

/** The stat of process `pid`; undefined when it is gone (or was never there). */
export function readProcStat(pid: number): ProcStat | undefined {
  try {
    return parseProcStat(readFileSync(`/proc/${pid}/stat`, "latin1"));
  } catch {
    return undefined;
  }
}

/** Every process but init and this one (each may be gone by the time it is looked at). */
export function otherProcessIds(): number[] {
  let names: string[];
  try {
    names = readdirSync("/proc");
  } catch {
    return [];
  }
  const out: number[] = [];
  for (const name of names) {
    const pid = Number(name);
    if (Number.isInteger(pid) && pid > 1 && pid !== process.pid) out.push(pid);
  }
  return out;
}
