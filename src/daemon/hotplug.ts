/**
 * The daemon's hot-plug trigger (`plexus daemon --hot-plug`, docs/hot-plug.md): it watches the
 * networks annotation of this node's pods in the watch cache and, when it changes, runs one
 * reconcile of that pod (a `plexus hotplug` process, cli/hotplug-pass.ts): debounced (a burst of
 * edits is one reconcile), one at a time per pod (an edit during a reconcile runs another after
 * it), retried with backoff when it fails (an API or delegate failure), at most `maxAttempts`
 * times per edit. The reconcile itself takes the container lock, so it never races the
 * runtime's ADD or DEL, and leaves a pod without a sandbox alone.
 *
 * The node's limiter (watch/limiter.ts, `--hot-plug-concurrency`) bounds the reconciles of all
 * pods at once: many pods edited together wait their turn instead of each starting a process. A
 * failing edit records its Warning event once: each reconcile is told the events the last one
 * recorded for the pod (their keys), and the same event is not recorded again; a different one is.
 */
import type { Logger } from "../log/logger";
import { dns1123LabelProblem } from "../npwg/dns1123";
import { NETWORKS_ANNOTATION, type Pod } from "../npwg/types";
import type { Limiter } from "../watch/limiter";
import { missingNetworks } from "./missing-networks";

/** What one reconcile did; `ok: false` is retried. */
export interface HotplugOutcome {
  ok: boolean;
  attached: number;
  detached: number;
  error?: string;
  /**
   * The keys of the Warning events this reconcile recorded or left out as already recorded
   * (undefined: it could not say, the pod's last ones are kept).
   */
  warned?: string[] | undefined;
}

interface HotplugTarget {
  namespace: string;
  name: string;
  uid: string;
  log: Logger;
  /** The Warning events the pod's last reconcile recorded (keys): not to be recorded again. */
  sentEvents: readonly string[];
}

export type HotplugPass = (o: HotplugTarget) => Promise<HotplugOutcome>;

/** What the daemon's metrics count of one reconcile (metrics.ts). */
export interface HotplugTally {
  attached: number;
  detached: number;
  failed: boolean;
  seconds: number;
}

export interface HotplugOptions {
  pass: HotplugPass;
  log: Logger;
  /** Only pods of these namespaces (undefined: every namespace). */
  namespaces?: ReadonlySet<string> | undefined;
  debounceMs?: number;
  backoff?: { minMs: number; maxMs: number };
  /** Reconciles of one edit, the first included, before it waits for the next edit. */
  maxAttempts?: number;
  metrics?: { hotplugReconciled(o: HotplugTally): void };
  /** The node's limit on reconciles at a time (shared with the daemon's other background work). */
  limiter?: Limiter | undefined;
}

interface PodState {
  namespace: string;
  name: string;
  uid: string;
  /** The annotation as last seen. */
  wanted: string;
  timer?: NodeJS.Timeout | undefined;
  running?: Promise<void> | undefined;
  /** An edit arrived while a reconcile ran: one more after it. */
  dirty: boolean;
  attempt: number;
  /** When the edit being reconciled was first seen (the latency metric). */
  since: number;
  /** The keys of the Warning events the last reconcile recorded on the pod. */
  sent: string[];
}

const annotationOf = (pod: Pod) => pod.metadata.annotations?.[NETWORKS_ANNOTATION] ?? "";

export class HotplugReconciler {
  private readonly pods = new Map<string, PodState>();
  private stopped = false;

  constructor(private readonly options: HotplugOptions) {}

  private get debounceMs(): number {
    return this.options.debounceMs ?? 500;
  }

  /** A watch event of one pod of this node. */
  observe(pod: Pod, how: "change" | "delete"): void {
    const { namespace, name, uid = "" } = pod.metadata;
    const key = `${namespace}/${name}/${uid}`;
    if (how === "delete") return this.forget(key);
    if (this.stopped || pod.spec?.hostNetwork || pod.metadata.deletionTimestamp) return;
    if (this.options.namespaces && !this.options.namespaces.has(namespace)) return;
    const value = annotationOf(pod);
    const state = this.pods.get(key);
    if (!state) {
      // First sight (the daemon's start, a new pod): its sandbox's ADD reads the annotation as it
      // is; a Running pod that lacks a network it asks for was edited while no daemon watched.
      const since = Date.now();
      const fresh = { dirty: false, attempt: 0, since, sent: [] };
      const s: PodState = { namespace, name, uid, wanted: value, ...fresh };
      this.pods.set(key, s);
      if (missingNetworks(pod)) this.schedule(s, this.debounceMs);
      return;
    }
    if (value === state.wanted) return;
    state.wanted = value;
    state.attempt = 0;
    state.since = Date.now();
    this.schedule(state, this.debounceMs);
  }

  private forget(key: string): void {
    const state = this.pods.get(key);
    if (state) clearTimeout(state.timer);
    this.pods.delete(key);
  }

  private schedule(state: PodState, delayMs: number): void {
    if (this.stopped) return;
    clearTimeout(state.timer);
    state.timer = setTimeout(() => this.run(state), delayMs);
  }

  private run(state: PodState): void {
    state.timer = undefined;
    if (state.running) {
      state.dirty = true;
      return;
    }
    const { namespace, name, uid } = state;
    const log = this.options.log.child({ component: "hotplug", pod: `${namespace}/${name}` });
    const attempt = ++state.attempt;
    const pass = async (): Promise<HotplugOutcome | undefined> => {
      // What was edited before this reconcile starts, it reads: no other one after it for that.
      state.dirty = false;
      if (this.stopped) return undefined;
      return this.options.pass({ namespace, name, uid, log, sentEvents: state.sent });
    };
    const limiter = this.options.limiter;
    state.running = (limiter ? limiter.run(pass) : pass())
      .catch((err: unknown): HotplugOutcome => {
        return { ok: false, attached: 0, detached: 0, error: String(err) };
      })
      .then((outcome) => {
        if (outcome) this.settle(state, outcome, { attempt, log });
      })
      .finally(() => {
        state.running = undefined;
        if (state.dirty && this.pods.get(`${namespace}/${name}/${uid}`) === state) {
          state.dirty = false;
          state.attempt = 0;
          this.schedule(state, this.debounceMs);
        }
      });
  }

  private settle(
    state: PodState,
    outcome: HotplugOutcome,
    context: { attempt: number; log: Logger },
  ) {
    const seconds = (Date.now() - state.since) / 1000;
    const { attached, detached } = outcome;
    if (outcome.warned) state.sent = outcome.warned;
    this.options.metrics?.hotplugReconciled({ attached, detached, failed: !outcome.ok, seconds });
    if (outcome.ok) {
      if (attached || detached)
        context.log.info({ attached, detached, seconds }, "hot-plug reconciled");
      return;
    }
    const max = this.options.maxAttempts ?? 6;
    const { minMs, maxMs } = this.options.backoff ?? { minMs: 1000, maxMs: 60_000 };
    const retryInMs = Math.min(maxMs, minMs * 2 ** (context.attempt - 1));
    if (context.attempt >= max || state.dirty) {
      const err = outcome.error;
      context.log.warn(
        { err, attempts: context.attempt },
        "hot-plug failed; waiting for the next edit",
      );
      return;
    }
    context.log.warn(
      { err: outcome.error, attempt: context.attempt, retryInMs },
      "hot-plug failed; retrying",
    );
    this.schedule(state, retryInMs);
  }

  /** Cancels what is scheduled and waits for the reconciles under way. */
  async stop(): Promise<void> {
    this.stopped = true;
    const running: Array<Promise<void>> = [];
    for (const state of this.pods.values()) {
      clearTimeout(state.timer);
      if (state.running) running.push(state.running);
    }
    await Promise.all(running);
  }
}

/** `--hot-plug-namespaces a,b`: the namespaces whose pods hot-plug reconciles (unset: all). */
export function parseNamespaces(value: string | undefined): ReadonlySet<string> | undefined {
  if (value === undefined) return undefined;
  const names = value
    .split(",")
    .map((n) => n.trim())
    .filter(Boolean);
  if (names.length === 0 || names.some((n) => dns1123LabelProblem(n) !== undefined)) {
    const flag = `--hot-plug-namespaces ${JSON.stringify(value)}`;
    throw new Error(`${flag}: expected namespace names separated by commas, e.g. app,vms`);
  }
  return new Set(names);
}

/** Reconciles at a time on a node unless `--hot-plug-concurrency` says otherwise. */
const DEFAULT_CONCURRENCY = 4;
/** More would be no limit: each reconcile is a process with the delegates under it. */
const MAX_CONCURRENCY = 64;

/** `--hot-plug-concurrency N`: the node's reconciles at a time, a whole number from 1 to 64. */
export function parseConcurrency(value: string | undefined): number {
  if (value === undefined) return DEFAULT_CONCURRENCY;
  const n = Number(value);
  if (!/^\s*\d+\s*$/.test(value) || n < 1 || n > MAX_CONCURRENCY)
    throw new Error(
      `--hot-plug-concurrency ${JSON.stringify(value)}: expected a whole number from 1 to ` +
        `${MAX_CONCURRENCY}, e.g. ${DEFAULT_CONCURRENCY}`,
    );
  return n;
}
