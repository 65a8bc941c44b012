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
function goNetConf(c: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const k of ["cniVersion", "name", "type"]) if (c[k]) out[k] = c[k];
  if (c.capabilities) out.capabilities = c.capabilities;
  const ipam = c.ipam as { type?: string } | undefined;
  out.ipam = ipam?.type ? { type: ipam.type } : {};
  out.dns = {};
  return out;
}

/** One entry of the list, keys in the order and shape of Multus's DelegateNetConf. */
export function multusEntry(d: MultusDelegate): Record<string, unknown> {
  const isList = Array.isArray(d.config.plugins);
  const e: Record<string, unknown> = {
    Conf: isList ? { ipam: {}, dns: {} } : goNetConf(d.config),
    ConfList: isList
      ? {
          cniVersion: d.config.cniVersion,
          name: d.config.name,
          plugins: (d.config.plugins as Array<Record<string, unknown>>).map(goNetConf),
        }
      : {},
    Name: d.name ?? String(d.config.name),
  };
  if (d.ifnameRequest) e.ifnameRequest = d.ifnameRequest;
  if (d.macRequest) e.macRequest = d.macRequest;
  if (d.infinibandGUIDRequest) e.infinibandGUIDRequest = d.infinibandGUIDRequest;
  if (d.ipRequest) e.ipRequest = d.ipRequest;
  e.IsFilterV4Gateway = false;
  e.IsFilterV6Gateway = false;
  if (d.deviceID) e.deviceID = d.deviceID;
  e.Bytes = Buffer.from(JSON.stringify(d.config)).toString("base64");
  return e;
}

/** `<dir>/<containerId>` holding the delegates as Multus's saveDelegates writes them (mode 0600). */
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
  o: {
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
  const path = join(results, `${o.network}-${o.containerId}-${o.ifName}`);
  const entry = {
    kind: "cniCacheV1",
    containerId: o.containerId,
    config: Buffer.from(JSON.stringify(o.config)).toString("base64"),
    ifName: o.ifName,
    networkName: o.network,
    netns: o.netns,
    cniArgs: o.cniArgs,
    result: o.result,
  };
  writeFileSync(path, JSON.stringify(entry), { mode: 0o600 });
  return path;
}
