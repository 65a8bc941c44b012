/**
 * The daemon's DRA caches (M10): this node's ResourceSlices (a watch with field selector
 * `spec.nodeName`) and the ResourceClaims its pods name, read by name (claim-cache.ts), so an
 * ADD of a pod with claims reads nothing from the API server. ResourceClaims have no field
 * selector for a node: a watch of them would send every claim of the cluster to every node.
 *
 * Not part of readiness: a cluster without resource.k8s.io/v1 (before Kubernetes 1.34, or the API
 * off) answers 404, logged once; the routes then read the API server live (daemon/dra-routes.ts).
 */
import type { Pod } from "../npwg/types";
import { ClaimCache, type ClaimGetter } from "./claim-cache";
import type { Limiter } from "./limiter";
import {
  DRA_GROUP,
  DRA_VERSION,
  type ResourceClaim,
  type ResourceSlice,
  trimResourceSlice,
} from "../cluster/dra-objects";
import { sourceKubeConfig } from "../kubeapi/client-node-auth";
import { notFoundIn, SLICE_RESOURCE } from "../kubeapi/rest-kube";
import { Informer, lister, type Trimmed, type WatchCacheOptions } from "./watch-cache";

interface DraCacheStats {
  claims: number;
  slices: number;
  /** Claims read by name: ahead of an ADD, or at a request the cache could not answer. */
  claimReads: { prefetch: number; request: number };
  /** Whether the API server serves resource.k8s.io/v1 (undefined: not asked yet). */
  served: boolean | undefined;
}

const SLICE_PATH = `/apis/${DRA_GROUP}/${DRA_VERSION}/resourceslices`;

export class DraCaches {
  private readonly claims: ClaimCache;
  private readonly slices: Informer<ResourceSlice>;
  private served: boolean | undefined;
  private stopped = false;

  constructor(
    private readonly opts: Pick<WatchCacheOptions, "source" | "nodeName" | "list" | "log"> & {
      /** GET one ResourceClaim by name (the daemon's API client). */
      getClaim: ClaimGetter;
      backoff?: { minMs: number; maxMs: number };
      claimCacheMax?: number | undefined;
      /** The node's limiter of background work, shared with hot-plug (watch/limiter.ts). */
      limiter?: Limiter | undefined;
    },
  ) {
    const fieldSelector = this.sliceSelector();
    const trimS = (x: Record<string, unknown>) =>
      trimResourceSlice(x) as unknown as Trimmed | undefined;
    const common = {
      kc: sourceKubeConfig(opts.source),
      log: opts.log,
      backoff: opts.backoff ?? { minMs: 500, maxMs: 30_000 },
    };
    const { getClaim: get, log, claimCacheMax: max, limiter: node } = opts;
    this.claims = new ClaimCache({ get, log, max, node });
    this.slices = new Informer<ResourceSlice>({
      ...common,
      kind: "resourceslices",
      path: SLICE_PATH,
      fieldSelector,
      list: lister(opts.list, { path: SLICE_PATH, query: { fieldSelector }, trim: trimS }),
      trim: trimS,
      decode: (x) => x as unknown as ResourceSlice,
    });
  }

  /** Probes once whether resource.k8s.io/v1 is served; starts the slice watch only then. */
  async start(): Promise<void> {
    try {
      // From the watch cache (resourceVersion 0) and only this node's slices: a cheap read for
      // the API server, as every node's daemon makes it at once in a rollout.
      await this.opts.list(SLICE_PATH, {
        fieldSelector: this.sliceSelector(),
        resourceVersion: "0",
      });
      this.served = true;
    } catch (err) {
      if (notFoundIn(err, SLICE_RESOURCE) === "not-served") {
        this.served = false;
        this.claims.disablePrefetch();
        this.opts.log.info(
          "the API server does not serve resource.k8s.io/v1: no DRA caches (pods with claims " +
            "read it live)",
        );
        return;
      }
      // Any other failure: the informers' own restart-with-backoff takes it from here.
      this.opts.log.warn(
        { err: (err as Error).message },
        "DRA caches: first list failed; watching anyway",
      );
    }
    // stop() while the probe was out: start nothing.
    if (this.stopped) return;
    await this.slices.start();
  }

  /** This node's slices: the watch's and the probe's field selector. */
  private sliceSelector(): string {
    return `spec.nodeName=${this.opts.nodeName}`;
  }

  /** A claim for an ADD of the pod `podUid`: cached when that cannot be stale, else read live. */
  claim(ref: { namespace: string; name: string; podUid?: string | undefined }): Promise<{
    claim: ResourceClaim | undefined;
    source: "cache" | "api";
  }> {
    return this.claims.claim(ref);
  }

  /** The pod watch of this node saw a pod added or changed, or deleted. */
  podEvent(event: "change" | "delete", pod: Pod): void {
    if (event === "delete") this.claims.podDeleted(pod);
    else this.claims.podChanged(pod);
  }

  /**
   * This node's slices of one driver, or undefined when the cache cannot answer (not synced,
   * another node).
   */
  nodeSlices(query: {
    nodeName?: string | undefined;
    driver: string;
  }): ResourceSlice[] | undefined {
    if (!this.slices.synced || query.nodeName !== this.opts.nodeName) return undefined;
    return this.slices.all().filter((s) => s.spec.driver === query.driver);
  }

  stats(): DraCacheStats {
    const c = this.claims.stats();
    return { claims: c.claims, claimReads: c.reads, slices: this.slices.size, served: this.served };
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.served === false) return;
    await this.slices.stop();
  }
}
