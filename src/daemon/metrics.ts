/**
 * The daemon's /metrics through prom-client, with its default process metrics (CPU, memory,
 * event-loop lag, GC, file descriptors). Loaded only by `plexus daemon` (imported dynamically,
 * with the watch caches), never in a CNI call. The series names are the ones the daemon
 * has always exposed; values the watch caches keep are read at scrape time.
 */
import {
  collectDefaultMetrics,
  Counter,
  type CounterConfiguration,
  Gauge,
  Histogram,
  type HistogramConfiguration,
  Registry,
} from "prom-client";
import { Code } from "../cni/errors";
import { COMMIT, VERSION } from "../config/build-info";
import { CONFIG_STATES, type ConfigState } from "../install/config-state";
import type { CacheStats } from "../watch/watch-cache";
import type { DelegateRun } from "../libcni/conflist";
import type { HotplugTally } from "./hotplug";

/** What the daemon reads at scrape time. */
export interface ScrapeSources {
  cacheStats(): CacheStats;
  synced(): boolean;
  /** M10: the DRA caches' sizes (watch/dra-watch.ts), when the daemon keeps them. */
  draStats?(): { claims: number; slices: number };
  apiRequests(): number;
  /** Pods of this node that are Running without a network their annotation asks for. */
  podsMissingNetworks(): number;
  /** Whose config the node's runtime runs (install/config-state.ts), read from the conf dir. */
  nodeConfigState?(): ConfigState;
}

/** Distinct event reasons counted by name; past this many, or an odd one, counts as "Other". */
const MAX_EVENT_REASONS = 32;
const EVENT_REASON = /^[A-Za-z][A-Za-z0-9]{0,63}$/;

/**
 * M20: plugin types are the names tenants write in their NADs. Only delegates that ran are
 * reported (their binary is on the node), and past this many distinct names, or for an odd one,
 * a run counts as "other": the series stay bounded whatever the NADs say.
 */
const MAX_PLUGIN_TYPES = 64;
const PLUGIN_TYPE = /^[A-Za-z0-9][A-Za-z0-9._+-]{0,63}$/;
/** The result label: "success", a CNI code (the spec's and Plexus's own) or "other". */
const KNOWN_CODES: ReadonlySet<number> = new Set(Object.values(Code));

type Kinds = "restarts" | "lists" | "errors";

/** The series the daemon counts itself, by field; those read at each scrape are below the class. */
const SERIES = {
  cacheLookups: {
    name: "plexus_daemon_cache_total",
    help: "Pod, NAD and ResourceClaim lookups by cache result (hit, miss, stale).",
    labelNames: ["kind", "result"],
  },
  requests: {
    name: "plexus_daemon_requests_total",
    help: "Requests answered, by route and HTTP status.",
    labelNames: ["route", "code"],
  },
  apiErrors: {
    name: "plexus_daemon_api_errors_total",
    help: "Requests that failed on the API server, by route.",
    labelNames: ["route"],
  },
  durations: {
    name: "plexus_daemon_request_duration_seconds",
    help: "Time to answer a request, by route.",
    labelNames: ["route"],
    buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1],
  },
  hotplugChanges: {
    name: "plexus_hotplug_changes_total",
    help: "Hot-plug's attaches and detaches of running pods' networks, and its failed reconciles.",
    labelNames: ["change"],
  },
  events: {
    name: "plexus_daemon_events_total",
    help:
      "Events the node's CNI calls and housekeeping sent through the daemon, by type and reason " +
      "(TeardownAbandoned: a failed DEL's record given up).",
    labelNames: ["type", "reason"],
  },
  hotplugDurations: {
    name: "plexus_hotplug_reconcile_duration_seconds",
    help: "Time of one hot-plug reconcile, from the annotation change seen to its end.",
    buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
  },
  delegateRuns: {
    name: "plexus_delegate_executions_total",
    help:
      "Delegate plugin runs of the node's CNI calls and the daemon's passes, by plugin type, " +
      'verb and result ("success", or the CNI error code the run failed with).',
    labelNames: ["plugin_type", "verb", "result"],
  },
  delegateDurations: {
    name: "plexus_delegate_duration_seconds",
    help: "Time of one delegate plugin run, by plugin type and verb.",
    labelNames: ["plugin_type", "verb"],
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
  },
} as const;

export class DaemonMetrics {
  readonly registry = new Registry();
  private readonly cacheLookups = this.counter(SERIES.cacheLookups);
  private readonly requests = this.counter(SERIES.requests);
  private readonly apiErrors = this.counter(SERIES.apiErrors);
  private readonly durations = this.histogram(SERIES.durations);

  private readonly hotplugChanges = this.counter(SERIES.hotplugChanges);
  private readonly events = this.counter(SERIES.events);
  private readonly eventReasons = new Set<string>();
  private readonly hotplugDurations = this.histogram(SERIES.hotplugDurations);

  private readonly delegateRuns = this.counter(SERIES.delegateRuns);
  private readonly delegateDurations = this.histogram(SERIES.delegateDurations);
  private readonly pluginTypes = new Set<string>();

  private counter<T extends string>(c: CounterConfiguration<T>): Counter<T> {
    return new Counter({ ...c, registers: [this.registry] });
  }

  private histogram<T extends string>(
    c: Omit<HistogramConfiguration<T>, "buckets"> & { buckets: readonly number[] },
  ): Histogram<T> {
    return new Histogram({ ...c, buckets: [...c.buckets], registers: [this.registry] });
  }

  constructor(sources: ScrapeSources, options: { defaultMetrics?: boolean } = {}) {
    const registers = [this.registry];
    cacheSeries(sources, registers);
    watchSeries(sources, registers);
    daemonSeries(sources, registers);
    nodeSeries(sources, registers);
    if (options.defaultMetrics ?? true) collectDefaultMetrics({ register: this.registry });
  }

  /** One reconcile: what it attached and detached, whether it failed, how long it took. */
  hotplugReconciled(tally: HotplugTally): void {
    if (tally.attached) this.hotplugChanges.inc({ change: "attach" }, tally.attached);
    if (tally.detached) this.hotplugChanges.inc({ change: "detach" }, tally.detached);
    if (tally.failed) this.hotplugChanges.inc({ change: "failure" });
    this.hotplugDurations.observe(tally.seconds);
  }

  /** An event relayed for a CNI call (POST /v1/event); its reason as a label, bounded. */
  eventRelayed(type: "Normal" | "Warning", reason: string): void {
    const known =
      EVENT_REASON.test(reason) &&
      (this.eventReasons.has(reason) || this.eventReasons.size < MAX_EVENT_REASONS);
    if (known) this.eventReasons.add(reason);
    this.events.inc({ type, reason: known ? reason : "Other" });
  }

  /** M20: one delegate run a CNI call or a pass handed over (POST /v1/delegate-runs). */
  delegateRan(run: DelegateRun): void {
    const known =
      PLUGIN_TYPE.test(run.pluginType) &&
      (this.pluginTypes.has(run.pluginType) || this.pluginTypes.size < MAX_PLUGIN_TYPES);
    if (known) this.pluginTypes.add(run.pluginType);
    const labels = { plugin_type: known ? run.pluginType : "other", verb: run.verb };
    const result =
      run.result === "success" || KNOWN_CODES.has(run.result) ? String(run.result) : "other";
    this.delegateRuns.inc({ ...labels, result });
    this.delegateDurations.observe(labels, run.durationMs / 1000);
  }

  cacheLookup(kind: "pod" | "nad" | "resourceclaim", result: "hit" | "miss" | "stale"): void {
    this.cacheLookups.inc({ kind, result });
  }

  request(route: string, status: number, ms: number): void {
    this.requests.inc({ route, code: String(status) });
    this.durations.observe({ route }, ms / 1000);
  }

  apiError(route: string): void {
    this.apiErrors.inc({ route });
  }

  get contentType(): string {
    return this.registry.contentType;
  }

  render(): Promise<string> {
    return this.registry.metrics();
  }
}

/** The watch caches' size and sync state, read at each scrape. */
function cacheSeries(sources: ScrapeSources, registers: Registry[]): void {
  new Gauge({
    name: "plexus_daemon_cache_objects",
    help: "Objects in the watch caches, by kind.",
    labelNames: ["kind"],
    registers,
    collect() {
      const s = sources.cacheStats();
      this.set({ kind: "pod" }, s.pods);
      this.set({ kind: "nad" }, s.nads);
      const dra = sources.draStats?.();
      if (dra) {
        this.set({ kind: "resourceclaim" }, dra.claims);
        this.set({ kind: "resourceslice" }, dra.slices);
      }
    },
  });
  new Gauge({
    name: "plexus_daemon_cache_synced",
    help: "1 when both watch caches have listed and their watches are open.",
    registers,
    collect() {
      this.set(sources.synced() ? 1 : 0);
    },
  });
}

/** The informers' restarts, lists and failures, per kind, from their counters. */
function watchSeries(sources: ScrapeSources, registers: Registry[]): void {
  const fromStats = (name: string, help: string, key: Kinds) =>
    new Counter({
      name,
      help,
      labelNames: ["kind"],
      registers,
      collect() {
        const s = sources.cacheStats()[key];
        this.reset();
        this.inc({ kind: "pod" }, s.pods);
        this.inc({ kind: "nad" }, s.nads);
      },
    });
  fromStats(
    "plexus_daemon_watch_restarts_total",
    "Watch cache restarts after an error, by kind.",
    "restarts",
  );
  fromStats(
    "plexus_daemon_watch_lists_total",
    "Lists made by the watch caches (the first and every relist), by kind.",
    "lists",
  );
  fromStats("plexus_daemon_watch_errors_total", "List or watch failures, by kind.", "errors");
}

/** The daemon's own API requests and memory, and the pods it finds missing networks. */
function daemonSeries(sources: ScrapeSources, registers: Registry[]): void {
  new Counter({
    name: "plexus_daemon_api_requests_total",
    help: "Requests the daemon made to the API server (watches excluded).",
    registers,
    collect() {
      this.reset();
      this.inc(sources.apiRequests());
    },
  });
  new Gauge({
    name: "plexus_daemon_resident_memory_bytes",
    help: "Resident memory of the daemon.",
    registers,
    collect() {
      this.set(process.memoryUsage.rss());
    },
  });
  new Gauge({
    name: "plexus_pods_missing_networks",
    help:
      "Pods of this node that are Running while their network-status lacks a network their " +
      "networks annotation asks for.",
    registers,
    collect() {
      this.set(sources.podsMissingNetworks());
    },
  });
}

/** What runs on the node: this build, and whose config the runtime runs (switched or not). */
function nodeSeries(sources: ScrapeSources, registers: Registry[]): void {
  new Gauge({
    name: "plexus_build_info",
    help: "1, labelled with the version and the commit of the running Plexus build.",
    labelNames: ["version", "commit"],
    registers,
  }).set({ version: VERSION, commit: COMMIT }, 1);
  const read = sources.nodeConfigState?.bind(sources);
  if (!read) return;
  new Gauge({
    name: "plexus_node_config_state",
    help:
      "Whose config the node's runtime runs (the first in the CNI conf dir): 1 for the state " +
      'it is in; "plexus" when the node has switched.',
    labelNames: ["state"],
    registers,
    collect() {
      let now: ConfigState | undefined;
      try {
        now = read();
      } catch {
        // Unreadable now: every state 0 (unknown) rather than a failed scrape.
        now = undefined;
      }
      for (const state of CONFIG_STATES) this.set({ state }, state === now ? 1 : 0);
    },
  });
}
