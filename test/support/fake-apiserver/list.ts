/**
 * LIST as kube-apiserver's cacher decides it: resourceVersion unset is a quorum read from "etcd";
 * "0", or N without limit, is served from the watch cache (limit ignored, as before servers could
 * page from it); limit with N, Exact and continue go to "etcd", at a snapshot of the requested
 * revision, 410 Expired once compacted — continue tokens included, with the inconsistent-continue
 * token kube-apiserver hands back.
 */
import type { Resource } from "./resources.ts";
import { HttpError } from "./status.ts";
import type { ObjectStore } from "./store.ts";
import type { Filter, KubeObject } from "./types.ts";

/**
 * A LIST's options, validated as kube-apiserver validates ListOptions (422 for a bad combination,
 * as it).
 */
export interface ListOptions {
  resourceVersion: string;
  match: string;
  limit: number;
  continue: string;
}

interface ListPage {
  metadata: Record<string, unknown>;
  items: KubeObject[];
}

function invalidListOptions(why: string): HttpError {
  return new HttpError(422, `ListOptions.meta.k8s.io "" is invalid: ${why}`, {
    group: "meta.k8s.io",
    kind: "ListOptions",
  });
}

/** What resourceVersionMatch forbids in combination (each a `Forbidden` cause of one 422). */
function matchForbidden(options: ListOptions): string[] {
  const forbidden: string[] = [];
  if (!options.match) return forbidden;
  if (!options.resourceVersion)
    forbidden.push("resourceVersionMatch is forbidden unless resourceVersion is provided");
  if (options.continue)
    forbidden.push("resourceVersionMatch is forbidden when continue is provided");
  if (options.match !== "Exact" && options.match !== "NotOlderThan")
    throw invalidListOptions(`resourceVersionMatch: Unsupported value: "${options.match}"`);
  if (options.match === "Exact" && options.resourceVersion === "0")
    forbidden.push('resourceVersionMatch "exact" is forbidden for resourceVersion "0"');
  return forbidden;
}

export function listOptions(query: URLSearchParams): ListOptions {
  const options = {
    resourceVersion: query.get("resourceVersion") ?? "",
    match: query.get("resourceVersionMatch") ?? "",
    limit: Math.max(0, Number(query.get("limit") ?? 0) || 0),
    continue: query.get("continue") ?? "",
  };
  const rv = options.resourceVersion;
  if (rv !== "" && !/^\d+$/.test(rv))
    throw new HttpError(400, `invalid resource version: ${JSON.stringify(rv)}`);
  const forbidden = matchForbidden(options);
  if (forbidden.length)
    throw invalidListOptions(
      forbidden.map((f) => `resourceVersionMatch: Forbidden: ${f}`).join(", "),
    );
  if (options.continue && rv !== "" && rv !== "0")
    throw new HttpError(400, "specifying resource version is not allowed when using continue");
  return options;
}

/**
 * The cacher's choice (as before consistent reads from the cache): etcd for a quorum read (no
 * resourceVersion), a continuation, a limit with a resourceVersion other than "0", or Exact; the
 * watch cache for "0" (its limit ignored) and "not older than N" without a limit.
 */
export function servesFromStorage(options: ListOptions): boolean {
  return (
    options.resourceVersion === "" ||
    options.continue !== "" ||
    (options.limit > 0 && options.resourceVersion !== "0") ||
    (options.match !== "" && options.match !== "NotOlderThan")
  );
}

/**
 * The cacher (after waiting for its cache) and etcd (a future revision) both answer 504 with this
 * cause.
 */
function tooLargeResourceVersion(rv: number, current: number): HttpError {
  const e = new HttpError(504, `Too large resource version: ${rv}, current: ${current}`, {
    causes: [{ reason: "ResourceVersionTooLarge", message: "Too large resource version" }],
    retryAfterSeconds: 1,
  });
  e.reason = "Timeout";
  return e;
}

/** A continue token: the revision of the first page and the key to resume at (base64url JSON). */
export function encodeContinue(rv: number, start: string): string {
  return Buffer.from(JSON.stringify({ v: "meta.k8s.io/v1", rv, start })).toString("base64url");
}

export function decodeContinue(token: string): { rv: number; start: string } {
  try {
    const t = JSON.parse(Buffer.from(token, "base64url").toString("utf8")) as Record<
      string,
      unknown
    >;
    if (t.v !== "meta.k8s.io/v1" || typeof t.rv !== "number" || typeof t.start !== "string")
      throw new Error();
    return { rv: t.rv, start: t.start };
  } catch {
    throw new HttpError(400, "continue key is not valid: the token does not decode");
  }
}

/**
 * A continuation from a compacted revision: 410, with a token that resumes at the newest revision
 * (inconsistently).
 */
function continueExpired(start: string): HttpError {
  const e = new HttpError(
    410,
    "The provided continue parameter is too old to display a consistent list result. You can " +
      "start a new list without the continue parameter, or use the continue token in this " +
      "response to retrieve the remainder of the results. Continuing with the provided token " +
      "results in an inconsistent list - objects that were created, modified, or deleted between " +
      "the time the first chunk was returned and now may show up in the list.",
  );
  e.listContinue = encodeContinue(-1, start);
  return e;
}

/**
 * The watch cache: always caught up here, so "0" and "not older than N ≤ now" are the current
 * state, whole (no paging).
 */
export function listFromCache(
  store: ObjectStore,
  list: { resource: Resource; filter: Filter; options: ListOptions },
): ListPage {
  const rv = Number(list.options.resourceVersion || 0);
  if (rv > store.resourceVersion) throw tooLargeResourceVersion(rv, store.resourceVersion);
  return {
    metadata: { resourceVersion: String(store.resourceVersion) },
    items: [...store.objects(list.resource).values()].filter(list.filter),
  };
}

/** The revision an etcd read is at, and the key it starts from (a continuation's). */
function storageRevision(
  store: ObjectStore,
  resource: Resource,
  options: ListOptions,
): { at: number; start: string } {
  if (options.continue) {
    const token = decodeContinue(options.continue);
    // -1: the inconsistent continuation handed out with a 410, at the newest revision.
    if (token.rv === -1) return { at: store.resourceVersion, start: token.start };
    if (token.rv < store.history(resource).compactedRv) throw continueExpired(token.start);
    return { at: token.rv, start: token.start };
  }
  const rv = options.resourceVersion;
  const exact =
    (rv !== "" && rv !== "0" && options.match !== "NotOlderThan" && options.limit > 0) ||
    options.match === "Exact";
  return { at: exact ? Number(rv) : store.resourceVersion, start: "" };
}

/**
 * etcd: a quorum read at the newest revision, or at the requested one (Exact, and a limit with a
 * resourceVersion), in key order, paged by `limit`; a continuation reads the first page's revision.
 */
export function listFromStorage(
  store: ObjectStore,
  list: { resource: Resource; filter: Filter; options: ListOptions },
): ListPage {
  const { resource, filter, options } = list;
  const { at, start } = storageRevision(store, resource, options);
  const from = Number(options.resourceVersion || 0);
  if (at > store.resourceVersion || from > store.resourceVersion)
    throw tooLargeResourceVersion(Math.max(at, from), store.resourceVersion);
  if (at < store.history(resource).compactedRv)
    throw new HttpError(410, "The resourceVersion for the provided list is too old.");
  const matching = [...store.snapshotAt(resource, at)].filter(
    ([key, obj]) => key >= start && filter(obj),
  );
  matching.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  const page = options.limit > 0 ? matching.slice(0, options.limit) : matching;
  const metadata: Record<string, unknown> = { resourceVersion: String(at) };
  if (page.length < matching.length) {
    metadata.continue = encodeContinue(at, `${page.at(-1)![0]}\u0000`);
    metadata.remainingItemCount = matching.length - page.length;
  }
  return { metadata, items: page.map(([, obj]) => obj) };
}
