/**
 * Plexus's own network config (what the runtime passes on stdin): the Multus thin keys with
 * Multus's meaning and defaults (M1), validated with zod, no side effects.
 */
import { z } from "zod";
import { parseConfList, type ConfList } from "../cni/conf";
import { CniError, Code } from "../cni/errors";
import { assertNoCaseCollisions, isPlainObject } from "../cni/json";
import { parseWithSchema } from "../cni/schema-error";
import { requireSupportedVersion, type CniVersion } from "../cni/version";
import { validateNetworkName } from "../cni/validate";
import { toPinoLevel } from "../log/logger";

export const DEFAULT_CNI_DIR = "/var/lib/cni/plexus";
export const DEFAULT_CONF_DIR = "/etc/cni/net.d";
/** Per-delegate deadline; containerd's own CNI deadline is longer, so Plexus can still tear down. */
export const DEFAULT_DELEGATE_TIMEOUT_SECONDS = 60;

const stringOrList = z.union([z.string(), z.array(z.string())]);

const schema = z.looseObject({
  cniVersion: z.string().optional(),
  name: z.string().optional(),
  type: z.string().optional(),
  kubeconfig: z.string().optional(),
  confDir: z.string().min(1).optional(),
  cniDir: z.string().min(1).optional(),
  binDir: z.string().optional(),
  delegates: z.array(z.unknown()).optional(),
  clusterNetwork: z.string().optional(),
  defaultNetworks: z.array(z.string()).optional(),
  systemNamespaces: z.array(z.string()).optional(),
  multusNamespace: z.string().optional(),
  namespaceIsolation: z.boolean().optional(),
  globalNamespaces: stringOrList.optional(),
  readinessindicatorfile: z.string().optional(),
  logFile: z.string().optional(),
  logLevel: z.string().optional(),
  logToStderr: z.boolean().optional(),
  logOptions: z
    .looseObject({ maxAge: z.number().optional(), maxSize: z.number().optional(), maxBackups: z.number().optional(), compress: z.boolean().optional() })
    .optional(),
  capabilities: z.record(z.string(), z.boolean()).optional(),
  runtimeConfig: z.record(z.string(), z.unknown()).optional(),
  retryDeleteOnError: z.boolean().optional(),
  delegateTimeoutSeconds: z.number().positive().max(3600).optional(),
  readinessTimeoutSeconds: z.number().nonnegative().max(3600).optional(),
  fileClusterDir: z.string().min(1).optional(),
  apiRequestTimeoutSeconds: z.number().positive().max(300).optional(),
  apiTotalTimeoutSeconds: z.number().positive().max(600).optional(),
  maxNetworks: z.number().int().positive().max(1024).optional(),
  prevResult: z.unknown().optional(),
  "cni.dev/valid-attachments": z.array(z.looseObject({ containerID: z.string(), ifname: z.string() })).optional(),
});

export interface PlexusConf {
  cniVersion: CniVersion;
  name: string;
  type: string;
  kubeconfig?: string;
  confDir: string;
  cniDir: string;
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
  /** Directory of manifests standing in for the API server (embedded default, runtimes without a cluster). */
  fileClusterDir?: string;
  /** Per API request (Multus hard-codes 250 ms, which fails on slow clusters). */
  apiRequestTimeoutMs: number;
  /** All API calls of one CNI call together, retries and backoff included. */
  apiTotalTimeoutMs: number;
  /** B25: most networks one pod may request. */
  maxNetworks: number;
  /** GC (C2.9): the attachments the runtime still knows; undefined outside GC. */
  validAttachments?: Array<{ containerID: string; ifname: string }>;
  /** Keys Plexus does not know, logged at debug (M1). */
  unknownKeys: string[];
}

const KNOWN = new Set([...Object.keys(schema.shape), "args", "capabilities", "ipam", "dns"]);

function splitList(v: string | string[] | undefined): string[] {
  if (v === undefined) return [];
  const items = Array.isArray(v) ? v : v.split(",");
  return items.map((s) => s.trim()).filter(Boolean);
}

export interface ParsePlexusConfOptions {
  /** Commands that tear down (DEL) accept a config without delegates: the record has them. */
  requireNetworks?: boolean;
}

/** Parses the decoded stdin config (M1, B13–B17). */
export function parsePlexusConf(value: unknown, opts: ParsePlexusConfOptions = {}): PlexusConf {
  if (!isPlainObject(value)) {
    const kind = value === null ? "null" : Array.isArray(value) ? "a list" : typeof value;
    throw new CniError(Code.Decoding, `stdin config must be a JSON object, got ${kind}`);
  }
  assertNoCaseCollisions(value, "stdin config");
  const cniVersion = requireSupportedVersion(value.cniVersion, "stdin config");
  const c = parseWithSchema(schema, value, "stdin config");
  const name = validateNetworkName(c.name, "stdin config");
  const level = c.logLevel;
  if (level !== undefined && toPinoLevel(level) === undefined) {
    throw new CniError(Code.InvalidNetworkConfig, `stdin config: key "logLevel" is ${JSON.stringify(level)}; expected debug, verbose, error or panic (or a pino level)`);
  }
  const delegates = (c.delegates ?? []).map((d, i) => parseConfList(d, { what: `stdin config delegates[${i}]`, defaultVersion: cniVersion }));
  if ((opts.requireNetworks ?? true) && delegates.length === 0 && !c.clusterNetwork) {
    throw new CniError(
      Code.InvalidNetworkConfig,
      `stdin config (network ${name}) names no network: set "clusterNetwork" or list at least one entry in "delegates"`,
    );
  }
  const conf: PlexusConf = {
    cniVersion,
    name,
    type: c.type ?? "plexus",
    confDir: c.confDir ?? DEFAULT_CONF_DIR,
    cniDir: c.cniDir ?? DEFAULT_CNI_DIR,
    delegates,
    defaultNetworks: c.defaultNetworks ?? [],
    systemNamespaces: c.systemNamespaces ?? ["kube-system"],
    multusNamespace: c.multusNamespace ?? "kube-system",
    namespaceIsolation: c.namespaceIsolation ?? false,
    globalNamespaces: splitList(c.globalNamespaces),
    logToStderr: c.logToStderr ?? true,
    capabilities: c.capabilities ?? {},
    runtimeConfig: c.runtimeConfig ?? {},
    retryDeleteOnError: c.retryDeleteOnError ?? false,
    delegateTimeoutMs: (c.delegateTimeoutSeconds ?? DEFAULT_DELEGATE_TIMEOUT_SECONDS) * 1000,
    readinessTimeoutMs: (c.readinessTimeoutSeconds ?? 45) * 1000,
    apiRequestTimeoutMs: (c.apiRequestTimeoutSeconds ?? 5) * 1000,
    apiTotalTimeoutMs: (c.apiTotalTimeoutSeconds ?? 20) * 1000,
    maxNetworks: c.maxNetworks ?? 32,
    unknownKeys: Object.keys(value).filter((k) => !KNOWN.has(k)),
  };
  if (c.logOptions) conf.logOptions = c.logOptions;
  const valid = c["cni.dev/valid-attachments"];
  if (valid) conf.validAttachments = valid.map((a) => ({ containerID: a.containerID, ifname: a.ifname }));
  for (const k of ["kubeconfig", "fileClusterDir", "binDir", "clusterNetwork", "readinessindicatorfile", "logFile", "logLevel"] as const) {
    if (c[k] !== undefined && c[k] !== "") conf[k] = c[k];
  }
  return conf;
}
