import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";

const SCRIPT = join(process.cwd(), "scripts/check-functions.mjs");
const dirs: string[] = [];

function body(lines: number): string {
  return Array.from({ length: lines }, (_, index) => `  const v${index} = ${index};`).join("\n");
}

function checkTree(files: Record<string, string>) {
  const root = mkdtempSync(join(tmpdir(), "fnlen-"));
  dirs.push(root);
  for (const [name, text] of Object.entries(files)) writeFileSync(join(root, name), text);
  const run = spawnSync(process.execPath, [SCRIPT, "60", "."], { cwd: root, encoding: "utf8" });
  return { status: run.status, lines: run.stdout.trim().split("\n") };
}

afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

describe("the function-length check (scripts/check-functions.mjs)", () => {
  it("fails on a 61-line function, naming file, line and length; passes at 60", () => {
    const long = checkTree({ "a.ts": `export function long() {\n${body(59)}\n}\n` });
    expect(long.status).toBe(1);
    expect(long.lines[0]).toBe("a.ts:1 long 61");
    const fits = checkTree({ "a.ts": `export function fits() {\n${body(58)}\n}\n` });
    expect(fits.status).toBe(0);
    expect(fits.lines.at(-1)).toBe("functions total=1 over=0 longest=60");
  });

  it("counts arrows in scripts (.mjs) and test callbacks, but not a describe body", () => {
    const arrow = `export const go = () => {\n${body(70)}\n};\n`;
    const suite = `describe("s", () => {\n${body(70)}\n});\n`;
    const test = `it("t", () => {\n${body(70)}\n});\n`;
    const run = checkTree({ "s.mjs": arrow, "suite.test.ts": suite, "t.test.ts": test });
    expect(run.status).toBe(1);
    expect(run.lines).toContain("s.mjs:1 (anonymous) 72");
    expect(run.lines).toContain("t.test.ts:1 (anonymous) 72");
    expect(run.lines.some((line) => line.startsWith("suite.test.ts"))).toBe(false);
    expect(run.lines.at(-1)).toBe("functions total=2 over=2 longest=72");
  });
});
