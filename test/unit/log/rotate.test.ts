import {
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  utimesSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { gunzipSync } from "node:zlib";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { backupName, rotateIfNeeded } from "../../../src/log/rotate";

describe("M1 logOptions: log rotation on open", () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), "plx-rotate-"));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  const touch = (name: string, at: Date, text = "old") => {
    const p = join(dir, name);
    writeFileSync(p, text);
    utimesSync(p, at.getTime() / 1000, at.getTime() / 1000);
    return p;
  };

  it("M1 leaves a file under maxSize alone", () => {
    const file = join(dir, "plexus.log");
    writeFileSync(file, "x".repeat(1000));
    rotateIfNeeded(file, { maxSize: 1 });
    expect(readdirSync(dir)).toEqual(["plexus.log"]);
  });

  it("M1 B74 renames a file over maxSize to a timestamped backup; compression happens after the call returns, in a detached child", async () => {
    const file = join(dir, "plexus.log");
    const body = "line\n".repeat(300_000); // ~1.4 MiB
    writeFileSync(file, body);
    const started = performance.now();
    rotateIfNeeded(file, { maxSize: 1, compress: true }, new Date("2026-01-02T03:04:05Z"));
    const tookMs = performance.now() - started;
    // The call only renamed: when it returns the backup is there uncompressed (a child process
    // takes tens of milliseconds just to start), so no CNI call waits for gzip.
    expect(readdirSync(dir)).toEqual(["plexus-2026-01-02T03-04-05.000Z.log"]);
    expect(tookMs).toBeLessThan(1000);
    await expect
      .poll(() => readdirSync(dir), { timeout: 10_000, interval: 50 })
      .toEqual(["plexus-2026-01-02T03-04-05.000Z.log.gz"]);
    expect(
      gunzipSync(readFileSync(join(dir, "plexus-2026-01-02T03-04-05.000Z.log.gz"))).toString(),
    ).toBe(body);
  });

  it("M1 prunes backups beyond maxBackups and older than maxAge", () => {
    const file = join(dir, "plexus.log");
    const now = new Date("2026-06-01T00:00:00Z");
    const names = [1, 2, 3, 4].map((i) => {
      const at = new Date(`2026-05-0${i}T00:00:00Z`);
      const name = backupName(file, at) + (i === 1 ? ".gz" : "");
      touch(name, at);
      return name;
    });
    writeFileSync(file, "current");
    rotateIfNeeded(file, { maxSize: 100, maxBackups: 2 }, now);
    expect(readdirSync(dir).sort()).toEqual([names[2], names[3], "plexus.log"]);
    rotateIfNeeded(file, { maxSize: 100, maxAge: 28.5 }, now);
    expect(readdirSync(dir).sort()).toEqual([names[3], "plexus.log"]);
  });

  it("B74 backups are ordered by the time in their names: a newer mtime, a directory or a symlink named like one cannot push out the backup just rotated", () => {
    const file = join(dir, "plexus.log");
    const now = new Date("2026-06-01T00:00:00Z");
    // An old backup touched today (copied back, say): still the oldest by its name.
    const old = touch(backupName(file, new Date("2026-05-01T00:00:00Z")), now);
    // Names of backups from the future, which are not backups: a directory and a symlink.
    mkdirSync(join(dir, backupName(file, new Date("2027-01-01T00:00:00Z"))));
    writeFileSync(join(dir, "elsewhere"), "keep");
    const future = backupName(file, new Date("2027-01-02T00:00:00Z"));
    symlinkSync(join(dir, "elsewhere"), join(dir, future));
    writeFileSync(file, "x".repeat(2 * 1024 * 1024));
    rotateIfNeeded(file, { maxSize: 1, maxBackups: 1 }, now);
    const rotated = backupName(file, now);
    expect(readdirSync(dir)).toContain(rotated);
    expect(readdirSync(dir)).not.toContain(old.split("/").pop());
    // What was not a backup is untouched.
    expect(readdirSync(dir)).toContain(backupName(file, new Date("2027-01-01T00:00:00Z")));
    expect(readFileSync(join(dir, "elsewhere"), "utf8")).toBe("keep");
  });

  it("B74 with logFile plexus.log, maxAge and maxBackups prune only plexus.log's own backups: sibling logs stay", () => {
    const file = join(dir, "plexus.log");
    const old = new Date("2025-01-01T00:00:00Z");
    const siblings = [
      "plexus-daemon.log",
      "plexus-install.log",
      "plexus-install.log.gz",
      "plexus-2025-01-01.log",
      "plexus-old.log",
      "plexus-2025-01-01T00-00-00.000Z.log.bak",
    ];
    for (const n of siblings) touch(n, old);
    const own = touch(backupName(file, old), old);
    writeFileSync(file, "current");
    rotateIfNeeded(
      file,
      { maxSize: 100, maxAge: 1, maxBackups: 1 },
      new Date("2026-06-01T00:00:00Z"),
    );
    expect(readdirSync(dir).sort()).toEqual([...siblings, "plexus.log"].sort());
    expect(readdirSync(dir)).not.toContain(own.split("/").pop());
  });

  it("B74 a .rotate-lock left by a killed process stops rotation for a minute at most", () => {
    const file = join(dir, "plexus.log");
    const now = new Date("2026-06-01T00:10:00Z");
    writeFileSync(file, "x".repeat(2 * 1024 * 1024));
    // A fresh lock: another process is rotating right now, so this one leaves the file alone.
    touch("plexus.log.rotate-lock", new Date(now.getTime() - 5_000), "");
    rotateIfNeeded(file, { maxSize: 1 }, now);
    expect(readdirSync(dir).sort()).toEqual(["plexus.log", "plexus.log.rotate-lock"]);
    // Two minutes old: its owner was killed; the lock is taken over, the file rotated, the lock
    // gone.
    touch("plexus.log.rotate-lock", new Date(now.getTime() - 120_000), "");
    rotateIfNeeded(file, { maxSize: 1 }, now);
    expect(readdirSync(dir)).toEqual([backupName(file, now)]);
  });

  it("M1 never throws when the log directory is missing", () => {
    expect(() =>
      rotateIfNeeded(join(dir, "nope", "plexus.log"), { maxSize: 1, maxBackups: 1 }),
    ).not.toThrow();
  });
});
