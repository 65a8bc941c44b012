/**
 * Where the API server and its credentials come from (M1): the config's `kubeconfig` file, else the
 * in-cluster service account (KUBERNETES_SERVICE_HOST/PORT), else no Kubernetes.
 *
 * The CNI process reads the kubeconfig itself: the fields a node plugin's kubeconfig uses (server,
 * CA, client certificate, token, token file, basic auth, insecure-skip-tls-verify,
 * tls-server-name) need no @kubernetes/client-node, whose initialisation every pod would otherwise
 * pay, even from the executable's bytecode.
 * A user with an `exec` or `auth-provider` credential plugin is handed to client-node's KubeConfig
 * (client-node-auth.ts, loaded only then). A field of client-go's schema that would change where
 * requests go or whom they act as, and that is not implemented, is refused (refuseUnimplemented).
 *
 * B15: a kubeconfig that is missing, unreadable, not YAML or not usable fails with code 7 naming
 * the file, before any request. B50: every file is read in one go from one descriptor, so a
 * kubeconfig or token replaced by rename (token rotation) is seen whole, old or new, never torn.
 * Each is read as input (readSharedFile): a FIFO or device at the path is refused instead of waited
 * on; symlinks are followed, as a projected service-account token and a mounted secret are
 * symlinks.
 */
import { dirname, isAbsolute, join } from "node:path";
import { CniError, Code } from "../cni/errors";
import { isPlainObject } from "../cni/json";
import { describeYamlError } from "../cni/json-syntax";
import { hasKeyFold } from "../cni/keys";
import { SERVICE_ACCOUNT_DIR } from "../config/defaults";
import { readSharedFile } from "../store/shared-file";
import type { TlsMaterial } from "./http-transport";

const MAX_KUBECONFIG_BYTES = 1024 * 1024;
/** A token file is re-read at most this often (client-node and client-go: one minute). */
const TOKEN_FILE_TTL_MS = 60_000;

/** Request headers for the credentials, computed per request (a token file can rotate). */
interface Auth {
  headers(): Promise<Record<string, string>>;
}

export interface KubeSource {
  /**
   * For messages (B37): `kubeconfig /etc/cni/net.d/plexus.d/plexus.kubeconfig` or `in-cluster
   * service account …`.
   */
  credentials: string;
  server: string;
  /** For https servers. */
  tls: TlsMaterial | undefined;
  auth: Auth;
}

/** A kubeconfig whose user needs client-node's credential plugins (exec, auth-provider). */
export interface PluginKubeconfig {
  plugin: true;
  path: string;
  /** The parsed kubeconfig, token files normalised. */
  raw: Record<string, unknown>;
}

export interface KubeSourceOptions {
  kubeconfig?: string | undefined;
  env: Readonly<Record<string, string | undefined>>;
  /** Prefix for the service account directory (tests). */
  inClusterRoot?: string | undefined;
}

/** Whether any Kubernetes configuration exists (M1: otherwise inline `delegates` only). */
function hasKubeSource(options: Pick<KubeSourceOptions, "kubeconfig" | "env">): boolean {
  return (
    Boolean(options.kubeconfig) ||
    Boolean(options.env.KUBERNETES_SERVICE_HOST && options.env.KUBERNETES_SERVICE_PORT)
  );
}

export async function loadKubeSource(
  options: KubeSourceOptions,
): Promise<KubeSource | PluginKubeconfig | undefined> {
  if (options.kubeconfig) return loadKubeconfigFile(options.kubeconfig);
  if (hasKubeSource(options)) return loadInCluster(options.env, options.inClusterRoot ?? "");
  return undefined;
}

/**
 * The file's bytes, or an Error whose message says why not (`ENOENT`, "it is a FIFO, not a
 * regular file", …): never blocks, follows symlinks, reads at most `maxBytes`.
 */
export function readCredentialFile(path: string, maxBytes = MAX_KUBECONFIG_BYTES): Buffer {
  const file = readSharedFile(path, { maxBytes, followSymlink: true });
  if (file.state === "found") return file.data;
  throw new Error(file.state === "missing" ? "ENOENT" : file.reason);
}

function bad(path: string, why: string, cause?: unknown): CniError {
  return new CniError(Code.InvalidNetworkConfig, `kubeconfig ${path}: ${why}`, undefined, {
    cause,
  });
}

/**
 * JSON (what `plexus install` writes) is parsed as JSON: the YAML parser is loaded only for a
 * kubeconfig that is not JSON, so a CNI call on an installed node never pays for it (what that
 * saves: docs/benchmarks.md, "Levers, measured").
 * YAML is a superset of JSON, so the result is what the YAML parser would give either way.
 */
async function parseKubeconfigText(text: string): Promise<unknown> {
  if (/^\s*\{/.test(text)) {
    try {
      return JSON.parse(text);
    } catch {
      // Not JSON after all (a YAML flow mapping, say): the YAML parser decides.
    }
  }
  const { load } = await import("js-yaml");
  return load(text);
}

export async function readKubeconfig(path: string): Promise<Record<string, unknown>> {
  let text: string;
  try {
    text = readCredentialFile(path).toString("utf8");
  } catch (err) {
    throw bad(path, `cannot be read: ${(err as Error).message}`);
  }
  let raw: unknown;
  try {
    raw = await parseKubeconfigText(text);
  } catch (err) {
    throw bad(path, `is not valid YAML ${describeYamlError(err)}`);
  }
  if (!isPlainObject(raw))
    throw bad(
      path,
      "is not a kubeconfig (expected a YAML mapping with clusters, users and contexts)",
    );
  normaliseTokenFiles(raw, dirname(path));
  return raw;
}

function named(list: unknown, name: string, key: string): Record<string, unknown> | undefined {
  if (!Array.isArray(list)) return undefined;
  const entry = list.find((e) => isPlainObject(e) && e.name === name) as
    | Record<string, unknown>
    | undefined;
  if (!entry) return undefined;
  return isPlainObject(entry[key]) ? entry[key] : {};
}

const str = (value: unknown): string | undefined =>
  typeof value === "string" && value !== "" ? value : undefined;

export async function loadKubeconfigFile(path: string): Promise<KubeSource | PluginKubeconfig> {
  const raw = await readKubeconfig(path);
  const fail = (why: string, cause?: unknown) => bad(path, why, cause);
  const contextName = str(raw["current-context"]);
  if (!contextName) throw fail("has no current-context");
  const context = named(raw.contexts, contextName, "context");
  if (!context)
    throw fail(`current-context ${JSON.stringify(contextName)} is not among its contexts`);
  const clusterName = str(context.cluster) ?? "";
  const cluster = named(raw.clusters, clusterName, "cluster");
  if (!cluster)
    throw fail(`the cluster of context ${JSON.stringify(contextName)} is not among its clusters`);
  const server = checkServer(str(cluster.server) ?? "", clusterName, fail);
  const userName = str(context.user) ?? "";
  const user = named(raw.users, userName, "user") ?? {};
  refuseUnimplemented({ cluster, clusterName, user, userName, fail });
  if (user.exec !== undefined || user["auth-provider"] !== undefined)
    return { plugin: true, path, raw };
  const tls = kubeconfigTls({ dir: dirname(path), cluster, user, userName, fail });
  return {
    credentials: `kubeconfig ${path}`,
    server,
    tls: server.startsWith("https:") ? tls : undefined,
    auth: userAuth(user, fail),
  };
}

/** The CA, the client certificate and key (inline `-data` or a file beside the kubeconfig). */
function kubeconfigTls(input: {
  dir: string;
  cluster: Record<string, unknown>;
  user: Record<string, unknown>;
  userName: string;
  fail: (why: string, cause?: unknown) => CniError;
}): TlsMaterial {
  const { dir, cluster, user, fail } = input;
  const insecure = cluster["insecure-skip-tls-verify"] === true;
  const file = (value: unknown) =>
    typeof value === "string" && value ? (isAbsolute(value) ? value : join(dir, value)) : undefined;
  const readPem = (what: string, data: unknown, f: unknown): Buffer | undefined => {
    if (typeof data === "string" && data) return Buffer.from(data, "base64");
    const p = file(f);
    if (!p) return undefined;
    try {
      return readCredentialFile(p);
    } catch (err) {
      throw fail(`${what} ${p} cannot be read: ${(err as Error).message}`, err);
    }
  };
  const tls: TlsMaterial = {
    ca: insecure
      ? undefined
      : readPem(
          "certificate-authority",
          cluster["certificate-authority-data"],
          cluster["certificate-authority"],
        ),
    cert: readPem(
      "client-certificate",
      user["client-certificate-data"],
      user["client-certificate"],
    ),
    key: readPem("client-key", user["client-key-data"], user["client-key"]),
    ...(insecure ? { rejectUnauthorized: false } : {}),
    ...(str(cluster["tls-server-name"]) ? { servername: str(cluster["tls-server-name"]) } : {}),
  };
  // As client-go: a certificate needs its key and a key its certificate (else TLS fails later,
  // vaguely).
  if (Boolean(tls.cert) !== Boolean(tls.key)) {
    const what = tls.cert
      ? "client-certificate but no client-key"
      : "client-key but no client-certificate";
    throw fail(`user ${JSON.stringify(input.userName)} has ${what} (or their -data forms)`);
  }
  return tls;
}

/** The user's token, token file or basic auth, else no credentials. */
function userAuth(user: Record<string, unknown>, fail: (why: string) => CniError): Auth {
  const token = str(user.token);
  const tokenFile = str(user["token-file"]);
  if (token) return staticHeaders({ authorization: `Bearer ${token}` });
  if (tokenFile) return tokenFileAuth(tokenFile, (why) => fail(why));
  if (str(user.username) && typeof user.password === "string") {
    return staticHeaders({
      authorization: `Basic ${Buffer.from(`${String(user.username)}:${user.password}`).toString("base64")}`,
    });
  }
  return { headers: async () => ({}) };
}

/**
 * Fields of client-go's clientcmd v1 schema that change where requests go or whom they act as, and
 * that neither this loader nor the transports implement: ignoring one would send the requests
 * somewhere else than the operator meant (past no proxy) or as someone else (not the impersonated
 * user). Matched as Go's decoder matches keys (case-insensitively). Fields that change nothing of
 * the kind are accepted: `extensions` (for tools), a context's `namespace` (Plexus reads each
 * pod's own), `disable-compression` (a hint; the answers are small JSON either way).
 */
const UNIMPLEMENTED = {
  cluster: { "proxy-url": "a proxy for the API server" },
  user: {
    as: "impersonation of another user",
    "as-uid": "impersonation of a user's UID",
    "as-groups": "impersonation of groups",
    "as-user-extra": "impersonation with extra user fields",
  },
} as const;

function refuseUnimplemented(input: {
  cluster: Record<string, unknown>;
  clusterName: string;
  user: Record<string, unknown>;
  userName: string;
  fail: (why: string) => CniError;
}): void {
  const entries = [
    ["cluster", input.clusterName, input.cluster, UNIMPLEMENTED.cluster],
    ["user", input.userName, input.user, UNIMPLEMENTED.user],
  ] as const;
  for (const [kind, name, entry, fields] of entries) {
    for (const [field, what] of Object.entries(fields)) {
      if (!hasKeyFold(entry, field)) continue;
      const where = `${kind} ${JSON.stringify(name)} sets "${field}" (${what})`;
      throw input.fail(
        `${where}, which Plexus does not implement: remove it, or give Plexus a kubeconfig ` +
          "without it (its requests would otherwise go out without it)",
      );
    }
  }
}

function staticHeaders(headers: Record<string, string>): Auth {
  return { headers: async () => headers };
}

/** The token is read now (7 if it cannot be) and again when older than a minute (rotation, M11). */
function tokenFileAuth(path: string, fail: (why: string, cause?: unknown) => CniError): Auth {
  const read = () => {
    try {
      return readCredentialFile(path).toString("utf8").trim();
    } catch (err) {
      throw fail(`token file ${path} cannot be read: ${(err as Error).message}`, err);
    }
  };
  let token = read();
  let readAt = Date.now();
  return {
    headers: async () => {
      if (Date.now() - readAt > TOKEN_FILE_TTL_MS) {
        try {
          token = read();
          readAt = Date.now();
        } catch {
          // Keep the last token: a rotation in progress must not fail a request.
        }
      }
      return { authorization: `Bearer ${token}` };
    },
  };
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
  const credentials = `in-cluster service account ${saDir}`;
  const fail = (why: string, cause?: unknown) =>
    new CniError(
      Code.InvalidNetworkConfig,
      `in-cluster configuration (KUBERNETES_SERVICE_HOST is set) but ${why}`,
      undefined,
      { cause },
    );
  let ca: Buffer;
  try {
    ca = readCredentialFile(caFile);
  } catch (err) {
    throw fail(`${caFile} cannot be read: ${(err as Error).message}`, err);
  }
  const auth = tokenFileAuth(tokenFile, (why) => fail(why));
  const host = env.KUBERNETES_SERVICE_HOST!;
  const server = checkServer(
    `https://${host.includes(":") ? `[${host}]` : host}:${env.KUBERNETES_SERVICE_PORT}`,
    "in-cluster",
    (why) => new CniError(Code.InvalidNetworkConfig, `${credentials}: ${why}`),
  );
  return { credentials, server, tls: { ca }, auth };
}

/**
 * The cluster's server URL: https, or plain http as client-go and Multus accept it (`kubectl
 * proxy`, a local API server). Over http the credentials travel in clear: {@link loadKubeApi} warns
 * once.
 */
export function checkServer(
  server: string,
  clusterName: string,
  fail: (why: string) => CniError,
): string {
  let url: URL;
  try {
    url = new URL(server);
  } catch {
    throw fail(
      `cluster ${JSON.stringify(clusterName)} has no valid server URL (${JSON.stringify(server)})`,
    );
  }
  if (url.protocol !== "https:" && url.protocol !== "http:")
    throw fail(
      `cluster ${JSON.stringify(clusterName)}: unsupported server URL scheme ${url.protocol}`,
    );
  // The server URL appears in errors, which reach pod events: credentials in it would leak there.
  if (url.username || url.password) {
    throw fail(
      `cluster ${JSON.stringify(clusterName)}: the server URL carries credentials ` +
        `(${url.protocol}//…@${url.host}); put them in the user entry (token, tokenFile, or ` +
        `username and password) instead`,
    );
  }
  return server.replace(/\/+$/, "");
}
