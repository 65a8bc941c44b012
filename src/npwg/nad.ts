/**
 * NetworkAttachmentDefinition → the delegate config it runs (N3.2, N3.4.1–N3.4.3), in the spec's
 * order: `spec.config`; else a `.conflist` in the CNI config directory whose `name` is the NAD's;
 * else a `.conf`/`.json` with that name; else the attachment fails. Multus takes whichever file
 * sorts first, so a `.conf` can shadow a `.conflist`; Plexus follows the spec (see conf-dir.ts).
 * A `.conflist` from the directory takes the plugins of its network's folder, as libcni loads it.
 */
import { parseConfList, type ConfList } from "../cni/conf";
import { asCniError, CniError, Code } from "../cni/errors";
import { decodeJson, isPlainObject } from "../cni/json";
import { getKeyFold } from "../cni/keys";
import { delegateKeyWarnings, withDelegateKeyHint } from "../config/unknown-keys";
import { pickByName, withFolderPlugins, type ConfFile } from "./conf-dir";
import type { Nad } from "./types";

export type { ConfFile } from "./conf-dir";

export interface ResolvedNad {
  conf: ConfList;
  /** "spec.config" or the path of the file it came from. */
  source: "spec.config" | (string & {});
  /** N3.4.3 and skipped files: for the log. */
  warnings: string[];
}

export interface ResolveNadOptions {
  /** `cniVersion` for a config that has none (Plexus's own). */
  defaultVersion?: string;
  /**
   * False: a NAD without `spec.config` may not take a file from the config directory
   * (isolation.ts).
   */
  confDirAllowed?: boolean;
}

/** B29: a `spec.config` larger than this is refused (the same cap as stdin). */
const MAX_NAD_CONFIG_BYTES = 1024 * 1024;

function nadRef(nad: Nad): string {
  return `${nad.metadata.namespace}/${nad.metadata.name}`;
}

export function resolveNadConfig(
  nad: Nad,
  files: readonly ConfFile[],
  opts: ResolveNadOptions = {},
): ResolvedNad {
  const what = `NetworkAttachmentDefinition ${nadRef(nad)}`;
  const warnings: string[] = [];
  const config: unknown = nad.spec?.config;
  if (config !== undefined && config !== null && typeof config !== "string") {
    throw new CniError(
      Code.InvalidNetworkConfig,
      `${what}: spec.config must be a string holding JSON, got ` +
        `${Array.isArray(config) ? "a list" : typeof config}`,
    );
  }
  // N3.2: an empty spec.config is an absent one (as in Multus); whitespace is not JSON (B29).
  if (typeof config === "string" && config !== "") {
    const value = decodeJson(config, {
      what: `${what} spec.config`,
      maxBytes: MAX_NAD_CONFIG_BYTES,
      code: Code.InvalidNetworkConfig,
      exactNumbers: true, // B92: the delegates get the numbers as the tenant wrote them
    });
    return {
      conf: parse(value, `${what} spec.config`, nad, opts, warnings),
      source: "spec.config",
      warnings,
    };
  }
  if (opts.confDirAllowed === false) {
    throw new CniError(
      Code.InvalidNetworkConfig,
      `${what}: spec.config is absent, and under namespaceIsolation only a NAD in a global ` +
        `namespace or multusNamespace may name a config file of the node's CNI config directory; ` +
        `give the NAD a spec.config`,
    );
  }
  // N3.2, N3.4.1: no spec.config: the network is known by the NAD's name, from the config
  // directory.
  const found = pickByName(files, nad.metadata.name);
  warnings.push(...found.warnings);
  if (found.picked) {
    const { path } = found.picked;
    const from = `${what} (config from ${path})`;
    // libcni 1.3: a conflist file takes the plugins of the folder named after its network.
    const value = withContext(from, () => withFolderPlugins(found.picked!));
    return { conf: parse(value, from, nad, opts, warnings), source: path, warnings };
  }
  // B32.
  throw new CniError(
    Code.InvalidNetworkConfig,
    `${what}: spec.config absent and no .conflist, .conf or .json file in the CNI config ` +
      `directory has "name": ${JSON.stringify(nad.metadata.name)}`,
    found.warnings.length ? found.warnings.join("\n") : undefined,
  );
}

/** `fn`'s result; its error with `what` in front, its code kept. */
function withContext<T>(what: string, fn: () => T): T {
  try {
    return fn();
  } catch (err) {
    throw asCniError(err).withContext(what);
  }
}

function parse(
  value: unknown,
  what: string,
  nad: Nad,
  opts: ResolveNadOptions,
  warnings: string[],
): ConfList {
  if (!isPlainObject(value)) {
    const kind = value === null ? "JSON null" : Array.isArray(value) ? "a list" : typeof value;
    throw new CniError(
      Code.InvalidNetworkConfig,
      `${what}: expected a CNI config object (a single config or a conflist), got ${kind}`,
    );
  }
  // N3.4.3: a name other than the NAD's is kept (delegates key their state by it) but worth a
  // warning.
  const name = getKeyFold(value, "name");
  if (typeof name === "string" && name !== nad.metadata.name) {
    warnings.push(
      `${what}: the config's name ${JSON.stringify(name)} differs from the NAD's name ` +
        `${JSON.stringify(nad.metadata.name)}; delegates see ${JSON.stringify(name)}`,
    );
  }
  // N3.4.2: a config without a name gets the NAD's. B30, B31: parseConfList names `what`.
  let conf: ConfList;
  try {
    conf = parseConfList(value, {
      what,
      defaultName: nad.metadata.name,
      ...(opts.defaultVersion ? { defaultVersion: opts.defaultVersion } : {}),
    });
  } catch (err) {
    // A key no reader reads is often why (a `cniVesion`, so no cniVersion): named with the error.
    throw withDelegateKeyHint(err, value);
  }
  // Keys no reader reads (`cniVesion`, macvlan's `mastr`): Go ignores them, so a warning says so.
  warnings.push(...delegateKeyWarnings(value, what));
  return conf;
}

/**
 * B28, M9: the error for a reference whose NAD does not exist. It names the reference, the
 * namespace searched and where the reference came from; it avoids the words "not found", which
 * runtimes match on DEL to mean "already gone" (B62).
 */
export function missingNadError(options: {
  pod?: string;
  ref: { namespace: string; name: string };
  from: string;
}): CniError {
  const { namespace, name } = options.ref;
  return new CniError(
    Code.InvalidNetworkConfig,
    `${options.pod ? `pod ${options.pod}: ` : ""}network ${namespace}/${name} (${options.from}): ` +
      `no NetworkAttachmentDefinition named ${JSON.stringify(name)} exists in namespace ` +
      `${namespace}`,
  );
}
