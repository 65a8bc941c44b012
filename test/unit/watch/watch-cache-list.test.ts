/**
 * The daemon's LISTs (src/watch/watch-cache.ts) as client-go's reflector and pager send them, over
 * a recording list function: which resourceVersion, which limit, how continue tokens are followed,
 * and what an expired one leads to. The fake API server's integration tests show where each is
 * served.
 */
import { describe, expect, it } from "vitest";
import { ApiStatusError } from "../../../src/kubeapi/rest-kube";
import {
  isResourceVersionUnavailable,
  LIST_PAGE,
  listAt,
  listResourceVersion,
} from "../../../src/watch/watch-cache";

const item = (name: string) => ({ metadata: { name, namespace: "ns" } });
const trim = (raw: Record<string, unknown>) => raw as never;

function status(code: number, body: Record<string, unknown> = {}): ApiStatusError {
  return new ApiStatusError({
    status: code,
    headers: {},
    body: Buffer.from(JSON.stringify({ kind: "Status", code, ...body })),
  });
}

/** A list function answering from `pages` in order, recording each query. */
function recorder(pages: Array<Record<string, unknown> | Error>) {
  const queries: Record<string, string>[] = [];
  const list = async (_path: string, query: Record<string, string>) => {
    queries.push(query);
    const next = pages.shift();
    if (!next) throw new Error("no more pages");
    if (next instanceof Error) throw next;
    return next;
  };
  return { queries, list };
}

describe("listResourceVersion (the reflector's relistResourceVersion)", () => {
  it('"0" first, the last synced on a relist, "" once the server refused it', () => {
    expect(listResourceVersion({ lastSynced: "", unavailable: false })).toBe("0");
    expect(listResourceVersion({ lastSynced: "1234", unavailable: false })).toBe("1234");
    expect(listResourceVersion({ lastSynced: "1234", unavailable: true })).toBe("");
  });

  it("410 Expired and 504 with the ResourceVersionTooLarge cause make a resourceVersion unavailable; other 504s do not", () => {
    expect(isResourceVersionUnavailable(status(410, { reason: "Expired" }))).toBe(true);
    const tooLarge = status(504, {
      reason: "Timeout",
      details: { causes: [{ reason: "ResourceVersionTooLarge" }] },
    });
    expect(isResourceVersionUnavailable(new Error("wrapped", { cause: tooLarge }))).toBe(true);
    expect(isResourceVersionUnavailable(status(504, { reason: "Timeout" }))).toBe(false);
    expect(isResourceVersionUnavailable(new Error("ECONNRESET"))).toBe(false);
  });
});

describe("listAt (the pager)", () => {
  const base = { path: "/api/v1/pods", query: { fieldSelector: "spec.nodeName=n1" }, trim };

  it('"0" asks for pages and follows continue tokens without a resourceVersion; the first page\'s resourceVersion is kept', async () => {
    const r = recorder([
      { metadata: { resourceVersion: "10", continue: "t1" }, items: [item("a")] },
      { metadata: { resourceVersion: "10" }, items: [item("b")] },
    ]);
    const l = await listAt({ ...base, list: r.list, resourceVersion: "0" });
    expect(l.metadata.resourceVersion).toBe("10");
    expect(l.items.map((i) => i.metadata?.name)).toEqual(["a", "b"]);
    expect(r.queries).toEqual([
      { fieldSelector: "spec.nodeName=n1", resourceVersion: "0", limit: String(LIST_PAGE) },
      { fieldSelector: "spec.nodeName=n1", limit: String(LIST_PAGE), continue: "t1" },
    ]);
  });

  it("a resourceVersion N is asked for without a limit (a limit would send it to etcd)", async () => {
    const r = recorder([{ metadata: { resourceVersion: "12" }, items: [] }]);
    await listAt({ ...base, list: r.list, resourceVersion: "11" });
    expect(r.queries).toEqual([{ fieldSelector: "spec.nodeName=n1", resourceVersion: "11" }]);
  });

  it('"" is a paged quorum read; a continue token that expired is followed by one full list, no limit', async () => {
    const r = recorder([
      { metadata: { resourceVersion: "20", continue: "t1" }, items: [item("a")] },
      status(410, { reason: "Expired" }),
      { metadata: { resourceVersion: "25" }, items: [item("a"), item("b"), item("c")] },
    ]);
    const l = await listAt({ ...base, list: r.list, resourceVersion: "" });
    expect(r.queries).toEqual([
      { fieldSelector: "spec.nodeName=n1", limit: String(LIST_PAGE) },
      { fieldSelector: "spec.nodeName=n1", limit: String(LIST_PAGE), continue: "t1" },
      { fieldSelector: "spec.nodeName=n1" },
    ]);
    expect(l.metadata.resourceVersion).toBe("25");
    expect(l.items).toHaveLength(3);
  });

  it("a failure of the first page is the caller's (no fallback list)", async () => {
    const r = recorder([status(410, { reason: "Expired" })]);
    await expect(listAt({ ...base, list: r.list, resourceVersion: "5" })).rejects.toBeInstanceOf(
      ApiStatusError,
    );
    expect(r.queries).toHaveLength(1);
  });
});
