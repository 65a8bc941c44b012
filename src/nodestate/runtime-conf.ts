/**
 * A recorded attachment as libcni runs it: the runtime's view for its delegates (container,
 * namespace, CNI_ARGS, the call's deadline), CNI_PATH, and the environment they inherit. Shared by
 * the verbs and by what runs a record's DEL outside them (teardown, housekeeping).
 */
import { resolve } from "node:path";
import type { CniRequest } from "../cni/env";
import type { PlexusConf } from "../config/plugin-conf";
import type { Env } from "../invoke/plugin-exec";
import type { RuntimeConf } from "../libcni/conflist";
import { CALL_MARK_ENV, type ContainerLock } from "../store/container-lock";
import type { Attachment } from "./record";

/** What a delegate's environment is made of: the base one, and the call's lock for its mark. */
export interface DelegateEnvDeps {
  /** Environment delegates inherit, without CNI_* variables. */
  baseEnv: Env;
  /** The container's lock this call holds (lock.ts): its descriptor and its call mark. */
  lock?: ContainerLock;
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
  deps: DelegateEnvDeps,
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
function delegateEnv(deps: DelegateEnvDeps): Env {
  const marker = deps.lock?.marker;
  return marker === undefined ? deps.baseEnv : { ...deps.baseEnv, [CALL_MARK_ENV]: marker };
}

export function describeAttachment(
  att: Pick<Attachment, "network" | "ifName" | "isDefault">,
): string {
  const kind = att.isDefault ? "default network" : "network";
  return `${kind} ${JSON.stringify(att.network)} (${att.ifName})`;
}
