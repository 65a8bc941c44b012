/**
 * The PATCH semantics the fake API server implements (the store applies them to the stored
 * object): RFC 7386 JSON merge patch, and the part of strategic merge patch that matters for pods.
 * JSON patch (RFC 6902) is not implemented: its content type is 415 (router.ts).
 */

export function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** RFC 7386 JSON merge patch. */
export function mergePatch(target: unknown, patch: unknown): unknown {
  if (!isObject(patch)) return patch;
  const out: Record<string, unknown> = isObject(target) ? { ...target } : {};
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) delete out[k];
    else out[k] = mergePatch(out[k], v);
  }
  return out;
}

/**
 * Strategic merge patch, the part that differs from a merge patch and matters for pods: lists of
 * objects with a `name` (containers, volumes, env…) merge by name instead of being replaced.
 * `$patch: delete` on such an element removes it.
 */
export function strategicMergePatch(target: unknown, patch: unknown): unknown {
  if (
    Array.isArray(patch) &&
    Array.isArray(target) &&
    patch.every((p) => isObject(p) && typeof p.name === "string")
  ) {
    const out = [...target];
    for (const p of patch as Record<string, unknown>[]) {
      const i = out.findIndex((t) => isObject(t) && t.name === p.name);
      if (p.$patch === "delete") {
        if (i >= 0) out.splice(i, 1);
      } else if (i >= 0) out[i] = strategicMergePatch(out[i], p);
      else out.push(p);
    }
    return out;
  }
  if (!isObject(patch)) return patch;
  const out: Record<string, unknown> = isObject(target) ? { ...target } : {};
  for (const [k, v] of Object.entries(patch)) {
    if (k === "$patch") continue;
    if (v === null) delete out[k];
    else out[k] = strategicMergePatch(out[k], v);
  }
  return out;
}
