/**
 * The verbs' optional modules for the ops commands (explain, records rm --teardown): loaded up
 * front, since each ops command is itself loaded only when asked for. The CNI verbs load them
 * lazily instead (cli/verb-deps.ts).
 */
import type { PlexusConf } from "../config/plugin-conf";
import { kubeFactory } from "../sources/kube-factory";
import { delegateRunLog } from "../daemon-client/delegate-runs";
import { createLogger } from "../log/logger";
import type { Logger } from "../log/types";
import { hostNetns } from "../netns/index";
import { parseNetworksAnnotation } from "../npwg/annotation";
import type { Deps, Loaders } from "../orchestrate/deps";
import { nodeDeps } from "../orchestrate/node-deps";
import { publishNetworkStatus, verifySelection } from "../orchestrate/publish";
import type { CommonFlags } from "./context";
import { loadNodeConfig } from "./node-config";

export const eagerLoaders: Loaders = {
  annotation: async () => ({ parseNetworksAnnotation }),
  publish: async () => ({ publishNetworkStatus, verifySelection }),
};

/** What a verb run by an ops command uses besides its executor and stores. */
export const opsWiring: Pick<Deps, "netns" | "load"> = { netns: hostNetns, load: eagerLoaders };

/**
 * The config, logger and dependencies of a pass the node daemon runs as a process of its own
 * (`plexus records retry`, `plexus hotplug`): the node's Plexus config, a logger to stderr, the
 * verbs' stores and executor, and the API client with the config's request deadlines.
 */
export async function nodePassDeps(input: {
  flags: CommonFlags;
  bindings: Record<string, unknown>;
}): Promise<{ conf: PlexusConf; log: Logger; deps: Deps }> {
  const { conf } = loadNodeConfig({ config: input.flags.config, confDir: input.flags.cniConfDir });
  const logLevel = input.flags.logLevel ?? "info";
  const log = await createLogger({ logLevel, logToStderr: true }, input.bindings);
  const { apiRequestTimeoutMs: requestTimeoutMs, apiTotalTimeoutMs: totalTimeoutMs } = conf;
  const client = { retry: { requestTimeoutMs, totalTimeoutMs } };
  const deps: Deps = {
    ...nodeDeps(conf, log, process.env),
    ...opsWiring,
    kube: kubeFactory(conf, { env: process.env, log, client }),
    // M20: the daemon counts its passes' delegate runs too, handed over when the pass is done.
    observe: delegateRunLog(conf.daemonSocket, { atExit: true }).observe,
  };
  return { conf, log, deps };
}
