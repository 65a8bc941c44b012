/** What every verb is given (Multus `CmdAdd(args, exec, kubeClient)` style): no globals. */
import type { ResultCache } from "../libcni/cache";
import type { ContainerLock, LockFactory } from "../store/container-lock";
import type { ExecDeps } from "../libcni/conflist";
import type { Env, PluginExec } from "../invoke/plugin-exec";
import type { KubeApi } from "../cluster/kube-api";
import type { Logger } from "../log/logger";
import type { NetnsOps } from "../netns/index";
import type * as Publish from "./publish";
import type { RecordStore } from "../nodestate/record";
import type { PodDevicesLookup } from "../planning/devices";
import type { AnnotationLoader } from "../planning/pod-plan";

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
  /** The container's lock this call holds (nodestate/lock.ts): its descriptor and its call mark. */
  lock?: ContainerLock;
  /**
   * M10: the pod's allocated devices; undefined: kubelet's pod-resources socket
   * (`podResourcesSocket`).
   */
  podDevices?: PodDevicesLookup;
  /** The pod's network namespace: the B4 check and M4's default routes. */
  netns: NetnsOps;
  load: Loaders;
}

/**
 * Modules only some calls use. The wiring decides how they load (cli/verb-deps.ts on first use,
 * ops/loaders.ts up front) and passes them in; an ADD without a pod never loads them. (DEL and
 * CHECK load Multus's migration path, migration/multus-migrate.ts, themselves, only without a
 * record.)
 */
export interface Loaders extends AnnotationLoader {
  /** Verification of what the annotation asked for, and the pod's network-status. */
  publish(): Promise<Pick<typeof Publish, "verifySelection" | "publishNetworkStatus">>;
}

export function baseEnvOf(env: Readonly<Record<string, string | undefined>>): Env {
  const out: Env = {};
  for (const [k, v] of Object.entries(env))
    if (v !== undefined && !k.startsWith("CNI_")) out[k] = v;
  return out;
}
