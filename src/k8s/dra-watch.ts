/**
 * The daemon's DRA caches (M10): this node's ResourceSlices (field selector `spec.nodeName`) and
 * the ResourceClaims, so an ADD of a pod with claims reads nothing from the API server.
 *
 * ResourceClaims have no field selector for a node, so the claims of every namespace are watched
 * and each is trimmed as it arrives: a claim allocated to this node (its allocation's node
 * selector names it, or it has none) keeps its allocation results; any other keeps its name only
 * (~150 bytes), which is what a deleted or deallocated claim must still replace. Every claim write
 * of the cluster reaches every node's daemon (as EndpointSlices reach every kube-proxy).
 *
 * Not part of readiness: a cluster without resource.k8s.io/v1 (before Kubernetes 1.34, or the API
 * off) answers 404, logged once; the routes then read the API server live (daemon/dra-routes.ts).
 */
import {
  DRA_GROUP,
  DRA_VERSION,
  type ResourceClaim,
  type ResourceSlice,
  trimResourceClaim,
  trimResourceSlice,
} from "./dra";
import { notFoundIn, SLICE_RESOURCE } from "./rest-kube";
import { Informer, lister, type Trimmed, type WatchCacheOptions, watchKubeConfig } from "./watch-cache";

export interface DraCacheStats {
  claims: number;
  slices: number;
  /** Whether the API server serves resource.k8s.io/v1 (undefined: not asked yet). */
  served: boolean | undefined;
}

/** Whether a claim's allocation is usable on this node: its node selector names it, or it has none. */
export function allocatedToNode(claim: ResourceClaim, nodeName: string): boolean {
  const sel = claim.status?.allocation?.nodeSelector as
    | { nodeSelectorTerms?: Array<{ matchFields?: Array<{ key?: string; operator?: string; values?: string[] }> }> }
    | undefined;
  if (!sel?.nodeSelectorTerms) return true;
  return sel.nodeSelectorTerms.some((t) =>
    (t.matchFields ?? []).some((f) => f.key === "metadata.name" && f.operator === "In" && f.values?.includes(nodeName)),
  );
}

const CLAIM_PATH = `/apis/${DRA_GROUP}/${DRA_VERSION}/resourceclaims`;
const SLICE_PATH = `/apis/${DRA_GROUP}/${DRA_VERSION}/resourceslices`;

export class DraCaches {
  private readonly claims: Informer<ResourceClaim>;
  private readonly slices: Informer<ResourceSlice>;
  private served: boolean | undefined;
  private stopped = false;

  constructor(
    private readonly opts: Pick<WatchCacheOptions, "source" | "nodeName" | "list" | "log"> & {
      backoff?: { minMs: number; maxMs: number };
    },
  ) {
    const fieldSelector = this.sliceSelector();
    const trimC = (x: Record<string, unknown>): Trimmed | undefined => {
      const c = trimResourceClaim(x, "");
      if (c?.status && !allocatedToNode(c, opts.nodeName)) delete c.status;
      return c as unknown as Trimmed | undefined;
    };
    const trimS = (x: Record<string, unknown>) => trimResourceSlice(x) as unknown as Trimmed | undefined;
    const common = {
      kc: watchKubeConfig(opts.source),
      log: opts.log,
      backoff: opts.backoff ?? { minMs: 500, maxMs: 30_000 },
    };
    this.claims = new Informer<ResourceClaim>({
      ...common,
      kind: "resourceclaims",
      path: CLAIM_PATH,
      list: lister(opts.list, { path: CLAIM_PATH, query: {}, trim: trimC }),
      trim: trimC,
      decode: (x) => x as unknown as ResourceClaim,
    });
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

  /** Probes once whether resource.k8s.io/v1 is served; starts the two watches only then. */
  async start(): Promise<void> {
    try {
      // From the watch cache (resourceVersion 0) and only this node's slices: a cheap read for
      // the API server, as every node's daemon makes it at once in a rollout.
      await this.opts.list(SLICE_PATH, { fieldSelector: this.sliceSelector(), resourceVersion: "0" });
      this.served = true;
    } catch (err) {
      if (notFoundIn(err, SLICE_RESOURCE) === "not-served") {
        this.served = false;
        this.opts.log.info(
          "the API server does not serve resource.k8s.io/v1: no DRA caches (pods with claims read it live)",
        );
        return;
      }
      // Any other failure: the informers' own restart-with-backoff takes it from here.
      this.opts.log.warn({ err: (err as Error).message }, "DRA caches: first list failed; watching anyway");
    }
    // stop() while the probe was out: start nothing.
    if (this.stopped) return;
    await Promise.all([this.claims.start(), this.slices.start()]);
  }

  /** This node's slices: the watch's and the probe's field selector. */
  private sliceSelector(): string {
    return `spec.nodeName=${this.opts.nodeName}`;
  }

  /** A claim of the cache, only when it is current enough to trust (synced); else undefined (read live). */
  claim(namespace: string, name: string): ResourceClaim | undefined {
    return this.claims.synced ? this.claims.get(namespace, name) : undefined;
  }

  /** This node's slices of one driver, or undefined when the cache cannot answer (not synced, another node). */
  nodeSlices(query: { nodeName?: string | undefined; driver: string }): ResourceSlice[] | undefined {
    if (!this.slices.synced || query.nodeName !== this.opts.nodeName) return undefined;
    return this.slices.all().filter((s) => s.spec.driver === query.driver);
  }

  stats(): DraCacheStats {
    return { claims: this.claims.size, slices: this.slices.size, served: this.served };
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.served === false) return;
    await Promise.all([this.claims.stop(), this.slices.stop()]);
  }
}
