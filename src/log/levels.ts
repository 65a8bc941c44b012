/**
 * Log levels: Multus's names (M1) mapped onto pino's. No pino import, so config parsing stays
 * light.
 */
export type PinoLevel = "trace" | "debug" | "info" | "warn" | "error" | "fatal" | "silent";

const MULTUS_LEVELS: Record<string, PinoLevel> = {
  panic: "fatal",
  error: "error",
  verbose: "info",
  debug: "debug",
};
const PINO_LEVELS = new Set<string>(["trace", "debug", "info", "warn", "error", "fatal", "silent"]);

/**
 * Multus's `debug`, `verbose`, `error`, `panic` (default `panic`) or a pino level; undefined if
 * neither.
 */
export function toPinoLevel(level: string | undefined): PinoLevel | undefined {
  if (level === undefined || level === "") return "fatal";
  const l = level.toLowerCase();
  return MULTUS_LEVELS[l] ?? (PINO_LEVELS.has(l) ? (l as PinoLevel) : undefined);
}
