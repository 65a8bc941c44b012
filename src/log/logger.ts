/**
 * pino, written synchronously to a file and/or stderr and never to stdout (C2.2): stdout is the
 * CNI result channel. No transports: their worker files break a single-file bundle.
 */
import pino from "pino";
import { rotateIfNeeded, type LogRotation } from "./rotate";

export type Logger = pino.Logger;

export interface LogOptions {
  logFile?: string | undefined;
  logLevel?: string | undefined;
  /** Default true (M1). */
  logToStderr?: boolean | undefined;
  /** Rotation of logFile (M1 `logOptions`). */
  logOptions?: LogRotation | undefined;
}

/** Multus's level names (M1) mapped onto pino's; pino's own names are accepted as they are. */
const MULTUS_LEVELS: Record<string, pino.LevelWithSilent> = {
  panic: "fatal",
  error: "error",
  verbose: "info",
  debug: "debug",
};
const PINO_LEVELS = new Set(["trace", "debug", "info", "warn", "error", "fatal", "silent"]);

export function toPinoLevel(level: string | undefined): pino.LevelWithSilent | undefined {
  if (level === undefined || level === "") return "fatal";
  const l = level.toLowerCase();
  return MULTUS_LEVELS[l] ?? (PINO_LEVELS.has(l) ? (l as pino.LevelWithSilent) : undefined);
}

export function createLogger(opts: LogOptions, bindings: Record<string, unknown> = {}): Logger {
  const level = toPinoLevel(opts.logLevel) ?? "fatal";
  if (level === "silent") return pino({ level: "silent" });
  const streams: pino.StreamEntry[] = [];
  if (opts.logFile && opts.logOptions) rotateIfNeeded(opts.logFile, opts.logOptions);
  if (opts.logFile) streams.push({ level, stream: pino.destination({ dest: opts.logFile, sync: true, mkdir: true }) });
  if (opts.logToStderr ?? true) streams.push({ level, stream: pino.destination({ dest: 2, sync: true }) });
  const base = { pid: process.pid, ...bindings };
  if (streams.length === 0) return pino({ level: "silent" });
  const dest = streams.length === 1 ? streams[0]!.stream : pino.multistream(streams);
  return pino({ level, base, timestamp: pino.stdTimeFunctions.isoTime }, dest);
}

/** For paths that must not log at all (VERSION) and for tests. */
export function silentLogger(): Logger {
  return pino({ level: "silent" });
}
