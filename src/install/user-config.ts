/**
 * A user-supplied Plexus config (`--plexus-conf-file`, Multus's `--multus-conf-file`), installed
 * instead of the generated one (M11) once it has passed the checks a CNI call would make (M1): it
 * parses as Plexus's config, names a network, and can reach Kubernetes or says it runs without.
 * A single config (`"type": "plexus"`) is installed as a one-plugin conflist, so that the file
 * sorts first under Plexus's own name and the runtime reads it as it reads the generated one.
 */
import { existsSync } from "node:fs";
import { decodeJson, isPlainObject } from "../cni/json";
import { getKeyFold } from "../cni/keys";
import {
  parsePlexusConf,
  PLEXUS_KEYS,
  plexusEntry,
  type PlexusConf,
  withoutListKeys,
} from "../config/plugin-conf";
import { reportUnknownKeys } from "../config/unknown-keys";
import { MAX_CONF_FILE_BYTES } from "../npwg/conf-dir";
import { auxiliaryChainDir } from "../planning/aux-chain";
import type { Logger } from "../log/logger";
import { readNodeFile, syncFile } from "./kubeconfig";
import { toLocal, type InstallOptions } from "./options";
import {
  checkBinary,
  missingCredentials,
  readText,
  syncCredentials,
  type ReconcileState,
} from "./reconcile";

interface UserConfig {
  /** The conflist text to install. */
  text: string;
  conf: PlexusConf;
  /** Unknown keys and other things to log (the installer's log is what `kubectl logs` shows). */
  warnings: string[];
}

/** Thrown for a config that cannot work; the message says why and what to change. */
class UserConfigError extends Error {}

function readUserFile(path: string): Record<string, unknown> {
  // A ConfigMap's file is a symlink (into ..data/): followed, but only to a regular file.
  const read = readNodeFile(path, { follow: true, maxBytes: MAX_CONF_FILE_BYTES });
  const what = `--plexus-conf-file ${path}`;
  if ("problem" in read) throw new UserConfigError(`${what} cannot be read: ${read.problem}`);
  // B92: installed as written back, so inline delegates keep their numbers as the user wrote them.
  const opts = { what, maxBytes: MAX_CONF_FILE_BYTES, exactNumbers: true };
  const value = decodeJson(read.data, opts);
  if (!isPlainObject(value))
    throw new UserConfigError(`--plexus-conf-file ${path} is not a JSON object`);
  return value;
}

/** The config as a conflist: a single Plexus config becomes the one plugin of a list. */
function asConflist(
  value: Record<string, unknown>,
  entry: Record<string, unknown>,
): Record<string, unknown> {
  if (entry !== value) return value;
  return {
    cniVersion: getKeyFold(value, "cniVersion"),
    name: getKeyFold(value, "name"),
    plugins: [withoutListKeys(value)],
  };
}

/** Whether the config's way to Kubernetes works on this node (paths are the node's). */
function kubernetesProblem(conf: PlexusConf, hostPrefix: string, path: string): string | undefined {
  if (conf.withoutKubernetes || conf.fileClusterDir) return undefined;
  if (!conf.kubeconfig)
    return (
      `--plexus-conf-file ${path} has no "kubeconfig" (nor "fileClusterDir"): pods naming NADs ` +
      `could not be served; add "kubeconfig" (e.g. the installer's --kubeconfig-file-host) or ` +
      `"withoutKubernetes": true`
    );
  if (!existsSync(toLocal(conf.kubeconfig, hostPrefix)))
    return (
      `--plexus-conf-file ${path}: its kubeconfig ${conf.kubeconfig} does not exist on the ` +
      `node`
    );
  return undefined;
}

/**
 * Reads and validates the user's config. `hostPrefix` maps the node paths it names to this
 * container's. Throws UserConfigError (or a CniError from the parser) for one that cannot work.
 */
function loadUserConfig(path: string, hostPrefix: string): UserConfig {
  const value = readUserFile(path);
  const entry = plexusEntry(value);
  if (!entry)
    throw new UserConfigError(
      `--plexus-conf-file ${path} is not a Plexus config: it has no "type": "plexus" (nor a ` +
        `plugin of that type)`,
    );
  const conf = parsePlexusConf(entry);
  const warnings = reportUnknownKeys(
    conf.unknownKeys,
    PLEXUS_KEYS.names,
    `--plexus-conf-file ${path}`,
  ).map((r) => r.msg);
  // M12: throws for a chain that can never run
  if (conf.auxiliaryCNIChainName) auxiliaryChainDir(conf);
  const problem = kubernetesProblem(conf, hostPrefix, path);
  if (problem) throw new UserConfigError(problem);
  return { text: `${JSON.stringify(asConflist(value, entry), null, 2)}\n`, conf, warnings };
}

/**
 * One installer pass with a user-supplied config: wait for the readiness file (when set), keep the
 * credentials fresh when they are available (the config may point at the installer's kubeconfig),
 * then validate the config and install it as Plexus's config. A config that cannot work throws.
 */
export async function reconcileUserConfig(
  options: InstallOptions,
  state: ReconcileState,
  log: Logger,
): Promise<{ ready: true } | { ready: false; reason: string }> {
  const path = options.userConfFile!;
  checkBinary(options, state, log);
  if (options.readinessIndicator && !existsSync(options.readinessIndicator.local)) {
    const reason = `readiness indicator file ${options.readinessIndicator.host} does not exist`;
    if (state.notReadyReason !== reason) log.info({ reason }, "waiting for the primary network");
    state.notReadyReason = reason;
    return { ready: false, reason };
  }
  delete state.notReadyReason;
  if (!options.withoutKubernetes && missingCredentials(options) === undefined)
    await syncCredentials(options, state, log);
  const user = loadUserConfig(path, options.hostPrefix);
  for (const w of user.warnings) if (!state.warnings.has(w)) log.warn(w);
  state.warnings = new Set(user.warnings);
  if (readText(options.plexusConf.local) !== user.text) {
    await syncFile(options.plexusConf.local, user.text);
    log.info(
      { config: options.plexusConf.host, source: path },
      "user-supplied Plexus config validated and installed",
    );
  }
  state.written = user.text;
  return { ready: true };
}
