/**
 * The node paths `plexus install` and `plexus uninstall` share, with the same defaults, so that
 * uninstall finds what install wrote.
 */
import type { Command } from "commander";
import { DEFAULT_CONF_DIR, DEFAULT_HOST_PREFIX } from "../config/defaults";

export function addNodePathOptions(command: Command): Command {
  return command
    .option(
      "--cni-conf-dir <dir>",
      "the node's CNI config dir, as mounted in this container",
      `${DEFAULT_HOST_PREFIX}${DEFAULT_CONF_DIR}`,
    )
    .option(
      "--cni-bin-dir <dir>",
      "the node's CNI bin dir, as mounted in this container",
      `${DEFAULT_HOST_PREFIX}/opt/cni/bin`,
    )
    .option(
      "--host-prefix <dir>",
      'where the node\'s / is mounted in this container ("" when not in a container)',
      DEFAULT_HOST_PREFIX,
    );
}
