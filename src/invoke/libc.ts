/**
 * The few libc calls Plexus needs that neither Node nor Bun offers: flock(2) for the container lock
 * (store/container-lock.ts), prctl(PR_SET_CHILD_SUBREAPER) and waitpid(2) for the delegates'
 * orphans (orphans.ts). One dlopen for all of them, through bun:ffi, on first use: each dlopen
 * compiles its trampolines, so a call that runs a delegate pays it once, and VERSION never.
 * Under Node (development, unit tests) there is none: `libc()` is null.
 */
export interface Libc {
  flock(fd: number, op: number): number;
  prctl(option: number, arg2: number, arg3: number, arg4: number, arg5: number): number;
  /** `status` is always null here (0): only "is there a child, and which one ended" is asked. */
  waitpid(pid: number, status: null, options: number): number;
}

let loaded: Libc | null | undefined;

export function libc(): Libc | null {
  if (loaded !== undefined) return loaded;
  loaded = null;
  if (typeof (globalThis as { Bun?: unknown }).Bun === "undefined") return loaded;
  try {
    const ffi = require("bun:ffi") as {
      dlopen: (lib: string, s: object) => { symbols: Libc };
      FFIType: Record<string, number>;
    };
    const { i32, u64, ptr } = ffi.FFIType as Record<"i32" | "u64" | "ptr", number>;
    loaded = ffi.dlopen("libc.so.6", {
      flock: { args: [i32, i32], returns: i32 },
      prctl: { args: [i32, u64, u64, u64, u64], returns: i32 },
      waitpid: { args: [i32, ptr, i32], returns: i32 },
    }).symbols;
  } catch {
    loaded = null;
  }
  return loaded;
}
