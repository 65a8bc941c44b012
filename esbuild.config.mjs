// Bundles Plexus into one CommonJS file with no runtime node_modules: dist/plexus.cjs.
// scripts/build-bun.mjs then compiles it with Bun (bytecode on) into dist/plexus, the single
// executable. What only some calls need (the core behind VERSION, each verb) is imported
// dynamically: esbuild keeps such modules in the one file but evaluates them only on first import,
// so VERSION initialises none of them and a DEL from the record only the core.
// The commands for people (the installer, the daemon, the ops commands, @kubernetes/client-node)
// are a bundle of their own, dist/plexus-commands.cjs, embedded beside it in the executable and
// loaded only by a command: a CNI call's process then maps, links and instantiates none of their
// code (what that saves: docs/benchmarks.md, "Levers, measured"). The two bundles share no
// module at run time: a command runs wholly inside its bundle.
// The version and commit (scripts/build-info.mjs) are baked in: `plexus --version` prints them.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { build } from "esbuild";
import { buildInfo } from "./scripts/build-info.mjs";

const info = buildInfo();

/** The commands' bundle beside the CNI path's, by file name (scripts/build-flags.mjs embeds it). */
export const COMMANDS_BUNDLE = "plexus-commands.cjs";

/** Where the CNI path's bundle reaches the commands' one: importer → the module it imports. */
const LINKED = [
  ["src/cli/core.ts", "./commands"],
  ["src/kubeapi/index.ts", "./client-node-auth"],
];

/** Those imports, in the CNI path's bundle, go to src/cli/commands-link.ts instead. */
const splitCommands = {
  name: "split-commands",
  setup(build) {
    const link = join(import.meta.dirname, "src/cli/commands-link.ts");
    build.onResolve({ filter: /^\.\/(commands|client-node-auth)$/ }, (args) =>
      LINKED.some(([from, path]) => args.importer.endsWith(from) && args.path === path)
        ? { path: link }
        : undefined,
    );
  },
};

const shared = {
  bundle: true,
  platform: "node",
  format: "cjs",
  target: "node24",
  minify: true,
  legalComments: "none",
  define: {
    PLEXUS_VERSION: JSON.stringify(info.version),
    PLEXUS_COMMIT: JSON.stringify(info.commit),
  },
  logLevel: "warning",
  metafile: true,
  // Bun's built-in FFI (libc's flock for the container lock), present only in the executable.
  external: ["bun:ffi"],
};

export const bundles = [
  {
    ...shared,
    entryPoints: ["bin/plexus.ts"],
    outfile: "dist/plexus.cjs",
    plugins: [splitCommands],
  },
  { ...shared, entryPoints: ["src/cli/commands-entry.ts"], outfile: `dist/${COMMANDS_BUNDLE}` },
];

if (import.meta.url === `file://${process.argv[1]}`) {
  for (const options of bundles) {
    const result = await build(options);
    const bytes = Object.values(result.metafile.outputs).reduce((n, o) => n + o.bytes, 0);
    // What went into the bundle, for the SBOMs (scripts/sbom.mjs picks the npm packages from it).
    const inputs = Object.keys(result.metafile.inputs).sort();
    writeFileSync(`${options.outfile}.inputs.json`, `${JSON.stringify(inputs)}\n`);
    const what = `${options.outfile} ${Math.round(bytes / 1024)} KiB`;
    process.stderr.write(`esbuild: ${what} (${info.version}, commit ${info.commit})\n`);
  }
}
