/**
 * A memory cgroup for one test process, as a container's memory limit is: a child of this process's
 * own memory cgroup (v1 `memory` hierarchy or the v2 unified one), with a limit, whose memory.stat
 * the test reads while the process runs (the page cache it charges, dirty and under writeback).
 */
import { spawn } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, rmdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";

export interface MemoryCgroup {
  path: string;
  version: 1 | 2;
  /** Bytes of page cache dirty or under writeback now. */
  dirtyBytes(): number;
  /** The highest usage the kernel recorded (v1), or undefined (v2 before 6.x has no peak). */
  peakBytes(): number | undefined;
  remove(): void;
}

function ownCgroupDir(): { dir: string; version: 1 | 2 } | undefined {
  const lines = readFileSync("/proc/self/cgroup", "utf8").split("\n");
  const v1 = lines.find((l) => /^\d+:([^:]*,)?memory(,[^:]*)?:/.test(l));
  if (v1) return { dir: join("/sys/fs/cgroup/memory", v1.split(":")[2]!), version: 1 };
  const v2 = lines.find((l) => l.startsWith("0::"));
  if (v2 && existsSync("/sys/fs/cgroup/cgroup.controllers"))
    return { dir: join("/sys/fs/cgroup", v2.slice(3)), version: 2 };
  return undefined;
}

function statField(path: string, names: readonly string[]): number {
  const stat = readFileSync(join(path, "memory.stat"), "utf8");
  let sum = 0;
  for (const name of names) sum += Number(new RegExp(`^${name} (\\d+)$`, "m").exec(stat)?.[1] ?? 0);
  return sum;
}

/** A new memory cgroup limited to `limitBytes`, or the reason none can be made here. */
export function makeMemoryCgroup(name: string, limitBytes: number): MemoryCgroup | string {
  const own = ownCgroupDir();
  if (!own) return "no memory cgroup controller in /proc/self/cgroup";
  const path = join(own.dir, name);
  try {
    mkdirSync(path);
    const limitFile = own.version === 1 ? "memory.limit_in_bytes" : "memory.max";
    writeFileSync(join(path, limitFile), String(limitBytes));
  } catch (err) {
    return `cannot make a memory cgroup under ${own.dir}: ${(err as Error).message}`;
  }
  const dirty = own.version === 1 ? ["dirty", "writeback"] : ["file_dirty", "file_writeback"];
  return {
    path,
    version: own.version,
    dirtyBytes: () => statField(path, dirty),
    peakBytes: () => {
      if (own.version !== 1) return undefined;
      return Number(readFileSync(join(path, "memory.max_usage_in_bytes"), "utf8"));
    },
    remove: () => {
      try {
        rmdirSync(path);
      } catch {
        // Still charged pages or tasks: the kernel frees it with its parent; nothing of ours runs.
      }
    },
  };
}

/**
 * Runs `argv` inside `cg` (the shell joins it, then execs), sampling the cgroup's dirty page cache
 * every millisecond. Resolves with the exit status, stderr and the highest dirty figure seen.
 */
export function runInCgroup(
  cg: MemoryCgroup,
  argv: readonly string[],
  options: { env: Record<string, string>; timeoutMs: number },
): Promise<{ status: number | null; stderr: string; maxDirtyBytes: number; ms: number }> {
  const script = `echo $$ > '${cg.path}/cgroup.procs' && exec "$@"`;
  const child = spawn("sh", ["-c", script, "sh", ...argv], {
    env: options.env,
    cwd: "/",
    stdio: ["ignore", "ignore", "pipe"],
  });
  let stderr = "";
  child.stderr.on("data", (b: Buffer) => {
    stderr += b.toString();
  });
  let maxDirtyBytes = 0;
  const sample = setInterval(() => {
    maxDirtyBytes = Math.max(maxDirtyBytes, cg.dirtyBytes());
  }, 1);
  const killer = setTimeout(() => child.kill("SIGKILL"), options.timeoutMs);
  const started = performance.now();
  return new Promise((resolve, reject) => {
    child.on("error", reject);
    child.on("close", (status) => {
      clearInterval(sample);
      clearTimeout(killer);
      resolve({ status, stderr, maxDirtyBytes, ms: performance.now() - started });
    });
  });
}
