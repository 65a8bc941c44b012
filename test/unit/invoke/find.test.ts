/**
 * Plugin lookup in CNI_PATH (C4.1, C4.2, B9, B51) over real files in a temp dir; nothing is run.
 */
import { chmodSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { CniError } from "../../../src/cni/errors";
import { findInPath } from "../../../src/invoke/find";

let root: string;
let a: string;
let b: string;
beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), "plx-find-"));
  a = join(root, "a");
  b = join(root, "b");
  mkdirSync(a);
  mkdirSync(b);
});
afterEach(() => rmSync(root, { recursive: true, force: true }));

function plugin(dir: string, name: string, mode = 0o755): string {
  const p = join(dir, name);
  writeFileSync(p, "#!/bin/sh\n");
  chmodSync(p, mode);
  return p;
}

const failure = (pending: Promise<unknown>) =>
  pending.then(
    () => expect.fail("expected a failure"),
    (e: unknown) => e as CniError,
  );

describe("findInPath", () => {
  it("C4.1 the first directory holding an executable of that name wins", async () => {
    plugin(b, "bridge");
    const first = plugin(a, "bridge");
    expect(await findInPath("bridge", [a, b])).toBe(first);
    expect(await findInPath("bridge", [join(root, "nope"), b])).toBe(join(b, "bridge"));
  });

  it("B9 an empty CNI_PATH is 7 naming the type", async () => {
    const err = await failure(findInPath("macvlan", []));
    expect(err.code).toBe(7);
    expect(err.message).toContain('"macvlan"');
    expect(err.message).toContain("CNI_PATH is empty");
  });

  it("B9 K5 only nonexistent dirs is 7 naming the type and the dirs, without the words 'not found'", async () => {
    const dirs = [join(root, "x"), join(root, "y")];
    const err = await failure(findInPath("macvlan", dirs));
    expect(err.code).toBe(7);
    expect(err.message).toContain('"macvlan"');
    expect(err.message).toContain(dirs.join(":"));
    expect(err.message).not.toMatch(/not found/i);
  });

  it("B51 a directory of that name is skipped and named; a later executable is used", async () => {
    mkdirSync(join(a, "bridge"));
    const second = plugin(b, "bridge");
    expect(await findInPath("bridge", [a, b])).toBe(second);
    const err = await failure(findInPath("bridge", [a]));
    expect(err.code).toBe(7);
    expect(err.message).toContain(`${join(a, "bridge")} is not a regular file`);
  });

  it("B51 a file without execute permission is skipped and named", async () => {
    plugin(a, "tuning", 0o644);
    const err = await failure(findInPath("tuning", [a, b]));
    expect(err.code).toBe(7);
    expect(err.message).toContain(`${join(a, "tuning")} is not executable`);
    const second = plugin(b, "tuning");
    expect(await findInPath("tuning", [a, b])).toBe(second);
  });

  it("C4.1 a symlink to an executable is accepted; a dangling one is skipped", async () => {
    const target = plugin(root, "real-bridge");
    symlinkSync(join(root, "gone"), join(a, "bridge"));
    symlinkSync(target, join(b, "bridge"));
    expect(await findInPath("bridge", [a, b])).toBe(join(b, "bridge"));
  });

  it.each(["../a/bridge", "/bin/sh", "a/bridge", "..", "", "sh\u0000"])(
    "C4.2 B30 type %j is refused with 7 before any lookup",
    async (type) => {
      plugin(a, "bridge");
      // "../a/bridge" joined to b would find a real executable: it must not get that far.
      const err = await failure(findInPath(type, [b, a]));
      expect(err.code).toBe(7);
    },
  );
});
