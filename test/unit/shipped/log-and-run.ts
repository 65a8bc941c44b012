/**
 * Run by Bun (log-rotation.test.ts starts it through bun-harness.ts): a CNI call's logger as
 * dist/plexus opens it (createLogger with a log file and rotation: the log rotated on open, its
 * backup compressed by a detached child of this process), then one delegate through RawExec,
 * after which the runner kills every child that is not a running delegate, except the pids it is
 * told to spare (as node-deps.ts tells it: that compressor). Prints one JSON line: the
 * delegate's stdout, or the CniError's code and message.
 *
 * Input (argv[2], JSON): the log file, its maxSize (MB), and the delegate's path and env.
 */
import { RawExec } from "../../../src/invoke/raw-exec";
import { createLogger } from "../../../src/log/logger";
import { logCompressorPids } from "../../../src/log/rotate";

interface Ask {
  logFile: string;
  maxSize: number;
  path: string;
  env: Record<string, string>;
}

const ask = JSON.parse(process.argv[2] ?? "{}") as Ask;
const log = await createLogger({
  logFile: ask.logFile,
  logLevel: "info",
  logToStderr: false,
  logOptions: { maxSize: ask.maxSize, compress: true },
});
try {
  const stdout = await new RawExec(log, { sparePids: logCompressorPids() }).execPlugin({
    path: ask.path,
    stdin: new Uint8Array(),
    env: ask.env,
    deadlineMs: 20_000,
    what: 'plugin type="shipped" network="net-a" (ADD)',
  });
  process.stdout.write(`${JSON.stringify({ ok: true, stdout: Buffer.from(stdout).toString() })}\n`);
} catch (err) {
  const e = err as { code?: unknown; message?: string };
  process.stdout.write(`${JSON.stringify({ ok: false, code: e.code, message: e.message })}\n`);
}
