/**
 * Logging (C2.2: never to stdout, which is the CNI result channel). pino does the writing, but it
 * is loaded only when a message can be written: at Multus's default level `panic` Plexus has
 * nothing to say (it never logs at fatal), and every pod would otherwise pay pino's start-up.
 */
import { toPinoLevel } from "./levels";
import type { LogRotation } from "./rotate";

type LogFn = {
  (obj: object, msg?: string): void;
  (msg: string): void;
};

/** The part of pino's Logger that Plexus uses; pino's Logger satisfies it. */
export interface Logger {
  level: string;
  trace: LogFn;
  debug: LogFn;
  info: LogFn;
  warn: LogFn;
  error: LogFn;
  fatal: LogFn;
  child(bindings: Record<string, unknown>): Logger;
}

export interface LogOptions {
  logFile?: string | undefined;
  logLevel?: string | undefined;
  /** Default true (M1). */
  logToStderr?: boolean | undefined;
  /** Rotation of logFile (M1 `logOptions`). */
  logOptions?: LogRotation | undefined;
  /** Human-readable lines on stderr instead of JSON (a terminal); the log file stays JSON. */
  pretty?: boolean | undefined;
}

export { toPinoLevel };

const noop: LogFn = () => {};

/** A logger that writes nothing: for `silent`, for the default level, and for tests. */
export function silentLogger(): Logger {
  const log: Logger = { level: "silent", trace: noop, debug: noop, info: noop, warn: noop, error: noop, fatal: noop, child: () => log };
  return log;
}

export async function createLogger(opts: LogOptions, bindings: Record<string, unknown> = {}): Promise<Logger> {
  const level = toPinoLevel(opts.logLevel) ?? "fatal";
  const anywhere = Boolean(opts.logFile) || (opts.logToStderr ?? true);
  if (level === "silent" || level === "fatal" || !anywhere) return silentLogger();
  const { createPinoLogger } = await import("./pino-logger");
  return createPinoLogger(opts, level, bindings);
}
