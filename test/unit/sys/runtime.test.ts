/**
 * src/sys/runtime.ts, the one seam to the runtime: under Node nothing of Bun's is offered (each
 * caller takes its Node fallback); under Bun running the source, Bun's entry points are, but it is
 * not the compiled executable (that one is run by the integration tests, dist/plexus).
 */
import { describe, expect, it } from "vitest";
import {
  bunConnect,
  bunFetch,
  bunFfi,
  bunSpawn,
  isStandaloneExecutable,
  ownExecutablePath,
  setJitPolicy,
} from "../../../src/sys/runtime";
import { runBunCase } from "./run-bun";

describe("the runtime seam", () => {
  it("under Node: not the executable, no own path, none of Bun's entry points; JIT a no-op", () => {
    expect(isStandaloneExecutable()).toBe(false);
    expect(ownExecutablePath()).toBeUndefined();
    expect([bunSpawn(), bunConnect(), bunFetch(), bunFfi()]).toEqual([
      undefined,
      undefined,
      undefined,
      undefined,
    ]);
    expect(() => setJitPolicy(1)).not.toThrow();
  });

  it("under Bun running the source: spawn, connect, fetch, bun:ffi; not the executable", () => {
    expect(runBunCase("runtime")).toEqual({
      standalone: false,
      own: null,
      spawn: "function",
      connect: "function",
      fetch: "function",
      dlopen: "function",
    });
  });
});
