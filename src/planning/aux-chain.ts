/**
 * M12: Multus 4.3's auxiliary CNI chain. With `auxiliaryCNIChainName` set, every pod's ADD also
 * runs a chain of its own, after the pod's networks and outside the default network's chain: a
 * conflist named after the key, made of a `passthru` plugin (which answers an empty result, so the
 * chained plugins get a prevResult) followed by the plugin configs of the `.conf` files in
 * `<directory of clusterNetwork>/<name>/`, in name order (libcni's subdirectory loading). It runs
 * only when that directory adds at least one plugin, on interface `net<N>` (N: its position
 * among the pod's attachments), as Multus numbers it. Multus logs and skips a chain it cannot
 * load; Plexus fails the ADD (7) naming the file, since nothing may fail silently. The chain is an
 * attachment like the others: recorded before it runs, torn down on rollback and by DEL, in
 * reverse.
 */
import { basename, dirname, join } from "node:path";
import { parsePlugin, type ConfList } from "../cni/conf";
import { CniError, Code } from "../cni/errors";
import { decodeJson } from "../cni/json";
import { PASSTHRU_PLUGIN } from "../libcni/conflist";
import type { PlexusConf } from "../config/plugin-conf";
import { MAX_CONF_FILE_BYTES } from "../npwg/conf-dir";
import type { FsNetworkSource } from "./network-source";
import type { Attachment } from "../nodestate/record";

/**
 * libcni's rule for a network name that is also a directory name (Multus checks it before loading).
 */
const CHAIN_NAME = /^[a-zA-Z0-9][a-zA-Z0-9_.-]*$/;

/** The chain's directory, or a CniError saying why the config cannot have one. */
export function auxiliaryChainDir(
  conf: Pick<PlexusConf, "auxiliaryCNIChainName" | "clusterNetwork">,
): string {
  const name = conf.auxiliaryCNIChainName!;
  if (!CHAIN_NAME.test(name))
    throw new CniError(
      Code.InvalidNetworkConfig,
      `"auxiliaryCNIChainName" ${JSON.stringify(name)} is not a network name that can be a ` +
        `directory (letters, digits, _ . -, not starting with _ . -)`,
    );
  if (!conf.clusterNetwork?.includes("/"))
    throw new CniError(
      Code.InvalidNetworkConfig,
      `"auxiliaryCNIChainName" needs "clusterNetwork" to be a file path (its directory holds the ` +
        `chain's directory ${name}/), got ${JSON.stringify(conf.clusterNetwork ?? "")}`,
    );
  return join(dirname(conf.clusterNetwork), name);
}

/**
 * The chain as a conflist, or undefined when its directory adds no plugin (no chain, as in Multus).
 */
export async function loadAuxiliaryChain(
  conf: PlexusConf,
  source: FsNetworkSource,
): Promise<ConfList | undefined> {
  const dir = auxiliaryChainDir(conf);
  const files = (await source.listChainDir(dir)) ?? [];
  const plugins = files.map((f) => {
    const what = `auxiliary chain ${conf.auxiliaryCNIChainName} file ${f.path}`;
    // A .conf that cannot be read is not skipped: the chain would run without it, silently.
    if ("problem" in f) {
      throw new CniError(Code.InvalidNetworkConfig, `${what} cannot be read: ${f.problem}`);
    }
    const value = decodeJson(f.content, {
      what,
      maxBytes: MAX_CONF_FILE_BYTES,
      code: Code.InvalidNetworkConfig,
      exactNumbers: true, // B92
    });
    return parsePlugin(value, what);
  });
  if (plugins.length === 0) return undefined;
  return {
    cniVersion: conf.cniVersion,
    name: basename(dir),
    plugins: [{ ...PASSTHRU_PLUGIN }, ...plugins],
  };
}

/** M12: the pod's attachments with the auxiliary chain after them (when the config has one). */
export async function withAuxiliaryChain(
  attachments: Attachment[],
  conf: PlexusConf,
  source: FsNetworkSource,
): Promise<Attachment[]> {
  if (!conf.auxiliaryCNIChainName) return attachments;
  const chain = await loadAuxiliaryChain(conf, source);
  if (!chain) return attachments;
  const aux: Attachment = {
    network: chain.name,
    ifName: `net${attachments.length}`,
    isDefault: false,
    conf: chain,
    auxiliary: true,
  };
  return [...attachments, aux];
}
