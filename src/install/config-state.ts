/**
 * Whether a node has switched to Plexus (M11): which config its runtime runs, read from the CNI
 * conf dir. The runtime takes the first usable `.conf`, `.conflist` or `.json` by name (libcni's
 * `ConfFiles` order); this is the same pick the installer makes of the primary network
 * (primary.ts, through `firstConfigFile`) and `plexus doctor` of the runtime's config, here
 * classified as Plexus's, Multus's (take-over.ts moves it aside), another plugin's, or none.
 * Read by `plexus install --ready` (the install container's readiness probe) and by the daemon
 * for `plexus_node_config_state`; nothing here writes.
 */
import { join } from "node:path";
import { plexusEntry } from "../config/plugin-conf";
import { firstConfigFile, type ConfFile } from "../npwg/conf-dir";
import { isMultusConfig, wrapsPlexus } from "./multus-config";
import { readConfDir } from "./primary";

/** Every state, in the order the metric lists them (its label values are only these). */
export const CONFIG_STATES = ["plexus", "multus", "other", "none"] as const;
export type ConfigState = (typeof CONFIG_STATES)[number];

export interface RuntimeConfig {
  state: ConfigState;
  /** The file the runtime runs; undefined when the dir has no usable config. */
  path?: string;
  /** Files skipped on the way (unreadable, not JSON, no type or plugins), for the message. */
  warnings: string[];
  /** M18: the runtime runs Multus's config, and it wraps Plexus's: every ADD through it fails. */
  wrapsPlexus?: true;
}

/** Pure: the runtime's pick among the conf dir's files, and whose config it is. */
export function classifyRuntimeConfig(
  files: readonly ConfFile[],
  readWarnings: readonly string[] = [],
): RuntimeConfig {
  const picked = firstConfigFile(files);
  const warnings = [...readWarnings, ...picked.warnings];
  if (!picked.picked) return { state: "none", warnings };
  const { path, value } = picked.picked;
  // A Multus config that wraps Plexus has Plexus only among its delegates: it is Multus's.
  const state = plexusEntry(value) ? "plexus" : isMultusConfig(value) ? "multus" : "other";
  if (state === "multus" && wrapsPlexus(value)) return { state, path, warnings, wrapsPlexus: true };
  return { state, path, warnings };
}

/** What the runtime runs from `confDir` now. */
export function readRuntimeConfig(confDir: string): RuntimeConfig {
  const dir = readConfDir(confDir);
  const found = classifyRuntimeConfig(dir.files, dir.warnings);
  // B90: a file the reader refuses (a FIFO, one too large) is still one the runtime loads, in
  // name order: sorting first, it is what the runtime runs, and it is nobody's config we know.
  const first = dir.refused.map((r) => r.path).sort()[0];
  if (first !== undefined && (found.path === undefined || first < found.path))
    return { state: "other", path: first, warnings: found.warnings };
  return found;
}

export interface SwitchExpectation {
  /** The conf dir as this process sees it. */
  confDir: string;
  /** The installer's own file name in it (00-plexus.conflist). */
  plexusName: string;
  /** false with --no-take-over-multus: Multus's config first is what the installer leaves. */
  takeOverMultus: boolean;
}

export interface Switched {
  ready: boolean;
  /** One line for the probe's output (the kubelet puts it in the pod's events when not ready). */
  message: string;
}

/**
 * Pure: whether the node runs what the installer makes of it. Taking over (the default), that is
 * the installer's own file first; with --no-take-over-multus also Multus's config first, since
 * the installer then puts Multus's back and leaves it first.
 */
export function switchedVerdict(found: RuntimeConfig, expect: SwitchExpectation): Switched {
  const own = join(expect.confDir, expect.plexusName);
  if (found.state === "plexus" && found.path === own)
    return { ready: true, message: `switched: the runtime's first config is Plexus's ${own}` };
  if (found.state === "multus" && !expect.takeOverMultus && !found.wrapsPlexus)
    return {
      ready: true,
      message:
        "handed back (--no-take-over-multus): the runtime's first config is Multus's " +
        `${found.path}`,
    };
  return { ready: false, message: `not switched: ${notSwitchedReason(found, own)}` };
}

function notSwitchedReason(found: RuntimeConfig, own: string): string {
  const skipped = found.warnings.length ? ` (skipped: ${found.warnings.join("; ")})` : "";
  switch (found.state) {
    case "none":
      return (
        `no usable CNI config in ${own.slice(0, own.lastIndexOf("/"))}${skipped}: the primary ` +
        "network's config is not there yet, or the installer withdrew Plexus's until it is"
      );
    case "multus":
      if (found.wrapsPlexus)
        return (
          `the runtime's first config is Multus's ${found.path}, and it wraps Plexus's: every ` +
          "ADD through it fails (Multus's DaemonSet wrote it again; the installer's log says more)"
        );
      return (
        `the runtime's first config is Multus's ${found.path}, not ${own}: the installer has not ` +
        `taken over (its log says why: another config may sort before Plexus's)${skipped}`
      );
    case "plexus":
      return `${found.path} runs Plexus, not the installer's ${own}: it sorts first${skipped}`;
    default:
      return (
        `the runtime's first config is ${found.path}, not ${own}: Plexus's config is absent ` +
        `(primary network not ready) or sorts after it${skipped}`
      );
  }
}
