/**
 * The networks every pod gets (N6, N6.2, M2, M3, M5): the cluster default network, replaced for
 * one pod by its `v1.multus-cni.io/default-network` annotation, then the configured
 * `defaultNetworks` (not for pods in `systemNamespaces`). I/O comes in through {@link NetworkSource}.
 */
import { parseConfList, type ConfList } from "../cni/conf";
import { asCniError, CniError, Code } from "../cni/errors";
import { isPlainObject } from "../cni/json";
import { dns1123LabelProblem, validateDns1123Label } from "./dns1123";
import { checkNamespaceAccess } from "./isolation";
import { pickConfFileByName, resolveNadConfig, type ConfFile } from "./nad";
import { DEFAULT_NETWORK_ANNOTATION, type Pod } from "./types";

export interface NetworkSource {
  /** Undefined when there is no Kubernetes access (B7): NAD names are then not looked up. */
  getNad?: (namespace: string, name: string) => Promise<import("./types").Nad | undefined>;
  /** The CNI config directory's config files. */
  confDirFiles(): Promise<ConfFile[]>;
  /** A file's text, or undefined when it is not a readable file. */
  readPath(path: string): Promise<string | undefined>;
  /** A directory's config files, or undefined when it is not a directory. */
  listDir(path: string): Promise<ConfFile[] | undefined>;
}

export interface ResolvedNetwork {
  /** Name in network-status and messages: `namespace/name` for a NAD, else the config's name. */
  network: string;
  conf: ConfList;
}

export interface DefaultNetworksConf {
  cniVersion: string;
  clusterNetwork?: string | undefined;
  delegates: readonly ConfList[];
  defaultNetworks: readonly string[];
  systemNamespaces: readonly string[];
  multusNamespace: string;
  namespaceIsolation: boolean;
  globalNamespaces: readonly string[];
}

export interface DefaultNetworks {
  clusterNetwork: ResolvedNetwork;
  defaultNetworks: ResolvedNetwork[];
  warnings: string[];
}

export async function resolveDefaultNetworks(pod: Pod | undefined, conf: DefaultNetworksConf, source: NetworkSource): Promise<DefaultNetworks> {
  const warnings: string[] = [];
  const podNs = pod?.metadata.namespace;
  const override = pod?.metadata.annotations?.[DEFAULT_NETWORK_ANNOTATION]?.trim();
  let cluster: ResolvedNetwork;
  let extra: ResolvedNetwork[] = [];
  if (override) {
    cluster = await resolveOverride(override, podNs!, conf, source, warnings);
  } else if (conf.clusterNetwork) {
    if (conf.delegates.length) warnings.push(`both "clusterNetwork" and "delegates" are set; "clusterNetwork" (${conf.clusterNetwork}) is the default network`);
    cluster = await resolveClusterNetwork(conf.clusterNetwork, conf, source, warnings);
  } else if (conf.delegates[0]) {
    // Multus's inline mode: the first delegate is the cluster network, the others are added to every pod.
    cluster = { network: conf.delegates[0].name, conf: conf.delegates[0] };
    extra = conf.delegates.slice(1).map((d) => ({ network: d.name, conf: d }));
  } else {
    throw new CniError(Code.InvalidNetworkConfig, 'no default network: set "clusterNetwork" or list it first in "delegates"');
  }
  // M3: Multus compares the pod's *name* with systemNamespaces by mistake; this compares the namespace.
  const isSystemPod = podNs !== undefined && conf.systemNamespaces.includes(podNs);
  if (conf.defaultNetworks.length && !isSystemPod) {
    for (const name of conf.defaultNetworks) extra.push(await resolveNadRef(conf.multusNamespace, name, "defaultNetworks entry", source, warnings));
  }
  return { clusterNetwork: cluster, defaultNetworks: extra, warnings };
}

/** M5: `name` means multusNamespace; `namespace/name` allowed; namespace isolation applies (B24). */
async function resolveOverride(value: string, podNs: string, conf: DefaultNetworksConf, source: NetworkSource, warnings: string[]): Promise<ResolvedNetwork> {
  const parts = value.split("/");
  if (parts.length > 2) throw new CniError(Code.InvalidNetworkConfig, `pod annotation ${DEFAULT_NETWORK_ANNOTATION} ${JSON.stringify(value)}: expected name or namespace/name`);
  const [namespace, name] = parts.length === 2 ? [parts[0]!, parts[1]!] : [conf.multusNamespace, parts[0]!];
  validateDns1123Label(namespace, `${DEFAULT_NETWORK_ANNOTATION} namespace`);
  validateDns1123Label(name, `${DEFAULT_NETWORK_ANNOTATION} name`);
  checkNamespaceAccess({ podNamespace: podNs, ref: { namespace, name }, conf, what: `default-network override (${DEFAULT_NETWORK_ANNOTATION})` });
  return resolveNadRef(namespace, name, `${DEFAULT_NETWORK_ANNOTATION}`, source, warnings);
}

async function resolveNadRef(namespace: string, name: string, what: string, source: NetworkSource, warnings: string[]): Promise<ResolvedNetwork> {
  validateDns1123Label(name, `${what} ${namespace}/`);
  if (!source.getNad) throw new CniError(Code.InvalidNetworkConfig, `${what} ${namespace}/${name} is a NetworkAttachmentDefinition, but no Kubernetes access is configured`);
  const nad = await source.getNad(namespace, name);
  if (!nad) throw new CniError(Code.InvalidNetworkConfig, `${what}: no NetworkAttachmentDefinition ${name} exists in namespace ${namespace}`);
  const r = resolveNadConfig(nad, await source.confDirFiles());
  warnings.push(...r.warnings);
  return { network: `${namespace}/${name}`, conf: r.conf };
}

/**
 * M2, first hit wins: a NAD of that name in multusNamespace; a config in confDir whose `name`
 * matches; a directory (its alphabetically first config file); a file path.
 */
async function resolveClusterNetwork(value: string, conf: DefaultNetworksConf, source: NetworkSource, warnings: string[]): Promise<ResolvedNetwork> {
  const what = `clusterNetwork ${JSON.stringify(value)}`;
  if (source.getNad && dns1123LabelProblem(value) === undefined) {
    const nad = await source.getNad(conf.multusNamespace, value);
    if (nad) {
      const r = resolveNadConfig(nad, await source.confDirFiles());
      warnings.push(...r.warnings);
      return { network: `${conf.multusNamespace}/${value}`, conf: r.conf };
    }
  }
  const byName = pickConfFileByName(await source.confDirFiles(), value, warnings);
  if (byName) return fromFile(byName.value, byName.path, conf);
  if (value.startsWith("/")) {
    const files = await source.listDir(value);
    if (files) {
      const first = files
        .filter((f) => /\.(conf|conflist|json)$/.test(f.path))
        .sort((a, b) => a.path.localeCompare(b.path))
        .find((f) => {
          try {
            return isPlainObject(JSON.parse(f.content));
          } catch {
            warnings.push(`${f.path} is not valid JSON; skipped`);
            return false;
          }
        });
      if (first) return fromFile(JSON.parse(first.content), first.path, conf);
      throw new CniError(Code.InvalidNetworkConfig, `${what} is a directory with no usable .conf, .conflist or .json file`);
    }
    const text = await source.readPath(value);
    if (text !== undefined) {
      let parsed: unknown;
      try {
        parsed = JSON.parse(text);
      } catch (err) {
        throw new CniError(Code.InvalidNetworkConfig, `${what}: ${value} is not valid JSON: ${(err as Error).message}`);
      }
      return fromFile(parsed, value, conf);
    }
  }
  throw new CniError(
    Code.InvalidNetworkConfig,
    `${what} names no NetworkAttachmentDefinition in ${conf.multusNamespace}, no config in the CNI config directory, and no file or directory`,
  );
}

function fromFile(value: unknown, path: string, conf: DefaultNetworksConf): ResolvedNetwork {
  try {
    const list = parseConfList(value, { what: `clusterNetwork file ${path}`, defaultVersion: conf.cniVersion });
    return { network: list.name, conf: list };
  } catch (err) {
    throw asCniError(err);
  }
}
