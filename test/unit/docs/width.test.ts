/**
 * scripts/check-width.mjs, which `npm test` runs on src/, test/, scripts/ and bin/: it must find a
 * wide comment and a wide string, and let pass only what no wrapping can break (a test's title, a
 * regular expression on a line of its own, one token with no space past the limit).
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { REPO_ROOT } from "../../support/plexus-bin";

function check(source: string): { code: number | null; stderr: string } {
  const dir = mkdtempSync(join(tmpdir(), "plx-width-"));
  try {
    writeFileSync(join(dir, "a.ts"), source);
    const script = join(REPO_ROOT, "scripts/check-width.mjs");
    const r = spawnSync(process.execPath, [script, "100", dir], { encoding: "utf8" });
    return { code: r.status, stderr: r.stderr };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const words = (n: number) => Array.from({ length: n }, () => "word").join(" ");

describe("the line-width check", () => {
  it("finds a wide comment and a wide string, and counts characters, not bytes", () => {
    expect(check(`// ${words(25)}\n`).stderr).toMatch(/1 lines wider than 100 columns:\n.*a\.ts:1/);
    expect(check(`const s = "${words(20)}";\n`).code).toBe(1);
    expect(check(`// ${"→".repeat(97)}\n`).code).toBe(0);
  });

  it("passes a title, a lone regular expression and a token that cannot be broken", () => {
    expect(check(`it("${words(25)}", () => {});\n`).code).toBe(0);
    expect(check(`  /${words(25)}/,\n`).code).toBe(0);
    expect(check(`// see https://example.com/${"x".repeat(100)}\n`).code).toBe(0);
  });
});
