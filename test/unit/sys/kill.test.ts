/**
 * src/sys/kill.ts, the one way Plexus SIGKILLs what a delegate leaves: real process groups made
 * here, and the pids kill(2) would read as "every process" or "this group" refused.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { afterEach, describe, expect, it, vi } from "vitest";
import { killGroup, killProcessAndGroup } from "../../../src/sys/kill";
import { otherProcessIds, readProcStat } from "../../../src/sys/proc";

const started: ChildProcess[] = [];

/** Running: gone and zombie (killed, not yet reaped) are not. */
function alive(pid: number): boolean {
  const stat = readProcStat(pid);
  return stat !== undefined && stat.state !== "Z";
}

async function until(cond: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 400 && !cond(); i++) await new Promise((r) => setTimeout(r, 5));
  expect(cond(), what).toBe(true);
}

/** A shell leading its own group with two sleeps in it; resolves once all three are there. */
async function group(): Promise<{ leader: number; members: number[] }> {
  const sh = spawn("sh", ["-c", "sleep 30 & sleep 30 & wait"], { detached: true, stdio: "ignore" });
  started.push(sh);
  const leader = sh.pid!;
  const members = () => otherProcessIds().filter((pid) => readProcStat(pid)?.pgid === leader);
  await until(() => members().length === 3, "the shell and its two sleeps");
  return { leader, members: members() };
}

/** A child in this process's own group: it leads none. */
async function loner(): Promise<number> {
  const child = spawn("sleep", ["30"], { stdio: "ignore" });
  started.push(child);
  await new Promise((resolve) => child.once("spawn", resolve));
  return child.pid!;
}

afterEach(() => {
  vi.restoreAllMocks();
  for (const child of started.splice(0)) {
    try {
      process.kill(-child.pid!, "SIGKILL");
    } catch {
      child.kill("SIGKILL");
    }
  }
});

describe("killGroup", () => {
  it("B52 kills every process of the group, also those the leader started", async () => {
    const { leader, members } = await group();
    expect(killGroup(leader)).toBe(true);
    await until(() => !members.some(alive), "every member of the group gone");
  });

  it("a pid that leads no group: false, and the process lives on", async () => {
    const pid = await loner();
    expect(killGroup(pid)).toBe(false);
    expect(alive(pid)).toBe(true);
  });
});

describe("killProcessAndGroup", () => {
  it("B64 B81 a group leader: it and its group are killed", async () => {
    const { leader, members } = await group();
    expect(killProcessAndGroup(leader)).toBe(true);
    await until(() => !members.some(alive), "every member of the group gone");
  });

  it("B64 B81 a process that leads no group (it left or never had one): the process is killed", async () => {
    const pid = await loner();
    expect(killProcessAndGroup(pid)).toBe(true);
    await until(() => !alive(pid), "the process gone");
  });

  it("a process that is gone: false", async () => {
    const gone = spawn("true");
    await new Promise((resolve) => gone.once("exit", resolve));
    expect(killProcessAndGroup(gone.pid!)).toBe(false);
  });
});

describe("pids that are never signalled", () => {
  it("0, 1, negative, fractional and this process's own: refused without calling kill(2)", () => {
    // Spied, so that a broken guard signals nothing: kill(-1) would reach every process.
    const kill = vi.spyOn(process, "kill").mockImplementation(() => true);
    for (const pid of [0, 1, -1, -42, 2.5, Number.NaN, process.pid]) {
      expect(killGroup(pid), `killGroup(${pid})`).toBe(false);
      expect(killProcessAndGroup(pid), `killProcessAndGroup(${pid})`).toBe(false);
    }
    expect(kill).not.toHaveBeenCalled();
  });
});
