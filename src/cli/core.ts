/**
 * Everything behind the CLI boundary except VERSION: bundled separately (dist/plexus-core.cjs)
 * and loaded with a warm V8 code cache by load-core.ts, so VERSION never pays for it.
 */
export { runVerb } from "./run-verb";
export { runCommands } from "./commands";
export { warmUp } from "./warm-up";
