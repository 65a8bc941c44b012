/**
 * Where the API server and its credentials come from (M1): the config's `kubeconfig` file, else the
 * in-cluster service account (KUBERNETES_SERVICE_HOST/PORT), else no Kubernetes.
 *
 * B15: a kubeconfig that is missing, unreadable, not YAML or not usable fails with code 7 naming the
 * file, before any request. B50: the file is read with one `readFile`, so a kubeconfig replaced by
 * rename (token rotation) is seen whole, old or new, never torn.
 */
import { readFile } from "node:fs/promises";
import { dirname, isAbsolute, join } from "node:path";
import { KubeConfig } from "@kubernetes/client-node";
import { load } from "js-yaml";
import { CniError, Code } from "../cni/errors";
import { isPlainObject } from "../cni/json";

export const SERVICE_ACCOUNT_DIR = "/var/run/secrets/kubernetes.io/serviceaccount";
const MAX_KUBECONFIG_BYTES = 1024 * 1024;

export interface KubeSource {
  kc: KubeConfig;
  /** For messages (B37): `kubeconfig /etc/cni/net.d/plexus.d/plexus.kubeconfig` or `in-cluster service account`. */
  credentials: string;
  server: string;
}

export interface KubeSourceOptions {
  kubeconfig?: string | undefined;
  env: Readonly<Record<string, string | undefined>>;
  /** Prefix for the service account directory (tests). */
  inClusterRoot?: string | undefined;
}

/** Whether any Kubernetes configuration exists (M1: otherwise inline `delegates` only). */
export function hasKubeSource(o: Pick<KubeSourceOptions, "kubeconfig" | "env">): boolean {
  return Boolean(o.kubeconfig) || Boolean(o.env.KUBERNETES_SERVICE_HOST && o.env.KUBERNETES_SERVICE_PORT);
}

export async function loadKubeSource(o: KubeSourceOptions): Promise<KubeSource | undefined> {
  if (o.kubeconfig) return loadKubeconfigFile(o.kubeconfig);
  if (hasKubeSource(o)) return loadInCluster(o.env, o.inClusterRoot ?? "");
  return undefined;
}

function bad(path: string, why: string): CniError {
  return new CniError(Code.InvalidNetworkConfig, `kubeconfig ${path}: ${why}`);
}

export async function loadKubeconfigFile(path: string): Promise<KubeSource> {
  let text: string;
  try {
    const buf = await readFile(path);
    if (buf.length > MAX_KUBECONFIG_BYTES) throw bad(path, `larger than ${MAX_KUBECONFIG_BYTES} bytes`);
    text = buf.toString("utf8");
  } catch (err) {
    if (err instanceof CniError) throw err;
    const e = err as NodeJS.ErrnoException;
    throw bad(path, `cannot be read: ${e.code ?? e.message}`);
  }
  let raw: unknown;
  try {
    raw = load(text);
  } catch (err) {
    throw bad(path, `is not valid YAML: ${(err as Error).message.split("\n")[0]}`);
  }
  if (!isPlainObject(raw)) throw bad(path, "is not a kubeconfig (expected a YAML mapping with clusters, users and contexts)");
  const dir = dirname(path);
  normaliseTokenFiles(raw, dir);
  const kc = new KubeConfig();
  try {
    // JSON is YAML: client-node parses what was read once, no second read of the file.
    kc.loadFromString(JSON.stringify(raw));
    kc.makePathsAbsolute(dir);
  } catch (err) {
    throw bad(path, `is not a usable kubeconfig: ${(err as Error).message}`);
  }
  return { kc, credentials: `kubeconfig ${path}`, server: checkUsable(kc, (why) => bad(path, why)) };
}

/**
 * kubectl's kubeconfig names the token file `tokenFile`; client-node 2 reads only `token-file`
 * (and relative to the working directory). Accept both, relative to the kubeconfig (M11: a token
 * file stays fresh where an embedded token expires).
 */
function normaliseTokenFiles(raw: Record<string, unknown>, dir: string): void {
  if (!Array.isArray(raw.users)) return;
  for (const entry of raw.users) {
    if (!isPlainObject(entry) || !isPlainObject(entry.user)) continue;
    const user = entry.user;
    const file = user.tokenFile ?? user["token-file"];
    if (typeof file === "string" && file && !user.token) {
      user["token-file"] = isAbsolute(file) ? file : join(dir, file);
      delete user.tokenFile;
    }
  }
}

async function loadInCluster(env: KubeSourceOptions["env"], root: string): Promise<KubeSource> {
  const saDir = `${root}${SERVICE_ACCOUNT_DIR}`;
  const tokenFile = join(saDir, "token");
  const caFile = join(saDir, "ca.crt");
  for (const f of [tokenFile, caFile]) {
    try {
      await readFile(f);
    } catch (err) {
      throw new CniError(
        Code.InvalidNetworkConfig,
        `in-cluster configuration (KUBERNETES_SERVICE_HOST is set) but ${f} cannot be read: ${(err as NodeJS.ErrnoException).code ?? String(err)}`,
      );
    }
  }
  const host = env.KUBERNETES_SERVICE_HOST!;
  const server = `https://${host.includes(":") ? `[${host}]` : host}:${env.KUBERNETES_SERVICE_PORT}`;
  const kc = new KubeConfig();
  kc.loadFromClusterAndUser({ name: "in-cluster", server, caFile, skipTLSVerify: false }, { name: "in-cluster", authProvider: { name: "tokenFile", config: { tokenFile } } });
  const credentials = `in-cluster service account ${saDir}`;
  return { kc, credentials, server: checkUsable(kc, (why) => new CniError(Code.InvalidNetworkConfig, `${credentials}: ${why}`)) };
}

function checkUsable(kc: KubeConfig, fail: (why: string) => CniError): string {
  const context = kc.getCurrentContext();
  if (!context) throw fail("has no current-context");
  if (!kc.getContextObject(context)) throw fail(`current-context ${JSON.stringify(context)} is not among its contexts`);
  const cluster = kc.getCurrentCluster();
  if (!cluster) throw fail(`the cluster of context ${JSON.stringify(context)} is not among its clusters`);
  let url: URL;
  try {
    url = new URL(cluster.server);
  } catch {
    throw fail(`cluster ${JSON.stringify(cluster.name)} has no valid server URL (${JSON.stringify(cluster.server)})`);
  }
  if (url.protocol === "http:" && !cluster.skipTLSVerify) throw fail(`cluster ${JSON.stringify(cluster.name)}: plain http is allowed only with insecure-skip-tls-verify`);
  if (url.protocol !== "https:" && url.protocol !== "http:") throw fail(`cluster ${JSON.stringify(cluster.name)}: unsupported server URL scheme ${url.protocol}`);
  return cluster.server.replace(/\/+$/, "");
}
