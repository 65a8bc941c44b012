// Turns dist/plexus.cjs into dist/plexus, a Node single executable application (with V8 code
// cache) that runs on hosts without Node. Uses the Node that runs this script: the project's
// pinned Node 24 (devDependency "node") under `npm run build`.
import { execFileSync } from "node:child_process";
import { chmodSync, copyFileSync, rmSync, writeFileSync } from "node:fs";

const major = Number(process.versions.node.split(".")[0]);
if (major < 24) {
  process.stderr.write(`build-sea: Node ${process.versions.node} is running this; run it through npm (npm run build) so the pinned Node 24 is used\n`);
  process.exit(1);
}
const seaConfig = "dist/sea-config.json";
const blob = "dist/plexus.blob";
writeFileSync(
  seaConfig,
  JSON.stringify({ main: "dist/plexus.cjs", output: blob, disableExperimentalSEAWarning: true, useCodeCache: true, useSnapshot: false }),
);
execFileSync(process.execPath, ["--experimental-sea-config", seaConfig], { stdio: ["ignore", "ignore", "inherit"] });
const out = "dist/plexus";
const tmp = `${out}.tmp`;
rmSync(tmp, { force: true });
copyFileSync(process.execPath, tmp);
chmodSync(tmp, 0o755);
execFileSync(
  process.execPath,
  [
    "node_modules/postject/dist/cli.js",
    tmp,
    "NODE_SEA_BLOB",
    blob,
    "--sentinel-fuse",
    "NODE_SEA_FUSE_fce680ab2cc467b6e072b8b5df1996b2",
  ],
  { stdio: ["ignore", "ignore", "inherit"] },
);
// rename, never overwrite in place: a running dist/plexus keeps its inode (no "text file busy").
execFileSync("mv", ["-f", tmp, out]);
rmSync(blob, { force: true });
rmSync(seaConfig, { force: true });
process.stderr.write(`build-sea: ${out} (Node ${process.versions.node} single executable, code cache on)\n`);
