/**
 * src/sys/proc.ts: the one reader of /proc's processes and the one parser of `/proc/<pid>/stat`,
 * on the kernel's own lines (a child whose command name holds `) (`) and on generated ones.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import fc from "fast-check";
import { afterEach, describe, expect, it } from "vitest";
import { otherProcessIds, parseProcStat, readProcStat } from "../../../src/sys/proc";

/** A stat line as the kernel prints it: 52 fields, `comm` between parentheses, unescaped. */
function statLine(line: {
  pid: number;
  comm: string;
  state: string;
  ppid: number;
  pgid: number;
  starttime: number;
}): string {
  const middle = Array.from({ length: 16 }, (_, i) => String(i * 7)); // session … nice, itrealvalue
  const tail = Array.from({ length: 30 }, (_, i) => String(i + 1)); // vsize … exit_code
  const fields = [line.state, line.ppid, line.pgid, ...middle, line.starttime, ...tail];
  return `${line.pid} (${line.comm}) ${fields.join(" ")}\n`;
}

describe("parseProcStat", () => {
  it("reads pid, comm, state, ppid, pgid and starttime of a stat line", () => {
    const fields = { pid: 4242, comm: "bridge", state: "S", ppid: 17, pgid: 4242, starttime: 9 };
    expect(parseProcStat(statLine(fields))).toEqual(fields);
  });

  it("the last ')' ends comm: spaces, parentheses and digits inside it are its own", () => {
    for (const comm of ["a) (b 1 2", ") S 1 2 3 (", "(sd-pam)", "", " ", "x)"]) {
      const fields = { pid: 7, comm, state: "R", ppid: 1, pgid: 7, starttime: 123456 };
      expect(parseProcStat(statLine(fields)), JSON.stringify(comm)).toEqual(fields);
    }
  });

  it("anything that is not a stat line is undefined, never a wrong answer", () => {
    const good = statLine({ pid: 7, comm: "x", state: "S", ppid: 1, pgid: 7, starttime: 5 });
    for (const line of [
      "",
      "garbage",
      "7 (x",
      "(x) S 1 7",
      "7 (x) S",
      "7 (x)S 1 7",
      "seven (x) S 1 7 0",
      good.replace(") S 1 7", ") S one 7"),
      good.replace(") S 1 7", ") SS 1 7"),
      good.replace(") S 1 7", ") S 1 99999999999999999999"),
      good.split(" ").slice(0, 20).join(" "),
    ])
      expect(parseProcStat(line), JSON.stringify(line)).toBeUndefined();
  });

  it("generated command names, with parentheses, spaces, digits and any other byte, parse back", () => {
    // Read as latin1, a comm is any bytes but NUL: one char per byte.
    const byte = fc.integer({ min: 1, max: 255 }).map((c) => String.fromCharCode(c));
    const tricky = fc.constantFrom(")", "(", " ", ") (", ") S 1 2 ", "0", "\n");
    const comm = fc.string({ unit: fc.oneof(byte, tricky), maxLength: 24 });
    const stat = fc.record({
      pid: fc.integer({ min: 1, max: 4_194_304 }),
      comm,
      state: fc.constantFrom(..."RSDZTtXxKWPI"),
      ppid: fc.integer({ min: 0, max: 4_194_304 }),
      pgid: fc.integer({ min: 0, max: 4_194_304 }),
      starttime: fc.maxSafeNat(),
    });
    fc.assert(
      fc.property(stat, (fields) => {
        expect(parseProcStat(statLine(fields))).toEqual(fields);
      }),
      { seed: 20261126, numRuns: 500 },
    );
  });
});

describe("readProcStat and otherProcessIds, on this machine's /proc", () => {
  let dir: string | undefined;
  let child: ChildProcess | undefined;
  afterEach(() => {
    child?.kill("SIGKILL");
    if (dir) rmSync(dir, { recursive: true, force: true });
    child = dir = undefined;
  });

  it("this process: its pid, its parent, running or sleeping", () => {
    const self = readProcStat(process.pid);
    expect(self).toMatchObject({ pid: process.pid, ppid: process.ppid });
    expect(["R", "S"]).toContain(self?.state);
    expect(self?.starttime).toBeGreaterThan(0);
  });

  it("a child whose command name holds ') (' and digits: the kernel's line parses to it", async () => {
    dir = mkdtempSync(join(tmpdir(), "plx-proc-"));
    const name = "a) (b 1 2";
    symlinkSync("/bin/sleep", join(dir, name));
    child = spawn(join(dir, name), ["30"], { stdio: "ignore" });
    await new Promise((resolve) => child?.once("spawn", resolve));
    // Until exec is done the child still bears this process's name: wait for the new one.
    for (let i = 0; i < 200 && readProcStat(child.pid!)?.comm !== name; i++)
      await new Promise((resolve) => setTimeout(resolve, 5));
    expect(readProcStat(child.pid!)).toMatchObject({
      pid: child.pid,
      comm: name,
      ppid: process.pid,
      pgid: readProcStat(process.pid)?.pgid,
    });
  });

  it("a process that is gone: undefined", async () => {
    const gone = spawn("true");
    await new Promise((resolve) => gone.once("exit", resolve));
    expect(readProcStat(gone.pid!)).toBeUndefined();
  });

  it("otherProcessIds lists a child, never init nor this process", async () => {
    child = spawn("sleep", ["30"], { stdio: "ignore" });
    await new Promise((resolve) => child?.once("spawn", resolve));
    const pids = otherProcessIds();
    expect(pids).toContain(child.pid);
    expect(pids).not.toContain(process.pid);
    expect(pids).not.toContain(1);
  });
});
