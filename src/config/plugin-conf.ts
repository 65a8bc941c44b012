/**
 * Plexus's own network config (what the runtime passes on stdin): the Multus thin keys with
 * Multus's meaning and defaults (M1), validated by shape (src/cni/shape.ts), no side effects.
 */
import * as z from "../cni/shape";
import { parseConfList, type ConfList } from "../cni/conf";
import { CniError, Code } from "../cni/errors";
import { assertNoCaseCollisions, isPlainObject } from "../cni/json";
import { canonicalizeKeys, getKeyFold, hasKeyFold, KeySet, withoutKeysFold } from "../cni/keys";
import { parseWithSchema } from "../cni/schema-error";
import { requireSupportedVersion, type CniVersion } from "../cni/version";
import { validateNetworkName } from "../cni/validate";
import { toPinoLevel } from "../log/levels";
import { unknownKeysHint } from "./unknown-keys";
import {
  DEFAULT_API_REQUEST_TIMEOUT_MS,
  DEFAULT_API_TOTAL_TIMEOUT_MS,
  DEFAULT_CNI_DIR,
  DEFAULT_CONF_DIR,
  DEFAULT_DAEMON_SOCKET,
  DEFAULT_DAEMON_TIMEOUT_MS,
  DEFAULT_DEVICE_INFO_DIR,
  DEFAULT_POD_RESOURCES_SOCKET,
} from "./defaults";

export { DEFAULT_CNI_DIR, DEFAULT_CONF_DIR };
/**
 * Multus 4.x's own `cniDir`: its per-container delegate cache, read to DEL pods Multus attached.
 */
export const DEFAULT_MULTUS_CACHE_DIR = "/var/lib/cni/multus";
/**
 * Per-delegate deadline; containerd's own CNI deadline is longer, so Plexus can still tear down.
 */
const DEFAULT_DELEGATE_TIMEOUT_SECONDS = 60;
/**
 * A whole ADD's or DEL's delegates: below the kubelet's runtime request timeout (2 min), within
 * which containerd and CRI-O run the plugin, so Plexus fails and rolls back before it is killed.
 */
const DEFAULT_CALL_TIMEOUT_SECONDS = 90;
/** A whole STATUS: the runtime asks again every few seconds, so an answer must come sooner. */
const DEFAULT_STATUS_TIMEOUT_SECONDS = 5;
/** An hour of retries by later calls and GC before a failed DEL's record is abandoned. */
const DEFAULT_FAILED_DEL_RETRY_SECONDS = 3600;
/** Real conflists have a handful of plugins; 16 leaves room and bounds a tenant's NAD. */
const DEFAULT_MAX_PLUGINS_PER_NETWORK = 16;
/** maxNetworks (32) networks of a few plugins each, with room. */
const DEFAULT_MAX_DELEGATE_CALLS = 128;

const stringOrList = z.union([z.string(), z.array(z.string())], "a string or a list of strings");

const schema = z.object({
  cniVersion: z.optional(z.string()),
  name: z.optional(z.string()),
  type: z.optional(z.string()),
  kubeconfig: z.optional(z.string()),
  confDir: z.optional(z.string({ nonEmpty: true })),
  cniDir: z.optional(z.string({ nonEmpty: true })),
  multusCacheDir: z.optional(z.string()),
  binDir: z.optional(z.string()),
  delegates: z.optional(z.array(z.unknown())),
  clusterNetwork: z.optional(z.string()),
  defaultNetworks: z.optional(z.array(z.string())),
  systemNamespaces: z.optional(z.array(z.string())),
  multusNamespace: z.optional(z.string()),
  namespaceIsolation: z.optional(z.boolean()),
  globalNamespaces: z.optional(stringOrList),
  readinessindicatorfile: z.optional(z.string()),
  logFile: z.optional(z.string()),
  logLevel: z.optional(z.string()),
  logToStderr: z.optional(z.boolean()),
  logOptions: z.optional(
    z.object({
      maxAge: z.optional(z.number()),
      maxSize: z.optional(z.number()),
      maxBackups: z.optional(z.number()),
      compress: z.optional(z.boolean()),
    }),
  ),
  capabilities: z.optional(z.record(z.boolean())),
  runtimeConfig: z.optional(z.record(z.unknown())),
  retryDeleteOnError: z.optional(z.boolean()),
  delegateTimeoutSeconds: z.optional(z.number({ positive: true, max: 3600 })),
  readinessTimeoutSeconds: z.optional(z.number({ nonnegative: true, max: 3600 })),
  fileClusterDir: z.optional(z.string({ nonEmpty: true })),
  apiRequestTimeoutSeconds: z.optional(z.number({ positive: true, max: 300 })),
  apiTotalTimeoutSeconds: z.optional(z.number({ positive: true, max: 600 })),
  maxNetworks: z.optional(z.number({ int: true, positive: true, max: 1024 })),
  maxPluginsPerNetwork: z.optional(z.number({ int: true, positive: true, max: 1024 })),
  maxDelegateCalls: z.optional(z.number({ int: true, positive: true, max: 100_000 })),
  addTimeoutSeconds: z.optional(z.number({ positive: true, max: 3600 })),
  delTimeoutSeconds: z.optional(z.number({ positive: true, max: 3600 })),
  statusTimeoutSeconds: z.optional(z.number({ positive: true, max: 3600 })),
  failedDelRetrySeconds: z.optional(z.number({ nonnegative: true, max: 7 * 86400 })),
  allowedPluginTypes: z.optional(z.array(z.string())),
  allowUnallocatedDeviceIDs: z.optional(z.boolean()),
  allowHostPorts: z.optional(z.boolean()),
  daemonSocket: z.optional(z.string()),
  daemonTimeoutMilliseconds: z.optional(z.number({ positive: true, max: 60_000 })),
  podResourcesSocket: z.optional(z.string({ nonEmpty: true })),
  podResourcesTimeoutSeconds: z.optional(z.number({ positive: true, max: 300 })),
  deviceInfoDir: z.optional(z.string({ nonEmpty: true })),
  withoutKubernetes: z.optional(z.boolean()),
  auxiliaryCNIChainName: z.optional(z.string()),
  prevResult: z.optional(z.unknown()),
  "cni.dev/valid-attachments": z.optional(
    z.array(z.object({ containerID: z.string(), ifname: z.string() })),
  ),
});

export { DEFAULT_DAEMON_SOCKET, DEFAULT_POD_RESOURCES_SOCKET };

export interface PlexusConf {
  cniVersion: CniVersion;
  name: string;
  type: string;
  kubeconfig?: string;
  confDir: string;
  cniDir: string;
  /**
   * Multus's cache of the pods it attached (migration from Multus, M14); "" turns reading it off.
   */
  multusCacheDir: string;
  binDir?: string;
  /** Inline delegates, the first is the cluster default network (M1). */
  delegates: ConfList[];
  clusterNetwork?: string;
  defaultNetworks: string[];
  systemNamespaces: string[];
  multusNamespace: string;
  namespaceIsolation: boolean;
  globalNamespaces: string[];
  readinessindicatorfile?: string;
  logFile?: string;
  logLevel?: string;
  logToStderr: boolean;
  logOptions?: { maxAge?: number; maxSize?: number; maxBackups?: number; compress?: boolean };
  capabilities: Record<string, boolean>;
  /** Capability values from the runtime (C3.2), passed on to delegates that declare them. */
  runtimeConfig: Record<string, unknown>;
  retryDeleteOnError: boolean;
  delegateTimeoutMs: number;
  /** N6.1.2: how long ADD waits for the readiness indicator file. */
  readinessTimeoutMs: number;
  /**
   * Directory of manifests standing in for the API server (embedded default, runtimes without a
   * cluster).
   */
  fileClusterDir?: string;
  /** Per API request (Multus hard-codes 250 ms, which fails on slow clusters). */
  apiRequestTimeoutMs: number;
  /** All API calls of one CNI call together, retries and backoff included. */
  apiTotalTimeoutMs: number;
  /** B25: most networks one pod may request. */
  maxNetworks: number;
  /** Most plugins in one network's conflist (bounded work per call: a tenant writes NADs). */
  maxPluginsPerNetwork: number;
  /** Most delegate runs one ADD may plan (every plugin of every attachment). */
  maxDelegateCalls: number;
  /**
   * The whole ADD's deadline for its delegates (below the runtime's own, so Plexus can still roll
   * back).
   */
  addTimeoutMs: number;
  /** The whole DEL's deadline for its delegates. */
  delTimeoutMs: number;
  /** The whole STATUS's deadline for its delegates; what it leaves unchecked fails with 11. */
  statusTimeoutMs: number;
  /**
   * How long housekeeping retries the record of a container whose DEL failed (the daemon's
   * timer, GC, later DELs without the daemon) before it is abandoned; nodestate/pending.ts.
   */
  failedDelRetryMs: number;
  /** Plugin types (and IPAM types) a pod's annotations may select; undefined: any. */
  allowedPluginTypes?: string[];
  /**
   * M10: under namespaceIsolation, a pod's selection may still name a `deviceID` for a network
   * whose NAD has no resourceName (hardware no allocation backs); npwg/isolation.ts.
   */
  allowUnallocatedDeviceIDs: boolean;
  /**
   * Under namespaceIsolation, a pod's selection may still ask for a `hostPort` in its
   * `portMappings` (src/gate/policy.ts); without isolation host ports are always passed on.
   */
  allowHostPorts: boolean;
  /** The node daemon's unix socket (daemon mode); "" turns the daemon off. */
  daemonSocket: string;
  /** How long one request to the daemon may take before the API is asked directly. */
  daemonTimeoutMs: number;
  /** M10: kubelet's pod-resources socket, asked for the devices of a NAD with a resourceName. */
  podResourcesSocket: string;
  /** M10: how long the pod-resources query (Get, then List) may take. */
  podResourcesTimeoutMs: number;
  /** M10: the NPWG device-info base directory (`dp/` of device plugins, `cni/` of Plexus). */
  deviceInfoDir: string;
  /** GC (C2.9): the attachments the runtime still knows; undefined outside GC. */
  validAttachments?: Array<{ containerID: string; ifname: string }>;
  /**
   * This node runs pods without Kubernetes on purpose: an ADD whose CNI_ARGS name a pod attaches
   * the default network(s) only. Without it, such an ADD with no way to reach Kubernetes fails (7).
   */
  withoutKubernetes: boolean;
  /**
   * M12: the name of an extra chain whose plugins are the `.conf` files of
   * `<directory of clusterNetwork>/<name>/`, run for every pod after its networks
   * (planning/aux-chain.ts).
   */
  auxiliaryCNIChainName?: string;
  /**
   * Keys Plexus does not know, as given (M1); reported by ops commands, the installer and the log
   * file.
   */
  unknownKeys: string[];
}

/** Every key Plexus reads from its config, canonically spelled; matched as Go matches them (M1). */
export const PLEXUS_KEYS = new KeySet([...Object.keys(schema.keys), "args", "ipam", "dns"]);

function splitList(value: string | string[] | undefined): string[] {
  if (value === undefined) return [];
  const items = Array.isArray(value) ? value : value.split(",");
  return items.map((s) => s.trim()).filter(Boolean);
}

export interface ParsePlexusConfOptions {
  /** Commands that tear down (DEL) accept a config without delegates: the record has them. */
  requireNetworks?: boolean;
}

/** M1: the keys as Go matches them, and the configs that can never work refused by name. */
function decodeKeys(value: Record<string, unknown>): {
  canonical: Record<string, unknown>;
  unknown: string[];
} {
  assertNoCaseCollisions(value, "stdin config");
  const top = canonicalizeKeys(value, PLEXUS_KEYS);
  const canonical = withCanonicalLogOptions(top.value);
  assertNotConflist(canonical);
  return { canonical, unknown: top.unknown };
}

/** Parses the decoded stdin config (M1, B13–B17). */
export function parsePlexusConf(value: unknown, opts: ParsePlexusConfOptions = {}): PlexusConf {
  if (!isPlainObject(value)) {
    const kind = value === null ? "null" : Array.isArray(value) ? "a list" : typeof value;
    throw new CniError(Code.Decoding, `stdin config must be a JSON object, got ${kind}`);
  }
  const { canonical, unknown } = decodeKeys(value);
  try {
    return buildPlexusConf(canonical, unknown, opts);
  } catch (err) {
    // A config that fails is where a mistyped key matters most (`clusterNetwrok`): say so there.
    const hint = err instanceof CniError ? unknownKeysHint(unknown, PLEXUS_KEYS.names) : undefined;
    if (!hint) throw err;
    const failed = err as CniError;
    throw new CniError(failed.code, `${failed.message} (${hint})`, failed.details, { cause: err });
  }
}

function buildPlexusConf(
  canonical: Record<string, unknown>,
  unknown: string[],
  opts: ParsePlexusConfOptions,
): PlexusConf {
  const cniVersion = requireSupportedVersion(canonical.cniVersion, "stdin config");
  const c = parseWithSchema(schema, canonical, "stdin config");
  const name = validateNetworkName(c.name, "stdin config");
  assertLogLevel(c.logLevel);
  assertAbsolutePaths(c, name);
  const delegates = (c.delegates ?? []).map((d, i) =>
    parseConfList(d, { what: `stdin config delegates[${i}]`, defaultVersion: cniVersion }),
  );
  if ((opts.requireNetworks ?? true) && delegates.length === 0 && !c.clusterNetwork) {
    throw new CniError(
      Code.InvalidNetworkConfig,
      `stdin config (network ${name}) names no network: set "clusterNetwork" or list at least ` +
        `one entry in "delegates"`,
    );
  }
  const conf: PlexusConf = {
    cniVersion,
    name,
    type: c.type ?? "plexus",
    confDir: c.confDir ?? DEFAULT_CONF_DIR,
    cniDir: c.cniDir ?? DEFAULT_CNI_DIR,
    multusCacheDir: c.multusCacheDir ?? DEFAULT_MULTUS_CACHE_DIR,
    delegates,
    defaultNetworks: c.defaultNetworks ?? [],
    systemNamespaces: c.systemNamespaces ?? ["kube-system"],
    multusNamespace: c.multusNamespace ?? "kube-system",
    namespaceIsolation: c.namespaceIsolation ?? false,
    allowUnallocatedDeviceIDs: c.allowUnallocatedDeviceIDs ?? false,
    allowHostPorts: c.allowHostPorts ?? false,
    globalNamespaces: splitList(c.globalNamespaces),
    logToStderr: c.logToStderr ?? true,
    capabilities: c.capabilities ?? {},
    runtimeConfig: c.runtimeConfig ?? {},
    retryDeleteOnError: c.retryDeleteOnError ?? false,
    delegateTimeoutMs: (c.delegateTimeoutSeconds ?? DEFAULT_DELEGATE_TIMEOUT_SECONDS) * 1000,
    readinessTimeoutMs: (c.readinessTimeoutSeconds ?? 45) * 1000,
    apiRequestTimeoutMs:
      (c.apiRequestTimeoutSeconds ?? DEFAULT_API_REQUEST_TIMEOUT_MS / 1000) * 1000,
    apiTotalTimeoutMs: (c.apiTotalTimeoutSeconds ?? DEFAULT_API_TOTAL_TIMEOUT_MS / 1000) * 1000,
    maxNetworks: c.maxNetworks ?? 32,
    maxPluginsPerNetwork: c.maxPluginsPerNetwork ?? DEFAULT_MAX_PLUGINS_PER_NETWORK,
    maxDelegateCalls: c.maxDelegateCalls ?? DEFAULT_MAX_DELEGATE_CALLS,
    ...callTimeouts(c),
    failedDelRetryMs: (c.failedDelRetrySeconds ?? DEFAULT_FAILED_DEL_RETRY_SECONDS) * 1000,
    daemonSocket: c.daemonSocket ?? DEFAULT_DAEMON_SOCKET,
    daemonTimeoutMs: c.daemonTimeoutMilliseconds ?? DEFAULT_DAEMON_TIMEOUT_MS,
    podResourcesSocket: c.podResourcesSocket ?? DEFAULT_POD_RESOURCES_SOCKET,
    podResourcesTimeoutMs: (c.podResourcesTimeoutSeconds ?? 10) * 1000,
    deviceInfoDir: c.deviceInfoDir ?? DEFAULT_DEVICE_INFO_DIR,
    withoutKubernetes: c.withoutKubernetes ?? false,
    unknownKeys: unknown,
  };
  setOptionalKeys(conf, c);
  return conf;
}

/** The deadlines of a whole verb's delegates: ADD, DEL (and a rollback), STATUS. */
function callTimeouts(c: {
  addTimeoutSeconds?: number | undefined;
  delTimeoutSeconds?: number | undefined;
  statusTimeoutSeconds?: number | undefined;
}): Pick<PlexusConf, "addTimeoutMs" | "delTimeoutMs" | "statusTimeoutMs"> {
  return {
    addTimeoutMs: (c.addTimeoutSeconds ?? DEFAULT_CALL_TIMEOUT_SECONDS) * 1000,
    delTimeoutMs: (c.delTimeoutSeconds ?? DEFAULT_CALL_TIMEOUT_SECONDS) * 1000,
    statusTimeoutMs: (c.statusTimeoutSeconds ?? DEFAULT_STATUS_TIMEOUT_SECONDS) * 1000,
  };
}

const LOG_OPTION_KEYS = new KeySet(["maxAge", "maxSize", "maxBackups", "compress"]);

/**
 * Multus's logOptions is a Go struct too: its keys match in any case (a copy when any is renamed).
 */
function withCanonicalLogOptions(conf: Record<string, unknown>): Record<string, unknown> {
  const opts = conf.logOptions;
  if (!isPlainObject(opts)) return conf;
  assertNoCaseCollisions(opts, "stdin config logOptions");
  const logOptions = canonicalizeKeys(opts, LOG_OPTION_KEYS).value;
  return logOptions === opts ? conf : { ...conf, logOptions };
}

/**
 * The plugin entry of type `plexus` with the list's name and cniVersion injected as libcni injects
 * them (replacing any spelling of them in the entry), or the single config itself; undefined when
 * the config does not run Plexus.
 */
export function plexusEntry(value: Record<string, unknown>): Record<string, unknown> | undefined {
  if (getKeyFold(value, "type") === "plexus") return value;
  return listPlexusEntry(value);
}

/**
 * The `plexus` entry of a conflist's "plugins" as libcni hands it over; undefined when there is
 * none.
 */
function listPlexusEntry(list: Record<string, unknown>): Record<string, unknown> | undefined {
  const plugins = getKeyFold(list, "plugins");
  if (!Array.isArray(plugins)) return undefined;
  const plugin = plugins.find((p) => isPlainObject(p) && getKeyFold(p, "type") === "plexus") as
    | Record<string, unknown>
    | undefined;
  if (!plugin) return undefined;
  return {
    ...withoutListKeys(plugin),
    name: getKeyFold(list, "name"),
    cniVersion: getKeyFold(list, "cniVersion"),
  };
}

/**
 * A plugin entry without the keys libcni takes from the list (any spelling of name and cniVersion).
 */
export function withoutListKeys(plugin: Record<string, unknown>): Record<string, unknown> {
  return withoutKeysFold(plugin, ["name", "cniVersion"]);
}

/**
 * A conflist given as Plexus's own config (e.g. `00-plexus.conflist` piped in by hand): libcni
 * never does that, it hands each plugin its own entry. Say so, and show what it would hand over.
 */
const NOT_A_CONFLIST =
  'stdin config is a conflist (it has "plugins"), not a plugin config: a runtime (libcni) never ' +
  'passes a list to a plugin; it runs each entry of "plugins" in turn, with the list\'s "name" ' +
  'and "cniVersion" injected';

function assertNotConflist(value: Record<string, unknown>): void {
  if (!hasKeyFold(value, "plugins") || "delegates" in value || "clusterNetwork" in value) return;
  const entry = listPlexusEntry(value);
  const handed = entry ? JSON.stringify(entry) : undefined;
  const what = handed
    ? `. For this list it would hand Plexus: ${handed}`
    : ', and this list has no plugin of type "plexus"';
  throw new CniError(Code.InvalidNetworkConfig, `${NOT_A_CONFLIST}${what}`);
}

/**
 * Every key that holds a path: what Plexus writes (records and results, the log, device-info),
 * what it reads back (Multus's cache, manifests, configs, credentials) and the sockets it dials.
 * `clusterNetwork` and `defaultNetworks` are left out: a value without a leading "/" is a name.
 */
const PATH_KEYS = [
  "cniDir",
  "multusCacheDir",
  "logFile",
  "deviceInfoDir",
  "fileClusterDir",
  "confDir",
  "binDir",
  "kubeconfig",
  "readinessindicatorfile",
  "daemonSocket",
  "podResourcesSocket",
] as const;

/**
 * B91: an ADD and the DEL of the same container may run with different working directories, so
 * a relative path would put one container's state in two places (and a read would find another
 * file); refused before anything is written. Multus takes such paths as they are: the difference
 * is in docs/configuration.md. `""` stays allowed where it means "unset" or "off".
 */
function assertAbsolutePaths(decoded: z.Infer<typeof schema>, network: string): void {
  for (const key of PATH_KEYS) {
    const value = decoded[key];
    if (value === undefined || value === "" || value.startsWith("/")) continue;
    throw new CniError(
      Code.InvalidNetworkConfig,
      `stdin config (network ${network}): key "${key}" is ${JSON.stringify(value)}, a relative ` +
        "path; expected an absolute path (starting with /): ADD and DEL may run in different " +
        "working directories",
    );
  }
}

function assertLogLevel(level: string | undefined): void {
  if (level !== undefined && toPinoLevel(level) === undefined) {
    throw new CniError(
      Code.InvalidNetworkConfig,
      `stdin config: key "logLevel" is ${JSON.stringify(level)}; expected debug, verbose, error ` +
        `or panic (or a pino level)`,
    );
  }
}

/** The keys that stay absent from PlexusConf unless given (and not ""). */
function setOptionalKeys(conf: PlexusConf, decoded: z.Infer<typeof schema>): void {
  if (decoded.logOptions) conf.logOptions = decoded.logOptions;
  if (decoded.allowedPluginTypes) conf.allowedPluginTypes = decoded.allowedPluginTypes;
  const valid = decoded["cni.dev/valid-attachments"];
  if (valid)
    conf.validAttachments = valid.map((a) => ({ containerID: a.containerID, ifname: a.ifname }));
  for (const k of [
    "kubeconfig",
    "fileClusterDir",
    "binDir",
    "clusterNetwork",
    "readinessindicatorfile",
    "logFile",
    "logLevel",
    "auxiliaryCNIChainName",
  ] as const) {
    if (decoded[k] !== undefined && decoded[k] !== "") conf[k] = decoded[k];
  }
}
