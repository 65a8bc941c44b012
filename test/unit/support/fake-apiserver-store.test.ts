/**
 * The fake API server's storage (test/support/fake-apiserver/store.ts, patch.ts), pinned to
 * kube-apiserver's: merge patch as RFC 7386, strategic merge patch merging named lists, updates as
 * the generic registry store makes them (PUT's UID precondition 409, PATCH's UID change 422
 * Invalid, a stale resourceVersion 409, GuaranteedUpdate re-applying after a racing write), the
 * status subresource keeping the spec, and one global resourceVersion with a per-resource history.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { mergePatch, strategicMergePatch } from "../../support/fake-apiserver/patch";
import { HttpError } from "../../support/fake-apiserver/status";
import { FIRST_RV, ObjectStore, type PodUpdate } from "../../support/fake-apiserver/store";
import type { KubeObject } from "../../support/fake-apiserver/types";
import { propertyRuns } from "../../support/property";

const RUNS = propertyRuns({ seed: 20261126, numRuns: 300 });

function thrown(run: () => unknown): HttpError {
  try {
    run();
  } catch (err) {
    if (err instanceof HttpError) return err;
    throw err;
  }
  throw new Error("expected an HttpError");
}

describe("merge patch (RFC 7386)", () => {
  it("follows the RFC's examples: null removes, arrays and scalars replace, objects merge", () => {
    expect(mergePatch({ a: "b" }, { a: "c" })).toEqual({ a: "c" });
    expect(mergePatch({ a: "b" }, { b: "c" })).toEqual({ a: "b", b: "c" });
    expect(mergePatch({ a: "b" }, { a: null })).toEqual({});
    expect(mergePatch({ a: ["b"] }, { a: "c" })).toEqual({ a: "c" });
    expect(mergePatch({ a: [{ b: "c" }] }, { a: [1] })).toEqual({ a: [1] });
    expect(mergePatch({ e: null }, { a: 1 })).toEqual({ e: null, a: 1 });
    expect(mergePatch([1, 2], { a: "b", c: null })).toEqual({ a: "b" });
    expect(mergePatch({}, { a: { bb: { ccc: null } } })).toEqual({ a: { bb: {} } });
  });

  it("is idempotent and leaves its inputs alone", () => {
    const json = fc.jsonValue({ maxDepth: 3 });
    fc.assert(
      fc.property(json, json, (target, patch) => {
        const before = JSON.stringify([target, patch]);
        const once = mergePatch(target, patch);
        expect(mergePatch(once, patch)).toEqual(once);
        expect(JSON.stringify([target, patch])).toBe(before);
      }),
      RUNS,
    );
  });
});

describe("strategic merge patch", () => {
  const pod = {
    spec: {
      containers: [
        { name: "a", image: "one", env: [{ name: "X", value: "1" }] },
        { name: "b", image: "two" },
      ],
      args: ["x", "y"],
    },
  };

  it("merges lists of named objects by name; `$patch: delete` removes one", () => {
    expect(
      strategicMergePatch(pod, {
        spec: {
          containers: [
            { name: "b", image: "three" },
            { name: "c", image: "four" },
          ],
        },
      }),
    ).toEqual({
      spec: {
        containers: [
          { name: "a", image: "one", env: [{ name: "X", value: "1" }] },
          { name: "b", image: "three" },
          { name: "c", image: "four" },
        ],
        args: ["x", "y"],
      },
    });
    const deleted = strategicMergePatch(pod, {
      spec: { containers: [{ name: "a", $patch: "delete" }] },
    });
    expect(deleted).toEqual({
      spec: { containers: [{ name: "b", image: "two" }], args: ["x", "y"] },
    });
  });

  it("replaces lists of anything else, as a merge patch does", () => {
    expect(strategicMergePatch(pod, { spec: { args: ["z"] } })).toEqual({
      spec: { containers: pod.spec.containers, args: ["z"] },
    });
  });

  it("equals a merge patch when the patch has no list of named objects and no directive", () => {
    const scalarsOnly = fc
      .jsonValue({ maxDepth: 3 })
      .filter((v) => !JSON.stringify(v).includes("$patch"));
    const noNamedLists = (v: unknown): boolean =>
      Array.isArray(v)
        ? !v.every(
            (x) => typeof x === "object" && x && typeof (x as { name?: unknown }).name === "string",
          ) && v.every(noNamedLists)
        : typeof v === "object" && v !== null
          ? Object.values(v).every(noNamedLists)
          : true;
    fc.assert(
      fc.property(
        fc.jsonValue({ maxDepth: 3 }),
        scalarsOnly.filter(noNamedLists),
        (target, patch) => {
          expect(strategicMergePatch(target, patch)).toEqual(mergePatch(target, patch));
        },
      ),
      RUNS,
    );
  });
});

describe("updates, as the generic registry store makes them", () => {
  function storeWithPod(): { store: ObjectStore; pod: KubeObject } {
    const store = new ObjectStore();
    const pod = store.addPod({
      metadata: { name: "p1", namespace: "ns1" },
      spec: { nodeName: "node-1" },
      status: { phase: "Pending" },
    });
    return { store, pod };
  }
  const update = (over: Partial<PodUpdate>): PodUpdate => ({
    ns: "ns1",
    name: "p1",
    sub: false,
    uidPrecondition: undefined,
    mutate: (current) => current,
    racingWrite: false,
    admit: () => {},
    ...over,
  });

  it("gives every write the next global resourceVersion", () => {
    const { store, pod } = storeWithPod();
    expect(pod.metadata.resourceVersion).toBe(String(FIRST_RV + 1));
    const nad = store.addNads([{ metadata: { name: "net-a" } }])[0]!;
    expect(nad.metadata).toMatchObject({
      namespace: "default",
      resourceVersion: String(FIRST_RV + 2),
    });
    const next = store.updatePod(update({}));
    expect(next.metadata.resourceVersion).toBe(String(FIRST_RV + 3));
    expect(store.history("pods").events.map((e) => e.type)).toEqual(["ADDED", "MODIFIED"]);
    expect(store.history("nads").events).toHaveLength(1);
  });

  it("PUT's UID precondition that does not match is 409 Conflict, worded as the registry", () => {
    const { store, pod } = storeWithPod();
    const err = thrown(() => store.updatePod(update({ uidPrecondition: "other-uid" })));
    expect(err.code).toBe(409);
    expect(err.message).toBe(
      `Operation cannot be fulfilled on pods "p1": Precondition failed: UID in precondition: ` +
        `other-uid, UID in object meta: ${String(pod.metadata.uid)}`,
    );
    expect(err.details).toEqual({ name: "p1", kind: "pods" });
  });

  it("a patch that changes the UID is 422 Invalid (no storage precondition on PATCH)", () => {
    const { store } = storeWithPod();
    const mutate = (current: KubeObject) =>
      mergePatch(current, { metadata: { uid: "x" } }) as KubeObject;
    const err = thrown(() => store.updatePod(update({ mutate })));
    expect(err.code).toBe(422);
    expect(err.message).toBe(
      'Pod "p1" is invalid: metadata.uid: Invalid value: "x": field is immutable',
    );
    expect(err.details).toEqual({
      name: "p1",
      kind: "Pod",
      causes: [
        {
          reason: "FieldValueInvalid",
          message: 'Invalid value: "x": field is immutable',
          field: "metadata.uid",
        },
      ],
    });
  });

  it("a stale resourceVersion is 409; none at all applies to whatever is stored", () => {
    const { store } = storeWithPod();
    const stale = (current: KubeObject) =>
      mergePatch(current, { metadata: { resourceVersion: "1" } }) as KubeObject;
    const err = thrown(() => store.updatePod(update({ mutate: stale })));
    expect(err.code).toBe(409);
    expect(err.message).toMatch(/the object has been modified; please apply your changes/);
    expect(thrown(() => store.updatePod(update({ name: "gone" }))).code).toBe(404);
  });

  it("a racing write is re-read and the patch re-applied (GuaranteedUpdate), never a 409", () => {
    const { store, pod } = storeWithPod();
    const seen: string[] = [];
    const mutate = (current: KubeObject) => {
      seen.push(String(current.metadata.resourceVersion));
      return mergePatch(current, { metadata: { labels: { a: "b" } } }) as KubeObject;
    };
    const next = store.updatePod(update({ mutate, racingWrite: true }));
    expect(seen).toEqual([pod.metadata.resourceVersion, String(FIRST_RV + 2)]);
    expect(store.retries).toBe(1);
    expect(next.metadata).toMatchObject({
      labels: { a: "b" },
      resourceVersion: String(FIRST_RV + 3),
    });
  });

  it("the status subresource keeps the stored spec; the main resource keeps the status", () => {
    const { store } = storeWithPod();
    const both = (current: KubeObject) => ({
      ...current,
      spec: { nodeName: "x" },
      status: { phase: "Running" },
    });
    const viaStatus = store.updatePod(update({ sub: true, mutate: both }));
    expect(viaStatus.spec).toEqual({ nodeName: "node-1" });
    expect(viaStatus.status).toEqual({ phase: "Running" });
    const viaMain = store.updatePod(
      update({ mutate: (current) => ({ ...current, spec: { nodeName: "y" }, status: {} }) }),
    );
    expect(viaMain.spec).toEqual({ nodeName: "y" });
    expect(viaMain.status).toEqual({ phase: "Running" });
  });

  it("admission sees the old object and the new one at the old resourceVersion; a denial writes nothing", () => {
    const { store, pod } = storeWithPod();
    const admitted: string[] = [];
    const admit = (old: KubeObject, next: KubeObject) => {
      admitted.push(
        `${String(old.metadata.resourceVersion)}→${String(next.metadata.resourceVersion)}`,
      );
      throw new HttpError(403, "denied");
    };
    expect(thrown(() => store.updatePod(update({ admit }))).code).toBe(403);
    expect(admitted).toEqual([`${pod.metadata.resourceVersion}→${pod.metadata.resourceVersion}`]);
    expect(store.objects("pods").get("ns1/p1")).toBe(pod);
    expect(store.history("pods").events).toHaveLength(1);
  });
});

describe("history and snapshots", () => {
  it("keeps historyLimit events per resource; older ones are compacted away", () => {
    const store = new ObjectStore({ historyLimit: 3 });
    for (let i = 0; i < 5; i++) store.addPod({ metadata: { name: `p${i}` } });
    const pods = store.history("pods");
    expect(pods.events.slice(pods.start).map((e) => e.obj.metadata.name)).toEqual([
      "p2",
      "p3",
      "p4",
    ]);
    expect(pods.compactedRv).toBe(FIRST_RV + 2);
    expect(store.history("nads").compactedRv).toBe(FIRST_RV);
  });

  it("undoes the retained history back to a revision; a delete is DELETED at a new revision", () => {
    const store = new ObjectStore();
    store.addPod({ metadata: { name: "a" }, status: { phase: "Pending" } });
    const at = store.resourceVersion;
    store.addPod({ metadata: { name: "a" }, status: { phase: "Running" } });
    store.addPod({ metadata: { name: "b" } });
    expect(store.remove("pods", "default", "a")).toBe(true);
    expect(store.remove("pods", "default", "a")).toBe(false);
    const last = store.history("pods").events.at(-1)!;
    expect(last).toMatchObject({ type: "DELETED", rv: store.resourceVersion });
    expect(last.obj.metadata.resourceVersion).toBe(String(store.resourceVersion));
    const snap = store.snapshotAt("pods", at);
    expect([...snap.keys()]).toEqual(["default/a"]);
    expect(snap.get("default/a")!.status).toEqual({ phase: "Pending" });
    expect([...store.objects("pods").keys()]).toEqual(["default/b"]);
  });

  it("hands each batch to the listeners once, after the history has it", () => {
    const store = new ObjectStore();
    const batches: number[] = [];
    store.listeners.add((evts) => batches.push(evts.length, store.history("nads").events.length));
    store.addNads([{ metadata: { name: "x" } }, { metadata: { name: "y" } }]);
    expect(batches).toEqual([2, 2]);
  });
});
