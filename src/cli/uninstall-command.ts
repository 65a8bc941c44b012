/**
 * `plexus uninstall`: takes Plexus's config, kubeconfig and binary off a node (the DaemonSet of
 * deploy/uninstall/ runs it on every node; by hand on a node it takes the node's own paths). Same
 * path flags and defaults as `plexus install`, so it finds what the installer wrote.
 */
import type { Command } from "commander";
import { DEFAULT_CNI_DIR, DEFAULT_KUBECONFIG_FILE_HOST } from "../config/defaults";
import { addNodePathOptions } from "./node-path-options";
import { COMMANDS } from "./routes";

export function addUninstallCommand(program: Command, setExitCode: (code: number) => void): void {
  const uninstall = program
    .command("uninstall")
    .description(
      "remove Plexus's CNI config, its kubeconfig and the plexus binary from this node; the " +
        "primary network's config stays (run by deploy/uninstall/)",
    );
  addNodePathOptions(uninstall)
    .option(
      "--kubeconfig-file-host <path>",
      "the installed kubeconfig's path on the node (the token and CA copies beside it go too)",
      DEFAULT_KUBECONFIG_FILE_HOST,
    )
    .option("--cni-dir <dir>", "the plugin's state dir on the node", DEFAULT_CNI_DIR)
    .option("--remove-state", "also remove the state dir (container records)")
    .option("--wait", "after the removal, keep running until SIGTERM (for a DaemonSet)")
    .option("--log-level <level>", "this command's log level (stderr)", "info")
    .action(async (flags: Record<string, unknown>) => {
      const { uninstallMain } = await COMMANDS.uninstall.load();
      setExitCode(await uninstallMain(flags));
    });
}
