import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { findTool, TOOL_PATHS } from "../../../src/netns/routes";

describe("M4 default-route's tools: fixed absolute paths, never $PATH", () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), "plx-tools-"));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it("M4 the candidates are absolute, in a fixed order", () => {
    for (const paths of Object.values(TOOL_PATHS)) for (const p of paths) expect(p.startsWith("/")).toBe(true);
    expect(TOOL_PATHS.ip[0]).toBe("/usr/sbin/ip");
  });

  it("M4 the first executable regular file wins; a directory or a non-executable file is passed over", () => {
    mkdirSync(join(dir, "a"));
    writeFileSync(join(dir, "b"), "#!/bin/sh\n", { mode: 0o644 });
    writeFileSync(join(dir, "c"), "#!/bin/sh\n", { mode: 0o755 });
    writeFileSync(join(dir, "d"), "#!/bin/sh\n", { mode: 0o755 });
    const candidates = ["a", "b", "c", "d"].map((n) => join(dir, n));
    // Root may execute a 0644 file's access check; X_OK still needs one x bit, so b is passed over.
    expect(findTool("ip", candidates)).toBe(join(dir, "c"));
  });

  it("M4 a node without the tool: an error naming it, its package and every path looked at", () => {
    const candidates = [join(dir, "ip"), join(dir, "sbin-ip")];
    let err: unknown;
    try {
      findTool("ip", candidates);
    } catch (e) {
      err = e;
    }
    expect(err).toMatchObject({
      code: 999,
      message: expect.stringContaining(`this node has no ip (iproute2)`),
    });
    expect((err as Error).message).toContain(candidates.join(", "));
    expect((err as Error).message).toContain("never $PATH");
  });
});
