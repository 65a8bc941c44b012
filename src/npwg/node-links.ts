/**
 * The node interfaces a delegate's config names and takes as given: a macvlan, ipvlan or vlan
 * `master`, a host-device `device` (config/delegate-keys.ts). Such a network fails every ADD when
 * the interface is missing, and the plugin's own words do not say which (macvlan: "Link not
 * found"): `plexus validate` and `plexus explain` check them beforehand (ops/host-links.ts), and a
 * failed ADD names the missing one. An interface is looked up in /sys/class/net, which shows the
 * node's own interfaces to a process of the node's namespaces (a CNI call, a command run on the
 * node), without running any tool; only a valid interface name is ever made into that path.
 */
import { existsSync } from "node:fs";
import type { PluginConf } from "../cni/conf";
import { CniError } from "../cni/errors";
import { getKeyFold } from "../cni/keys";
import { quote } from "../cni/quote";
import { hostLinkKey } from "../config/delegate-keys";

/** A node interface named by a plugin's config. */
export interface HostLink {
  type: string;
  /** The key that names it, as the table spells it (`master`, `device`). */
  key: string;
  name: string;
}

/** The node interface `plugin` names, if its type takes one and the config names it. */
export function hostLinkOf(plugin: PluginConf): HostLink | undefined {
  const key = hostLinkKey(plugin.type);
  // Go's decoder in the plugin matches the key case-insensitively (`Master` is `master`).
  const name = key ? getKeyFold(plugin, key) : undefined;
  // No master: the plugin takes the default-route interface, which exists.
  if (!key || typeof name !== "string" || name === "") return undefined;
  return { type: plugin.type, key, name };
}

/** Linux's rule (dev_valid_name): 1–15 bytes, no `/`, `:` or whitespace, not `.` or `..`. */
export function validLinkName(name: string): boolean {
  return Buffer.byteLength(name) <= 15 && /^[^/:\s]+$/.test(name) && name !== "." && name !== "..";
}

/** Whether the node has an interface `name` (a valid name: see validLinkName). */
export function linkExistsOnNode(name: string): boolean {
  return existsSync(`/sys/class/net/${name}`);
}

/**
 * A delegate's failed ADD, with the node interface its config names and the node lacks (or that
 * is no valid name) added to its message: the key, the value and what was looked up. The error
 * as it was when every named interface is there.
 */
export function withMissingHostLink(
  err: CniError,
  plugins: readonly PluginConf[],
  linkExists: (name: string) => boolean = linkExistsOnNode,
): CniError {
  const missing: string[] = [];
  for (const plugin of plugins) {
    const link = hostLinkOf(plugin);
    if (!link) continue;
    const what = `${link.type}'s "${link.key}" ${quote(link.name)}`;
    if (!validLinkName(link.name)) missing.push(`${what} is not a valid interface name`);
    else if (!linkExists(link.name))
      missing.push(`${what} is not an interface of this node (no /sys/class/net/${link.name})`);
  }
  if (missing.length === 0) return err;
  return new CniError(err.code, `${err.message} (${missing.join("; ")})`, err.details, {
    cause: err,
  });
}
