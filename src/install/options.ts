/**
 * What `plexus install` is told (M11): Multus thin entrypoint's flags where one exists, and the
 * paths derived from them. The installer runs in a container that sees the node's filesystem under
 * `hostPrefix` (`/host`), but what it writes into configs are the paths the kubelet and the
 * runtime see on the node, so every path is kept in both forms.
 */
import { join, posix } from "node:path";
import { CniError, Code } from "../cni/errors";
import { isSupportedVersion, ALL_VERSIONS } from "../cni/version";
import { toPinoLevel } from "../log/levels";

export const PLEXUS_CONF_NAME = "00-plexus.conflist";
/** Where Multus reads NAD configs without spec.config (its confDir default): Plexus too. */
const DEFAULT_NAD_CONF_DIR = "/etc/cni/multus/net.d";

/** The flags as commander hands them over (strings and booleans, unvalidated). */
export interface InstallFlags {
  cniConfDir: string;
  cniBinDir: string;
  hostPrefix: string;
  cniVersion?: string | undefined;
  binFile?: string | undefined;
  skipBinaryCopy?: boolean | undefined;
  primaryConfigFileName?: string | undefined;
  kubeconfigFileHost: string;
  tokenFile: string;
  caFile: string;
  apiServer?: string | undefined;
  readinessIndicatorFile?: string | undefined;
  namespaceIsolation?: boolean | undefined;
  globalNamespaces?: string | undefined;
  logLevel?: string | undefined;
  logFile?: string | undefined;
  logToStderr?: boolean | undefined;
  additionalBinDir?: string | undefined;
  cniDir?: string | undefined;
  networkName: string;
  cleanupConfigOnExit?: boolean | undefined;
  skipConfigWatch?: boolean | undefined;
  once?: boolean | undefined;
  primaryConfigTimeout: string | number;
  pollInterval: string | number;
  installerLogLevel: string;
  withoutKubernetes?: boolean | undefined;
  /**
   * --plexus-conf-file (alias --multus-conf-file): a user-supplied config instead of the generated
   * one ("auto").
   */
  plexusConfFile?: string | undefined;
  /** --take-over-multus (default on; --no-take-over-multus hands a taken node back). */
  takeOverMultus?: boolean | undefined;
  /**
   * --nad-conf-dir (alias --multus-cni-conf-dir): NAD configs without spec.config, a node path
   * or one under --host-prefix.
   */
  nadConfDir?: string | undefined;
}

/** A path as the installer opens it (`local`) and as the node names it (`host`). */
export interface HostPath {
  local: string;
  host: string;
}

export interface InstallOptions {
  confDir: HostPath;
  binDir: HostPath;
  /** Source of the binary copy; undefined with skipBinaryCopy. */
  binFile?: string;
  primaryConfigFileName?: string;
  plexusConf: HostPath;
  kubeconfig: HostPath;
  /** The token and CA copies beside the kubeconfig, kept fresh by the installer. */
  token: HostPath;
  ca: HostPath;
  /** Where the projected service-account token and CA are mounted in the installer's container. */
  sourceTokenFile: string;
  sourceCaFile: string;
  /**
   * `https://host:port`; undefined when neither --api-server nor KUBERNETES_SERVICE_HOST/PORT say.
   */
  apiServer?: string;
  readinessIndicator?: HostPath;
  cniDir?: HostPath;
  cniVersion?: string;
  networkName: string;
  /** Keys copied into the generated plugin config as given (M1 names). */
  pluginKeys: Record<string, unknown>;
  cleanupConfigOnExit: boolean;
  /**
   * Keep reconciling after the first install (false with --skip-config-watch: install, then wait
   * for SIGTERM).
   */
  watch: boolean;
  /** Install and exit (tests, init containers). */
  once: boolean;
  primaryConfigTimeoutMs: number;
  pollIntervalMs: number;
  installerLogLevel: string;
  /** --without-kubernetes: no credentials, no kubeconfig; the config says `withoutKubernetes`. */
  withoutKubernetes: boolean;
  /** A user-supplied config (validated) installed instead of the generated one. */
  userConfFile?: string;
  /** --host-prefix, to map the node paths a user-supplied config names. */
  hostPrefix: string;
  /** Move Multus's config aside when it sorts first (true), or put a moved one back (false). */
  takeOverMultus: boolean;
  /** The node path the generated config's confDir names (NAD configs without spec.config). */
  nadConfDirHost: string;
  /** The installer's own pod ($POD_NAMESPACE, $POD_NAME, $POD_UID), for its Events (M18). */
  installPod?: { namespace: string; name: string; uid?: string };
}

const NAD_FLAG = "--nad-conf-dir";

function bad(msg: string): CniError {
  return new CniError(Code.InvalidNetworkConfig, `plexus install: ${msg}`);
}

/** The node's path of a path inside the container (`/host/etc/cni/net.d` → `/etc/cni/net.d`). */
export function toHost(local: string, prefix: string): string {
  const p = posix.normalize(prefix);
  if (p === "/" || p === "." || p === "") return local;
  return local === p ? "/" : local.startsWith(`${p}/`) ? local.slice(p.length) : local;
}

/**
 * The container's path of a node path (`/etc/cni/net.d/plexus.d` → `/host/etc/cni/net.d/plexus.d`).
 */
export function toLocal(host: string, prefix: string): string {
  return prefix === "" || prefix === "/" ? host : join(prefix, host);
}

function hostPathFromLocal(local: string, prefix: string): HostPath {
  return { local, host: toHost(local, prefix) };
}

function hostPathFromHost(host: string, prefix: string): HostPath {
  return { local: toLocal(host, prefix), host };
}

function absolute(value: string, flag: string): string {
  if (!posix.isAbsolute(value))
    throw bad(`${flag} must be an absolute path, got ${JSON.stringify(value)}`);
  return posix.normalize(value);
}

function number(value: string | number, flag: string, min: number): number {
  const n = typeof value === "number" ? value : Number(value);
  if (!Number.isFinite(n) || n < min)
    throw bad(`${flag} must be a number ≥ ${min}, got ${JSON.stringify(value)}`);
  return n;
}

/** The API server the generated kubeconfig names: --api-server, else the in-cluster service env. */
function apiServerFrom(
  flag: string | undefined,
  env: Readonly<Record<string, string | undefined>>,
): string | undefined {
  if (flag) {
    let url: URL;
    try {
      url = new URL(flag);
    } catch {
      throw bad(`--api-server ${JSON.stringify(flag)} is not a URL`);
    }
    if (url.protocol !== "https:")
      throw bad(`--api-server must be an https URL, got ${JSON.stringify(flag)}`);
    return flag.replace(/\/+$/, "");
  }
  const host = env.KUBERNETES_SERVICE_HOST;
  const port = env.KUBERNETES_SERVICE_PORT;
  if (!host || !port) return undefined;
  return `https://${host.includes(":") ? `[${host}]` : host}:${port}`;
}

function checkFlagValues(flags: InstallFlags): void {
  if (flags.cniVersion !== undefined && !isSupportedVersion(flags.cniVersion)) {
    throw bad(
      `--cni-version ${JSON.stringify(flags.cniVersion)} is not one Plexus speaks ` +
        `(${ALL_VERSIONS.join(", ")})`,
    );
  }
  if (flags.logLevel !== undefined && toPinoLevel(flags.logLevel) === undefined)
    throw bad(
      `--log-level ${JSON.stringify(flags.logLevel)}: expected debug, verbose, error or panic`,
    );
  if (toPinoLevel(flags.installerLogLevel) === undefined)
    throw bad(
      `--installer-log-level ${JSON.stringify(flags.installerLogLevel)} is not a log level`,
    );
  if (flags.primaryConfigFileName?.includes("/"))
    throw bad("--primary-config-file-name is a file name in --cni-conf-dir, not a path");
}

/** Keys copied into the generated plugin config as given (M1 names). */
function pluginKeysOf(flags: InstallFlags): Record<string, unknown> {
  const keys: Record<string, unknown> = {};
  if (flags.namespaceIsolation) keys.namespaceIsolation = true;
  if (flags.globalNamespaces) keys.globalNamespaces = flags.globalNamespaces;
  if (flags.logLevel) keys.logLevel = flags.logLevel.toLowerCase();
  if (flags.logFile) keys.logFile = absolute(flags.logFile, "--log-file");
  if (flags.logToStderr === false) keys.logToStderr = false;
  if (flags.additionalBinDir)
    keys.binDir = absolute(flags.additionalBinDir, "--additional-bin-dir");
  if (flags.withoutKubernetes) keys.withoutKubernetes = true;
  return keys;
}

/** Validates the flags and derives every path (M11). Throws CniError naming the flag. */
export function resolveOptions(
  flags: InstallFlags,
  env: Readonly<Record<string, string | undefined>>,
  defaultBinFile?: string,
): InstallOptions {
  const prefix = flags.hostPrefix;
  if (prefix !== "" && !posix.isAbsolute(prefix))
    throw bad(`--host-prefix must be absolute or empty, got ${JSON.stringify(prefix)}`);
  checkFlagValues(flags);
  const binFile = flags.skipBinaryCopy ? undefined : (flags.binFile ?? defaultBinFile);
  if (!flags.skipBinaryCopy && !binFile)
    throw bad(
      "--bin-file is required when not running as the Plexus executable (or pass " +
        "--skip-binary-copy)",
    );
  const confDir = hostPathFromLocal(absolute(flags.cniConfDir, "--cni-conf-dir"), prefix);
  const kubeconfig = hostPathFromHost(
    absolute(flags.kubeconfigFileHost, "--kubeconfig-file-host"),
    prefix,
  );
  const credDir = posix.dirname(kubeconfig.host);
  const o: InstallOptions = {
    confDir,
    binDir: hostPathFromLocal(absolute(flags.cniBinDir, "--cni-bin-dir"), prefix),
    plexusConf: {
      local: join(confDir.local, PLEXUS_CONF_NAME),
      host: posix.join(confDir.host, PLEXUS_CONF_NAME),
    },
    kubeconfig,
    token: hostPathFromHost(posix.join(credDir, "token"), prefix),
    ca: hostPathFromHost(posix.join(credDir, "ca.crt"), prefix),
    sourceTokenFile: absolute(flags.tokenFile, "--token-file"),
    sourceCaFile: absolute(flags.caFile, "--ca-file"),
    networkName: flags.networkName,
    pluginKeys: pluginKeysOf(flags),
    cleanupConfigOnExit: flags.cleanupConfigOnExit ?? false,
    watch: !(flags.skipConfigWatch ?? false),
    once: flags.once ?? false,
    primaryConfigTimeoutMs:
      number(flags.primaryConfigTimeout, "--primary-config-timeout", 0) * 1000,
    pollIntervalMs: number(flags.pollInterval, "--poll-interval", 10),
    installerLogLevel: flags.installerLogLevel,
    withoutKubernetes: flags.withoutKubernetes ?? false,
    hostPrefix: prefix,
    takeOverMultus: flags.takeOverMultus ?? true,
    // A node path, or one under --host-prefix as Multus's --multus-cni-conf-dir was given.
    nadConfDirHost: toHost(absolute(flags.nadConfDir ?? DEFAULT_NAD_CONF_DIR, NAD_FLAG), prefix),
  };
  setOptionalPaths(o, flags, { env, prefix, binFile });
  return o;
}

function setOptionalPaths(
  options: InstallOptions,
  flags: InstallFlags,
  ctx: {
    env: Readonly<Record<string, string | undefined>>;
    prefix: string;
    binFile: string | undefined;
  },
): void {
  if (ctx.binFile) options.binFile = ctx.binFile;
  if (flags.primaryConfigFileName) options.primaryConfigFileName = flags.primaryConfigFileName;
  const server = apiServerFrom(flags.apiServer, ctx.env);
  if (server) options.apiServer = server;
  if (flags.readinessIndicatorFile)
    options.readinessIndicator = hostPathFromHost(
      absolute(flags.readinessIndicatorFile, "--readiness-indicator-file"),
      ctx.prefix,
    );
  if (flags.cniDir)
    options.cniDir = hostPathFromHost(absolute(flags.cniDir, "--cni-dir"), ctx.prefix);
  if (flags.cniVersion) options.cniVersion = flags.cniVersion;
  if (flags.plexusConfFile && flags.plexusConfFile !== "auto")
    options.userConfFile = absolute(flags.plexusConfFile, "--plexus-conf-file");
  const { POD_NAMESPACE: namespace, POD_NAME: name, POD_UID: uid } = ctx.env;
  if (namespace && name) options.installPod = { namespace, name, ...(uid ? { uid } : {}) };
}
