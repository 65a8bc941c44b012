/**
 * The seam between Plexus and delegate binaries, shaped like libcni's `invoke.Exec`
 * (`pkg/invoke/exec.go`): tests fake it, production uses {@link RawExec}.
 */
export type Env = Record<string, string>;

export interface ExecRequest {
  /** Absolute path of the plugin binary (from {@link PluginExec.findInPath}). */
  path: string;
  stdin: Uint8Array;
  env: Env;
  /** The whole process group is killed when this many milliseconds have passed (B52). */
  deadlineMs: number;
  /** Names the delegate in messages and logs: `plugin type="bridge" network="net-a" (ADD)`. */
  what: string;
  /**
   * A descriptor the delegate inherits as its fd 3: the container's lock (container-lock.ts), which
   * then stays held while the delegate or its children live, also after Plexus was killed.
   */
  inheritFd?: number;
}

export interface PluginExec {
  /** Resolves with stdout when the plugin exits 0; otherwise throws a CniError (C4.1, B51–B63). */
  execPlugin(request: ExecRequest): Promise<Uint8Array>;
  /** Finds `type` in `dirs`, first hit wins; throws code 7 naming the type and the dirs (B9). */
  findInPath(type: string, dirs: readonly string[]): Promise<string>;
}

/** How one run of a delegate's process ended (spawn-bun.ts). */
export interface ProcessOutcome {
  stdout: Buffer;
  stderr: Buffer;
  exitCode: number | null;
  signal: NodeJS.Signals | null;
  spawnError: NodeJS.ErrnoException | undefined;
  /**
   * stdout passed the stdout cap (raw-exec.ts MAX_STDOUT_BYTES): the group was killed, the output
   * dropped (B61).
   */
  overflow: boolean;
  timedOut: boolean;
  /** Processes the delegate left running (re-parented to Plexus) that were killed when it ended. */
  orphansKilled?: number[];
}
