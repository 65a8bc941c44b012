/**
 * Run by Bun (the runtime that ships) from the unit tests of src/sys and the runner: under Node
 * there is no bun:ffi, so libc, the subreaper and Bun.spawn are only reachable here. Prints one
 * JSON document with what it saw; `argv[2]` names the case.
 */
import { execFileSync, spawn } from "node:child_process";
import { mkdtempSync, openSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { readProcStat } from "../../../src/sys/proc";

const LOCK_EX = 2;
const LOCK_NB = 4;
const WNOHANG = 1;
const PR_SET_CHILD_SUBREAPER = 36;

/** Running: a killed process not yet reaped (a zombie) is not. */
function alive(pid: number): boolean {
  const stat = readProcStat(pid);
  return stat !== undefined && stat.state !== "Z";
}

/** Counts dlopen calls: patched before src/sys/libc.ts first asks bun:ffi for it. */
function countDlopen(): { calls: number } {
  const ffi = require("bun:ffi") as { dlopen: (...args: unknown[]) => unknown };
  const counter = { calls: 0 };
  const original = ffi.dlopen;
  ffi.dlopen = (...args: unknown[]) => {
    counter.calls++;
    return original(...args);
  };
  return counter;
}

async function libcCase(): Promise<Record<string, unknown>> {
  const counter = countDlopen();
  const { libc } = await import("../../../src/sys/libc");
  const beforeUse = counter.calls;
  const lib = libc()!;
  const again = libc();
  const dir = mkdtempSync(join(tmpdir(), "plx-libc-"));
  try {
    const first = openSync(join(dir, "f.lock"), "w");
    const second = openSync(join(dir, "f.lock"), "r");
    const locked = lib.flock(first, LOCK_EX | LOCK_NB);
    const busy = lib.flock(second, LOCK_EX | LOCK_NB);
    const busyErrno = lib.errno();
    const badClose = lib.close(-1);
    const badCloseErrno = lib.errno();
    const noChild = lib.waitpid(-1, null, WNOHANG);
    const noChildErrno = lib.errno();
    return {
      beforeUse,
      afterUse: counter.calls,
      same: lib === again,
      locked,
      busy,
      busyErrno,
      badClose,
      badCloseErrno,
      noChild,
      noChildErrno,
      loIndex: lib.if_nametoindex(Buffer.from("lo\0")),
      subreaper: lib.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0),
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Starts `sleep` in a session of its own from a shell that exits at once: an orphan's shape. */
function leaveOrphan(): number {
  const out = execFileSync("sh", ["-c", "setsid sleep 30 </dev/null >/dev/null 2>&1 & echo $!"]);
  return Number(out.toString().trim());
}

/**
 * A delegate run through the runner that ships (runProcessBun over Bun.spawn) leaves an orphan;
 * a child this process started itself is given as spared, as the log's compressors are.
 */
async function runnerCase(): Promise<Record<string, unknown>> {
  const { runProcessBun } = await import("../../../src/invoke/spawn-bun");
  const { bunSpawn } = await import("../../../src/sys/runtime");
  const spared = spawn("sleep", ["30"], { detached: true, stdio: "ignore" });
  const sparedPid = spared.pid!;
  let left = 0;
  try {
    const outcome = await runProcessBun(
      bunSpawn()!,
      {
        path: "/bin/sh",
        stdin: Buffer.from("setsid sleep 30 </dev/null >/dev/null 2>&1 & echo $!\n"),
        env: { PATH: "/usr/bin:/bin" },
        deadlineMs: 10_000,
        what: "a delegate that leaves an orphan",
      },
      {
        maxStdoutBytes: 1024,
        maxStderrBytes: 1024,
        pipeGraceMs: 200,
        sparePids: new Set([sparedPid]),
      },
    );
    left = Number(outcome.stdout.toString().trim());
    const killed = outcome.orphansKilled ?? [];
    const result = { exitCode: outcome.exitCode, left, killed, sparedPid };
    return { ...result, sparedAlive: alive(sparedPid), leftAlive: alive(left) };
  } finally {
    for (const pid of [sparedPid, left]) if (pid > 1 && alive(pid)) process.kill(pid, "SIGKILL");
  }
}

/** The reaper on its own: kills the orphans it is not told to spare, and only those. */
async function orphansCase(): Promise<Record<string, unknown>> {
  const { becomeSubreaper, killOrphans } = await import("../../../src/invoke/orphans");
  const subreaper = becomeSubreaper();
  const spare = leaveOrphan();
  const other = leaveOrphan();
  try {
    const killed = await killOrphans((pid) => pid === spare);
    return { subreaper, spare, other, killed, spareAlive: alive(spare), otherAlive: alive(other) };
  } finally {
    for (const pid of [spare, other]) if (alive(pid)) process.kill(pid, "SIGKILL");
  }
}

/** What the runtime seam offers under `bun` running the source (not the compiled executable). */
async function runtimeCase(): Promise<Record<string, unknown>> {
  const runtime = await import("../../../src/sys/runtime");
  runtime.setJitPolicy(1);
  return {
    standalone: runtime.isStandaloneExecutable(),
    own: runtime.ownExecutablePath() ?? null,
    spawn: typeof runtime.bunSpawn(),
    connect: typeof runtime.bunConnect(),
    fetch: typeof runtime.bunFetch(),
    dlopen: typeof runtime.bunFfi()?.dlopen,
  };
}

const cases: Record<string, () => Promise<Record<string, unknown>>> = {
  runtime: runtimeCase,
  libc: libcCase,
  runner: runnerCase,
  orphans: orphansCase,
};

const run = cases[process.argv[2] ?? ""];
if (!run) throw new Error(`unknown case ${process.argv[2]}`);
process.stdout.write(`${JSON.stringify(await run())}\n`);
