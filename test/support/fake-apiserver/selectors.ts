/**
 * Field and label selectors of LIST and WATCH, parsed as kube-apiserver parses them: a field it
 * does not index for the resource, or a term it cannot parse, is 400.
 */
import { isObject } from "./patch.ts";
import { defOf, type Resource } from "./resources.ts";
import { HttpError } from "./status.ts";
import type { Filter, KubeObject } from "./types.ts";

function fieldValue(obj: KubeObject, field: string): string {
  let v: unknown = obj;
  for (const k of field.split(".")) v = isObject(v) ? v[k] : undefined;
  return v === undefined || v === null ? "" : String(v);
}

/** `a=b,c==d,e!=f` over the fields the apiserver indexes for the resource; else 400 as it does. */
export function parseFieldSelector(sel: string | null, resource: Resource): Filter {
  const terms: Filter[] = [];
  for (const raw of (sel ?? "").split(",")) {
    const term = raw.trim();
    if (!term) continue;
    const m = /^([^!=\s]+)\s*(==|!=|=)\s*(.*)$/.exec(term);
    if (!m)
      throw new HttpError(
        400,
        `invalid field selector: ${JSON.stringify(term)}: does not contain an operator`,
      );
    const [, field, op, value] = m as unknown as [string, string, string, string];
    const def = defOf(resource);
    if (!def.fields.has(field))
      throw new HttpError(400, def.fieldError?.(field) ?? `field label not supported: ${field}`);
    terms.push(
      op === "!=" ? (o) => fieldValue(o, field) !== value : (o) => fieldValue(o, field) === value,
    );
  }
  return terms.length === 0 ? () => true : (o) => terms.every((t) => t(o));
}

/** The terms of a label selector: split at commas outside parentheses. */
function selectorTerms(sel: string | null): string[] {
  const parts: string[] = [];
  let depth = 0;
  let cur = "";
  for (const ch of sel ?? "") {
    if (ch === "(") depth++;
    if (ch === ")") depth--;
    if (ch === "," && depth === 0) {
      parts.push(cur);
      cur = "";
    } else cur += ch;
  }
  parts.push(cur);
  return parts.map((p) => p.trim()).filter(Boolean);
}

type LabelTest = (labels: Record<string, unknown>) => boolean;
const KEY = "([A-Za-z0-9][-A-Za-z0-9_./]*)";

/** One requirement (`a=b`, `a!=b`, `a`, `!a`, `a in (x,y)`, `a notin (x)`); else 400. */
function labelTerm(term: string): LabelTest {
  let m: RegExpExecArray | null;
  if ((m = new RegExp(`^!\\s*${KEY}$`).exec(term))) {
    const k = m[1]!;
    return (l) => !(k in l);
  }
  if ((m = new RegExp(`^${KEY}\\s+(in|notin)\\s*\\(([^)]*)\\)$`).exec(term))) {
    const [k, op, list] = [m[1]!, m[2]!, new Set(m[3]!.split(",").map((v) => v.trim()))];
    return op === "in"
      ? (l) => k in l && list.has(String(l[k]))
      : (l) => !(k in l) || !list.has(String(l[k]));
  }
  if ((m = new RegExp(`^${KEY}\\s*(==|!=|=)\\s*([-A-Za-z0-9_.]*)$`).exec(term))) {
    const [k, op, v] = [m[1]!, m[2]!, m[3]!];
    return op === "!="
      ? (l) => !(k in l) || String(l[k]) !== v
      : (l) => k in l && String(l[k]) === v;
  }
  if ((m = new RegExp(`^${KEY}$`).exec(term))) {
    const k = m[1]!;
    return (l) => k in l;
  }
  throw new HttpError(400, `unable to parse requirement: ${JSON.stringify(term)}`);
}

/** Equality- and set-based label selectors. */
export function parseLabelSelector(sel: string | null): Filter {
  const terms = selectorTerms(sel).map(labelTerm);
  if (terms.length === 0) return () => true;
  return (o) => {
    const labels = isObject(o.metadata.labels) ? o.metadata.labels : {};
    return terms.every((t) => t(labels));
  };
}
