/**
 * Which Kubernetes a CNI call talks to, built only when a pod needs it (VERSION, STATUS and a DEL
 * served from the record never load any of it, nor @kubernetes/client-node): a directory of
 * manifests (`fileClusterDir`, the embedded default), the API server (`kubeconfig`, else the
 * in-cluster service account, M1), or none.
 */
import type { Logger } from "../log/logger";
import type { KubeApi } from "./kube-api";
import type { KubeClientOptions, RestKube } from "./rest-kube";
import type * as ApiEntry from "./api-entry";

/** @kubernetes/client-node and what uses it (see api-entry.ts), initialised on first use. */
export async function loadApiBundle(): Promise<typeof ApiEntry> {
  return import("./api-entry");
}

export interface KubeConfigKeys {
  fileClusterDir?: string | undefined;
  kubeconfig?: string | undefined;
  /** `plexus daemon`'s socket ("" or absent: thin mode only). */
  daemonSocket?: string | undefined;
  daemonTimeoutMs?: number | undefined;
}

export interface KubeContext {
  /** The plugin's environment (in-cluster: KUBERNETES_SERVICE_HOST/PORT). */
  env?: Readonly<Record<string, string | undefined>> | undefined;
  log?: Logger | undefined;
  /** Timeouts, retries, size cap (B34–B42). */
  client?: KubeClientOptions | undefined;
  /** Prefix for the service account directory (tests). */
  inClusterRoot?: string | undefined;
}

/** M1: a kubeconfig, or the in-cluster environment. Cheap: loads nothing. */
export function hasKubernetesConfig(conf: KubeConfigKeys, env: Readonly<Record<string, string | undefined>> = {}): boolean {
  return Boolean(conf.kubeconfig) || Boolean(env.KUBERNETES_SERVICE_HOST && env.KUBERNETES_SERVICE_PORT);
}

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
    const { FileCluster } = await import("./file-cluster");
    return new FileCluster(conf.fileClusterDir);
  }
  const env = ctx.env ?? {};
  if (conf.daemonSocket && hasKubernetesConfig(conf, env)) {
    const { DaemonKube, daemonSocketPresent } = await import("../daemon/client");
    if (daemonSocketPresent(conf.daemonSocket)) {
      const timeoutMs = conf.daemonTimeoutMs ?? 1000;
      return new DaemonKube({
        socketPath: conf.daemonSocket,
        timeoutMs,
        // A write waits for the API server behind the daemon: one request's timeout at least.
        writeTimeoutMs: Math.max(timeoutMs, ctx.client?.retry?.requestTimeoutMs ?? 5000),
        direct: () => loadKubeApi(conf, ctx),
        log: ctx.log,
      });
    }
    ctx.log?.debug({ socket: conf.daemonSocket }, "no plexus daemon socket; thin mode");
  }
  return loadKubeApi(conf, ctx);
}

/**
 * The API-server client, or undefined without any Kubernetes config: {@link RestKube}, which
 * needs no @kubernetes/client-node (about 2 MB bundled, ~130 ms to initialise); that bundle is
 * loaded only for a kubeconfig whose user runs a credential plugin (exec, auth-provider).
 * Throws 7 for an unusable kubeconfig (B15), before any request.
 */
export async function loadKubeApi(conf: KubeConfigKeys, ctx: KubeContext = {}): Promise<RestKube | undefined> {
  const env = ctx.env ?? {};
  if (!hasKubernetesConfig(conf, env)) return undefined;
  // node:https, node:tls and js-yaml load only here: a DEL from the record never pays for them.
  const [{ loadKubeSource }, { RestKube }] = await Promise.all([import("./kubeconfig"), import("./rest-kube")]);
  let source = await loadKubeSource({ kubeconfig: conf.kubeconfig, env, inClusterRoot: ctx.inClusterRoot });
  if (!source) return undefined;
  if (!("plugin" in source) && source.server.startsWith("http:")) {
    ctx.log?.warn({ credentials: source.credentials, host: new URL(source.server).host }, "the API server is plain http: the credentials and every request travel unencrypted");
  }
  if ("plugin" in source) {
    ctx.log?.debug({ kubeconfig: source.path }, "kubeconfig user runs a credential plugin: loading @kubernetes/client-node");
    source = await (await loadApiBundle()).pluginKubeSource(source);
  }
  return new RestKube(source, { ...ctx.client, log: ctx.log });
}
