/**
 * Human-readable log lines for a terminal (`plexus install` and `plexus daemon` run by hand):
 * pino's JSON line turned into `12:00:01.234 INFO  [daemon] message key=value …`, written
 * synchronously to the same fd. Not pino-pretty: a few lines, nothing more to load.
 */
import { writeSync } from "node:fs";

const LEVELS: Record<number, string> = {
  10: "TRACE",
  20: "DEBUG",
  30: "INFO",
  40: "WARN",
  50: "ERROR",
  60: "FATAL",
};
const OMIT = new Set(["level", "time", "msg", "pid", "hostname", "component"]);

export function formatLogLine(line: string): string {
  let o: Record<string, unknown>;
  try {
    o = JSON.parse(line) as Record<string, unknown>;
  } catch {
    return line.endsWith("\n") ? line : `${line}\n`;
  }
  const time =
    typeof o.time === "string" ? o.time.slice(11, 23) : new Date().toISOString().slice(11, 23);
  const level = (LEVELS[Number(o.level)] ?? String(o.level)).padEnd(5);
  const component = typeof o.component === "string" ? ` [${o.component}]` : "";
  const fields = Object.entries(o)
    .filter(([k]) => !OMIT.has(k))
    .map(([k, v]) => `${k}=${typeof v === "string" && !/\s/.test(v) ? v : JSON.stringify(v)}`);
  return `${time} ${level}${component} ${String(o.msg ?? "")}${fields.length ? `  ${fields.join(" ")}` : ""}\n`;
}

/** A pino destination that writes formatted lines to `fd`. */
export function prettyDestination(fd: number): { write(line: string): void } {
  return {
    write(line: string) {
      writeSync(fd, formatLogLine(line));
    },
  };
}
