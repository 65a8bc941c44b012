/**
 * The shapes of the JSON Plexus reads (its own config, conflists, delegate results, Multus's
 * cache), checked by small composable functions: each takes a value, its key path and a list to
 * add problems to, and returns the value (objects and arrays copied). It replaces a schema library
 * (zod/mini) whose schemas every CNI process built before the first byte was parsed (what that
 * cost: docs/benchmarks.md, "Levers, measured"); these are plain closures.
 *
 * Only what these configs need: strings, booleans, numbers with bounds, literals, arrays, records
 * and objects that keep the keys they do not name (a plugin's own keys pass through).
 */
import { isPlainObject, numberValue } from "./json";

type KeyPath = readonly (string | number)[];

export interface Problem {
  path: KeyPath;
  message: string;
}

/** Checks `value` at `path`; adds what is wrong to `problems`; returns the value as checked. */
export interface Shape<T> {
  (value: unknown, path: KeyPath, problems: Problem[]): T;
  /** Set by {@link optional}: an object may leave this key out. */
  readonly optional?: true;
}

export type Infer<S> = S extends Shape<infer T> ? T : never;

type ShapeMap = Record<string, Shape<unknown>>;
type OptionalKeys<M extends ShapeMap> = {
  [K in keyof M]: M[K] extends { optional: true } ? K : never;
}[keyof M];
type RequiredKeys<M extends ShapeMap> = Exclude<keyof M, OptionalKeys<M>>;
type ObjectOf<M extends ShapeMap> = { [K in RequiredKeys<M>]: Infer<M[K]> } & {
  [K in OptionalKeys<M>]?: Exclude<Infer<M[K]>, undefined>;
} & { [key: string]: unknown };

/** An object shape, with the map of the keys it names (for the lists of known keys). */
export interface ObjectShape<M extends ShapeMap> extends Shape<ObjectOf<M>> {
  readonly keys: M;
}

/**
 * A check on the value's JSON type, with the message a person reads when it fails (the error that
 * carries it shows the value found: src/cni/schema-error.ts).
 */
function typed<T>(test: (v: unknown) => boolean, expected: string, message?: string): Shape<T> {
  return (value, path, problems) => {
    if (!test(value)) problems.push({ path, message: message ?? `expected ${expected}` });
    return value as T;
  };
}

export interface StringOptions {
  /** What to say when the value is not a string (or, with `nonEmpty`, empty). */
  message?: string;
  nonEmpty?: boolean;
}

export function string(options: StringOptions = {}): Shape<string> {
  return options.nonEmpty
    ? typed((v) => typeof v === "string" && v !== "", "a non-empty string", options.message)
    : typed((v) => typeof v === "string", "a string", options.message);
}
export const boolean = (): Shape<boolean> => typed((v) => typeof v === "boolean", "a boolean");
export const unknown = (): Shape<unknown> => (value) => value;

export interface NumberBounds {
  /** Whole numbers only (a safe integer). */
  int?: boolean;
  /** > 0. */
  positive?: boolean;
  /** ≥ 0. */
  nonnegative?: boolean;
  /** ≤ max. */
  max?: number;
}

/**
 * A finite number within `bounds`; one kept as written (json.ts `exactNumbers`: `1e2` in a
 * config decoded for its delegates) is checked, and returned, as the number it denotes.
 */
export function number(bounds: NumberBounds = {}): Shape<number> {
  return (input, path, problems) => {
    const value = numberValue(input);
    const fail = (message: string) => problems.push({ path, message });
    if (typeof value !== "number" || !Number.isFinite(value)) fail(`expected a number`);
    else if (bounds.int && !Number.isSafeInteger(value)) fail("expected a whole number");
    else if (bounds.positive && !(value > 0)) fail("expected a number greater than 0");
    else if (bounds.nonnegative && !(value >= 0)) fail("expected a number of 0 or more");
    else if (bounds.max !== undefined && value > bounds.max)
      fail(`expected a number of at most ${bounds.max}`);
    return value as number;
  };
}

/** One of the given strings or booleans, exactly. */
export function literal<const L extends readonly (string | boolean)[]>(
  ...allowed: L
): Shape<L[number]> {
  const shown = allowed.map((a) => JSON.stringify(a)).join(" or ");
  return typed((v) => allowed.includes(v as L[number]), shown, `expected ${shown}`);
}

/** The first of `shapes` the value fits (each tried on its own, so one's problems do not leak). */
export function union<S extends readonly Shape<unknown>[]>(
  shapes: S,
  expected: string,
): Shape<Infer<S[number]>> {
  return (value, path, problems) => {
    for (const s of shapes) {
      const mine: Problem[] = [];
      const out = s(value, path, mine);
      if (mine.length === 0) return out as Infer<S[number]>;
    }
    problems.push({ path, message: `expected ${expected}` });
    return value as Infer<S[number]>;
  };
}

/** A key an object may leave out (an explicit `undefined` cannot come from JSON). */
export function optional<T>(shape: Shape<T>): Shape<T | undefined> & { readonly optional: true } {
  const check = ((value, path, problems) =>
    value === undefined ? undefined : shape(value, path, problems)) as Shape<T | undefined>;
  return Object.assign(check, { optional: true as const });
}

export function nullable<T>(shape: Shape<T>): Shape<T | null> {
  return (value, path, problems) => (value === null ? null : shape(value, path, problems));
}

export interface ArrayOptions {
  /** At least this many items, else `message` (or a default). */
  min?: number;
  message?: string;
  /** What to say when the value is not an array. */
  typeMessage?: string;
}

export function array<T>(item: Shape<T>, options: ArrayOptions = {}): Shape<T[]> {
  return (value, path, problems) => {
    if (!Array.isArray(value)) {
      problems.push({ path, message: options.typeMessage ?? "expected an array" });
      return value as T[];
    }
    if (options.min !== undefined && value.length < options.min)
      problems.push({ path, message: options.message ?? `expected at least ${options.min} items` });
    return value.map((v, i) => item(v, [...path, i], problems));
  };
}

/** An object whose values all fit `value` (JSON keys are strings already). */
export function record<T>(value: Shape<T>): Shape<Record<string, T>> {
  return (input, path, problems) => {
    if (!isPlainObject(input)) {
      problems.push({ path, message: `expected an object` });
      return input as Record<string, T>;
    }
    const out: Record<string, T> = {};
    for (const [k, v] of Object.entries(input)) out[k] = value(v, [...path, k], problems);
    return out;
  };
}

/**
 * An object with the keys of `keys` checked and every other key kept as it is: a plugin's or a
 * runtime's own keys are not Plexus's to refuse.
 */
export function object<M extends ShapeMap>(keys: M): ObjectShape<M> {
  const entries = Object.entries(keys);
  const check = ((input, path, problems) => {
    if (!isPlainObject(input)) {
      problems.push({ path, message: `expected an object` });
      return input;
    }
    const out: Record<string, unknown> = { ...input };
    for (const [k, shape] of entries) {
      // A missing required key is checked as undefined: its shape says what was expected there.
      const v = shape(input[k], [...path, k], problems);
      if (v !== undefined) out[k] = v;
    }
    return out;
  }) as Shape<ObjectOf<M>>;
  return Object.assign(check, { keys });
}

/** Checks `value` against `shape`: the value as checked, or every problem found. */
export function check<T>(
  shape: Shape<T>,
  value: unknown,
): { ok: true; value: T } | { ok: false; problems: Problem[] } {
  const problems: Problem[] = [];
  const out = shape(value, [], problems);
  return problems.length === 0 ? { ok: true, value: out } : { ok: false, problems };
}
