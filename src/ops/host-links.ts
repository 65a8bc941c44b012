/**
 * Host interfaces a delegate takes as given (`plexus validate`, `plexus explain`): a macvlan,
 * ipvlan or vlan `master` and a host-device `device` must already exist on the node, or every ADD
 * of the network fails inside the plugin. A bridge is not among them (the bridge plugin creates its
 * bridge), nor a master left out (the plugin uses the default-route interface). Which key names
 * one, and the lookup in /sys/class/net, are ADD's own (npwg/node-links.ts).
 */
import type { PluginConf } from "../cni/conf";
import { quote } from "../cni/quote";
import { hostLinkOf, linkExistsOnNode, validLinkName } from "../npwg/node-links";

const INVALID_NAME = "not a valid interface name (1–15 bytes, no / : or spaces)";

/** One problem per plugin whose host interface is missing or no valid name (empty: all there). */
export function hostLinkProblems(
  plugins: readonly PluginConf[],
  linkExists: (name: string) => boolean = linkExistsOnNode,
): string[] {
  const problems: string[] = [];
  for (const p of plugins) {
    const link = hostLinkOf(p);
    if (!link) continue;
    const { key, name } = link;
    const what = `plugin ${p.type}: ${key} ${quote(name)}`;
    if (!validLinkName(name)) problems.push(`${what} is ${INVALID_NAME}`);
    else if (!linkExists(name))
      problems.push(
        `${what} does not exist on this node (no /sys/class/net/${name}): every ADD of this ` +
          `network would fail; create the interface or change "${key}"`,
      );
  }
  return problems;
}
