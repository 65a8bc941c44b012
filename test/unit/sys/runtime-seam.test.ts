/**
 * One seam to the runtime: src/sys/runtime.ts is the only module of src/ that asks whether Bun is
 * there (the global `Bun`, bun:* modules, Bun's embedded file system `/$bunfs/`, Bun-only
 * properties). Every other module asks it. Read from the syntax tree, so comments that name
 * Bun.spawn or `/$bunfs/` are not reads.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join, relative, sep } from "node:path";
import ts from "typescript";
import { describe, expect, it } from "vitest";
import { REPO_ROOT } from "../../support/plexus-bin";

const SEAM = "src/sys/runtime.ts";

/** Properties only Bun's global has: reaching them means reaching Bun. */
const BUN_ONLY_PROPERTIES = new Set(["isStandaloneExecutable", "setJITPolicy"]);

/** What in a string means Bun: its modules (`bun`, `bun:ffi`), its file system, its name. */
function bunString(text: string): string | undefined {
  if (/^bun(:|$)/.test(text)) return `the module "${text}"`;
  if (text.includes("$bunfs")) return "Bun's embedded file system ($bunfs)";
  if (text === "Bun") return 'the name "Bun"';
  return undefined;
}

/** Each read of the runtime in `text`, as `line: what`. */
function runtimeReads(file: string, text: string): string[] {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const found: string[] = [];
  const at = (node: ts.Node, what: string) => {
    const { line } = source.getLineAndCharacterOfPosition(node.getStart(source));
    found.push(`${line + 1}: ${what}`);
  };
  const visit = (node: ts.Node): void => {
    if (ts.isIdentifier(node) && node.text === "Bun") at(node, "the global Bun");
    else if (ts.isPropertyAccessExpression(node) && BUN_ONLY_PROPERTIES.has(node.name.text))
      at(node, `Bun's ${node.name.text}`);
    else if (ts.isStringLiteralLike(node) || ts.isTemplateLiteralToken(node)) {
      const what = bunString(node.text);
      if (what) at(node, what);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

const repoPath = (file: string) => relative(REPO_ROOT, file).split(sep).join("/");

function sourceFiles(): string[] {
  return readdirSync(join(REPO_ROOT, "src"), { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile() && /\.(ts|mts|cts|js|mjs)$/.test(e.name))
    .map((e) => repoPath(join(e.parentPath, e.name)))
    .sort();
}

describe("one seam to the runtime", () => {
  it("no module of src/ but sys/runtime.ts reads Bun", () => {
    const offenders = sourceFiles()
      .filter((file) => file !== SEAM)
      .flatMap((file) =>
        runtimeReads(file, readFileSync(join(REPO_ROOT, file), "utf8")).map(
          (read) => `${file}:${read} (ask ${SEAM})`,
        ),
      );
    expect(offenders).toEqual([]);
  });

  it("sys/runtime.ts is where Bun is read, and it imports nothing", () => {
    const text = readFileSync(join(REPO_ROOT, SEAM), "utf8");
    expect(runtimeReads(SEAM, text).length).toBeGreaterThan(0);
    const source = ts.createSourceFile(SEAM, text, ts.ScriptTarget.Latest, true);
    expect(source.statements.filter(ts.isImportDeclaration)).toEqual([]);
  });

  it("the check sees each way of reaching Bun, and not a comment that names it", () => {
    const reads = (code: string) => runtimeReads("x.ts", code);
    expect(reads("const b = (globalThis as { Bun?: unknown }).Bun;")).toEqual([
      "1: the global Bun",
      "1: the global Bun",
    ]);
    expect(reads("if (typeof Bun !== 'undefined') Bun.spawn(x);")).toHaveLength(2);
    expect(reads('const g = (globalThis as any)["Bun"];')).toEqual(['1: the name "Bun"']);
    expect(reads('const ffi = require("bun:ffi");')).toEqual(['1: the module "bun:ffi"']);
    expect(reads('import { $ } from "bun";')).toEqual(['1: the module "bun"']);
    expect(reads('\nconst own = main.startsWith("/$bunfs/");')).toEqual([
      "2: Bun's embedded file system ($bunfs)",
    ]);
    expect(reads("const s = b?.isStandaloneExecutable === true;")).toEqual([
      "1: Bun's isStandaloneExecutable",
    ]);
    expect(reads("b.unsafe.setJITPolicy(1);")).toEqual(["1: Bun's setJITPolicy"]);
    const fine = [
      "/** Bun.spawn in the executable, under `/$bunfs/`: see Bun.isStandaloneExecutable. */",
      "// (globalThis as { Bun?: unknown }).Bun",
      'import { isStandaloneExecutable, type BunSpawn } from "../sys/runtime";',
      "const standalone = isStandaloneExecutable();",
      "const s: BunSpawn | undefined = bunSpawn();",
      'const why = "Bun\'s fetch failed";',
    ].join("\n");
    expect(reads(fine)).toEqual([]);
  });
});
