/**
 * Which Kubernetes a CNI call talks to, built only when a pod needs it (VERSION, STATUS and a DEL
 * served from the record never load any of it, nor @kubernetes/client-node): a directory of
 * manifests (`fileClusterDir`, the embedded default), the API server (`kubeconfig`, else the
 * in-cluster service account, M1), or none.
 */
import type { Logger } from "../log/logger";
import type { ClientNodeOptions } from "./client-node";
import type { KubeApi } from "./kube-api";
import { loadBundle } from "../cli/bundle-loader";
import type * as ApiEntry from "./api-entry";

declare const PLEXUS_BUNDLED: boolean | undefined;

/** The API client's own bundle when built (see api-entry.ts); the TypeScript modules under vitest. */
async function loadApiBundle(): Promise<typeof ApiEntry> {
  if (typeof PLEXUS_BUNDLED === "undefined" || !PLEXUS_BUNDLED) return import("./api-entry");
  return loadBundle<typeof ApiEntry>("plexus-k8s");
}

export interface KubeConfigKeys {
  fileClusterDir?: string | undefined;
  kubeconfig?: string | undefined;
}

export interface KubeContext {
  /** The plugin's environment (in-cluster: KUBERNETES_SERVICE_HOST/PORT). */
  env?: Readonly<Record<string, string | undefined>> | undefined;
  log?: Logger | undefined;
  /** Timeouts, retries, size cap (B34–B42). */
  client?: ClientNodeOptions | undefined;
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
  return loadKubeApi(conf, ctx);
}

/**
 * The API-server client, or undefined without any Kubernetes config. Dynamic imports keep
 * client-node (about 2 MB bundled, ~90 ms to initialise) off every path that does not need it.
 * Throws 7 for an unusable kubeconfig (B15), before any request.
 */
export async function loadKubeApi(conf: KubeConfigKeys, ctx: KubeContext = {}): Promise<KubeApi | undefined> {
  const env = ctx.env ?? {};
  if (!hasKubernetesConfig(conf, env)) return undefined;
  const { loadKubeSource, createClientNodeKube } = await loadApiBundle();
  const source = await loadKubeSource({ kubeconfig: conf.kubeconfig, env, inClusterRoot: ctx.inClusterRoot });
  if (!source) return undefined;
  return createClientNodeKube({ source, ...ctx.client, log: ctx.log });
}
