/**
 * The commands people run on a node to see what Plexus does and why: explain, validate, doctor,
 * records, completion; and `status`, the whole cluster's nodes from the API server. Only their
 * flags are defined here; each command's code is loaded when it runs, through its row in
 * routes.ts, never by a CNI call.
 */
import type { Command } from "commander";
import { DEFAULT_CONF_DIR } from "../config/defaults";
import { ExitCode } from "../command/exit-codes";
import { COMMANDS } from "./routes";

type SetExit = (code: number) => void;

function common(cmd: Command): Command {
  return cmd
    .option(
      "--config <file>",
      "the Plexus config (default: the config file the runtime picks from --cni-conf-dir, if it " +
        "runs Plexus)",
    )
    .option("--cni-conf-dir <dir>", "the node's CNI config directory", DEFAULT_CONF_DIR)
    .option(
      "--cni-path <dirs>",
      "where plugin binaries are looked up, colon-separated (default: $CNI_PATH, else " +
        "/opt/cni/bin); the config's binDir comes first",
    )
    .option("--kubeconfig <file>", "use this kubeconfig instead of the config's")
    .option("-o, --output <format>", "text or json", "text")
    .option("--log-level <level>", "log to stderr at this level (debug, info, …)", "panic");
}

export function addOpsCommands(program: Command, setExit: SetExit): void {
  addExplainCommand(program, setExit);
  addValidateCommand(program, setExit);
  addDoctorCommand(program, setExit);
  addRecordsCommand(program, setExit);
  addHotplugCommand(program, setExit);
  addStatusCommand(program, setExit);
  addCompletionCommand(program, setExit);
}

function addStatusCommand(program: Command, setExit: SetExit): void {
  program
    .command("status")
    .description(
      "the cluster's nodes from the API server: the version each runs, whether it has switched " +
        "to Plexus, whether its Plexus pod is ready, and its pods missing networks",
    )
    .option("--kubeconfig <file>", "default: $KUBECONFIG, ~/.kube/config, else in-cluster")
    .option("-n, --namespace <ns>", "where the plexus DaemonSet runs", "kube-system")
    .option("-l, --selector <labels>", "its pods' labels", "app.kubernetes.io/name=plexus")
    .option(
      "--missing-networks-grace <seconds>",
      "a pod must have run this long to count as missing networks (as the daemon's event)",
    )
    .option("-o, --output <format>", "text or json", "text")
    .option("--log-level <level>", "log to stderr at this level (debug, info, …)", "panic")
    .action(async (flags: Record<string, string | undefined>) => {
      const { statusMain } = await COMMANDS.status.load();
      setExit(await statusMain(flags));
    });
}

function addExplainCommand(program: Command, setExit: SetExit): void {
  common(
    program
      .command("explain")
      .argument("[pod]", "the pod, NAMESPACE/NAME (a bare NAME means namespace default)")
      .description(
        "show what ADD would do for a pod, without running any plugin: each network, its " +
          "interface, the plugin configs and environment, the binaries, and every error ADD " +
          "would hit",
      ),
  )
    .option("--file <pod.yaml>", "a dry run without a cluster: the pod from this manifest")
    .option(
      "--nads <dir>",
      "with --file: the NetworkAttachmentDefinitions from this directory of manifests",
    )
    .option("--ifname <name>", "the runtime's interface name for the default network", "eth0")
    .option("--uid <uid>", "the pod UID the runtime would pass (K8S_POD_UID)")
    .option("--hot-plug", "what a hot-plug reconcile of the running pod would attach and detach")
    .action(async (pod: string | undefined, flags: Record<string, string | undefined>) => {
      if (flags.hotPlug) {
        const { hotplugMain } = await COMMANDS["explain --hot-plug"].load();
        return setExit(await hotplugMain(pod, { ...flags, dryRun: true }));
      }
      const { explainMain } = await COMMANDS.explain.load();
      setExit(await explainMain(pod, flags));
    });
}

function addValidateCommand(program: Command, setExit: SetExit): void {
  common(
    program
      .command("validate")
      .argument(
        "[nad]",
        "the NetworkAttachmentDefinition, NAMESPACE/NAME (or NAME with --namespace)",
      )
      .description(
        "check that this node can run NetworkAttachmentDefinitions: config, plugin binaries and " +
          "their versions, IPAM ranges, capabilities pods request",
      ),
  )
    .option("--file <nad.yaml>", "validate the NADs in this manifest instead of the cluster's")
    .option("--all", "validate every NAD of the cluster")
    .option("-n, --namespace <ns>", "namespace of a bare NAD name", "default")
    .option(
      "--node-name <name>",
      "this node, whose pods' requests are checked (default: $NODE_NAME, else the hostname)",
    )
    .option(
      "--preflight",
      "before switching from Multus: every NAD (or --file's) Plexus reads differently from Multus",
    )
    .option(
      "--nad-conf-dir <dir>",
      "with --preflight: where NADs without spec.config have their file",
      "/etc/cni/multus/net.d",
    )
    .action(
      async (nad: string | undefined, flags: Record<string, string | boolean | undefined>) => {
        if (flags.preflight) {
          if (nad) {
            process.stderr.write("plexus validate --preflight checks every NAD (or --file's)\n");
            return setExit(ExitCode.Usage);
          }
          const { preflightMain } = await COMMANDS["validate --preflight"].load();
          return setExit(await preflightMain(flags as never));
        }
        const { validateMain } = await COMMANDS.validate.load();
        setExit(await validateMain(nad, flags as never));
      },
    );
}

function addDoctorCommand(program: Command, setExit: SetExit): void {
  common(
    program
      .command("doctor")
      .description(
        "check this node: the config the runtime picks, the default network, readiness, " +
          "kubeconfig and token, API server, daemon, records, disk space",
      ),
  ).action(async (flags: Record<string, string | undefined>) => {
    const { doctorMain } = await COMMANDS.doctor.load();
    setExit(await doctorMain(flags));
  });
}

function addCompletionCommand(program: Command, setExit: SetExit): void {
  program
    .command("completion")
    .argument("<shell>", "bash")
    .description("print a shell completion script: source <(plexus completion bash)")
    .action(async (shell: string) => {
      const { completionScript } = await COMMANDS.completion.load();
      const script = completionScript(program, shell);
      if (script === undefined) {
        process.stderr.write(
          `plexus completion: ${JSON.stringify(shell)} is not supported; only bash is\n`,
        );
        return setExit(ExitCode.Usage);
      }
      process.stdout.write(script);
    });
}

function addHotplugCommand(program: Command, setExit: SetExit): void {
  common(
    program
      .command("hotplug")
      .argument("<pod>", "the running pod, NAMESPACE/NAME")
      .description(
        "attach and detach a running pod's networks as its networks annotation now asks " +
          "(what the daemon's --hot-plug runs; -o json prints the report the daemon reads)",
      ),
  )
    .option("--uid <uid>", "only the sandbox of the pod with this UID")
    .option("--dry-run", "only print what it would do (as plexus explain --hot-plug)")
    .option(
      "--sent-events <keys>",
      "the daemon's: the Warning events its last reconcile recorded on the pod (keys), not again",
    )
    .action(async (pod: string, flags: Record<string, string | boolean | undefined>) => {
      const { hotplugMain } = await COMMANDS.hotplug.load();
      setExit(await hotplugMain(pod, flags as never));
    });
}

function addRecordsCommand(program: Command, setExit: SetExit): void {
  const records = program
    .command("records")
    .description("inspect and remove the container records DEL runs from");
  // `plexus records` alone: its help, as an answer (stdout, exit 0); a typo is an error.
  records.allowExcessArguments(true).action(() => {
    if (records.args.length === 0) return records.outputHelp();
    const known = "list, show, rm, retry";
    const what = `error: unknown command '${records.args[0]}'`;
    process.stderr.write(`${what} for plexus records (${known})\n`);
    setExit(ExitCode.Usage);
  });
  const run = async (
    action: "list" | "show" | "rm",
    id: string | undefined,
    flags: Record<string, string | boolean | undefined>,
  ) => {
    const { recordsMain } = await COMMANDS[`records ${action}`].load();
    setExit(await recordsMain(action, id, flags as never));
  };
  const withDir = (c: Command) =>
    common(c).option(
      "--cni-dir <dir>",
      "Plexus's state directory (default: the config's cniDir, /var/lib/cni/plexus)",
    );
  withDir(
    records
      .command("list")
      .description("list the records: pod, networks, and whether the sandbox is gone (stale)"),
  ).action((flags) => run("list", undefined, flags));
  withDir(
    records
      .command("show")
      .argument("<id>", "record ID (from list) or container ID")
      .description("print one record"),
  ).action((id: string, flags) => run("show", id, flags));
  withDir(
    records
      .command("rm")
      .argument("<id>", "record ID (from list) or container ID")
      .description("remove a record"),
  )
    .option(
      "--teardown",
      "first run DEL for its attachments, in reverse, as DEL does; the record stays if that fails",
    )
    .action((id: string, flags) => run("rm", id, flags));
  common(
    records
      .command("retry")
      .description("retry every pending record's teardown now, as the daemon's housekeeping does"),
  )
    .option("--housekeeper <seconds>", "(the daemon's) DELs leave pending records to it this long")
    .action(async (flags) => {
      const { recordsRetryMain } = await COMMANDS["records retry"].load();
      setExit(await recordsRetryMain(flags));
    });
}
