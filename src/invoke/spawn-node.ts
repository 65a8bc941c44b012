/**
 * Bun.spawn's shape over node:child_process, for Plexus's code run in-process under Node (the
 * integration tests of `validate` and `records`): only the process start. The deadline, the output
 * caps, the grace for held pipes and the orphans are spawn-bun.ts's, the executable's code, so
 * there is one runner. Node reports a spawn failure (ENOENT, ETXTBSY…) after the call, so the
 * subprocess comes once the process exists, or the failure as a rejection.
 */
import type { BunSpawn, BunSubprocess } from "../sys/runtime";

export function nodeSpawn(): BunSpawn {
  const { spawn } = process.getBuiltinModule("node:child_process");
  const { Readable } = process.getBuiltinModule("node:stream");
  return (options) =>
    new Promise<BunSubprocess>((resolve, reject) => {
      const [stdin, , , ...inherited] = options.stdio;
      const [path, ...args] = options.cmd;
      const child = spawn(path!, args, {
        env: options.env,
        stdio: ["pipe", "pipe", "pipe", ...inherited],
        detached: options.detached,
      });
      const exited = new Promise<number>((done) => child.once("exit", (code) => done(code ?? 128)));
      child.once("error", reject);
      child.once("spawn", () => {
        // A delegate may exit without reading its config: EPIPE on stdin is its business, not a
        // crash.
        child.stdin!.on("error", () => {});
        child.stdin!.end(stdin);
        resolve({
          pid: child.pid!,
          exited,
          get signalCode() {
            return child.signalCode;
          },
          stdout: Readable.toWeb(child.stdout!) as ReadableStream<Uint8Array>,
          stderr: Readable.toWeb(child.stderr!) as ReadableStream<Uint8Array>,
        });
      });
    });
}
