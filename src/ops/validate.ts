/**
 * `plexus validate [NAD] [--file nad.yaml] [--all]`: whether this node can run each
 * NetworkAttachmentDefinition, before a pod needs it. The config is resolved by ADD's own code
 * (resolveNadConfig: JSON, schema, the config directory fallback), each plugin binary looked up as
 * ADD looks it up (findInPath) and asked for the versions it speaks (VERSION), the IPAM section
 * checked (ipam.ts) also against the other NADs on the same bridge or master, and the pods of this
 * node that select the NAD put through ADD's capability rule (applySelection).
 */
import { hostname } from "node:os";
import { asCniError } from "../cni/errors";
import type { ConfList, PluginConf } from "../cni/conf";
import { isPlainObject } from "../cni/json";
import { escapeText, quote } from "../cni/quote";
import { getKeyFold } from "../cni/keys";
import { PLEXUS_KEYS } from "../config/plugin-conf";
import { reportUnknownKeys } from "../config/unknown-keys";
import { findInPath } from "../invoke/find";
import { RawExec } from "../invoke/raw-exec";
import { vetRecorded } from "../gate/gate";
import { pluginVersionsOf } from "../libcni/conflist";
import { applySelection } from "../npwg/delegate-args";
import { resolveNadConfig, type ConfFile } from "../npwg/nad";
import { NETWORKS_ANNOTATION, type Nad, type Pod } from "../npwg/types";
import { FsNetworkSource } from "../planning/network-source";
import { logCompressorPids } from "../log/rotate";
import { clusterLists, type ClusterLists } from "./cluster-list";
import type { CommonFlags, OpsContext, Output } from "./context";
import { messageOf, opsContext, processOutput, runAsked } from "./context";
import { checkIpam, overlaps, type AddressRange } from "./ipam";
import { checkResourceName } from "./dra-check";
import { hostLinkProblems } from "./host-links";
import { readManifest } from "./manifest-kube";
import type { ResourceSlice } from "../cluster/dra-objects";
import { ExitCode } from "../command/exit-codes";

export interface ValidateFlags extends CommonFlags {
  file?: string | undefined;
  all?: boolean | undefined;
  namespace?: string | undefined;
  nodeName?: string | undefined;
}

type Level = "ok" | "warning" | "error";
export interface Finding {
  level: Level;
  msg: string;
}
export interface NadReport {
  nad: string;
  source?: string;
  findings: Finding[];
}

/** The address ranges a NAD hands out, keyed by the bridge or master its attachments share. */
interface Footprint {
  nad: string;
  key: string;
  ranges: AddressRange[];
}

/** The host link a plugin's attachments share, its key read as the Go plugin reads it. */
function sharedLink(plugin: PluginConf): string | undefined {
  if (plugin.type === "bridge") {
    const bridge = getKeyFold(plugin, "bridge");
    return `bridge ${typeof bridge === "string" && bridge ? bridge : "cni0"}`;
  }
  if (!["macvlan", "ipvlan", "vlan"].includes(plugin.type)) return undefined;
  const master = getKeyFold(plugin, "master");
  return typeof master === "string" && master
    ? `master ${master}`
    : "master (the node's default-route interface)";
}

function footprints(nad: string, conf: ConfList): Footprint[] {
  return conf.plugins.flatMap((p) => {
    const key = sharedLink(p);
    return key ? [{ nad, key, ranges: checkIpam(p.ipam, "").ranges }] : [];
  });
}

const DEFAULT_PATH = "/usr/sbin:/usr/bin:/sbin:/bin";

/**
 * The NAD's config as the delegate gate sees a tenant's network: what ADD would refuse is an
 * error here, and its binaries are then not run, not even for VERSION.
 */
function vetNad(nad: Nad, conf: ConfList, ctx: OpsContext, findings: Finding[]) {
  const { namespace, name } = nad.metadata;
  const subject = { network: `${namespace}/${name}`, ifName: "", isDefault: false, conf };
  try {
    return vetRecorded({ ...subject, selection: { namespace, name } }, { policy: ctx.conf });
  } catch (err) {
    findings.push({ level: "error", msg: `${messageOf(err)} (no binary of it was run)` });
    return undefined;
  }
}

/**
 * The binary of `type` looked up as ADD looks it up, or undefined with an error finding: every
 * missing one is named, the plugins' and their IPAM plugins' alike.
 */
async function lookUp(
  type: string,
  call: { path: readonly string[]; where: string; findings: Finding[] },
): Promise<string | undefined> {
  try {
    return await findInPath(type, call.path);
  } catch (err) {
    call.findings.push({ level: "error", msg: asCniError(err).withContext(call.where).message });
    return undefined;
  }
}

/** The IPAM plugin a plugin runs (parsePlugin spelt its `type` key canonically). */
function ipamType(plugin: PluginConf): string | undefined {
  const ipam = plugin.ipam;
  return isPlainObject(ipam) && typeof ipam.type === "string" && ipam.type ? ipam.type : undefined;
}

/** Asks each plugin binary which spec versions it speaks (CNI VERSION), as a runtime would. */
async function checkPlugins(
  nad: Nad,
  conf: ConfList,
  ctx: OpsContext,
  findings: Finding[],
): Promise<void> {
  const path = ctx.conf.binDir ? [ctx.conf.binDir, ...ctx.cniPath] : ctx.cniPath;
  const vetted = vetNad(nad, conf, ctx, findings);
  const exec = new RawExec(ctx.log, { sparePids: logCompressorPids() });
  const rt = { path, baseEnv: { PATH: process.env.PATH ?? DEFAULT_PATH }, deadlineMs: 5000 };
  const where = `network ${quote(conf.name)}`;
  for (const plugin of conf.plugins) {
    const binary = await lookUp(plugin.type, { path, where, findings });
    // The plugin runs its IPAM plugin from the same CNI_PATH: a missing one fails every ADD too.
    const ipam = ipamType(plugin);
    if (ipam)
      await lookUp(ipam, { path, where: `${where}: plugin ${plugin.type}'s ipam`, findings });
    if (!binary || !vetted) continue;
    try {
      const versions = await pluginVersionsOf(vetted, plugin, rt, { exec, log: ctx.log });
      if (versions.includes(conf.cniVersion))
        findings.push({
          level: "ok",
          msg: `plugin ${plugin.type}: ${binary} speaks cniVersion ${conf.cniVersion}`,
        });
      else
        findings.push({
          level: "error",
          msg:
            `plugin ${plugin.type}: ${binary} does not speak the network's cniVersion ` +
            `${conf.cniVersion} (it speaks ${versions.join(", ")}); change "cniVersion" or the ` +
            `plugin`,
        });
    } catch (err) {
      findings.push({
        level: "warning",
        msg: `plugin ${plugin.type}: ${binary} did not answer VERSION: ${messageOf(err)}`,
      });
    }
    for (const e of checkIpam(plugin.ipam, `plugin ${plugin.type}`).errors)
      findings.push({ level: "error", msg: e });
  }
}

/** Pods of this node that select the NAD: ADD's capability rule, with ADD's message. */
async function checkPods(
  nad: Nad,
  conf: ConfList,
  pods: readonly Pod[],
  ctx: OpsContext,
  findings: Finding[],
): Promise<void> {
  const { parseNetworksAnnotation } = await import("../npwg/annotation");
  for (const pod of pods) {
    const value = pod.metadata.annotations?.[NETWORKS_ANNOTATION];
    if (!value) continue;
    let selections;
    try {
      selections = parseNetworksAnnotation(value, pod.metadata.namespace, {
        maxSelections: ctx.conf.maxNetworks,
        reservedIfName: "eth0",
      });
    } catch {
      continue; // the pod's own problem: `plexus explain` names it
    }
    for (const sel of selections.filter(
      (s) => s.namespace === nad.metadata.namespace && s.name === nad.metadata.name,
    )) {
      try {
        applySelection(conf, sel);
      } catch (err) {
        findings.push({
          level: "error",
          msg: `pod ${pod.metadata.namespace}/${pod.metadata.name}: ${messageOf(err)}`,
        });
      }
    }
  }
}

interface Scope {
  files: ConfFile[];
  others: Footprint[];
  pods: Pod[];
  /** M10, DRA: this node's ResourceSlices (undefined: unknown, a note says why). */
  slices?: { nodeName: string; list: ResourceSlice[] | undefined };
}

async function validateNad(nad: Nad, ctx: OpsContext, scope: Scope): Promise<NadReport> {
  const ref = `${nad.metadata.namespace}/${nad.metadata.name}`;
  const report: NadReport = { nad: ref, findings: [] };
  let conf: ConfList;
  try {
    const resolved = resolveNadConfig(nad, scope.files, {});
    conf = resolved.conf;
    report.source = resolved.source;
    // ADD's warnings, the keys no reader of the config reads among them (M1, with suggestions).
    for (const w of resolved.warnings) report.findings.push({ level: "warning", msg: w });
    report.findings.push({
      level: "ok",
      msg:
        `config parses (from ${resolved.source}): ` +
        `${conf.plugins.map((p) => p.type).join(" → ")}`,
    });
  } catch (err) {
    report.findings.push({ level: "error", msg: asCniError(err).message });
    return report;
  }
  await checkPlugins(nad, conf, ctx, report.findings);
  for (const msg of hostLinkProblems(conf.plugins)) report.findings.push({ level: "error", msg });
  for (const mine of footprints(ref, conf)) {
    for (const other of scope.others.filter((o) => o.nad !== ref && o.key === mine.key)) {
      for (const a of mine.ranges) {
        const b = other.ranges.find((r) => overlaps(a, r));
        if (b)
          report.findings.push({
            level: "error",
            msg:
              `range ${a.text} overlaps ${b.text} of ${other.nad} on the same ${mine.key}: ` +
              `both would hand out the same addresses`,
          });
      }
    }
  }
  await checkPods(nad, conf, scope.pods, ctx, report.findings);
  const dra = scope.slices && checkResourceName(nad, scope.slices.list, scope.slices.nodeName);
  if (dra) report.findings.push(dra);
  return report;
}

function parseRef(
  name: string,
  namespace: string | undefined,
): { namespace: string; name: string } {
  const [a, b] = name.split("/");
  return b === undefined
    ? { namespace: namespace ?? "default", name: a! }
    : { namespace: a!, name: b };
}

/** The NADs asked about: from --file, every listed one (--all), or the one named. */
async function selectNads(
  name: string | undefined,
  flags: ValidateFlags,
  ctx: OpsContext,
  listed: Nad[] | undefined,
): Promise<Array<Nad | { missing: string }>> {
  if (flags.file) return readManifest<Nad>(flags.file, "NetworkAttachmentDefinition");
  if (flags.all) return listed ?? [];
  const ref = parseRef(name!, flags.namespace);
  const kube = await ctx.kube();
  const nad = kube
    ? await kube.getNad(ref.namespace, ref.name)
    : listed?.find((n) => n.metadata.namespace === ref.namespace && n.metadata.name === ref.name);
  return [nad ?? { missing: `${ref.namespace}/${ref.name}` }];
}

/**
 * What every NAD hands out on which bridge or master, each NAD once (a --file NAD replaces the
 * cluster's of that name).
 */
function allFootprints(nads: readonly Nad[], files: ConfFile[]): Footprint[] {
  const byRef = new Map<string, Nad>();
  for (const n of nads) byRef.set(`${n.metadata.namespace}/${n.metadata.name}`, n);
  return [...byRef].flatMap(([ref, n]) => {
    try {
      return footprints(ref, resolveNadConfig(n, files).conf);
    } catch {
      return []; // reported for that NAD itself
    }
  });
}

export async function validate(
  name: string | undefined,
  flags: ValidateFlags,
  env = process.env,
): Promise<{ reports: NadReport[]; notes: string[] }> {
  const ctx = await opsContext(flags, env);
  const notes: string[] = [];
  const note = (what: string) => (err: unknown) =>
    void notes.push(
      `${what} failed (${messageOf(err)}): overlaps with other NADs and pods' requests may be ` +
        `unchecked`,
    );
  for (const r of reportUnknownKeys(ctx.conf.unknownKeys, PLEXUS_KEYS.names, ctx.path))
    notes.push(r.msg);
  const lists = await clusterLists(ctx.conf, env, ctx.log).catch(note("connecting to the cluster"));
  if (lists === undefined && !notes.length)
    notes.push(
      "no Kubernetes access in the config: overlaps with other NADs and pods' requests not " +
        "checked",
    );
  try {
    const nodeName = flags.nodeName || env.NODE_NAME || hostname();
    const { listed, pods, slices } = await listCluster(lists ?? undefined, {
      nodeName,
      notes,
      note,
    });
    const nads = await selectNads(name, flags, ctx, listed);
    const files = await new FsNetworkSource(ctx.conf.confDir, undefined).confDirFiles();
    const others = allFootprints(
      [...(listed ?? []), ...nads.filter((x): x is Nad => !("missing" in x))],
      files,
    );
    const reports: NadReport[] = [];
    for (const n of nads) {
      if ("missing" in n)
        reports.push({
          nad: n.missing,
          findings: [{ level: "error", msg: `no NetworkAttachmentDefinition ${n.missing} exists` }],
        });
      else
        reports.push(
          await validateNad(n, ctx, {
            files,
            others,
            pods,
            slices: { nodeName, list: slices ?? undefined },
          }),
        );
    }
    return { reports, notes };
  } finally {
    await lists?.close();
    await ctx.kube.close();
  }
}

/** The NADs, this node's pods and its ResourceSlices: each a best effort, a failure noted. */
async function listCluster(
  lists: ClusterLists | undefined,
  scope: { nodeName: string; notes: string[]; note: (what: string) => (err: unknown) => void },
): Promise<{ listed: Nad[] | undefined; pods: Pod[]; slices: ResourceSlice[] | undefined }> {
  const { nodeName, notes, note } = scope;
  const listed = lists
    ? ((await lists.nads().catch(note("listing NADs"))) ?? undefined)
    : undefined;
  const pods = lists
    ? ((await lists.pods(nodeName).catch(note("listing this node's pods"))) ?? [])
    : [];
  const slices = lists?.slices
    ? await lists.slices(nodeName).catch((err: unknown) => {
        notes.push(
          `listing this node's ResourceSlices failed (${messageOf(err)}): ` +
            "resourceNames not checked against DRA drivers",
        );
        return undefined;
      })
    : undefined;
  return { listed, pods, slices };
}

export function validateMain(
  name: string | undefined,
  flags: ValidateFlags,
  out: Output = processOutput,
): Promise<number> {
  const asked = name || flags.file || flags.all;
  const usage = "name a NAD (NAMESPACE/NAME), or give --file NAD.yaml or --all";
  return runAsked({ command: "validate", out, asked, usage }, async () => {
    const { reports, notes } = await validate(name, flags);
    out.out(
      flags.output === "json"
        ? `${JSON.stringify({ reports, notes }, null, 2)}\n`
        : renderFindings(reports, notes),
    );
    return reports.some((r) => r.findings.some((x) => x.level === "error"))
      ? ExitCode.Problem
      : ExitCode.Ok;
  });
}

function renderFindings(reports: readonly NadReport[], notes: readonly string[]): string {
  const lines: string[] = [];
  for (const r of reports) {
    const worst = r.findings.some((x) => x.level === "error")
      ? "error"
      : r.findings.some((x) => x.level === "warning")
        ? "warning"
        : "ok";
    lines.push(`${r.nad}: ${worst}`);
    for (const x of r.findings) lines.push(`  ${x.level.padEnd(7)} ${x.msg}`);
  }
  if (reports.length === 0) lines.push("no NetworkAttachmentDefinitions to validate");
  for (const n of notes) lines.push(`note: ${n}`);
  // B98: each entry is one line; a NAD's type or a plugin's answer in it is escaped to that line.
  return `${lines.map(escapeText).join("\n")}\n`;
}
