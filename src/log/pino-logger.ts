/**
 * The pino logger, loaded only when something will be logged (see logger.ts): written
 * synchronously to a file and/or stderr, never stdout. No transports: their worker files break a
 * single-file bundle.
 */
import pino from "pino";
import type { PinoLevel } from "./levels";
import type { Logger, LogOptions } from "./types";
import { prettyDestination } from "./pretty";
import { rotateIfNeeded } from "./rotate";

export function createPinoLogger(
  opts: LogOptions,
  level: Exclude<PinoLevel, "silent">,
  bindings: Record<string, unknown>,
): Logger {
  const streams: pino.StreamEntry[] = [];
  if (opts.logFile && opts.logOptions) rotateIfNeeded(opts.logFile, opts.logOptions);
  if (opts.logFile)
    streams.push({
      level,
      stream: pino.destination({ dest: opts.logFile, sync: true, mkdir: true, mode: 0o600 }),
    });
  if (opts.logToStderr ?? true)
    streams.push({
      level,
      stream: opts.pretty ? prettyDestination(2) : pino.destination({ dest: 2, sync: true }),
    });
  const dest = streams.length === 1 ? streams[0]!.stream : pino.multistream(streams);
  return pino(
    { level, base: { pid: process.pid, ...bindings }, timestamp: pino.stdTimeFunctions.isoTime },
    dest,
  );
}
