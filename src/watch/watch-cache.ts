/**
 * The node daemon's watch caches: the pods of one node (field selector on `spec.nodeName`) and
 * every NetworkAttachmentDefinition, kept by @kubernetes/client-node's ListWatch informer — list,
 * then watch from the list's resourceVersion, resume from the last resourceVersion after a dropped
 * stream (bookmarks keep it current while nothing changes), relist on 410 Gone/Expired, reconnect
 * after a quiet 30 s. Objects are trimmed to the fields Plexus reads before the informer stores
 * them (a pod's spec and status never stay in memory); what the daemon holds for 10,000 NADs is in
 * docs/benchmarks.md ("The other sections, in the same run").
 *
 * Every LIST is read as client-go's reflector reads it ({@link listResourceVersion}), so that a
 * DaemonSet rollout on thousands of nodes is served from the API servers' watch caches, not by one
 * quorum read of every pod from etcd per node.
 *
 * A list or watch that fails (network error, 5xx) stops client-node's informer; here it is
 * restarted with exponential backoff, and `synced` turns false until it has listed again.
 */
import { type KubeConfig, ListWatch, Watch, type KubernetesObject } from "@kubernetes/client-node";
import type { Logger } from "../log/logger";
import type { Nad, Pod } from "../npwg/types";
import { sourceKubeConfig } from "../kubeapi/client-node-auth";
import type { KubeSource } from "../kubeapi/kubeconfig";
import { NAD_GROUP, NAD_PLURAL, NAD_VERSION, trimNad, trimPod } from "../cluster/objects";
import { apiStatusIn } from "../kubeapi/rest-kube";

/** GET a list (path + query) from the API server, as JSON. */
export type ListFn = (
  path: string,
  query: Record<string, string>,
) => Promise<Record<string, unknown>>;

export interface WatchCacheOptions {
  /** The daemon REST client's server and credentials (kubeapi/kubeconfig.ts reads them). */
  source: KubeSource;
  /** This node: only its pods are watched (`spec.nodeName=<nodeName>`). */
  nodeName: string;
  /**
   * Lists go through the daemon's own REST client (timeouts, size cap); watches through
   * client-node.
   */
  list: ListFn;
  log: Logger;
  /** Backoff after a failed list or watch (ms). */
  minRestartDelayMs?: number;
  maxRestartDelayMs?: number;
}

export interface CacheStats {
  pods: number;
  nads: number;
  /** Informer restarts after an error, per kind. */
  restarts: { pods: number; nads: number };
  /** Lists made (the first and every relist), per kind. */
  lists: { pods: number; nads: number };
  errors: { pods: number; nads: number };
}

export type Trimmed = KubernetesObject & Record<string, unknown>;
type Listed = { metadata: { resourceVersion: string }; items: Trimmed[] };

/** Objects per list page (client-go's pager). */
export const LIST_PAGE = 500;

/**
 * The resourceVersion of the next LIST, as client-go's reflector chooses it
 * (relistResourceVersion):
 * "0" for the first (any state the watch cache holds), the last one synced for a relist (not older
 * than what this cache has seen: also from the watch cache), and "" — a quorum read from etcd —
 * only after the server said that one is unavailable (410 Expired, or too large for its cache).
 */
export function listResourceVersion(state: { lastSynced: string; unavailable: boolean }): string {
  if (state.unavailable) return "";
  return state.lastSynced || "0";
}

/** 410 Expired/Gone, or the watch cache's "Too large resource version": list again with "". */
export function isResourceVersionUnavailable(err: unknown): boolean {
  const s = apiStatusIn(err);
  if (!s) return false;
  if (s.code === 410) return true;
  return (
    s.code === 504 && (s.status.causes ?? []).some((c) => c.reason === "ResourceVersionTooLarge")
  );
}

/** A continue token the server no longer honours (410 on a later page). */
const isExpired = (err: unknown) => apiStatusIn(err)?.code === 410;

export interface InformerOptions<T> {
  /** "pods", "nads": for logs and counters. */
  kind: string;
  kc: KubeConfig;
  /** The collection's API path. */
  path: string;
  fieldSelector?: string | undefined;
  /** One full list at a resourceVersion (see {@link listAt}), its objects trimmed. */
  list: (resourceVersion: string) => Promise<Listed>;
  /** What the cache keeps of an object (undefined: not kept). */
  trim: (raw: Record<string, unknown>) => Trimmed | undefined;
  decode: (trimmed: Trimmed) => T | undefined;
  log: Logger;
  /** Restart backoff after a failed list or watch, doubling from min to max. */
  backoff: { minMs: number; maxMs: number };
}

/** One kind's informer with restart-on-error and trimmed storage. */
export class Informer<T> {
  readonly kind: string;
  private readonly lw: ListWatch<Trimmed>;
  private stopped = false;
  private delay: number;
  private timer: NodeJS.Timeout | undefined;
  private listedOnce = false;
  private healthy = false;
  /**
   * The newest resourceVersion seen, from a list, a watch event or a bookmark (the reflector's
   * lastSyncResourceVersion).
   */
  private lastSynced = "";
  /** The server refused `lastSynced` (410, too large): the next list is a quorum read. */
  private unavailable = false;
  readonly counters = { restarts: 0, lists: 0, errors: 0 };

  constructor(private readonly options: InformerOptions<T>) {
    this.kind = options.kind;
    this.delay = options.backoff.minMs;
    this.lw = new ListWatch<Trimmed>(
      options.path,
      this.trimmingWatch(new Watch(options.kc)),
      (() => this.relist()) as never,
      false,
      undefined,
      options.fieldSelector,
    );
    this.lw.on("error", (err) => this.onError(err));
  }

  /** The informer's list (the first and every relist), at the reflector's resourceVersion. */
  private async relist(): Promise<Listed> {
    this.counters.lists++;
    const rv = listResourceVersion({ lastSynced: this.lastSynced, unavailable: this.unavailable });
    let l: Listed;
    try {
      l = await this.options.list(rv);
    } catch (err) {
      if (rv === "" || !isResourceVersionUnavailable(err)) throw err;
      this.options.log.info(
        { kind: this.kind, resourceVersion: rv },
        "watch cache: resourceVersion unavailable; listing from etcd",
      );
      this.unavailable = true;
      l = await this.options.list("");
    }
    this.unavailable = false;
    this.lastSynced = l.metadata.resourceVersion;
    this.listedOnce = true;
    return l;
  }

  private sawResourceVersion(obj: unknown): void {
    const rv = (obj as { metadata?: { resourceVersion?: unknown } } | undefined)?.metadata
      ?.resourceVersion;
    if (typeof rv === "string" && rv) this.lastSynced = rv;
  }

  /** A Watch that trims every watched object before the informer stores it. */
  private trimmingWatch(watch: Watch): Watch {
    return {
      watch: async (
        p: string,
        q: Record<string, string | number | boolean | undefined>,
        cb: (phase: string, obj: unknown, raw: unknown) => void,
        done: (err: unknown) => void,
      ) => {
        let failed = false;
        const controller = await watch.watch(
          p,
          // Bookmarks keep the resourceVersion current on a quiet watch (NADs rarely change), so
          // the reconnect after the server's timeout resumes instead of hitting 410 and relisting.
          { ...q, allowWatchBookmarks: true },
          (phase, obj, raw) => {
            if (phase !== "ERROR") this.sawResourceVersion(obj);
            if (phase === "ERROR" || phase === "BOOKMARK") return cb(phase, obj, raw);
            const t = this.options.trim(obj as Record<string, unknown>);
            if (t) cb(phase, t, raw);
          },
          (err) => {
            if (err) failed = true;
            done(err);
          },
        );
        // The watch is open (HTTP 200): healthy again, and the next failure starts a fresh backoff.
        if (!failed) this.recovered();
        return controller;
      },
    } as unknown as Watch;
  }

  get synced(): boolean {
    return this.listedOnce && this.healthy && !this.stopped;
  }

  recovered(): void {
    this.healthy = true;
    this.delay = this.options.backoff.minMs;
  }

  get size(): number {
    return this.lw.list().length;
  }

  start(): Promise<void> {
    this.stopped = false;
    return this.lw.start().catch((err: unknown) => this.onError(err));
  }

  get(namespace: string, name: string): T | undefined {
    const o = this.lw.get(name, namespace);
    return o ? this.options.decode(o) : undefined;
  }

  all(): T[] {
    return this.lw.list().flatMap((o) => this.options.decode(o) ?? []);
  }

  /** Calls `listener` for each object added or changed, and each deleted (also by a relist). */
  onEvent(listener: (event: "change" | "delete", obj: T) => void): void {
    const decoded = (event: "change" | "delete") => (o: Trimmed) => {
      const t = this.options.decode(o);
      if (t) listener(event, t);
    };
    this.lw.on("add", decoded("change"));
    this.lw.on("update", decoded("change"));
    this.lw.on("delete", decoded("delete"));
  }

  private onError(err: unknown): void {
    if (this.stopped) return;
    this.counters.errors++;
    this.healthy = false;
    const delay = this.delay;
    this.delay = Math.min(this.delay * 2, this.options.backoff.maxMs);
    this.options.log.warn(
      { kind: this.kind, err: err instanceof Error ? err.message : String(err), retryInMs: delay },
      "watch cache: list or watch failed; restarting",
    );
    clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.counters.restarts++;
      void this.start();
    }, delay);
    this.timer.unref?.();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.lw.stop();
  }
}

/**
 * A pod as the daemon keeps it: what the CNI binary reads (trimPod), plus what the
 * missing-networks detector needs: the phase, hostNetwork and a pending deletion.
 */
function trimWatchedPod(raw: Record<string, unknown>): Pod | undefined {
  const pod = trimPod(raw, "");
  if (!pod) return undefined;
  const meta = raw.metadata as Record<string, unknown>;
  const spec = raw.spec as Record<string, unknown> | undefined;
  const status = raw.status as Record<string, unknown> | undefined;
  if (typeof meta.deletionTimestamp === "string")
    pod.metadata.deletionTimestamp = meta.deletionTimestamp;
  if (spec?.hostNetwork === true) pod.spec = { ...pod.spec, hostNetwork: true };
  if (typeof status?.phase === "string") pod.status = { ...pod.status, phase: status.phase };
  return pod;
}

export class WatchCaches {
  private readonly pods: Informer<Pod>;
  private readonly nads: Informer<Nad>;

  constructor(options: WatchCacheOptions) {
    const kc = sourceKubeConfig(options.source);
    const min = options.minRestartDelayMs ?? 500;
    const max = options.maxRestartDelayMs ?? 30_000;
    const fieldSelector = `spec.nodeName=${options.nodeName}`;
    const trimP = (x: Record<string, unknown>) =>
      trimWatchedPod(x) as unknown as Trimmed | undefined;
    const trimN = (x: Record<string, unknown>) => trimNad(x, "") as unknown as Trimmed | undefined;
    const podPath = "/api/v1/pods";
    const nadPath = `/apis/${NAD_GROUP}/${NAD_VERSION}/${NAD_PLURAL}`;
    const backoff = { minMs: min, maxMs: max };
    this.pods = new Informer<Pod>({
      kind: "pods",
      kc,
      path: podPath,
      fieldSelector,
      list: lister(options.list, { path: podPath, query: { fieldSelector }, trim: trimP }),
      trim: trimP,
      decode: (x) => x as unknown as Pod,
      log: options.log,
      backoff,
    });
    this.nads = new Informer<Nad>({
      kind: "nads",
      kc,
      path: nadPath,
      list: lister(options.list, { path: nadPath, query: {}, trim: trimN }),
      trim: trimN,
      decode: (x) => x as unknown as Nad,
      log: options.log,
      backoff,
    });
  }

  async start(): Promise<void> {
    await Promise.all([this.pods.start(), this.nads.start()]);
  }

  get synced(): boolean {
    return this.pods.synced && this.nads.synced;
  }

  pod(namespace: string, name: string): Pod | undefined {
    return this.pods.get(namespace, name);
  }

  /** Each pod of this node the watch adds, changes or deletes (the DRA caches' claims, M10). */
  onPodEvent(listener: (event: "change" | "delete", pod: Pod) => void): void {
    this.pods.onEvent(listener);
  }

  /** Every cached pod of this node (the missing-networks detector). */
  listPods(): Pod[] {
    return this.pods.all();
  }

  nad(namespace: string, name: string): Nad | undefined {
    return this.nads.get(namespace, name);
  }

  stats(): CacheStats {
    return {
      pods: this.pods.size,
      nads: this.nads.size,
      restarts: { pods: this.pods.counters.restarts, nads: this.nads.counters.restarts },
      lists: { pods: this.pods.counters.lists, nads: this.nads.counters.lists },
      errors: { pods: this.pods.counters.errors, nads: this.nads.counters.errors },
    };
  }

  async stop(): Promise<void> {
    await Promise.all([this.pods.stop(), this.nads.stop()]);
  }
}

/**
 * The `list` of an Informer: {@link listAt} of one collection, at the resourceVersion the informer
 * asks for.
 */
export function lister(
  list: ListFn,
  spec: {
    path: string;
    query: Record<string, string>;
    trim: (x: Record<string, unknown>) => Trimmed | undefined;
  },
): (resourceVersion: string) => Promise<Listed> {
  return (resourceVersion) => listAt({ list, ...spec, resourceVersion });
}

/**
 * One LIST at `resourceVersion`, as client-go's pager sends it: "" and "0" in pages of LIST_PAGE
 * (the daemon's peak memory is one page of full objects plus what it keeps, trimmed); a watch cache
 * answers "0" whole, ignoring the limit (servers before paging from the cache), and that is the
 * point: no etcd read. N is sent without a limit, since a limit would send it to etcd. A
 * continuation carries no resourceVersion (its token holds one); one that expired mid-way is
 * followed by one full list at "", as the pager's FullListIfExpired does.
 */
export async function listAt(options: {
  list: ListFn;
  path: string;
  query: Record<string, string>;
  trim: (x: Record<string, unknown>) => Trimmed | undefined;
  resourceVersion: string;
}): Promise<Listed> {
  const rv = options.resourceVersion;
  const paged = rv === "" || rv === "0";
  const first = {
    ...options.query,
    ...(rv ? { resourceVersion: rv } : {}),
    ...(paged ? { limit: String(LIST_PAGE) } : {}),
  };
  const out: Listed = { metadata: { resourceVersion: "" }, items: [] };
  let cont: string | undefined;
  do {
    let page: Record<string, unknown>;
    try {
      page = await options.list(
        options.path,
        cont ? { ...options.query, limit: String(LIST_PAGE), continue: cont } : first,
      );
    } catch (err) {
      if (!cont || !isExpired(err)) throw err;
      const whole = await options.list(options.path, options.query);
      return collect({ metadata: { resourceVersion: "" }, items: [] }, whole, options.trim, true);
    }
    // Every page is of the first page's snapshot; its resourceVersion is where the watch starts.
    collect(out, page, options.trim, !cont);
    const meta = (page.metadata ?? {}) as Record<string, unknown>;
    cont = typeof meta.continue === "string" && meta.continue !== "" ? meta.continue : undefined;
  } while (cont);
  return out;
}

/** Adds a page's trimmed items to `into` (and, for the first page, its resourceVersion). */
function collect(
  into: Listed,
  page: Record<string, unknown>,
  trim: (x: Record<string, unknown>) => Trimmed | undefined,
  first: boolean,
): Listed {
  for (const x of Array.isArray(page.items) ? page.items : []) {
    const t = trim(x as Record<string, unknown>);
    if (t) into.items.push(t);
  }
  const rv = (page.metadata as Record<string, unknown> | undefined)?.resourceVersion;
  if (first && typeof rv === "string") into.metadata.resourceVersion = rv;
  return into;
}
