/** The logger Plexus writes to, and its options (logger.ts builds it; pino-logger.ts is pino's). */
import type { LogRotation } from "./rotate";

export type LogFn = {
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
