// Writes src/cni/fold-table.ts from Go itself: the Go program test/support/go/jsonfold prints the
// fold of every code point whose fold is not itself (the smallest rune of its unicode.SimpleFold
// orbit, what encoding/json compares keys by), and this script packs the non-ASCII ones into runs.
// test/integration/go-json-keys.test.ts checks the committed table against Go on every run, so a
// table that no longer matches the installed Go fails there: rerun `node scripts/fold-table.mjs`.
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const SRC = fileURLToPath(new URL("../test/support/go/jsonfold", import.meta.url));
const OUT = fileURLToPath(new URL("../src/cni/fold-table.ts", import.meta.url));

/** Runs of `count` code points from `start`, `stride` apart, each folding to itself + `delta`. */
export function packRuns(pairs) {
  const runs = [];
  for (const [from, to] of pairs) {
    const delta = to - from;
    const run = runs[runs.length - 1];
    const step = run ? from - run.start : 0;
    const extends_ =
      run &&
      run.delta === delta &&
      (run.count === 1 ? step === 1 || step === 2 : from === run.start + run.count * run.stride);
    if (!extends_) {
      runs.push({ start: from, count: 1, stride: 1, delta });
      continue;
    }
    if (run.count === 1) run.stride = step;
    run.count++;
  }
  return runs;
}

function goFolds() {
  const dir = mkdtempSync(join(tmpdir(), "plexus-jsonfold-"));
  try {
    const bin = join(dir, "jsonfold");
    const cache = join(dir, "cache");
    const env = { ...process.env, GOFLAGS: "-mod=mod", GOCACHE: cache, GOTOOLCHAIN: "local" };
    execFileSync("go", ["build", "-o", bin, "."], { cwd: SRC, env, stdio: "inherit" });
    const text = execFileSync(bin, ["fold"], { encoding: "utf8", maxBuffer: 64 << 20 });
    const version = execFileSync("go", ["version"], { encoding: "utf8" }).trim();
    const pairs = text
      .trim()
      .split("\n")
      .map((line) => line.split(" ").map((hex) => Number.parseInt(hex, 16)));
    return { version, pairs };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const { version, pairs } = goFolds();
const runs = packRuns(pairs.filter(([from]) => from >= 0x80));
const hex = (codePoint) => codePoint.toString(16);
const text = runs.map((r) => `${hex(r.start)}.${hex(r.count)}.${r.stride}.${hex(r.delta)}`);
const lines = [];
for (let i = 0; i < text.length; i += 6) lines.push(`  "${text.slice(i, i + 6).join(" ")} " +`);
writeFileSync(
  OUT,
  `/**
 * Go's key folding for non-ASCII code points (keys.ts foldKey), written by scripts/fold-table.mjs
 * from Go's own unicode.SimpleFold (${version}).
 * Runs of "start.count.stride.delta" (hex): the \`count\` code points from \`start\`, \`stride\`
 * apart, fold to themselves plus \`delta\`. Any other non-ASCII code point folds to itself.
 * Checked against Go by test/integration/go-json-keys.test.ts.
 */
export const FOLD_RUNS =
${lines.join("\n").replace(/ " \+$/, '"')};
`,
);
console.log(`${OUT}: ${runs.length} runs from ${pairs.length} folds (${version})`);
