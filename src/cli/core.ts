/**
 * Everything behind the CLI boundary except VERSION: bundled separately (dist/plexus-core.cjs)
 * and loaded with a warm V8 code cache by load-core.ts, so VERSION never pays for it.
 *
 * Only the CNI verbs are imported eagerly; the person-facing commands (commander, the installer)
 * and the build-time warm-up are initialised on first use, so an ADD never pays for them.
 */
import { config } from "zod/mini";

// zod 4 compiles object parsers with `new Function` on first use: a cost every short-lived CNI
// process would pay again, and code no V8 code cache can hold. Interpreted parsing is faster here.
config({ jitless: true });

export { runVerb } from "./run-verb";

export async function runCommands(argv: readonly string[]): Promise<number> {
  return (await import("./commands")).runCommands(argv);
}

export async function warmUp(): Promise<void> {
  return (await import("./warm-up")).warmUp();
}
