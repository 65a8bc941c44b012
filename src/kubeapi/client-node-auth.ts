/**
 * Credentials a kubeconfig delegates to a plugin (`exec`, `auth-provider`: cloud IAM, OIDC) come
 * from @kubernetes/client-node's KubeConfig, which runs those plugins and caches their tokens.
 * In the executable this module lives in the commands' bundle (esbuild.config.mjs): a CNI call
 * reaches it through src/cli/commands-link.ts only for such a kubeconfig, the daemon's watches
 * import it directly; a CNI call with the usual token, token file or client certificate never
 * loads client-node (kubeconfig.ts).
 */
import type * as https from "node:https";
import { dirname } from "node:path";
import { KubeConfig, type RequestContext } from "@kubernetes/client-node";
import { CniError, Code } from "../cni/errors";
import { checkServer, type KubeSource, type PluginKubeconfig } from "./kubeconfig";

/**
 * client-node's KubeConfig from a kubeconfig as kubeconfig.ts read it (token files normalised),
 * its relative paths taken from the kubeconfig's directory: the loader for credential plugins (the
 * daemon's watches use sourceKubeConfig, below). Throws what client-node throws.
 */
function clientNodeKubeConfig(kubeconfig: Pick<PluginKubeconfig, "path" | "raw">): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromString(JSON.stringify(kubeconfig.raw));
  kc.makePathsAbsolute(dirname(kubeconfig.path));
  return kc;
}

export async function pluginKubeSource(kubeconfig: PluginKubeconfig): Promise<KubeSource> {
  const fail = (why: string) =>
    new CniError(Code.InvalidNetworkConfig, `kubeconfig ${kubeconfig.path}: ${why}`);
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
        for (const [k, v] of Object.entries(r.headers ?? {}))
          if (v !== undefined) h[k.toLowerCase()] = String(v);
        if (r.auth) h.authorization = `Basic ${Buffer.from(r.auth).toString("base64")}`;
        return h;
      },
    },
  };
}

/**
 * client-node's KubeConfig for its Watch (the daemon's watch caches), built from the source the
 * REST client uses, so that the watches and the CNI binary accept exactly the same kubeconfigs (one
 * loader, kubeconfig.ts): the same server, the same TLS material, the same per-request credentials
 * (a rotated token file, a plugin's refreshed token). client-node's own loader refuses a plain
 * `http://` server unless `insecure-skip-tls-verify` is set; here TLS is set up only for https.
 */
export function sourceKubeConfig(source: KubeSource): KubeConfig {
  const tls = source.tls;
  const b64 = (pem: Buffer | string | undefined) =>
    pem === undefined ? undefined : Buffer.from(pem).toString("base64");
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [
      {
        name: "plexus",
        server: source.server,
        skipTLSVerify: tls?.rejectUnauthorized === false,
        caData: b64(tls?.ca),
        ...(tls?.servername ? { tlsServerName: tls.servername } : {}),
      },
    ],
    users: [{ name: "plexus", certData: b64(tls?.cert), keyData: b64(tls?.key) }],
    contexts: [{ name: "plexus", cluster: "plexus", user: "plexus" }],
    currentContext: "plexus",
  });
  const withTls = kc.applySecurityAuthentication.bind(kc);
  kc.applySecurityAuthentication = async (ctx: RequestContext) => {
    // The TLS dispatcher (CA, client certificate, SNI name) for https; plain http has none.
    if (source.server.startsWith("https:")) await withTls(ctx);
    for (const [k, v] of Object.entries(await source.auth.headers())) ctx.setHeaderParam(k, v);
  };
  return kc;
}
