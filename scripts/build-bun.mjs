// Compiles dist/plexus.cjs (esbuild.config.mjs) into dist/plexus, a Bun single executable that
// runs on hosts with glibc and nothing else: `bun build --compile --bytecode` for the host, with
// the flags of scripts/build-flags.mjs (no .env/bunfig autoload, the JIT policy), its bytecode laid
// out by a recorded CNI call (scripts/bytecode-order.mjs). The release executables for every
// architecture: scripts/build-release.mjs.
import { execFileSync } from "node:child_process";
import { mkdirSync, renameSync, rmSync } from "node:fs";
import { compileArgs } from "./build-flags.mjs";
import { bunPath } from "./bun-path.mjs";
import { recordLayout } from "./bytecode-order.mjs";

const bun = bunPath();
const entry = "dist/plexus.cjs";
const out = "dist/plexus";
// A per-process directory: two builds at once (a developer and a test watcher) must not collide,
// and a rename (never a write in place) lets a running dist/plexus keep its inode (no "text file
// busy"). The file in it has the final name, which the executable embeds (its Bun.main).
const scratch = `dist/.build-${process.pid}`;
const tmp = `${scratch}/plexus`;
try {
  mkdirSync(scratch, { recursive: true });
  const order = await recordLayout({ bun, entry });
  execFileSync(bun, compileArgs({ entry, outfile: tmp, order }), {
    stdio: ["ignore", "ignore", "inherit"],
  });
  renameSync(tmp, out);
  const version = execFileSync(bun, ["--version"], { encoding: "utf8" }).trim();
  process.stderr.write(
    `build-bun: ${out} (Bun ${version} single executable, bytecode laid out by a recorded call)\n`,
  );
} catch (err) {
  process.stderr.write(`build-bun: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exitCode = 1;
} finally {
  rmSync(scratch, { recursive: true, force: true });
}
