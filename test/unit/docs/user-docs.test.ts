/**
 * The user docs (README.md and docs/*.md, except the generated docs/conformance.md) stay usable by
 * a deployer: a short README, the task pages it links, words instead of internal IDs (requirement
 * IDs and issue numbers live in docs/conformance.md and docs/requirements.json only), links and
 * anchors that resolve, and a configuration reference that names every key Plexus reads.
 */
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import ts from "typescript";
import { describe, expect, it } from "vitest";
import { FIGURE_RES } from "../../support/figures";
import { REPO_ROOT } from "../../support/plexus-bin";

const DOCS = join(REPO_ROOT, "docs");
const README = join(REPO_ROOT, "README.md");
/** Generated from docs/requirements.json: the one page that maps IDs to tests. */
const GENERATED = new Set([join(DOCS, "conformance.md")]);
const userDocs = [
  README,
  ...readdirSync(DOCS)
    .filter((f) => f.endsWith(".md"))
    .map((f) => join(DOCS, f))
    .filter((f) => !GENERATED.has(f)),
];
const read = (file: string) => readFileSync(file, "utf8");
const rel = (file: string) => relative(REPO_ROOT, file);

/** The pages a deployer looks for by task; other work adds its material to them. */
const TASK_PAGES = [
  "install",
  "upgrade",
  "uninstall",
  "migrating-from-multus",
  "configuration",
  "troubleshooting",
  "daemon-mode",
  "device-networks",
  "benchmarks",
  "security",
];

/**
 * Requirement IDs (a capital letter, then dotted numbers, as docs/conformance.md lists them)
 * standing as words of their own.
 */
const REQUIREMENT_ID = /(?<![\w/.-])[NCMKBR][0-9]+(?:\.[0-9x]+)*(?![\w-])/g;
/** "issue 11", "issues 10–15", "#1527". */
const ISSUE_REFERENCE = /\bissues?\s+#?\d+|(?<![\w&/])#\d+\b/gi;

/** Each match of the patterns, as "file:line: text". */
function internalIds(file: string, text: string): string[] {
  const found: string[] = [];
  text.split("\n").forEach((line, i) => {
    for (const re of [REQUIREMENT_ID, ISSUE_REFERENCE])
      for (const m of line.matchAll(re)) found.push(`${file}:${i + 1}: ${m[0]}  (${line.trim()})`);
  });
  return found;
}

/** The text outside fenced code blocks. */
function prose(text: string): string {
  let fenced = false;
  return text
    .split("\n")
    .map((line) => {
      if (/^\s*(```|~~~)/.test(line)) {
        fenced = !fenced;
        return "";
      }
      return fenced ? "" : line;
    })
    .join("\n");
}

/**
 * The pages whose subject is measurement: each figure there comes with its method and run. Every
 * other page links to them instead of quoting a cost that goes stale with the next release.
 */
const MEASURING = new Set(["benchmarks.md", "scale.md"].map((f) => join(DOCS, f)));

/** Each cost figure of a page's prose (a limit, a default or a size is not one), "file:line: …". */
function figures(file: string, text: string): string[] {
  return prose(text)
    .split("\n")
    .flatMap((line, i) =>
      FIGURE_RES.flatMap((re) => line.match(re)?.[0] ?? []).map(
        (m) => `${rel(file)}:${i + 1}: ${m}  (${line.trim()})`,
      ),
    );
}

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens. */
function slug(heading: string): string {
  const text = heading.replace(/\[([^\]]*)\]\([^)]*\)/g, "$1");
  return text
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, "")
    .replace(/ /g, "-");
}

/** Every anchor a Markdown file defines (repeated headings get -1, -2, … as on GitHub). */
function anchors(text: string): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  for (const line of prose(text).split("\n")) {
    const m = /^#{1,6}\s+(.+?)\s*#*\s*$/.exec(line);
    if (!m) continue;
    const base = slug(m[1]!);
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    out.add(n === 0 ? base : `${base}-${n}`);
  }
  return out;
}

/** The relative links of a Markdown file that do not resolve: "file: target (why)". */
function brokenLinks(file: string, text: string): string[] {
  const broken: string[] = [];
  const body = prose(text).replace(/`[^`\n]*`/g, "");
  for (const m of body.matchAll(/\[[^\]]*\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)) {
    const target = m[1]!;
    if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // https:, mailto:
    const [path, anchor] = target.split("#", 2) as [string, string | undefined];
    const dest = path === "" ? file : resolve(dirname(file), path);
    if (!existsSync(dest)) {
      broken.push(`${rel(file)}: ${target} (no such file)`);
      continue;
    }
    if (anchor !== undefined && dest.endsWith(".md") && !anchors(read(dest)).has(anchor))
      broken.push(`${rel(file)}: ${target} (no heading with that anchor in ${rel(dest)})`);
  }
  return broken;
}

/** The keys of the plugin config's schema in src/config/plugin-conf.ts, read from the source. */
function pluginConfKeys(): string[] {
  const file = join(REPO_ROOT, "src/config/plugin-conf.ts");
  const src = ts.createSourceFile(file, read(file), ts.ScriptTarget.Latest, true);
  const keys: string[] = [];
  const visit = (n: ts.Node) => {
    if (ts.isVariableDeclaration(n) && n.name.getText(src) === "schema" && n.initializer) {
      const call = n.initializer;
      const obj = ts.isCallExpression(call) ? call.arguments[0] : undefined;
      if (obj && ts.isObjectLiteralExpression(obj))
        for (const p of obj.properties)
          if (ts.isPropertyAssignment(p))
            keys.push(ts.isStringLiteral(p.name) ? p.name.text : p.name.getText(src));
    }
    n.forEachChild(visit);
  };
  visit(src);
  return keys;
}

/**
 * The fields of InstallFlags in src/install/options.ts (commander's camelCase of each flag), read
 * from the source.
 */
function installFlagFields(): string[] {
  const file = join(REPO_ROOT, "src/install/options.ts");
  const src = ts.createSourceFile(file, read(file), ts.ScriptTarget.Latest, true);
  const fields: string[] = [];
  src.forEachChild((n) => {
    if (ts.isInterfaceDeclaration(n) && n.name.text === "InstallFlags")
      for (const m of n.members) if (ts.isPropertySignature(m)) fields.push(m.name.getText(src));
  });
  return fields;
}

describe("user docs: README.md and docs/*.md", () => {
  it("the README is at most 300 lines and links every task page, each of which exists", () => {
    const readme = read(README);
    expect(readme.split("\n").length).toBeLessThanOrEqual(300);
    for (const page of TASK_PAGES) {
      expect(existsSync(join(DOCS, `${page}.md`)), `docs/${page}.md`).toBe(true);
      expect(readme, `README links docs/${page}.md`).toContain(`](docs/${page}.md)`);
    }
    // The two set-up commands.
    expect(readme).toContain("npm run demo");
    expect(readme).toContain("npm test");
  });

  it("cite no requirement IDs and no issue numbers (docs/conformance.md is the one place for IDs)", () => {
    expect(userDocs.length).toBeGreaterThan(TASK_PAGES.length);
    expect(userDocs.flatMap((f) => internalIds(rel(f), read(f)))).toEqual([]);
  });

  it("the ID check is live: it finds IDs and issue references in words, and leaves lookalikes alone", () => {
    const bad = [
      "as M4 asks",
      "(N6.1.2)",
      "B42 and R1",
      "see N4.1.x",
      "issue 13 fixed it",
      "issues 10–15",
      "Multus #1527",
      "C2.2:",
    ];
    for (const line of bad) expect(internalIds("x.md", line), line).not.toEqual([]);
    const fine = [
      "K8s and k8s.v1.cni.cncf.io",
      "10.99.0.2/24 on net1",
      "K = 2 networks",
      "mode 0600",
      "[link](#daemon-mode)",
      "sha256sum",
      "A 5 MB list",
      "fd00::2",
    ];
    for (const line of fine) expect(internalIds("x.md", line), line).toEqual([]);
  });

  it("state no cost figures outside the measurement pages (docs/benchmarks.md, docs/scale.md)", () => {
    const found = userDocs.filter((f) => !MEASURING.has(f)).flatMap((f) => figures(f, read(f)));
    expect(found).toEqual([]);
    expect(figures(README, "a call costs ~21 ms, and 9 MiB per call (1 MiB cap)")).toHaveLength(2);
  });

  it("every relative link resolves to a file, and every anchor to a heading of it", () => {
    expect(userDocs.flatMap((f) => brokenLinks(f, read(f)))).toEqual([]);
  });

  it("the link check is live: a missing file and a missing anchor are reported, GitHub's anchors are found", () => {
    expect(slug("`plexus install` flags")).toBe("plexus-install-flags");
    expect(slug("Quick start on a cluster (5 minutes)")).toBe("quick-start-on-a-cluster-5-minutes");
    expect(slug("Where Plexus differs from Multus, on purpose")).toBe(
      "where-plexus-differs-from-multus-on-purpose",
    );
    expect(anchors("# A\n## B\n```\n# not a heading\n```\n## B\n")).toEqual(
      new Set(["a", "b", "b-1"]),
    );
    const file = join(DOCS, "x.md");
    expect(
      brokenLinks(
        file,
        "[a](install.md) [b](nope.md) [c](install.md#no-such) [d](https://x.invalid/y.md)",
      ),
    ).toEqual([
      "docs/x.md: nope.md (no such file)",
      "docs/x.md: install.md#no-such (no heading with that anchor in docs/install.md)",
    ]);
  });

  it("docs/configuration.md names every key of the plugin config, each in its table", () => {
    const keys = pluginConfKeys();
    expect(keys.length).toBeGreaterThan(30);
    expect(keys).toContain("clusterNetwork");
    const conf = read(join(DOCS, "configuration.md"));
    const runtimeKeys = new Set(["prevResult", "cni.dev/valid-attachments"]);
    const missing = keys.filter((k) =>
      runtimeKeys.has(k) ? !conf.includes(`\`${k}\``) : !conf.includes(`\n| \`${k}\` |`),
    );
    expect(missing).toEqual([]);
  });

  it("docs/configuration.md lists every `plexus install` flag (InstallFlags) in its flags table", () => {
    const fields = installFlagFields();
    expect(fields).toContain("cniConfDir");
    const conf = read(join(DOCS, "configuration.md"));
    const kebab = (f: string) => f.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);
    // commander turns `--no-log-to-stderr` into logToStderr: either spelling may be the documented
    // one.
    const missing = fields.filter(
      (f) =>
        !conf.includes(`\n| \`--${kebab(f)}\` |`) && !conf.includes(`\n| \`--no-${kebab(f)}\` |`),
    );
    expect(missing).toEqual([]);
  });
});
