/**
 * Which networks a pod gets, in order (N6, N6.2, N4.1, N4.2, N7.4, M2–M5, M8): the cluster default
 * network on CNI_IFNAME, the configured default networks, then every network the pod's annotation
 * selects, each resolved to the delegate config it runs and given its interface name.
 *
 * Without a pod context (no K8S_POD_* in CNI_ARGS: cnitool, podman — B7) or without Kubernetes
 * access, only the default network(s) are attached, as Multus does.
 */
import { podFromArgs, type PodRef } from "../cni/args";
import type { CniRequest } from "../cni/env";
import { asCniError, CniError, Code } from "../cni/errors";
import type { PlexusConf } from "../config/plugin-conf";
import type { KubeApi } from "../cluster/kube-api";
import type { Logger } from "../log/logger";
import { applySelection } from "../npwg/delegate-args";
import { resolveDefaultNetworks, type ResolvedNetwork } from "../npwg/default-network";
import { assignInterfaceNames } from "../npwg/ifnames";
import { checkPlan } from "../gate/gate";
import { checkNamespaceAccess, nadMayUseConfDir } from "../npwg/isolation";
import { checkPlanBounds, checkPluginTypes } from "../npwg/policy";
import { resolveNadConfig } from "../npwg/nad";
import { NETWORKS_ANNOTATION, type NetworkSelection, type Pod } from "../npwg/types";
import type * as Annotation from "../npwg/annotation";
import { withAuxiliaryChain } from "./aux-chain";
import {
  assignDevices,
  attachmentResourceName,
  resourceNameOf,
  type PodDevicesLookup,
} from "./devices";
import { FsNetworkSource } from "./network-source";
import { planFromDelegates } from "./plan";
import type { Attachment } from "../nodestate/record";

/** The networks annotation parser, loaded by the wiring (orchestrate/deps.ts `Loaders`). */
export interface AnnotationLoader {
  /** Only a pod of a cluster needs it. */
  annotation(): Promise<Pick<typeof Annotation, "parseNetworksAnnotation">>;
}

export interface PodPlan {
  /** The pod read from the API (undefined outside a cluster). */
  pod?: Pod;
  ref?: PodRef;
  attachments: Attachment[];
}

export interface PlanContext {
  /** Built on first use: only a pod of a cluster needs the API. */
  kube: () => Promise<KubeApi | undefined>;
  log: Logger;
  /** M10: the pod's allocated devices, asked only for a NAD with a resourceName. */
  podDevices?: PodDevicesLookup | undefined;
  /** DEL without a record: devices are a best effort (see devices.ts). */
  devicesBestEffort?: boolean;
  load: AnnotationLoader;
}

function podName(ref: PodRef): string {
  return `${ref.namespace}/${ref.name}`;
}

/**
 * An ADD for a pod of a cluster that Plexus cannot reach would attach the default network only and
 * succeed, silently dropping every network the pod asks for (Multus does that). Refused, unless the
 * config says this node runs without Kubernetes on purpose.
 */
function noKubernetesError(ref: PodRef): CniError {
  return new CniError(
    Code.InvalidNetworkConfig,
    `pod ${podName(ref)}: CNI_ARGS name a pod, but the config gives no way to reach Kubernetes: ` +
      `no "kubeconfig" key, no in-cluster environment (KUBERNETES_SERVICE_HOST and ` +
      `KUBERNETES_SERVICE_PORT) and no "fileClusterDir"; set one of them (plexus install writes ` +
      `"kubeconfig"), or set "withoutKubernetes": true if this node attaches the default ` +
      `network(s) only on purpose`,
  );
}

export async function planForPod(
  req: CniRequest,
  conf: PlexusConf,
  ctx: PlanContext,
): Promise<PodPlan & { kube?: KubeApi }> {
  const plan = await planNetworks(req, conf, ctx);
  // M12: ADD runs the auxiliary chain after the pod's networks (DEL has it in the record).
  if (req.command !== "ADD" || !conf.auxiliaryCNIChainName) return plan;
  try {
    const source = new FsNetworkSource(conf.confDir, undefined);
    return {
      ...plan,
      attachments: bounded(await withAuxiliaryChain(plan.attachments, conf, source), conf),
    };
  } catch (err) {
    throw plan.ref ? asCniError(err).withContext(`pod ${podName(plan.ref)}`) : err;
  }
}

async function planNetworks(
  req: CniRequest,
  conf: PlexusConf,
  ctx: PlanContext,
): Promise<PodPlan & { kube?: KubeApi }> {
  const ref = podFromArgs(req.args);
  const kube = ref ? await ctx.kube() : undefined;
  const source = new FsNetworkSource(conf.confDir, kube);
  if (ref && !kube && req.command === "ADD" && !conf.withoutKubernetes)
    throw noKubernetesError(ref);
  if (!ref || !kube) {
    ctx.log.info(
      {
        reason: ref
          ? "no Kubernetes access configured"
          : "no K8S_POD_NAMESPACE/K8S_POD_NAME in CNI_ARGS",
      },
      "attaching the default network(s) only",
    );
    return {
      ...(ref ? { ref } : {}),
      attachments: bounded(
        await defaultsOnly(req, conf, source, kube !== undefined, ctx.log),
        conf,
      ),
    };
  }
  const pod = await kube.getPod(ref.namespace, ref.name, ref.uid || undefined);
  // M8, B8, B39: a recreated pod (same name, new UID) must not get the old sandbox's networks.
  if (ref.uid && pod.metadata.uid && ref.uid !== pod.metadata.uid) {
    throw new CniError(
      Code.UnknownContainer,
      `pod ${podName(ref)}: UID mismatch: the runtime's K8S_POD_UID is ${ref.uid} but the API ` +
        `has ${pod.metadata.uid} (the pod was deleted and recreated)`,
    );
  }
  try {
    const { attachments, resourceNames } = await planPodNetworks(pod, ref, req, conf, {
      kube,
      source,
      log: ctx.log,
      load: ctx.load,
    });
    const withDevices = await assignDevices(bounded(attachments, conf), resourceNames, {
      ref,
      containerId: req.containerId,
      conf,
      lookup: ctx.podDevices,
      // DRA: the pod's claims, read through the same Kubernetes access (API, daemon or files).
      pod,
      dra: kube,
      log: ctx.log,
      bestEffort: ctx.devicesBestEffort,
    });
    return { pod, ref, kube, attachments: gated(withDevices, conf, ref) };
  } catch (err) {
    // Every error names the pod it is about (the runtime's log and the pod's events show it).
    throw asCniError(err).withContext(`pod ${podName(ref)}`);
  }
}

async function planPodNetworks(
  pod: Pod,
  ref: PodRef,
  req: CniRequest,
  conf: PlexusConf,
  ctx: { kube: KubeApi; source: FsNetworkSource; log: Logger; load: PlanContext["load"] },
): Promise<{ attachments: Attachment[]; resourceNames: Array<string | undefined> }> {
  const { kube, source } = ctx;
  const defaults = await resolveDefaultNetworks(pod, conf, source);
  for (const w of defaults.warnings) ctx.log.warn({ pod: podName(ref) }, w);

  // Loaded on first use, not at start-up: only a pod of a cluster parses annotations.
  const { parseNetworksAnnotation } = await ctx.load.annotation();
  const selections = parseNetworksAnnotation(
    pod.metadata.annotations?.[NETWORKS_ANNOTATION] ?? "",
    ref.namespace,
    {
      maxSelections: conf.maxNetworks,
      reservedIfName: req.ifName,
    },
  );
  for (const sel of selections)
    checkNamespaceAccess({ podNamespace: ref.namespace, ref: sel, conf });
  const selected = await resolveSelections(selections, ref, { kube, source, log: ctx.log, conf });
  // What the pod's own annotations chose runs only plugin types the administrator allows.
  if (defaults.clusterNetwork.byPod)
    checkPluginTypes(
      defaults.clusterNetwork.conf,
      conf.allowedPluginTypes,
      defaults.clusterNetwork.network,
    );
  for (const s of selected) checkPluginTypes(s.conf, conf.allowedPluginTypes, s.network);

  return buildAttachments({
    req,
    defaults,
    selections,
    selected,
    multusNamespace: conf.multusNamespace,
  });
}

/**
 * The attachments in order, each with its interface name (the default networks' first, as Multus
 * numbers them).
 */
function buildAttachments(input: {
  req: CniRequest;
  defaults: Awaited<ReturnType<typeof resolveDefaultNetworks>>;
  selections: NetworkSelection[];
  selected: Awaited<ReturnType<typeof resolveSelections>>;
  multusNamespace: string;
}): { attachments: Attachment[]; resourceNames: Array<string | undefined> } {
  const { req, defaults, selections, selected } = input;
  const defaultSelections: NetworkSelection[] = defaults.defaultNetworks.map((d) => ({
    name: d.network,
    namespace: input.multusNamespace,
  }));
  const nDefaults = defaultSelections.length;
  const ifNames = assignInterfaceNames([...defaultSelections, ...selections], req.ifName, {
    label: (s, i) =>
      i < nDefaults
        ? `defaultNetworks entry ${i + 1} (${s.name})`
        : `networks annotation item ${i - nDefaults + 1} (${s.namespace}/${s.name})`,
  });
  // M10, M19: each attachment's resource, in attachment order: the NAD's, or its selection's pick.
  const picked = selected.map((s) => attachmentResourceName(s.nad, s.sel));
  const resourceNames = [
    ...[defaults.clusterNetwork, ...defaults.defaultNetworks].map((n) => resourceNameOf(n.nad)),
    ...picked,
  ];
  const attachments: Attachment[] = [
    {
      network: defaults.clusterNetwork.network,
      ifName: req.ifName,
      isDefault: true,
      conf: defaults.clusterNetwork.conf,
      ...(defaults.clusterNetwork.byPod ? { chosenByPod: true as const } : {}),
    },
    ...defaults.defaultNetworks.map((d, i) => ({
      network: d.network,
      ifName: ifNames[i]!,
      isDefault: false,
      conf: d.conf,
    })),
    ...selected.map(({ sel, network, conf: c }, i) => {
      const applied = applySelection(c, sel, { deviceNetwork: picked[i] !== undefined });
      const att: Attachment = {
        network,
        ifName: ifNames[nDefaults + i]!,
        isDefault: false,
        conf: applied.conf,
        selection: sel,
      };
      if (Object.keys(applied.capabilityArgs).length > 0)
        att.capabilityArgs = applied.capabilityArgs;
      return att;
    }),
  ];
  return { attachments, resourceNames };
}

/** The delegate gate's rules on the whole plan, devices given: refused before anything runs. */
function gated(attachments: Attachment[], conf: PlexusConf, ref: PodRef): Attachment[] {
  checkPlan(attachments, { policy: conf, podNamespace: ref.namespace });
  return attachments;
}

/** Bounded work per call (policy.ts), checked before any delegate runs. */
function bounded(attachments: Attachment[], conf: PlexusConf): Attachment[] {
  checkPlanBounds(attachments, conf);
  return attachments;
}

/**
 * NADs of the selections, read in parallel (independent reads; delegates still run serially, N7.3).
 */
async function resolveSelections(
  selections: NetworkSelection[],
  ref: PodRef,
  ctx: { kube: KubeApi; source: FsNetworkSource; log: Logger; conf: PlexusConf },
) {
  const files = selections.length > 0 ? await ctx.source.confDirFiles() : [];
  const kube = ctx.kube;
  const nads = await Promise.all(selections.map((sel) => kube.getNad(sel.namespace, sel.name)));
  const missing = selections.findIndex((_, i) => !nads[i]);
  if (missing >= 0) {
    const sel = selections[missing]!;
    // M9, B28: the event is best effort (its failure is not the pod's), but it is awaited: the
    // process exits as soon as the ADD's answer is written. The ADD fails before any delegate runs.
    await kube
      .recordEvent(ref, {
        type: "Warning",
        reason: "NoNetworkFound",
        message:
          `cannot find a network-attachment-definition (${sel.name}) in namespace ` +
          `(${sel.namespace})`,
      })
      .catch(() => {});
    throw new CniError(
      Code.InvalidNetworkConfig,
      `network ${sel.namespace}/${sel.name} requested in ${NETWORKS_ANNOTATION}: no ` +
        `NetworkAttachmentDefinition ${sel.name} exists in namespace ${sel.namespace}`,
    );
  }
  return selections.map((sel, i) => {
    const reference = `${sel.namespace}/${sel.name}`;
    const nad = nads[i]!;
    try {
      const resolved = resolveNadConfig(nad, files, {
        confDirAllowed: nadMayUseConfDir(sel.namespace, ctx.conf),
      });
      for (const w of resolved.warnings) ctx.log.warn({ pod: podName(ref), network: reference }, w);
      return { sel, network: reference, conf: resolved.conf, nad };
    } catch (err) {
      throw asCniError(err).withContext(`network ${reference}`);
    }
  });
}

/**
 * The default network(s) from the config alone: no pod, or a pod the API no longer has (B38 on
 * DEL).
 */
export async function planDefaultsOnly(
  req: CniRequest,
  conf: PlexusConf,
  kube: KubeApi | undefined,
  log: Logger,
): Promise<Attachment[]> {
  return defaultsOnly(req, conf, new FsNetworkSource(conf.confDir, kube), kube !== undefined, log);
}

/**
 * B7: the default network(s) from the config alone (defaultNetworks are NADs: only with API
 * access).
 */
async function defaultsOnly(
  req: CniRequest,
  conf: PlexusConf,
  source: FsNetworkSource,
  hasKube: boolean,
  log: Logger,
): Promise<Attachment[]> {
  if (!conf.clusterNetwork && conf.defaultNetworks.length === 0)
    return planFromDelegates(conf, req.ifName);
  if (!hasKube && conf.defaultNetworks.length)
    log.warn(
      { defaultNetworks: conf.defaultNetworks },
      "no Kubernetes access: defaultNetworks are not attached",
    );
  const d = await resolveDefaultNetworks(
    undefined,
    hasKube ? conf : { ...conf, defaultNetworks: [] },
    source,
  );
  for (const w of d.warnings) log.warn(w);
  const networks: ResolvedNetwork[] = [d.clusterNetwork, ...d.defaultNetworks];
  return networks.map((n, i) => ({
    network: n.network,
    ifName: i === 0 ? req.ifName : `net${i}`,
    isDefault: i === 0,
    conf: n.conf,
  }));
}
