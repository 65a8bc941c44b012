/**
 * The verbs' optional modules for the ops commands (explain, records rm --teardown): loaded up
 * front, since each ops command is itself loaded only when asked for. The CNI verbs load them
 * lazily instead (cli/verb-deps.ts).
 */
import { hostNetns } from "../netns/index";
import { parseNetworksAnnotation } from "../npwg/annotation";
import type { Deps, Loaders } from "../orchestrate/deps";
import { publishNetworkStatus, verifySelection } from "../orchestrate/publish";

export const eagerLoaders: Loaders = {
  annotation: async () => ({ parseNetworksAnnotation }),
  publish: async () => ({ publishNetworkStatus, verifySelection }),
};

/** What a verb run by an ops command uses besides its executor and stores. */
export const opsWiring: Pick<Deps, "netns" | "load"> = { netns: hostNetns, load: eagerLoaders };
