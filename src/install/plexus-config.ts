/**
 * The generated `00-plexus.conflist` (M11): a conflist with one plugin of type `plexus` whose
 * `clusterNetwork` is the primary config's file on the node (read at every ADD, M2), with the
 * primary's CNI version unless --cni-version says otherwise, the union of the capabilities its
 * plugins declare (so the runtime passes their runtimeConfig through Plexus, K4), the kubeconfig
 * and the keys given by flags. Pure: data in, text out.
 */
import type { ConfList } from "../cni/conf";

export interface PlexusConfigInput {
  primary: ConfList;
  /** The primary config's path on the node. */
  primaryHostPath: string;
  networkName: string;
  /** --cni-version; the primary's version when undefined. */
  cniVersion?: string | undefined;
  /** The kubeconfig's path on the node; undefined when there are no credentials to give. */
  kubeconfigHost?: string | undefined;
  /** The node's CNI conf dir (NAD lookups by name, N3.4.1). */
  confDirHost: string;
  readinessIndicatorHost?: string | undefined;
  cniDirHost?: string | undefined;
  /**
   * Flag-given keys (namespaceIsolation, globalNamespaces, logLevel, logFile, logToStderr, binDir).
   */
  pluginKeys: Record<string, unknown>;
}

/** Capabilities any of the primary's plugins declares (true), sorted for a stable file. */
export function primaryCapabilities(primary: ConfList): Record<string, boolean> {
  const names = new Set<string>();
  for (const p of primary.plugins)
    for (const [k, v] of Object.entries(p.capabilities ?? {})) if (v === true) names.add(k);
  return Object.fromEntries([...names].sort().map((k) => [k, true]));
}

export function buildPlexusConfig(input: PlexusConfigInput): Record<string, unknown> {
  const plugin: Record<string, unknown> = { type: "plexus" };
  const capabilities = primaryCapabilities(input.primary);
  if (Object.keys(capabilities).length > 0) plugin.capabilities = capabilities;
  if (input.kubeconfigHost) plugin.kubeconfig = input.kubeconfigHost;
  plugin.clusterNetwork = input.primaryHostPath;
  plugin.confDir = input.confDirHost;
  if (input.cniDirHost) plugin.cniDir = input.cniDirHost;
  if (input.readinessIndicatorHost) plugin.readinessindicatorfile = input.readinessIndicatorHost;
  Object.assign(plugin, input.pluginKeys);
  return {
    cniVersion: input.cniVersion ?? input.primary.cniVersion,
    name: input.networkName,
    plugins: [plugin],
  };
}

export function renderPlexusConfig(input: PlexusConfigInput): string {
  return `${JSON.stringify(buildPlexusConfig(input), null, 2)}\n`;
}
