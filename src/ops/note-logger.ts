/** A Logger that keeps warnings and errors as notes for a person-facing report, and forwards everything to another logger. */
import { escapeText, quote } from "../cni/quote";
import type { Logger } from "../log/logger";

export function noteLogger(notes: string[], inner: Logger): Logger {
  const keep =
    (level: "warn" | "error") =>
    (a: object | string, b?: string): void => {
      const msg = typeof a === "string" ? a : (b ?? "");
      const fields = typeof a === "string" ? {} : (a as Record<string, unknown>);
      const extra = Object.entries(fields)
        .filter(([k]) => k !== "pod")
        .map(([k, v]) => `${k}=${escapeText(typeof v === "string" ? v : quote(v))}`);
      notes.push(extra.length ? `${msg} (${extra.join(", ")})` : msg);
      if (typeof a === "string") inner[level](a);
      else inner[level](a, b);
    };
  const log: Logger = {
    level: inner.level,
    trace: inner.trace.bind(inner),
    debug: inner.debug.bind(inner),
    info: inner.info.bind(inner),
    warn: keep("warn"),
    error: keep("error"),
    fatal: inner.fatal.bind(inner),
    child: () => log,
  };
  return log;
}
