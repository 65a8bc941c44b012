/**
 * Helpers for the integration tier: spawn the built single executable (dist/plexus) with a CNI
 * env and stdin, capture stdout/stderr/exit/timing, and give each test a sandbox: a temp CNI_PATH
 * holding copies of the fixture plugin (test/fixtures/noop-plugin.mjs) under chosen type names,
 * a temp cniDir, per-delegate debug files and one shared invocation log.
 */
import { randomBytes } from "node:crypto";
import { execFileSync, spawn, spawnSync } from "node:child_process";
import { request } from "node:http";
import {
  chmodSync,
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

export const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
export const PLEXUS_BIN = join(REPO_ROOT, "dist/plexus");
const FIXTURE = join(REPO_ROOT, "test/fixtures/noop-plugin.mjs");
/**
 * The pinned Node 24 first, so the fixture's `#!/usr/bin/env node` does not pick the machine's Node
 * 20.
 */
export const TEST_PATH = `${join(REPO_ROOT, "node_modules/.bin")}:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin`;

/**
 * Fails loudly instead of building: `npm test` builds before vitest; by hand run `npm run -s
 * build`.
 */
export function requirePlexusBinary(): void {
  let ok = false;
  try {
    const st = statSync(PLEXUS_BIN);
    ok = st.isFile() && (st.mode & 0o111) !== 0;
  } catch {
    ok = false;
  }
  if (!ok) {
    throw new Error(
      `${PLEXUS_BIN} is missing or not executable: build it first with \`npm run -s build\` (npm ` +
        `test does this before vitest)`,
    );
  }
}

export interface RunOptions {
  env: Record<string, string | undefined>;
  stdin?: string | Uint8Array;
  cwd?: string;
  /** Plexus is SIGKILLed (and the run reported as timed out) after this long. */
  timeoutMs?: number;
  /** Sample the peak RSS (VmHWM) of the plexus process while it runs. */
  sampleRss?: boolean;
  /** Called with the pid right after spawning (e.g. to SIGKILL plexus mid-ADD). */
  onSpawn?: (pid: number) => void;
  /** Command-line arguments (the person-facing commands); none for a CNI call. */
  args?: readonly string[];
}

export interface RunResult {
  stdout: string;
  stderr: string;
  /** Exit status, or null when a signal ended plexus. */
  code: number | null;
  signal: NodeJS.Signals | null;
  durationMs: number;
  timedOut: boolean;
  /** Highest VmHWM seen, in KiB (sampleRss only). */
  peakRssKiB?: number;
}

function readHwmKiB(pid: number): number | undefined {
  try {
    const m = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
    return m ? Number(m[1]) : undefined;
  } catch {
    return undefined;
  }
}

export function runPlexus(opts: RunOptions): Promise<RunResult> {
  requirePlexusBinary();
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(opts.env)) if (v !== undefined) env[k] = v;
  const started = performance.now();
  const child = spawn(PLEXUS_BIN, [...(opts.args ?? [])], {
    env,
    cwd: opts.cwd ?? "/",
    stdio: ["pipe", "pipe", "pipe"],
  });
  const out: Buffer[] = [];
  const err: Buffer[] = [];
  child.stdout.on("data", (b: Buffer) => out.push(b));
  child.stderr.on("data", (b: Buffer) => err.push(b));
  // Plexus may exit before reading everything (B12): EPIPE on our side is expected.
  child.stdin.on("error", () => {});
  child.stdin.end(opts.stdin ?? "");
  if (child.pid !== undefined) opts.onSpawn?.(child.pid);
  let timedOut = false;
  let peak: number | undefined;
  const sampler =
    opts.sampleRss && child.pid !== undefined
      ? setInterval(() => (peak = readHwmKiB(child.pid!) ?? peak), 10)
      : undefined;
  const timer = setTimeout(() => {
    timedOut = true;
    child.kill("SIGKILL");
  }, opts.timeoutMs ?? 20_000);
  return new Promise((resolvePromise, reject) => {
    child.on("error", reject);
    child.on("close", (code, signal) => {
      clearTimeout(timer);
      if (sampler) clearInterval(sampler);
      const r: RunResult = {
        stdout: Buffer.concat(out).toString("utf8"),
        stderr: Buffer.concat(err).toString("utf8"),
        code,
        signal,
        durationMs: performance.now() - started,
        timedOut,
      };
      if (peak !== undefined) r.peakRssKiB = peak;
      resolvePromise(r);
    });
  });
}

/**
 * C2.2: stdout must be exactly one JSON document (JSON.parse refuses trailing text) and the only
 * thing there. Throws with the raw stdout when it is not.
 */
export function singleJson(stdout: string): Record<string, unknown> {
  let v: unknown;
  try {
    v = JSON.parse(stdout);
  } catch (e) {
    throw new Error(
      `stdout is not exactly one JSON document (${(e as Error).message}): ` +
        `${JSON.stringify(stdout.slice(0, 500))}`,
    );
  }
  if (v === null || typeof v !== "object" || Array.isArray(v))
    throw new Error(`stdout is JSON but not an object: ${stdout.slice(0, 200)}`);
  return v as Record<string, unknown>;
}

/** The CNI error Plexus printed: exit 1 and one error object on stdout. */
export function cniError(result: RunResult): {
  cniVersion: string;
  code: number;
  msg: string;
  details?: string;
} {
  if (result.code !== 1)
    throw new Error(
      `expected exit 1, got ${result.code ?? result.signal}; ` +
        `stdout=${result.stdout.slice(0, 500)} stderr=${result.stderr.slice(0, 500)}`,
    );
  const e = singleJson(result.stdout);
  if (typeof e.code !== "number" || typeof e.msg !== "string")
    throw new Error(`not a CNI error: ${result.stdout.slice(0, 500)}`);
  return e as { cniVersion: string; code: number; msg: string; details?: string };
}

// ---------------------------------------------------------------------------------------------

/** What the fixture does for one command (see the header of test/fixtures/noop-plugin.mjs). */
export interface Behaviour {
  do?:
    | "result"
    | "ok"
    | "version"
    | "error"
    | "crash"
    | "print"
    | "hang"
    | "daemon"
    | "flood"
    | "signal";
  result?: unknown;
  resultVersion?: string;
  address?: string;
  gateway?: string;
  noIps?: boolean;
  error?: { code: number; msg?: string; details?: string };
  exitCode?: number;
  stdout?: string;
  stderr?: string;
  child?: boolean;
  stream?: "stdout" | "stderr";
  bytes?: number;
  signal?: string;
  /** The delegate's work takes this long (a slow delegate). */
  delayMs?: number;
  /**
   * Written by a "result" ADD just before it prints its result: proof that it finished its work.
   */
  doneFile?: string;
}
export type Behaviours = Partial<
  Record<"ADD" | "DEL" | "CHECK" | "STATUS" | "GC" | "VERSION", Behaviour>
>;

/** One line of the fixture's invocation log. */
export interface Invocation {
  command: string;
  network?: string;
  type?: string;
  action: string;
  pid: number;
  ppid: number;
  pgid?: number;
  childPid?: number;
  argv: string[];
  cniEnv: Record<string, string>;
  env: Record<string, string>;
  stdin: Record<string, unknown> | string;
  time: number;
  /** M10: the text of runtimeConfig.CNIDeviceInfoFile when the fixture started (null: none). */
  deviceInfoSeen?: string | null;
}

export interface DelegateOptions {
  type?: string;
  cniVersion?: string;
  behaviours?: Behaviours;
  /** Extra keys for the delegate's netconf. */
  extra?: Record<string, unknown>;
}

let sharedPodNetns: string | undefined;

/**
 * The pod's network namespace for the integration tier's calls: the run's own (made by the global
 * setup), else one for this process, made on first use and deleted when it exits (one a killed
 * process left has the test prefix, and the next run's global setup sweeps it). A runtime never
 * hands a plugin its own namespace, and Plexus refuses one (B97), so the calls cannot use
 * `/proc/self/ns/net`.
 */
export function podNetns(): string {
  // The run's own, made by its global setup (global-setup.ts).
  const fromSetup = process.env.PLEXUS_TEST_POD_NETNS;
  if (fromSetup) return fromSetup;
  if (sharedPodNetns) return sharedPodNetns;
  const name = `plx-it-pod-${process.pid}`;
  try {
    execFileSync("ip", ["netns", "add", name], { stdio: ["ignore", "ignore", "pipe"] });
  } catch (err) {
    const why = (err as { stderr?: Buffer }).stderr?.toString().trim() ?? String(err);
    throw new Error(
      `the integration tests need root to make a pod namespace (ip netns add): ${why}`,
    );
  }
  process.once("exit", () => spawnSync("ip", ["netns", "delete", name]));
  sharedPodNetns = `/var/run/netns/${name}`;
  return sharedPodNetns;
}

export class Sandbox {
  readonly root: string;
  readonly binDir: string;
  readonly cniDir: string;
  readonly logPath: string;
  /** In the environment of every run of this sandbox (see env()). */
  readonly marker = randomBytes(8).toString("hex");

  constructor(prefix = "plx-it-") {
    this.root = mkdtempSync(join(tmpdir(), prefix));
    this.binDir = join(this.root, "bin");
    this.cniDir = join(this.root, "cni");
    this.logPath = join(this.root, "invocations.jsonl");
    mkdirSync(this.binDir);
  }

  /**
   * Copies the fixture into CNI_PATH as `type` (a copy, so a test may hold it open for writing).
   */
  installPlugin(type = "noop", mode = 0o755): string {
    const dest = join(this.binDir, type);
    copyFileSync(FIXTURE, dest);
    chmodSync(dest, mode);
    return dest;
  }

  debugFilePath(network: string): string {
    return join(this.root, `debug-${network}.json`);
  }

  /** (Re)writes a network's debug file; the fixture re-reads it on every call. */
  setBehaviours(network: string, behaviours: Behaviours): string {
    const path = this.debugFilePath(network);
    writeFileSync(path, JSON.stringify({ log: this.logPath, ...behaviours }));
    return path;
  }

  /** A single-plugin delegate netconf driven by its own debug file; installs its type if needed. */
  delegate(name: string, options: DelegateOptions = {}): Record<string, unknown> {
    const type = options.type ?? "noop";
    if (!existsSync(join(this.binDir, type))) this.installPlugin(type);
    return {
      cniVersion: options.cniVersion ?? "1.0.0",
      name,
      type,
      debugFile: this.setBehaviours(name, options.behaviours ?? {}),
      ...options.extra,
    };
  }

  /** Plexus's own (Multus thin) config with a temp cniDir. */
  /**
   * A Plexus config over these delegates. It says `withoutKubernetes` (a node without a cluster, as
   * most of these tests are): an ADD naming a pod then attaches the delegates instead of failing
   * for want of a kubeconfig. A test of that failure passes `withoutKubernetes: false`.
   */
  config(delegates: unknown[], extra: Record<string, unknown> = {}): Record<string, unknown> {
    return {
      cniVersion: "1.0.0",
      name: "plexus-test",
      type: "plexus",
      cniDir: this.cniDir,
      delegates,
      withoutKubernetes: true,
      ...extra,
    };
  }

  env(
    command: string,
    extra: Record<string, string | undefined> = {},
  ): Record<string, string | undefined> {
    // The marker reaches dist/plexus and, through it, every delegate and their children: how
    // liveProcesses finds a leaked one whatever its command line.
    const base: Record<string, string | undefined> = {
      PATH: TEST_PATH,
      CNI_COMMAND: command,
      CNI_PATH: this.binDir,
      PLX_IT_MARK: this.marker,
    };
    if (command === "ADD" || command === "CHECK" || command === "DEL") {
      Object.assign(base, {
        CNI_CONTAINERID: "ctr1",
        CNI_NETNS: podNetns(),
        CNI_IFNAME: "eth0",
        CNI_ARGS: "IgnoreUnknown=1",
      });
    }
    return { ...base, ...extra };
  }

  /**
   * Runs plexus for `command` with the config on stdin (cwd: the sandbox, so nothing lands
   * elsewhere).
   */
  run(
    command: string,
    conf: unknown,
    env: Record<string, string | undefined> = {},
    options: Partial<RunOptions> = {},
  ): Promise<RunResult> {
    const stdin =
      typeof conf === "string" || conf instanceof Uint8Array ? conf : JSON.stringify(conf);
    return runPlexus({ cwd: this.root, ...options, env: this.env(command, env), stdin });
  }

  invocations(): Invocation[] {
    if (!existsSync(this.logPath)) return [];
    return readFileSync(this.logPath, "utf8")
      .split("\n")
      .filter(Boolean)
      .map((l) => JSON.parse(l) as Invocation);
  }

  /** `command network` per invocation, in order: ["ADD net-a", "DEL net-a"]. */
  calls(): string[] {
    return this.invocations().map((i) => `${i.command} ${i.network ?? "?"}`);
  }

  recordFiles(): string[] {
    return listFiles(join(this.cniDir, "records"));
  }

  resultFiles(): string[] {
    return listFiles(join(this.cniDir, "results"));
  }

  /** Live processes whose command line mentions this sandbox (fixtures, their grandchildren). */
  /**
   * Live (not zombie) processes of this sandbox: its path in their command line, or its marker in
   * their environment.
   */
  liveProcesses(): Array<{ pid: number; cmdline: string }> {
    const byPid = new Map(processesMentioning(this.root).map((p) => [p.pid, p]));
    for (const p of processesWithEnv(`PLX_IT_MARK=${this.marker}`)) byPid.set(p.pid, p);
    return [...byPid.values()];
  }

  /**
   * Waits briefly for stragglers to die (a SIGKILLed group is not reaped instantly), kills any
   * that remain (by pid; they are ours) and removes the sandbox. Returns what was still running.
   */
  async dispose(): Promise<Array<{ pid: number; cmdline: string }>> {
    let left = this.liveProcesses();
    for (let i = 0; i < 40 && left.length > 0; i++) {
      await new Promise((r) => setTimeout(r, 50));
      left = this.liveProcesses();
    }
    for (const p of left) {
      try {
        process.kill(p.pid, "SIGKILL");
      } catch {
        // Gone meanwhile.
      }
    }
    rmSync(this.root, { recursive: true, force: true });
    return left;
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.dispose();
  }
}

function listFiles(dir: string): string[] {
  try {
    return readdirSync(dir).sort();
  } catch {
    return [];
  }
}

/** Live (not zombie) processes whose environment holds `entry` (`NAME=value`). */
function processesWithEnv(entry: string): Array<{ pid: number; cmdline: string }> {
  const needle = Buffer.from(`${entry}\0`);
  const out: Array<{ pid: number; cmdline: string }> = [];
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name) || Number(name) === process.pid) continue;
    try {
      if (!readFileSync(`/proc/${name}/environ`).includes(needle)) continue;
      const stat = readFileSync(`/proc/${name}/stat`, "utf8");
      if (stat.slice(stat.lastIndexOf(")") + 2).startsWith("Z")) continue;
      out.push({
        pid: Number(name),
        cmdline: readFileSync(`/proc/${name}/cmdline`, "utf8").replaceAll("\0", " ").trim(),
      });
    } catch {
      // Exited meanwhile.
    }
  }
  return out;
}

function processesMentioning(needle: string): Array<{ pid: number; cmdline: string }> {
  const out: Array<{ pid: number; cmdline: string }> = [];
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name) || Number(name) === process.pid) continue;
    let cmdline: string;
    try {
      cmdline = readFileSync(`/proc/${name}/cmdline`, "utf8").replaceAll("\0", " ").trim();
    } catch {
      continue;
    }
    if (cmdline.includes(needle)) out.push({ pid: Number(name), cmdline });
  }
  return out;
}

/** True while `pid` exists and is not a zombie. */
export function isAlive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3) !== "Z";
  } catch {
    return false;
  }
}

/** Polls `cond` every 20 ms until it holds or `timeoutMs` passes. */
export async function waitFor(cond: () => boolean, timeoutMs: number, what: string): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** JSON with keys sorted at every level and no whitespace, as containerd feeds plugins (K3). */
export function sortedCompactJson(value: unknown): string {
  const sort = (x: unknown): unknown => {
    if (Array.isArray(x)) return x.map(sort);
    if (x && typeof x === "object") {
      return Object.fromEntries(
        Object.keys(x)
          .sort()
          .map((k) => [k, sort((x as Record<string, unknown>)[k])]),
      );
    }
    return x;
  };
  return JSON.stringify(sort(value));
}

/**
 * GET `path` over a unix socket (the daemon's); resolves with the status, 0 when nothing answered.
 */
export function unixSocketStatus(socket: string, path: string): Promise<number> {
  return new Promise((resolve) => {
    const req = request({ socketPath: socket, path }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on("error", () => resolve(0));
    req.end();
  });
}
