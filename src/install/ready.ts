/**
 * `plexus install --ready`: the install container's readiness probe (M11). It checks, without
 * writing anything, that the node runs what the installer makes of it: the first config the
 * runtime loads from --cni-conf-dir is Plexus's own file (config-state.ts). A DaemonSet rollout
 * (`kubectl rollout status`) then waits for each node to have switched, not only for the
 * containers to run. Exit 0 when switched, 1 when not, 2 for a wrong flag; one line on stdout,
 * which the kubelet shows in the pod's events when the probe fails.
 */
import { posix } from "node:path";
import { escapeText, quote } from "../cni/quote";
import { ExitCode } from "../command/exit-codes";
import { readRuntimeConfig, switchedVerdict } from "./config-state";
import { PLEXUS_CONF_NAME } from "./options";

export interface ReadyFlags {
  /** The conf dir as the install container sees it (the installer's own --cni-conf-dir). */
  cniConfDir: string;
  /** --no-take-over-multus: Multus's config first counts as done. */
  takeOverMultus?: boolean | undefined;
}

export function installReadyMain(
  flags: ReadyFlags,
  write: (line: string) => void = (line) => void process.stdout.write(line),
): number {
  if (!posix.isAbsolute(flags.cniConfDir)) {
    write(
      `plexus install --ready: --cni-conf-dir must be absolute, got ${quote(flags.cniConfDir)}\n`,
    );
    return ExitCode.Usage;
  }
  const confDir = posix.normalize(flags.cniConfDir);
  const verdict = switchedVerdict(readRuntimeConfig(confDir), {
    confDir,
    plexusName: PLEXUS_CONF_NAME,
    takeOverMultus: flags.takeOverMultus ?? true,
  });
  // File names and a skipped file's reason come from the node: escaped for the terminal.
  write(`${escapeText(verdict.message)}\n`);
  return verdict.ready ? ExitCode.Ok : ExitCode.Problem;
}
