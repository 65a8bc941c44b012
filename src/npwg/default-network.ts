/**
 * The networks every pod gets (N6, N6.2, M2, M3, M5): the cluster default network, replaced for
 * one pod by its `v1.multus-cni.io/default-network` annotation, then the configured
 * `defaultNetworks` (not for pods in `systemNamespaces`). I/O comes in through {@link
 * NetworkSource}.
 */
import { parseConfList, type ConfList } from "../cni/conf";
import { asCniError, CniError, Code } from "../cni/errors";
import { decodeJson, isPlainObject } from "../cni/json";
import {
  firstConfigFile,
  MAX_CONF_FILE_BYTES,
  pickByName,
  withFolderPlugins,
  type ConfFile,
  type PickedConf,
} from "./conf-dir";
import { dns1123LabelProblem, validateDns1123Label } from "./dns1123";
import { checkNamespaceAccess, nadMayUseConfDir } from "./isolation";
import { missingNadError, resolveNadConfig } from "./nad";
import { DEFAULT_NETWORK_ANNOTATION, type Nad, type Pod } from "./types";

export interface NetworkSource {
  /** Undefined when there is no Kubernetes access (B7): names are then never looked up as NADs. */
  getNad?: (namespace: string, name: string) => Promise<Nad | undefined>;
  /** The CNI config directory's config files. */
  confDirFiles(): Promise<ConfFile[]>;
  /** A file (with its folder reader, see ConfFile), or undefined when it is not a readable file. */
  readPath(path: string): Promise<ConfFile | undefined>;
  /** A directory's config files, or undefined when it is not a directory. */
  listDir(path: string): Promise<ConfFile[] | undefined>;
}

export interface ResolvedNetwork {
  /** Name in network-status and messages: `namespace/name` for a NAD, else the config's name. */
  network: string;
  conf: ConfList;
  /** The NAD it came from, if any (its annotations: resourceName, M10). */
  nad?: Nad;
  /** Chosen by the pod's own annotation (the default-network override), not by Plexus's config. */
  byPod?: true;
}

/** The part of PlexusConf this needs (PlexusConf satisfies it). */
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

interface Ctx {
  conf: DefaultNetworksConf;
  source: NetworkSource;
  warnings: string[];
}

export async function resolveDefaultNetworks(
  pod: Pod | undefined,
  conf: DefaultNetworksConf,
  source: NetworkSource,
): Promise<DefaultNetworks> {
  const ctx: Ctx = { conf, source, warnings: [] };
  const override = pod?.metadata.annotations?.[DEFAULT_NETWORK_ANNOTATION]?.trim();
  let cluster: ResolvedNetwork;
  const extra: ResolvedNetwork[] = [];
  if (pod && override) {
    cluster = await resolveOverride(override, pod, ctx);
  } else if (conf.clusterNetwork) {
    if (conf.delegates.length)
      ctx.warnings.push(
        `both "clusterNetwork" and "delegates" are set; "clusterNetwork" ` +
          `(${conf.clusterNetwork}) ` +
          `is the default network and "delegates" are ignored, as in Multus`,
      );
    cluster = await resolveNetworkName(conf.clusterNetwork, "clusterNetwork", ctx);
  } else if (conf.delegates[0]) {
    // Multus's inline mode: the first delegate is the cluster network, the others go to every pod.
    cluster = { network: conf.delegates[0].name, conf: conf.delegates[0] };
    extra.push(...conf.delegates.slice(1).map((d) => ({ network: d.name, conf: d })));
  } else {
    throw new CniError(
      Code.InvalidNetworkConfig,
      'no default network: set "clusterNetwork" or list it first in "delegates"',
    );
  }
  if (pod && override && !conf.clusterNetwork && conf.delegates.length > 1) {
    // Inline mode with an override: only delegates[0] is replaced (Multus: conf.Delegates[0] =
    // override).
    extra.push(...conf.delegates.slice(1).map((d) => ({ network: d.name, conf: d })));
  }
  // M3: Multus's thin plugin compares the pod's *name* with systemNamespaces; this compares the
  // namespace.
  const isSystemPod = pod !== undefined && conf.systemNamespaces.includes(pod.metadata.namespace);
  if (!isSystemPod) {
    for (const name of conf.defaultNetworks)
      extra.push(await resolveNetworkName(name, "defaultNetworks entry", ctx));
  }
  return { clusterNetwork: cluster, defaultNetworks: extra, warnings: ctx.warnings };
}

const OVERRIDE_REQUEST_KEYS = [
  "interface",
  "interfaceRequest",
  "ips",
  "mac",
  "infiniband-guid",
  "cni-args",
  "portMappings",
  "bandwidth",
  "default-route",
  "deviceID",
];

function overrideError(value: string, msg: string): CniError {
  const shown = value.length > 120 ? `${value.slice(0, 120)}…` : value;
  return new CniError(
    Code.InvalidNetworkConfig,
    `pod annotation ${DEFAULT_NETWORK_ANNOTATION} ${JSON.stringify(shown)}: ${msg}`,
  );
}

/**
 * M5: the override names exactly one NAD, in the forms Multus parses it with (its
 * networks-annotation parser, with multusNamespace as the default namespace): `name`,
 * `namespace/name`, or a JSON list of one `{"name", "namespace"}` object. What only an extra
 * attachment can honour (`@ifname`, `interface`, `ips`, `mac`, …) is refused rather than dropped:
 * the default network always runs on CNI_IFNAME with its NAD's config (Multus ignores those keys
 * there, or renames the pod's eth0).
 */
export function parseDefaultNetworkAnnotation(
  value: string,
  multusNamespace: string,
): { namespace: string; name: string } {
  const text = value.trim();
  let namespace: string;
  let name: string;
  if (text.startsWith("[") || text.startsWith("{")) {
    const list = decodeJson(text, {
      what: `pod annotation ${DEFAULT_NETWORK_ANNOTATION}`,
      code: Code.InvalidNetworkConfig,
    });
    if (!Array.isArray(list))
      throw overrideError(text, "the JSON form must be a list holding one object");
    if (list.length !== 1)
      throw overrideError(
        text,
        `names ${list.length} networks; exactly one default network is allowed`,
      );
    const el: unknown = list[0];
    if (!isPlainObject(el)) throw overrideError(text, "the list element must be an object");
    if (typeof el.name !== "string")
      throw overrideError(text, 'key "name" is required and must be a string');
    if (el.namespace !== undefined && typeof el.namespace !== "string")
      throw overrideError(text, 'key "namespace" must be a string');
    const unsupported = OVERRIDE_REQUEST_KEYS.filter((k) => el[k] !== undefined);
    if (unsupported.length) {
      throw overrideError(
        text,
        `key ${unsupported.map((k) => `"${k}"`).join(", ")} cannot apply to the default network ` +
          `(it runs on CNI_IFNAME with its NAD's config); request it through ` +
          `k8s.v1.cni.cncf.io/networks ` +
          `instead`,
      );
    }
    name = el.name;
    namespace = el.namespace || multusNamespace;
  } else {
    const items = text.split(",");
    if (items.length !== 1)
      throw overrideError(
        text,
        `names ${items.length} networks; exactly one default network is allowed`,
      );
    if (text.includes("@"))
      throw overrideError(
        text,
        "an @interface cannot apply to the default network, which always runs on CNI_IFNAME",
      );
    const parts = text.split("/");
    if (parts.length > 2) throw overrideError(text, "expected name or namespace/name");
    [namespace, name] =
      parts.length === 2
        ? [parts[0]!.trim(), parts[1]!.trim()]
        : [multusNamespace, parts[0]!.trim()];
  }
  validateDns1123Label(namespace, `pod annotation ${DEFAULT_NETWORK_ANNOTATION}: namespace`);
  validateDns1123Label(name, `pod annotation ${DEFAULT_NETWORK_ANNOTATION}: name`);
  return { namespace, name };
}

/** M5, B24: isolation is checked before the NAD is read. */
async function resolveOverride(value: string, pod: Pod, ctx: Ctx): Promise<ResolvedNetwork> {
  const ref = parseDefaultNetworkAnnotation(value, ctx.conf.multusNamespace);
  const podNamespace = pod.metadata.namespace;
  checkNamespaceAccess({
    podNamespace,
    ref,
    conf: ctx.conf,
    what: `default-network override (${DEFAULT_NETWORK_ANNOTATION})`,
    allowMultusNamespace: true,
  });
  const from = `annotation ${DEFAULT_NETWORK_ANNOTATION}`;
  if (!ctx.source.getNad)
    throw new CniError(
      Code.InvalidNetworkConfig,
      `network ${ref.namespace}/${ref.name} (${from}) is a NetworkAttachmentDefinition, but no ` +
        `Kubernetes access is configured`,
    );
  const nad = await ctx.source.getNad(ref.namespace, ref.name);
  if (!nad) throw missingNadError({ pod: `${podNamespace}/${pod.metadata.name}`, ref, from });
  return { ...(await fromNad(nad, ctx, nadMayUseConfDir(ref.namespace, ctx.conf))), byPod: true };
}

async function fromNad(nad: Nad, ctx: Ctx, confDirAllowed = true): Promise<ResolvedNetwork> {
  const r = resolveNadConfig(nad, await ctx.source.confDirFiles(), { confDirAllowed });
  ctx.warnings.push(...r.warnings);
  return { network: `${nad.metadata.namespace}/${nad.metadata.name}`, conf: r.conf, nad };
}

/**
 * M2, for `clusterNetwork` and (as Multus's `getNetDelegate` does) each `defaultNetworks` entry,
 * first hit wins: a NAD of that name in multusNamespace; a config in confDir whose `name` matches
 * (`.conflist` first, N3.4.1); an absolute path to a directory (its first usable config file); an
 * absolute path to a file. An API error while reading the NAD fails here instead of silently
 * falling through to a file (Multus falls through on any error).
 */
async function resolveNetworkName(value: string, key: string, ctx: Ctx): Promise<ResolvedNetwork> {
  const { conf, source } = ctx;
  const what = `${key} ${JSON.stringify(value)}`;
  if (source.getNad && dns1123LabelProblem(value) === undefined) {
    const nad = await source.getNad(conf.multusNamespace, value);
    if (nad) return fromNad(nad, ctx);
  }
  const byName = pickByName(await source.confDirFiles(), value);
  ctx.warnings.push(...byName.warnings);
  if (byName.picked) return fromFile(byName.picked, key, conf);
  if (value.startsWith("/")) {
    const files = await source.listDir(value);
    if (files) {
      const first = firstConfigFile(files);
      ctx.warnings.push(...first.warnings);
      if (first.picked) return fromFile(first.picked, key, conf);
      throw new CniError(
        Code.InvalidNetworkConfig,
        `${what} is a directory with no usable .conf, .conflist or .json file`,
        first.warnings.join("\n") || undefined,
      );
    }
    const file = await source.readPath(value);
    if (file !== undefined) return fromFile(decodePath(file, key), key, conf);
  }
  const tried = [
    ...(source.getNad
      ? [`no NetworkAttachmentDefinition ${value} in namespace ${conf.multusNamespace}`]
      : ["no NAD lookup (no Kubernetes access)"]),
    `no config in the CNI config directory has "name": ${JSON.stringify(value)}`,
    value.startsWith("/") ? "no such file or directory" : "not an absolute path",
  ];
  throw new CniError(Code.InvalidNetworkConfig, `${what} names no network: ${tried.join("; ")}`);
}

/** A config file found for a network, decoded; not yet known to be an object. */
type FoundFile = Omit<PickedConf, "value"> & { value: unknown };

/** `clusterNetwork` as a file path: the file decoded; parseConfList says what else is wrong. */
function decodePath(file: ConfFile, key: string): FoundFile {
  const value = decodeJson(file.content, {
    what: `${key} file ${file.path}`,
    maxBytes: MAX_CONF_FILE_BYTES,
    code: Code.InvalidNetworkConfig,
    exactNumbers: true, // B92
  });
  return { path: file.path, value, pluginFolder: file.pluginFolder };
}

/**
 * The network of a file found for it. A `.conflist` takes the plugins of its network's folder
 * first, as libcni loads a conflist file, whichever way the file was found (by name, as a
 * directory's first, as a path).
 */
function fromFile(found: FoundFile, key: string, conf: DefaultNetworksConf): ResolvedNetwork {
  const what = `${key} config ${found.path}`;
  const { value } = found;
  const full = isPlainObject(value) ? folderPluginsOf({ ...found, value }, what) : value;
  const list = parseConfList(full, { what, defaultVersion: conf.cniVersion });
  return { network: list.name, conf: list };
}

function folderPluginsOf(picked: PickedConf, what: string): Record<string, unknown> {
  try {
    return withFolderPlugins(picked);
  } catch (err) {
    throw asCniError(err).withContext(what);
  }
}
