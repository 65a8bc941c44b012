/**
 * WATCH of a collection, per namespace and across namespaces, as kube-apiserver's watch cache
 * serves it: field and label selectors, one global resourceVersion, a history of events that
 * watches resume from, a resume from a compacted resourceVersion answered with a 200 stream whose
 * only event is `ERROR` carrying a 410 `Expired` Status (or, with `expiredWatch: "status"`, an
 * HTTP 410), BOOKMARK events with `allowWatchBookmarks`, the `k8s.io/initial-events-end` bookmark
 * with `sendInitialEvents`, and `timeoutSeconds`.
 */
import type { ServerResponse } from "node:http";
import type { Fault } from "./faults.ts";
import { apiVersionOf, defOf, type Resource, TRUE } from "./resources.ts";
import { HttpError, send, statusBody } from "./status.ts";
import { type ObjectStore, withRv } from "./store.ts";
import type { Filter, HistoryEvent } from "./types.ts";

/** What the router answers for a watch request: the stream is started by `WatchHub.start`. */
export interface WatchPlan {
  resource: Resource;
  filter: Filter;
  /** Undefined: start with ADDED for the current state (no resourceVersion, or "0"). */
  since: number | undefined;
  sendInitial: boolean;
  /** sendInitialEvents=true: the first batch ends with the `k8s.io/initial-events-end` bookmark. */
  initialEventsEnd: boolean;
  bookmarks: boolean;
  timeoutMs: number | undefined;
}

interface Watcher {
  resource: Resource;
  filter: Filter;
  res: ServerResponse;
  timers: NodeJS.Timeout[];
  /** Output held back while a slow-body fault writes the first batch. */
  queue: string[] | undefined;
}

export function watchPlan(
  watch: { resource: Resource; filter: Filter },
  query: URLSearchParams,
): WatchPlan {
  const rvParam = query.get("resourceVersion") ?? "";
  if (rvParam !== "" && !/^\d+$/.test(rvParam))
    throw new HttpError(400, `invalid resource version: ${JSON.stringify(rvParam)}`);
  const since = rvParam === "" || rvParam === "0" ? undefined : Number(rvParam);
  const initialEventsEnd = TRUE.has(query.get("sendInitialEvents") ?? "");
  const timeout = query.get("timeoutSeconds");
  return {
    ...watch,
    since,
    sendInitial: since === undefined || initialEventsEnd,
    initialEventsEnd,
    bookmarks: TRUE.has(query.get("allowWatchBookmarks") ?? ""),
    timeoutMs: timeout ? Number(timeout) * 1000 : undefined,
  };
}

function eventLine(type: string, json: string): string {
  return `{"type":"${type}","object":${json}}\n`;
}

/** The event as a watch with this filter sees it (kube-apiserver's
 * cacheWatcher.convertToWatchEvent): an object leaving the selector is DELETED (its previous state
 * at the event's RV), entering it ADDED. */
export function projectEvent(
  watch: { resource: Resource; filter: Filter },
  event: HistoryEvent,
): string | undefined {
  if (event.resource !== watch.resource) return undefined;
  const was = event.prev !== undefined && watch.filter(event.prev);
  const is = event.type !== "DELETED" && watch.filter(event.obj);
  if (is) return eventLine(was ? "MODIFIED" : "ADDED", (event.json ??= JSON.stringify(event.obj)));
  if (!was) return undefined;
  if (event.type === "DELETED")
    return eventLine("DELETED", (event.json ??= JSON.stringify(event.obj)));
  return eventLine("DELETED", JSON.stringify(withRv(event.prev!, event.rv)));
}

/** The index of the first retained event after `since` (binary search: rv ascends). */
function firstAfter(events: readonly HistoryEvent[], range: { start: number; since: number }) {
  let lo = range.start;
  let hi = events.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (events[mid]!.rv > range.since) hi = mid;
    else lo = mid + 1;
  }
  return lo;
}

interface WatchHubOptions {
  store: ObjectStore;
  expiredWatch?: "event" | "status" | undefined;
  bookmarkIntervalMs?: number | undefined;
  /** A timer the server clears on close. */
  later: (ms: number) => Promise<void>;
}

/** The open watch streams: each batch the store records is pushed to them, one write each. */
export class WatchHub {
  readonly watchers = new Set<Watcher>();
  readonly options: WatchHubOptions;

  constructor(options: WatchHubOptions) {
    this.options = options;
    options.store.listeners.add((evts) => {
      for (const watcher of this.watchers) {
        let text = "";
        for (const e of evts) text += projectEvent(watcher, e) ?? "";
        this.writeTo(watcher, text);
      }
    });
  }

  writeTo(watcher: Watcher, text: string): void {
    if (!text) return;
    if (watcher.queue) watcher.queue.push(text);
    else if (!watcher.res.destroyed && !watcher.res.writableEnded) watcher.res.write(text);
  }

  bookmarkLine(resource: Resource, initialEventsEnd = false): string {
    const def = defOf(resource);
    const [apiVersion, kind] = [apiVersionOf(def), def.kind];
    const metadata: Record<string, unknown> = {
      resourceVersion: String(this.options.store.resourceVersion),
    };
    if (initialEventsEnd) metadata.annotations = { "k8s.io/initial-events-end": "true" };
    return eventLine("BOOKMARK", JSON.stringify({ kind, apiVersion, metadata }));
  }

  stop(watcher: Watcher): void {
    for (const t of watcher.timers) clearTimeout(t);
    watcher.timers.length = 0;
    this.watchers.delete(watcher);
  }

  end(watcher: Watcher, abort = false): void {
    this.stop(watcher);
    if (abort) watcher.res.destroy();
    else if (!watcher.res.destroyed && !watcher.res.writableEnded) watcher.res.end();
  }

  /** Ends every open stream (with `abort`, destroys its connection); how many were open. */
  dropAll(abort?: boolean): number {
    const open = [...this.watchers];
    for (const watcher of open) this.end(watcher, abort);
    return open.length;
  }

  /** A resume from before the compacted revision: refused as the watch cache refuses it. */
  private expired(res: ServerResponse, plan: WatchPlan): boolean {
    const h = this.options.store.history(plan.resource);
    if (plan.sendInitial || plan.since! >= h.compactedRv) return false;
    const message = `too old resource version: ${plan.since} (${h.compactedRv})`;
    if (this.options.expiredWatch === "status") {
      send(res, 410, statusBody(410, message, "Expired"));
      return true;
    }
    res.writeHead(200, { "content-type": "application/json", "transfer-encoding": "chunked" });
    res.end(eventLine("ERROR", JSON.stringify(statusBody(410, message, "Expired"))));
    return true;
  }

  /** The first batch: the current state (ADDED), or the retained history after `since`. */
  private firstBatch(watcher: Watcher, plan: WatchPlan): string {
    const store = this.options.store;
    let first = "";
    if (plan.sendInitial) {
      for (const o of store.objects(plan.resource).values())
        if (plan.filter(o)) first += eventLine("ADDED", JSON.stringify(o));
      if (plan.initialEventsEnd && plan.bookmarks) first += this.bookmarkLine(plan.resource, true);
      return first;
    }
    const h = store.history(plan.resource);
    const from = firstAfter(h.events, { start: h.start, since: plan.since! });
    for (let i = from; i < h.events.length; i++) first += projectEvent(watcher, h.events[i]!) ?? "";
    return first;
  }

  /**
   * Starts a watch stream: expiry, the first batch (current state or replayed history), then live.
   */
  async start(res: ServerResponse, plan: WatchPlan, fault: Fault | undefined): Promise<void> {
    if (this.expired(res, plan)) return;
    const watcher: Watcher = {
      resource: plan.resource,
      filter: plan.filter,
      res,
      timers: [],
      queue: undefined,
    };
    const first = this.firstBatch(watcher, plan);
    res.writeHead(200, {
      "content-type": "application/json",
      "transfer-encoding": "chunked",
      "cache-control": "no-cache, private",
    });
    if (fault?.kind === "hang-after-headers") return void res.flushHeaders();
    if (fault?.kind === "truncated") {
      const text = first || this.bookmarkLine(plan.resource);
      return void res.end(text.slice(0, Math.floor(text.length / 2)));
    }
    this.watchers.add(watcher);
    res.on("close", () => this.stop(watcher));
    this.startTimers(watcher, plan);
    if (fault?.kind === "slow-body") return this.writeSlowly(watcher, { first, fault });
    if (first) res.write(first);
    else res.flushHeaders();
  }

  /** Bookmarks every `bookmarkIntervalMs`, and the end at `timeoutSeconds` (a bookmark first). */
  private startTimers(watcher: Watcher, plan: WatchPlan): void {
    const interval = this.options.bookmarkIntervalMs ?? 60_000;
    if (plan.bookmarks) {
      const tick = () => {
        this.writeTo(watcher, this.bookmarkLine(plan.resource));
        watcher.timers[0] = setTimeout(tick, interval);
      };
      watcher.timers[0] = setTimeout(tick, interval);
    }
    if (plan.timeoutMs !== undefined) {
      watcher.timers[1] = setTimeout(() => {
        if (plan.bookmarks) this.writeTo(watcher, this.bookmarkLine(plan.resource));
        this.end(watcher);
      }, plan.timeoutMs);
    }
  }

  /** The first batch a few bytes at a time; live events wait behind it. */
  private async writeSlowly(
    watcher: Watcher,
    slow: { first: string; fault: Extract<Fault, { kind: "slow-body" }> },
  ): Promise<void> {
    const { res } = watcher;
    watcher.queue = [];
    const buf = Buffer.from(slow.first);
    const step = slow.fault.chunkBytes ?? 1;
    for (let i = 0; i < buf.length && !res.destroyed; i += step) {
      await this.options.later(slow.fault.intervalMs ?? 50);
      if (res.destroyed) return;
      res.write(buf.subarray(i, i + step));
    }
    const queued = watcher.queue.join("");
    watcher.queue = undefined;
    this.writeTo(watcher, queued);
  }
}
