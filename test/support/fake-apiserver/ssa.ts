/**
 * Field ownership as kube-apiserver's field manager keeps it (structured-merge-diff v6.3.2,
 * `merge/update.go`, `typed/{tofieldset,compare,merge,remove}.go`), for the parts of a type the
 * fake serves with a schema (a ResourceClaim's status, claim-status.ts):
 *
 * - a field set: the paths a manager owns, elements spelled as in managedFields (`f:<field>`,
 *   `k:<key fields as JSON, sorted by name>`); an applied config owns its leaves, its list-map
 *   items and the keys of granular (deduced) maps, not the named fields between (ToFieldSet);
 * - Apply: the live object merged with the config (maps by key, list-maps by their key fields,
 *   everything else replaced), the manager's set becomes the config's, a field another manager
 *   owns that the config adds or changes is a conflict (409) unless forced, and what this manager
 *   applied last time and applies no more is removed only when no manager owns it any longer
 *   (prune, addBackOwnedItems, addBackDanglingItems);
 * - Update (PUT, merge patch): never a conflict; the manager gains what it added or changed, and
 *   every other manager loses what it changed or removed.
 *
 * Simplified: a list-map item the config adds goes after the live ones (SMD interleaves it with
 * the items both share); duplicate keys are refused rather than tracked.
 */
import { isObject } from "./patch.ts";

/** A type as far as ownership needs it; `map` is a deduced (granular) map, `atomic` one leaf. */
export type Schema =
  | { kind: "struct"; fields: Readonly<Record<string, Schema>> }
  | { kind: "map" }
  | { kind: "listMap"; keys: readonly string[]; elem: Schema }
  | { kind: "atomic" };

const DEDUCED: Schema = { kind: "map" };
const SEP = "\u0000";

/** A set of field paths, each its elements joined (a member: the path itself is owned). */
export type FieldSet = Set<string>;

const pathKey = (path: readonly string[]): string => path.join(SEP);
const pathOf = (key: string): string[] => (key === "" ? [] : key.split(SEP));

/** How a node is walked: a leaf (scalar, atomic, or empty on both sides), or its children. */
type Shape = "leaf" | "fields" | "items";

function shapeOf(schema: Schema, ...values: unknown[]): Shape {
  const present = values.filter((v) => v !== undefined);
  if (schema.kind === "listMap" && present.every(Array.isArray))
    return present.some((v) => (v as unknown[]).length > 0) ? "items" : "leaf";
  if ((schema.kind === "struct" || schema.kind === "map") && present.every(isObject))
    return present.some((v) => Object.keys(v as object).length > 0) ? "fields" : "leaf";
  return "leaf";
}

function fieldSchema(schema: Schema, name: string): { schema: Schema; named: boolean } {
  const named = schema.kind === "struct" ? schema.fields[name] : undefined;
  return named ? { schema: named, named: true } : { schema: DEDUCED, named: false };
}

/** The path element of a list-map item; 422 as kube-apiserver when it has none of its keys. */
function itemElement(item: unknown, keys: readonly string[]): string {
  const own = isObject(item) ? keys.filter((k) => item[k] !== undefined).sort() : [];
  if (own.length === 0)
    throw new SsaError(`associative list with keys has an element that omits all key fields`);
  const obj = item as Record<string, unknown>;
  return `k:${JSON.stringify(Object.fromEntries(own.map((k) => [k, obj[k]])))}`;
}

/** A value SMD cannot take (a list-map item without keys, two items with one key). */
export class SsaError extends Error {}

function itemsByElement(list: unknown[], keys: readonly string[]): Map<string, unknown> {
  const out = new Map<string, unknown>();
  for (const item of list) {
    const pe = itemElement(item, keys);
    if (out.has(pe)) throw new SsaError(`duplicate entries for key ${pe.slice(2)}`);
    out.set(pe, item);
  }
  return out;
}

/** ToFieldSet: what a config owns (its leaves, list-map items, deduced maps' keys). */
export function toFieldSet(value: unknown, schema: Schema, path: string[] = []): FieldSet {
  const out: FieldSet = new Set();
  walkSet(value, schema, path, out);
  return out;
}

function walkSet(value: unknown, schema: Schema, path: string[], out: FieldSet): void {
  const shape = shapeOf(schema, value);
  // An empty list-map owns nothing (visitListItems has no item); an empty map is owned itself.
  if (schema.kind === "listMap" && Array.isArray(value) && value.length === 0) return;
  if (shape === "leaf") {
    if (path.length > 0) out.add(pathKey(path));
    return;
  }
  if (shape === "items" && schema.kind === "listMap") {
    for (const [pe, item] of itemsByElement(value as unknown[], schema.keys)) {
      walkSet(item, schema.elem, [...path, pe], out);
      out.add(pathKey([...path, pe]));
    }
    return;
  }
  for (const [k, v] of Object.entries(value as Record<string, unknown>)) {
    const child = fieldSchema(schema, k);
    const p = [...path, `f:${k}`];
    walkSet(v, child.schema, p, out);
    if (!child.named) out.add(pathKey(p));
  }
}

/** live.Merge(config): maps by key, list-maps by key fields, anything else the config's. */
function mergeValues(lhs: unknown, rhs: unknown, schema: Schema): unknown {
  if (rhs === undefined) return lhs;
  if (lhs === undefined) return rhs;
  const shape = shapeOf(schema, lhs, rhs);
  if (shape === "leaf") return rhs;
  if (shape === "items" && schema.kind === "listMap") {
    const right = itemsByElement(rhs as unknown[], schema.keys);
    const out = (lhs as unknown[]).map((item) => {
      const pe = itemElement(item, schema.keys);
      return right.has(pe) ? mergeValues(item, right.get(pe), schema.elem) : item;
    });
    const left = new Set((lhs as unknown[]).map((item) => itemElement(item, schema.keys)));
    for (const [pe, item] of right) if (!left.has(pe)) out.push(item);
    return out;
  }
  const out: Record<string, unknown> = { ...(lhs as Record<string, unknown>) };
  for (const [k, v] of Object.entries(rhs as Record<string, unknown>))
    out[k] = mergeValues(out[k], v, fieldSchema(schema, k).schema);
  return out;
}

/** What changed between two objects, as SMD's Compare reports it. */
interface Comparison {
  added: FieldSet;
  modified: FieldSet;
  removed: FieldSet;
}

function compareValues(lhs: unknown, rhs: unknown, schema: Schema): Comparison {
  const cmp: Comparison = { added: new Set(), modified: new Set(), removed: new Set() };
  walkCompare({ lhs, rhs, schema, path: [], cmp });
  return cmp;
}

function walkCompare(at: {
  lhs: unknown;
  rhs: unknown;
  schema: Schema;
  path: string[];
  cmp: Comparison;
}): void {
  const { lhs, rhs, schema, path, cmp } = at;
  const key = pathKey(path);
  const shape = shapeOf(schema, lhs, rhs);
  if (shape === "leaf") {
    if (lhs === undefined) cmp.added.add(key);
    else if (rhs === undefined) cmp.removed.add(key);
    else if (JSON.stringify(canonical(lhs)) !== JSON.stringify(canonical(rhs)))
      cmp.modified.add(key);
    return;
  }
  for (const [pe, l, r, child] of children(at))
    walkCompare({ lhs: l, rhs: r, schema: child, path: [...path, pe], cmp });
  if (path.length === 0) return;
  if (lhs === undefined) cmp.added.add(key);
  else if (rhs === undefined) cmp.removed.add(key);
}

/** The children of a granular node on both sides: element, left, right, schema. */
function children(at: {
  lhs: unknown;
  rhs: unknown;
  schema: Schema;
}): Array<[string, unknown, unknown, Schema]> {
  const { lhs, rhs, schema } = at;
  if (schema.kind === "listMap") {
    const l = itemsByElement((lhs as unknown[] | undefined) ?? [], schema.keys);
    const r = itemsByElement((rhs as unknown[] | undefined) ?? [], schema.keys);
    const all = [...new Set([...l.keys(), ...r.keys()])];
    return all.map((pe) => [pe, l.get(pe), r.get(pe), schema.elem]);
  }
  const l = (lhs as Record<string, unknown> | undefined) ?? {};
  const r = (rhs as Record<string, unknown> | undefined) ?? {};
  const all = [...new Set([...Object.keys(l), ...Object.keys(r)])];
  return all.map((k) => [`f:${k}`, l[k], r[k], fieldSchema(schema, k).schema]);
}

/** JSON with object keys sorted: equal values compare equal whatever their key order. */
function canonical(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(canonical);
  if (!isObject(value)) return value;
  return Object.fromEntries(
    Object.keys(value)
      .sort()
      .map((k) => [k, canonical(value[k])]),
  );
}

/** RemoveItems: drops every member path (a whole item or field) and recurses into the others. */
function removeItems(value: unknown, remove: FieldSet, schema: Schema): unknown {
  return walkRemove(value, schema, [], remove);
}

function hasUnder(set: FieldSet, path: string[]): boolean {
  const prefix = pathKey(path) + SEP;
  for (const k of set) if (k.startsWith(prefix)) return true;
  return false;
}

function walkRemove(value: unknown, schema: Schema, path: string[], remove: FieldSet): unknown {
  const shape = shapeOf(schema, value);
  if (shape === "items" && schema.kind === "listMap") {
    return (value as unknown[]).flatMap((item) => {
      const p = [...path, itemElement(item, schema.keys)];
      if (remove.has(pathKey(p))) return [];
      return [hasUnder(remove, p) ? walkRemove(item, schema.elem, p, remove) : item];
    });
  }
  if (shape !== "fields") return value;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value as Record<string, unknown>)) {
    const p = [...path, `f:${k}`];
    if (remove.has(pathKey(p))) continue;
    out[k] = hasUnder(remove, p) ? walkRemove(v, fieldSchema(schema, k).schema, p, remove) : v;
  }
  return out;
}

/** EnsureNamedFieldsAreMembers: a struct's named field with owned children is owned itself. */
function withNamedFields(set: FieldSet, schema: Schema): FieldSet {
  const out = new Set(set);
  for (const key of set) {
    let at: Schema | undefined = schema;
    const path = pathOf(key);
    for (let i = 0; i < path.length - 1 && at; i++) {
      const pe = path[i]!;
      if (pe.startsWith("f:")) {
        const child = fieldSchema(at, pe.slice(2));
        if (child.named) out.add(pathKey(path.slice(0, i + 1)));
        at = child.schema;
      } else at = at.kind === "listMap" ? at.elem : undefined;
    }
  }
  return out;
}

const union = (...sets: FieldSet[]): FieldSet => new Set(sets.flatMap((s) => [...s]));
const minus = (a: FieldSet, b: FieldSet): FieldSet => new Set([...a].filter((k) => !b.has(k)));
const intersect = (a: FieldSet, b: FieldSet): FieldSet => new Set([...a].filter((k) => b.has(k)));

/** One manager's entry: its identity (managedFields) and the fields it owns. */
export interface Manager {
  manager: string;
  operation: "Apply" | "Update";
  apiVersion: string;
  subresource?: string;
  time?: string;
  set: FieldSet;
}

/** Apply and Update compare managers by identity: Apply's leaves out the apiVersion. */
export function managerId(
  m: Pick<Manager, "manager" | "operation" | "apiVersion" | "subresource">,
) {
  const version = m.operation === "Update" ? m.apiVersion : "";
  return JSON.stringify([m.manager, m.operation, version, m.subresource ?? ""]);
}

/** A field another manager owns that this write adds or changes, unforced: 409. */
export class ConflictError extends Error {
  readonly conflicts: Array<{ manager: Manager; paths: string[][] }>;
  constructor(conflicts: Array<{ manager: Manager; paths: string[][] }>) {
    super("conflict");
    this.conflicts = conflicts;
  }
}

/**
 * SMD's update(): other managers lose what the write changed (conflicts, unless unforced: then
 * a ConflictError) and what it removed; managers left with nothing are dropped.
 */
function settleOthers(
  state: { live: unknown; next: unknown; schema: Schema; force: boolean },
  managers: Manager[],
  self: Manager,
): Manager[] {
  const cmp = compareValues(state.live, state.next, state.schema);
  const changed = union(cmp.modified, cmp.added);
  const others = managers.filter((m) => managerId(m) !== managerId(self));
  const conflicts = others
    .map((m) => ({ manager: m, paths: [...intersect(m.set, changed)].map(pathOf) }))
    .filter((c) => c.paths.length > 0);
  if (!state.force && conflicts.length > 0) throw new ConflictError(conflicts);
  return others
    .map((m) => ({ ...m, set: minus(minus(m.set, changed), cmp.removed) }))
    .filter((m) => m.set.size > 0);
}

/** Apply: the merged object, pruned, and every manager's set after it (self last). */
export function applyConfig(input: {
  live: unknown;
  config: unknown;
  schema: Schema;
  managers: Manager[];
  self: Omit<Manager, "set">;
  force: boolean;
}): { object: unknown; managers: Manager[] } {
  const { live, config, schema } = input;
  const last = input.managers.find((m) => managerId(m) === managerId(input.self));
  const self: Manager = { ...input.self, set: toFieldSet(config, schema) };
  const current = [...input.managers.filter((m) => m !== last), self];
  const merged = mergeValues(live, config, schema);
  const pruned = last ? prune({ merged, schema, managers: current, last: last.set }) : merged;
  const others = settleOthers({ live, next: pruned, schema, force: input.force }, current, self);
  return { object: pruned, managers: self.set.size ? [...others, self] : others };
}

/**
 * prune: what the manager applied last time and applies no more goes, unless a manager (this
 * one's new config included) still owns it; what it never applied stays.
 */
function prune(state: {
  merged: unknown;
  schema: Schema;
  managers: Manager[];
  last: FieldSet;
}): unknown {
  const { merged, schema } = state;
  const named = (s: FieldSet) => withNamedFields(s, schema);
  let pruned = removeItems(merged, named(state.last), schema);
  const managed = union(...state.managers.map((m) => m.set));
  const mergedSet = named(toFieldSet(merged, schema));
  const ownedBack = union(named(toFieldSet(pruned, schema)), named(managed));
  pruned = removeItems(merged, minus(mergedSet, ownedBack), schema);
  const dangling = intersect(
    minus(mergedSet, named(toFieldSet(pruned, schema))),
    named(state.last),
  );
  return removeItems(merged, dangling, schema);
}

/** Update: other managers lose what changed; this one owns its set − removed + changed. */
export function updateObject(input: {
  live: unknown;
  next: unknown;
  schema: Schema;
  managers: Manager[];
  self: Omit<Manager, "set">;
}): Manager[] {
  const { live, next, schema } = input;
  const prev = input.managers.find((m) => managerId(m) === managerId(input.self));
  const empty: Manager = { ...input.self, set: new Set() };
  const others = settleOthers({ live, next, schema, force: true }, input.managers, prev ?? empty);
  const cmp = compareValues(live, next, schema);
  const set = union(minus(prev?.set ?? new Set(), cmp.removed), cmp.modified, cmp.added);
  return set.size ? [...others, { ...input.self, set }] : others;
}

/** A field set in managedFields' FieldsV1 form: nested objects, `.` where a node is owned too. */
export function toFieldsV1(set: FieldSet): Record<string, unknown> {
  const root: Record<string, unknown> = {};
  for (const key of [...set].sort()) {
    let node = root;
    for (const pe of pathOf(key)) node = (node[pe] ??= {}) as Record<string, unknown>;
  }
  const mark = (node: Record<string, unknown>, path: string[]) => {
    for (const [pe, child] of Object.entries(node)) {
      const c = child as Record<string, unknown>;
      const p = [...path, pe];
      if (Object.keys(c).length > 0 && set.has(pathKey(p))) c["."] = {};
      mark(c, p);
    }
  };
  mark(root, []);
  return root;
}

/** FieldsV1 back into a set: leaves and `.` are members. */
export function fromFieldsV1(fields: unknown, path: string[] = []): FieldSet {
  const out: FieldSet = new Set();
  if (!isObject(fields)) return out;
  for (const [pe, child] of Object.entries(fields)) {
    if (pe === ".") {
      out.add(pathKey(path));
      continue;
    }
    const p = [...path, pe];
    if (!isObject(child) || Object.keys(child).length === 0) out.add(pathKey(p));
    else for (const k of fromFieldsV1(child, p)) out.add(k);
  }
  return out;
}

/** A path as kube-apiserver prints it: `.status.devices[device="d",driver="x",pool="p"].data`. */
export function printPath(path: readonly string[]): string {
  return path
    .map((pe) => {
      if (pe.startsWith("f:")) return `.${pe.slice(2)}`;
      const keys = JSON.parse(pe.slice(2)) as Record<string, unknown>;
      const parts = Object.entries(keys).map(([k, v]) => `${k}=${JSON.stringify(v)}`);
      return `[${parts.join(",")}]`;
    })
    .join("");
}
