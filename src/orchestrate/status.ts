/**
 * STATUS (C2.8): can ADD be served? Forwarded to every delegate network; no API call (B66).
 * A delegate's own error (50/51 or other) is passed on with the network named; the networks asked
 * are the default network(s) an ADD attaches first, from the config and the node's files. The
 * runtime asks every few seconds, so the whole STATUS has one deadline (`statusTimeoutSeconds`):
 * what it leaves unchecked fails the STATUS with 11 (try again later), naming those networks.
 */
import type { CniRequest } from "../cni/env";
import { asCniError, CniError, Code } from "../cni/errors";
import { versionAtLeast } from "../cni/version";
import type { PlexusConf } from "../config/plugin-conf";
import { vetRecorded } from "../gate/gate";
import { statusNetworkList } from "../libcni/conflist";
import { runtimeConfFor, type RuntimeFor } from "../nodestate/runtime-conf";
import type { Deps } from "./deps";
import { planFromDelegates } from "../planning/plan";
import { planDefaultsOnly } from "../planning/pod-plan";
import type { Attachment } from "../nodestate/record";
import { isReady } from "./readiness";

export async function cmdStatus(req: CniRequest, conf: PlexusConf, deps: Deps): Promise<void> {
  // N6.1.2: the default network is not ready yet; ADD would wait for it.
  if (!(await isReady(conf.readinessindicatorfile))) {
    throw new CniError(
      Code.PluginNotAvailable,
      `the cluster default network is not ready: readiness indicator file ` +
        `${conf.readinessindicatorfile} does not exist`,
    );
  }
  const deadline = { at: Date.now() + conf.statusTimeoutMs, key: "statusTimeoutSeconds" };
  const ctx = { containerId: "", netns: "", cniArgs: "", deadline };
  const atts = await defaultNetworksOf(req, conf, deps);
  for (const [index, att] of atts.entries()) {
    const vetted = vetRecorded(att, { policy: conf });
    await statusNetworkList(vetted, runtimeConfFor(att, ctx, req, conf, deps), deps).catch(
      (err: unknown) => {
        throw statusFailure(err, { atts, index, deadline, conf });
      },
    );
  }
}

/**
 * The networks an ADD attaches before any pod's own: the inline `delegates`, or `clusterNetwork`
 * as found in the node's files (an installed node names it by path). defaultNetworks are NADs:
 * STATUS makes no API call, so they are not asked.
 */
async function defaultNetworksOf(
  req: CniRequest,
  conf: PlexusConf,
  deps: Deps,
): Promise<Attachment[]> {
  const ifName = req.ifName || "eth0";
  if (!conf.clusterNetwork) return planFromDelegates(conf, ifName);
  const noNads = { ...conf, defaultNetworks: [] };
  // Named as a NAD, it is found through the API, which STATUS does not ask: then only the
  // inline delegates are.
  return planDefaultsOnly({ ...req, ifName }, noNads, undefined, deps.log).catch((err: unknown) => {
    const why = { clusterNetwork: conf.clusterNetwork, err: asCniError(err).message };
    deps.log.debug(why, "STATUS: the cluster network is not in the node's files; not asked");
    return planFromDelegates(conf, ifName);
  });
}

/** A timer may fire a little before the wall clock reaches the deadline it was set for. */
const TIMER_SLACK_MS = 5;

type Failed = {
  atts: readonly Attachment[];
  index: number;
  deadline: NonNullable<RuntimeFor["deadline"]>;
  conf: PlexusConf;
};

/**
 * A network's STATUS failed. Its delegate stopped (or not started) by the call's deadline: the
 * STATUS is unanswered rather than failed, so 11 names that network and every later one that would
 * have been asked. Anything else (a delegate's own 50/51, its own timeout) is passed on.
 */
function statusFailure(err: unknown, failed: Failed): CniError {
  const cause = asCniError(err);
  const att = failed.atts[failed.index] as Attachment;
  const deadlinePassed = Date.now() >= failed.deadline.at - TIMER_SLACK_MS;
  if (cause.code !== Code.DelegateTimeout || !deadlinePassed) {
    return cause.withContext(`STATUS of network ${JSON.stringify(att.network)}`);
  }
  const notStarted = failed.atts
    .slice(failed.index + 1)
    .filter((later) => versionAtLeast(later.conf.cniVersion, "1.1.0"))
    .map((later) => `network ${JSON.stringify(later.network)} (not started)`);
  const unchecked = [`network ${JSON.stringify(att.network)} (${cause.message})`, ...notStarted];
  const seconds = failed.conf.statusTimeoutMs / 1000;
  return new CniError(
    Code.TryAgainLater,
    `STATUS did not finish within ${failed.deadline.key} (${seconds} s in Plexus's config); ` +
      `not checked: ${unchecked.join(", ")}`,
    cause.details,
    { cause },
  );
}
