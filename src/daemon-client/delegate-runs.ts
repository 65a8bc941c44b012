/**
 * M20: what a process's delegates did (libcni/conflist.ts `observe`), handed to the node daemon
 * for its /metrics (POST /v1/delegate-runs, protocol.ts). A CNI call is one short process: it
 * keeps its runs and, at its end, writes them to the daemon's socket in one request and closes
 * the connection without reading the answer, so a daemon that is slow, hung or gone costs the
 * call at most HAND_OFF_MS and never its result. No socket: nothing is sent, no module is loaded.
 * The daemon's own passes (hot-plug, housekeeping) are processes of their own and hand theirs
 * over the same way, when their work is done.
 */
import { existsSync } from "node:fs";
import type { DelegateRun } from "../libcni/conflist";
import { openUnixSocket } from "../sys/unix-socket";
import { DAEMON_API } from "./protocol";

/** Runs one process keeps: a GC releasing many stale attachments sends its first ones only. */
const MAX_RUNS = 1000;
/**
 * The hand-off's whole budget. Connecting to a unix socket and writing a few kilobytes into it
 * complete at once, the daemon listening or not (the kernel queues both); only a daemon whose
 * socket is full of unread requests makes the hand-off wait, and then not past this.
 */
const HAND_OFF_MS = 50;

export interface DelegateRunLog {
  /** ExecDeps.observe: keeps one run. */
  observe(run: DelegateRun): void;
  /** Sends the runs kept so far to the daemon, when its socket is there; never fails. */
  handOff(): Promise<void>;
}

/**
 * The runs of this process, for the daemon at `socketPath` ("" turns it off). `atExit`: for a
 * process that ends by itself (not a CNI call, which exits at once): the first run kept arms the
 * hand-off for when its work is done (`beforeExit`).
 */
export function delegateRunLog(
  socketPath: string,
  options: { atExit?: boolean } = {},
): DelegateRunLog {
  const runs: DelegateRun[] = [];
  let armed = !options.atExit;
  const log: DelegateRunLog = {
    observe(run) {
      if (runs.length < MAX_RUNS) runs.push(run);
      if (armed) return;
      armed = true;
      process.once("beforeExit", () => void log.handOff());
    },
    async handOff() {
      if (runs.length === 0 || socketPath === "" || !existsSync(socketPath)) return;
      await send(socketPath, runs.splice(0)).catch(() => {
        // The daemon's metrics miss these runs; the call's own work is done and stays done.
      });
    },
  };
  return log;
}

/** One HTTP request written whole, then the connection closed: the answer is never awaited. */
function send(socketPath: string, runs: readonly DelegateRun[]): Promise<void> {
  const body = JSON.stringify({ runs });
  const request =
    `POST ${DAEMON_API.delegateRuns} HTTP/1.1\r\nhost: plexus\r\n` +
    `content-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\n` +
    `connection: close\r\n\r\n${body}`;
  return new Promise<void>((resolve) => {
    let timer: ReturnType<typeof setTimeout> | undefined;
    let finished = false;
    const done = () => {
      if (finished) return;
      finished = true;
      clearTimeout(timer);
      socket.destroy();
      resolve();
    };
    const socket = openUnixSocket(socketPath, {
      data: done,
      close: done,
      // Taken whole by the kernel: the daemon reads it whenever it gets to it.
      ended: done,
    });
    timer = setTimeout(done, HAND_OFF_MS);
    socket.write(Buffer.from(request));
    socket.end();
  });
}
