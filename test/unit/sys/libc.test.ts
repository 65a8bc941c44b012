/**
 * src/sys/libc.ts, the one libc loader: under Node there is none (each caller falls back), and
 * under Bun, the runtime that ships, one dlopen on first use serves every symbol.
 */
import { describe, expect, it } from "vitest";
import { libc } from "../../../src/sys/libc";
import { runBunCase } from "./run-bun";

describe("libc", () => {
  it("under Node: null, every time, without throwing", () => {
    expect(libc()).toBeNull();
    expect(libc()).toBeNull();
  });

  it("under Bun: no dlopen until first use, then one, for flock, waitpid, prctl, close, if_nametoindex and errno", () => {
    const seen = runBunCase("libc");
    expect(seen).toMatchObject({ beforeUse: 0, afterUse: 1, same: true });
    // flock: the first descriptor takes the lock, a second one on the file gets EWOULDBLOCK (11).
    expect(seen).toMatchObject({ locked: 0, busy: -1, busyErrno: 11 });
    // errno is this thread's, read right after the failing call: EBADF (9), ECHILD (10).
    expect(seen).toMatchObject({ badClose: -1, badCloseErrno: 9, noChild: -1, noChildErrno: 10 });
    expect(seen.loIndex).toBeGreaterThan(0);
    expect(seen.subreaper).toBe(0);
  });
});
