// Bundles Plexus into one CommonJS file, dist/plexus.cjs, with no runtime node_modules.
// Verbs import their code with import(), which esbuild keeps lazy inside the bundle: a VERSION
// call initialises only the CLI boundary, not zod, pino, execa or the Kubernetes client.
import { build } from "esbuild";
import { readFileSync } from "node:fs";

const pkg = JSON.parse(readFileSync(new URL("./package.json", import.meta.url), "utf8"));

export const options = {
  entryPoints: ["bin/plexus.ts"],
  outfile: "dist/plexus.cjs",
  bundle: true,
  platform: "node",
  format: "cjs",
  target: "node24",
  minify: true,
  legalComments: "external",
  define: { PLEXUS_VERSION: JSON.stringify(pkg.version) },
  logLevel: "warning",
  metafile: true,
};

if (import.meta.url === `file://${process.argv[1]}`) {
  const result = await build(options);
  const bytes = Object.values(result.metafile.outputs).reduce((n, o) => n + o.bytes, 0);
  process.stderr.write(`esbuild: dist/plexus.cjs ${(bytes / 1024).toFixed(0)} KiB\n`);
}
