/**
 * Safe JSON decoding for everything that arrives from outside (stdin, delegate output, NADs, records).
 * Bounded in size and depth, and refusing prototype keys, so hostile input is an error with a code,
 * never a crash or a polluted object (B11, B12, B17).
 */
import { CniError, Code } from "./errors";
import { describeJsonSyntaxError } from "./json-syntax";
import { foldKey } from "./keys";

export const MAX_STDIN_BYTES = 1024 * 1024;
export const MAX_JSON_DEPTH = 64;
const FORBIDDEN_KEYS = new Set(["__proto__", "constructor", "prototype"]);

export interface DecodeOptions {
  /** Names the input in messages: "stdin config", `NAD default/net-a`, … */
  what: string;
  maxBytes?: number;
  /** Code for malformed JSON; default 6 (decode error). */
  code?: Code;
}

export function decodeJson(input: string | Uint8Array, opts: DecodeOptions): unknown {
  const maxBytes = opts.maxBytes ?? MAX_STDIN_BYTES;
  const code = opts.code ?? Code.Decoding;
  const size = typeof input === "string" ? Buffer.byteLength(input) : input.byteLength;
  if (size > maxBytes) {
    throw new CniError(code, `${opts.what} is ${size} bytes, more than the ${maxBytes}-byte limit`);
  }
  const text =
    typeof input === "string"
      ? input
      : Buffer.from(input.buffer, input.byteOffset, input.byteLength).toString("utf8");
  if (text.trim() === "") throw new CniError(code, `${opts.what} is empty; expected a JSON object`);
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    // The engine's message quotes the input: the position and what was expected say enough.
    throw new CniError(code, `${opts.what} is not valid JSON ${describeJsonSyntaxError(text)}`);
  }
  // Too deep is malformed input (the caller's code); a prototype key in a config is 7 (B17), but in
  // a delegate's output (code 100) it is that delegate's fault, not the network config's.
  checkShape(value, opts.what, code, opts.code ?? Code.InvalidNetworkConfig);
  return value;
}

/** Iterative walk (no recursion, so 10⁵-deep input cannot overflow the stack). */
function checkShape(root: unknown, what: string, depthCode: Code, keyCode: Code): void {
  const stack: Array<{ v: unknown; depth: number; path: string }> = [
    { v: root, depth: 0, path: "" },
  ];
  while (stack.length) {
    const { v, depth, path } = stack.pop()!;
    if (v === null || typeof v !== "object") continue;
    if (depth >= MAX_JSON_DEPTH) {
      throw new CniError(
        depthCode,
        `${what} is nested more than ${MAX_JSON_DEPTH} levels deep (at ${path || "top level"})`,
      );
    }
    if (Array.isArray(v)) {
      v.forEach((x, i) => stack.push({ v: x, depth: depth + 1, path: `${path}[${i}]` }));
      continue;
    }
    for (const [k, x] of Object.entries(v)) {
      if (FORBIDDEN_KEYS.has(k)) {
        throw new CniError(
          keyCode,
          `${what} has the key ${JSON.stringify(k)}${path ? ` at ${path}` : ""}, which is refused`,
        );
      }
      stack.push({ v: x, depth: depth + 1, path: path ? `${path}.${k}` : k });
    }
  }
}

export function isPlainObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

/**
 * Go's JSON decoder matches keys by Unicode simple folding (keys.ts foldKey), so `"Type"` beside
 * `"type"`, or `"prevReſult"` beside `"prevResult"`, are one field to a Go delegate (a map field
 * merges them, a struct field takes the last) but two keys to Plexus. Refused in config objects
 * (B17).
 */
export function assertNoCaseCollisions(obj: Record<string, unknown>, what: string): void {
  const seen = new Map<string, string>();
  for (const k of Object.keys(obj)) {
    const fold = foldKey(k);
    const prev = seen.get(fold);
    if (prev !== undefined) {
      const both = `${showKey(prev)} and ${showKey(k)}`;
      const why = "one key to Go plugins (Go folds case as Unicode does: ſ is s, K is k)";
      throw new CniError(
        Code.InvalidNetworkConfig,
        `${what} has both ${both}; keys that differ only in case are ${why}`,
      );
    }
    seen.set(fold, k);
  }
}

/**
 * A key for a message: JSON, with anything beyond printable ASCII escaped so that `ſ` is not read
 * as `s`, and cut at 80 characters as showValue cuts a value.
 */
export function showKey(key: string): string {
  const shown = JSON.stringify(key.slice(0, 80)).replace(
    /[^\x20-\x7e]/g,
    (char) => `\\u${char.charCodeAt(0).toString(16).padStart(4, "0")}`,
  );
  return key.length > 80 ? `${shown}… (${key.length} characters)` : shown;
}

/** A value for a message: quoted, and cut at 80 characters so a hostile value cannot flood a log or an event. */
export function showValue(value: unknown): string {
  if (typeof value === "string")
    return value.length > 80
      ? `${JSON.stringify(value.slice(0, 80))}… (${value.length} characters)`
      : JSON.stringify(value);
  const s = JSON.stringify(value) ?? String(value);
  return s.length > 80 ? `${s.slice(0, 80)}… (${s.length} characters)` : s;
}
