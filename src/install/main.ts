/**
 * The process side of `plexus install`: the installer's own logger (pino on stderr, never
 * stdout), the flags resolved against the environment, SIGTERM and SIGINT turned into an abort.
 */
import { asCniError } from "../cni/errors";
import { createLogger } from "../log/logger";
import { resolveOptions, type InstallFlags } from "./options";
import { runInstall } from "./run";
import { executableToInstall, ownExecutable } from "./self";
import { ExitCode } from "../command/exit-codes";

export async function installMain(flags: Record<string, unknown>): Promise<number> {
  const f = flags as unknown as InstallFlags;
  const log = await createLogger(
    { logLevel: f.installerLogLevel, logToStderr: true, pretty: process.stderr.isTTY === true },
    { component: "install" },
  );
  let options;
  try {
    options = resolveOptions(f, process.env, executableToInstall({ own: ownExecutable() }));
  } catch (err) {
    log.error({ err: asCniError(err).message }, "invalid flags");
    // Also without a logger (--installer-log-level silent): a wrong flag must not pass unnoticed.
    if (log.level === "silent") process.stderr.write(`${asCniError(err).message}\n`);
    return ExitCode.Usage;
  }
  const abort = new AbortController();
  const onSignal = (sig: NodeJS.Signals): void => {
    log.info({ signal: sig }, "signal received");
    abort.abort();
  };
  process.on("SIGTERM", onSignal);
  process.on("SIGINT", onSignal);
  try {
    return await runInstall(options, { log, signal: abort.signal });
  } finally {
    process.off("SIGTERM", onSignal);
    process.off("SIGINT", onSignal);
  }
}
