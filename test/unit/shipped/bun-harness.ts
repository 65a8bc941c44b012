/**
 * The unit tier's way onto the code that ships: a small TypeScript harness in this folder, run by
 * the pinned Bun (as dist/plexus runs Plexus), imports the real module from src/ and drives it
 * through its public entry point; it answers in JSON lines on stdout. The harness gets its input
 * as JSON in argv and, where it holds something, waits for lines on stdin.
 *
 * Delegates started through a harness carry a mark in their environment (`TIERS_MARK`), by which
 * a test finds what they left running, whatever its process group or session, and kills it when
 * the test ends, also when it fails. Temp dirs start with the tests' prefix (`plx-`), which the
 * next run sweeps should this one be killed.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import { chmodSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { onTestFinished } from "vitest";
// @ts-expect-error: a plain .mjs module without types
import { bunPath } from "../../../scripts/bun-path.mjs";

export { bunPath };

type Reply = Record<string, unknown>;

/** The harnesses of this folder, each `<name>.ts`. */
export type HarnessName =
  | "run-delegate"
  | "hold-lock"
  | "pod-devices"
  | "ask-daemon"
  | "set-routes"
  | "log-and-run";

export interface Harness {
  readonly pid: number;
  /** The next JSON line the harness printed; rejects when it exits first. */
  next(): Promise<Reply>;
  /** A line on the harness's stdin. */
  send(line: string): void;
  /** Ends the harness's stdin: one that holds something lets go of it and exits. */
  end(): void;
  /** Resolves with the exit code (null when killed by a signal). */
  readonly exited: Promise<number | null>;
  kill(): Promise<void>;
}

/** The harness file `test/unit/shipped/<name>.ts`. */
export function harnessFile(name: HarnessName): string {
  return fileURLToPath(new URL(`./${name}.ts`, import.meta.url));
}

/** Starts `test/unit/shipped/<name>.ts` under Bun; it is killed when the test ends. */
export function startHarness(name: HarnessName, input: object): Harness {
  const child: ChildProcess = spawn(bunPath(), [harnessFile(name), JSON.stringify(input)], {
    stdio: ["pipe", "pipe", "inherit"],
  });
  const exited = new Promise<number | null>((resolve) => child.once("exit", resolve));
  const lines: Reply[] = [];
  const waiting: Array<(line: Reply | undefined) => void> = [];
  createInterface({ input: child.stdout! }).on("line", (text) => {
    const line = JSON.parse(text) as Reply;
    const waiter = waiting.shift();
    if (waiter) waiter(line);
    else lines.push(line);
  });
  void exited.then(() => {
    for (const waiter of waiting.splice(0)) waiter(undefined);
  });
  const kill = async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
    await exited;
  };
  onTestFinished(kill);
  return {
    pid: child.pid!,
    next: async () => {
      const line =
        lines.shift() ?? (await new Promise<Reply | undefined>((res) => waiting.push(res)));
      if (line === undefined) throw new Error(`the ${name} harness exited without answering`);
      return line;
    },
    send: (line) => child.stdin!.write(`${line}\n`),
    end: () => child.stdin!.end(),
    exited,
    kill,
  };
}

/** A harness's first answer, once it has exited (its stdin ended: it holds nothing after). */
export async function runHarness(name: HarnessName, input: object) {
  const harness = startHarness(name, input);
  const reply = await harness.next();
  harness.end();
  await harness.exited;
  return reply;
}

/** A temp directory, delegate scripts in it, and the mark of this test's delegates. */
export interface Scratch {
  readonly dir: string;
  readonly mark: string;
  /** The environment a delegate gets: a PATH for its tools, and the mark. */
  readonly env: Record<string, string>;
  /** Writes an executable /bin/sh script; returns its path. */
  script(name: string, body: string): string;
  /** Live processes that carry this test's mark (zombies are not counted: they run nothing). */
  marked(): number[];
}

/** A scratch for one test; its directory and every marked process go when the test ends. */
export function scratch(): Scratch {
  const dir = mkdtempSync(join(tmpdir(), "plx-shipped-"));
  const mark = randomUUID();
  const self: Scratch = {
    dir,
    mark,
    // The directory's name in the environment too: a killed run's leftovers are swept by it
    // (test/support/leftovers.ts looks for the test prefix in each process's environment).
    env: { PATH: "/usr/sbin:/usr/bin:/sbin:/bin", TIERS_MARK: mark, TIERS_SCRATCH: dir },
    script: (name, body) => {
      const path = join(dir, name);
      writeFileSync(path, `#!/bin/sh\n${body}\n`);
      chmodSync(path, 0o755);
      return path;
    },
    marked: () => markedProcesses(mark),
  };
  onTestFinished(() => {
    for (const pid of markedProcesses(mark)) killQuietly(pid);
    rmSync(dir, { recursive: true, force: true });
  });
  return self;
}

function markedProcesses(mark: string): number[] {
  const needle = `TIERS_MARK=${mark}`;
  const found: number[] = [];
  for (const entry of readdirSync("/proc")) {
    const pid = Number(entry);
    if (!Number.isInteger(pid) || pid <= 1) continue;
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, "latin1");
      if (stat.slice(stat.lastIndexOf(")") + 2).startsWith("Z")) continue;
      const environ = readFileSync(`/proc/${pid}/environ`, "latin1").split("\0");
      if (environ.includes(needle)) found.push(pid);
    } catch {
      // Gone meanwhile.
    }
  }
  return found;
}

function killQuietly(pid: number): void {
  try {
    process.kill(pid, "SIGKILL");
  } catch {
    // Gone already.
  }
}

/** Whether `pid` runs (not gone, not a zombie). */
export function running(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "latin1");
    return !stat.slice(stat.lastIndexOf(")") + 2).startsWith("Z");
  } catch {
    return false;
  }
}

/** Waits for `path` to hold a line (a delegate says it started), at most `withinMs`. */
export async function waitForFile(path: string, withinMs = 30_000): Promise<string> {
  for (const until = Date.now() + withinMs; Date.now() < until; ) {
    try {
      const text = readFileSync(path, "utf8");
      if (text.endsWith("\n")) return text.trim();
    } catch {
      // Not written yet.
    }
    await new Promise((res) => setTimeout(res, 20));
  }
  throw new Error(`${path} was not written within ${withinMs} ms`);
}
