/**
 * The one boundary (C2.2; every failure leaves as a CNI error with its code): env + stdin in,
 * exactly one JSON document out on stdout where the CNI spec asks for output (ADD, VERSION, any
 * error), nothing where it asks for none (DEL, CHECK, STATUS, GC success); exit 0 or 1. On a CNI
 * call only this file writes to stdout (through stdio.ts); the person-facing commands (no
 * CNI_COMMAND) print their own output from commands.ts and ops/.
 *
 * VERSION is answered here; everything else lives in the core bundle (load-core.ts), so VERSION
 * loads neither the config shapes nor pino.
 */
import { parseCommand } from "../cni/env";
import { asCniError } from "../cni/errors";
import { CURRENT_VERSION, versionInfo } from "../cni/version";
import { loadCore } from "./load-core";
import { writeStdout, type MainIo } from "./stdio";

export type { MainIo };

/** Returns the process exit code. */
export async function main(io: MainIo): Promise<number> {
  // Not a CNI call: the person-facing commands. No arguments: the help, unless other CNI_*
  // variables show a runtime calling without CNI_COMMAND (that is error 4, B1).
  if (
    io.env.CNI_COMMAND === undefined &&
    (io.argv.length > 0 || !Object.keys(io.env).some((k) => k.startsWith("CNI_")))
  ) {
    const { runCommands } = await loadCore();
    return runCommands(io.argv);
  }
  let errorVersion: string = CURRENT_VERSION;
  const afterAnswer: Array<() => Promise<void>> = [];
  try {
    const command = parseCommand(io.env.CNI_COMMAND);
    if (command === "VERSION") {
      // B10: stdin is not even read, so garbage there cannot matter.
      writeStdout(JSON.stringify(versionInfo()));
      return 0;
    }
    const { runVerb } = await loadCore();
    const out = await runVerb(
      io,
      (v) => {
        errorVersion = v;
      },
      afterAnswer,
    );
    if (out !== undefined) writeStdout(JSON.stringify(out));
    return 0;
  } catch (err) {
    const e = asCniError(err);
    writeStdout(JSON.stringify(e.toJSON(errorVersion)));
    return 1;
  } finally {
    for (const after of afterAnswer) await after();
  }
}
