/**
 * What a pod may make Plexus run, beyond namespace isolation (isolation.ts): the tenant who writes
 * NADs and annotations is not trusted with the node.
 *
 * - `allowedPluginTypes`: the plugin types (and IPAM types, which the plugins run) of every network
 *   a pod's annotations select, the default-network override included. The administrator's own
 *   networks (`clusterNetwork`, `delegates`, `defaultNetworks`) are not checked: they are trusted,
 *   and an allowlist that forgot the cluster's CNI must not break every pod.
 * - Bounded work per call: at most `maxPluginsPerNetwork` plugins in one network and
 *   `maxDelegateCalls` delegate runs in one ADD (every plugin of every attachment), checked before
 *   any delegate runs. A NAD of 10,000 plugins would otherwise hold the node for minutes.
 *
 * Each refusal is code 7 naming the network, what it has, the limit and the key that changes it.
 */
import type { ConfList } from "../cni/conf";
import { CniError, Code } from "../cni/errors";
import { isPlainObject } from "../cni/json";

export interface PlanBounds {
  maxPluginsPerNetwork: number;
  maxDelegateCalls: number;
}

/** The plugin types a network runs: each plugin's `type`, and its `ipam.type`. */
export function typesOf(list: ConfList): string[] {
  const types = new Set<string>();
  for (const p of list.plugins) {
    types.add(p.type);
    if (isPlainObject(p.ipam) && typeof p.ipam.type === "string") types.add(p.ipam.type);
  }
  return [...types];
}

export function checkPluginTypes(
  list: ConfList,
  allowed: readonly string[] | undefined,
  network: string,
): void {
  if (!allowed) return;
  const refused = typesOf(list).filter((t) => !allowed.includes(t));
  if (refused.length === 0) return;
  throw new CniError(
    Code.InvalidNetworkConfig,
    `network ${network} uses plugin type ${refused.map((t) => JSON.stringify(t)).join(", ")}, ` +
      `which "allowedPluginTypes" in Plexus's config does not list ` +
      `(${allowed.join(", ") || "empty"}); ` +
      `an administrator can add it there`,
  );
}

export function checkPlanBounds(
  networks: ReadonlyArray<{ network: string; conf: ConfList }>,
  bounds: PlanBounds,
): void {
  let calls = 0;
  for (const { network, conf } of networks) {
    const n = conf.plugins.length;
    if (n > bounds.maxPluginsPerNetwork) {
      throw new CniError(
        Code.InvalidNetworkConfig,
        `network ${network} has ${n} plugins, more than the ${bounds.maxPluginsPerNetwork} one ` +
          `network may have; raise "maxPluginsPerNetwork" in Plexus's config if that is intended`,
      );
    }
    calls += n;
  }
  if (calls > bounds.maxDelegateCalls) {
    throw new CniError(
      Code.InvalidNetworkConfig,
      `the pod's ${networks.length} networks would run ${calls} delegates, more than the ` +
        `${bounds.maxDelegateCalls} one ADD may run; raise "maxDelegateCalls" in Plexus's config ` +
        `if that is intended`,
    );
  }
}
