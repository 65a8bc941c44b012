/**
 * Production {@link PluginExec}: a process without a shell, after libcni `pkg/invoke/raw_exec.go`.
 * Each delegate runs in its own process group so that a deadline kills everything it started
 * (B52, B63); output is captured up to a cap (B61); ETXTBSY is retried with a fresh process (B51).
 * One run is spawn-bun.ts's, the only implementation of that contract: Bun.spawn in the executable;
 * under Node (Plexus's code run in-process by the integration tests of validate and records) the
 * same run starts its process through spawn-node.ts. The executable's runner and its container lock
 * are tested by the integration and end-to-end tiers against dist/plexus; unit tests use FakeExec.
 */
import { constants as osConstants } from "node:os";
import { CniError, Code } from "../cni/errors";
import { decodeJson } from "../cni/json";
import { errorCodeOf, looksLikeCniError } from "../cni/result/decode";
import type { Logger } from "../log/logger";
import { type BunSpawn, bunSpawn } from "../sys/runtime";
import { findInPath } from "./find";
import type { ExecRequest, PluginExec } from "./plugin-exec";
import { runProcessBun } from "./spawn-bun";
import { nodeSpawn } from "./spawn-node";

const MAX_STDOUT_BYTES = 4 * 1024 * 1024;
const MAX_STDERR_BYTES = 1024 * 1024;
const ETXTBSY_RETRIES = 5;
/**
 * After the delegate exited or was killed, how long to wait for pipes its children hold open (B63).
 */
const PIPE_GRACE_MS = 200;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
let spawner: BunSpawn | undefined;
/** Bun.spawn in the executable; its shape over node:child_process only where there is no Bun. */
const spawnerOf = (): BunSpawn => (spawner ??= bunSpawn() ?? nodeSpawn());

function tail(bytes: Uint8Array | undefined, max = 2000): string {
  if (!bytes || bytes.byteLength === 0) return "";
  const s = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("utf8").trim();
  return s.length > max ? `…${s.slice(-max)}` : s;
}

export interface RawExecOptions {
  /**
   * Children this process starts itself that outlive a delegate (the log's compressors): the
   * runner kills every other child left when a delegate ends.
   */
  sparePids?: ReadonlySet<number>;
}

export class RawExec implements PluginExec {
  private readonly sparePids: ReadonlySet<number>;

  constructor(
    private readonly log: Logger,
    options: RawExecOptions = {},
  ) {
    this.sparePids = options.sparePids ?? new Set();
  }

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
            `${request.what}: ${request.path} stayed busy ("text file busy") after ` +
              `${ETXTBSY_RETRIES} retries`,
          );
        }
        throw err;
      }
    }
  }

  private async execOnce(request: ExecRequest): Promise<Uint8Array> {
    const res = await runProcessBun(spawnerOf(), request, {
      maxStdoutBytes: MAX_STDOUT_BYTES,
      maxStderrBytes: MAX_STDERR_BYTES,
      pipeGraceMs: PIPE_GRACE_MS,
      sparePids: this.sparePids,
    });
    if (res.orphansKilled?.length)
      this.log.warn(
        { delegate: request.what, killed: res.orphansKilled },
        "the delegate left processes running outside its process group; killed them",
      );
    const stderrText = tail(res.stderr);
    if (stderrText)
      this.log.info({ delegate: request.what, stderr: stderrText }, "delegate wrote to stderr");

    if (res.timedOut) {
      throw new CniError(
        Code.DelegateTimeout,
        `${request.what}: did not finish within ${request.deadlineMs} ms; its process group ` +
          `was killed`,
        stderrText || undefined,
      );
    }
    const spawnCode = res.spawnError?.code;
    if (spawnCode === "ETXTBSY") throw new TextFileBusy();
    if (
      spawnCode === "ENOENT" ||
      spawnCode === "EACCES" ||
      spawnCode === "ENOEXEC" ||
      spawnCode === "EISDIR"
    ) {
      throw new CniError(
        Code.IoFailure,
        `${request.what}: cannot execute ${request.path} (${spawnCode})`,
      );
    }
    if (res.spawnError)
      throw new CniError(
        Code.DelegateFailed,
        `${request.what}: could not run ${request.path}: ${res.spawnError.message}`,
      );
    if (res.overflow) {
      throw new CniError(
        Code.InvalidResult,
        `${request.what}: wrote more than ${MAX_STDOUT_BYTES} bytes to stdout, which cannot ` +
          `be a CNI result; it was stopped`,
      );
    }
    if (res.signal) {
      const number = osConstants.signals[res.signal];
      throw new CniError(
        Code.DelegateFailed,
        `${request.what}: killed by signal ${res.signal}${number ? ` (${number})` : ""}`,
        stderrText || undefined,
      );
    }
    if (res.exitCode === 0) return res.stdout;
    throw pluginError(request.what, res.exitCode ?? -1, res.stdout, stderrText);
  }
}

class TextFileBusy extends Error {}

/**
 * libcni `pluginErr`: a failed plugin's stdout is its CNI error; keep its code, add the delegate's
 * name (B53, B57).
 */
function pluginError(
  what: string,
  exitCode: number,
  stdout: Uint8Array | undefined,
  stderrText: string,
): CniError {
  if (stdout && stdout.byteLength > 0) {
    try {
      const parsed = decodeJson(stdout, {
        what: `${what}: error output`,
        maxBytes: MAX_STDOUT_BYTES,
      });
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
  return new CniError(
    Code.DelegateFailed,
    `${what}: exited with status ${exitCode}${why}`,
    stderrText || undefined,
  );
}
