/**
 * What a test run leaves on the machine when it is killed (SIGKILL, a CI job's deadline, a
 * developer's Ctrl-C in the wrong place): network namespaces, host links, tmpfs and bind mounts,
 * temp dirs, and processes (a `dist/plexus daemon`, a delegate's `sleep`). Everything a test makes
 * is named with one prefix (`plx`), so the next run can find it. Names say nothing of their owner,
 * so a run sweeps only when no other program that makes such names (a test run from any checkout,
 * one of the project's scripts) is alive on the machine.
 */
import { execFileSync, spawnSync } from "node:child_process";
import { readdirSync, readFileSync, readlinkSync, rmSync } from "node:fs";
import { join } from "node:path";

/** Every namespace, link and temp dir a test makes starts with this (netns.ts's NAME_PREFIX). */
export const TEST_NAME_PREFIX = "plx";

/**
 * Programs that make such names: a test run, and the project's scripts (the soak, the demo, the
 * benchmarks, the build, which records a call in a temp dir of the same prefix).
 */
const USERS = /vitest|scripts\//;

/** The parent pid of a process, or undefined once it is gone. */
function parentOf(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    // The command name (field 2) may hold spaces and parentheses: count from the last ")".
    return Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
  } catch {
    return undefined;
  }
}

/** Whether `pid` is `ancestor` or one of its descendants. */
function descendsFrom(pid: number, ancestor: number): boolean {
  for (let p: number | undefined = pid; p !== undefined && p > 1; p = parentOf(p)) {
    if (p === ancestor) return true;
  }
  return false;
}

/**
 * The pids of other programs alive on this machine that make test names (another test run, from
 * any checkout, or a project script): while one lives, nothing of the prefix is a leftover. This
 * run's own workers and its ancestors (npm, the shell) don't count.
 */
export function otherLiveRuns({ users = USERS }: { users?: RegExp } = {}): number[] {
  const live: number[] = [];
  for (const name of readdirSync("/proc")) {
    const pid = Number(name);
    if (!/^[0-9]+$/.test(name) || descendsFrom(pid, process.pid)) continue;
    if (descendsFrom(process.pid, pid)) continue;
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
      if (stat.slice(stat.lastIndexOf(")") + 2).startsWith("Z")) continue;
      if (users.test(readFileSync(`/proc/${pid}/cmdline`, "utf8"))) live.push(pid);
    } catch {
      // gone meanwhile
    }
  }
  return live;
}

export interface Leftovers {
  processes: string[];
  mounts: string[];
  netns: string[];
  links: string[];
  dirs: string[];
  /** What could not be removed, with the reason. */
  kept: string[];
}

interface SweepScope {
  /** The names' prefix: namespaces and links start with it, temp dirs with `${prefix}-`. */
  prefix: string;
  /** The directory the temp dirs are made in (os.tmpdir()). */
  tmpRoot: string;
}

/** This process and its ancestors: never killed, whatever their arguments say. */
function selfAndAncestors(): Set<number> {
  const pids = new Set<number>();
  for (let p: number | undefined = process.pid; p !== undefined && p > 1; p = parentOf(p)) {
    pids.add(p);
  }
  return pids;
}

/** Whether a process belongs to a test: an argument, its cwd or an environment value names one. */
function processIsOurs({ pid, scope }: { pid: number; scope: SweepScope }): boolean {
  const marks = [join(scope.tmpRoot, `${scope.prefix}-`), `/run/netns/${scope.prefix}`];
  const named = (text: string) => marks.some((mark) => text.includes(mark));
  try {
    if (readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").some(named)) return true;
    if (named(`${readlinkSync(`/proc/${pid}/cwd`)}/`)) return true;
    return readFileSync(`/proc/${pid}/environ`, "utf8").split("\0").some(named);
  } catch {
    return false; // gone meanwhile, or a kernel thread
  }
}

function killOurProcesses(scope: SweepScope, found: Leftovers): void {
  const spared = selfAndAncestors();
  for (const name of readdirSync("/proc")) {
    const pid = Number(name);
    if (!/^[0-9]+$/.test(name) || spared.has(pid) || !processIsOurs({ pid, scope })) continue;
    try {
      process.kill(pid, "SIGKILL");
      found.processes.push(`${pid} ${readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0")[0]}`);
    } catch {
      // ended by itself meanwhile
    }
  }
}

/** Mount points under the scope's temp dirs, deepest first (a mount inside a mount goes first). */
function ourMounts(scope: SweepScope): string[] {
  const root = join(scope.tmpRoot, `${scope.prefix}-`);
  return readFileSync("/proc/self/mountinfo", "utf8")
    .split("\n")
    .map((line) => line.split(" ")[4] ?? "")
    .map(unescapeMountPoint)
    .filter((point) => point.startsWith(root))
    .sort((a, b) => b.length - a.length);
}

/** mountinfo writes a space, tab, newline or backslash in a path as a three-digit octal escape. */
function unescapeMountPoint(point: string): string {
  const octal = (_: string, digits: string) => String.fromCharCode(Number.parseInt(digits, 8));
  return point.replace(/\\([0-7]{3})/g, octal);
}

function unmountOurs(scope: SweepScope, found: Leftovers): void {
  for (const point of ourMounts(scope)) {
    const r = spawnSync("umount", ["-l", point], { encoding: "utf8" });
    if (r.status === 0) found.mounts.push(point);
    else found.kept.push(`mount ${point}: ${r.stderr.trim()}`);
  }
}

function deleteOurLinks(scope: SweepScope, found: Leftovers): void {
  for (const name of spawnSync("ip", ["netns", "list"], { encoding: "utf8" }).stdout.split("\n")) {
    const ns = name.split(" ")[0] ?? "";
    if (!ns.startsWith(scope.prefix)) continue;
    const r = spawnSync("ip", ["netns", "delete", ns], { encoding: "utf8" });
    if (r.status === 0) found.netns.push(ns);
    else found.kept.push(`netns ${ns}: ${r.stderr.trim()}`);
  }
  const shown = execFileSync("ip", ["-j", "link", "show"], { encoding: "utf8" });
  const links = JSON.parse(shown) as Array<{ ifname: string }>;
  for (const { ifname } of links) {
    if (!ifname.startsWith(scope.prefix)) continue;
    // A veth's peer goes with it: the second of a pair is already gone.
    const r = spawnSync("ip", ["link", "delete", ifname], { encoding: "utf8" });
    if (r.status === 0) found.links.push(ifname);
  }
}

function removeOurDirs(scope: SweepScope, found: Leftovers): void {
  const stillMounted = ourMounts(scope);
  for (const name of readdirSync(scope.tmpRoot)) {
    if (!name.startsWith(`${scope.prefix}-`)) continue;
    const dir = join(scope.tmpRoot, name);
    // Never recurse into a mount that is still there: it may hold what is not ours.
    if (stillMounted.some((point) => point === dir || point.startsWith(`${dir}/`))) {
      found.kept.push(`dir ${dir}: a mount under it is still there`);
      continue;
    }
    try {
      rmSync(dir, { recursive: true, force: true });
      found.dirs.push(dir);
    } catch (err) {
      found.kept.push(`dir ${dir}: ${(err as Error).message}`);
    }
  }
}

/**
 * Removes every leftover of the scope: its processes first (they may hold mounts, namespaces and
 * files), then mounts, namespaces, links and temp dirs. Returns what it found.
 */
export function sweepLeftovers(scope: SweepScope): Leftovers {
  const found: Leftovers = { processes: [], mounts: [], netns: [], links: [], dirs: [], kept: [] };
  killOurProcesses(scope, found);
  unmountOurs(scope, found);
  deleteOurLinks(scope, found);
  removeOurDirs(scope, found);
  return found;
}

/** One line per kind that had something, for the run's log. */
export function describeLeftovers(found: Leftovers): string[] {
  return Object.entries(found)
    .filter(([, items]) => items.length > 0)
    .map(([kind, items]) => `${kind} (${items.length}): ${items.slice(0, 10).join(", ")}`);
}
