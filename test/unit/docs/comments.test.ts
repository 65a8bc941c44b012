/**
 * Comments that stay true and checkable.
 * - What the code cites: comments and test titles in src/, test/, scripts/ and bin/ name
 *   requirement IDs that docs/requirements.json defines (N, C, M, K, B), never an issue number
 *   ("issue 12", "#23") nor an ID of their own (an issue's "R1"): an issue is closed and
 *   renumbered work, a requirement stays. Another project's issue (`multus-cni#1407`) may be named
 *   with its repository.
 * - Figures: a cost or a measurement goes stale with the next optimisation, so the comments of the
 *   shipped code and its build carry none ("~4 ms", "costs 2 MiB"); docs/benchmarks.md holds them,
 *   and a comment that points to one of its sections names a section that exists.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join, relative, sep } from "node:path";
import ts from "typescript";
import { describe, expect, it } from "vitest";
import { FIGURE_RES } from "../../support/figures";
import { REPO_ROOT } from "../../support/plexus-bin";

const DIRS = ["src", "test", "scripts", "bin"];
const CODE = /\.(ts|mts|cts|js|mjs|cjs)$/;
/** The checks themselves, which quote the forms they look for. */
const CHECKERS = new Set(["test/unit/docs/comments.test.ts", "test/unit/docs/user-docs.test.ts"]);

/** "issue 12", "issues 10–15", "#23" (not `owner/repo#23`, not an ordinal as in "DEL #2"). */
const ISSUE_RES = [/\bissues?\s+#?\d+/i, /(?<![\w/.-])(?<!\b[A-Z]{2,} )#\d+\b/];
/** One capital and a number, the shape of a requirement ID: N4.1.2, C2.5, M7, B62, R1. */
const ID_RE = /\b[A-Z]\d+(?:\.[\dx]+)*\b/g;
/** Names of that shape that are not IDs. */
const NOT_IDS = new Set(["V8"]);

function definedIds(): Set<string> {
  const doc = JSON.parse(readFileSync(join(REPO_ROOT, "docs", "requirements.json"), "utf8"));
  return new Set(
    (doc.groups as { requirements: Record<string, unknown> }[]).flatMap((group) =>
      Object.keys(group.requirements),
    ),
  );
}

function codeFiles(): string[] {
  const files = DIRS.flatMap((dir) =>
    readdirSync(join(REPO_ROOT, dir), { recursive: true, withFileTypes: true })
      .filter((e) => e.isFile() && CODE.test(e.name))
      .map((e) => join(e.parentPath, e.name))
      .filter((file) => !CHECKERS.has(repoPath(file))),
  );
  return [...files, join(REPO_ROOT, "esbuild.config.mjs")];
}

const repoPath = (file: string) => relative(REPO_ROOT, file).split(sep).join("/");

let parsed: ReturnType<typeof parseTree> | undefined;
/** The tree's comments and titles, parsed on first use and shared by the checks. */
const tree = () => {
  parsed ??= parseTree();
  return parsed;
};

/** A test or suite call (`it`, `test`, `describe`, `describeE2e`, with `.each(…)` and the like). */
function isTestCall(call: ts.CallExpression): boolean {
  let callee: ts.Expression = call.expression;
  while (ts.isPropertyAccessExpression(callee) || ts.isCallExpression(callee))
    callee = callee.expression;
  return ts.isIdentifier(callee) && /^(it|test|describe\w*)$/.test(callee.text);
}

/**
 * Every comment of a file: a comment is trivia before a token, so the ones before a node, after a
 * node (before `}` or `)`), after a `,` and just inside an opening `{`, `[` or `(`.
 */
function commentsOf(text: string, source: ts.SourceFile): string[] {
  const found = new Map<number, string>();
  const add = (ranges: ts.CommentRange[] | undefined) => {
    for (const range of ranges ?? []) found.set(range.pos, text.slice(range.pos, range.end));
  };
  const visit = (node: ts.Node): void => {
    add(ts.getLeadingCommentRanges(text, node.pos));
    add(ts.getLeadingCommentRanges(text, node.end));
    add(ts.getTrailingCommentRanges(text, node.end));
    const comma = /^[ \t]*,/.exec(text.slice(node.end, node.end + 80));
    if (comma) add(ts.getTrailingCommentRanges(text, node.end + comma[0].length));
    const start = node.getStart(source);
    if ("{[(".includes(text[start] ?? "")) add(ts.getLeadingCommentRanges(text, start + 1));
    ts.forEachChild(node, visit);
  };
  visit(source);
  return [...found.values()];
}

/** The literal titles of a file's tests and suites. */
function titlesOf(source: ts.SourceFile): string[] {
  const titles: string[] = [];
  const visit = (node: ts.Node): void => {
    if (ts.isCallExpression(node) && isTestCall(node)) {
      const title = node.arguments[0];
      if (title && (ts.isStringLiteralLike(title) || ts.isTemplateExpression(title)))
        titles.push(title.getText(source));
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return titles;
}

/** Each file's comments and literal test titles, parsed once for every check. */
function parseTree(): { file: string; comments: string[]; titles: string[] }[] {
  return codeFiles().map((file) => {
    const text = readFileSync(file, "utf8");
    const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
    return { file: repoPath(file), comments: commentsOf(text, source), titles: titlesOf(source) };
  });
}

/** The shipped code and its build: what every CNI call runs, and how it is built. */
const SHIPPED = /^(src\/|bin\/|esbuild\.config\.mjs$|scripts\/(build[\w-]*|bytecode-order)\.mjs$)/;
/**
 * A pointer to a section: `docs/benchmarks.md, "Levers, measured"` or `docs/benchmarks.md ("…")`.
 */
const SECTION_RE = /docs\/benchmarks\.md(?:, | \()"([^"]+)"/g;

/** A comment as one line of words: its `//`, `*` and line breaks gone. */
const flat = (comment: string) => comment.replace(/\s*\n\s*(?:\*(?!\/)|\/\/)?\s*/g, " ");

/** What a text cites that it should not: issue numbers and IDs without a definition. */
function badCitations(text: string, defined: ReadonlySet<string>): string[] {
  const issues = ISSUE_RES.flatMap((re) => text.match(re)?.[0] ?? []);
  const ids = [...text.matchAll(ID_RE)]
    .map((m) => m[0])
    .filter((id) => !defined.has(id) && !NOT_IDS.has(id));
  return [...issues, ...ids];
}

describe("what comments and test titles cite", () => {
  it("the checker finds an issue number, an ad-hoc ID and an undefined ID, and passes a defined one", () => {
    const defined = new Set(["B64", "N4.1.x"]);
    expect(badCitations("// lock (issue 13 R1, B64): see #23", defined)).toEqual([
      "issue 13",
      "#23",
      "R1",
    ]);
    // An undefined ID, spelled so that the conformance page's scan does not count it as cited.
    const undefinedId = `B${999}`;
    const title = `it("${undefinedId} N4.1.x DEL #2 multus-cni#1407")`;
    expect(badCitations(title, defined)).toEqual([undefinedId]);
  });

  it("no issue numbers, and only IDs docs/requirements.json defines, in src/, test/, scripts/, bin/", () => {
    const defined = definedIds();
    const found = tree().flatMap(({ file, comments, titles }) =>
      [...comments, ...titles].flatMap((text) =>
        badCitations(text, defined).map((bad) => `${file}: ${bad}`),
      ),
    );
    expect(found).toEqual([]);
  });
});

describe("figures live in docs/benchmarks.md", () => {
  it("the checker finds an estimate and passes a limit", () => {
    const figures = (text: string) => FIGURE_RES.flatMap((re) => text.match(re)?.[0] ?? []);
    expect(figures("// a cold undici costs ~70 ms")).toEqual(["~7"]);
    expect(figures("// loading it costs 1.5 ms")).toEqual(["costs 1.5 ms"]);
    expect(figures("// node:net adds 8 ms")).toEqual(["adds 8 ms"]);
    expect(figures("// the split: +2.5 MiB, 3 ms faster")).toEqual(["+2.5 MiB", "3 ms faster"]);
    expect(figures("// 9 MiB per call; 0.7× Multus")).toEqual(["9 MiB per call", "0.7×"]);
    expect(figures("// it took 11 to 15 ms")).toEqual(["took 11 to 15 ms"]);
    expect(
      figures("/** Default 4 MiB (etcd's object limit is 1.5 MiB); 250 ms in Multus. */"),
    ).toEqual([]);
    expect(figures("// at most 50 ms; 64 KiB of headers; a 5 s poll; 16× later")).toEqual([]);
  });

  it("the comments of the shipped code and its build state no cost or measurement", () => {
    const found = tree()
      .filter(({ file }) => SHIPPED.test(file))
      .flatMap(({ file, comments }) =>
        comments.flatMap((comment) =>
          FIGURE_RES.flatMap((re) => flat(comment).match(re)?.[0] ?? []).map(
            (m) => `${file}: ${m}`,
          ),
        ),
      );
    expect(found).toEqual([]);
  });

  it("a comment pointing to a section of docs/benchmarks.md names one that exists", () => {
    const page = readFileSync(join(REPO_ROOT, "docs", "benchmarks.md"), "utf8");
    const sections = new Set([...page.matchAll(/^#+ (.+)$/gm)].map((m) => m[1]!.trim()));
    const pointers = tree().flatMap(({ file, comments }) =>
      comments.flatMap((comment) =>
        [...flat(comment).matchAll(SECTION_RE)].map((m) => ({ file, section: m[1]! })),
      ),
    );
    expect(pointers.length).toBeGreaterThan(0);
    expect(pointers.filter((p) => !sections.has(p.section))).toEqual([]);
  });
});
