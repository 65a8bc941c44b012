/**
 * Logging (C2.2: never to stdout, which is the CNI result channel). pino does the writing, but it
 * is loaded only when a message can be written: at Multus's default level `panic` Plexus has
 * nothing to say (it never logs at fatal), and every pod would otherwise pay pino's start-up.
 */
import { toPinoLevel } from "./levels";
import type { LogFn, Logger, LogOptions } from "./types";

export type { Logger, LogOptions } from "./types";
export { toPinoLevel };

const noop: LogFn = () => {};

/** A logger that writes nothing: for `silent`, for the default level, and for tests. */
export function silentLogger(): Logger {
  const log: Logger = {
    level: "silent",
    trace: noop,
    debug: noop,
    info: noop,
    warn: noop,
    error: noop,
    fatal: noop,
    child: () => log,
  };
  return log;
}

export async function createLogger(
  opts: LogOptions,
  bindings: Record<string, unknown> = {},
): Promise<Logger> {
  const level = toPinoLevel(opts.logLevel) ?? "fatal";
  const anywhere = Boolean(opts.logFile) || (opts.logToStderr ?? true);
  if (level === "silent" || level === "fatal" || !anywhere) return silentLogger();
  const { createPinoLogger } = await import("./pino-logger");
  return createPinoLogger(opts, level, bindings);
}
