/**
 * Run by Bun (raw-exec.test.ts starts it through bun-harness.ts): one delegate through RawExec,
 * the PluginExec the verbs get in dist/plexus, on the runtime that ships: Bun.spawn, and the
 * subreaper and orphan kill through bun:ffi. Prints one JSON line: the delegate's stdout, or the
 * CniError's code and message; with either, what the runner logged at warn.
 *
 * Input (argv[2], JSON): the ExecRequest's path, stdin (text), env and deadlineMs, and optionally
 * `inheritFile`, a file opened here and passed as the descriptor the delegate inherits (fd 3), and
 * `busy`: the delegate's file held open for writing here, as while it is being replaced.
 */
import { openSync } from "node:fs";
import { RawExec } from "../../../src/invoke/raw-exec";
import { recordingLogger } from "../install/recording-logger";

interface Ask {
  path: string;
  stdin: string;
  env: Record<string, string>;
  deadlineMs: number;
  inheritFile?: string;
  busy?: boolean;
}

const ask = JSON.parse(process.argv[2] ?? "{}") as Ask;
const log = recordingLogger();
const warnings = () => log.lines.filter((line) => line.level === "warn");
if (ask.busy) openSync(ask.path, "r+");
try {
  const stdout = await new RawExec(log).execPlugin({
    path: ask.path,
    stdin: new TextEncoder().encode(ask.stdin),
    env: ask.env,
    deadlineMs: ask.deadlineMs,
    what: 'plugin type="shipped" network="net-a" (ADD)',
    ...(ask.inheritFile === undefined ? {} : { inheritFd: openSync(ask.inheritFile, "r") }),
  });
  const text = Buffer.from(stdout).toString("utf8");
  process.stdout.write(`${JSON.stringify({ ok: true, stdout: text, warnings: warnings() })}\n`);
} catch (err) {
  const e = err as { code?: unknown; message?: string; details?: unknown };
  const reply = { ok: false, code: e.code, message: e.message, details: e.details };
  process.stdout.write(`${JSON.stringify({ ...reply, warnings: warnings() })}\n`);
}
