/**
 * Writes the files Multus 4.x leaves on a node, as its Go code marshals them, for the migration
 * tests (unit and e2e): the per-container delegate list `<cniDir>/<containerID>` and libcni's
 * per-attachment result cache `<cniDir>/results/<network>-<containerID>-<ifName>`.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";

export interface MultusDelegate {
  /** The delegate's config as Multus ran it: a single conf or a conflist. */
  config: Record<string, unknown>;
  /** Multus's `Name`: `<namespace>/<name>` for a NAD, the config's name for the cluster network. */
  name?: string;
  ifnameRequest?: string;
  macRequest?: string;
  infinibandGUIDRequest?: string;
  ipRequest?: string[];
  deviceID?: string;
}

/** libcni's types.NetConf as Go marshals it (empty `ipam` and `dns` objects included). */
function goNetConf(conf: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const k of ["cniVersion", "name", "type"]) if (conf[k]) out[k] = conf[k];
  if (conf.capabilities) out.capabilities = conf.capabilities;
  const ipam = conf.ipam as { type?: string } | undefined;
  out.ipam = ipam?.type ? { type: ipam.type } : {};
  out.dns = {};
  return out;
}

/** One entry of the list, keys in the order and shape of Multus's DelegateNetConf. */
export function multusEntry(delegate: MultusDelegate): Record<string, unknown> {
  const isList = Array.isArray(delegate.config.plugins);
  const e: Record<string, unknown> = {
    Conf: isList ? { ipam: {}, dns: {} } : goNetConf(delegate.config),
    ConfList: isList
      ? {
          cniVersion: delegate.config.cniVersion,
          name: delegate.config.name,
          plugins: (delegate.config.plugins as Array<Record<string, unknown>>).map(goNetConf),
        }
      : {},
    Name: delegate.name ?? String(delegate.config.name),
  };
  if (delegate.ifnameRequest) e.ifnameRequest = delegate.ifnameRequest;
  if (delegate.macRequest) e.macRequest = delegate.macRequest;
  if (delegate.infinibandGUIDRequest) e.infinibandGUIDRequest = delegate.infinibandGUIDRequest;
  if (delegate.ipRequest) e.ipRequest = delegate.ipRequest;
  e.IsFilterV4Gateway = false;
  e.IsFilterV6Gateway = false;
  if (delegate.deviceID) e.deviceID = delegate.deviceID;
  e.Bytes = Buffer.from(JSON.stringify(delegate.config)).toString("base64");
  return e;
}

/**
 * `<dir>/<containerId>` holding the delegates as Multus's saveDelegates writes them (mode 0600).
 */
export function writeMultusCache(
  dir: string,
  containerId: string,
  delegates: readonly MultusDelegate[],
): string {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const path = join(dir, containerId);
  writeFileSync(path, JSON.stringify(delegates.map(multusEntry)), { mode: 0o600 });
  return path;
}

/** libcni's cachedInfo (`cniCacheV1`) for one attachment, under `<dir>/results/`. */
export function writeLibcniResult(
  dir: string,
  options: {
    network: string;
    containerId: string;
    ifName: string;
    config: unknown;
    netns: string;
    cniArgs: Array<[string, string]>;
    result: unknown;
  },
): string {
  const results = join(dir, "results");
  mkdirSync(results, { recursive: true, mode: 0o700 });
  const path = join(results, `${options.network}-${options.containerId}-${options.ifName}`);
  const entry = {
    kind: "cniCacheV1",
    containerId: options.containerId,
    config: Buffer.from(JSON.stringify(options.config)).toString("base64"),
    ifName: options.ifName,
    networkName: options.network,
    netns: options.netns,
    cniArgs: options.cniArgs,
    result: options.result,
  };
  writeFileSync(path, JSON.stringify(entry), { mode: 0o600 });
  return path;
}
