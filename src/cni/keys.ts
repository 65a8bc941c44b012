/**
 * Key matching as Go's `encoding/json` does it (M1; Plexus decodes like the Go programs it
 * replaces): a JSON key selects a field whose name equals it exactly, else one whose name equals it
 * under Unicode simple case folding (`strings.EqualFold`). Multus, libcni and the reference plugins
 * decode their configs this way, so `readinessIndicatorFile`, `ReadinessIndicatorFile` and Multus's
 * own `readinessindicatorfile` are one key, and so are `prevResult` and `prevReſult` (U+017F folds
 * to `s`, the Kelvin sign U+212A to `k`). Every comparison of a config key with a key Plexus
 * reads, sets, strips or refuses goes through {@link foldKey}, and nothing else: one fold, so no
 * surface can disagree with another or with Go. Two keys of one object that fold together are
 * refused before this runs (assertNoCaseCollisions, B17), so each field is given at most once.
 */
import { FOLD_RUNS } from "./fold-table";

type JsonObject = Record<string, unknown>;

const NON_ASCII = /[\u0080-\uffff]/;

/** FOLD_RUNS unpacked on first use (a non-ASCII key): start, count, stride, delta of each run. */
let runs: Int32Array | undefined;

function foldRuns(): Int32Array {
  if (runs) return runs;
  const parts = FOLD_RUNS.split(" ");
  const table = new Int32Array(parts.length * 4);
  parts.forEach((part, i) => {
    const [start, count, stride, delta] = part.split(".").map((hex) => Number.parseInt(hex, 16));
    table.set([start!, count!, stride!, delta!], i * 4);
  });
  runs = table;
  return table;
}

/** Go's fold of one non-ASCII code point: the smallest code point of its SimpleFold orbit. */
function foldCodePoint(cp: number): number {
  const table = foldRuns();
  let lo = 0;
  let hi = table.length / 4;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (table[mid * 4]! <= cp) lo = mid + 1;
    else hi = mid;
  }
  if (lo === 0) return cp;
  const at = (lo - 1) * 4;
  const offset = cp - table[at]!;
  const stride = table[at + 2]!;
  if (offset % stride !== 0 || offset / stride >= table[at + 1]!) return cp;
  return cp + table[at + 3]!;
}

/**
 * The form of `key` that Go's `encoding/json` compares when it matches a key to a field: two keys
 * select the same field exactly when their folds are equal. ASCII letters fold to upper case, any
 * other code point to the smallest of its `unicode.SimpleFold` orbit (`ſ` to `S`, `K` to `K`), and
 * a lone surrogate (`"\ud800"` in JSON) to U+FFFD, as Go's decoder reads it.
 */
export function foldKey(key: string): string {
  // The common case, a key of ASCII only, folds to its upper case (as in Go's foldName).
  return NON_ASCII.test(key) ? foldUnicode(key) : key.toUpperCase();
}

function foldUnicode(key: string): string {
  let out = "";
  for (const char of key) {
    const cp = char.codePointAt(0)!;
    if (cp < 0x80) out += char.toUpperCase();
    else if (cp >= 0xd800 && cp <= 0xdfff) out += "\ufffd";
    else out += String.fromCodePoint(foldCodePoint(cp));
  }
  return out;
}

/** The canonical spellings of a set of keys, looked up by their fold. */
export class KeySet {
  readonly names: readonly string[];
  private readonly exact: Set<string>;
  private readonly byFold: Map<string, string>;
  constructor(names: readonly string[]) {
    this.names = names;
    this.exact = new Set(names);
    this.byFold = new Map();
    // As Go: of two names with one fold, a folded key selects the first.
    for (const name of names) {
      const fold = foldKey(name);
      if (!this.byFold.has(fold)) this.byFold.set(fold, name);
    }
  }
  /** The canonical spelling `key` selects (exact first, then by fold), or undefined. */
  match(key: string): string | undefined {
    return this.exact.has(key) ? key : this.byFold.get(foldKey(key));
  }
  /** Whether `key` selects one of these keys. */
  has(key: string): boolean {
    return this.match(key) !== undefined;
  }
}

export interface CanonicalKeys {
  /** The object with every known key spelled canonically; unknown keys and every value as given. */
  value: Record<string, unknown>;
  /** Keys of the object that select no known key, in the object's order. */
  unknown: string[];
}

/**
 * The object with each key that selects a known one renamed to its canonical spelling. Returns the
 * same object when nothing needed renaming (the common case costs no copy).
 */
export function canonicalizeKeys(obj: Record<string, unknown>, keys: KeySet): CanonicalKeys {
  const unknown: string[] = [];
  let renamed = false;
  for (const key of Object.keys(obj)) {
    const name = keys.match(key);
    if (name === undefined) unknown.push(key);
    else if (name !== key) renamed = true;
  }
  if (!renamed) return { value: obj, unknown };
  const value: Record<string, unknown> = {};
  for (const [key, v] of Object.entries(obj)) value[keys.match(key) ?? key] = v;
  return { value, unknown };
}

/**
 * The value of `name` in `obj` as Go decodes it into a field of that name: of every key that
 * folds to `name`, the last one (Go sets the field once per key, in the document's order).
 */
export function getKeyFold(obj: Record<string, unknown>, name: string): unknown {
  const fold = foldKey(name);
  let value: unknown;
  for (const key of Object.keys(obj)) if (key === name || foldKey(key) === fold) value = obj[key];
  return value;
}

/** Whether `obj` has a key that Go would decode into a field named `name`. */
export function hasKeyFold(obj: Record<string, unknown>, name: string): boolean {
  if (Object.hasOwn(obj, name)) return true;
  const fold = foldKey(name);
  return Object.keys(obj).some((key) => foldKey(key) === fold);
}

/**
 * A copy of `obj` without any spelling of `names`: what Plexus strips or is about to set itself
 * must not survive in a spelling a Go plugin reads as the same field (it would merge into a map
 * field, or win over Plexus's value when it comes later).
 */
export function withoutKeysFold(obj: JsonObject, names: KeySet | readonly string[]): JsonObject {
  const keys = names instanceof KeySet ? names : new KeySet(names);
  return Object.fromEntries(Object.entries(obj).filter(([key]) => !keys.has(key)));
}

/** A copy of `obj` with `values` set, every other spelling of their keys removed first. */
export function withKeysFold<T extends JsonObject>(obj: T, values: JsonObject): T {
  return { ...withoutKeysFold(obj, Object.keys(values)), ...values } as T;
}
