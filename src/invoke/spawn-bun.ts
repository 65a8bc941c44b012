/**
 * One run of a delegate through `Bun.spawn`, used where Plexus runs as its Bun executable
 * (dist/plexus), and the only implementation of the runner's contract (under Node, spawn-node.ts
 * gives node:child_process Bun.spawn's shape and this same code runs): no shell, its own process
 * group (`detached`), the config on stdin, stdout kept up to a cap and stderr up to another, the
 * whole group SIGKILLed at the deadline, then a grace for pipes held open by children that escaped
 * the group (B52, B61, B63); and whatever the delegate left running outside its group (a `setsid`
 * grandchild) is killed when it ends (orphans.ts). Bun's node:child_process builds Node streams for
 * every child; Bun.spawn does not.
 */
import { killGroup } from "../sys/kill";
import type { BunSpawn, BunSubprocess } from "../sys/runtime";
import { becomeSubreaper, killOrphans } from "./orphans";
import type { ExecRequest, ProcessOutcome } from "./plugin-exec";

export interface RunLimits {
  maxStdoutBytes: number;
  maxStderrBytes: number;
  /** After the deadline kill, how long to wait for pipes held open by escaped children. */
  pipeGraceMs: number;
  /**
   * Children of Plexus that are not a delegate's leftovers (the log's compressors, which the
   * caller started): never killed when a delegate ends. Read each time, so it may grow.
   */
  sparePids: ReadonlySet<number>;
}

/** Reads a pipe to its end, keeping at most `cap` bytes; `onOver` is told once when more came. */
async function drain(
  stream: ReadableStream<Uint8Array>,
  cap: number,
  readers: Array<ReadableStreamDefaultReader<Uint8Array>>,
  onOver?: () => void,
): Promise<Buffer> {
  const reader = stream.getReader();
  readers.push(reader);
  const chunks: Uint8Array[] = [];
  let kept = 0;
  let over = false;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      if (over) continue;
      if (kept + value.byteLength > cap) {
        over = true;
        if (onOver) {
          chunks.length = 0;
          onOver();
          continue;
        }
        chunks.push(value.subarray(0, cap - kept));
        kept = cap;
        continue;
      }
      chunks.push(value);
      kept += value.byteLength;
    }
  } catch {
    // Cancelled after the deadline's grace: what was read is kept.
  }
  return Buffer.concat(chunks);
}

const running = new Set<number>();

export async function runProcessBun(
  spawn: BunSpawn,
  request: ExecRequest,
  limits: RunLimits,
): Promise<ProcessOutcome> {
  becomeSubreaper();
  let child: BunSubprocess;
  try {
    const extra = request.inheritFd === undefined ? [] : [request.inheritFd];
    child = await spawn({
      cmd: [request.path],
      env: request.env,
      stdio: [request.stdin, "pipe", "pipe", ...extra],
      detached: true,
    });
  } catch (e) {
    // ENOENT, EACCES, ETXTBSY… are thrown (Bun) or rejected (Node) here, before any process exists.
    return {
      stdout: Buffer.alloc(0),
      stderr: Buffer.alloc(0),
      exitCode: null,
      signal: null,
      spawnError: e as NodeJS.ErrnoException,
      overflow: false,
      timedOut: false,
    };
  }
  running.add(child.pid);
  const watch = watchChild(child, request, limits);
  try {
    const [stdout, stderr, status] = await Promise.all([
      drain(child.stdout, limits.maxStdoutBytes, watch.readers, () => {
        watch.state.overflow = true;
        killGroup(child.pid);
      }),
      // stderr is only for the log: read and truncated, so a chatty delegate never fails a good
      // ADD.
      drain(child.stderr, limits.maxStderrBytes, watch.readers),
      child.exited,
    ]);
    const signal = (child.signalCode as NodeJS.Signals | null) ?? null;
    const { overflow, timedOut } = watch.state;
    return {
      stdout: overflow ? Buffer.alloc(0) : stdout,
      stderr,
      exitCode: signal ? null : status,
      signal,
      spawnError: undefined,
      overflow,
      timedOut,
      orphansKilled: await afterExit(child, limits.sparePids),
    };
  } finally {
    watch.stop();
  }
}

/**
 * After the delegate ended: its group and whatever it left re-parented to Plexus are killed
 * (orphans.ts).
 */
async function afterExit(child: BunSubprocess, sparePids: ReadonlySet<number>): Promise<number[]> {
  await child.exited.catch(() => {});
  running.delete(child.pid);
  return killOrphans((pid) => running.has(pid) || sparePids.has(pid));
}

/**
 * The deadline (the group SIGKILLed, then a grace for pipes held by escaped children) and, once the
 * delegate has exited while a child of it still holds stdout (B63), the same grace: what it wrote
 * is in the pipe already; after the grace its group is killed and the pipes let go.
 */
function watchChild(child: BunSubprocess, request: ExecRequest, limits: RunLimits) {
  const readers: Array<ReadableStreamDefaultReader<Uint8Array>> = [];
  const state = { overflow: false, timedOut: false };
  let grace: NodeJS.Timeout | undefined;
  let lingering: NodeJS.Timeout | undefined;
  const letGo = () => {
    for (const reader of readers) reader.cancel().catch(() => {});
  };
  const deadline = setTimeout(() => {
    state.timedOut = true;
    killGroup(child.pid);
    grace = setTimeout(letGo, limits.pipeGraceMs);
  }, request.deadlineMs);
  void child.exited.then(() => {
    lingering = setTimeout(() => {
      killGroup(child.pid);
      letGo();
    }, limits.pipeGraceMs);
  });
  return {
    readers,
    state,
    stop: () => {
      clearTimeout(deadline);
      clearTimeout(grace);
      clearTimeout(lingering);
    },
  };
}
