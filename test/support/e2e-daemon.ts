/**
 * `dist/plexus daemon` as the end-to-end tests start it: for node-1, before the fake API server,
 * carrying the test scope's marker (so that the scope's process accounting sees it), its output
 * kept for the failure message. The daemons an `E2eDaemons` started are stopped by its stopAll()
 * (in an afterEach, or the test's own finally), so a failed test leaves no daemon running.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { expect } from "vitest";
import type { E2eScope } from "./netns";
import { PLEXUS_BIN, unixSocketStatus } from "./plexus-bin";

export interface E2eDaemonOptions {
  kubeconfig: string;
  socket: string;
  /** Flags beyond the kubeconfig, the node name, the socket and `--log-level warn`. */
  extraArgs?: readonly string[];
  /** Resolve only once /readyz answers 200 (default); false: as soon as it is spawned. */
  waitReady?: boolean;
}

export interface E2eDaemon {
  child: ChildProcess;
  /** Its stderr, and anything it wrote to stdout (marked), so far. */
  log: { text: string };
}

export class E2eDaemons {
  readonly #live = new Set<ChildProcess>();

  /** Starts a daemon; one not ready in 10 s is stopped, and the error carries its log. */
  async start(scope: E2eScope, options: E2eDaemonOptions): Promise<E2eDaemon> {
    const { kubeconfig, socket, extraArgs = [], waitReady = true } = options;
    const args = ["daemon", "--kubeconfig", kubeconfig, "--node-name", "node-1"];
    args.push("--socket", socket, "--log-level", "warn", ...extraArgs);
    const [mk, mv] = scope.marker.split("=") as [string, string];
    const env = { ...process.env, [mk]: mv };
    const child = spawn(PLEXUS_BIN, args, { stdio: ["ignore", "pipe", "pipe"], env });
    const log = { text: "" };
    child.stderr!.on("data", (c) => (log.text += c));
    child.stdout!.on("data", (c) => (log.text += `[stdout] ${c}`));
    this.#live.add(child);
    if (!waitReady) return { child, log };
    try {
      await expect
        .poll(() => unixSocketStatus(socket, "/readyz"), { timeout: 10_000, interval: 20 })
        .toBe(200);
    } catch (err) {
      await this.stop(child);
      throw new Error(`daemon not ready: ${String(err)}\n${log.text}`);
    }
    return { child, log };
  }

  /** Stops one daemon (SIGTERM: it removes its socket) and resolves once it has exited. */
  stop(child: ChildProcess, signal: NodeJS.Signals = "SIGTERM"): Promise<void> {
    this.#live.delete(child);
    if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
    return new Promise((resolve) => {
      child.once("exit", () => resolve());
      child.kill(signal);
    });
  }

  async stopAll(): Promise<void> {
    for (const child of [...this.#live]) await this.stop(child);
  }
}
