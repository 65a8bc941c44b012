/**
 * The process side of `plexus uninstall`: its logger (pino on stderr, what `kubectl logs` shows),
 * the flags, and with --wait the wait for SIGTERM that keeps a DaemonSet's container running
 * after the removal (deploy/uninstall/ runs it so on every node).
 */
import { asCniError } from "../cni/errors";
import { createLogger } from "../log/logger";
import { planUninstall, runUninstall, type UninstallFlags } from "./uninstall";
import { ExitCode } from "../command/exit-codes";

export async function uninstallMain(flags: Record<string, unknown>): Promise<number> {
  const f = flags as unknown as UninstallFlags & { logLevel: string };
  const log = await createLogger(
    { logLevel: f.logLevel, logToStderr: true, pretty: process.stderr.isTTY === true },
    { component: "uninstall" },
  );
  let plan;
  try {
    plan = planUninstall(f);
  } catch (err) {
    log.error({ err: asCniError(err).message }, "invalid flags");
    if (log.level === "silent") process.stderr.write(`${asCniError(err).message}\n`);
    return ExitCode.Usage;
  }
  const code = await runUninstall(plan, log);
  if (!f.wait) return code;
  log.info("--wait: waiting for SIGTERM");
  await new Promise<void>((resolve) => {
    // Signal listeners alone do not keep the process alive; a timer does.
    const alive = setInterval(() => undefined, 2 ** 30);
    const done = (): void => {
      clearInterval(alive);
      process.off("SIGTERM", done);
      process.off("SIGINT", done);
      resolve();
    };
    process.on("SIGTERM", done);
    process.on("SIGINT", done);
  });
  return code;
}
