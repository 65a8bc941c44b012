/** Maps zod issues to a CNI error that names the key path and the value found (N4.1.x, C2.3: docs/conformance.md). */
import type * as z from "zod/mini";
import { CniError, Code } from "./errors";

function valueAt(root: unknown, path: readonly PropertyKey[]): unknown {
  let v = root;
  for (const key of path) {
    if (v === null || typeof v !== "object") return undefined;
    v = (v as Record<PropertyKey, unknown>)[key];
  }
  return v;
}

function showValue(v: unknown): string {
  if (v === undefined) return "missing";
  const s = JSON.stringify(v) ?? String(v);
  return s.length > 60 ? `${s.slice(0, 60)}…` : s;
}

export function formatPath(path: readonly PropertyKey[]): string {
  return path.reduce<string>(
    (acc, k) => (typeof k === "number" ? `${acc}[${k}]` : acc ? `${acc}.${String(k)}` : String(k)),
    "",
  );
}

/** Parses `value` with `schema`; on failure throws code 7 (or `code`) naming the first issues. */
export function parseWithSchema<S extends z.ZodMiniType>(
  schema: S,
  value: unknown,
  what: string,
  code: Code = Code.InvalidNetworkConfig,
): z.output<S> {
  const r = schema.safeParse(value);
  if (r.success) return r.data;
  const issues = r.error.issues.slice(0, 3).map((issue) => {
    const at = formatPath(issue.path);
    return `${at ? `key ${JSON.stringify(at)}` : "the value"}: ${issue.message} (found ${showValue(valueAt(value, issue.path))})`;
  });
  const more = r.error.issues.length > 3 ? ` and ${r.error.issues.length - 3} more` : "";
  throw new CniError(code, `${what} is invalid: ${issues.join("; ")}${more}`);
}
