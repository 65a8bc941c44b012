/**
 * `plexus install` (M11, N6.1): copy the binary, wait (bounded, logged) until the primary network
 * is ready, write the config and the kubeconfig, then keep them right until SIGTERM (unless --once
 * or --skip-config-watch), and on SIGTERM with --cleanup-config-on-exit remove Plexus's config.
 * Returns the exit code: 0, or 1 when the primary network never became ready or a write failed.
 */
import { existsSync, mkdirSync, statSync } from "node:fs";
import { dirname, join } from "node:path";
import { asCniError } from "../cni/errors";
import type { Logger } from "../log/logger";
import { installBinary } from "./binary";
import type { InstallOptions } from "./options";
import {
  missingCredentials,
  newReconcileState,
  reconcile,
  removePlexusConfig,
  type ReconcileState,
} from "./reconcile";
import { reconcileUserConfig } from "./user-config";
import { ChangeNotifier } from "./watch";
import { ExitCode } from "../command/exit-codes";

export interface InstallDeps {
  log: Logger;
  /** Aborted on SIGTERM/SIGINT (the CLI wires the signals; tests abort directly). */
  signal: AbortSignal;
}

/** One pass: the generated config, or the user-supplied one (--plexus-conf-file). */
function pass(
  options: InstallOptions,
  state: ReconcileState,
  log: Logger,
): Promise<{ ready: boolean; reason?: string }> {
  return options.userConfFile
    ? reconcileUserConfig(options, state, log)
    : reconcile(options, state, log);
}

/** How often "still waiting" is repeated while the primary network is not ready. */
const WAIT_LOG_EVERY_MS = 30_000;

function requireDir(path: string, flag: string): void {
  let ok = false;
  try {
    ok = statSync(path).isDirectory();
  } catch {
    ok = false;
  }
  if (!ok) throw new Error(`${flag} ${path} is not a directory (is the host path mounted?)`);
}

function copyBinary(options: InstallOptions, state: ReconcileState, log: Logger): void {
  if (!options.binFile) return;
  const dest = join(options.binDir.local, "plexus");
  const outcome = installBinary(options.binFile, dest);
  state.binarySize = statSync(dest).size;
  log.info(
    { binary: dest, source: options.binFile },
    outcome === "installed"
      ? "plexus binary installed (copy + rename)"
      : "plexus binary already up to date",
  );
}

/**
 * Reconciles until the primary network is ready; false when the deadline or an abort came first.
 */
async function waitUntilReady(
  options: InstallOptions,
  state: ReconcileState,
  notifier: ChangeNotifier,
  deps: InstallDeps,
): Promise<boolean> {
  const started = Date.now();
  let lastLog = started;
  for (;;) {
    const r = await pass(options, state, deps.log);
    if (r.ready) return true;
    const waited = Date.now() - started;
    if (waited >= options.primaryConfigTimeoutMs) {
      deps.log.error(
        { reason: r.reason, waitedSeconds: Math.round(waited / 1000) },
        "primary network not ready within --primary-config-timeout: giving up (the DaemonSet " +
          "restarts the installer)",
      );
      return false;
    }
    if (Date.now() - lastLog >= WAIT_LOG_EVERY_MS) {
      deps.log.info(
        { reason: r.reason, waitedSeconds: Math.round(waited / 1000) },
        "still waiting for the primary network",
      );
      lastLog = Date.now();
    }
    await notifier.next(deps.signal);
    if (deps.signal.aborted) return false;
  }
}

async function watchUntilAborted(
  options: InstallOptions,
  state: ReconcileState,
  notifier: ChangeNotifier,
  deps: InstallDeps,
): Promise<void> {
  while (!deps.signal.aborted) {
    await notifier.next(deps.signal);
    if (deps.signal.aborted) return;
    try {
      await pass(options, state, deps.log);
    } catch (err) {
      deps.log.error(
        { err: asCniError(err).message },
        "reconcile failed; retrying at the next change or poll",
      );
    }
  }
}

function watchedDirs(options: InstallOptions): string[] {
  const dirs = [
    options.confDir.local,
    dirname(options.kubeconfig.local),
    dirname(options.sourceTokenFile),
    options.binDir.local,
  ];
  if (options.readinessIndicator) dirs.push(dirname(options.readinessIndicator.local));
  if (options.userConfFile) dirs.push(dirname(options.userConfFile));
  return dirs.filter((d) => existsSync(d));
}

export async function runInstall(options: InstallOptions, deps: InstallDeps): Promise<number> {
  const { log } = deps;
  const state = newReconcileState();
  let notifier: ChangeNotifier | undefined;
  try {
    requireDir(options.confDir.local, "--cni-conf-dir");
    requireDir(options.binDir.local, "--cni-bin-dir");
    // A user-supplied config brings its own way to Kubernetes (checked at each pass).
    const missing = options.userConfFile ? undefined : missingCredentials(options);
    if (missing)
      throw new Error(
        `${missing}: no Plexus config written (pass --without-kubernetes for a node without ` +
          `Kubernetes)`,
      );
    if (options.withoutKubernetes)
      log.warn(
        "--without-kubernetes: the plugin config has no kubeconfig; pods get their default " +
          "network(s) only",
      );
    if (options.cniDir) mkdirSync(options.cniDir.local, { recursive: true, mode: 0o700 });
    copyBinary(options, state, log);
    notifier = new ChangeNotifier(watchedDirs(options), options.pollIntervalMs);
    const ready = await waitUntilReady(options, state, notifier, deps);
    if (!ready) return deps.signal.aborted ? await exitOnSignal(options, log) : ExitCode.Problem;
    if (options.once) return ExitCode.Ok;
    if (options.watch) {
      notifier.close();
      // The credentials dir exists now: watch it too (a deleted kubeconfig is restored at once).
      notifier = new ChangeNotifier(watchedDirs(options), options.pollIntervalMs);
      log.info(
        { pollIntervalMs: options.pollIntervalMs },
        "watching the primary config, Plexus's files and the service-account token",
      );
      await watchUntilAborted(options, state, notifier, deps);
    } else {
      log.info("--skip-config-watch: installed; waiting for SIGTERM");
      await new Promise<void>((resolve) =>
        deps.signal.aborted
          ? resolve()
          : deps.signal.addEventListener("abort", () => resolve(), { once: true }),
      );
    }
    return await exitOnSignal(options, log);
  } catch (err) {
    log.error({ err: asCniError(err).message }, "plexus install failed");
    return ExitCode.Problem;
  } finally {
    notifier?.close();
  }
}

async function exitOnSignal(options: InstallOptions, log: Logger): Promise<number> {
  log.info("terminating");
  if (options.cleanupConfigOnExit) await removePlexusConfig(options, log);
  return ExitCode.Ok;
}
