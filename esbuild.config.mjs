// Bundles Plexus into two CommonJS files with no runtime node_modules:
//   dist/plexus.cjs       the CLI boundary: env, VERSION, errors on stdout (small, starts fast)
//   dist/plexus-core.cjs  everything else, loaded by src/cli/load-core.ts with a warm code cache
//   dist/plexus-k8s.cjs   the API-server client (@kubernetes/client-node), loaded only when needed
// scripts/build-sea.mjs then embeds both into dist/plexus, the single executable.
import { build } from "esbuild";
import { readFileSync } from "node:fs";

const pkg = JSON.parse(readFileSync(new URL("./package.json", import.meta.url), "utf8"));

const common = {
  bundle: true,
  platform: "node",
  format: "cjs",
  target: "node24",
  minify: true,
  legalComments: "none",
  define: { PLEXUS_VERSION: JSON.stringify(pkg.version), PLEXUS_BUNDLED: "true" },
  logLevel: "warning",
  metafile: true,
};

export const bundles = [
  { ...common, entryPoints: ["bin/plexus.ts"], outfile: "dist/plexus.cjs" },
  { ...common, entryPoints: ["src/cli/core.ts"], outfile: "dist/plexus-core.cjs" },
  // Only loaded when a pod needs the API server (src/k8s/index.ts).
  { ...common, entryPoints: ["src/k8s/api-entry.ts"], outfile: "dist/plexus-k8s.cjs" },
];

if (import.meta.url === `file://${process.argv[1]}`) {
  for (const options of bundles) {
    const result = await build(options);
    const bytes = Object.values(result.metafile.outputs).reduce((n, o) => n + o.bytes, 0);
    process.stderr.write(`esbuild: ${options.outfile} ${(bytes / 1024).toFixed(0)} KiB\n`);
  }
}
