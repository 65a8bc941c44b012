/**
 * Maps a shape's problems to a CNI error that names the key path and the value found (N4.1.x, C2.3:
 * docs/conformance.md).
 */
import { CniError, Code } from "./errors";
import { check, type Shape } from "./shape";

function valueAt(root: unknown, path: readonly PropertyKey[]): unknown {
  let v = root;
  for (const key of path) {
    if (v === null || typeof v !== "object") return undefined;
    v = (v as Record<PropertyKey, unknown>)[key];
  }
  return v;
}

function showValue(value: unknown): string {
  if (value === undefined) return "missing";
  const s = JSON.stringify(value) ?? String(value);
  return s.length > 60 ? `${s.slice(0, 60)}…` : s;
}

function formatPath(path: readonly PropertyKey[]): string {
  return path.reduce<string>(
    (acc, k) => (typeof k === "number" ? `${acc}[${k}]` : acc ? `${acc}.${String(k)}` : String(k)),
    "",
  );
}

/** Parses `value` with `schema`; on failure throws code 7 (or `code`) naming the first issues. */
export function parseWithSchema<T>(
  schema: Shape<T>,
  value: unknown,
  what: string,
  code: Code = Code.InvalidNetworkConfig,
): T {
  const r = check(schema, value);
  if (r.ok) return r.value;
  const issues = r.problems.slice(0, 3).map((issue) => {
    const at = formatPath(issue.path);
    return (
      `${at ? `key ${JSON.stringify(at)}` : "the value"}: ${issue.message} (found ` +
      `${showValue(valueAt(value, issue.path))})`
    );
  });
  const more = r.problems.length > 3 ? ` and ${r.problems.length - 3} more` : "";
  throw new CniError(code, `${what} is invalid: ${issues.join("; ")}${more}`);
}
