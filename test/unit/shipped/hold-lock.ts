/**
 * Run by Bun (container-lock.test.ts starts it through bun-harness.ts): the container lock as the
 * verbs take it in dist/plexus (acquireContainerLock, flock through bun:ffi). Prints one JSON line
 * when the lock is taken (`held`, with its descriptor and the owner written into the file) or
 * refused (the CniError's code and message). A held lock is kept until a line on stdin: `release`
 * or `release remove`, answered with `released`.
 *
 * Input (argv[2], JSON): the LockRequest's cniDir, containerId, ifName, verb and killsOrphans, the
 * deadline as `waitMs` from now, and optionally `delegate`: a script run through RawExec under
 * the lock as a verb runs one (the lock as its fd 3, the call's mark in its environment), not
 * awaited, so that a test can kill this process while the delegate runs.
 */
import { readFileSync } from "node:fs";
import { createInterface } from "node:readline";
import { RawExec } from "../../../src/invoke/raw-exec";
import { acquireContainerLock, CALL_MARK_ENV, lockPath } from "../../../src/store/container-lock";
import { recordingLogger } from "../install/recording-logger";

interface Ask {
  cniDir: string;
  containerId: string;
  ifName: string;
  verb: string;
  waitMs: number;
  killsOrphans?: boolean;
  delegate?: { path: string; env: Record<string, string> };
}

const ask = JSON.parse(process.argv[2] ?? "{}") as Ask;
const log = recordingLogger();
const say = (line: object) => process.stdout.write(`${JSON.stringify(line)}\n`);
const warnings = () => log.lines.filter((line) => line.level === "warn");

try {
  const lock = await acquireContainerLock({
    cniDir: ask.cniDir,
    containerId: ask.containerId,
    ifName: ask.ifName,
    verb: ask.verb,
    deadlineAt: Date.now() + ask.waitMs,
    log,
    ...(ask.killsOrphans === undefined ? {} : { killsOrphans: ask.killsOrphans }),
  });
  if (ask.delegate) {
    const env = { ...ask.delegate.env, [CALL_MARK_ENV]: lock.marker ?? "" };
    const request = { path: ask.delegate.path, stdin: new Uint8Array(), env, deadlineMs: 600_000 };
    const what = `delegate under ${ask.verb}`;
    void new RawExec(log).execPlugin({ ...request, what, inheritFd: lock.fd }).catch(() => {});
  }
  const owner = readFileSync(lockPath(ask.cniDir, ask.containerId, ask.ifName), "utf8");
  say({ held: true, fd: lock.fd, marker: lock.marker, owner, warnings: warnings() });
  for await (const line of createInterface({ input: process.stdin })) {
    lock.release({ remove: line === "release remove" });
    say({ released: true });
    process.exit(0);
  }
} catch (err) {
  const e = err as { code?: unknown; message?: string };
  say({ held: false, code: e.code, message: e.message, warnings: warnings() });
}
