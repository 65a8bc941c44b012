/** What every verb is given (Multus `CmdAdd(args, exec, kubeClient)` style): no globals. */
import { resolve } from "node:path";
import type { CniRequest } from "../cni/env";
import type { PlexusConf } from "../config/plugin-conf";
import type { ResultCache } from "../libcni/cache";
import { CALL_MARK_ENV, type ContainerLock, type LockFactory } from "../store/container-lock";
import type { ExecDeps, RuntimeConf } from "../libcni/conflist";
import type { Env, PluginExec } from "../invoke/plugin-exec";
import type { KubeApi } from "../cluster/kube-api";
import type { Logger } from "../log/logger";
import type { NetnsOps } from "../netns/index";
import type * as Annotation from "../npwg/annotation";
import type * as Publish from "./publish";
import type { PodDevicesLookup } from "./devices";
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
  /** Takes a container's lock (store/container-lock.ts); undefined: no locking (unit tests). */
  locks?: LockFactory;
  /** The container's lock this call holds (lock.ts): its descriptor and its call mark. */
  lock?: ContainerLock;
  /** M10: the pod's allocated devices; undefined: kubelet's pod-resources socket (`podResourcesSocket`). */
  podDevices?: PodDevicesLookup;
  /** The pod's network namespace: the B4 check and M4's default routes. */
  netns: NetnsOps;
  load: Loaders;
}

/**
 * Modules only some calls use. The wiring decides how they load (cli/verb-deps.ts on first use,
 * ops/loaders.ts up front) and passes them in; an ADD without a pod never loads them. (DEL and
 * CHECK load Multus's migration path, multus-migrate.ts, themselves, only without a record.)
 */
export interface Loaders {
  /** The networks annotation parser: only a pod of a cluster needs it. */
  annotation(): Promise<Pick<typeof Annotation, "parseNetworksAnnotation">>;
  /** Verification of what the annotation asked for, and the pod's network-status. */
  publish(): Promise<Pick<typeof Publish, "verifySelection" | "publishNetworkStatus">>;
}

export function baseEnvOf(env: Readonly<Record<string, string | undefined>>): Env {
  const out: Env = {};
  for (const [k, v] of Object.entries(env))
    if (v !== undefined && !k.startsWith("CNI_")) out[k] = v;
  return out;
}

/**
 * CNI_PATH for delegates: `binDir` first (M1), then the runtime's, every entry made absolute (a
 * relative one such as `.` would otherwise be checked in one place and spawned through PATH, and
 * means the runtime's working directory anyway) and empty entries dropped.
 */
export function delegatePath(req: CniRequest, conf: PlexusConf): string[] {
  const dirs = (conf.binDir ? [conf.binDir, ...req.path] : req.path)
    .filter((p) => p !== "")
    .map((p) => resolve(p));
  return [...new Set(dirs)];
}

export interface RuntimeFor {
  containerId: string;
  netns: string;
  cniArgs: string;
  /** The whole verb's deadline for its delegates (`addTimeoutSeconds`, `delTimeoutSeconds`). */
  deadline?: { at: number; key: string };
}

/** A verb's deadline from now: ADD's attach phase, or a teardown (DEL, or ADD's rollback). */
export function callDeadline(verb: "ADD" | "DEL", conf: PlexusConf): { at: number; key: string } {
  return verb === "ADD"
    ? { at: Date.now() + conf.addTimeoutMs, key: "addTimeoutSeconds" }
    : { at: Date.now() + conf.delTimeoutMs, key: "delTimeoutSeconds" };
}

/**
 * What the runtime asks for the pod's own address and MAC (podman's `--ip`/`--mac-address` as the
 * `ips`/`mac` capabilities, `IP=`/`MAC=` in CNI_ARGS) is about the interface it named, CNI_IFNAME:
 * only the default network's delegates get it. Handed to every network (as Multus does), a second
 * network would try to take the same address and fail, or two interfaces would share a MAC.
 */
const RUNTIME_PRIMARY_CAPABILITIES = ["ips", "mac"];
const RUNTIME_PRIMARY_ARGS = new Set(["IP", "MAC"]);

function runtimeRequestsFor(
  att: Pick<Attachment, "isDefault">,
  conf: PlexusConf,
  cniArgs: string,
): { capabilityArgs: Record<string, unknown>; args: string } {
  if (att.isDefault) return { capabilityArgs: conf.runtimeConfig, args: cniArgs };
  const capabilityArgs = { ...conf.runtimeConfig };
  for (const k of RUNTIME_PRIMARY_CAPABILITIES) delete capabilityArgs[k];
  const args = cniArgs
    .split(";")
    .filter((pair) => pair !== "" && !RUNTIME_PRIMARY_ARGS.has(pair.slice(0, pair.indexOf("="))))
    .join(";");
  return { capabilityArgs, args };
}

export function runtimeConfFor(
  att: Attachment,
  ctx: RuntimeFor,
  req: CniRequest,
  conf: PlexusConf,
  deps: Pick<Deps, "baseEnv" | "lock">,
): RuntimeConf {
  const runtime = runtimeRequestsFor(att, conf, ctx.cniArgs);
  return {
    containerId: ctx.containerId,
    netns: ctx.netns,
    ifName: att.ifName,
    args: runtime.args,
    path: delegatePath(req, conf),
    capabilityArgs: { ...runtime.capabilityArgs, ...att.capabilityArgs },
    baseEnv: delegateEnv(deps),
    deadlineMs: conf.delegateTimeoutMs,
    ...(ctx.deadline ? { callDeadline: ctx.deadline } : {}),
  };
}

/**
 * The environment delegates inherit, with the call's mark when it holds the container's lock
 * (store/container-lock.ts): what a delegate leaves running names the call it belongs to.
 */
function delegateEnv(deps: Pick<Deps, "baseEnv" | "lock">): Env {
  const marker = deps.lock?.marker;
  return marker === undefined ? deps.baseEnv : { ...deps.baseEnv, [CALL_MARK_ENV]: marker };
}

export function describeAttachment(
  att: Pick<Attachment, "network" | "ifName" | "isDefault">,
): string {
  return `${att.isDefault ? "default network" : "network"} ${JSON.stringify(att.network)} (${att.ifName})`;
}
