/**
 * What the verbs do with a pod's network namespace, injected through `Deps.netns` so unit tests
 * run without a real namespace: the B4 check before anything runs, and M4's default routes.
 */
import { assertNetnsUsable, isOwnNetns } from "./check";
import { linkExists } from "./links";
import { setDefaultRoutes, type DefaultRoute } from "./routes";

export type { DefaultRoute } from "./routes";

export interface NetnsOps {
  /** B4: throws 4 unless `netns` is a network namespace. */
  assertUsable(netns: string): Promise<void>;
  /** M4: the pod's default routes of each gateway's family replaced by these. */
  setDefaultRoutes(netns: string, routes: readonly DefaultRoute[]): Promise<void>;
  /** Whether `name` is an interface in `netns` (the delegate gate's ownership rule). */
  linkExists(netns: string, name: string): Promise<boolean>;
  /** Whether `netns` is Plexus's own network namespace (the node's, for a runtime's plugin). */
  isOwn(netns: string): boolean;
}

/** The node's own namespaces (nsfs, `nsenter` and `ip`). */
export const hostNetns: NetnsOps = {
  assertUsable: assertNetnsUsable,
  setDefaultRoutes,
  linkExists,
  isOwn: isOwnNetns,
};
