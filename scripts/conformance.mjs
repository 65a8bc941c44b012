#!/usr/bin/env node
// docs/conformance.md from docs/requirements.json and the tree: for each requirement ID, where src/
// and deploy/ cite it and which test titles name it.
//   node scripts/conformance.mjs           writes docs/conformance.md
//   node scripts/conformance.mjs --check   exits 1 when an ID cited in src/, deploy/ or test/ has
// no                                          definition, a definition is malformed, or the doc is
// stale
import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join, relative, sep } from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..");
const DEFS = "docs/requirements.json";
const DOC = "docs/conformance.md";
const IMPL_DIRS = ["src", "deploy"];
const TEST_DIRS = ["test"];
const CODE_EXT = /\.(ts|mts|cts|js|mjs|cjs)$/;
const IMPL_EXT = /\.(ts|mts|cts|js|mjs|cjs|ya?ml)$/;

/** The ID shapes the code cites: N4.1.2.1.3 (N4.1.x), C2.5, M7, D1, K1, B62. */
const ID = String.raw`(?:N[0-9]+(?:\.[0-9x]+)*|C[0-9]+\.[0-9]+|M[0-9]+|D[0-9]+|K[0-9]+|B[0-9]+)`;
const ID_RE = new RegExp(String.raw`\b${ID}\b`, "g");
/** After an ID: `/4` (a sibling: N4.1.2.1.3/4) or `–B10` (a range: B1–B10). */
const TAIL_RE = new RegExp(String.raw`^(?:/([0-9]+)\b|[–-](${ID})\b)`);

// ---- definitions -------------------------------------------------------------------------------

function loadDefinitions() {
  const doc = JSON.parse(readFileSync(join(ROOT, DEFS), "utf8"));
  const groups = doc.groups.map((g) => ({ ...g, ids: Object.keys(g.requirements) }));
  const byId = new Map();
  const problems = [];
  for (const g of groups) {
    for (const [id, req] of Object.entries(g.requirements)) {
      if (!new RegExp(`^${ID}$`).test(id)) problems.push(`${id}: not an ID of the cited shape`);
      if (!id.startsWith(g.prefix))
        problems.push(`${id}: listed under group ${g.prefix} (${g.title})`);
      if (typeof req?.text !== "string" || req.text.trim() === "") problems.push(`${id}: no text`);
      if (byId.has(id)) problems.push(`${id}: defined twice`);
      byId.set(id, { ...req, id, group: g });
    }
  }
  const order = groups.map((g) => g.prefix);
  const compare = (a, b) => compareIds(a, b, order);
  for (const g of groups) g.ids.sort(compare);
  return { groups, byId, problems, compare };
}

/**
 * Natural order: group, then each dotted part as a number (`x`, any sub-key, after its siblings).
 */
function compareIds(left, right, order) {
  const byGroup = order.indexOf(left[0]) - order.indexOf(right[0]);
  if (byGroup !== 0) return byGroup;
  const pa = left.slice(1).split(".");
  const pb = right.slice(1).split(".");
  for (let i = 0; i < Math.min(pa.length, pb.length); i++) {
    const d = partValue(pa[i]) - partValue(pb[i]);
    if (d !== 0) return d;
  }
  return pa.length - pb.length;
}

const partValue = (part) => (part === "x" ? Number.MAX_SAFE_INTEGER : Number(part));

// ---- citations ---------------------------------------------------------------------------------

/** Every ID a text cites, `N4.1.2.1.3/4` and `B1–B10` expanded to the defined IDs they cover. */
function citedIds(text, defs) {
  const found = new Set();
  for (const m of text.matchAll(ID_RE)) {
    found.add(m[0]);
    const tail = TAIL_RE.exec(text.slice(m.index + m[0].length));
    const sibling = tail?.[1] && `${m[0].replace(/[0-9x]+$/, "")}${tail[1]}`;
    if (sibling && defs.byId.has(sibling)) found.add(sibling);
    if (tail?.[2]) for (const id of rangeOf(m[0], tail[2], defs)) found.add(id);
  }
  return found;
}

function rangeOf(from, to, defs) {
  const parent = (id) => id.replace(/\.?[0-9x]+$/, "");
  if (from[0] !== to[0] || parent(from) !== parent(to)) return [];
  return [...defs.byId.keys()].filter(
    (id) => parent(id) === parent(from) && defs.compare(from, id) <= 0 && defs.compare(id, to) <= 0,
  );
}

function filesUnder(dir, ext) {
  const abs = join(ROOT, dir);
  if (!existsSync(abs)) return [];
  return readdirSync(abs, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile() && ext.test(e.name))
    .map((e) => relative(ROOT, join(e.parentPath, e.name)).split(sep).join("/"))
    .sort();
}

/** id → files (repository paths) that cite it anywhere. */
function citations(dirs, ext, defs) {
  const where = new Map();
  for (const file of dirs.flatMap((d) => filesUnder(d, ext))) {
    for (const id of citedIds(readFileSync(join(ROOT, file), "utf8"), defs)) {
      if (!where.has(id)) where.set(id, new Set());
      where.get(id).add(file);
    }
  }
  return where;
}

// ---- test titles -------------------------------------------------------------------------------

/** `it`, `test` and their modifiers (`.each(…)`, `.skip`, `.skipIf(…)`, …), not `re.test(`. */
const TEST_CALL_RE = /(?<![\w$.])(?:it|test)(?:\s*\.\s*[A-Za-z]+)*\s*\(/g;

/** The titles of the tests in a file: the first argument of each test call when it is a literal. */
function testTitles(src) {
  const titles = [];
  for (const m of src.matchAll(TEST_CALL_RE)) {
    let open = m.index + m[0].length - 1;
    // it.each(table)(title, …) / it.skipIf(cond)(title, …): skip argument lists until a literal.
    for (let guard = 0; guard < 4; guard++) {
      const lit = readLiteral(src, skipSpace(src, open + 1));
      if (lit) {
        titles.push(lit.text);
        break;
      }
      const close = skipBalanced(src, open);
      if (close < 0) break;
      open = skipSpace(src, close);
      if (src[open] !== "(") break;
    }
  }
  return titles;
}

const skipSpace = (text, index) => {
  while (index < text.length && /\s/.test(text[index])) index++;
  return index;
};

/**
 * A string or template literal starting at `start`: its raw text (`${…}` kept as written) and
 * its end.
 */
function readLiteral(source, start) {
  const q = source[start];
  if (q !== '"' && q !== "'" && q !== "`") return undefined;
  const end = literalEnd(source, start);
  return end < 0 ? undefined : { text: source.slice(start + 1, end - 1), end };
}

/** Index just after the literal opening at `start`, or -1. */
function literalEnd(source, start) {
  const q = source[start];
  for (let j = start + 1; j < source.length; j++) {
    if (source[j] === "\\") j++;
    else if (source[j] === q) return j + 1;
    else if (q === "`" && source[j] === "$" && source[j + 1] === "{") {
      j = skipBalanced(source, j + 1) - 1;
      if (j < 0) return -1;
    } else if (q !== "`" && source[j] === "\n") return -1;
  }
  return -1;
}

/** `open` is at `(`, `[` or `{`: the index just after its matching closer, or -1. */
function skipBalanced(source, open) {
  const pairs = { "(": ")", "[": "]", "{": "}" };
  const stack = [pairs[source[open]]];
  if (!stack[0]) return -1;
  for (let j = open + 1; j < source.length; j++) {
    const c = source[j];
    if (c === '"' || c === "'" || c === "`") {
      j = literalEnd(source, j) - 1;
      if (j < 0) return -1;
    } else if (c === "/" && source[j + 1] === "/")
      j = source.indexOf("\n", j) < 0 ? source.length : source.indexOf("\n", j);
    else if (c === "/" && source[j + 1] === "*")
      j = source.indexOf("*/", j) < 0 ? source.length : source.indexOf("*/", j) + 1;
    else if (pairs[c]) stack.push(pairs[c]);
    else if (c === stack[stack.length - 1]) {
      stack.pop();
      if (stack.length === 0) return j + 1;
    }
  }
  return -1;
}

/** id → Map(test file → number of test titles naming it). */
function proofs(defs) {
  const proof = new Map();
  for (const file of TEST_DIRS.flatMap((d) => filesUnder(d, CODE_EXT))) {
    for (const title of testTitles(readFileSync(join(ROOT, file), "utf8"))) {
      for (const id of citedIds(title, defs)) {
        if (!proof.has(id)) proof.set(id, new Map());
        const perFile = proof.get(id);
        perFile.set(file, (perFile.get(file) ?? 0) + 1);
      }
    }
  }
  return proof;
}

// ---- the document ------------------------------------------------------------------------------

const cell = (text) => text.replace(/\|/g, "\\|").replace(/\n/g, " ");
const code = (path) => `\`${path}\``;

function render(defs, impl, proof) {
  const untested = defs.groups.flatMap((g) => g.ids).filter((id) => !proof.has(id));
  const total = defs.byId.size;
  const out = [
    "# Conformance: requirement IDs, where they are implemented, which tests prove them",
    "",
    `<!-- Generated by \`npm run conformance\` (scripts/conformance.mjs) from ${DEFS}: edit that ` +
      `file, not this one. -->`,
    "",
    "Comments in `src/` and test titles cite requirements by ID (`N4.1.2.1.3`, `C2.5`, `M7`, " +
      "`K1`, `B62`).",
    "This page says what each ID asks for, in the project's words, where the code cites it, and " +
      "which",
    "tests name it in their title. A test that proves a requirement puts its ID in its title",
    '(`it("M7 …")`), so that `grep -r "M7 " test/` finds its proof. `npm run conformance` ' +
      "rewrites this",
    `page from \`${DEFS}\`; \`npm test\` fails when it is stale or when the code cites an ID ` +
      `that has no definition.`,
    "",
    "The groups:",
    "",
    ...defs.groups.map(
      (g) =>
        `- **${g.prefix}: ${g.title}** (${g.ids.length} IDs). Source: ${g.source}. ` + `${g.about}`,
    ),
    "",
    "Where Plexus deliberately does something other than its source, the requirement says so under",
    `**Plexus differs**. "Implemented in" lists the files under ` +
      `${IMPL_DIRS.map((d) => code(`${d}/`)).join(" and ")}`,
    "that cite the ID (a range such as `B1–B10` counts for each ID in it; — when none does). " +
      '"Proved by"',
    "counts the `it`/`test` titles under `test/` that name the ID (an `it.each` title counts " +
      "once).",
    "",
    `${total} IDs are defined; ${untested.length} have no test ` +
      `yet${untested.length ? `: ${untested.join(", ")}` : ""}.`,
  ];
  for (const g of defs.groups) out.push("", ...renderGroup(g, defs, impl, proof));
  return `${out.join("\n")}\n`;
}

function renderGroup(group, defs, impl, proof) {
  const rows = group.ids.map((id) => {
    const req = defs.byId.get(id);
    const text = req.differs ? `${req.text} **Plexus differs:** ${req.differs}` : req.text;
    const files = [...(impl.get(id) ?? [])].sort();
    return (
      `| ${id} | ${cell(text)} | ${files.length ? files.map(code).join(", ") : "—"} | ` +
      `${provedBy(proof.get(id))} |`
    );
  });
  return [
    `## ${group.prefix}: ${group.title}`,
    "",
    "| ID | Requirement | Implemented in | Proved by |",
    "| --- | --- | --- | --- |",
    ...rows,
  ];
}

function provedBy(perFile) {
  if (!perFile) return "**no test yet**";
  const files = [...perFile.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  const count = files.reduce((n, [, c]) => n + c, 0);
  return (
    `${count} ${count === 1 ? "test" : "tests"}: ` +
    `${files.map(([f, c]) => `${code(f)} (${c})`).join(", ")}`
  );
}

// ---- main --------------------------------------------------------------------------------------

function undefinedCitations(defs, ...maps) {
  const missing = new Map();
  for (const map of maps) {
    for (const [id, files] of map) {
      if (defs.byId.has(id)) continue;
      for (const f of files instanceof Map ? files.keys() : files) {
        if (!missing.has(id)) missing.set(id, new Set());
        missing.get(id).add(f);
      }
    }
  }
  return missing;
}

/** The first lines where two texts differ, cut around the first differing character. */
function firstDifferences(want, have, max = 5) {
  const a = want.split("\n");
  const b = have.split("\n");
  const lines = [];
  for (let i = 0; i < Math.max(a.length, b.length) && lines.length < max * 2; i++) {
    if (a[i] === b[i]) continue;
    let col = 0;
    while (a[i] !== undefined && b[i] !== undefined && a[i][col] === b[i][col]) col++;
    const around = (l) =>
      l === undefined
        ? "(end of file)"
        : `${col > 60 ? "…" : ""}${l.slice(Math.max(0, col - 60), col + 100)}`;
    lines.push(
      `  line ${i + 1}, expected: ${around(a[i])}`,
      `  line ${i + 1}, found:    ${around(b[i])}`,
    );
  }
  return lines;
}

function main(args) {
  const check = args.includes("--check");
  const defs = loadDefinitions();
  const impl = citations(IMPL_DIRS, IMPL_EXT, defs);
  const tests = citations(TEST_DIRS, CODE_EXT, defs);
  const proof = proofs(defs);
  const doc = render(defs, impl, proof);
  const errors = defs.problems.map((p) => `${DEFS}: ${p}`);
  const missing = undefinedCitations(defs, impl, tests);
  for (const id of [...missing.keys()].sort(defs.compare)) {
    errors.push(
      `${id} is cited but not defined in ${DEFS} (cited in ` +
        `${[...missing.get(id)].sort().join(", ")})`,
    );
  }
  if (!check) {
    writeFileSync(join(ROOT, DOC), doc);
    console.log(
      `${DOC}: ${defs.byId.size} IDs, ` +
        `${[...defs.byId.keys()].filter((id) => !proof.has(id)).length} without a test`,
    );
  } else {
    const have = existsSync(join(ROOT, DOC)) ? readFileSync(join(ROOT, DOC), "utf8") : "";
    if (have !== doc)
      errors.push(`${DOC} is not what ${DEFS} and the tree give:`, ...firstDifferences(doc, have));
  }
  if (errors.length > 0) {
    console.error(errors.join("\n"));
    console.error(
      `Define missing IDs in ${DEFS}, then run \`npm run conformance\` and commit ${DOC}.`,
    );
    process.exitCode = 1;
  }
}

main(process.argv.slice(2));
