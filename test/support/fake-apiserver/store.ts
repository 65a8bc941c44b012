/**
 * The fake's storage, as kube-apiserver's generic registry store over etcd: objects by resource
 * and key, one global resourceVersion, a history of changes per resource (the watch cache's
 * window, which LIST and WATCH read), and updates as GuaranteedUpdate makes them.
 *
 * Writes: PUT carries the object's UID as a storage precondition (409); PATCH carries none, so a
 * UID change is a validation error (422 Invalid, `metadata.uid` "field is immutable"); a
 * resourceVersion that does not match is 409; a write that races another is re-read and
 * re-applied inside the server (GuaranteedUpdate), never a 409 to a patch without
 * resourceVersion (the `racing-write` fault shows it).
 */
import { isObject } from "./patch.ts";
import {
  DRA_API_VERSION,
  type DraResource,
  draKindOf,
  isNamespacedDra,
  objectKey,
  type Resource,
} from "./resources.ts";
import { conflict, invalidUid, notFound } from "./status.ts";
import type { HistoryEvent, KubeObject, NadInput, PodInput } from "./types.ts";

/** The resourceVersion of an empty store; the first write is one above it. */
export const FIRST_RV = 1000;

/**
 * One window of events per resource, as kube-apiserver keeps one watch cache per resource type:
 * a flood of pod events does not expire a NAD watch. Retained events are events[start..]; every
 * event of that resource with rv > compactedRv is retained.
 */
interface History {
  events: HistoryEvent[];
  start: number;
  compactedRv: number;
}

/** An update of a pod (or its status subresource) as the generic registry store makes it. */
export interface PodUpdate {
  ns: string;
  name: string;
  /** The status subresource: keeps the stored spec (the main resource keeps the status). */
  sub: boolean;
  /** PUT: the object's UID, checked against storage (409). PATCH: undefined. */
  uidPrecondition: unknown;
  /** Turns the stored object into the new one (PATCH applies the patch to it). */
  mutate: (current: KubeObject) => Record<string, unknown>;
  /** Another writer lands between this update's read and its write (one retry). */
  racingWrite: boolean;
  /** Admission of the new object against the old one; throws a denial. */
  admit: (old: KubeObject, next: KubeObject) => void;
}

export function withRv(obj: KubeObject, rv: number): KubeObject {
  return { ...obj, metadata: { ...obj.metadata, resourceVersion: String(rv) } };
}

const MODIFIED_MESSAGE =
  "the object has been modified; please apply your changes to the latest version and try again";

/** The checks of an update before it is written: preconditions (409), resourceVersion, UID. */
function checkUpdate(update: PodUpdate, current: KubeObject, next: Record<string, unknown>): void {
  const curMeta = current.metadata;
  const meta = (isObject(next.metadata) ? next.metadata : {}) as Record<string, unknown>;
  if (meta.resourceVersion !== undefined && meta.resourceVersion !== curMeta.resourceVersion)
    conflict("pods", update.name, MODIFIED_MESSAGE);
  if (meta.uid !== undefined && meta.uid !== "" && meta.uid !== curMeta.uid)
    invalidUid(update.name, meta.uid);
}

function checkPrecondition(update: PodUpdate, current: KubeObject): void {
  const uid = current.metadata.uid;
  if (update.uidPrecondition === undefined || update.uidPrecondition === uid) return;
  const why =
    `Precondition failed: UID in precondition: ${String(update.uidPrecondition)}, UID ` +
    `in object meta: ${String(uid)}`;
  conflict("pods", update.name, why);
}

/**
 * Plain fields, not parameter properties: the benchmark loads this file with Node's type stripping.
 */
export class ObjectStore {
  readonly historyLimit: number;
  /** The stored objects of each resource, by "namespace/name" ("/name" when cluster-scoped). */
  readonly stores = new Map<Resource, Map<string, KubeObject>>();
  readonly histories = new Map<Resource, History>();
  /** Events created through the API (create-only: not stored, not watchable). */
  readonly events: KubeObject[] = [];
  /** Called with every batch of recorded changes (the open watches). */
  readonly listeners = new Set<(evts: HistoryEvent[]) => void>();
  resourceVersion = FIRST_RV;
  uidCounter = 0;
  /** Updates re-read and re-applied after a racing write. */
  retries = 0;

  constructor(options: { historyLimit?: number | undefined } = {}) {
    this.historyLimit = options.historyLimit ?? 100_000;
  }

  objects(resource: Resource): Map<string, KubeObject> {
    let store = this.stores.get(resource);
    if (!store) this.stores.set(resource, (store = new Map()));
    return store;
  }

  history(resource: Resource): History {
    let h = this.histories.get(resource);
    if (!h) this.histories.set(resource, (h = { events: [], start: 0, compactedRv: FIRST_RV }));
    return h;
  }

  nextRv(): string {
    return String(++this.resourceVersion);
  }

  nextUid(): number {
    return ++this.uidCounter;
  }

  /** Stores the object; the change as an event, for `record`. */
  put(resource: Resource, key: string, obj: KubeObject): HistoryEvent {
    const store = this.objects(resource);
    const prev = store.get(key);
    store.set(key, obj);
    const type = prev ? "MODIFIED" : "ADDED";
    return { rv: Number(obj.metadata.resourceVersion), type, resource, obj, prev };
  }

  remove(resource: Resource, ns: string, name: string): boolean {
    const store = this.objects(resource);
    const prev = store.get(objectKey(ns, name));
    if (!prev) return false;
    store.delete(objectKey(ns, name));
    const rv = Number(this.nextRv());
    this.record([{ rv, type: "DELETED", resource, obj: withRv(prev, rv), prev }]);
    return true;
  }

  /** Appends to the history (trimmed to historyLimit) and hands the batch to the listeners. */
  record(evts: HistoryEvent[]): void {
    if (evts.length === 0) return;
    for (const e of evts) {
      const h = this.history(e.resource);
      h.events.push(e);
      if (h.events.length - h.start > this.historyLimit) {
        h.start += 1;
        h.compactedRv = h.events[h.start - 1]!.rv;
        if (h.start > 1024 && h.start * 2 > h.events.length) {
          h.events = h.events.slice(h.start);
          h.start = 0;
        }
      }
    }
    for (const listener of this.listeners) listener(evts);
  }

  /** The store as it was at revision `rv`: the retained history undone back to it. */
  snapshotAt(resource: Resource, rv: number): Map<string, KubeObject> {
    const store = this.objects(resource);
    if (rv >= this.resourceVersion) return store;
    const h = this.history(resource);
    const snap = new Map(store);
    for (let i = h.events.length - 1; i >= h.start && h.events[i]!.rv > rv; i--) {
      const e = h.events[i]!;
      const key = objectKey(e.obj.metadata.namespace ?? "", e.obj.metadata.name);
      if (e.prev) snap.set(key, e.prev);
      else snap.delete(key);
    }
    return snap;
  }

  /** Forgets every retained event: the compacted revision of every resource is now. */
  compact(resources: readonly Resource[]): void {
    for (const h of this.histories.values())
      Object.assign(h, { events: [], start: 0, compactedRv: this.resourceVersion });
    for (const r of resources) this.history(r).compactedRv = this.resourceVersion;
  }

  /**
   * An update as the generic registry store makes it: `uidPrecondition` is checked against
   * storage (409); `mutate` turns the stored object into the new one; a resourceVersion in the
   * result other than the stored one is 409; then the update is validated (a changed UID is 422
   * Invalid). A racing write makes the compare-and-swap fail: the object is re-read and `mutate`
   * re-applied, as GuaranteedUpdate does.
   */
  updatePod(update: PodUpdate): KubeObject {
    const key = objectKey(update.ns, update.name);
    for (let attempt = 0; ; attempt++) {
      const current = this.objects("pods").get(key);
      if (!current) notFound("pods", update.name);
      checkPrecondition(update, current);
      const next = update.mutate(current);
      checkUpdate(update, current, next);
      if (update.racingWrite && attempt === 0) {
        // Another writer lands first: this write's compare-and-swap on the old revision fails.
        const racer = withRv(current, Number(this.nextRv()));
        this.record([this.put("pods", key, racer)]);
        this.retries++;
        continue;
      }
      return this.writeUpdate(update, current, next);
    }
  }

  /** The update's object as stored: identity from storage, a new resourceVersion, admitted. */
  private writeUpdate(
    update: PodUpdate,
    current: KubeObject,
    next: Record<string, unknown>,
  ): KubeObject {
    const curMeta = current.metadata;
    const meta = (isObject(next.metadata) ? next.metadata : {}) as Record<string, unknown>;
    const merged: KubeObject = {
      ...(next as KubeObject),
      apiVersion: "v1",
      kind: "Pod",
      metadata: {
        ...meta,
        name: update.name,
        namespace: update.ns,
        uid: curMeta.uid,
        creationTimestamp: curMeta.creationTimestamp,
        resourceVersion: this.nextRv(),
      },
    };
    // The status subresource keeps the spec; the main resource keeps the status (as the apiserver).
    if (update.sub) merged.spec = current.spec;
    else merged.status = current.status;
    update.admit(current, {
      ...merged,
      metadata: { ...merged.metadata, resourceVersion: curMeta.resourceVersion },
    });
    this.record([this.put("pods", objectKey(update.ns, update.name), merged)]);
    return merged;
  }

  /**
   * A test's pod; re-adding an existing pod replaces it (MODIFIED), keeping its identity unless
   * given.
   */
  addPod(pod: PodInput): KubeObject {
    const ns = pod.metadata.namespace ?? "default";
    const key = objectKey(ns, pod.metadata.name);
    const existing = this.objects("pods").get(key)?.metadata;
    const stored: KubeObject = {
      apiVersion: "v1",
      kind: "Pod",
      spec: { nodeName: "node-1", containers: [{ name: "main", image: "busybox" }] },
      status: { phase: "Pending" },
      ...pod,
      metadata: {
        uid: existing?.uid ?? `pod-uid-${this.nextUid()}`,
        creationTimestamp: existing?.creationTimestamp ?? new Date().toISOString(),
        ...pod.metadata,
        namespace: ns,
        resourceVersion: this.nextRv(),
      },
    };
    this.record([this.put("pods", key, stored)]);
    return stored;
  }

  /** Many NADs at once: one batch to the listeners. */
  addNads(list: NadInput[]): KubeObject[] {
    const out: KubeObject[] = [];
    const evts: HistoryEvent[] = [];
    for (const nad of list) {
      const ns = nad.metadata.namespace ?? "default";
      const key = objectKey(ns, nad.metadata.name);
      const existing = this.objects("nads").get(key)?.metadata;
      const stored: KubeObject = {
        apiVersion: "k8s.cni.cncf.io/v1",
        kind: "NetworkAttachmentDefinition",
        ...nad,
        metadata: {
          uid: existing?.uid ?? `nad-uid-${this.nextUid()}`,
          ...nad.metadata,
          namespace: ns,
          resourceVersion: this.nextRv(),
        },
      };
      evts.push(this.put("nads", key, stored));
      out.push(stored);
    }
    this.record(evts);
    return out;
  }

  addDra(resource: DraResource, obj: PodInput): KubeObject {
    const ns = isNamespacedDra(resource) ? (obj.metadata.namespace ?? "default") : "";
    const key = objectKey(ns, obj.metadata.name);
    const existing = this.objects(resource).get(key)?.metadata;
    const stored: KubeObject = {
      apiVersion: DRA_API_VERSION,
      kind: draKindOf(resource),
      ...obj,
      metadata: {
        uid: existing?.uid ?? `dra-uid-${this.nextUid()}`,
        ...obj.metadata,
        ...(ns ? { namespace: ns } : {}),
        resourceVersion: this.nextRv(),
      },
    };
    this.record([this.put(resource, key, stored)]);
    return stored;
  }
}
