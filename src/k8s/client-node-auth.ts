/**
 * Credentials a kubeconfig delegates to a plugin (`exec`, `auth-provider`: cloud IAM, OIDC) come
 * from @kubernetes/client-node's KubeConfig, which runs those plugins and caches their tokens.
 * Loaded (in the API bundle) only for such kubeconfigs; the usual token, token file or client
 * certificate never pays for client-node (kubeconfig.ts).
 */
import type * as https from "node:https";
import { dirname } from "node:path";
import { KubeConfig } from "@kubernetes/client-node";
import { CniError, Code } from "../cni/errors";
import { checkServer, type KubeSource, type PluginKubeconfig } from "./kubeconfig";

/**
 * client-node's KubeConfig from a kubeconfig as kubeconfig.ts read it (token files normalised),
 * its relative paths taken from the kubeconfig's directory; the one loader for credential plugins
 * and the daemon's watches (watch-cache.ts). Throws what client-node throws.
 */
export function clientNodeKubeConfig(kubeconfig: Pick<PluginKubeconfig, "path" | "raw">): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromString(JSON.stringify(kubeconfig.raw));
  kc.makePathsAbsolute(dirname(kubeconfig.path));
  return kc;
}

export async function pluginKubeSource(kubeconfig: PluginKubeconfig): Promise<KubeSource> {
  const fail = (why: string) => new CniError(Code.InvalidNetworkConfig, `kubeconfig ${kubeconfig.path}: ${why}`);
  let kc: KubeConfig;
  try {
    kc = clientNodeKubeConfig(kubeconfig);
  } catch (err) {
    throw fail(`is not a usable kubeconfig: ${(err as Error).message}`);
  }
  const cluster = kc.getCurrentCluster();
  if (!cluster) throw fail("has no current cluster");
  const server = checkServer(cluster.server, cluster.name, fail);
  const o: https.RequestOptions = {};
  try {
    await kc.applyToHTTPSOptions(o);
  } catch (err) {
    throw fail(`credentials cannot be loaded: ${(err as Error).message}`);
  }
  const tls = server.startsWith("https:")
    ? {
        ca: o.ca as Buffer | string | undefined,
        cert: o.cert as Buffer | string | undefined,
        key: o.key as Buffer | string | undefined,
        ...(o.rejectUnauthorized === false ? { rejectUnauthorized: false } : {}),
        ...(o.servername ? { servername: o.servername } : {}),
      }
    : undefined;
  return {
    credentials: `kubeconfig ${kubeconfig.path}`,
    server,
    tls,
    auth: {
      // Per request: client-node refreshes an expired plugin token itself.
      async headers() {
        const r: https.RequestOptions = {};
        await kc.applyToHTTPSOptions(r);
        const h: Record<string, string> = {};
        for (const [k, v] of Object.entries(r.headers ?? {})) if (v !== undefined) h[k.toLowerCase()] = String(v);
        if (r.auth) h.authorization = `Basic ${Buffer.from(r.auth).toString("base64")}`;
        return h;
      },
    },
  };
}
