/**
 * The route from `bin/plexus.ts` to each CNI verb and each command: one row per verb or command,
 * the module that does it and what that module is. The CLI loads every verb and command module
 * through these rows and nowhere else, each on first use, so a call or a command initialises only
 * its own; the paths are literal, so the bundler, the dependency and dead-code checks and a reader
 * can all follow them. docs/development.md ("Where a change goes") starts here.
 *
 * Two tables, because the executable has two bundles (esbuild.config.mjs): VERBS is reached from
 * the CNI path (run-verb.ts), COMMANDS only from commands.ts, inside the commands' bundle. Neither
 * bundle keeps the other's table: each is an unused, side-effect-free constant there, so a CNI
 * call's bundle holds no command module (test/unit/cli/routes.test.ts builds both and checks).
 */

/** A row whose module is loaded on first use. */
interface Route<M> {
  /** What the module is, in a line. */
  readonly what: string;
  readonly load: () => Promise<M>;
}

/** A row answered by the file named, with no module of its own to load. */
interface Answered {
  readonly what: string;
  /** The file under src/ that answers it. */
  readonly answeredIn: string;
}

/** CNI_COMMAND → the verb's module (cli/run-verb.ts dispatches through it). */
export const VERBS = {
  ADD: {
    what: "ADD as a list of named steps: plan, record, attach each network, answer",
    load: () => import("../orchestrate/add"),
  },
  DEL: {
    what: "DEL from the container record, every attachment in reverse, past failures",
    load: () => import("../orchestrate/del"),
  },
  CHECK: {
    what: "CHECK of every attachment of the record against its cached result",
    load: () => import("../orchestrate/check"),
  },
  STATUS: {
    what: "STATUS forwarded to the default network(s) an ADD attaches first",
    load: () => import("../orchestrate/status"),
  },
  GC: {
    what: "GC: pending records retried, stale records torn down, GC forwarded to the delegates",
    load: () => import("../orchestrate/gc"),
  },
  VERSION: {
    what: "the CNI versions Plexus speaks, answered before the core loads (cni/version.ts)",
    answeredIn: "cli/main.ts",
  },
} as const satisfies Record<string, Route<unknown> | Answered>;

/** The records subcommands' one module. */
const RECORDS = {
  what: "the container records: list, show, rm (--teardown)",
  load: () => import("../ops/records"),
} as const;

/**
 * The command as typed (a subcommand after its parent, a flag that runs another module after its
 * command) → its module (cli/commands.ts, ops-commands.ts, uninstall-command.ts load through it).
 */
export const COMMANDS = {
  daemon: {
    what: "the node daemon: watch caches, the socket API, health, housekeeping and hot-plug",
    load: () => import("../daemon/main"),
  },
  install: {
    what: "the installer: binary, config and kubeconfig on the node, kept right",
    load: () => import("../install/main"),
  },
  "install --ready": {
    what: "the install container's readiness probe: is Plexus the runtime's first config",
    load: () => import("../install/ready"),
  },
  uninstall: {
    what: "takes Plexus's config, kubeconfig and binary off the node",
    load: () => import("../install/uninstall-main"),
  },
  status: {
    what: "the cluster's nodes from the API server: version, switched, ready, pods missing nets",
    load: () => import("../ops/status"),
  },
  explain: {
    what: "the plan ADD would make for a pod, without running any delegate",
    load: () => import("../ops/explain"),
  },
  "explain --hot-plug": {
    what: "a dry run of the hot-plug reconcile (the hotplug command's module)",
    load: () => import("../ops/hotplug"),
  },
  validate: {
    what: "whether this node can run each NetworkAttachmentDefinition",
    load: () => import("../ops/validate"),
  },
  "validate --preflight": {
    what: "every NAD Plexus reads differently from Multus, before the switch",
    load: () => import("../ops/multus-preflight"),
  },
  doctor: {
    what: "the node's health for Plexus, one line per check",
    load: () => import("../ops/doctor"),
  },
  hotplug: {
    what: "one hot-plug reconcile of a running pod (the daemon's --hot-plug runs it)",
    load: () => import("../ops/hotplug"),
  },
  "records list": RECORDS,
  "records show": RECORDS,
  "records rm": RECORDS,
  "records retry": {
    what: "one housekeeping pass over the records of failed DELs (the daemon's timer runs it)",
    load: () => import("../ops/housekeeping"),
  },
  completion: {
    what: "a shell completion script built from the command tree",
    load: () => import("./completion"),
  },
  "cni-versions": {
    what: "the CNI spec versions Plexus speaks",
    answeredIn: "cli/commands.ts",
  },
} as const satisfies Record<string, Route<unknown> | Answered>;
