/**
 * The route table (src/cli/routes.ts) is the one way from bin/ to a verb or a command module:
 * - every CNI verb and every command commander registers has a row, and every row names one;
 * - each row loads its module by a literal path, and no other file of src/cli/ loads a verb or
 *   command module (nor anything in orchestrate/, ops/, install/ or daemon/) by `import()`;
 * - the CNI path's bundle holds the verbs and none of the commands; the commands' bundle holds
 *   every command (esbuild.config.mjs builds the two).
 * Each check is also run on a broken input, to show it would fail.
 */
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join, posix } from "node:path";
import { pathToFileURL } from "node:url";
import type { Command } from "commander";
import { build, type BuildOptions } from "esbuild";
import ts from "typescript";
import { describe, expect, it } from "vitest";
import { COMMANDS as CNI_VERBS } from "../../../src/cni/env";
import { commandLine } from "../../../src/cli/commands";
import { COMMANDS, VERBS } from "../../../src/cli/routes";
import { REPO_ROOT } from "../../support/plexus-bin";

const ROUTES = "src/cli/routes.ts";
/** Folders whose modules only a route may load from src/cli/. */
const ROUTED_FOLDERS = /^src\/(orchestrate|planning|nodestate|migration|ops|install|daemon)\//;
/** Loads from src/cli/ of such folders that are not verbs or commands, with why. */
const NOT_ROUTES = new Map([
  // A helper the verbs get in their Deps (the network-status publisher), not a verb.
  ["src/cli/verb-deps.ts → src/orchestrate/publish", "a verb's helper"],
]);

/** The command line as runCommands builds it. */
const registered = (): Command => commandLine(() => {});

type Rows = Record<string, { what: string; load?: unknown; answeredIn?: string }>;

/** Each leaf command (a subcommand after its parent's name) → the command. */
function leafCommands(cmd: Command, prefix = ""): Map<string, Command> {
  const leaves = new Map<string, Command>();
  for (const sub of cmd.commands) {
    const path = `${prefix}${sub.name()}`;
    if (sub.commands.length === 0) leaves.set(path, sub);
    else for (const [p, c] of leafCommands(sub, `${path} `)) leaves.set(p, c);
  }
  return leaves;
}

/** What the table and the command line disagree on: commands without a row, rows without one. */
function unrouted(program: Command, rows: Rows): string[] {
  const leaves = leafCommands(program);
  const problems = [...leaves.keys()].filter((p) => !(p in rows)).map((p) => `no row: ${p}`);
  for (const key of Object.keys(rows)) {
    const [path, flag] = key.split(" --");
    const cmd = leaves.get(path!);
    if (!cmd) problems.push(`no such command: ${key}`);
    else if (flag && !cmd.options.some((o) => o.long === `--${flag}`))
      problems.push(`no such flag: ${key}`);
  }
  return problems;
}

/** The repository path an import specifier of `file` names, without its extension. */
function target(file: string, specifier: string): string {
  return posix.join(posix.dirname(file), specifier).replace(/\.[cm]?[jt]s$/, "");
}

/** Every `import(…)` of a source: its specifier, or undefined where it is not a literal. */
function dynamicImports(file: string, text: string): (string | undefined)[] {
  const found: (string | undefined)[] = [];
  const visit = (node: ts.Node): void => {
    if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword) {
      const arg = node.arguments[0];
      found.push(arg && ts.isStringLiteralLike(arg) ? arg.text : undefined);
    }
    ts.forEachChild(node, visit);
  };
  visit(ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true));
  return found;
}

/** The modules the rows of routes.ts load (repository paths), and rows that load otherwise. */
function routedModules(text: string): { modules: Set<string>; problems: string[] } {
  const modules = new Set<string>();
  const problems: string[] = [];
  const visit = (node: ts.Node): void => {
    if (ts.isPropertyAssignment(node) && node.name.getText() === "load") {
      const body = ts.isArrowFunction(node.initializer) ? node.initializer.body : undefined;
      const arg = body && ts.isCallExpression(body) ? body.arguments[0] : undefined;
      const literal = body && ts.isCallExpression(body) && arg && ts.isStringLiteral(arg);
      if (literal && body.expression.kind === ts.SyntaxKind.ImportKeyword)
        modules.add(target(ROUTES, arg.text));
      else problems.push(`not () => import("literal"): ${node.getText()}`);
    }
    ts.forEachChild(node, visit);
  };
  visit(ts.createSourceFile(ROUTES, text, ts.ScriptTarget.Latest, true));
  return { modules, problems };
}

/** Loads in src/cli/ (files other than routes.ts) that should go through a route. */
function strayLoads(files: Map<string, string>, routed: Set<string>): string[] {
  const stray: string[] = [];
  for (const [file, text] of files) {
    if (file === ROUTES) continue;
    for (const specifier of dynamicImports(file, text)) {
      if (specifier === undefined) {
        stray.push(`${file}: import() of a computed path`);
        continue;
      }
      const to = target(file, specifier);
      const routedHere = routed.has(to) || ROUTED_FOLDERS.test(to);
      if (routedHere && !NOT_ROUTES.has(`${file} → ${to}`)) stray.push(`${file} → ${to}`);
    }
  }
  return stray;
}

function cliSources(): Map<string, string> {
  const dir = join(REPO_ROOT, "src/cli");
  return new Map(
    readdirSync(dir)
      .filter((f) => f.endsWith(".ts"))
      .map((f) => [`src/cli/${f}`, readFileSync(join(dir, f), "utf8")]),
  );
}

/** Each bundle's source files that reach its output (not merely scanned), by entry. */
async function bundledSources(): Promise<Map<string, Set<string>>> {
  const config = pathToFileURL(join(REPO_ROOT, "esbuild.config.mjs")).href;
  const { bundles } = (await import(config)) as { bundles: BuildOptions[] };
  const byEntry = new Map<string, Set<string>>();
  for (const options of bundles) {
    const result = await build({ ...options, write: false, logLevel: "silent" });
    const output = Object.values(result.metafile!.outputs)[0]!;
    const entry = (options.entryPoints as string[])[0]!;
    byEntry.set(entry, new Set(Object.keys(output.inputs)));
  }
  return byEntry;
}

/** Where the two bundles break the split: a verb missing from the CNI path's, a command in it. */
function bundleProblems(
  bundled: { cni: Set<string>; commands: Set<string> },
  routed: Set<string>,
): string[] {
  const verbs = [...routed].filter((m) => m.startsWith("src/orchestrate/")).map((m) => `${m}.ts`);
  const commands = [...routed].filter((m) => !verbs.includes(`${m}.ts`)).map((m) => `${m}.ts`);
  return [
    ...verbs.filter((f) => !bundled.cni.has(f)).map((f) => `not in the CNI path's: ${f}`),
    ...[...bundled.cni]
      .filter((f) => commands.includes(f) || /^src\/(ops|install)\/|\/commander\//.test(f))
      .map((f) => `in the CNI path's: ${f}`),
    ...commands.filter((f) => !bundled.commands.has(f)).map((f) => `not in the commands': ${f}`),
  ];
}

describe("the route table: bin/ to every verb and command", () => {
  const routes = routedModules(readFileSync(join(REPO_ROOT, ROUTES), "utf8"));

  it("every CNI verb has a row, and every row is a verb", () => {
    expect(Object.keys(VERBS).sort()).toEqual([...CNI_VERBS].sort());
  });

  it("every command commander registers has a row, and every row names a command", () => {
    expect(unrouted(registered(), COMMANDS)).toEqual([]);
  });

  it("every row says what its module is in a line, and a row without one names its file", () => {
    const rows: Rows[string][] = [...Object.values(VERBS), ...Object.values(COMMANDS)];
    for (const row of rows) {
      expect(row.what).toMatch(/^[^\n]{10,100}$/);
      if (!row.load) expect(existsSync(join(REPO_ROOT, "src", row.answeredIn!))).toBe(true);
    }
  });

  it("each row loads its module by a literal path", () => {
    expect(routes.problems).toEqual([]);
    expect(routes.modules).toContain("src/orchestrate/add");
    expect(routes.modules).toContain("src/ops/doctor");
  });

  it("no other file of src/cli/ loads a verb or command module", () => {
    expect(strayLoads(cliSources(), routes.modules)).toEqual([]);
  });

  it("the CNI path's bundle: the verbs and no command; the commands': each command", async () => {
    const bundled = await bundledSources();
    const cni = bundled.get("bin/plexus.ts")!;
    const commands = bundled.get("src/cli/commands-entry.ts")!;
    expect(cni.size).toBeGreaterThan(50);
    expect(bundleProblems({ cni, commands }, routes.modules)).toEqual([]);
  });
});

describe("the route checks fail when the route is broken", () => {
  it("a command without a row, and a row without a command or flag", () => {
    const program = registered();
    program.command("frobnicate").action(() => {});
    const rows = { ...COMMANDS, "doctor --deep": { what: "a flag doctor does not have" } };
    expect(unrouted(program, rows)).toEqual(["no row: frobnicate", "no such flag: doctor --deep"]);
    const dropped = Object.fromEntries(
      Object.entries(COMMANDS).filter(([k]) => k !== "records retry"),
    ) as Rows;
    expect(unrouted(registered(), dropped)).toEqual(["no row: records retry"]);
  });

  it("a row that loads by a computed path", () => {
    const broken = `export const V = { A: { what: "x", load: () => import(p) } };`;
    expect(routedModules(broken).problems).toHaveLength(1);
  });

  it("a command file that loads a module itself, or by a computed path", () => {
    const files = cliSources();
    const ops = files.get("src/cli/ops-commands.ts")!;
    files.set(
      "src/cli/ops-commands.ts",
      `${ops}\nconst doctor = () => import("../ops/doctor");\nconst c = () => import(name);\n`,
    );
    files.set("src/cli/new-verb.ts", `export const x = () => import("../orchestrate/check");\n`);
    files.set("src/cli/more.ts", `export const y = () => import("./completion");\n`);
    const routed = routedModules(readFileSync(join(REPO_ROOT, ROUTES), "utf8")).modules;
    expect(strayLoads(files, routed).sort()).toEqual([
      "src/cli/more.ts → src/cli/completion",
      "src/cli/new-verb.ts → src/orchestrate/check",
      "src/cli/ops-commands.ts → src/ops/doctor",
      "src/cli/ops-commands.ts: import() of a computed path",
    ]);
  });

  it("a command in the CNI path's bundle, a verb or a command missing from its bundle", () => {
    const routed = new Set(["src/orchestrate/add", "src/ops/doctor", "src/install/main"]);
    const cni = new Set(["src/orchestrate/add.ts", "src/ops/doctor.ts", "src/ops/context.ts"]);
    const commands = new Set(["src/install/main.ts"]);
    expect(bundleProblems({ cni, commands }, routed)).toEqual([
      "in the CNI path's: src/ops/doctor.ts",
      "in the CNI path's: src/ops/context.ts",
      "not in the commands': src/ops/doctor.ts",
    ]);
    const noVerb = { cni: new Set<string>(), commands: new Set(["src/ops/doctor.ts"]) };
    expect(bundleProblems(noVerb, new Set(["src/orchestrate/add"]))).toEqual([
      "not in the CNI path's: src/orchestrate/add.ts",
    ]);
  });
});
