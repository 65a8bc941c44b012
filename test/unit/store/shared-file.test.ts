import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, truncateSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { readSharedFile } from "../../../src/store/shared-file";

describe("readSharedFile: what sits in a shared directory is input", () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), "plx-shared-"));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it("reads a regular file; a missing one (or one under a file) is missing (B47)", () => {
    writeFileSync(join(dir, "a"), "hello");
    const read = readSharedFile(join(dir, "a"), { maxBytes: 10 });
    expect(read.state === "found" && read.data.toString()).toBe("hello");
    expect(readSharedFile(join(dir, "gone"), { maxBytes: 10 })).toEqual({ state: "missing" });
    expect(readSharedFile(join(dir, "a", "b"), { maxBytes: 10 })).toEqual({ state: "missing" });
  });

  it("B72 a FIFO is refused at once (no writer needed), as is a directory", () => {
    execFileSync("mkfifo", [join(dir, "fifo")]);
    const started = Date.now();
    expect(readSharedFile(join(dir, "fifo"), { maxBytes: 10 })).toMatchObject({
      state: "refused",
      why: "not-regular",
      reason: "it is a FIFO, not a regular file",
    });
    expect(Date.now() - started).toBeLessThan(1000);
    mkdirSync(join(dir, "d"));
    expect(readSharedFile(join(dir, "d"), { maxBytes: 10 })).toMatchObject({
      state: "refused",
      why: "not-regular",
    });
  });

  it("B73 a symlink is not followed, even to a readable regular file", () => {
    writeFileSync(join(dir, "secret"), "root only");
    symlinkSync(join(dir, "secret"), join(dir, "link"));
    expect(readSharedFile(join(dir, "link"), { maxBytes: 100 })).toMatchObject({
      state: "refused",
      why: "not-regular",
      reason: "it is a symbolic link (not followed)",
    });
  });

  it("a file over the cap is refused from its size, with the size; one at the cap is read", () => {
    writeFileSync(join(dir, "big"), "");
    truncateSync(join(dir, "big"), 50 * 1024 * 1024);
    expect(readSharedFile(join(dir, "big"), { maxBytes: 1024 })).toMatchObject({
      state: "refused",
      why: "too-large",
      size: 50 * 1024 * 1024,
      reason: "it is 52428800 bytes, more than the 1024-byte limit",
    });
    writeFileSync(join(dir, "exact"), "x".repeat(1024));
    const read = readSharedFile(join(dir, "exact"), { maxBytes: 1024 });
    expect(read.state === "found" && read.data.length).toBe(1024);
  });
  it("B72 B80 a device node is never opened: its type is checked first (a driver-less device, whose open fails)", () => {
    if (process.getuid?.() !== 0) return; // mknod needs root; the root tiers run it
    // Major 240 is for local use: no driver, so an open would fail with ENXIO or ENODEV.
    execFileSync("mknod", [join(dir, "dev"), "c", "240", "0"]);
    expect(readSharedFile(join(dir, "dev"), { maxBytes: 10 })).toMatchObject({
      state: "refused",
      why: "not-regular",
      reason: "it is a device, not a regular file",
    });
    execFileSync("mknod", [join(dir, "blk"), "b", "240", "0"]);
    expect(readSharedFile(join(dir, "blk"), { maxBytes: 10 })).toMatchObject({
      reason: "it is a device, not a regular file",
    });
  });

  it("a symlink is followed only when asked, and then only to a regular file", () => {
    writeFileSync(join(dir, "conf"), "{}");
    symlinkSync(join(dir, "conf"), join(dir, "to-conf"));
    execFileSync("mkfifo", [join(dir, "fifo")]);
    symlinkSync(join(dir, "fifo"), join(dir, "to-fifo"));
    const read = readSharedFile(join(dir, "to-conf"), { maxBytes: 10, followSymlink: true });
    expect(read.state === "found" && read.data.toString()).toBe("{}");
    const viaLink = readSharedFile(join(dir, "to-fifo"), { maxBytes: 10, followSymlink: true });
    expect(viaLink).toMatchObject({
      reason: "it is a FIFO, not a regular file",
    });
  });
});
