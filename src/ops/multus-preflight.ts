/**
 * `plexus validate --preflight`: before a cluster switches from Multus (M14), every
 * NetworkAttachmentDefinition that Plexus would read differently from Multus v4, in one command:
 * one Plexus refuses where Multus runs it (no `cniVersion`, two keys differing only in case, …:
 * an error, fix it first), one Multus fails on where Plexus runs it, one whose config file (no
 * `spec.config`) would be another file (Plexus takes the `.conflist` of that name first, Multus the
 * first matching file by name), and one that fails with both. Plexus's reading is ADD's own
 * (resolveNadConfig); Multus's is Multus v4.0.2's, as Go decodes JSON: a config object with a
 * `type`, or a list whose first plugin has one, and a file lookup that stops at the first file
 * that does not load. The NADs come from the cluster (the kubeconfig as kubectl finds it) or from
 * --file.
 */
import { existsSync, readdirSync, statSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import { escapeText } from "../cni/quote";
import { getKeyFold } from "../cni/keys";
import { NAD_GROUP, NAD_PLURAL, NAD_VERSION, trimNad } from "../cluster/objects";
import { ExitCode } from "../command/exit-codes";
import { readConfText } from "../install/kept-copies";
import { loadKubeApi } from "../kubeapi/index";
import { resolveNadConfig, type ConfFile } from "../npwg/nad";
import type { Nad } from "../npwg/types";
import { messageOf, type Output, processOutput, runOps, UsageError, wantsJson } from "./context";
import { readManifest } from "./manifest-kube";
import type { Finding } from "./validate";

export interface PreflightFlags {
  file?: string | undefined;
  kubeconfig?: string | undefined;
  /** Where NADs without spec.config have their file (Multus's confDir). */
  nadConfDir?: string | undefined;
  output?: string | undefined;
}

/** Multus's confDir default, where both read a NAD's file when it has no spec.config. */
const DEFAULT_NAD_CONF_DIR = "/etc/cni/multus/net.d";

interface PreflightReport extends Finding {
  nad: string;
}

type Reading = { ok: true; source: string } | { ok: false; why: string };

/** Go's encoding/json into Multus's DelegateNetConf: a `type`, or plugins whose first has one. */
function multusAccepts(value: unknown): string | undefined {
  if (typeof value !== "object" || value === null || Array.isArray(value))
    return "not a JSON object";
  const record = value as Record<string, unknown>;
  const type = getKeyFold(record, "type");
  if (typeof type === "string" && type !== "") return undefined;
  const plugins = getKeyFold(record, "plugins");
  if (!Array.isArray(plugins)) return "neither a 'type' nor a 'plugins' field";
  const first = plugins[0] as Record<string, unknown> | undefined;
  const firstType = first && typeof first === "object" ? getKeyFold(first, "type") : undefined;
  return typeof firstType === "string" && firstType !== ""
    ? undefined
    : "its first plugin has no 'type'";
}

/** JSON as Go reads it for Multus: the last of duplicate keys wins (JSON.parse does the same). */
function parseLikeGo(text: string): { value: unknown } | { why: string } {
  try {
    return { value: JSON.parse(text) };
  } catch (err) {
    return { why: `not valid JSON (${messageOf(err)})` };
  }
}

/** Multus v4.0.2's GetCNIConfigFromFile: files by name, the first whose "name" matches. */
function multusFilePick(files: readonly ConfFile[], name: string): Reading {
  const candidates = files
    .filter((f) => /\.(conf|json|conflist)$/.test(f.path))
    .sort((a, b) => (a.path < b.path ? -1 : 1));
  for (const file of candidates) {
    const parsed = parseLikeGo(file.content);
    if ("why" in parsed) return { ok: false, why: `${file.path} does not load: ${parsed.why}` };
    const value = parsed.value as Record<string, unknown>;
    if (typeof value !== "object" || value === null || Array.isArray(value))
      return { ok: false, why: `${file.path} does not load: not a JSON object` };
    if (getKeyFold(value, "name") !== name) continue;
    const why = multusAccepts(value);
    return why ? { ok: false, why: `${file.path}: ${why}` } : { ok: true, source: file.path };
  }
  return { ok: false, why: `no file in the config directory has "name": ${JSON.stringify(name)}` };
}

function multusReading(nad: Nad, files: readonly ConfFile[]): Reading {
  const config = nad.spec?.config;
  if (typeof config !== "string" || config === "") return multusFilePick(files, nad.metadata.name);
  const parsed = parseLikeGo(config);
  if ("why" in parsed) return { ok: false, why: `spec.config is ${parsed.why}` };
  const why = multusAccepts(parsed.value);
  return why ? { ok: false, why: `spec.config: ${why}` } : { ok: true, source: "spec.config" };
}

function plexusReading(nad: Nad, files: readonly ConfFile[]): Reading {
  try {
    return { ok: true, source: resolveNadConfig(nad, files).source };
  } catch (err) {
    return { ok: false, why: messageOf(err) };
  }
}

/** Pure: the difference between Plexus's reading of `nad` and Multus's, or undefined. */
function compareNad(nad: Nad, files: readonly ConfFile[]): PreflightReport | undefined {
  const ref = `${nad.metadata.namespace}/${nad.metadata.name}`;
  const plexus = plexusReading(nad, files);
  const multus = multusReading(nad, files);
  const report = (level: Finding["level"], msg: string) => ({ nad: ref, level, msg });
  if (!plexus.ok && multus.ok)
    return report("error", `Plexus refuses it where Multus runs it: ${plexus.why}`);
  if (plexus.ok && !multus.ok)
    return report("warning", `Multus fails on it (${multus.why}); Plexus runs it`);
  if (!plexus.ok && !multus.ok)
    return report("warning", `fails with Multus and Plexus alike: ${plexus.why}`);
  if (plexus.ok && multus.ok && plexus.source !== multus.source)
    return report(
      "warning",
      `Plexus runs ${plexus.source} (a .conflist of that name first, as the NPWG spec asks), ` +
        `Multus ${multus.source} (the first file by name): keep one file with that name`,
    );
  return undefined;
}

/** The NAD config directory's files, as both read them; none when it is not here. */
function nadConfFiles(dir: string): ConfFile[] {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return [];
  }
  return names.flatMap((name) => {
    const path = join(dir, name);
    if (
      !/\.(conf|json|conflist)$/.test(name) ||
      !statSync(path, { throwIfNoEntry: false })?.isFile()
    )
      return [];
    const content = readConfText(path);
    return content === undefined ? [] : [{ path, content }];
  });
}

/** The kubeconfig as kubectl finds it: the flag, $KUBECONFIG's first file, ~/.kube/config. */
function kubeconfigOf(flag: string | undefined, env: NodeJS.ProcessEnv): string | undefined {
  if (flag) return flag;
  const fromEnv = env.KUBECONFIG?.split(":").find(Boolean);
  if (fromEnv) return fromEnv;
  const home = join(env.HOME ?? homedir(), ".kube", "config");
  return existsSync(home) ? home : undefined;
}

/** Every NAD of the cluster, page by page. */
async function clusterNads(flags: PreflightFlags, env: NodeJS.ProcessEnv): Promise<Nad[]> {
  const api = await loadKubeApi(
    { kubeconfig: kubeconfigOf(flags.kubeconfig, env) },
    { env, client: { maxResponseBytes: 64 * 1024 * 1024, userAgent: "plexus-preflight" } },
  );
  if (!api)
    throw new UsageError(
      "no Kubernetes configuration: pass --kubeconfig, set KUBECONFIG, or give --file",
    );
  const nads: Nad[] = [];
  try {
    let cont: string | undefined;
    do {
      const query = { limit: "500", ...(cont ? { continue: cont } : {}) };
      const page = await api.list(`/apis/${NAD_GROUP}/${NAD_VERSION}/${NAD_PLURAL}`, query);
      for (const item of Array.isArray(page.items) ? page.items : []) {
        const nad = trimNad(item as Record<string, unknown>, "default");
        if (nad) nads.push(nad);
      }
      const meta = (page.metadata ?? {}) as { continue?: unknown };
      cont = typeof meta.continue === "string" && meta.continue ? meta.continue : undefined;
    } while (cont);
  } finally {
    await api.close();
  }
  return nads;
}

function render(reports: readonly PreflightReport[], checked: number, note: string): string {
  const w = Math.max(0, ...reports.map((r) => r.nad.length));
  const lines = reports.map((r) => `${r.level.padEnd(7)} ${r.nad.padEnd(w)}  ${escapeText(r.msg)}`);
  const differ = reports.length;
  const summary =
    `${checked} NetworkAttachmentDefinition(s) checked against Multus v4: ` +
    (differ ? `${differ} read differently` : "none read differently") +
    note;
  return `${[...lines, summary].join("\n")}\n`;
}

export function preflightMain(
  flags: PreflightFlags,
  io: { env?: NodeJS.ProcessEnv; out?: Output } = {},
): Promise<number> {
  const out = io.out ?? processOutput;
  return runOps("validate --preflight", out, async () => {
    const json = wantsJson(flags.output);
    const nads = flags.file
      ? readManifest<Nad>(flags.file, "NetworkAttachmentDefinition")
      : await clusterNads(flags, io.env ?? process.env);
    const dir = flags.nadConfDir ?? DEFAULT_NAD_CONF_DIR;
    const files = nadConfFiles(dir);
    const sorted = [...nads].sort((a, b) =>
      `${a.metadata.namespace}/${a.metadata.name}` < `${b.metadata.namespace}/${b.metadata.name}`
        ? -1
        : 1,
    );
    const reports = sorted.flatMap((nad) => compareNad(nad, files) ?? []);
    const fileless = nads.filter((n) => typeof n.spec?.config !== "string" || !n.spec.config);
    const note =
      fileless.length && !existsSync(dir)
        ? ` (${fileless.length} without spec.config read from ${dir}, which this machine does ` +
          "not have: run on a node, or pass --nad-conf-dir)"
        : "";
    out.out(json ? `${JSON.stringify(reports, null, 2)}\n` : render(reports, nads.length, note));
    return reports.some((r) => r.level === "error") ? ExitCode.Problem : ExitCode.Ok;
  });
}
