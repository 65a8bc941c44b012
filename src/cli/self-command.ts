/**
 * The daemon's passes (housekeeping-pass.ts, hotplug-pass.ts) run Plexus again as a process of
 * its own, with the daemon's node paths and log level: the argv that does it, one way for both.
 */
import { isStandaloneExecutable } from "../sys/runtime";

interface SelfCommand {
  /** The subcommand and its own arguments: `["records", "retry"]`. */
  command: string[];
  flags: { logLevel?: unknown; cniConfDir?: unknown; cniPath?: unknown };
}

/**
 * The arguments for `process.execPath`: the executable itself, or under Node the bundle it runs.
 */
export function selfArgs({ command, flags }: SelfCommand): string[] {
  const self = isStandaloneExecutable() ? [] : [process.argv[1] ?? ""];
  const level = typeof flags.logLevel === "string" ? flags.logLevel : "info";
  const args = [...self, ...command, "--log-level", level];
  if (typeof flags.cniConfDir === "string" && flags.cniConfDir)
    args.push("--cni-conf-dir", flags.cniConfDir);
  if (typeof flags.cniPath === "string" && flags.cniPath) args.push("--cni-path", flags.cniPath);
  return args;
}
