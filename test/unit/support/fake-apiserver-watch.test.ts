/**
 * WATCH in the fake API server (test/support/fake-apiserver/watch.ts), pinned to kube-apiserver's
 * watch cache: the resourceVersion a watch starts from (none or "0": the current state as ADDED;
 * N: the retained events after N), an object leaving a selector seen as DELETED and entering it as
 * ADDED, a resume from a compacted revision refused with 410 Expired (a 200 stream with one ERROR
 * event, or an HTTP 410), BOOKMARK events and the `k8s.io/initial-events-end` bookmark.
 */
import { afterEach, describe, expect, it } from "vitest";
import { ADMIN_TOKEN, type FakeApiServer, startFakeApiServer } from "../../support/fake-apiserver";
import { HttpError } from "../../support/fake-apiserver/status";
import type { HistoryEvent, KubeObject } from "../../support/fake-apiserver/types";
import { projectEvent, watchPlan } from "../../support/fake-apiserver/watch";

const all = () => true;
const plan = (query: string) =>
  watchPlan({ resource: "pods", filter: all }, new URLSearchParams(query));

describe("the watch plan", () => {
  it("starts from the current state without a resourceVersion or with 0, else after it", () => {
    expect(plan("")).toMatchObject({ since: undefined, sendInitial: true, bookmarks: false });
    expect(plan("resourceVersion=0")).toMatchObject({ since: undefined, sendInitial: true });
    expect(plan("resourceVersion=1005")).toMatchObject({ since: 1005, sendInitial: false });
    expect(plan("resourceVersion=1005&sendInitialEvents=true&allowWatchBookmarks=1")).toMatchObject(
      {
        since: 1005,
        sendInitial: true,
        initialEventsEnd: true,
        bookmarks: true,
      },
    );
    expect(plan("timeoutSeconds=3").timeoutMs).toBe(3000);
  });

  it("refuses a resourceVersion that is not a number (400)", () => {
    expect(() => plan("resourceVersion=x")).toThrow(HttpError);
    expect(() => plan("resourceVersion=x")).toThrow('invalid resource version: "x"');
  });
});

describe("an event as a watch with a selector sees it (cacheWatcher.convertToWatchEvent)", () => {
  const onNode1 = {
    resource: "pods" as const,
    filter: (o: KubeObject) => (o.spec as { nodeName?: string })?.nodeName === "node-1",
  };
  const pod = (nodeName: string, rv: number): KubeObject => ({
    metadata: { name: "p", namespace: "ns1", resourceVersion: String(rv) },
    spec: { nodeName },
  });
  const event = (type: HistoryEvent["type"], obj: KubeObject, prev?: KubeObject): HistoryEvent => ({
    rv: Number(obj.metadata.resourceVersion),
    type,
    resource: "pods",
    obj,
    prev,
  });
  const typeOf = (line: string | undefined) =>
    line ? (JSON.parse(line) as { type: string }).type : undefined;

  it("ADDED entering the selector, MODIFIED inside it, nothing outside it", () => {
    expect(
      typeOf(projectEvent(onNode1, event("MODIFIED", pod("node-1", 2), pod("node-2", 1)))),
    ).toBe("ADDED");
    expect(
      typeOf(projectEvent(onNode1, event("MODIFIED", pod("node-1", 2), pod("node-1", 1)))),
    ).toBe("MODIFIED");
    expect(projectEvent(onNode1, event("ADDED", pod("node-2", 2)))).toBeUndefined();
    expect(
      projectEvent({ ...onNode1, resource: "nads" }, event("ADDED", pod("node-1", 2))),
    ).toBeUndefined();
  });

  it("DELETED leaving it: the previous state at the event's resourceVersion", () => {
    const line = projectEvent(onNode1, event("MODIFIED", pod("node-2", 7), pod("node-1", 6)));
    expect(JSON.parse(line!)).toEqual({ type: "DELETED", object: pod("node-1", 7) });
    expect(
      typeOf(projectEvent(onNode1, event("DELETED", pod("node-1", 8), pod("node-1", 7)))),
    ).toBe("DELETED");
  });
});

describe("watch streams", () => {
  let server: FakeApiServer | undefined;
  afterEach(async () => {
    await server?.close();
    server = undefined;
  });

  /** The watch's lines until `until` says it has enough (or the stream ends). */
  async function watchLines(
    query: string,
    until: (lines: Record<string, any>[]) => boolean,
  ): Promise<{ status: number; lines: Record<string, any>[] }> {
    const controller = new AbortController();
    const res = await fetch(`${server!.url}/api/v1/namespaces/ns1/pods?watch=true&${query}`, {
      headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
      signal: controller.signal,
    });
    if (res.status !== 200)
      return { status: res.status, lines: [(await res.json()) as Record<string, any>] };
    const lines: Record<string, any>[] = [];
    let text = "";
    const decoder = new TextDecoder();
    for await (const chunk of res.body!) {
      text += decoder.decode(chunk, { stream: true });
      const parts = text.split("\n");
      text = parts.pop()!;
      lines.push(...parts.map((l) => JSON.parse(l)));
      if (until(lines)) break;
    }
    controller.abort();
    return { status: res.status, lines };
  }

  it("replays the events after the resourceVersion, then pushes live ones", async () => {
    server = await startFakeApiServer({ tls: false, rbac: false });
    server.addPod({ metadata: { name: "a", namespace: "ns1" } });
    const since = server.resourceVersion();
    server.addPod({ metadata: { name: "b", namespace: "ns1" } });
    setTimeout(() => server!.deletePod("ns1", "a"), 50);
    const { lines } = await watchLines(`resourceVersion=${since}`, (l) => l.length >= 2);
    expect(lines.map((l) => [l.type, l.object.metadata.name])).toEqual([
      ["ADDED", "b"],
      ["DELETED", "a"],
    ]);
  });

  it("a resume from a compacted revision is a 200 stream with one ERROR: 410 Expired", async () => {
    server = await startFakeApiServer({ tls: false, rbac: false });
    server.addPod({ metadata: { name: "a", namespace: "ns1" } });
    server.compactHistory();
    const { status, lines } = await watchLines("resourceVersion=1000", () => false);
    expect(status).toBe(200);
    expect(lines).toEqual([
      {
        type: "ERROR",
        object: {
          kind: "Status",
          apiVersion: "v1",
          metadata: {},
          status: "Failure",
          message: "too old resource version: 1000 (1001)",
          reason: "Expired",
          code: 410,
        },
      },
    ]);
  });

  it("with expiredWatch: status, the same refusal as an HTTP 410", async () => {
    server = await startFakeApiServer({ tls: false, rbac: false, expiredWatch: "status" });
    server.addPod({ metadata: { name: "a", namespace: "ns1" } });
    server.compactHistory();
    const { status, lines } = await watchLines("resourceVersion=1000", () => false);
    expect(status).toBe(410);
    expect(lines[0]).toMatchObject({ kind: "Status", reason: "Expired", code: 410 });
  });

  it("ends the initial events with the initial-events-end bookmark, then bookmarks on its interval", async () => {
    server = await startFakeApiServer({ tls: false, rbac: false, bookmarkIntervalMs: 30 });
    server.addPod({ metadata: { name: "a", namespace: "ns1" } });
    const query =
      "sendInitialEvents=true&allowWatchBookmarks=true&resourceVersionMatch=NotOlderThan";
    const { lines } = await watchLines(query, (l) => l.length >= 3);
    expect(lines.map((l) => l.type)).toEqual(["ADDED", "BOOKMARK", "BOOKMARK"]);
    expect(lines[1]!.object).toEqual({
      kind: "Pod",
      apiVersion: "v1",
      metadata: { resourceVersion: "1001", annotations: { "k8s.io/initial-events-end": "true" } },
    });
    expect(lines[2]!.object.metadata).toEqual({ resourceVersion: "1001" });
  });

  it("counts open watches, and dropWatches ends them", async () => {
    server = await startFakeApiServer({ tls: false, rbac: false });
    const res = await fetch(`${server.url}/api/v1/pods?watch=1`, {
      headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
    });
    await expect.poll(() => server!.watchCount()).toBe(1);
    expect(server.dropWatches()).toBe(1);
    expect(await res.text()).toBe("");
    expect(server.watchCount()).toBe(0);
  });
});
