/**
 * `plexus explain POD`: the plan ADD would make for a pod, without running any delegate. It calls
 * ADD's own planner (planForPod), capability rules (applySelection, inside the planner), plugin
 * config builder (buildPluginConf), environment (envFor) and binary lookup (findInPath), so what it
 * shows, errors included, is what ADD would do and say. What would fail inside a plugin is checked
 * on the node as `validate` checks it: a missing IPAM binary, a `master` or `device` the node does
 * not have; the keys no plugin reads (a NAD's `mastr`) are notes, from ADD's own warnings.
 */
import { existsSync } from "node:fs";
import type { CniRequest } from "../cni/env";
import { asCniError, CniError, Code } from "../cni/errors";
import { isPlainObject } from "../cni/json";
import { escapeText, quote } from "../cni/quote";
import { parseCniArgs } from "../cni/args";
import { buildPluginConf, envFor, isBuiltinPassthru } from "../libcni/conflist";
import { findInPath } from "../invoke/find";
import { resolveNadConfig } from "../npwg/nad";
import type { KubeApi } from "../cluster/kube-api";
import { inPod } from "../orchestrate/add";
import { describeAttachment, runtimeConfFor, type RuntimeFor } from "../nodestate/runtime-conf";
import { FsNetworkSource } from "../planning/network-source";
import { planForPod } from "../planning/pod-plan";
import type { AttachmentDevice } from "../planning/devices";
import type { Attachment } from "../nodestate/record";
import {
  type CommonFlags,
  opsContext,
  type OpsContext,
  type Output,
  processOutput,
  ReadOnlyKube,
  runAsked,
} from "./context";
import { podDevicesLookup } from "../sources/pod-devices-lookup";
import { PLEXUS_KEYS } from "../config/plugin-conf";
import { reportUnknownKeys } from "../config/unknown-keys";
import { sweepPodNetworks } from "./explain-sweep";
import { hostLinkProblems } from "./host-links";
import { eagerLoaders } from "./loaders";
import { ManifestKube } from "./manifest-kube";
import { noteLogger } from "./note-logger";
import { pluginDirs } from "./plugin-binaries";
import { ExitCode } from "../command/exit-codes";

export interface ExplainFlags extends CommonFlags {
  file?: string | undefined;
  nads?: string | undefined;
  ifname?: string | undefined;
  uid?: string | undefined;
}

interface PluginStep {
  type: string;
  /** The binary `type` resolves to; absent when it is missing (see `missing`). */
  binary?: string;
  missing?: string;
  /**
   * The plugin's config on stdin, as ADD builds it (the first plugin's; later ones also get
   * prevResult).
   */
  stdin: Record<string, unknown>;
  env: Record<string, string>;
}

interface AttachmentPlan {
  network: string;
  ifName: string;
  isDefault: boolean;
  /** For a NAD: where its config comes from ("spec.config" or a file of the config directory). */
  source?: string;
  /** The network's config name (what delegates see as `name`). */
  configName: string;
  cniVersion: string;
  capabilityArgs: Record<string, unknown>;
  /**
   * M10: the device chosen for a NAD with a resourceName (kubelet's allocation, or the pod's own).
   */
  device?: AttachmentDevice;
  /** M10, M19: the resource (device pool) it takes, and who picked it: the NAD or the selection. */
  resource?: { name: string; pickedBy: "nad" | "selection" };
  plugins: PluginStep[];
}

export interface Explanation {
  pod?: string;
  config: string;
  cniPath: string[];
  attachments: AttachmentPlan[];
  /** Every error ADD would hit, in the order it would meet them; ADD stops at the first. */
  errors: Array<{ code: number; msg: string }>;
  /** Warnings ADD would log, events it would record. */
  notes: string[];
}

const NETNS = "<the pod sandbox's netns>";
const CONTAINER = "<the pod sandbox's id>";

function podArg(
  pod: string | undefined,
  kube: ManifestKube | undefined,
): { namespace: string; name: string } | undefined {
  if (kube) return { namespace: kube.pod.metadata.namespace, name: kube.pod.metadata.name };
  if (!pod) return undefined;
  const [a, b] = pod.split("/");
  return b === undefined ? { namespace: "default", name: a! } : { namespace: a!, name: b };
}

async function kubeFor(
  ctx: OpsContext,
  flags: ExplainFlags,
): Promise<{ kube?: KubeApi; manifest?: ManifestKube }> {
  if (flags.file) {
    const manifest = new ManifestKube(flags.file, flags.nads);
    return { kube: manifest, manifest };
  }
  const kube = await ctx.kube();
  return kube ? { kube } : {};
}

/**
 * Where a NAD attachment's config came from, asked of ADD's resolver again (the plan does not keep
 * it).
 */
async function nadSource(
  kube: KubeApi,
  att: Attachment,
  ctx: OpsContext,
): Promise<string | undefined> {
  const sel = att.selection!;
  const nad = await kube.getNad(sel.namespace, sel.name).catch(() => undefined);
  if (!nad) return undefined;
  try {
    return resolveNadConfig(
      nad,
      await new FsNetworkSource(ctx.conf.confDir, undefined).confDirFiles(),
    ).source;
  } catch {
    return undefined;
  }
}

/**
 * The ADD the runtime would make for the pod's sandbox (placeholders for what only the sandbox
 * has).
 */
function addRequest(
  ref: { namespace: string; name: string } | undefined,
  uid: string | undefined,
  ifName: string,
  path: string[],
): CniRequest {
  const uidArg = uid ? `;K8S_POD_UID=${uid}` : "";
  const rawArgs = ref
    ? `IgnoreUnknown=1;K8S_POD_NAMESPACE=${ref.namespace};K8S_POD_NAME=${ref.name}${uidArg}`
    : "";
  return {
    command: "ADD",
    containerId: CONTAINER,
    netns: NETNS,
    ifName,
    args: parseCniArgs(rawArgs),
    rawArgs,
    path,
  };
}

/**
 * ADD waits for the readiness file first (readiness.ts) and fails with code 11 when it never comes.
 */
function readinessError(ctx: OpsContext): { code: number; msg: string } | undefined {
  const file = ctx.conf.readinessindicatorfile;
  if (!file || existsSync(file)) return undefined;
  return {
    code: Code.TryAgainLater,
    msg:
      `readiness indicator file ${file} is missing: ADD would wait up to ` +
      `${Math.round(ctx.conf.readinessTimeoutMs / 1000)} s for it, then fail (the cluster ` +
      `default network is not ready)`,
  };
}

export async function explain(
  pod: string | undefined,
  flags: ExplainFlags,
  env = process.env,
): Promise<Explanation> {
  const ctx = await opsContext(flags, env);
  const notes: string[] = [];
  const report: Explanation = {
    config: ctx.path,
    cniPath: ctx.cniPath,
    attachments: [],
    errors: [],
    notes,
  };
  for (const r of reportUnknownKeys(ctx.conf.unknownKeys, PLEXUS_KEYS.names, ctx.path))
    notes.push(r.msg);
  const fail = (err: unknown) => {
    const e = asCniError(err);
    if (!report.errors.some((x) => x.msg === e.message))
      report.errors.push({ code: e.code, msg: e.message });
  };
  try {
    await explainAdd(report, { pod, flags, ctx, fail });
  } finally {
    await ctx.kube.close();
  }
  return report;
}

/** What ADD would do for the pod (or none), into `report`: its plan, else every error it hits. */
async function explainAdd(
  report: Explanation,
  call: {
    pod: string | undefined;
    flags: ExplainFlags;
    ctx: OpsContext;
    fail: (err: unknown) => void;
  },
): Promise<void> {
  const { pod, flags, ctx, fail } = call;
  const { notes } = report;
  const { kube, manifest } = await kubeFor(ctx, flags);
  const ref = podArg(pod, manifest);
  // No Kubernetes access: ADD's planner says what ADD would (fail, or the default network only
  // with withoutKubernetes); --file POD.yaml --nads DIR is a dry run without a cluster.
  if (ref && !kube)
    notes.push(
      `config ${ctx.path} gives no Kubernetes access: use --file POD.yaml --nads DIR for a dry ` +
        `run`,
    );
  const ro = kube ? new ReadOnlyKube(kube) : undefined;
  // The runtime passes the pod's UID (K8S_POD_UID); planForPod reads the pod again, as ADD does.
  const found =
    ref && kube ? await kube.getPod(ref.namespace, ref.name).catch(() => undefined) : undefined;
  if (ref) report.pod = `${ref.namespace}/${ref.name}`;
  const req = addRequest(
    ref,
    flags.uid ?? found?.metadata.uid,
    flags.ifname ?? "eth0",
    ctx.cniPath,
  );
  const readiness = readinessError(ctx);
  if (readiness) report.errors.push(readiness);
  try {
    await planInto(report, { req, ctx, ro, fail });
  } catch (err) {
    fail(err);
    // ADD stops at its first error; a person wants every one (all missing NADs, all bad networks).
    if (found && ref && ro)
      for (const e of await sweepPodNetworks(found, ref, {
        conf: ctx.conf,
        kube: ro,
        ifName: req.ifName,
        pluginDirs: pluginDirs(ctx.conf, ctx.cniPath),
      }))
        fail(e);
  } finally {
    for (const e of ro?.withheldEvents ?? [])
      notes.push(`ADD would record a ${e.type} event ${e.reason} on the pod: ${e.message}`);
  }
}

/** ADD's own plan for the request, each attachment's plugins, environment and binaries. */
async function planInto(
  report: Explanation,
  call: {
    req: CniRequest;
    ctx: OpsContext;
    ro: ReadOnlyKube | undefined;
    fail: (err: unknown) => void;
  },
): Promise<void> {
  const { req, ctx, ro } = call;
  const log = noteLogger(report.notes, ctx.log);
  const plan = await planForPod(req, ctx.conf, {
    kube: async () => ro,
    log,
    load: eagerLoaders,
    podDevices: podDevicesLookup(ctx.conf, log),
  });
  const rt: RuntimeFor = { containerId: req.containerId, netns: req.netns, cniArgs: req.rawArgs };
  for (const att of plan.attachments) {
    const step = await attachmentPlan(att, rt, req, ctx, call.fail);
    const source = att.selection && ro ? await nadSource(ro, att, ctx) : undefined;
    report.attachments.push(source ? { ...step, source } : step);
  }
}

async function attachmentPlan(
  att: Attachment,
  rt: RuntimeFor,
  req: CniRequest,
  ctx: OpsContext,
  fail: (err: unknown) => void,
): Promise<AttachmentPlan> {
  const runtime = runtimeConfFor(att, rt, req, ctx.conf, { baseEnv: {} });
  const plugins: PluginStep[] = [];
  for (const plugin of att.conf.plugins) {
    const step: PluginStep = {
      type: plugin.type,
      stdin: buildPluginConf(att.conf, plugin, runtime.capabilityArgs),
      env: envFor("ADD", runtime),
    };
    try {
      step.binary = isBuiltinPassthru(plugin)
        ? "(built into Plexus: the auxiliary chain's passthru)"
        : await findInPath(plugin.type, runtime.path);
    } catch (err) {
      // The same context as ADD puts around it (conflist.ts runPlugin, add.ts).
      const e = inPod(
        req,
        asCniError(err)
          .withContext(`network ${quote(att.conf.name)}`)
          .withContext(`ADD of ${describeAttachment(att)} failed`),
      );
      step.missing = e.message;
      fail(e);
    }
    plugins.push(step);
  }
  for (const e of await nodeProblems(att, runtime.path)) fail(inPod(req, e));
  return {
    network: att.network,
    ifName: att.ifName,
    isDefault: att.isDefault,
    configName: att.conf.name,
    cniVersion: att.conf.cniVersion,
    capabilityArgs: runtime.capabilityArgs as Record<string, unknown>,
    ...(att.device ? { device: att.device, resource: resourceOf(att, att.device) } : {}),
    plugins,
  };
}

/**
 * What fails an attachment's ADD inside its plugins, as ADD would word it: an IPAM plugin missing
 * from the plugins' CNI_PATH, and a node interface its config names that the node lacks
 * (host-links.ts, validate's check; the plugin's own error then, 999, is "Link not found").
 */
async function nodeProblems(att: Attachment, path: readonly string[]): Promise<CniError[]> {
  const failed = (e: CniError) =>
    e
      .withContext(`network ${quote(att.conf.name)}`)
      .withContext(`ADD of ${describeAttachment(att)} failed`);
  const problems: CniError[] = [];
  for (const plugin of att.conf.plugins) {
    const ipam = isPlainObject(plugin.ipam) ? plugin.ipam.type : undefined;
    if (typeof ipam !== "string" || ipam === "") continue;
    await findInPath(ipam, path).catch((err: unknown) =>
      problems.push(failed(asCniError(err).withContext(`plugin ${plugin.type}'s ipam`))),
    );
  }
  for (const problem of hostLinkProblems(att.conf.plugins))
    problems.push(failed(new CniError(Code.Internal, problem)));
  return problems;
}

/** M19: a selection's `resourceName` picked the pool only when it is the one the device is of. */
function resourceOf(att: Attachment, device: AttachmentDevice): AttachmentPlan["resource"] {
  const picked = att.selection?.resourceName === device.resourceName;
  return { name: device.resourceName, pickedBy: picked ? "selection" : "nad" };
}

const PICKED_BY = {
  nad: "the NAD's resourceName",
  selection: 'the pod\'s selection picks it ("resourceName"); the NAD offers it',
} as const;

/** Where a network's device came from, in words (DRA: the claim and its allocated device). */
function deviceSource(device: AttachmentDevice): string {
  if (device.from === "pod") return "named by the pod's deviceID, one of its allocated devices";
  if (device.from === "claim" && device.claim)
    return (
      `ResourceClaim ${device.claim.name}, request ${device.claim.request}: device ` +
      `${device.claim.device} of driver ${device.claim.driver}, pool ${device.claim.pool}`
    );
  return "allocated by kubelet";
}

/** M10, M19: the resource an attachment takes, who picked it, and its device. */
function deviceLines(a: AttachmentPlan): string[] {
  const lines: string[] = [];
  if (a.resource)
    lines.push(`    resource: ${a.resource.name} (${PICKED_BY[a.resource.pickedBy]})`);
  if (a.device)
    lines.push(
      `    device: ${a.device.deviceID} of ${a.device.resourceName} (${deviceSource(a.device)})`,
    );
  return lines;
}

export function renderExplanation(explanation: Explanation): string {
  const lines: string[] = [];
  lines.push(
    `${explanation.pod ? `pod ${explanation.pod}` : "no pod (default networks only)"}; Plexus ` +
      `config ${explanation.config}; plugins looked up in ${explanation.cniPath.join(":")}`,
  );
  if (explanation.attachments.length)
    lines.push(`ADD would attach ${explanation.attachments.length} network(s), in this order:`);
  else
    lines.push(
      explanation.errors.length
        ? "ADD would stop before attaching anything."
        : "ADD would attach nothing.",
    );
  for (const a of explanation.attachments) {
    lines.push("");
    const from = a.source
      ? a.source === "spec.config"
        ? ", the NAD's spec.config"
        : `, ${a.source} (the NAD has no spec.config)`
      : "";
    lines.push(
      `${a.ifName}  ${a.isDefault ? "default network" : "network"} ${a.network}${from} (name ` +
        `${quote(a.configName)}, cniVersion ${a.cniVersion})`,
    );
    lines.push(...deviceLines(a));
    if (Object.keys(a.capabilityArgs).length)
      lines.push(`    capability values: ${quote(a.capabilityArgs)}`);
    a.plugins.forEach((p, i) => {
      lines.push(`  plugin ${i + 1}: type ${p.type} → ${p.binary ?? "MISSING"}`);
      const env = Object.entries(p.env).map(([k, v]) => `${k}=${v}`);
      lines.push(`    env: ${env.join(" ")}`);
      lines.push(`    stdin${i > 0 ? " (plus prevResult: the previous plugin's result)" : ""}:`);
      lines.push(
        ...JSON.stringify(p.stdin, null, 2)
          .split("\n")
          .map((l) => `      ${l}`),
      );
    });
  }
  if (explanation.notes.length) {
    lines.push("", "notes:");
    for (const n of explanation.notes) lines.push(`  - ${n}`);
  }
  lines.push("");
  if (explanation.errors.length === 0)
    lines.push("ADD would succeed as far as can be told without running the plugins.");
  else {
    const n = explanation.errors.length;
    lines.push(
      `ADD would fail${n > 1 ? ` (it stops at the first; all ${n} problems found)` : ""}:`,
    );
    for (const e of explanation.errors) lines.push(`  - code ${e.code}: ${e.msg}`);
  }
  // B98: each entry is one line; a NAD's type, a value or a message in it is escaped to that line.
  return `${lines.map(escapeText).join("\n")}\n`;
}

export function explainMain(
  pod: string | undefined,
  flags: ExplainFlags,
  out: Output = processOutput,
): Promise<number> {
  const asked = pod || flags.file;
  const usage = "name a pod (NAMESPACE/NAME) or give --file POD.yaml";
  return runAsked({ command: "explain", out, asked, usage }, async () => {
    const r = await explain(pod, flags);
    out.out(flags.output === "json" ? `${JSON.stringify(r, null, 2)}\n` : renderExplanation(r));
    return r.errors.length ? ExitCode.Problem : ExitCode.Ok;
  });
}
