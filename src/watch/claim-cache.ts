/**
 * The daemon's ResourceClaims (M10), learnt from the pods of its node instead of a cluster-wide
 * watch (claims have no field selector for a node: such a watch would send every claim of the
 * cluster to every node). A pod names its claims (`spec.resourceClaims[].resourceClaimName`, or
 * the name generated from a template in `status.resourceClaimStatuses`); the daemon GETs each by
 * name and keeps it, keyed by namespace/name with its UID and resourceVersion, until no pod of the
 * node names it any more. The number of entries is bounded (least recently used go first).
 *
 * When it reads: as soon as a pod that has not started yet (phase Pending) appears on the node, or
 * a pod's claims, or its UID, change. The scheduler allocates a claim and reserves it for the pod
 * before it binds the pod to a node, so that read already sees what the ADD needs, and the ADD
 * (seconds later, after kubelet prepared the devices) reads nothing from the API server. Pods
 * already running when the daemon starts are not read: their ADD is over; a sandbox re-created
 * later reads its claims at its ADD.
 *
 * When a cached claim is served: only when it is allocated and reserved for the pod asking. The
 * API server refuses to change or clear an allocation while a pod is in `reservedFor`, so such a
 * copy cannot be stale. Anything else (no copy, a copy not allocated yet, one reserved for another
 * pod or an older pod of the same name) is read again from the API server: a GET at ADD time is
 * authoritative, never an old "not allocated".
 */
import type { Logger } from "../log/logger";
import type { Pod } from "../npwg/types";
import type { ResourceClaim } from "../cluster/dra-objects";
import { allocatedForPod, podClaimNames } from "../dra/pod-claims";
import { Limiter } from "./limiter";

/** GET one claim by name; undefined when it does not exist. */
export type ClaimGetter = (namespace: string, name: string) => Promise<ResourceClaim | undefined>;

/** Entries kept at most: a node's pods name a few claims each; more than this only costs reads. */
const CLAIM_CACHE_MAX = 1024;
/**
 * Reads ahead at once: the daemon's API client has few connections, and an ADD's writes share them.
 */
const PREFETCH_CONCURRENCY = 2;

interface Entry {
  claim: ResourceClaim;
  /** The order of the read that produced it: a slower, older read never replaces a newer answer. */
  seq: number;
}

/** What the cache keeps of a pod of the node: its UID and the claims it names. */
interface PodRefs {
  uid: string | undefined;
  claims: string[];
}

export interface ClaimCacheStats {
  claims: number;
  /**
   * Reads of a claim by name, by why: ahead of the ADD, or at a request the cache could not answer.
   */
  reads: { prefetch: number; request: number };
}

export class ClaimCache {
  private readonly entries = new Map<string, Entry>();
  private readonly pods = new Map<string, PodRefs>();
  /** Per claim key, the pods of the node naming it. */
  private readonly users = new Map<string, Set<string>>();
  private readonly inflight = new Map<string, Promise<ResourceClaim | undefined>>();
  /** Reads ahead out at once, whatever else the node's limiter allows. */
  private readonly prefetch = new Limiter(PREFETCH_CONCURRENCY);
  private seq = 0;
  private readonly reads = { prefetch: 0, request: 0 };
  /** Set once the API server said it serves no ResourceClaims: no read ahead. */
  private off = false;

  constructor(
    private readonly options: {
      get: ClaimGetter;
      log: Logger;
      max?: number | undefined;
      /** The node's limiter (the daemon's): a read ahead takes one of its slots too. */
      node?: Limiter | undefined;
    },
  ) {}

  /**
   * A pod of the node was added or changed (the pod watch): track its claims, read new ones ahead.
   */
  podChanged(pod: Pod): void {
    const key = podKey(pod);
    const ns = pod.metadata.namespace;
    const claims = podClaimNames(pod).map((name) => `${ns}/${name}`);
    const before = this.pods.get(key);
    if (claims.length === 0) return this.podDeleted(pod);
    const uid = pod.metadata.uid;
    const changed = !before || before.uid !== uid || before.claims.join("\n") !== claims.join("\n");
    this.setRefs(key, { uid, claims });
    if (!changed || this.off || !startsLater(pod) || !uid) return;
    for (const claimKey of claims) {
      const e = this.entries.get(claimKey);
      if (e && allocatedForPod(e.claim, uid)) continue;
      void this.schedule(() => this.readAhead(claimKey, uid)).catch((err: unknown) =>
        this.options.log.debug(
          { claim: claimKey, err: (err as Error).message },
          "claim read ahead failed",
        ),
      );
    }
  }

  /** A pod left the node (deleted, or gone at a relist): drop the claims no other pod names. */
  podDeleted(pod: Pod): void {
    this.setRefs(podKey(pod), undefined);
  }

  /**
   * The claim for an ADD of the pod `podUid`: the cached copy when it is allocated and reserved
   * for that pod, else a read from the API server (kept while a pod of the node names it).
   * Undefined: no such claim.
   */
  async claim(ref: { namespace: string; name: string; podUid?: string | undefined }): Promise<{
    claim: ResourceClaim | undefined;
    source: "cache" | "api";
  }> {
    const key = `${ref.namespace}/${ref.name}`;
    await this.inflight.get(key)?.catch(() => undefined);
    const e = this.entries.get(key);
    if (e && ref.podUid && allocatedForPod(e.claim, ref.podUid)) {
      this.touch(key, e);
      return { claim: e.claim, source: "cache" };
    }
    return { claim: await this.read(key, "request"), source: "api" };
  }

  /** The API server does not serve resource.k8s.io/v1: reads ahead would all fail. */
  disablePrefetch(): void {
    this.off = true;
  }

  stats(): ClaimCacheStats {
    return { claims: this.entries.size, reads: { ...this.reads } };
  }

  /** A read ahead whose turn came: skipped when the pod left meanwhile or the claim is cached. */
  private async readAhead(key: string, podUid: string): Promise<void> {
    const e = this.entries.get(key);
    if (!this.users.has(key) || (e && allocatedForPod(e.claim, podUid))) return;
    await this.read(key, "prefetch");
  }

  private async read(key: string, why: "prefetch" | "request"): Promise<ResourceClaim | undefined> {
    const seq = ++this.seq;
    this.reads[why]++;
    const [namespace, name] = splitKey(key);
    const p = this.options.get(namespace, name);
    this.inflight.set(key, p);
    try {
      const claim = await p;
      this.store(key, { claim, seq });
      return claim;
    } finally {
      if (this.inflight.get(key) === p) this.inflight.delete(key);
    }
  }

  private store(key: string, fetched: { claim: ResourceClaim | undefined; seq: number }): void {
    const e = this.entries.get(key);
    if (e && e.seq > fetched.seq) return;
    // Only claims a pod of the node names (the pod may have gone while the read was out).
    if (!fetched.claim || !this.users.has(key)) {
      this.entries.delete(key);
      return;
    }
    this.touch(key, { claim: fetched.claim, seq: fetched.seq });
    const max = this.options.max ?? CLAIM_CACHE_MAX;
    for (const oldest of this.entries.keys()) {
      if (this.entries.size <= max) break;
      this.entries.delete(oldest);
    }
  }

  /** Most recently used last (Map order): eviction takes the first. */
  private touch(key: string, entry: Entry): void {
    this.entries.delete(key);
    this.entries.set(key, entry);
  }

  /** Records the claims a pod names; a claim no pod of the node names any more leaves the cache. */
  private setRefs(pod: string, refs: PodRefs | undefined): void {
    const kept = new Set(refs?.claims);
    for (const claimKey of this.pods.get(pod)?.claims ?? []) {
      if (kept.has(claimKey)) continue;
      const users = this.users.get(claimKey);
      users?.delete(pod);
      if (users?.size) continue;
      this.users.delete(claimKey);
      this.entries.delete(claimKey);
    }
    if (!refs) return void this.pods.delete(pod);
    this.pods.set(pod, refs);
    for (const claimKey of refs.claims) {
      const users = this.users.get(claimKey) ?? new Set<string>();
      users.add(pod);
      this.users.set(claimKey, users);
    }
  }

  /**
   * Runs `job` when fewer than PREFETCH_CONCURRENCY reads ahead are out and the node's limiter
   * has a slot: a read ahead only saves an ADD its own read, it never crowds out other work.
   */
  private schedule<T>(job: () => Promise<T>): Promise<T> {
    const node = this.options.node;
    return this.prefetch.run(() => (node ? node.run(job) : job()));
  }
}

const podKey = (pod: Pod) => `${pod.metadata.namespace}/${pod.metadata.name}`;

function splitKey(key: string): [string, string] {
  const i = key.indexOf("/");
  return [key.slice(0, i), key.slice(i + 1)];
}

/** A pod whose ADD is still ahead: not started yet, not being deleted. */
function startsLater(pod: Pod): boolean {
  const phase = pod.status?.phase;
  return (phase === undefined || phase === "Pending") && !pod.metadata.deletionTimestamp;
}
