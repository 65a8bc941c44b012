/**
 * `plexus uninstall`: takes off a node what `plexus install` put there, in the order that keeps
 * new pods working: first Plexus's config (from then on the runtime runs the primary network's
 * config alone), then the plugin's kubeconfig and credential copies, then the binary. Only the
 * names the installer writes are removed (and the temp files its atomic writes leave when killed);
 * the primary network's config, anything else in the conf dir and the NetworkAttachmentDefinitions
 * are never touched. Plexus's state dir (container records) stays unless asked: a record is what a
 * later reinstall needs to tear down a pod Plexus attached.
 */
import { lstatSync, readdirSync, rmdirSync, statSync } from "node:fs";
import { basename, dirname, join, posix } from "node:path";
import { asCniError, CniError, Code } from "../cni/errors";
import type { Logger } from "../log/logger";
import { ioError, removeFile } from "../store/atomic-file";
import * as own from "../store/own-names";
import { type HostPath, PLEXUS_CONF_NAME, toHost, toLocal } from "./options";
import { ExitCode } from "../command/exit-codes";
import { keptCopiesOf, readKeptCopies, restorable } from "./kept-copies";
import { listGuards, removeGuard, sweepGuardTemps } from "./multus-guard";

/** The flags as commander hands them over. */
export interface UninstallFlags {
  cniConfDir: string;
  cniBinDir: string;
  hostPrefix: string;
  kubeconfigFileHost: string;
  cniDir: string;
  removeState?: boolean | undefined;
  wait?: boolean | undefined;
}

export interface UninstallPlan {
  plexusConf: HostPath;
  /** The kubeconfig and the token and CA copies the installer keeps beside it. */
  credentials: HostPath[];
  credentialsDir: HostPath;
  binary: HostPath;
  cniDir: HostPath;
  removeState: boolean;
  /** --host-prefix: where the node's root is mounted ("" on the node itself). */
  hostPrefix: string;
}

function absolute(value: string, flag: string): string {
  if (!posix.isAbsolute(value))
    throw new CniError(
      Code.InvalidNetworkConfig,
      `plexus uninstall: ${flag} must be an absolute path, got ${JSON.stringify(value)}`,
    );
  return posix.normalize(value);
}

/** The node's root (the container's, with --host-prefix) is never a state dir to empty. */
function stateDir(dir: HostPath, removeState: boolean): HostPath {
  if (removeState && (dir.host === "/" || posix.normalize(dir.local) === "/"))
    throw new CniError(
      Code.InvalidNetworkConfig,
      `plexus uninstall: --cni-dir ${JSON.stringify(dir.host)} is the root of the node ` +
        "(or of --host-prefix); --remove-state removes Plexus's state dir only " +
        "(default /var/lib/cni/plexus)",
    );
  return dir;
}

/** The files to remove, as the installer named them (same flags, same defaults). */
export function planUninstall(flags: UninstallFlags): UninstallPlan {
  const prefix = flags.hostPrefix;
  if (prefix !== "" && !posix.isAbsolute(prefix))
    throw new CniError(
      Code.InvalidNetworkConfig,
      `plexus uninstall: --host-prefix must be absolute or empty, got ${JSON.stringify(prefix)}`,
    );
  const fromLocal = (local: string): HostPath => ({ local, host: toHost(local, prefix) });
  const fromHost = (host: string): HostPath => ({ local: toLocal(host, prefix), host });
  const confDir = absolute(flags.cniConfDir, "--cni-conf-dir");
  const binDir = absolute(flags.cniBinDir, "--cni-bin-dir");
  const kubeconfig = fromHost(absolute(flags.kubeconfigFileHost, "--kubeconfig-file-host"));
  const credDir = posix.dirname(kubeconfig.host);
  return {
    plexusConf: fromLocal(join(confDir, PLEXUS_CONF_NAME)),
    credentials: [
      kubeconfig,
      fromHost(posix.join(credDir, "token")),
      fromHost(posix.join(credDir, "ca.crt")),
    ],
    credentialsDir: fromHost(credDir),
    binary: fromLocal(join(binDir, "plexus")),
    cniDir: stateDir(fromHost(absolute(flags.cniDir, "--cni-dir")), flags.removeState ?? false),
    removeState: flags.removeState ?? false,
    hostPrefix: prefix,
  };
}

/** Removes `path` and the temp files an atomic write of it leaves when killed (`.<name>.tmp-…`). */
async function removeWithTemps(path: HostPath, log: Logger): Promise<void> {
  const dir = dirname(path.local);
  const target = basename(path.local);
  let names: string[] = [];
  try {
    names = readdirSync(dir);
  } catch {
    names = [];
  }
  for (const name of names) {
    if (own.parseTempName(name)?.target === target) await removeFile(join(dir, name));
  }
  if (!names.includes(basename(path.local))) return;
  await removeFile(path.local);
  log.info({ path: path.host }, "removed");
}

function isSymlink(path: string): boolean {
  try {
    return lstatSync(path).isSymbolicLink();
  } catch {
    return false;
  }
}

/** Removes the credentials dir when it is empty now; anything else in it is someone else's. */
function removeDirIfEmpty(dir: HostPath, log: Logger): void {
  try {
    if (readdirSync(dir.local).length > 0) {
      log.warn({ dir: dir.host }, "left in place: it holds files Plexus did not write");
      return;
    }
    rmdirSync(dir.local);
    log.info({ dir: dir.host }, "removed");
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "ENOENT") throw err;
  }
}

function countRecords(cniDir: string): number {
  try {
    const names = readdirSync(join(cniDir, "records"));
    return names.filter((n) => own.isOwnStateName("records", n) && !n.startsWith(".")).length;
  } catch {
    return 0;
  }
}

/**
 * --remove-state: only Plexus's own entries go (own-names.ts), then the dirs left empty. A dir
 * that is not Plexus's state (the parent of the state dir, a Multus DaemonSet's value, holds
 * host-local's reservations) is refused whole, before anything in it is removed.
 */
function removeState(plan: UninstallPlan, log: Logger): void {
  const dir = plan.cniDir;
  let why: string | undefined;
  try {
    why = own.notStateDirReason(dir.local);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return;
    throw ioError(`cannot read the state dir ${dir.host}`, err);
  }
  if (why)
    throw new CniError(
      Code.InvalidNetworkConfig,
      `--remove-state: ${dir.host} does not look like Plexus's state dir ` +
        `(records/, results/, locks/, pending/): ${why}; nothing in it was removed ` +
        "(is --cni-dir the plugin's cniDir?)",
    );
  const records = countRecords(dir.local);
  const { removed, left } = own.removeOwnState(dir.local);
  const shown = left.slice(0, 20).map((p) => toHost(p, plan.hostPrefix));
  if (left.length > 0)
    log.warn(
      { dir: dir.host, removed, records, left: shown },
      "state dir: Plexus's own files removed; the files listed are not Plexus's and stay in place",
    );
  else log.info({ dir: dir.host, removed, records }, "state dir removed (--remove-state)");
}

function handleState(plan: UninstallPlan, log: Logger): void {
  if (plan.removeState) return removeState(plan, log);
  const records = countRecords(plan.cniDir.local);
  let exists = false;
  try {
    exists = statSync(plan.cniDir.local).isDirectory();
  } catch {
    exists = false;
  }
  if (!exists) return;
  if (records > 0)
    log.warn(
      { dir: plan.cniDir.host, records },
      "state dir kept: it records pods Plexus attached; deleting such a pod from now on tears " +
        "down its default network only, so its secondary networks' IP reservations may leak",
    );
  else
    log.info(
      { dir: plan.cniDir.host },
      "state dir kept (no pod records in it; --remove-state removes it)",
    );
}

/** The names in the node's CNI config directory; none when it cannot be listed (nothing to do). */
function configDirNames(dir: string): string[] {
  try {
    return readdirSync(dir);
  } catch {
    return [];
  }
}

/**
 * A config the take-over moved aside (Multus's) stays where it is: with Plexus's config gone the
 * runtime runs whatever config sorts first now, so the person uninstalling is told which file to
 * bring back (the newest that does not wrap Plexus, as the way back picks it) and which not to.
 */
function warnMovedAside(plan: UninstallPlan, log: Logger): void {
  const dir = dirname(plan.plexusConf.local);
  const names = configDirNames(dir);
  for (const [config, copies] of [...keptCopiesOf(names)].sort(([a], [b]) => (a < b ? -1 : 1))) {
    const states = readKeptCopies(dir, copies);
    const back = restorable(states);
    const wrapping = states.filter((s) => s.kind === "wraps-plexus").map((s) => s.name);
    log.warn(
      { dir: dirname(plan.plexusConf.host), moved: copies.map((c) => c.name), wrapping },
      "kept the configs Plexus moved aside when it took over: " +
        (back
          ? `rename ${back.name} to ${config} (or run the installer with --no-take-over-multus ` +
            "before uninstalling) to give the node back to Multus"
          : `none of them is Multus's own config for ${config}: restart Multus's pod on this ` +
            "node to have its entrypoint write one") +
        (wrapping.length ? `; never put back ${wrapping.join(", ")}: it wraps Plexus` : ""),
    );
  }
}

/**
 * The guards the take-over put where Multus's entrypoint writes its config (multus-guard.ts): they
 * are Plexus's, and Multus must be able to write its config once Plexus is gone.
 */
function removeGuards(plan: UninstallPlan, log: Logger): void {
  const dir = dirname(plan.plexusConf.local);
  const names = configDirNames(dir);
  if (names.length === 0) return;
  sweepGuardTemps(dir, names);
  for (const name of listGuards(dir, names)) {
    if (removeGuard(dir, name))
      log.info({ path: posix.join(dirname(plan.plexusConf.host), name) }, "removed");
  }
}

/** Removes everything the plan names; returns 0, or 1 when a removal failed (logged). */
export async function runUninstall(plan: UninstallPlan, log: Logger): Promise<number> {
  try {
    // The config first: from this moment the runtime no longer runs Plexus for new pods.
    await removeWithTemps(plan.plexusConf, log);
    if (isSymlink(plan.credentialsDir.local))
      log.warn(
        { dir: plan.credentialsDir.host },
        "left in place: the credentials dir is a symbolic link; Plexus removes nothing through " +
          "one",
      );
    else {
      for (const file of plan.credentials) await removeWithTemps(file, log);
      removeDirIfEmpty(plan.credentialsDir, log);
    }
    await removeWithTemps(plan.binary, log);
    removeGuards(plan, log);
    warnMovedAside(plan, log);
    handleState(plan, log);
  } catch (err) {
    log.error({ err: asCniError(err).message }, "plexus uninstall failed");
    return ExitCode.Problem;
  }
  log.info(
    { config: plan.plexusConf.host, binary: plan.binary.host },
    "Plexus removed from this node",
  );
  return ExitCode.Ok;
}
