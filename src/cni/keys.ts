/**
 * Key matching as Go's `encoding/json` does it (M1; Plexus decodes like the Go programs it
 * replaces): a JSON key selects a field whose name equals it exactly, else one whose name equals it
 * ignoring case. Multus, libcni and the reference plugins decode their configs this way, so
 * `readinessIndicatorFile`, `ReadinessIndicatorFile` and Multus's own `readinessindicatorfile` are
 * one key. Two keys of one object that differ only in case are refused before this runs
 * (assertNoCaseCollisions, B17), so each field is given at most once. Cheap: one Map per key set,
 * built once, and one pass over the object's keys.
 */

/** The canonical spellings of a set of keys, looked up by their lower-case form. */
export class KeySet {
  readonly names: readonly string[];
  private readonly byLower: Map<string, string>;
  constructor(names: readonly string[]) {
    this.names = names;
    this.byLower = new Map(names.map((name) => [name.toLowerCase(), name]));
  }
  /** The canonical spelling `key` selects (exact first, then ignoring case), or undefined. */
  match(key: string): string | undefined {
    if (this.byLower.get(key.toLowerCase()) === key) return key;
    return this.byLower.get(key.toLowerCase());
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

/** The value of `name` in `obj` as Go would decode it into a field of that name (exact key first). */
export function getKeyFold(obj: Record<string, unknown>, name: string): unknown {
  if (Object.hasOwn(obj, name)) return obj[name];
  const lower = name.toLowerCase();
  for (const key of Object.keys(obj)) if (key.toLowerCase() === lower) return obj[key];
  return undefined;
}

/** Whether `obj` has a key that Go would decode into a field named `name`. */
export function hasKeyFold(obj: Record<string, unknown>, name: string): boolean {
  if (Object.hasOwn(obj, name)) return true;
  const lower = name.toLowerCase();
  return Object.keys(obj).some((key) => key.toLowerCase() === lower);
}
