/**
 * M11, B51: the installer's binary copy streams through one chunk and leaves a whole file or
 * nothing: every size around the chunk and flush boundaries arrives byte for byte with mode 0755,
 * a second install of the same bytes is "unchanged", and no temp file is left beside it.
 */
import { randomBytes } from "node:crypto";
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { installBinary } from "../../../src/install/binary";

const MiB = 1024 * 1024;
const dir = mkdtempSync(join(tmpdir(), "plx-binary-"));

describe("installBinary", () => {
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it.each([0, 1, MiB - 1, MiB, MiB + 1, 8 * MiB, 8 * MiB + 3, 17 * MiB + 5])(
    "M11 B51 %i bytes: copied whole, 0755, then unchanged; no temp file left",
    (size) => {
      const source = join(dir, `source-${size}`);
      const binDir = mkdtempSync(join(dir, "bin-"));
      const dest = join(binDir, "plexus");
      const bytes = randomBytes(size);
      writeFileSync(source, bytes);
      expect(installBinary(source, dest)).toBe("installed");
      expect(readFileSync(dest).equals(bytes)).toBe(true);
      expect(statSync(dest).mode & 0o777).toBe(0o755);
      expect(installBinary(source, dest)).toBe("unchanged");
      expect(readdirSync(binDir)).toEqual(["plexus"]);
    },
  );

  it("B51 a source that cannot be read: a CniError naming both paths, nothing left behind", () => {
    const binDir = mkdtempSync(join(dir, "bin-"));
    const dest = join(binDir, "plexus");
    const missing = join(dir, "missing");
    expect(() => installBinary(missing, dest)).toThrow(/cannot install .*missing as .*plexus/);
    expect(readdirSync(binDir)).toEqual([]);
  });
});
