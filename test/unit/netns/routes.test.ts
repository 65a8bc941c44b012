import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { findTool, TOOL_PATHS } from "../../../src/netns/tools";
import { ipBytes, netlinkAvailable } from "../../../src/netns/rtnetlink";

describe("M4 default-route's tools: fixed absolute paths, never $PATH", () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), "plx-tools-"));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it("M4 the candidates are absolute, in a fixed order", () => {
    for (const paths of Object.values(TOOL_PATHS))
      for (const p of paths) expect(p.startsWith("/")).toBe(true);
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

describe("M4 rtnetlink's gateway bytes", () => {
  it.each([
    ["10.216.14.1", 4, "0ad80e01"],
    ["fd00::1", 6, "fd000000000000000000000000000001"],
    ["::1", 6, "00000000000000000000000000000001"],
    ["2001:db8:1:2:3:4:5:6", 6, "20010db8000100020003000400050006"],
    ["fe80::1:2", 6, "fe800000000000000000000000010002"],
    ["::ffff:1.2.3.4", 6, "00000000000000000000ffff01020304"],
  ] as const)("M4 %s is %s", (ip, version, hex) => {
    expect(ipBytes(ip, version).toString("hex")).toBe(hex);
  });

  it("M4 under Node there is no bun:ffi: routes fall back to the tools", () => {
    expect(netlinkAvailable()).toBe(false);
  });
});
