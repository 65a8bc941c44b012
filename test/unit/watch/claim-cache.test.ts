/**
 * The daemon's ResourceClaims, learnt from its pods (M10, src/watch/claim-cache.ts): read by name
 * ahead of a pending pod's ADD, served only when allocated and reserved for the pod asking, dropped
 * when no pod of the node names them, bounded.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { ClaimCache } from "../../../src/watch/claim-cache";
import type { ResourceClaim } from "../../../src/cluster/dra-objects";
import { silentLogger } from "../../../src/log/logger";
import type { Pod } from "../../../src/npwg/types";
import { propertyRuns } from "../../support/property";

const allocated = (name: string, podUid?: string): ResourceClaim => ({
  metadata: { name, namespace: "app", uid: `uid-${name}`, resourceVersion: "1" },
  status: {
    allocation: { devices: { results: [{ driver: "d", pool: "p", device: "dev", request: "r" }] } },
    ...(podUid ? { reservedFor: [{ resource: "pods", name: "web", uid: podUid }] } : {}),
  },
});

function pod(options: { name?: string; uid?: string; claims: string[]; phase?: string }): Pod {
  return {
    metadata: { name: options.name ?? "web", namespace: "app", uid: options.uid ?? "uid-web" },
    spec: {
      resourceClaims: options.claims.map((c) => ({ name: `pc-${c}`, resourceClaimName: c })),
    },
    status: { ...(options.phase ? { phase: options.phase } : { phase: "Pending" }) },
  };
}

/** A cache over an in-memory API whose claims a test edits; `reads` records each GET. */
function setup(max?: number) {
  const api = new Map<string, ResourceClaim>();
  const reads: string[] = [];
  const cache = new ClaimCache({
    get: async (namespace, name) => {
      reads.push(`${namespace}/${name}`);
      return api.get(name);
    },
    log: silentLogger(),
    max,
  });
  return { api, reads, cache };
}

const settle = () => new Promise((r) => setTimeout(r, 0));

describe("M10 the daemon's claim cache", () => {
  it("M10 a pending pod's claims are read ahead once, then served to that pod's ADD without a read", async () => {
    const { api, reads, cache } = setup();
    api.set("a", allocated("a", "uid-web"));
    api.set("b", allocated("b", "uid-web"));
    cache.podChanged(pod({ claims: ["a", "b"] }));
    cache.podChanged(pod({ claims: ["a", "b"] }));
    await settle();
    expect(reads.sort()).toEqual(["app/a", "app/b"]);
    expect(await cache.claim({ namespace: "app", name: "a", podUid: "uid-web" })).toMatchObject({
      source: "cache",
    });
    expect(reads).toHaveLength(2);
    expect(cache.stats()).toEqual({ claims: 2, reads: { prefetch: 2, request: 0 } });
  });

  it("M10 a running pod's claims are not read ahead; its ADD reads them", async () => {
    const { api, reads, cache } = setup();
    api.set("a", allocated("a", "uid-web"));
    cache.podChanged(pod({ claims: ["a"], phase: "Running" }));
    await settle();
    expect(reads).toEqual([]);
    expect(await cache.claim({ namespace: "app", name: "a", podUid: "uid-web" })).toMatchObject({
      source: "api",
    });
    expect(await cache.claim({ namespace: "app", name: "a", podUid: "uid-web" })).toMatchObject({
      source: "cache",
    });
  });

  it("M10 a copy not allocated, reserved for another pod, or asked without a pod UID is read again (never stale)", async () => {
    const { api, reads, cache } = setup();
    api.set("a", { metadata: { name: "a", namespace: "app" } });
    cache.podChanged(pod({ claims: ["a"] }));
    await settle();
    api.set("a", allocated("a", "uid-web"));
    const got = await cache.claim({ namespace: "app", name: "a", podUid: "uid-web" });
    expect(got.source).toBe("api");
    expect(got.claim?.status?.allocation).toBeDefined();
    expect((await cache.claim({ namespace: "app", name: "a", podUid: "uid-other" })).source).toBe(
      "api",
    );
    expect((await cache.claim({ namespace: "app", name: "a" })).source).toBe("api");
    expect(reads).toHaveLength(4);
  });

  it("M10 a claim leaves the cache when no pod of the node names it any more; a missing one is not kept", async () => {
    const { api, cache } = setup();
    api.set("shared", allocated("shared", "uid-web"));
    api.set("own", allocated("own", "uid-web"));
    cache.podChanged(pod({ claims: ["shared", "own"] }));
    cache.podChanged(pod({ name: "web2", uid: "uid-web2", claims: ["shared", "gone"] }));
    await settle();
    expect(cache.stats().claims).toBe(2);
    cache.podDeleted(pod({ claims: [] }));
    expect(cache.stats().claims).toBe(1);
    cache.podChanged(pod({ name: "web2", uid: "uid-web2", claims: [] }));
    expect(cache.stats().claims).toBe(0);
  });

  it("M10 a read that answers after the pod left keeps nothing; a slower older read never replaces a newer one", async () => {
    const gates: Array<(c: ResourceClaim | undefined) => void> = [];
    const cache = new ClaimCache({
      get: () => new Promise((resolve) => gates.push(resolve)),
      log: silentLogger(),
    });
    cache.podChanged(pod({ claims: ["a"] }));
    await settle();
    cache.podDeleted(pod({ claims: [] }));
    gates.shift()!(allocated("a", "uid-web"));
    await settle();
    expect(cache.stats().claims).toBe(0);

    // The pod recreated (a new UID) while the first read ahead is still out: two reads overlap.
    cache.podChanged(pod({ claims: ["a"], uid: "uid-1" }));
    cache.podChanged(pod({ claims: ["a"], uid: "uid-2" }));
    await settle();
    expect(gates).toHaveLength(2);
    const [older, newer] = gates.splice(0);
    newer!(allocated("a", "uid-2"));
    await settle();
    older!({ metadata: { name: "a", namespace: "app" } });
    await settle();
    expect((await cache.claim({ namespace: "app", name: "a", podUid: "uid-2" })).source).toBe(
      "cache",
    );
  });

  it("M10 any sequence of pod events: the cache holds only claims a pod of the node names, never more than its bound", async () => {
    const name = fc.constantFrom("a", "b", "c", "d", "e");
    const event = fc.record({
      pod: fc.constantFrom("p1", "p2", "p3"),
      uid: fc.constantFrom("u1", "u2"),
      claims: fc.uniqueArray(name, { maxLength: 4 }),
      deleted: fc.boolean(),
    });
    await fc.assert(
      fc.asyncProperty(fc.array(event, { maxLength: 30 }), async (events) => {
        const { api, cache } = setup(3);
        for (const n of ["a", "b", "c", "d", "e"]) api.set(n, allocated(n, "u1"));
        const named = new Map<string, string[]>();
        for (const e of events) {
          const p = pod({ name: e.pod, uid: e.uid, claims: e.claims });
          if (e.deleted) cache.podDeleted(p), named.delete(e.pod);
          else cache.podChanged(p), named.set(e.pod, e.claims);
          await settle();
        }
        const all = new Set([...named.values()].flat());
        const kept = cache.stats().claims;
        expect(kept).toBeLessThanOrEqual(Math.min(3, all.size));
        for (const n of ["a", "b", "c", "d", "e"].filter((x) => !all.has(x))) {
          const before = cache.stats().reads.request;
          await cache.claim({ namespace: "app", name: n, podUid: "u1" });
          expect(
            cache.stats().reads.request,
            `claim ${n} named by no pod was served from the cache`,
          ).toBe(before + 1);
        }
      }),
      propertyRuns({ seed: 20261126, numRuns: 200 }),
    );
  });
});
