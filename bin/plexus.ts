/** Entry point: bundled by esbuild into dist/plexus.cjs and the single executable dist/plexus. */
import { main } from "../src/cli/main";
import { reexecWithoutTuning } from "../src/cli/runtime-env";

// First of all: no runtime-tuning variable (BUN_OPTIONS, NODE_TLS_REJECT_UNAUTHORIZED, …) may
// shape what a root CNI plugin does.
reexecWithoutTuning();

const cniCall = process.env.CNI_COMMAND !== undefined;
main({ env: process.env, argv: process.argv.slice(2) }).then(
  (code) => {
    // A CNI call has written its answer (synchronously, as its logs) and owes nothing more: exit
    // now rather than wait for keep-alive sockets and the runtime's teardown. Commands
    // for people (install, daemon, --help) end naturally, their output flushed.
    if (cniCall) process.exit(code);
    process.exitCode = code;
  },
  (err: unknown) => {
    // main() answers every CNI failure on stdout itself; what reaches here is a crash. A command
    // for people (install, daemon) must never end on one silently: say what happened on stderr.
    process.stderr.write(
      `plexus: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`,
    );
    if (cniCall) process.exit(1);
    process.exitCode = 1;
  },
);
