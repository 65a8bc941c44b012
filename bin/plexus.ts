/** Entry point: bundled by esbuild into dist/plexus.cjs and the single executable dist/plexus. */
import { main } from "../src/cli/main";

main({ env: process.env, argv: process.argv.slice(2) }).then(
  (code) => {
    process.exitCode = code;
  },
  () => {
    process.exitCode = 1;
  },
);
