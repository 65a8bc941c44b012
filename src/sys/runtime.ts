/**
 * The one module that knows which JavaScript runtime runs Plexus: Bun in the executable
 * (dist/plexus), Node in development and the unit tests. Everything else asks it for what only Bun
 * offers (spawn, fetch with a unix socket, sockets without Node's streams, bun:ffi) and gets
 * undefined under Node, where each caller has its Node fallback. It imports nothing: the CNI path
 * loads it, and a runtime-specific module is loaded only when asked for (bun:ffi).
 * test/unit/sys/runtime-seam.test.ts holds that no other module of src/ reads `globalThis.Bun`.
 */

/** What the delegate runner (invoke/spawn-bun.ts) needs of a Bun.spawn subprocess. */
export interface BunSubprocess {
  readonly pid: number;
  readonly exited: Promise<number>;
  readonly signalCode: string | null;
  readonly stdout: ReadableStream<Uint8Array>;
  readonly stderr: ReadableStream<Uint8Array>;
}

export type BunSpawn = (options: {
  cmd: string[];
  env: Record<string, string>;
  /** stdin, stdout, stderr, then descriptors the child inherits as fd 3, 4, … */
  stdio: [Uint8Array, "pipe", "pipe", ...number[]];
  detached: boolean;
}) => BunSubprocess | Promise<BunSubprocess>;

/** Bun's fetch: the standard one plus a unix socket, no proxy, and its own TLS options. */
export type BunFetch = (
  url: URL,
  init: RequestInit & { unix?: string; proxy?: false; tls?: Record<string, unknown> },
) => Promise<Response>;

/** What a client of a unix socket (sys/unix-socket.ts) needs of one of Bun's sockets. */
export interface BunSocketLike {
  write(bytes: Uint8Array): number;
  end(): void;
  terminate(): void;
}

export type BunConnect = (options: {
  unix: string;
  socket: {
    open(s: BunSocketLike): void;
    data(s: BunSocketLike, d: Uint8Array): void;
    drain(s: BunSocketLike): void;
    close(s: BunSocketLike): void;
    end(s: BunSocketLike): void;
    error(s: BunSocketLike, e: Error): void;
    connectError(s: BunSocketLike, e: Error): void;
  };
}) => Promise<unknown>;

/** What sys/libc.ts needs of bun:ffi. */
export interface BunFfi {
  dlopen<Symbols>(lib: string, symbols: object): { symbols: Symbols };
  FFIType: Record<"i32" | "u32" | "u64" | "i64" | "ptr", number>;
  read: { i32(pointer: unknown, offset: number): number };
}

/** The parts of the global `Bun` that Plexus uses. */
interface BunRuntime {
  spawn?: BunSpawn;
  connect?: BunConnect;
  /** The entry module: under `/$bunfs/` (Bun's embedded file system) in a compiled executable. */
  main?: string;
  isStandaloneExecutable?: boolean;
  unsafe?: { setJITPolicy?: (scale: number) => void };
}

/** The global `Bun` when this process runs on Bun, else undefined (Node). */
function bunRuntime(): BunRuntime | undefined {
  return (globalThis as { Bun?: BunRuntime }).Bun;
}

/** Whether this is the compiled Plexus (a Bun single executable), not Node nor `bun run`. */
export function isStandaloneExecutable(): boolean {
  return bunRuntime()?.isStandaloneExecutable === true;
}

/**
 * This process's own executable when it is the compiled Plexus (its entry lives in Bun's embedded
 * file system, `/$bunfs/…`), else undefined: under Node or `bun run` the runtime is not Plexus.
 */
export function ownExecutablePath(): string | undefined {
  return bunRuntime()?.main?.startsWith("/$bunfs/") ? process.execPath : undefined;
}

/** Sets JavaScriptCore's JIT tier-up policy (`scale` 1 is the default); nothing under Node. */
export function setJitPolicy(scale: number): void {
  bunRuntime()?.unsafe?.setJITPolicy?.(scale);
}

/** Bun's spawn when this process runs on Bun, else undefined. */
export function bunSpawn(): BunSpawn | undefined {
  const bun = bunRuntime();
  return typeof bun?.spawn === "function" ? bun.spawn.bind(bun) : undefined;
}

/** Bun's socket connect when this process runs on Bun, else undefined. */
export function bunConnect(): BunConnect | undefined {
  const bun = bunRuntime();
  return typeof bun?.connect === "function" ? bun.connect.bind(bun) : undefined;
}

/**
 * The global fetch, which on Bun takes Bun's options (`unix`, `tls`, `proxy`), when on Bun, else
 * undefined. Called as a plain function, as fetch is meant to be, whoever holds it.
 */
export function bunFetch(): BunFetch | undefined {
  if (bunRuntime() === undefined) return undefined;
  return (url, init) => (fetch as unknown as BunFetch)(url, init);
}

/** bun:ffi when this process runs on Bun, else undefined; loaded on first ask. */
export function bunFfi(): BunFfi | undefined {
  if (bunRuntime() === undefined) return undefined;
  return require("bun:ffi") as BunFfi;
}
