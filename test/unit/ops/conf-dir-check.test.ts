/**
 * `plexus doctor`'s look at the CNI config directory, in-process on a temp dir: the runtime's
 * config, and each file sorting before Plexus's that the runtime would load first, named even when
 * Plexus cannot read it (a FIFO, a file over the size cap).
 */
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { checkRuntimeConfig } from "../../../src/ops/conf-dir-check";

let confDir: string;
beforeEach(() => {
  confDir = mkdtempSync(join(tmpdir(), "plx-confdir-check-"));
});
afterEach(() => rmSync(confDir, { recursive: true, force: true }));

const PLEXUS = JSON.stringify({
  cniVersion: "1.0.0",
  name: "plexus-cni-network",
  plugins: [{ type: "plexus", clusterNetwork: "/etc/cni/net.d/10-bridge.conflist" }],
});
const MULTUS = JSON.stringify({ cniVersion: "1.0.0", name: "m", type: "multus" });

function check() {
  const lines: Array<{ level: string; msg: string }> = [];
  checkRuntimeConfig(confDir, (level, _subject, msg) => void lines.push({ level, msg }));
  return lines;
}

describe("B90 doctor names a file the runtime would load before Plexus's config", () => {
  it("B90 Plexus's config first and nothing odd before it: one ok line", () => {
    writeFileSync(join(confDir, "00-plexus.conflist"), PLEXUS);
    mkdirSync(join(confDir, "00-a.conf"));
    expect(check()).toEqual([
      {
        level: "ok",
        msg: `${join(confDir, "00-plexus.conflist")} (the first in ${confDir}) runs Plexus`,
      },
    ]);
  });

  it("B90 a FIFO before Plexus's config: not ok, the FIFO named with what to do", () => {
    writeFileSync(join(confDir, "00-plexus.conflist"), PLEXUS);
    execFileSync("mkfifo", [join(confDir, "00-a.conf")]);
    const lines = check();
    expect(lines.map((l) => l.level)).toEqual(["error", "error"]);
    expect(lines[0]!.msg).toMatch(/runs Plexus, but the runtime lists 1 file\(s\) before it/);
    expect(lines[1]!.msg).toContain(`${join(confDir, "00-a.conf")} sorts before 00-plexus`);
    expect(lines[1]!.msg).toMatch(/it is a FIFO.*Move it out of/);
  });

  it("B90 Multus first, then a 2 MiB file: both named, the file as blocking the take-over", () => {
    writeFileSync(join(confDir, "00-multus.conf"), MULTUS);
    writeFileSync(join(confDir, "00-nm.json"), Buffer.alloc(2 << 20, 0x20));
    writeFileSync(join(confDir, "00-plexus.conflist"), PLEXUS);
    const lines = check();
    expect(lines.map((l) => l.level)).toEqual(["error", "error"]);
    expect(lines[0]!.msg).toMatch(/the runtime uses .*00-multus\.conf, not Plexus/);
    expect(lines[1]!.msg).toMatch(
      /00-nm\.json sorts before 00-plexus\.conflist and cannot be read/,
    );
    expect(lines[1]!.msg).toMatch(/2097152 bytes.*does not take over from Multus/);
  });
});
