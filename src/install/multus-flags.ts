/**
 * Multus thin entrypoint's flags (cmd/thin_entrypoint in Multus, parsed by pflag) on
 * `plexus install` (M11): a DaemonSet written for Multus keeps its args. A flag whose meaning is
 * exactly a Plexus flag's is rewritten to it; any other Multus flag is refused, naming the Plexus
 * flag or config key to use instead, never ignored. pflag's spellings are accepted too:
 * `--flag=value`, and `--flag=true|false` for a boolean. Pure: argv in, argv out.
 */
import { DEFAULT_CONF_DIR, DEFAULT_HOST_PREFIX } from "../config/defaults";

/** Multus flag → the Plexus flag of the same meaning. */
const ALIASES: Readonly<Record<string, string>> = {
  "--multus-conf-file": "--plexus-conf-file",
  "--multus-bin-file": "--bin-file",
  "--skip-multus-binary-copy": "--skip-binary-copy",
  "--multus-kubeconfig-file-host": "--kubeconfig-file-host",
  "--multus-master-cni-file-name": "--primary-config-file-name",
  "--multus-log-level": "--log-level",
  "--multus-log-file": "--log-file",
  "--multus-log-to-stderr": "--log-to-stderr",
  "--multus-cni-conf-dir": "--nad-conf-dir",
};

/** Multus flags with no Plexus flag of the same meaning, and what to use instead. */
const REFUSED: Readonly<Record<string, string>> = {
  "--override-network-name": "name the generated conflist with --network-name",
  "--rename-conf-file":
    "Plexus never renames the primary network's config: its own 00-plexus.conflist sorts before " +
    "it; drop the flag",
  "--skip-tls-verify":
    "Plexus always verifies the API server's certificate; give the CA with --ca-file (or a " +
    "kubeconfig in --plexus-conf-file)",
  "--force-cni-version":
    "use --cni-version: the generated config takes that version and Plexus converts the primary " +
    "network's results",
};

/**
 * Boolean flags (Plexus's and Multus's same-named ones) that pflag lets a DaemonSet spell
 * `--x=true`.
 */
const BOOLEANS = new Set([
  "--skip-binary-copy",
  "--namespace-isolation",
  "--cleanup-config-on-exit",
  "--skip-config-watch",
  "--log-to-stderr",
  "--without-kubernetes",
  "--once",
  "--take-over-multus",
]);

class MultusFlagError extends Error {}

/**
 * The default of --cni-conf-dir (cli/node-path-options.ts; Multus's --multus-autoconfig-dir has the
 * same).
 */
const DEFAULT_INSTALL_CONF_DIR = `${DEFAULT_HOST_PREFIX}${DEFAULT_CONF_DIR}`;

/** The value given to `flag` (`--flag=v` or `--flag v`), or undefined. */
function flagValue(args: readonly string[], flag: string): string | undefined {
  for (let i = 0; i < args.length; i++) {
    if (args[i] === flag) return args[i + 1];
    if (args[i]!.startsWith(`${flag}=`)) return args[i]!.slice(flag.length + 1);
  }
  return undefined;
}

/**
 * Multus's --multus-autoconfig-dir is where it finds the primary network's config; Plexus finds it
 * in --cni-conf-dir. Multus's own DaemonSet passes both with one value: accepted when they agree.
 */
function checkAutoconfigDir(args: readonly string[]): void {
  const auto = flagValue(args, "--multus-autoconfig-dir");
  if (auto === undefined) return;
  const confDir = flagValue(args, "--cni-conf-dir") ?? DEFAULT_INSTALL_CONF_DIR;
  if (auto.replace(/\/+$/, "") !== confDir.replace(/\/+$/, ""))
    throw new MultusFlagError(
      `--multus-autoconfig-dir ${auto} differs from --cni-conf-dir ${confDir}: Plexus reads the ` +
        `primary network's config from --cni-conf-dir (pick a file there with ` +
        `--primary-config-file-name)`,
    );
}

function booleanFlag(name: string, value: string | undefined): string[] {
  if (value !== undefined && value !== "true" && value !== "false")
    throw new MultusFlagError(`${name}=${value}: expected true or false`);
  const on = value !== "false";
  // On by default: only their negation says anything.
  const onByDefault = name === "--log-to-stderr" || name === "--take-over-multus";
  if (onByDefault) return on ? [] : [`--no-${name.slice(2)}`];
  return on ? [name] : [];
}

/**
 * The `install` arguments with Multus's flags rewritten; throws MultusFlagError for a refused one.
 */
export function translateMultusFlags(args: readonly string[]): string[] {
  checkAutoconfigDir(args);
  const out: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    if (arg === "--multus-autoconfig-dir") {
      i++; // its value, checked above
      continue;
    }
    if (arg.startsWith("--multus-autoconfig-dir=")) continue;
    if (!arg.startsWith("--")) {
      out.push(arg);
      continue;
    }
    const eq = arg.indexOf("=");
    const given = eq === -1 ? arg : arg.slice(0, eq);
    const value = eq === -1 ? undefined : arg.slice(eq + 1);
    const refused = REFUSED[given];
    if (refused)
      throw new MultusFlagError(`${given} is a Multus flag Plexus does not take: ${refused}`);
    const name = ALIASES[given] ?? given;
    if (BOOLEANS.has(name)) out.push(...booleanFlag(name, value));
    else out.push(value === undefined ? name : `${name}=${value}`);
  }
  return out;
}
