// Turns the bundles into dist/plexus, a Node single executable application that runs on hosts
// without Node: dist/plexus.cjs is the SEA main script (Node's code cache on), the core bundle
// and its warm V8 code cache (scripts/make-code-cache.cjs) are SEA assets.
// Uses the Node running this script, which under `npm run build` is the pinned Node 24.
import { execFileSync } from "node:child_process";
import { chmodSync, copyFileSync, renameSync, rmSync, writeFileSync } from "node:fs";

const major = Number(process.versions.node.split(".")[0]);
if (major < 24) {
  process.stderr.write(`build-sea: Node ${process.versions.node} is running this; run it through npm (npm run build) so the pinned Node 24 is used\n`);
  process.exit(1);
}
const run = (args) => execFileSync(process.execPath, args, { stdio: ["ignore", "ignore", "inherit"] });

run(["scripts/make-code-cache.cjs", "dist/plexus-core.cjs", "dist/plexus-core.cache"]);
run(["scripts/make-code-cache.cjs", "dist/plexus-k8s.cjs", "dist/plexus-k8s.cache"]);
// Per-process names: two builds at once (a developer and a test watcher) must not collide.
const seaConfig = `dist/.sea-config.${process.pid}.json`;
const blob = `dist/.plexus.${process.pid}.blob`;
writeFileSync(
  seaConfig,
  JSON.stringify({
    main: "dist/plexus.cjs",
    output: blob,
    disableExperimentalSEAWarning: true,
    useCodeCache: true,
    useSnapshot: false,
    assets: {
      "plexus-core.cjs": "dist/plexus-core.cjs",
      "plexus-core.cache": "dist/plexus-core.cache",
      "plexus-k8s.cjs": "dist/plexus-k8s.cjs",
      "plexus-k8s.cache": "dist/plexus-k8s.cache",
    },
  }),
);
run(["--experimental-sea-config", seaConfig]);
const out = "dist/plexus";
const tmp = `dist/.plexus.${process.pid}.tmp`;
rmSync(tmp, { force: true });
copyFileSync(process.execPath, tmp);
chmodSync(tmp, 0o755);
// postject prints harmless ELF note warnings; its exit status is what matters.
execFileSync(process.execPath, ["node_modules/postject/dist/cli.js", tmp, "NODE_SEA_BLOB", blob, "--sentinel-fuse", "NODE_SEA_FUSE_fce680ab2cc467b6e072b8b5df1996b2"], {
  stdio: ["ignore", "ignore", "ignore"],
});
// Rename, never overwrite in place: a running dist/plexus keeps its inode (no "text file busy").
renameSync(tmp, out);
rmSync(blob, { force: true });
rmSync(seaConfig, { force: true });
process.stderr.write(`build-sea: ${out} (Node ${process.versions.node} single executable, warm code cache)\n`);
