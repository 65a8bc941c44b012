// Bundles Plexus into one CommonJS file with no runtime node_modules: dist/plexus.cjs.
// scripts/build-bun.mjs then compiles it with Bun (bytecode on) into dist/plexus, the single
// executable. What only some calls need (the core behind VERSION, the installer, the daemon,
// @kubernetes/client-node) is still imported dynamically: esbuild keeps such modules in the one
// file but evaluates them only on first import, so VERSION initialises none of them and a DEL
// from the record only the core.
// The version and commit (scripts/build-info.mjs) are baked in: `plexus --version` prints them.
import { writeFileSync } from "node:fs";
import { build } from "esbuild";
import { buildInfo } from "./scripts/build-info.mjs";

const info = buildInfo();

export const bundles = [
  {
    entryPoints: ["bin/plexus.ts"],
    outfile: "dist/plexus.cjs",
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
  },
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
