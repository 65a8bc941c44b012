/**
 * A NetnsOps for unit tests: no real namespace needed. A path that does not exist is refused with
 * code 4 as the real check would (B4); default routes are kept, not set.
 */
import { existsSync } from "node:fs";
import { CniError, Code } from "../../src/cni/errors";
import type { DefaultRoute, NetnsOps } from "../../src/netns/index";

export interface FakeNetns extends NetnsOps {
  routes: Array<{ netns: string; routes: DefaultRoute[] }>;
  /** Interfaces that exist before any delegate runs, by netns path (the gate's ownership rule). */
  links: Map<string, Set<string>>;
}

export function fakeNetns(): FakeNetns {
  const routes: FakeNetns["routes"] = [];
  const links: FakeNetns["links"] = new Map();
  return {
    routes,
    links,
    async linkExists(netns: string, name: string): Promise<boolean> {
      return links.get(netns)?.has(name) ?? false;
    },
    isOwn(): boolean {
      return false;
    },
    async assertUsable(netns: string): Promise<void> {
      if (!existsSync(netns))
        throw new CniError(
          Code.InvalidEnv,
          `CNI_NETNS ${JSON.stringify(netns)} cannot be opened (ENOENT)`,
        );
    },
    async setDefaultRoutes(netns: string, defaults: readonly DefaultRoute[]): Promise<void> {
      routes.push({ netns, routes: [...defaults] });
    },
  };
}
