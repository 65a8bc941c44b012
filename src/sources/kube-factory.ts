/**
 * Which Kubernetes a CNI call (or an ops command) talks to, built only when a pod needs it: a
 * directory of manifests (`fileClusterDir`, the embedded default), the node's `plexus daemon` when
 * its socket is there, else the API server directly (kubeapi/index.ts `loadKubeApi`), or none.
 */
import { DEFAULT_API_REQUEST_TIMEOUT_MS, DEFAULT_DAEMON_TIMEOUT_MS } from "../config/defaults";
import {
  hasKubernetesConfig,
  loadKubeApi,
  type KubeConfigKeys,
  type KubeContext,
} from "../kubeapi/index";
import type { KubeApi } from "../cluster/kube-api";

export type KubeFactory = (() => Promise<KubeApi | undefined>) & {
  /** Closes the client if one was built (keep-alive sockets); builds nothing. */
  close(): Promise<void>;
};

export function kubeFactory(conf: KubeConfigKeys, ctx: KubeContext = {}): KubeFactory {
  let built: Promise<KubeApi | undefined> | undefined;
  const factory = () => (built ??= build(conf, ctx));
  return Object.assign(factory, {
    close: async () => {
      const kube = built ? await built.catch(() => undefined) : undefined;
      await kube?.close?.().catch(() => {});
    },
  });
}

async function build(conf: KubeConfigKeys, ctx: KubeContext): Promise<KubeApi | undefined> {
  if (conf.fileClusterDir) {
    const { FileCluster } = await import("../cluster/file-cluster");
    return new FileCluster(conf.fileClusterDir);
  }
  const env = ctx.env ?? {};
  if (conf.daemonSocket && hasKubernetesConfig(conf, env)) {
    const { DaemonKube, daemonSocketPresent } = await import("../daemon-client/client");
    if (daemonSocketPresent(conf.daemonSocket)) {
      const timeoutMs = conf.daemonTimeoutMs ?? DEFAULT_DAEMON_TIMEOUT_MS;
      return new DaemonKube({
        socketPath: conf.daemonSocket,
        timeoutMs,
        // A write waits for the API server behind the daemon: one request's timeout at least.
        writeTimeoutMs: Math.max(
          timeoutMs,
          ctx.client?.retry?.requestTimeoutMs ?? DEFAULT_API_REQUEST_TIMEOUT_MS,
        ),
        direct: () => loadKubeApi(conf, ctx),
        log: ctx.log,
      });
    }
    ctx.log?.debug({ socket: conf.daemonSocket }, "no plexus daemon socket; thin mode");
  }
  return loadKubeApi(conf, ctx);
}
