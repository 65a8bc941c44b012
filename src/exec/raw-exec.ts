/**
 * Production {@link PluginExec}: execa without a shell, after libcni `pkg/invoke/raw_exec.go`.
 * Each delegate runs in its own process group so that a deadline kills everything it started
 * (B52, B63); output is captured up to a cap (B61); ETXTBSY is retried with a fresh process (B51).
 */
import { execa } from "execa";
import { CniError, Code } from "../cni/errors";
import { decodeJson } from "../cni/json";
import { errorCodeOf, looksLikeCniError } from "../cni/result/decode";
import type { Logger } from "../log/logger";
import { findInPath } from "./find";
import type { ExecRequest, PluginExec } from "./plugin-exec";

export const MAX_STDOUT_BYTES = 4 * 1024 * 1024;
export const MAX_STDERR_BYTES = 1024 * 1024;
const ETXTBSY_RETRIES = 5;
/** After the deadline kill, how long to wait for pipes held open by escaped children (B63). */
const PIPE_GRACE_MS = 200;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function killGroup(pid: number | undefined): void {
  if (!pid) return;
  try {
    process.kill(-pid, "SIGKILL");
  } catch {
    // Already gone.
  }
}

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

  async execPlugin(r: ExecRequest): Promise<Uint8Array> {
    for (let attempt = 0; ; attempt++) {
      try {
        return await this.execOnce(r);
      } catch (err) {
        if (err instanceof TextFileBusy && attempt < ETXTBSY_RETRIES) {
          this.log.warn({ delegate: r.what, attempt: attempt + 1 }, "delegate binary is busy (being replaced); retrying");
          await sleep(50 * 2 ** attempt);
          continue;
        }
        if (err instanceof TextFileBusy) {
          throw new CniError(Code.TryAgainLater, `${r.what}: ${r.path} stayed busy ("text file busy") after ${ETXTBSY_RETRIES} retries`);
        }
        throw err;
      }
    }
  }

  private async execOnce(r: ExecRequest): Promise<Uint8Array> {
    const cancel = new AbortController();
    const sub = execa(r.path, [], {
      input: r.stdin,
      env: r.env,
      extendEnv: false,
      encoding: "buffer",
      stripFinalNewline: false,
      // stdout is the result: over the cap the delegate is stopped (B61). stderr is only for the
      // log: it is read here and truncated, so a chatty delegate never fails a good ADD.
      buffer: { stdout: true, stderr: false },
      maxBuffer: { stdout: MAX_STDOUT_BYTES },
      detached: true,
      reject: false,
      cancelSignal: cancel.signal,
      killSignal: "SIGKILL",
      forceKillAfterDelay: false,
      // The deadline above kills the delegate's group; execa's exit hooks (signal-exit on every
      // signal) would cost each pod start-up time for nothing more.
      cleanup: false,
    });
    const stderrChunks: Buffer[] = [];
    let stderrBytes = 0;
    sub.stderr?.on("data", (chunk: Uint8Array) => {
      if (stderrBytes >= MAX_STDERR_BYTES) return;
      const take = Buffer.from(chunk.buffer, chunk.byteOffset, Math.min(chunk.byteLength, MAX_STDERR_BYTES - stderrBytes));
      stderrChunks.push(take);
      stderrBytes += take.byteLength;
    });
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      killGroup(sub.pid);
      cancel.abort();
      setTimeout(() => {
        sub.stdout?.destroy();
        sub.stderr?.destroy();
      }, PIPE_GRACE_MS).unref();
    }, r.deadlineMs);
    const res = await sub;
    clearTimeout(timer);

    const stdout = res.stdout as Uint8Array | undefined;
    const stderr = Buffer.concat(stderrChunks);
    const stderrText = tail(stderr);
    if (stderrText) this.log.info({ delegate: r.what, stderr: stderrText }, "delegate wrote to stderr");

    if (timedOut) {
      throw new CniError(Code.DelegateTimeout, `${r.what}: did not finish within ${r.deadlineMs} ms; its process group was killed`, stderrText || undefined);
    }
    const spawnCode = (res.cause as NodeJS.ErrnoException | undefined)?.code;
    if (spawnCode === "ETXTBSY") throw new TextFileBusy();
    if (spawnCode === "ENOENT" || spawnCode === "EACCES" || spawnCode === "ENOEXEC" || spawnCode === "EISDIR") {
      throw new CniError(Code.IoFailure, `${r.what}: cannot execute ${r.path} (${spawnCode})`);
    }
    if (res.isMaxBuffer) {
      throw new CniError(
        Code.InvalidResult,
        `${r.what}: wrote more than ${MAX_STDOUT_BYTES} bytes to stdout, which cannot be a CNI result; it was stopped`,
      );
    }
    if (res.signal) {
      throw new CniError(
        Code.DelegateFailed,
        `${r.what}: killed by signal ${res.signal}${res.signalDescription ? ` (${res.signalDescription})` : ""}`,
        stderrText || undefined,
      );
    }
    if (res.exitCode === 0 && !res.failed) return stdout ?? new Uint8Array();
    if (res.exitCode === undefined) {
      throw new CniError(Code.DelegateFailed, `${r.what}: could not run ${r.path}: ${res.shortMessage ?? res.message ?? "unknown error"}`);
    }
    throw pluginError(r.what, res.exitCode, stdout, stderrText);
  }
}

class TextFileBusy extends Error {}

/** libcni `pluginErr`: a failed plugin's stdout is its CNI error; keep its code, add the delegate's name (B53, B57). */
export function pluginError(what: string, exitCode: number, stdout: Uint8Array | undefined, stderrText: string): CniError {
  if (stdout && stdout.byteLength > 0) {
    try {
      const parsed = decodeJson(stdout, { what: `${what}: error output`, maxBytes: MAX_STDOUT_BYTES });
      if (looksLikeCniError(parsed)) {
        return new CniError(errorCodeOf(parsed.code), `${what}: ${parsed.msg ?? `failed with code ${parsed.code}`}`, parsed.details ?? (stderrText || undefined));
      }
    } catch {
      // Not JSON: reported below with its text.
    }
    return new CniError(Code.DelegateFailed, `${what}: exited with status ${exitCode} and printed no CNI error: ${tail(stdout, 300)}`, stderrText || undefined);
  }
  const why = stderrText ? `: ${stderrText.slice(0, 500)}` : " and printed nothing";
  return new CniError(Code.DelegateFailed, `${what}: exited with status ${exitCode}${why}`, stderrText || undefined);
}
