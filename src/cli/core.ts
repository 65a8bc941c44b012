/**
 * Everything behind the CLI boundary except VERSION, initialised on first use by load-core.ts, so
 * VERSION never pays for it.
 *
 * Only the CNI verbs' entry and wiring are imported with it (run-verb.ts, verb-deps.ts); each verb
 * (orchestrate/add.ts, del.ts, …) is loaded when it is called, and the person-facing commands
 * (commander, the installer) on first use, so an ADD never pays for them.
 */
import { setJitPolicy } from "../sys/runtime";

export { runVerb } from "./run-verb";

export async function runCommands(argv: readonly string[]): Promise<number> {
  // The executable starts with a late JIT tier-up, right for a CNI call (scripts/build-bun.mjs);
  // the daemon and the installer run for days: normal policy for them.
  setJitPolicy(1);
  return (await import("./commands")).runCommands(argv);
}
