import { mkdtempSync, readdirSync, readFileSync, rmSync, utimesSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { gunzipSync } from "node:zlib";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { rotateIfNeeded } from "../../../src/log/rotate";

describe("M1 logOptions: log rotation on open", () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), "plx-rotate-"));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it("M1 leaves a file under maxSize alone", () => {
    const file = join(dir, "plexus.log");
    writeFileSync(file, "x".repeat(1000));
    rotateIfNeeded(file, { maxSize: 1 });
    expect(readdirSync(dir)).toEqual(["plexus.log"]);
  });

  it("M1 renames a file over maxSize to a timestamped backup, compressed when asked", () => {
    const file = join(dir, "plexus.log");
    const body = "line\n".repeat(300_000); // ~1.4 MiB
    writeFileSync(file, body);
    rotateIfNeeded(file, { maxSize: 1, compress: true }, new Date("2026-01-02T03:04:05Z"));
    const names = readdirSync(dir);
    expect(names).toEqual(["plexus-2026-01-02T03-04-05.000Z.log.gz"]);
    expect(gunzipSync(readFileSync(join(dir, names[0]!))).toString()).toBe(body);
  });

  it("M1 prunes backups beyond maxBackups and older than maxAge", () => {
    const file = join(dir, "plexus.log");
    const now = new Date("2026-06-01T00:00:00Z");
    for (let i = 1; i <= 4; i++) {
      const p = join(dir, `plexus-2026-05-0${i}.log`);
      writeFileSync(p, "old");
      const t = new Date(`2026-05-0${i}T00:00:00Z`).getTime() / 1000;
      utimesSync(p, t, t);
    }
    writeFileSync(file, "current");
    rotateIfNeeded(file, { maxSize: 100, maxBackups: 2 }, now);
    expect(readdirSync(dir).sort()).toEqual(["plexus-2026-05-03.log", "plexus-2026-05-04.log", "plexus.log"]);
    rotateIfNeeded(file, { maxSize: 100, maxAge: 28.5 }, now);
    expect(readdirSync(dir).sort()).toEqual(["plexus-2026-05-04.log", "plexus.log"]);
  });

  it("M1 never throws when the log directory is missing", () => {
    expect(() => rotateIfNeeded(join(dir, "nope", "plexus.log"), { maxSize: 1, maxBackups: 1 })).not.toThrow();
  });
});
