// Compiles dist/plexus.cjs (esbuild.config.mjs) into dist/plexus, a Bun single executable that
// runs on hosts with glibc and nothing else: `bun build --compile --bytecode` for the host.
// A CNI plugin runs in whatever directory the runtime gives it, so the executable must never read
// a `.env` or `bunfig.toml` from there: both autoloads are off.
// JIT tier-up starts 16× later than Bun's default: a CNI call lives ~50 ms, and compiling hot code
// for it costs more than it saves (measured: ~4 ms less per DEL, ~10 ms per ADD, ~5 MiB less
// RSS). The long-running commands (daemon, install) set the normal policy back (src/cli/core.ts).
import { execFileSync } from "node:child_process";
import { renameSync, rmSync } from "node:fs";
import { bunPath } from "./bun-path.mjs";

const bun = bunPath();
const JIT_POLICY = 16;
const out = "dist/plexus";
// Per-process name: two builds at once (a developer and a test watcher) must not collide, and a
// rename (never a write in place) lets a running dist/plexus keep its inode (no "text file busy").
const tmp = `dist/.plexus.${process.pid}.tmp`;
rmSync(tmp, { force: true });
try {
  execFileSync(
    bun,
    [
      "build",
      "dist/plexus.cjs",
      "--compile",
      "--bytecode",
      "--no-compile-autoload-dotenv",
      "--no-compile-autoload-bunfig",
      `--compile-jit-policy=${JIT_POLICY}`,
      "--outfile",
      tmp,
    ],
    { stdio: ["ignore", "ignore", "inherit"] },
  );
  renameSync(tmp, out);
} finally {
  rmSync(tmp, { force: true });
}
const version = execFileSync(bun, ["--version"], { encoding: "utf8" }).trim();
process.stderr.write(`build-bun: ${out} (Bun ${version} single executable, bytecode)\n`);
