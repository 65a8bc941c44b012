/**
 * A Logger that keeps every line (level, message, bindings), for asserting what the installer said.
 */
import type { Logger } from "../../../src/log/logger";

export interface LogLine {
  level: string;
  msg: string;
  fields: Record<string, unknown>;
}

export function recordingLogger(): Logger & { lines: LogLine[]; text(): string } {
  const lines: LogLine[] = [];
  const at =
    (level: string) =>
    (a: object | string, b?: string): void => {
      if (typeof a === "string") lines.push({ level, msg: a, fields: {} });
      else lines.push({ level, msg: b ?? "", fields: a as Record<string, unknown> });
    };
  const log = {
    level: "trace",
    trace: at("trace"),
    debug: at("debug"),
    info: at("info"),
    warn: at("warn"),
    error: at("error"),
    fatal: at("fatal"),
    child: () => log,
    lines,
    text: () => lines.map((l) => `${l.level} ${l.msg} ${JSON.stringify(l.fields)}`).join("\n"),
  };
  return log;
}
