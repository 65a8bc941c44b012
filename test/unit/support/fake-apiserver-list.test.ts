/**
 * LIST in the fake API server (test/support/fake-apiserver/list.ts, selectors.ts), pinned to
 * kube-apiserver's: ListOptions validation (400 and 422 with its wording), where the cacher serves
 * a LIST from (watch cache or etcd), paging at a consistent snapshot with continue tokens, 410
 * Expired once compacted (with the inconsistent-continue token), 504 for a future revision, and
 * the field and label selectors it accepts.
 */
import { describe, expect, it } from "vitest";
import {
  decodeContinue,
  encodeContinue,
  type ListOptions,
  listFromCache,
  listFromStorage,
  listOptions,
  servesFromStorage,
} from "../../support/fake-apiserver/list";
import { parseFieldSelector, parseLabelSelector } from "../../support/fake-apiserver/selectors";
import { HttpError } from "../../support/fake-apiserver/status";
import { FIRST_RV, ObjectStore } from "../../support/fake-apiserver/store";
import type { KubeObject } from "../../support/fake-apiserver/types";

function thrown(run: () => unknown): HttpError {
  try {
    run();
  } catch (err) {
    if (err instanceof HttpError) return err;
    throw err;
  }
  throw new Error("expected an HttpError");
}

const options = (query: string): ListOptions => listOptions(new URLSearchParams(query));
const all = () => true;

/** Pods a..e in namespace ns1, written in that order (revisions FIRST_RV+1 .. +5). */
function storeOfFive(): ObjectStore {
  const store = new ObjectStore();
  for (const name of ["c", "a", "e", "b", "d"])
    store.addPod({ metadata: { name, namespace: "ns1" } });
  return store;
}

const names = (items: KubeObject[]) => items.map((o) => o.metadata.name);

describe("ListOptions validation", () => {
  it("refuses a resourceVersion that is not a number (400)", () => {
    const err = thrown(() => options("resourceVersion=abc"));
    expect([err.code, err.message]).toEqual([400, 'invalid resource version: "abc"']);
  });

  it("refuses resourceVersionMatch combinations with one 422 naming each, as ValidateListOptions", () => {
    const err = thrown(() => options("resourceVersionMatch=Exact&continue=x"));
    expect(err.code).toBe(422);
    expect(err.message).toBe(
      'ListOptions.meta.k8s.io "" is invalid: resourceVersionMatch: Forbidden: ' +
        "resourceVersionMatch is forbidden unless resourceVersion is provided, " +
        "resourceVersionMatch: " +
        "Forbidden: resourceVersionMatch is forbidden when continue is provided",
    );
    expect(err.details).toEqual({ group: "meta.k8s.io", kind: "ListOptions" });
    expect(thrown(() => options("resourceVersion=0&resourceVersionMatch=Exact")).message).toMatch(
      /resourceVersionMatch "exact" is forbidden for resourceVersion "0"$/,
    );
    expect(thrown(() => options("resourceVersion=5&resourceVersionMatch=Newest")).message).toBe(
      'ListOptions.meta.k8s.io "" is invalid: resourceVersionMatch: Unsupported value: "Newest"',
    );
  });

  it("refuses a resourceVersion beside continue (400), except 0", () => {
    expect(thrown(() => options("resourceVersion=5&continue=x")).message).toBe(
      "specifying resource version is not allowed when using continue",
    );
    expect(options("resourceVersion=0&continue=x").continue).toBe("x");
  });

  it("serves from etcd or the watch cache by the cacher's rules", () => {
    const served = (query: string) => (servesFromStorage(options(query)) ? "etcd" : "cache");
    expect(served("")).toBe("etcd");
    expect(served("limit=10")).toBe("etcd");
    expect(served("resourceVersion=0")).toBe("cache");
    expect(served("resourceVersion=0&limit=10")).toBe("cache");
    expect(served("resourceVersion=1005")).toBe("cache");
    expect(served("resourceVersion=1005&limit=10")).toBe("etcd");
    expect(served("resourceVersion=1005&resourceVersionMatch=NotOlderThan")).toBe("cache");
    expect(served("resourceVersion=1005&resourceVersionMatch=Exact")).toBe("etcd");
    expect(served("continue=x")).toBe("etcd");
  });
});

describe("the watch cache", () => {
  it("answers the current state whole, its limit ignored", () => {
    const store = storeOfFive();
    const page = listFromCache(store, {
      resource: "pods",
      filter: all,
      options: options("resourceVersion=0&limit=2"),
    });
    expect(page.items).toHaveLength(5);
    expect(page.metadata).toEqual({ resourceVersion: String(FIRST_RV + 5) });
  });

  it("a revision it has not reached is 504 Timeout with ResourceVersionTooLarge and Retry-After 1", () => {
    const store = storeOfFive();
    const err = thrown(() =>
      listFromCache(store, {
        resource: "pods",
        filter: all,
        options: options("resourceVersion=2000"),
      }),
    );
    expect([err.code, err.reason, err.message]).toEqual([
      504,
      "Timeout",
      "Too large resource version: 2000, current: 1005",
    ]);
    expect(err.details).toMatchObject({
      retryAfterSeconds: 1,
      causes: [{ reason: "ResourceVersionTooLarge" }],
    });
  });
});

describe("etcd: paging at a snapshot", () => {
  it("pages in key order with a continue token and remainingItemCount, all at the first page's revision", () => {
    const store = storeOfFive();
    const list = (query: string) =>
      listFromStorage(store, { resource: "pods", filter: all, options: options(query) });
    const first = list("limit=2");
    expect(names(first.items)).toEqual(["a", "b"]);
    expect(first.metadata).toMatchObject({ resourceVersion: "1005", remainingItemCount: 3 });
    // Writes after the first page do not show in the next ones.
    store.addPod({ metadata: { name: "aa", namespace: "ns1" } });
    store.remove("pods", "ns1", "c");
    const second = list(`limit=2&continue=${String(first.metadata.continue)}`);
    expect(names(second.items)).toEqual(["c", "d"]);
    expect(second.metadata.resourceVersion).toBe("1005");
    const third = list(`limit=2&continue=${String(second.metadata.continue)}`);
    expect(names(third.items)).toEqual(["e"]);
    expect(third.metadata.continue).toBeUndefined();
    expect(names(list("").items)).toEqual(["a", "aa", "b", "d", "e"]);
  });

  it("reads at an exact revision", () => {
    const store = storeOfFive();
    const page = listFromStorage(store, {
      resource: "pods",
      filter: all,
      options: options("resourceVersion=1002&resourceVersionMatch=Exact"),
    });
    expect(names(page.items)).toEqual(["a", "c"]);
    expect(page.metadata).toEqual({ resourceVersion: "1002" });
  });

  it("a compacted revision is 410; an expired continuation hands back a token at the newest revision", () => {
    const store = storeOfFive();
    const list = (query: string) =>
      listFromStorage(store, { resource: "pods", filter: all, options: options(query) });
    const first = list("limit=2");
    store.addPod({ metadata: { name: "bb", namespace: "ns1" } });
    store.compact(["pods", "nads"]);
    const err = thrown(() => list("resourceVersion=1002&resourceVersionMatch=Exact"));
    expect([err.code, err.message]).toEqual([
      410,
      "The resourceVersion for the provided list is too old.",
    ]);
    const expired = thrown(() => list(`limit=2&continue=${String(first.metadata.continue)}`));
    expect(expired.code).toBe(410);
    expect(expired.message).toMatch(/^The provided continue parameter is too old/);
    expect(decodeContinue(expired.listContinue!)).toEqual({
      rv: -1,
      start: decodeContinue(String(first.metadata.continue)).start,
    });
    const resumed = list(`limit=10&continue=${expired.listContinue!}`);
    // Inconsistent, as the 410's message warns: the write after the first page shows.
    expect(names(resumed.items)).toEqual(["bb", "c", "d", "e"]);
    expect(resumed.metadata.resourceVersion).toBe("1006");
  });

  it("a continue token that does not decode is 400", () => {
    const store = storeOfFive();
    for (const token of ["%%%", Buffer.from('{"v":"x"}').toString("base64url")]) {
      const err = thrown(() =>
        listFromStorage(store, {
          resource: "pods",
          filter: all,
          options: options(`continue=${token}`),
        }),
      );
      expect([err.code, err.message]).toEqual([
        400,
        "continue key is not valid: the token does not decode",
      ]);
    }
    expect(decodeContinue(encodeContinue(7, "ns/a"))).toEqual({ rv: 7, start: "ns/a" });
  });
});

describe("selectors", () => {
  const pod = (labels: Record<string, string>, nodeName = "node-1"): KubeObject => ({
    metadata: { name: "p", namespace: "ns1", labels },
    spec: { nodeName },
    status: { phase: "Running" },
  });

  it("field selectors over the indexed fields only; else 400 as the apiserver", () => {
    const onNode = parseFieldSelector("spec.nodeName=node-1,status.phase!=Pending", "pods");
    expect(onNode(pod({}))).toBe(true);
    expect(onNode(pod({}, "node-2"))).toBe(false);
    expect(thrown(() => parseFieldSelector("spec.hostname=x", "pods")).message).toBe(
      "field label not supported: spec.hostname",
    );
    expect(thrown(() => parseFieldSelector("spec.nodeName", "pods")).message).toBe(
      'invalid field selector: "spec.nodeName": does not contain an operator',
    );
    expect(thrown(() => parseFieldSelector("spec.nodeName=x", "nads")).code).toBe(400);
    expect(
      parseFieldSelector(
        "spec.driver=d",
        "resourceslices",
      )({ metadata: { name: "s" }, spec: { driver: "d" } }),
    ).toBe(true);
  });

  it("label selectors: equality, existence and sets", () => {
    const matches = (sel: string, labels: Record<string, string>) =>
      parseLabelSelector(sel)(pod(labels));
    expect(matches("app=web", { app: "web" })).toBe(true);
    expect(matches("app==web", { app: "db" })).toBe(false);
    expect(matches("app!=web", {})).toBe(true);
    expect(matches("app", { app: "" })).toBe(true);
    expect(matches("!app", { app: "" })).toBe(false);
    expect(matches("tier in (a, b),app notin (x)", { tier: "b" })).toBe(true);
    expect(matches("tier in (a,b)", {})).toBe(false);
    expect(matches("tier notin (a)", {})).toBe(true);
    expect(matches("", {})).toBe(true);
    expect(thrown(() => parseLabelSelector("a=(b")).message).toBe(
      'unable to parse requirement: "a=(b"',
    );
  });
});
