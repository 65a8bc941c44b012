import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { build } from "esbuild";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createLogger, silentLogger, toPinoLevel, type Logger } from "../../../src/log/logger";

const LOGGER_MODULE = resolve(import.meta.dirname, "../../../src/log/logger.ts");

describe("M1 logLevel names", () => {
  it.each([
    ["debug", "debug"],
    ["verbose", "info"],
    ["error", "error"],
    ["panic", "fatal"],
    ["DEBUG", "debug"],
    ["Verbose", "info"],
  ])("M1 Multus's %j is pino's %j", (multus, pinoLevel) => {
    expect(toPinoLevel(multus)).toBe(pinoLevel);
  });

  it.each(["trace", "debug", "info", "warn", "error", "fatal", "silent"])(
    "M1 pino's own %j is accepted as is",
    (l) => {
      expect(toPinoLevel(l)).toBe(l);
    },
  );

  it("M1 unset or empty means Multus's default, panic (fatal)", () => {
    expect(toPinoLevel(undefined)).toBe("fatal");
    expect(toPinoLevel("")).toBe("fatal");
  });

  it.each(["loud", "warning", "informational", " debug", "10"])("M1 %j is not a level", (l) => {
    expect(toPinoLevel(l)).toBeUndefined();
  });
});

/**
 * The file descriptors a pino logger writes to (pino's stream, or each stream of a multistream).
 */
function fdsOf(log: Logger): number[] {
  const stream = (log as unknown as Record<symbol, unknown>)[pino.symbols.streamSym] as {
    fd?: number;
    streams?: Array<{ stream: { fd: number } }>;
  };
  return stream.streams ? stream.streams.map((s) => s.stream.fd) : [stream.fd as number];
}

describe("C2.2 createLogger", () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), "plx-log-"));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("C2.2 at the default level (panic) or silent, or with nowhere to write, nothing is logged and pino is not loaded", async () => {
    for (const opts of [
      {},
      { logLevel: "panic" },
      { logLevel: "silent" },
      { logLevel: "fatal" },
      { logLevel: "debug", logToStderr: false },
      { logLevel: "nonsense" },
    ]) {
      expect((await createLogger(opts)).level).toBe("silent");
    }
  });

  it("C2.2 the silent logger's children are silent too", () => {
    const log = silentLogger();
    expect(log.child({ a: 1 }).level).toBe("silent");
    expect(() => log.child({}).error({ err: new Error("x") }, "nothing")).not.toThrow();
  });

  it.each([
    ["debug", "debug"],
    ["verbose", "info"],
    ["error", "error"],
    ["warn", "warn"],
  ])(
    "M1 C2.2 logLevel %j gives a pino logger at %j writing to stderr (fd 2), never fd 1",
    async (multus, level) => {
      const log = await createLogger({ logLevel: multus });
      expect(log.level).toBe(level);
      expect(fdsOf(log)).toEqual([2]);
    },
  );

  it("C2.2 with a logFile and logToStderr, both are written; with logToStderr false, only the file", async () => {
    const file = join(dir, "both.log");
    const both = await createLogger({ logLevel: "debug", logFile: file });
    const fds = fdsOf(both);
    expect(fds).toHaveLength(2);
    expect(fds).toContain(2);
    expect(fds).not.toContain(1);
    const only = await createLogger({
      logLevel: "debug",
      logFile: join(dir, "only.log"),
      logToStderr: false,
    });
    expect(fdsOf(only)).toHaveLength(1);
    expect(fdsOf(only)[0]).not.toBe(1);
    expect(fdsOf(only)[0]).not.toBe(2);
    only.info({ containerId: "c1" }, "to the file");
    const line = JSON.parse(readFileSync(join(dir, "only.log"), "utf8").trim()) as Record<
      string,
      unknown
    >;
    expect(line).toMatchObject({
      msg: "to the file",
      containerId: "c1",
      level: 30,
      pid: process.pid,
    });
  });

  it("B44 a log file Plexus creates is readable by root only (0600): it names pods, networks and paths", async () => {
    const file = join(dir, "private.log");
    const log = await createLogger({ logLevel: "info", logFile: file, logToStderr: false });
    log.info("hello");
    expect(statSync(file).mode & 0o777).toBe(0o600);
  });
});

describe("C2.2 a process that logs keeps stdout empty", () => {
  let dir: string;
  let script: string;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "plx-log-"));
    const entry = join(dir, "entry.ts");
    writeFileSync(
      entry,
      `import { createLogger } from ${JSON.stringify(LOGGER_MODULE)};
async function main(file: string) {
const all = [
  { logLevel: "debug" },
  { logLevel: "trace", logFile: file },
  { logLevel: "verbose", logFile: file, logToStderr: false },
  {},
];
for (const opts of all) {
  const log = await createLogger(opts, { cmd: "ADD" });
  for (const l of ["trace", "debug", "info", "warn", "error", "fatal"])
    log[l]({ at: l }, "msg-" + l);
  log.child({ containerId: "c1" }).error("from-child");
}
}
void main(process.argv[2]!);
`,
    );
    script = join(dir, "entry.cjs");
    await build({
      entryPoints: [entry],
      outfile: script,
      bundle: true,
      platform: "node",
      format: "cjs",
      logLevel: "silent",
    });
  }, 30_000);
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("C2.2 every level, child loggers, stderr and file: nothing reaches fd 1, and the messages arrive where configured", () => {
    const file = join(dir, "child.log");
    const r = spawnSync(process.execPath, [script, file], { encoding: "utf8", timeout: 20_000 });
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toBe("");
    const errLines = r.stderr
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as { msg: string; cmd?: string; containerId?: string });
    // logLevel debug → stderr gets debug..fatal (5) + child; trace+file → stderr gets all 6 +
    // child; verbose with logToStderr false → none.
    expect(errLines.map((l) => l.msg)).toEqual([
      ...["msg-debug", "msg-info", "msg-warn", "msg-error", "msg-fatal", "from-child"],
      ...["msg-trace", "msg-debug", "msg-info", "msg-warn", "msg-error", "msg-fatal", "from-child"],
    ]);
    expect(errLines.every((l) => l.cmd === "ADD")).toBe(true);
    expect(errLines.at(-1)?.containerId).toBe("c1");
    const fileMsgs = readFileSync(file, "utf8")
      .trim()
      .split("\n")
      .map((l) => (JSON.parse(l) as { msg: string }).msg);
    expect(fileMsgs).toEqual([
      ...["msg-trace", "msg-debug", "msg-info", "msg-warn", "msg-error", "msg-fatal", "from-child"],
      ...["msg-info", "msg-warn", "msg-error", "msg-fatal", "from-child"],
    ]);
  });
});
