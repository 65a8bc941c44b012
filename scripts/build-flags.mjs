// The `bun build` flags every Plexus executable is compiled with (dist/plexus by build-bun.mjs,
// the release executables by build-release.mjs), so that what is tested is what ships.
// A CNI plugin runs in whatever directory the runtime gives it, so the executable must never read
// a `.env` or `bunfig.toml` from there: both autoloads are off.
// JIT tier-up starts 16× later than Bun's default: a CNI call is over before compiling its hot code
// pays back (measured: docs/benchmarks.md, "Levers, measured"). The long-running commands
// (daemon, install) set the normal policy back (src/cli/core.ts).
// Bytecode: every target Bun cross-compiles to here (linux x64, x64-baseline, aarch64) takes it.
import { basename, dirname, join } from "node:path";

const JIT_POLICY = 16;

// Reproducible builds: Bun inlines the bundle's own absolute path for `__dirname`/`__filename`
// (used only by pino's and undici's unused worker and transport code), which would make the bytes
// depend on where the checkout lies. They name the embedded entry's directory instead, the same
// everywhere. The executable's own name (`Bun.main`) is the outfile's base name: build-bun.mjs and
// build-release.mjs compile into a temp directory under the final name, never a temp file name.
const EMBEDDED_ROOT = "/$bunfs/root";
const PATH_DEFINES = [
  `__dirname=${JSON.stringify(EMBEDDED_ROOT)}`,
  `__filename=${JSON.stringify(`${EMBEDDED_ROOT}/plexus`)}`,
];

/**
 * The commands' bundle (esbuild.config.mjs) beside Plexus's bundle `entry`: embedded as a second
 * entry point, it is its own file in the executable's root, which the CNI path's bundle requires
 * by name. Other programs built with these flags (the benchmarks' floor) have none.
 */
function commandsBundleOf(entry) {
  return basename(entry) === "plexus.cjs" ? [join(dirname(entry), "plexus-commands.cjs")] : [];
}

/**
 * `bun build` arguments for the bundle `entry` (and the commands' bundle beside it) compiled into
 * `outfile` (the host's runtime unless
 * `runtime`), its bytecode laid out by the `order` files when given (scripts/bytecode-order.mjs).
 */
export function compileArgs({ entry, outfile, target, runtime, order }) {
  const args = [
    "build",
    entry,
    ...commandsBundleOf(entry),
    "--compile",
    "--bytecode",
    "--no-compile-autoload-dotenv",
    "--no-compile-autoload-bunfig",
    `--compile-jit-policy=${JIT_POLICY}`,
    ...PATH_DEFINES.flatMap((d) => ["--define", d]),
  ];
  if (target) args.push(`--target=${target}`);
  if (runtime) args.push(`--compile-executable-path=${runtime}`);
  if (order?.length) args.push(`--bytecode-order=${order.join(",")}`);
  args.push("--outfile", outfile);
  return args;
}
