/**
 * The API server's client for a CNI call, built only when a pod needs it (VERSION, STATUS and a DEL
 * served from the record load neither it, kubeconfig.ts and rest-kube.ts, nor
 * @kubernetes/client-node; this file is only the loader): `kubeconfig`, else the
 * in-cluster service account (M1), or none. Which Kubernetes a call uses (a manifest directory, the
 * node's daemon, or this client) is chosen above, in sources/kube-factory.ts.
 */
import type { Logger } from "../log/logger";
import type { KubeClientOptions, RestKube } from "./rest-kube";

export interface KubeConfigKeys {
  fileClusterDir?: string | undefined;
  kubeconfig?: string | undefined;
  /** `plexus daemon`'s socket ("" or absent: thin mode only); see sources/kube-factory.ts. */
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
export function hasKubernetesConfig(
  conf: KubeConfigKeys,
  env: Readonly<Record<string, string | undefined>> = {},
): boolean {
  return (
    Boolean(conf.kubeconfig) || Boolean(env.KUBERNETES_SERVICE_HOST && env.KUBERNETES_SERVICE_PORT)
  );
}

/**
 * The API-server client, or undefined without any Kubernetes config: {@link RestKube}, which
 * needs no @kubernetes/client-node (slow to initialise); that bundle is loaded only for a
 * kubeconfig whose user runs a credential plugin (exec, auth-provider).
 * Throws 7 for an unusable kubeconfig (B15), before any request.
 */
export async function loadKubeApi(
  conf: KubeConfigKeys,
  ctx: KubeContext = {},
): Promise<RestKube | undefined> {
  const env = ctx.env ?? {};
  if (!hasKubernetesConfig(conf, env)) return undefined;
  // The kubeconfig reader and the REST client load only here: a DEL from the record never pays for
  // them (nor for js-yaml, which kubeconfig.ts loads only for a kubeconfig that is not JSON).
  const [{ loadKubeSource }, { RestKube }] = await Promise.all([
    import("./kubeconfig"),
    import("./rest-kube"),
  ]);
  let source = await loadKubeSource({
    kubeconfig: conf.kubeconfig,
    env,
    inClusterRoot: ctx.inClusterRoot,
  });
  if (!source) return undefined;
  if (!("plugin" in source) && source.server.startsWith("http:")) {
    ctx.log?.warn(
      { credentials: source.credentials, host: new URL(source.server).host },
      "the API server is plain http: the credentials and every request travel unencrypted",
    );
  }
  if ("plugin" in source) {
    ctx.log?.debug(
      { kubeconfig: source.path },
      "kubeconfig user runs a credential plugin: loading @kubernetes/client-node",
    );
    // Imported dynamically (in the executable: from the commands' bundle, cli/commands-link.ts):
    // only such a kubeconfig loads @kubernetes/client-node.
    source = await (await import("./client-node-auth")).pluginKubeSource(source);
  }
  return new RestKube(source, { ...ctx.client, log: ctx.log });
}
