/** The person-facing command line (commander), used when CNI_COMMAND is not set. */
import { Command } from "commander";
import { ALL_VERSIONS } from "../cni/version";

declare const PLEXUS_VERSION: string | undefined;
export const VERSION = typeof PLEXUS_VERSION === "string" ? PLEXUS_VERSION : "0.0.0-dev";

export async function runCommands(argv: readonly string[]): Promise<number> {
  const program = new Command("plexus")
    .description(
      "Plexus: a Kubernetes multi-network CNI meta-plugin (NPWG), a drop-in replacement for Multus.\n" +
        "As a CNI plugin it is run by the container runtime with CNI_COMMAND and friends set and its config on stdin.",
    )
    .version(VERSION, "-v, --version")
    .configureOutput({ writeOut: (s) => process.stderr.write(s), writeErr: (s) => process.stderr.write(s) })
    .exitOverride();
  program
    .command("cni-versions")
    .description("list the CNI spec versions Plexus speaks")
    .action(() => {
      process.stderr.write(`${ALL_VERSIONS.join("\n")}\n`);
    });
  try {
    await program.parseAsync([...argv], { from: "user" });
    return 0;
  } catch (err) {
    const code = (err as { exitCode?: number }).exitCode;
    return typeof code === "number" ? code : 1;
  }
}
