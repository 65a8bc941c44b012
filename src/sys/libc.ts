/**
 * The libc calls Plexus needs that neither Node nor Bun offers, for every caller: flock(2) for the
 * container lock (store/container-lock.ts), prctl(PR_SET_CHILD_SUBREAPER) and waitpid(2) for the
 * delegates' orphans (invoke/orphans.ts), setns(2) and a route netlink socket for the pod's
 * default routes (netns/rtnetlink.ts). One dlopen through bun:ffi binds all of them on first use:
 * a call that needs none of them pays nothing, one that needs any binds them all (what that costs
 * against two loaders: docs/benchmarks.md, "Levers, measured"). Under Node (development, unit
 * tests) there is none: `libc()` is null, and each caller has its own fallback.
 */
import { type BunFfi, bunFfi } from "./runtime";

export interface Libc {
  flock(fd: number, op: number): number;
  prctl(option: number, arg2: number, arg3: number, arg4: number, arg5: number): number;
  /** `status` is always null here (0): only "is there a child, and which one ended" is asked. */
  waitpid(pid: number, status: null, options: number): number;
  setns(fd: number, nstype: number): number;
  socket(domain: number, type: number, protocol: number): number;
  if_nametoindex(name: Uint8Array): number;
  send(fd: number, buf: Uint8Array, len: number, flags: number): number | bigint;
  recv(fd: number, buf: Uint8Array, len: number, flags: number): number | bigint;
  close(fd: number): number;
  /** This thread's errno: read it right after the call that failed, before any other. */
  errno(): number;
}

interface Errno {
  __errno_location(): unknown;
}

let loaded: Libc | null | undefined;

export function libc(): Libc | null {
  if (loaded !== undefined) return loaded;
  loaded = null;
  try {
    const ffi = bunFfi();
    if (ffi) loaded = openLibc(ffi);
  } catch {
    loaded = null;
  }
  return loaded;
}

function openLibc(ffi: BunFfi): Libc {
  const { i32, u32, u64, i64, ptr } = ffi.FFIType;
  const { symbols } = ffi.dlopen<Omit<Libc, "errno"> & Errno>("libc.so.6", {
    flock: { args: [i32, i32], returns: i32 },
    prctl: { args: [i32, u64, u64, u64, u64], returns: i32 },
    waitpid: { args: [i32, ptr, i32], returns: i32 },
    setns: { args: [i32, i32], returns: i32 },
    socket: { args: [i32, i32, i32], returns: i32 },
    if_nametoindex: { args: [ptr], returns: u32 },
    send: { args: [i32, ptr, u64, i32], returns: i64 },
    recv: { args: [i32, ptr, u64, i32], returns: i64 },
    close: { args: [i32], returns: i32 },
    __errno_location: { args: [], returns: ptr },
  });
  return { ...symbols, errno: () => ffi.read.i32(symbols.__errno_location(), 0) };
}
