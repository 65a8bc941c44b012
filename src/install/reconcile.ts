/**
 * One pass of the installer (M11, N6.1): make the node's files what they should be now, and say
 * what changed. Plexus's config exists only while the primary config and the readiness indicator
 * file (when set) exist: before that, and again if they disappear, it is absent, so the kubelet
 * reports the network not ready instead of every new pod failing (a stale config after a reboot
 * is removed too). While ready, the config, the kubeconfig and the token and CA copies are
 * rewritten whenever they differ from what they should be: the primary config changed or was
 * replaced, another agent deleted, renamed or edited them, or the token rotated.
 */
import { existsSync, statSync } from "node:fs";
import { join } from "node:path";
import { removeFile } from "../store/atomic-file";
import { renderUnknownKeys } from "../config/unknown-keys";
import type { Logger } from "../log/logger";
import { installBinary } from "./binary";
import { readCredentials, readNodeFile, renderKubeconfig, syncFile } from "./kubeconfig";
import { MAX_CONF_FILE_BYTES } from "../npwg/conf-dir";
import type { InstallOptions } from "./options";
import { renderPlexusConfig } from "./plexus-config";
import { alertSink, type AlertSink } from "./alerts";
import { handBackToMultus } from "./hand-back";
import { choosePrimary, readConfDir, type PrimaryConfig } from "./primary";
import {
  type MultusMemory,
  newMultusMemory,
  takeOverFromMultus,
  type TakeOverOptions,
} from "./take-over";

/** What the passes remember, to log changes once rather than on every poll. */
export interface ReconcileState {
  primary?: { path: string; content: string };
  /** The config text last written (undefined before the first write). */
  written?: string;
  warnings: Set<string>;
  /** Multus's configs passed over as the primary network, as last logged (info, not warnings). */
  notes: Set<string>;
  notReadyReason?: string;
  credentialsProblem?: string;
  binarySize?: number;
  /** The take-over's and the way back's memory: each change about Multus said once (M18). */
  multus: MultusMemory;
  /** Where those are said beyond the log: Events on the install pod (made at the first pass). */
  alerts?: AlertSink;
}

export function newReconcileState(): ReconcileState {
  return { warnings: new Set(), notes: new Set(), multus: newMultusMemory() };
}

export type Readiness = { ready: true; primary: PrimaryConfig } | { ready: false; reason: string };

/** A file the installer wrote (its config), read as input: no symlink followed, never blocking. */
export function readText(path: string): string | undefined {
  const read = readNodeFile(path, { follow: false, maxBytes: MAX_CONF_FILE_BYTES });
  return "data" in read ? read.data.toString("utf8") : undefined;
}

function logNewWarnings(warnings: string[], state: ReconcileState, log: Logger): void {
  const now = new Set(warnings);
  for (const w of now)
    if (!state.warnings.has(w)) log.warn(`primary config candidate refused: ${w}`);
  state.warnings = now;
}

/** Multus's config passed over: expected while switching, said once per change, at info. */
function logNewNotes(notes: string[], state: ReconcileState, log: Logger): void {
  const now = new Set(notes);
  for (const note of now) if (!state.notes.has(note)) log.info(note);
  state.notes = now;
}

/** N6.1: the primary config and the readiness indicator file, as they are now. */
function checkReadiness(options: InstallOptions, state: ReconcileState, log: Logger): Readiness {
  const dir = readConfDir(options.confDir.local);
  const choice = choosePrimary(dir.files, { fileName: options.primaryConfigFileName });
  logNewWarnings([...dir.warnings, ...choice.warnings], state, log);
  logNewNotes(choice.notes, state, log);
  if (!choice.primary) {
    const which = options.primaryConfigFileName
      ? `${options.primaryConfigFileName} in ${options.confDir.local}`
      : `any .conf/.conflist/.json in ${options.confDir.local}`;
    return { ready: false, reason: `no usable primary network config (${which})` };
  }
  if (options.readinessIndicator && !existsSync(options.readinessIndicator.local)) {
    return {
      ready: false,
      reason: `readiness indicator file ${options.readinessIndicator.host} does not exist`,
    };
  }
  return { ready: true, primary: choice.primary };
}

/**
 * What keeps the installer from writing a kubeconfig, or undefined: no API server (flag or
 * in-cluster env), no token, no CA. Checked before anything is installed (M11).
 */
export function missingCredentials(options: InstallOptions): string | undefined {
  if (options.withoutKubernetes) return undefined;
  if (!options.apiServer)
    return (
      "no Kubernetes API server: neither --api-server nor KUBERNETES_SERVICE_HOST and " +
      "KUBERNETES_SERVICE_PORT are set"
    );
  const creds = readCredentials({
    tokenFile: options.sourceTokenFile,
    caFile: options.sourceCaFile,
  });
  return "missing" in creds
    ? `no usable Kubernetes credentials: ${creds.missing} (--token-file, --ca-file)`
    : undefined;
}

/**
 * The kubeconfig's node path (undefined with --without-kubernetes); throws when none can be
 * written.
 */
export async function syncCredentials(
  options: InstallOptions,
  state: ReconcileState,
  log: Logger,
): Promise<string | undefined> {
  if (options.withoutKubernetes) return undefined;
  // No silent "default network only" (M11): credentials that vanish later keep the last copies
  // the kubeconfig points at; with none written yet, nothing is installed.
  const problem = (why: string): string | undefined => {
    if (!existsSync(options.kubeconfig.local))
      throw new Error(
        `${why}: no Plexus config written (pass --without-kubernetes for a node without ` +
          `Kubernetes)`,
      );
    if (state.credentialsProblem !== why)
      log.error(
        { kubeconfig: options.kubeconfig.host },
        `${why}; the kubeconfig keeps the last token copied`,
      );
    state.credentialsProblem = why;
    return options.kubeconfig.host;
  };
  const creds = readCredentials({
    tokenFile: options.sourceTokenFile,
    caFile: options.sourceCaFile,
  });
  if (!options.apiServer) return problem(missingCredentials(options) ?? "no Kubernetes API server");
  if ("missing" in creds) return problem(creds.missing);
  if (state.credentialsProblem) log.info("service-account credentials available again");
  delete state.credentialsProblem;
  const ca = await syncFile(options.ca.local, creds.ca);
  const token = await syncFile(options.token.local, creds.token);
  const kc = await syncFile(
    options.kubeconfig.local,
    renderKubeconfig({
      server: options.apiServer,
      tokenFileHost: options.token.host,
      caFileHost: options.ca.host,
    }),
  );
  if (token === "updated")
    log.info({ tokenFile: options.token.host }, "service-account token rotated: copy refreshed");
  if (ca === "updated")
    log.info({ caFile: options.ca.host }, "service-account CA changed: copy refreshed");
  if (kc !== "unchanged")
    log.info(
      { kubeconfig: options.kubeconfig.host },
      kc === "created" ? "kubeconfig written" : "kubeconfig rewritten (it was changed or removed)",
    );
  return options.kubeconfig.host;
}

/** M1: unknown keys are never silent, also in the primary config the installer reads. */
function logUnknownKeys(primary: PrimaryConfig, log: Logger): void {
  for (const r of renderUnknownKeys(primary.unknownKeys, `primary config ${primary.path}`))
    log.warn(r.msg);
}

/** The binary was removed or replaced by something else since the full copy: copy again. */
export function checkBinary(options: InstallOptions, state: ReconcileState, log: Logger): void {
  if (!options.binFile || state.binarySize === undefined) return;
  const dest = join(options.binDir.local, "plexus");
  let size: number | undefined;
  try {
    size = statSync(dest).size;
  } catch {
    size = undefined;
  }
  if (size === state.binarySize) return;
  installBinary(options.binFile, dest);
  log.warn(
    { binary: dest },
    "the installed plexus binary was removed or replaced by another agent: installed again",
  );
}

function describeChange(
  current: string | undefined,
  state: ReconcileState,
  primary: PrimaryConfig,
): string {
  const before = state.primary;
  if (before && (before.path !== primary.path || before.content !== primary.content)) {
    return before.path !== primary.path
      ? `primary config is now ${primary.path} (was ${before.path}): config regenerated`
      : `primary config ${primary.path} changed: config regenerated`;
  }
  if (current === undefined)
    return state.written === undefined
      ? "config installed"
      : "config was deleted or renamed by another agent: restored";
  return state.written === undefined
    ? "config from an earlier install replaced"
    : "config was modified by another agent: restored";
}

/** One pass; returns the readiness it found. Throws (CniError 74) when a write fails. */
export async function reconcile(
  options: InstallOptions,
  state: ReconcileState,
  log: Logger,
): Promise<Readiness> {
  checkBinary(options, state, log);
  const confDir = options.confDir.local;
  const multus = { confDir, plexusName: options.plexusConf.local.slice(confDir.length + 1) };
  if (!options.takeOverMultus) await handBack(options, state, { multus, log });
  const r = checkReadiness(options, state, log);
  if (!r.ready) {
    await withdrawUntilReady(options, state, log, r.reason);
    return r;
  }
  delete state.notReadyReason;
  if (state.primary?.content !== r.primary.content) logUnknownKeys(r.primary, log);
  const text = await writePlexusConfig(options, state, log, r.primary);
  if (
    options.cniVersion &&
    options.cniVersion !== r.primary.conf.cniVersion &&
    state.primary?.content !== r.primary.content
  ) {
    log.warn(
      { cniVersion: options.cniVersion, primaryCniVersion: r.primary.conf.cniVersion },
      "--cni-version differs from the primary config's; Plexus converts the primary's results",
    );
  }
  state.primary = { path: r.primary.path, content: r.primary.content };
  state.written = text;
  // Plexus's config is in place (temp file + rename): only now may Multus's go (take-over.ts).
  if (options.takeOverMultus) {
    const { alerts } = takeOverFromMultus(multus, state.multus, log);
    await alertsOf(options, state, log).post(alerts);
  }
  return r;
}

function alertsOf(options: InstallOptions, state: ReconcileState, log: Logger): AlertSink {
  state.alerts ??= alertSink(options, log);
  return state.alerts;
}

/** --no-take-over-multus: Multus's kept config back first (hand-back.ts), said as it happens. */
async function handBack(
  options: InstallOptions,
  state: ReconcileState,
  pass: { multus: TakeOverOptions; log: Logger },
): Promise<void> {
  const { alerts } = handBackToMultus(pass.multus, state.multus, pass.log);
  await alertsOf(options, state, pass.log).post(alerts);
}

/** The primary network is not ready: no Plexus config until it is (N6.1). */
async function withdrawUntilReady(
  options: InstallOptions,
  state: ReconcileState,
  log: Logger,
  reason: string,
): Promise<void> {
  if (existsSync(options.plexusConf.local)) {
    await removeFile(options.plexusConf.local);
    log.warn(
      { config: options.plexusConf.host, reason },
      "primary network not ready: Plexus config removed until it is (N6.1)",
    );
    delete state.written;
  } else if (state.notReadyReason !== reason) {
    log.info({ reason }, "waiting for the primary network");
  }
  state.notReadyReason = reason;
}

/** Renders Plexus's config for this primary and writes it when it differs; returns the text. */
async function writePlexusConfig(
  options: InstallOptions,
  state: ReconcileState,
  log: Logger,
  primary: PrimaryConfig,
): Promise<string> {
  const kubeconfigHost = await syncCredentials(options, state, log);
  const text = renderPlexusConfig({
    primary: primary.conf,
    primaryHostPath: join(
      options.confDir.host,
      primary.path.slice(options.confDir.local.length + 1),
    ),
    networkName: options.networkName,
    cniVersion: options.cniVersion,
    kubeconfigHost,
    confDirHost: options.nadConfDirHost,
    readinessIndicatorHost: options.readinessIndicator?.host,
    cniDirHost: options.cniDir?.host,
    pluginKeys: options.pluginKeys,
  });
  const current = readText(options.plexusConf.local);
  if (current !== text) {
    const why = describeChange(current, state, primary);
    await syncFile(options.plexusConf.local, text);
    log.info(
      {
        config: options.plexusConf.host,
        primary: primary.path,
        cniVersion: primary.conf.cniVersion,
      },
      why,
    );
  }
  return text;
}

/**
 * SIGTERM with --cleanup-config-on-exit: a half-uninstalled node must not point new pods at Plexus.
 */
export async function removePlexusConfig(options: InstallOptions, log: Logger): Promise<void> {
  if (!existsSync(options.plexusConf.local)) return;
  await removeFile(options.plexusConf.local);
  log.info(
    { config: options.plexusConf.host },
    "Plexus config removed on exit (--cleanup-config-on-exit)",
  );
}
