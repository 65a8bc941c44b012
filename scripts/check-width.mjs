// Lines a reader can hold: no line of code, comment or string in the given folders is wider than
// the limit (100 columns, counted in characters as an editor shows them). The formatter wraps code
// but neither comments nor strings; this check holds those too. Two things may stand past the
// limit: a test's or suite's title (the one line the runner prints and the conformance page
// cites), a regular expression standing on a line of its own, and a token with no space in it
// past the limit (a URL, a hash), which no wrapping can break.
// Usage: node scripts/check-width.mjs 100 src test scripts bin
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";

const [limitArg, ...dirs] = process.argv.slice(2);
const limit = Number(limitArg);
const CODE = /\.(ts|mts|cts|js|mjs|cjs)$/;
/** A line that opens a test or a suite with its title: `it("…`, `describe.each(…)("…`. */
const TITLE_LINE = /^\s*(it|test|describe\w*|bench)(\.\w+(\([^)]*\))?)*\(\s*["'`]/;
/** The line before a title of its own: `it.each(cases)(`, `describe(`. */
const TITLE_OPENER = /^\s*(it|test|describe\w*|bench)(\.\w+(\(.*\))?)*\($|^\s*\]\)\($/;
/** A line that is one string (a title) or one regular expression, and at most `,` or `)`. */
const LONE_STRING = /^\s*(["'`]).*\1,?$/;
const LONE_REGEX = /^\s*\/.+\/[dgimsuvy]*[,;)]*$/;

/** The code files under `dir`, node_modules left out. */
function files(dir) {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile() && CODE.test(e.name) && !e.parentPath.includes("node_modules"))
    .map((e) => join(e.parentPath, e.name));
}

/** Whether a line past the limit (after `before`) is one of the allowed kinds. */
function allowed(line, before) {
  const chars = [...line];
  if (TITLE_LINE.test(line) || LONE_REGEX.test(line)) return true;
  if (LONE_STRING.test(line) && TITLE_OPENER.test(before)) return true;
  // The overflow is the tail of one token that starts before the limit.
  const tail = chars.slice(limit).join("");
  const head = chars.slice(0, limit).join("");
  const lastSpace = head.lastIndexOf(" ");
  return !/\s/.test(tail) && limit - lastSpace > 20;
}

const wide = [];
for (const file of dirs.flatMap(files)) {
  const lines = readFileSync(file, "utf8").split("\n");
  lines.forEach((line, i) => {
    if ([...line].length > limit && !allowed(line, lines[i - 1] ?? ""))
      wide.push(`${file}:${i + 1}`);
  });
}
if (wide.length) {
  console.error(`${wide.length} lines wider than ${limit} columns:\n${wide.join("\n")}`);
  process.exit(1);
}
