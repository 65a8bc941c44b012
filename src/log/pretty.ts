/**
 * Human-readable log lines for a terminal (`plexus install` and `plexus daemon` run by hand):
 * pino's JSON line turned into `12:00:01.234 INFO  [daemon] message key=value …`, written
 * synchronously to the same fd. Not pino-pretty: a few lines, nothing more to load.
 */
import { writeSync } from "node:fs";
import { escapeText, quote } from "../cni/quote";

const LEVELS: Record<number, string> = {
  10: "TRACE",
  20: "DEBUG",
  30: "INFO",
  40: "WARN",
  50: "ERROR",
  60: "FATAL",
};
const OMIT = new Set(["level", "time", "msg", "pid", "hostname", "component"]);

/** A field's value: a string of one word as it is, anything else quoted (B98: escaped). */
function showField(value: unknown): string {
  if (typeof value === "string" && !/\s/.test(value) && escapeText(value) === value) return value;
  return quote(value);
}

/**
 * One line, whatever the entry holds: B98, the message and the fields carry text from outside
 * (a NAD's type, a delegate's error), so every control and bidi character is escaped.
 */
export function formatLogLine(line: string): string {
  let o: Record<string, unknown>;
  try {
    o = JSON.parse(line) as Record<string, unknown>;
  } catch {
    return `${escapeText(line.endsWith("\n") ? line.slice(0, -1) : line)}\n`;
  }
  const time =
    typeof o.time === "string" ? o.time.slice(11, 23) : new Date().toISOString().slice(11, 23);
  const level = (LEVELS[Number(o.level)] ?? String(o.level)).padEnd(5);
  const component = typeof o.component === "string" ? ` [${o.component}]` : "";
  const fields = Object.entries(o)
    .filter(([k]) => !OMIT.has(k))
    .map(([k, v]) => `${k}=${showField(v)}`);
  const tail = fields.length ? `  ${fields.join(" ")}` : "";
  return `${escapeText(`${time} ${level}${component} ${String(o.msg ?? "")}${tail}`)}\n`;
}

/** A pino destination that writes formatted lines to `fd`. */
export function prettyDestination(fd: number): { write(line: string): void } {
  return {
    write(line: string) {
      writeSync(fd, formatLogLine(line));
    },
  };
}
