#!/usr/bin/env node
// Function length, counted as a reader sees it: from the signature's line to the closing brace's,
// on code formatted at the project's width (biome.json). Every function, method, accessor,
// constructor and arrow counts, in src/, test/, scripts/ and bin/ alike; a `describe` body is a
// list of tests, not a function, and is not counted. Parsed with the project's TypeScript.
//   node scripts/check-functions.mjs [max=60] [dir ...]
// Prints "file:line name N" per function over max, longest first, then
// "functions total=N over=N longest=N"; exits 1 when any is over.
import { readdirSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";
import ts from "typescript";

const SOURCE = /\.(ts|mts|cts|js|mjs|cjs)$/;
const SKIPPED_DIRS = new Set(["node_modules", "fixtures", "dist", ".vitest-results"]);
const COUNTED = new Set([
  ts.SyntaxKind.FunctionDeclaration,
  ts.SyntaxKind.MethodDeclaration,
  ts.SyntaxKind.GetAccessor,
  ts.SyntaxKind.SetAccessor,
  ts.SyntaxKind.Constructor,
  ts.SyntaxKind.ArrowFunction,
  ts.SyntaxKind.FunctionExpression,
]);

function sourceFiles(dir) {
  let entries;
  try {
    entries = readdirSync(dir, { withFileTypes: true });
  } catch {
    return [];
  }
  return entries.flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return SKIPPED_DIRS.has(entry.name) ? [] : sourceFiles(path);
    return SOURCE.test(entry.name) && !entry.name.endsWith(".d.ts") ? [path] : [];
  });
}

function isSuiteBody(node, file) {
  const call = node.parent;
  return (
    !!call &&
    ts.isCallExpression(call) &&
    /^(describe\w*|suite)\b/.test(call.expression.getText(file))
  );
}

/** Every counted function of one file as { line, name, length }. */
function functionsOf(path) {
  const kind = /\.[mc]?js$/.test(path) ? ts.ScriptKind.JS : ts.ScriptKind.TS;
  const text = readFileSync(path, "utf8");
  const file = ts.createSourceFile(path, text, ts.ScriptTarget.Latest, true, kind);
  const found = [];
  const visit = (node) => {
    if (COUNTED.has(node.kind) && node.body && !isSuiteBody(node, file)) {
      const first = file.getLineAndCharacterOfPosition(node.getStart(file)).line;
      const last = file.getLineAndCharacterOfPosition(node.end).line;
      const name = node.name ? node.name.getText(file) : "(anonymous)";
      found.push({ line: first + 1, name, length: last - first + 1 });
    }
    ts.forEachChild(node, visit);
  };
  visit(file);
  return found;
}

function main({ max, dirs }) {
  const root = process.cwd();
  const all = dirs.flatMap((dir) =>
    sourceFiles(join(root, dir)).flatMap((path) =>
      functionsOf(path).map((fn) => ({ ...fn, file: relative(root, path) })),
    ),
  );
  const over = all.filter((fn) => fn.length > max).sort((a, b) => b.length - a.length);
  for (const fn of over) console.log(`${fn.file}:${fn.line} ${fn.name} ${fn.length}`);
  const longest = Math.max(0, ...all.map((fn) => fn.length));
  console.log(`functions total=${all.length} over=${over.length} longest=${longest}`);
  return over.length === 0 ? 0 : 1;
}

const [maxArg, ...dirArgs] = process.argv.slice(2);
process.exitCode = main({
  max: Number(maxArg ?? 60),
  dirs: dirArgs.length > 0 ? dirArgs : ["src", "test", "scripts", "bin"],
});
