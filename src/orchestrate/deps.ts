/** What every verb is given (Multus `CmdAdd(args, exec, kubeClient)` style): no globals. */
import type { CniRequest } from "../cni/env";
import type { PlexusConf } from "../config/plugin-conf";
import type { ResultCache } from "../exec/cache";
import type { ExecDeps, RuntimeConf } from "../exec/conflist";
import type { Env, PluginExec } from "../exec/plugin-exec";
import type { KubeApi } from "../k8s/kube-api";
import type { Logger } from "../log/logger";
import type { Attachment, RecordStore } from "./record";

export interface Deps extends ExecDeps {
  exec: PluginExec;
  cache: ResultCache;
  records: RecordStore;
  log: Logger;
  /** Environment delegates inherit, without CNI_* variables. */
  baseEnv: Env;
  /**
   * Kubernetes access, built on first use (only a pod of a cluster needs it): the API server or a
   * directory of manifests. Undefined, or resolving to undefined: no Kubernetes (B7).
   */
  kube?: () => Promise<KubeApi | undefined>;
}

export function baseEnvOf(env: Readonly<Record<string, string | undefined>>): Env {
  const out: Env = {};
  for (const [k, v] of Object.entries(env)) if (v !== undefined && !k.startsWith("CNI_")) out[k] = v;
  return out;
}

/** CNI_PATH for delegates: `binDir` first (M1), then the runtime's. */
export function delegatePath(req: CniRequest, conf: PlexusConf): string[] {
  return conf.binDir ? [conf.binDir, ...req.path.filter((p) => p !== conf.binDir)] : req.path;
}

export interface RuntimeFor {
  containerId: string;
  netns: string;
  cniArgs: string;
}

export function runtimeConfFor(att: Attachment, ctx: RuntimeFor, req: CniRequest, conf: PlexusConf, deps: Deps): RuntimeConf {
  return {
    containerId: ctx.containerId,
    netns: ctx.netns,
    ifName: att.ifName,
    args: ctx.cniArgs,
    path: delegatePath(req, conf),
    capabilityArgs: { ...conf.runtimeConfig, ...att.capabilityArgs },
    baseEnv: deps.baseEnv,
    deadlineMs: conf.delegateTimeoutMs,
  };
}

export function describeAttachment(att: Pick<Attachment, "network" | "ifName" | "isDefault">): string {
  return `${att.isDefault ? "default network" : "network"} ${JSON.stringify(att.network)} (${att.ifName})`;
}

