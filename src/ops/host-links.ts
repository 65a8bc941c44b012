/**
 * Host interfaces a delegate takes as given (`plexus validate`): a macvlan, ipvlan or vlan
 * `master` and a host-device `device` must already exist on the node, or every ADD of the network
 * fails inside the plugin. A bridge is not among them (the bridge plugin creates its bridge), nor a
 * master left out (the plugin uses the default-route interface). Looked up in /sys/class/net of
 * this network namespace, the node's own when run on the node; the name checked first, so the
 * path is built only from a valid interface name.
 */
import { existsSync } from "node:fs";
import type { PluginConf } from "../cni/conf";
import { getKeyFold } from "../cni/keys";

/** The key of each plugin type that names an existing host interface. */
const HOST_LINK_KEYS: Readonly<Record<string, string>> = {
  macvlan: "master",
  ipvlan: "master",
  vlan: "master",
  "host-device": "device",
};

/** Linux's rule (dev_valid_name): 1–15 bytes, no `/`, `:` or whitespace, not `.` or `..`. */
function validLinkName(name: string): boolean {
  return Buffer.byteLength(name) <= 15 && /^[^/:\s]+$/.test(name) && name !== "." && name !== "..";
}

const INVALID_NAME = "not a valid interface name (1–15 bytes, no / : or spaces)";

function linkExistsOnNode(name: string): boolean {
  return existsSync(`/sys/class/net/${name}`);
}

/** One problem per plugin whose host interface is missing or no valid name (empty: all there). */
export function hostLinkProblems(
  plugins: readonly PluginConf[],
  linkExists: (name: string) => boolean = linkExistsOnNode,
): string[] {
  const problems: string[] = [];
  for (const p of plugins) {
    const key = HOST_LINK_KEYS[p.type];
    // Go's decoder in the plugin matches the key case-insensitively (`Master` is `master`).
    const name = key ? getKeyFold(p, key) : undefined;
    if (typeof name !== "string" || name === "") continue;
    const what = `plugin ${p.type}: ${key} ${JSON.stringify(name)}`;
    if (!validLinkName(name)) problems.push(`${what} is ${INVALID_NAME}`);
    else if (!linkExists(name))
      problems.push(
        `${what} does not exist on this node (no /sys/class/net/${name}): every ADD of this ` +
          `network would fail; create the interface or change "${key}"`,
      );
  }
  return problems;
}
