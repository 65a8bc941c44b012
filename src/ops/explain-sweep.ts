/**
 * For `plexus explain`: every problem of a pod's networks, not only the first. ADD stops at the
 * first error (nothing has run yet, so there is nothing to gain by going on); a person fixing a
 * pod wants them all at once. This goes through the same checks ADD makes, one network at a time,
 * with ADD's own functions and messages: each network the annotation selects (namespace access,
 * the NAD's existence, its config, the allowed plugin types, a resourceName the NAD does not
 * offer, a deviceID no allocation backs) and each default network.
 */
import type { PodRef } from "../cni/args";
import { asCniError, CniError, Code } from "../cni/errors";
import type { PlexusConf } from "../config/plugin-conf";
import type { KubeApi } from "../cluster/kube-api";
import { parseNetworksAnnotation } from "../npwg/annotation";
import { resolveDefaultNetworks } from "../npwg/default-network";
import { checkDeviceChoice, checkNamespaceAccess, nadMayUseConfDir } from "../npwg/isolation";
import { resolveNadConfig } from "../npwg/nad";
import { checkPluginTypes } from "../npwg/policy";
import { NETWORKS_ANNOTATION, type NetworkSelection, type Pod } from "../npwg/types";
import { attachmentResourceName } from "../planning/devices";
import { FsNetworkSource } from "../planning/network-source";
import { missingPluginBinaries } from "./plugin-binaries";

export interface SweepContext {
  conf: PlexusConf;
  kube: KubeApi;
  ifName: string;
  /** Where a call looks plugins up (plugin-binaries.ts): a missing binary is a problem too. */
  pluginDirs: readonly string[];
}

/**
 * One selected network's problem, with the context ADD would put around it; undefined when fine.
 */
async function selectionProblem(
  sel: NetworkSelection,
  ref: PodRef,
  ctx: SweepContext & { source: FsNetworkSource },
): Promise<CniError | undefined> {
  const reference = `${sel.namespace}/${sel.name}`;
  try {
    checkNamespaceAccess({ podNamespace: ref.namespace, ref: sel, conf: ctx.conf });
    const nad = await ctx.kube.getNad(sel.namespace, sel.name);
    if (!nad)
      return new CniError(
        Code.InvalidNetworkConfig,
        `network ${reference} requested in ${NETWORKS_ANNOTATION}: no ` +
          `NetworkAttachmentDefinition ${sel.name} exists in namespace ${sel.namespace}`,
      );
    const files = await ctx.source.confDirFiles();
    try {
      const { conf } = resolveNadConfig(nad, files, {
        confDirAllowed: nadMayUseConfDir(sel.namespace, ctx.conf),
      });
      checkPluginTypes(conf, ctx.conf.allowedPluginTypes, reference);
      // The first missing binary, as ADD stops at it for this network.
      const [missing] = await missingPluginBinaries(conf, ctx.pluginDirs);
      if (missing) return missing.withContext(`network ${reference}`);
    } catch (err) {
      return asCniError(err).withContext(`network ${reference}`);
    }
    // Its message names the network itself, as ADD's does.
    const hasResourceName = attachmentResourceName(nad, sel) !== undefined;
    const { deviceID } = sel;
    checkDeviceChoice({ network: reference, deviceID, hasResourceName, conf: ctx.conf });
    return undefined;
  } catch (err) {
    return asCniError(err);
  }
}

/** Each default network on its own: the cluster network, then every `defaultNetworks` entry. */
async function defaultNetworkProblems(
  pod: Pod,
  ctx: SweepContext & { source: FsNetworkSource },
): Promise<CniError[]> {
  const problems: CniError[] = [];
  const dirs = ctx.pluginDirs;
  const one = async (defaultNetworks: string[]) => {
    try {
      const d = await resolveDefaultNetworks(pod, { ...ctx.conf, defaultNetworks }, ctx.source);
      // The cluster network is resolved by each call: its binaries are checked with the first.
      const lists = defaultNetworks.length ? d.defaultNetworks : [d.clusterNetwork];
      for (const n of lists) problems.push(...(await missingPluginBinaries(n.conf, dirs)));
    } catch (err) {
      problems.push(asCniError(err));
    }
  };
  await one([]);
  for (const name of ctx.conf.defaultNetworks) await one([name]);
  return problems;
}

/** Every problem of the pod's networks, each message as ADD would give it (the pod named first). */
export async function sweepPodNetworks(
  pod: Pod,
  ref: PodRef,
  ctx: SweepContext,
): Promise<CniError[]> {
  const withSource = { ...ctx, source: new FsNetworkSource(ctx.conf.confDir, ctx.kube) };
  const problems = await defaultNetworkProblems(pod, withSource);
  let selections: NetworkSelection[] = [];
  try {
    selections = parseNetworksAnnotation(
      pod.metadata.annotations?.[NETWORKS_ANNOTATION] ?? "",
      ref.namespace,
      {
        maxSelections: ctx.conf.maxNetworks,
        reservedIfName: ctx.ifName,
      },
    );
  } catch (err) {
    problems.push(asCniError(err));
  }
  for (const sel of selections) {
    const problem = await selectionProblem(sel, ref, withSource);
    if (problem) problems.push(problem);
  }
  return problems.map((p) => p.withContext(`pod ${ref.namespace}/${ref.name}`));
}
