/**
 * Safe JSON decoding for everything that arrives from outside (stdin, delegate output, NADs,
 * records).
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
  /**
   * B92: for a config passed on to delegates. A number whose JavaScript text is not its JSON text
   * (`1e2`, `-0`, `1.50`, an integer beyond 2^53) is kept as that text (`JSON.rawJSON`), which
   * JSON.stringify writes back as it was: Go plugins parse such numbers themselves, and a float64
   * rendering of `12345678901234567890123` fails their ADD and DEL. Such a value is no number:
   * Plexus reads one through {@link numberValue} (shape.ts does).
   */
  exactNumbers?: boolean;
}

/** What `JSON.rawJSON` makes; ES2024's lib does not declare it yet. */
interface RawJson {
  readonly rawJSON: string;
}

const JSON_SOURCE = JSON as JSON & {
  rawJSON(text: string): RawJson;
  isRawJSON(value: unknown): value is RawJson;
};

/**
 * A JSON.parse reviver: the engine passes a primitive's source text as `context.source` (both
 * runtimes, Node and Bun, do). Numbers whose text survives the round trip stay numbers, so
 * Plexus's own numbers and a config's usual ones are read as before.
 */
function keepNumberText(_key: string, value: unknown, context?: { source?: string }): unknown {
  if (typeof value !== "number") return value;
  const source = context?.source;
  return source === undefined || source === String(value) ? value : JSON_SOURCE.rawJSON(source);
}

/**
 * Every number of a JSON text follows `:`, `[` or `,` (and whitespace); what looks like one inside
 * a string only makes the check say yes where the answer is no, never the reverse.
 */
const NUMBER_TOKEN = /[:[,]\s*(-?\d[\d.eE+-]*)/g;

/** Whether some number in `text` may not be written as JavaScript writes it back. */
function mayHaveInexactNumber(text: string): boolean {
  for (const match of text.matchAll(NUMBER_TOKEN)) {
    const literal = match[1]!;
    if (String(Number(literal)) !== literal) return true;
  }
  return false;
}

/**
 * JSON.parse with numbers kept as written (see `exactNumbers`); throws as JSON.parse does. The
 * reviver costs several times the parse, so a text whose numbers all read back as written is
 * parsed without it. A document that is a lone number is no config: it stays a number, for the
 * caller's message.
 */
export function parseExactJson(text: string): unknown {
  if (!mayHaveInexactNumber(text)) return JSON.parse(text);
  return numberValue(JSON.parse(text, keepNumberText));
}

/** A number kept as written (`exactNumbers`) as the number it denotes; any other value as it is. */
export function numberValue(value: unknown): unknown {
  return JSON_SOURCE.isRawJSON(value) ? Number(value.rawJSON) : value;
}

/**
 * A deep copy of decoded JSON. A number kept as written is shared, not copied: it is frozen, and
 * structuredClone refuses it.
 */
export function copyJson<T>(value: T): T {
  if (Array.isArray(value)) return value.map(copyJson) as T;
  if (!isPlainObject(value)) return value;
  return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, copyJson(v)])) as T;
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
    value = opts.exactNumbers ? parseExactJson(text) : JSON.parse(text);
  } catch (err) {
    // A reviver recurses: input nested thousands deep overflows the stack (valid JSON, too deep).
    if (err instanceof RangeError)
      throw new CniError(code, `${opts.what} is nested more than ${MAX_JSON_DEPTH} levels deep`);
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
    if (v === null || typeof v !== "object" || JSON_SOURCE.isRawJSON(v)) continue;
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

/** A JSON object: not null, a list, or a number kept as written (`exactNumbers`). */
export function isPlainObject(value: unknown): value is Record<string, unknown> {
  return (
    value !== null &&
    typeof value === "object" &&
    !Array.isArray(value) &&
    !JSON_SOURCE.isRawJSON(value)
  );
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

/**
 * A value for a message: quoted, and cut at 80 characters so a hostile value cannot flood a log or
 * an event.
 */
export function showValue(value: unknown): string {
  if (typeof value === "string")
    return value.length > 80
      ? `${JSON.stringify(value.slice(0, 80))}… (${value.length} characters)`
      : JSON.stringify(value);
  const s = JSON.stringify(value) ?? String(value);
  return s.length > 80 ? `${s.slice(0, 80)}… (${s.length} characters)` : s;
}
