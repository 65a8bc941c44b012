/**
 * Production {@link PluginExec}: a process without a shell, after libcni `pkg/invoke/raw_exec.go`
 * (Bun.spawn in the executable, spawn-bun.ts; node:child_process under Node).
 * Each delegate runs in its own process group so that a deadline kills everything it started
 * (B52, B63); output is captured up to a cap (B61); ETXTBSY is retried with a fresh process (B51).
 */
import type { ChildProcess } from "node:child_process";
import { constants as osConstants } from "node:os";
import { CniError, Code } from "../cni/errors";
import { decodeJson } from "../cni/json";
import { errorCodeOf, looksLikeCniError } from "../cni/result/decode";
import type { Logger } from "../log/logger";
import { findInPath } from "./find";
import type { ExecRequest, PluginExec, ProcessOutcome } from "./plugin-exec";

export type { ProcessOutcome };
import { bunSpawn, killGroup, runProcessBun } from "./spawn-bun";

export const MAX_STDOUT_BYTES = 4 * 1024 * 1024;
export const MAX_STDERR_BYTES = 1024 * 1024;
const ETXTBSY_RETRIES = 5;
/** After the delegate exited or was killed, how long to wait for pipes its children hold open (B63). */
const PIPE_GRACE_MS = 200;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const onBun = bunSpawn();

function tail(bytes: Uint8Array | undefined, max = 2000): string {
  if (!bytes || bytes.byteLength === 0) return "";
  const s = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("utf8").trim();
  return s.length > max ? `…${s.slice(-max)}` : s;
}

export class RawExec implements PluginExec {
  constructor(private readonly log: Logger) {}

  findInPath(type: string, dirs: readonly string[]): Promise<string> {
    return findInPath(type, dirs);
  }

  async execPlugin(request: ExecRequest): Promise<Uint8Array> {
    for (let attempt = 0; ; attempt++) {
      try {
        return await this.execOnce(request);
      } catch (err) {
        if (err instanceof TextFileBusy && attempt < ETXTBSY_RETRIES) {
          this.log.warn(
            { delegate: request.what, attempt: attempt + 1 },
            "delegate binary is busy (being replaced); retrying",
          );
          await sleep(50 * 2 ** attempt);
          continue;
        }
        if (err instanceof TextFileBusy) {
          throw new CniError(
            Code.TryAgainLater,
            `${request.what}: ${request.path} stayed busy ("text file busy") after ${ETXTBSY_RETRIES} retries`,
          );
        }
        throw err;
      }
    }
  }

  private async execOnce(r: ExecRequest): Promise<Uint8Array> {
    const res = onBun
      ? await runProcessBun(onBun, r, {
          maxStdoutBytes: MAX_STDOUT_BYTES,
          maxStderrBytes: MAX_STDERR_BYTES,
          pipeGraceMs: PIPE_GRACE_MS,
        })
      : await runProcess(r);
    if (res.orphansKilled?.length)
      this.log.warn(
        { delegate: r.what, killed: res.orphansKilled },
        "the delegate left processes running outside its process group; killed them",
      );
    const stderrText = tail(res.stderr);
    if (stderrText) this.log.info({ delegate: r.what, stderr: stderrText }, "delegate wrote to stderr");

    if (res.timedOut) {
      throw new CniError(
        Code.DelegateTimeout,
        `${r.what}: did not finish within ${r.deadlineMs} ms; its process group was killed`,
        stderrText || undefined,
      );
    }
    const spawnCode = res.spawnError?.code;
    if (spawnCode === "ETXTBSY") throw new TextFileBusy();
    if (spawnCode === "ENOENT" || spawnCode === "EACCES" || spawnCode === "ENOEXEC" || spawnCode === "EISDIR") {
      throw new CniError(Code.IoFailure, `${r.what}: cannot execute ${r.path} (${spawnCode})`);
    }
    if (res.spawnError)
      throw new CniError(Code.DelegateFailed, `${r.what}: could not run ${r.path}: ${res.spawnError.message}`);
    if (res.overflow) {
      throw new CniError(
        Code.InvalidResult,
        `${r.what}: wrote more than ${MAX_STDOUT_BYTES} bytes to stdout, which cannot be a CNI result; it was stopped`,
      );
    }
    if (res.signal) {
      const number = osConstants.signals[res.signal];
      throw new CniError(
        Code.DelegateFailed,
        `${r.what}: killed by signal ${res.signal}${number ? ` (${number})` : ""}`,
        stderrText || undefined,
      );
    }
    if (res.exitCode === 0) return res.stdout;
    throw pluginError(r.what, res.exitCode ?? -1, res.stdout, stderrText);
  }
}

/**
 * One run of a delegate under Node: no shell, its own process group (`detached`), the config on
 * stdin, stdout kept up to a cap and stderr up to another, the whole group SIGKILLed at the deadline.
 * Plain node:child_process: execa did this too, but loading it cost every invocation ~16 ms.
 */
function runProcess(r: ExecRequest): Promise<ProcessOutcome> {
  return new Promise((resolve) => {
    const run = new NodeRun(resolve);
    let child: ChildProcess;
    try {
      // Loaded here: the Bun executable never needs node:child_process for a delegate.
      const extra = r.inheritFd === undefined ? [] : [r.inheritFd];
      child = process
        .getBuiltinModule("node:child_process")
        .spawn(r.path, [], { env: r.env, stdio: ["pipe", "pipe", "pipe", ...extra], detached: true });
    } catch (e) {
      // Arguments Node refuses before any process exists (e.g. a NUL byte in the environment).
      run.spawnError = e as NodeJS.ErrnoException;
      run.finish(null, null);
      return;
    }
    child.on("error", (e: NodeJS.ErrnoException) => run.onError(child, e));
    child.on("close", (code, signal) => run.finish(code, signal));
    child.on("exit", (code, signal) => run.onExit(child, code, signal));
    child.stdout!.on("data", (chunk: Buffer) => run.onStdout(child, chunk));
    child.stderr!.on("data", (chunk: Buffer) => run.onStderr(chunk));
    // A delegate may exit without reading its config: EPIPE on stdin is its business, not a crash.
    child.stdin!.on("error", () => {});
    child.stdin!.end(r.stdin);
    run.startDeadline(child, r.deadlineMs);
  });
}

/** The state of one Node run and its event handlers; `finish` settles it once. */
class NodeRun {
  spawnError: NodeJS.ErrnoException | undefined;
  private readonly out: Buffer[] = [];
  private readonly err: Buffer[] = [];
  private outBytes = 0;
  private errBytes = 0;
  private overflow = false;
  private timedOut = false;
  private settled = false;
  private deadline: NodeJS.Timeout | undefined;
  private grace: NodeJS.Timeout | undefined;

  constructor(private readonly resolve: (o: ProcessOutcome) => void) {}

  finish(exitCode: number | null, signal: NodeJS.Signals | null): void {
    if (this.settled) return;
    this.settled = true;
    clearTimeout(this.deadline);
    clearTimeout(this.grace);
    const { spawnError, overflow, timedOut } = this;
    this.resolve({
      stdout: Buffer.concat(this.out),
      stderr: Buffer.concat(this.err),
      exitCode,
      signal,
      spawnError,
      overflow,
      timedOut,
    });
  }

  /** A spawn failure (no pid) ends the run; later errors of a running child wait for its close. */
  onError(child: ChildProcess, e: NodeJS.ErrnoException): void {
    this.spawnError ??= e;
    if (child.pid === undefined) this.finish(null, null);
  }

  /**
   * Exited, but a child of it holds stdout (B63): after the grace, that group is killed and what
   * the delegate wrote is used, instead of waiting for the deadline.
   */
  onExit(child: ChildProcess, code: number | null, signal: NodeJS.Signals | null): void {
    this.grace ??= setTimeout(() => {
      killGroup(child.pid);
      child.stdout?.destroy();
      child.stderr?.destroy();
      this.finish(code, signal);
    }, PIPE_GRACE_MS);
  }

  /** stdout up to MAX_STDOUT_BYTES; past it the group is killed and the output dropped (B61). */
  onStdout(child: ChildProcess, chunk: Buffer): void {
    if (this.overflow) return;
    this.outBytes += chunk.byteLength;
    if (this.outBytes > MAX_STDOUT_BYTES) {
      this.overflow = true;
      this.out.length = 0;
      killGroup(child.pid);
      return;
    }
    this.out.push(chunk);
  }

  /** stderr is only for the log: read and truncated, so a chatty delegate never fails a good ADD. */
  onStderr(chunk: Buffer): void {
    if (this.errBytes >= MAX_STDERR_BYTES) return;
    const take = chunk.subarray(0, MAX_STDERR_BYTES - this.errBytes);
    this.err.push(take);
    this.errBytes += take.byteLength;
  }

  /** At the deadline the group is SIGKILLed (B52); pipes held open by children that escaped it (B63) must not keep us waiting. */
  startDeadline(child: ChildProcess, ms: number): void {
    this.deadline = setTimeout(() => {
      this.timedOut = true;
      killGroup(child.pid);
      this.grace = setTimeout(() => {
        child.stdout?.destroy();
        child.stderr?.destroy();
        this.finish(null, "SIGKILL");
      }, PIPE_GRACE_MS);
    }, ms);
  }
}

class TextFileBusy extends Error {}

/** libcni `pluginErr`: a failed plugin's stdout is its CNI error; keep its code, add the delegate's name (B53, B57). */
export function pluginError(
  what: string,
  exitCode: number,
  stdout: Uint8Array | undefined,
  stderrText: string,
): CniError {
  if (stdout && stdout.byteLength > 0) {
    try {
      const parsed = decodeJson(stdout, { what: `${what}: error output`, maxBytes: MAX_STDOUT_BYTES });
      if (looksLikeCniError(parsed)) {
        return new CniError(
          errorCodeOf(parsed.code),
          `${what}: ${parsed.msg ?? `failed with code ${parsed.code}`}`,
          parsed.details ?? (stderrText || undefined),
        );
      }
    } catch {
      // Not JSON: reported below with its text.
    }
    return new CniError(
      Code.DelegateFailed,
      `${what}: exited with status ${exitCode} and printed no CNI error: ${tail(stdout, 300)}`,
      stderrText || undefined,
    );
  }
  const why = stderrText ? `: ${stderrText.slice(0, 500)}` : " and printed nothing";
  return new CniError(Code.DelegateFailed, `${what}: exited with status ${exitCode}${why}`, stderrText || undefined);
}
