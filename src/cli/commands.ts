/** The person-facing command line (commander), used when CNI_COMMAND is not set. */
import { Command, CommanderError } from "commander";
import { ALL_VERSIONS } from "../cni/version";
import {
  DAEMON_DEFAULT_SECONDS,
  DEFAULT_CONF_DIR,
  DEFAULT_DAEMON_SOCKET,
  DEFAULT_KUBECONFIG_FILE_HOST,
  DEFAULT_POD_RESOURCES_SOCKET,
  SERVICE_ACCOUNT_DIR,
} from "../config/defaults";
import { translateMultusFlags } from "../install/multus-flags";
import { addNodePathOptions } from "./node-path-options";
import { housekeepingPass } from "./housekeeping-pass";
import { hotplugPass } from "./hotplug-pass";
import { addOpsCommands } from "./ops-commands";
import { COMMANDS } from "./routes";
import { addUninstallCommand } from "./uninstall-command";
import { ExitCode } from "../command/exit-codes";
import { COMMIT, VERSION } from "../config/build-info";

/** What `plexus --version` prints: the version, then the commit it was built from. */
export const VERSION_LINE = `${VERSION} (commit ${COMMIT})`;

function newProgram(): Command {
  return (
    new Command("plexus")
      .description(
        `Plexus: a Kubernetes multi-network CNI meta-plugin (NPWG), a drop-in replacement for ` +
          `Multus.\n\nThe container runtime runs it as a CNI plugin (CNI_COMMAND set, its config ` +
          `on stdin).\nThe commands below are for people on a node, and for the DaemonSet ` +
          `(install, daemon).\n\nExit codes: ${ExitCode.Ok} fine, ${ExitCode.Problem} a problem ` +
          `found, ${ExitCode.Usage} a usage error, ${ExitCode.CannotRun} the command could not ` +
          `run.`,
      )
      .version(VERSION_LINE, "-v, --version")
      // Help and --version are answers (stdout, so `plexus --help | less` works); errors go to
      // stderr.
      .configureOutput({
        writeOut: (s) => process.stdout.write(s),
        writeErr: (s) => process.stderr.write(s),
      })
      .exitOverride()
  );
}

/**
 * Commander's own exits: help and --version are answers (0); anything else it reports is a usage
 * error.
 */
function commanderExit(err: { code?: unknown; exitCode?: number }): number {
  const answers = ["commander.helpDisplayed", "commander.help", "commander.version"];
  return answers.includes(String(err.code)) ? ExitCode.Ok : ExitCode.Usage;
}

/** Every command with its flags; each command's module is loaded through routes.ts when it runs. */
export function commandLine(setExitCode: (code: number) => void): Command {
  const program = newProgram();
  program
    .command("cni-versions")
    .description("list the CNI spec versions Plexus speaks")
    .action(() => {
      process.stdout.write(`${ALL_VERSIONS.join("\n")}\n`);
    });
  addInstallCommand(program, setExitCode);
  addUninstallCommand(program, setExitCode);
  addDaemonCommand(program, setExitCode);
  addOpsCommands(program, setExitCode);
  return program;
}

export async function runCommands(argv: readonly string[]): Promise<number> {
  let exitCode: number = ExitCode.Ok;
  const program = commandLine((code) => {
    exitCode = code;
  });
  if (argv.length === 0) {
    program.outputHelp();
    return ExitCode.Ok;
  }
  let args: string[];
  try {
    args = argv[0] === "install" ? ["install", ...translateMultusFlags(argv.slice(1))] : [...argv];
  } catch (err) {
    process.stderr.write(`plexus install: ${(err as Error).message}\n`);
    return ExitCode.Usage;
  }
  try {
    await program.parseAsync(args, { from: "user" });
    return exitCode;
  } catch (err) {
    if (err instanceof CommanderError) return commanderExit(err);
    // A command crashed: never silently (its stack on stderr, exit status 3).
    process.stderr.write(
      `plexus: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`,
    );
    return ExitCode.CannotRun;
  }
}

/** `plexus daemon`'s flags: name, help, and the default where it has one. */
const DAEMON_FLAGS: readonly (readonly [string, string, string?])[] = [
  ["--kubeconfig <path>", "kubeconfig to use (default: the in-cluster service account)"],
  [
    "--node-name <name>",
    "this node's name, for the pod watch's field selector (default: $NODE_NAME, else the " +
      "hostname)",
  ],
  [
    "--socket <path>",
    "the unix socket to listen on (0600); the plugin's daemonSocket key",
    DEFAULT_DAEMON_SOCKET,
  ],
  ["--log-level <level>", "log level (stderr)", "info"],
  [
    "--api-request-timeout <seconds>",
    "one API request",
    String(DAEMON_DEFAULT_SECONDS.apiRequestTimeout),
  ],
  [
    "--api-total-timeout <seconds>",
    "one API operation, retries included",
    String(DAEMON_DEFAULT_SECONDS.apiTotalTimeout),
  ],
  [
    "--health-address <host:port>",
    "also serve /healthz, /readyz and /metrics (only those; never the /v1 API) over plain HTTP " +
      "on this TCP address (default: off). Any host:port is accepted; the DaemonSet uses " +
      "0.0.0.0:9405 with hostNetwork (the node's port, for Prometheus); 127.0.0.1:9405 keeps " +
      "it on the node",
  ],
  [
    "--pod-resources-socket <path>",
    "kubelet's pod-resources socket, asked for the CNI binary's device networks over one " +
      'channel ("": off)',
    DEFAULT_POD_RESOURCES_SOCKET,
  ],
  [
    "--missing-networks-grace <seconds>",
    "how long a Running pod may lack a network its annotation asks for before the " +
      "NetworksMissing event",
    String(DAEMON_DEFAULT_SECONDS.missingNetworksGrace),
  ],
  [
    "--housekeeping-interval <seconds>",
    "how often the daemon retries the node's records of failed DELs, off every pod's path " +
      "(0: off; DELs retry them then)",
    String(DAEMON_DEFAULT_SECONDS.housekeepingInterval),
  ],
  ["--cni-conf-dir <dir>", "for housekeeping, hot-plug and metrics", DEFAULT_CONF_DIR],
  ["--cni-path <dirs>", "the delegates' dirs (the runtime's CNI_PATH)", "/opt/cni/bin"],
  ["--hot-plug", "attach and detach running pods' networks as their annotation changes"],
  ["--hot-plug-namespaces <names>", "only these namespaces, comma-separated"],
  ["--hot-plug-concurrency <n>", "hot-plug reconciles at once on the node (default 4)"],
];

function addDaemonCommand(program: Command, setExitCode: (code: number) => void): void {
  const daemon = program
    .command("daemon")
    .description(
      "serve this node's pods and NADs from watch caches to the plexus CNI binary over a unix " +
        "socket (run by the DaemonSet)",
    );
  for (const [flag, help, fallback] of DAEMON_FLAGS) daemon.option(flag, help, fallback);
  daemon.action(async (flags: Record<string, string | undefined>) => {
    const { daemonMain } = await COMMANDS.daemon.load();
    const passes = { housekeeping: housekeepingPass(flags), hotplug: hotplugPass(flags) };
    setExitCode(await daemonMain(flags, passes));
  });
}

/**
 * `plexus install`: the DaemonSet container's command (M11, N6.1). Flags as Multus's thin
 * entrypoint names them where it has one (without its `multus-` prefixes; the prefixed names are
 * accepted as aliases, install/multus-flags.ts); the installer itself is loaded only when this
 * command runs.
 */
function addInstallCommand(program: Command, setExitCode: (code: number) => void): void {
  const install = program
    .command("install")
    .description(
      "install the plexus binary, its CNI config and kubeconfig on this node, and keep them " +
        "right (run by the DaemonSet)",
    );
  addInstallPathOptions(install);
  addInstallConfigOptions(install);
  install
    .option("--cleanup-config-on-exit", "remove the Plexus config on SIGTERM")
    .option("--skip-config-watch", "install once, then only wait for SIGTERM")
    .option("--once", "install and exit (tests, init containers)")
    .option(
      "--primary-config-timeout <seconds>",
      "how long to wait for the primary network before exiting 1",
      "600",
    )
    .option("--poll-interval <ms>", "how often to re-check when no file event arrives", "2000")
    .option("--installer-log-level <level>", "this installer's log level (stderr)", "info")
    .option(
      "--ready",
      "only check, writing nothing: exit 0 when the runtime's first config in --cni-conf-dir is " +
        "Plexus's (the install container's readiness probe), else 1",
    )
    .action(async (flags: Record<string, unknown>) => {
      if (flags.ready) {
        const { installReadyMain } = await COMMANDS["install --ready"].load();
        return setExitCode(installReadyMain(flags as never));
      }
      const { installMain } = await COMMANDS.install.load();
      setExitCode(await installMain(flags));
    });
}

function addInstallPathOptions(install: Command): void {
  addNodePathOptions(install)
    .option("--bin-file <path>", "the plexus binary to install (default: this executable)")
    .option("--skip-binary-copy", "do not install the binary")
    .option(
      "--primary-config-file-name <name>",
      "use this file in --cni-conf-dir as the primary network (default: the first by name)",
    )
    .option(
      "--kubeconfig-file-host <path>",
      "the generated kubeconfig's path on the node (a token and CA file are kept beside it)",
      DEFAULT_KUBECONFIG_FILE_HOST,
    )
    .option(
      "--token-file <path>",
      "the projected service-account token to copy and keep fresh",
      `${SERVICE_ACCOUNT_DIR}/token`,
    )
    .option("--ca-file <path>", "the service-account CA to copy", `${SERVICE_ACCOUNT_DIR}/ca.crt`)
    .option(
      "--api-server <url>",
      "API server URL for the kubeconfig (default: " +
        "https://$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT)",
    )
    .option(
      "--without-kubernetes",
      "this node runs without Kubernetes: no credentials needed, the config says " +
        "withoutKubernetes (pods get their default network(s) only)",
    )
    .option(
      "--plexus-conf-file <path>",
      'install this Plexus config (validated) instead of generating one; "auto": generate ' +
        "(Multus: --multus-conf-file)",
    );
}

function addInstallConfigOptions(install: Command): void {
  install
    .option(
      "--cni-version <version>",
      "cniVersion of the generated config (default: the primary config's)",
    )
    .option(
      "--readiness-indicator-file <path>",
      "node path of the primary network's readiness file: no Plexus config until it exists",
    )
    .option(
      "--namespace-isolation",
      "config key namespaceIsolation: pods use NADs of their own namespace only",
    )
    .option(
      "--global-namespaces <list>",
      "config key globalNamespaces: comma-separated namespaces every pod may use",
    )
    .option(
      "--log-level <level>",
      "config key logLevel for the plugin: debug, verbose, error or panic",
    )
    .option("--log-file <path>", "config key logFile for the plugin (a node path)")
    .option("--no-log-to-stderr", "config key logToStderr false for the plugin")
    .option(
      "--additional-bin-dir <dir>",
      "config key binDir: another dir for delegate binaries (a node path)",
    )
    .option(
      "--cni-dir <dir>",
      "config key cniDir: the plugin's state dir on the node (default /var/lib/cni/plexus)",
    )
    .option("--network-name <name>", "the generated conflist's name", "plexus-cni-network")
    .option(
      "--nad-conf-dir <dir>",
      "config key confDir: node path of NAD configs without spec.config (--multus-cni-conf-dir)",
      "/etc/cni/multus/net.d",
    )
    .option(
      "--no-take-over-multus",
      "keep Multus's config first (put back one the installer moved aside): the node runs Multus",
    );
}
