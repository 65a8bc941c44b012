/**
 * LIST across namespaces and WATCH on the fake API server, driven by the REAL client-node
 * informers (`makeInformer` / `ListWatch`) as a node daemon uses them: initial state, ADDED /
 * MODIFIED / DELETED, field selectors, reconnecting after a dropped stream, relisting after a
 * 410 Expired (history compacted), faults and shutdown. Plus the raw wire format (chunked NDJSON,
 * bookmarks, timeoutSeconds) over plain HTTP.
 */
import { request as httpRequest } from "node:http";
import { request as httpsRequest } from "node:https";
import {
  CoreV1Api,
  CustomObjectsApi,
  KubeConfig,
  type KubernetesListObject,
  type KubernetesObject,
  ListWatch,
  makeInformer,
  type V1Pod,
  Watch,
} from "@kubernetes/client-node";
import { afterEach, describe, expect, it } from "vitest";
import {
  ADMIN_TOKEN,
  type FakeApiServer,
  type FakeApiServerOptions,
  startFakeApiServer,
  writeKubeconfig,
} from "../support/fake-apiserver";

type Stoppable = { stop(): Promise<void> };
const informers: Stoppable[] = [];
const servers: FakeApiServer[] = [];

afterEach(async () => {
  for (const i of informers.splice(0)) await i.stop();
  for (const s of servers.splice(0)) await s.close();
});

async function cluster(options: FakeApiServerOptions = {}) {
  const s = await startFakeApiServer(options);
  servers.push(s);
  const kc = new KubeConfig();
  kc.loadFromFile(writeKubeconfig(s));
  return { s, kc, core: kc.makeApiClient(CoreV1Api), custom: kc.makeApiClient(CustomObjectsApi) };
}

/** Records every callback of an informer, names as "verb ns/name". */
function track<T extends KubernetesObject>(inf: {
  on(verb: "add" | "update" | "delete", cb: (o: T) => void): void;
  on(verb: "error", cb: (e?: unknown) => void): void;
}) {
  const seen: string[] = [];
  const errors: unknown[] = [];
  for (const verb of ["add", "update", "delete"] as const)
    inf.on(verb, (o) => seen.push(`${verb} ${o.metadata?.namespace}/${o.metadata?.name}`));
  inf.on("error", (e) => errors.push(e));
  return { seen, errors };
}

const names = (inf: { list(ns?: string): readonly KubernetesObject[] }) =>
  inf
    .list()
    .map((o) => `${o.metadata?.namespace}/${o.metadata?.name}`)
    .sort();

const isWatch = (query: string) => new URLSearchParams(query).get("watch") === "true";
const lists = (server: FakeApiServer, path: string) =>
  server.requests.filter((r) => r.method === "GET" && r.path === path && !isWatch(r.query)).length;
const watches = (server: FakeApiServer, path: string) =>
  server.requests.filter((r) => r.method === "GET" && r.path === path && isWatch(r.query)).length;

const NS1_PODS = "/api/v1/namespaces/ns1/pods";
const ON_NODE_1 = "spec.nodeName=node-1";

/** makeInformer (no fieldSelector parameter) carries the selector in the watch path's query. */
function nodePodInformer(kc: KubeConfig, core: CoreV1Api) {
  const inf = makeInformer<V1Pod>(
    kc,
    `${NS1_PODS}?fieldSelector=${encodeURIComponent(ON_NODE_1)}`,
    () => core.listNamespacedPod({ namespace: "ns1", fieldSelector: ON_NODE_1 }),
  );
  informers.push(inf);
  return inf;
}

describe("fake API server watch: pod informer on one node (makeInformer, listNamespacedPod)", () => {
  it("sees the initial pods of its node, then ADDED / MODIFIED / DELETED; other nodes' pods never", async () => {
    const { s, kc, core } = await cluster();
    s.addPod({ metadata: { name: "a", namespace: "ns1" }, spec: { nodeName: "node-1" } });
    s.addPod({ metadata: { name: "other-node", namespace: "ns1" }, spec: { nodeName: "node-2" } });
    s.addPod({ metadata: { name: "other-ns", namespace: "ns2" }, spec: { nodeName: "node-1" } });
    const inf = nodePodInformer(kc, core);
    const { seen, errors } = track(inf);
    await inf.start();
    expect(names(inf)).toEqual(["ns1/a"]);
    await expect.poll(() => s.watchCount()).toBe(1);
    const watch = s.requests.find((r) => r.path === NS1_PODS && isWatch(r.query))!;
    expect(new URLSearchParams(watch.query).get("fieldSelector")).toBe(ON_NODE_1);

    s.addPod({ metadata: { name: "b", namespace: "ns1" }, spec: { nodeName: "node-1" } });
    s.addPod({ metadata: { name: "c", namespace: "ns1" }, spec: { nodeName: "node-2" } });
    s.addPod({
      metadata: { name: "a", namespace: "ns1", labels: { v: "2" } },
      spec: { nodeName: "node-1" },
    }); // exists: MODIFIED
    s.deletePod("ns1", "other-node");
    await expect.poll(() => names(inf)).toEqual(["ns1/a", "ns1/b"]);
    await expect.poll(() => inf.get("a", "ns1")?.metadata?.labels).toEqual({ v: "2" });

    // A write through the API (an administrator's update of the status subresource: the shipped
    // RBAC grants Plexus only its patch) reaches the informer as MODIFIED.
    const admin = new KubeConfig();
    admin.loadFromFile(writeKubeconfig(s, { token: ADMIN_TOKEN, fileName: "admin" }));
    const pod = await core.readNamespacedPod({ name: "b", namespace: "ns1" });
    await admin.makeApiClient(CoreV1Api).replaceNamespacedPodStatus({
      name: "b",
      namespace: "ns1",
      body: { ...pod, status: { phase: "Running" } },
    });
    await expect.poll(() => inf.get("b", "ns1")?.status?.phase).toBe("Running");

    // Leaving the selector is a DELETE for this watch; entering it an ADD.
    s.addPod({ metadata: { name: "a", namespace: "ns1" }, spec: { nodeName: "node-2" } });
    s.addPod({ metadata: { name: "c", namespace: "ns1" }, spec: { nodeName: "node-1" } });
    s.deletePod("ns1", "b");
    await expect.poll(() => names(inf)).toEqual(["ns1/c"]);
    expect(seen).toEqual([
      "add ns1/a",
      "add ns1/b",
      "update ns1/a",
      "update ns1/b",
      "delete ns1/a",
      "add ns1/c",
      "delete ns1/b",
    ]);
    expect(errors).toEqual([]);
    expect(lists(s, NS1_PODS)).toBe(1);
  });

  it("reconnects after dropWatches() from its resourceVersion, without relisting", async () => {
    const { s, kc, core } = await cluster();
    s.addPod({ metadata: { name: "a", namespace: "ns1" }, spec: { nodeName: "node-1" } });
    const inf = nodePodInformer(kc, core);
    const { seen, errors } = track(inf);
    await inf.start();
    await expect.poll(() => s.watchCount()).toBe(1);

    expect(s.dropWatches()).toBe(1);
    expect(s.watchCount()).toBe(0);
    // while disconnected: replayed
    s.addPod({ metadata: { name: "during", namespace: "ns1" }, spec: { nodeName: "node-1" } });
    await expect.poll(() => watches(s, NS1_PODS)).toBe(2);
    await expect.poll(() => s.watchCount()).toBe(1);
    s.addPod({ metadata: { name: "after", namespace: "ns1" }, spec: { nodeName: "node-1" } });
    await expect.poll(() => names(inf)).toEqual(["ns1/a", "ns1/after", "ns1/during"]);
    const resumed = new URLSearchParams(
      s.requests.filter((r) => r.path === NS1_PODS && isWatch(r.query))[1]!.query,
    );
    expect(Number(resumed.get("resourceVersion"))).toBeGreaterThan(1000);
    expect(lists(s, NS1_PODS)).toBe(1);
    expect(seen).toEqual(["add ns1/a", "add ns1/during", "add ns1/after"]);
    expect(errors).toEqual([]);
  });

  for (const expiredWatch of ["event", "status"] as const) {
    it(`relists after compactHistory() + dropWatches() (410 as ${
      expiredWatch === "event" ? "an ERROR event in a " + "200 stream" : "HTTP 410"
    }); the cache is right`, async () => {
      const { s, kc, core } = await cluster({ expiredWatch });
      s.addPod({ metadata: { name: "keep", namespace: "ns1" }, spec: { nodeName: "node-1" } });
      s.addPod({ metadata: { name: "gone", namespace: "ns1" }, spec: { nodeName: "node-1" } });
      s.addPod({ metadata: { name: "moved", namespace: "ns1" }, spec: { nodeName: "node-1" } });
      const inf = nodePodInformer(kc, core);
      const { seen, errors } = track(inf);
      await inf.start();
      await expect.poll(() => s.watchCount()).toBe(1);

      // While the informer is away: changes it would miss, then the history that held them is gone.
      s.dropWatches();
      s.deletePod("ns1", "gone");
      s.addPod({ metadata: { name: "moved", namespace: "ns1" }, spec: { nodeName: "node-2" } });
      s.addPod({
        metadata: { name: "keep", namespace: "ns1", labels: { v: "2" } },
        spec: { nodeName: "node-1" },
      });
      s.addPod({ metadata: { name: "new", namespace: "ns1" }, spec: { nodeName: "node-1" } });
      s.compactHistory();

      await expect.poll(() => lists(s, NS1_PODS)).toBe(2);
      await expect.poll(() => names(inf)).toEqual(["ns1/keep", "ns1/new"]);
      expect(inf.get("keep", "ns1")?.metadata?.labels).toEqual({ v: "2" });
      expect(seen).toEqual(
        expect.arrayContaining([
          "delete ns1/gone",
          "delete ns1/moved",
          "update ns1/keep",
          "add ns1/new",
        ]),
      );
      expect(errors).toEqual([]);

      // …and watches again from the relisted resourceVersion (client-node waits 1 s before it).
      await expect.poll(() => s.watchCount(), { timeout: 4000 }).toBe(1);
      s.addPod({ metadata: { name: "later", namespace: "ns1" }, spec: { nodeName: "node-1" } });
      await expect.poll(() => names(inf)).toEqual(["ns1/keep", "ns1/later", "ns1/new"]);
      expect(lists(s, NS1_PODS)).toBe(2);
    });
  }
});

describe("fake API server watch: across namespaces", () => {
  it("ListWatch over listPodForAllNamespaces with a fieldSelector", async () => {
    const { s, kc, core } = await cluster();
    s.addPod({ metadata: { name: "a", namespace: "ns1" }, spec: { nodeName: "node-1" } });
    s.addPod({ metadata: { name: "b", namespace: "ns2" }, spec: { nodeName: "node-1" } });
    s.addPod({ metadata: { name: "x", namespace: "ns2" }, spec: { nodeName: "node-9" } });
    const inf = new ListWatch<V1Pod>(
      "/api/v1/pods",
      new Watch(kc),
      () => core.listPodForAllNamespaces({ fieldSelector: "spec.nodeName==node-1" }),
      false,
      undefined,
      "spec.nodeName==node-1",
    );
    informers.push(inf);
    const { errors } = track(inf);
    await inf.start();
    expect(names(inf)).toEqual(["ns1/a", "ns2/b"]);
    await expect.poll(() => s.watchCount()).toBe(1);
    s.addPod({ metadata: { name: "c", namespace: "ns3" }, spec: { nodeName: "node-1" } });
    s.addPod({ metadata: { name: "y", namespace: "ns3" }, spec: { nodeName: "node-9" } });
    s.deletePod("ns1", "a");
    await expect.poll(() => names(inf)).toEqual(["ns2/b", "ns3/c"]);
    expect(errors).toEqual([]);
  });

  it("NAD informer over CustomObjectsApi (all namespaces): initial, ADDED, MODIFIED, DELETED (deleteNad)", async () => {
    const { s, kc, custom } = await cluster();
    s.addNad({
      metadata: { name: "net-a", namespace: "ns1" },
      spec: { config: '{"type":"bridge"}' },
    });
    s.addNad({
      metadata: { name: "net-b", namespace: "ns2" },
      spec: { config: '{"type":"macvlan"}' },
    });
    const path = "/apis/k8s.cni.cncf.io/v1/network-attachment-definitions";
    const inf = makeInformer<KubernetesObject & { spec?: { config?: string } }>(
      kc,
      path,
      async () =>
        (await custom.listClusterCustomObject({
          group: "k8s.cni.cncf.io",
          version: "v1",
          plural: "network-attachment-definitions",
        })) as KubernetesListObject<KubernetesObject>,
    );
    informers.push(inf);
    const { seen, errors } = track(inf);
    await inf.start();
    expect(names(inf)).toEqual(["ns1/net-a", "ns2/net-b"]);
    await expect.poll(() => s.watchCount()).toBe(1);
    s.addNad({ metadata: { name: "net-c", namespace: "ns3" } });
    s.addNad({
      metadata: { name: "net-a", namespace: "ns1" },
      spec: { config: '{"type":"ipvlan"}' },
    });
    expect(s.deleteNad("ns2", "net-b")).toBe(true);
    expect(s.deleteNad("ns2", "missing")).toBe(false);
    await expect.poll(() => names(inf)).toEqual(["ns1/net-a", "ns3/net-c"]);
    await expect.poll(() => inf.get("net-a", "ns1")?.spec?.config).toBe('{"type":"ipvlan"}');
    expect(seen).toEqual([
      "add ns1/net-a",
      "add ns2/net-b",
      "add ns3/net-c",
      "update ns1/net-a",
      "delete ns2/net-b",
    ]);
    expect(errors).toEqual([]);
    // The per-namespace list too.
    const ns1 = (await custom.listNamespacedCustomObject({
      group: "k8s.cni.cncf.io",
      version: "v1",
      namespace: "ns3",
      plural: "network-attachment-definitions",
    })) as KubernetesListObject<KubernetesObject>;
    expect(ns1.items.map((o) => o.metadata?.name)).toEqual(["net-c"]);
    expect(ns1.metadata?.resourceVersion).toBe(s.resourceVersion());
  });
});

describe("fake API server watch: faults, latency and shutdown", () => {
  it("a 500 fault on the watch only (matcher watch: true) reaches the informer's error callback; it recovers on restart", async () => {
    const { s, kc, core } = await cluster({ latencyMs: 20 });
    s.addPod({ metadata: { name: "a", namespace: "ns1" }, spec: { nodeName: "node-1" } });
    s.inject({ path: NS1_PODS, watch: true, times: 1 }, { kind: "status", code: 500 });
    const inf = nodePodInformer(kc, core);
    const { errors } = track(inf);
    await inf.start();
    expect(names(inf)).toEqual(["ns1/a"]); // the LIST was not faulted
    await expect.poll(() => errors.length).toBe(1);
    expect(errors[0]).toMatchObject({ statusCode: 500 });
    expect(s.watchCount()).toBe(0);
    await inf.start();
    await expect.poll(() => s.watchCount()).toBe(1);
    s.addPod({ metadata: { name: "b", namespace: "ns1" }, spec: { nodeName: "node-1" } });
    await expect.poll(() => names(inf)).toEqual(["ns1/a", "ns1/b"]);
  });

  it("watches need the bearer token; close() ends open watches promptly", async () => {
    const { s, kc, core } = await cluster();
    const inf = nodePodInformer(kc, core);
    await inf.start();
    await expect.poll(() => s.watchCount()).toBe(1);
    const bad = await rawWatch(s, `${NS1_PODS}?watch=true`, "wrong-token");
    expect(bad.status).toBe(401);
    await inf.stop();
    await expect.poll(() => s.watchCount()).toBe(0);
    await inf.start();
    await expect.poll(() => s.watchCount()).toBe(1);
    const t = performance.now();
    await s.close();
    expect(performance.now() - t).toBeLessThan(1000);
    expect(s.watchCount()).toBe(0);
    await inf.stop();
  });
});

interface RawAnswer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  lines: { type: string; object: Record<string, any> }[];
  text: string;
}

/** A whole (ending) response, split into NDJSON lines. */
function rawWatch(
  server: FakeApiServer,
  path: string,
  token = server.token,
  onLine?: (l: { type: string }) => void,
): Promise<RawAnswer> {
  return new Promise((resolve, reject) => {
    const request = server.url.startsWith("https:") ? httpsRequest : httpRequest;
    const req = request(
      `${server.url}${path}`,
      { headers: { authorization: `Bearer ${token}` }, agent: false, ca: server.caPem },
      (res) => {
        let text = "";
        let partial = "";
        res.setEncoding("utf8");
        res.on("data", (c: string) => {
          text += c;
          if (!onLine) return;
          const parts = (partial + c).split("\n");
          partial = parts.pop()!;
          for (const l of parts) if (l) onLine(JSON.parse(l) as { type: string });
        });
        res.on("end", () => {
          const lines =
            res.headers["content-length"] === undefined
              ? text
                  .split("\n")
                  .filter(Boolean)
                  .map((l) => JSON.parse(l) as RawAnswer["lines"][number])
              : [];
          resolve({ status: res.statusCode ?? 0, headers: res.headers, lines, text });
        });
        res.on("error", reject);
      },
    );
    req.on("error", reject);
    req.end();
  });
}

describe("fake API server watch: the wire", () => {
  it("chunked NDJSON: ADDED state first without resourceVersion, replay after one, bookmarks, timeoutSeconds", async () => {
    const s = await startFakeApiServer({ tls: false, bookmarkIntervalMs: 100 });
    servers.push(s);
    s.addPod({ metadata: { name: "a", namespace: "ns1" } });
    const rv = s.resourceVersion();
    s.addPod({ metadata: { name: "b", namespace: "ns2" } });

    const fromScratch = rawWatch(
      s,
      "/api/v1/pods?watch=1&timeoutSeconds=1&allowWatchBookmarks=true",
    );
    const resumed = rawWatch(s, `/api/v1/pods?watch=true&resourceVersion=${rv}&timeoutSeconds=1`);
    await expect.poll(() => s.watchCount()).toBe(2);
    s.addPod({ metadata: { name: "a", namespace: "ns1", labels: { x: "1" } } });
    s.deletePod("ns2", "b");

    const all = await fromScratch;
    expect(all.status).toBe(200);
    expect(all.headers["content-type"]).toBe("application/json");
    expect(all.headers["transfer-encoding"]).toBe("chunked");
    const objects = all.lines
      .filter((l) => l.type !== "BOOKMARK")
      .map((l) => `${l.type} ${l.object.metadata.name} ${l.object.metadata.resourceVersion}`);
    expect(objects).toEqual([
      `ADDED a ${rv}`,
      `ADDED b ${Number(rv) + 1}`,
      `MODIFIED a ${Number(rv) + 2}`,
      `DELETED b ${Number(rv) + 3}`,
    ]);
    const bookmarks = all.lines.filter((l) => l.type === "BOOKMARK");
    expect(bookmarks.length).toBeGreaterThanOrEqual(3);
    expect(bookmarks.at(-1)!.object).toEqual({
      kind: "Pod",
      apiVersion: "v1",
      metadata: { resourceVersion: s.resourceVersion() },
    });

    expect((await resumed).lines.map((l) => `${l.type} ${l.object.metadata.name}`)).toEqual([
      "ADDED b",
      "MODIFIED a",
      "DELETED b",
    ]);
    expect(s.watchCount()).toBe(0);
  });

  it("an expired resourceVersion is a 200 with one ERROR event (410 Expired); bad selectors are 400", async () => {
    const s = await startFakeApiServer({ tls: false });
    servers.push(s);
    s.addPod({ metadata: { name: "a", namespace: "ns1" } });
    const old = s.resourceVersion();
    s.addPod({ metadata: { name: "b", namespace: "ns1" } });
    s.compactHistory();
    const expired = await rawWatch(s, `${NS1_PODS}?watch=true&resourceVersion=${old}`);
    expect(expired.status).toBe(200);
    expect(expired.lines).toEqual([
      {
        type: "ERROR",
        object: {
          kind: "Status",
          apiVersion: "v1",
          metadata: {},
          status: "Failure",
          code: 410,
          reason: "Expired",
          message: `too old resource version: ${old} (${s.resourceVersion()})`,
        },
      },
    ]);
    // Resuming from the compaction point itself is fine.
    const current = rawWatch(
      s,
      `${NS1_PODS}?watch=true&resourceVersion=${s.resourceVersion()}&timeoutSeconds=1`,
    );
    await expect.poll(() => s.watchCount()).toBe(1);
    s.deletePod("ns1", "a");
    expect((await current).lines.map((l) => l.type)).toEqual(["DELETED"]);

    const bad = await rawWatch(s, `${NS1_PODS}?watch=true&fieldSelector=spec.bogus%3Dx`);
    expect(bad.status).toBe(400);
    expect(JSON.parse(bad.text)).toMatchObject({
      kind: "Status",
      code: 400,
      message: "field label not supported: spec.bogus",
    });
    expect((await rawWatch(s, `/api/v1/pods?fieldSelector=spec.nodeName%3D%3Dnode-1`)).status).toBe(
      200,
    );
  });

  it("10,000 NADs in bulk are quick, are listed across namespaces and reach an open watch", async () => {
    const s = await startFakeApiServer({ tls: false });
    servers.push(s);
    let added = 0;
    const watching = rawWatch(
      s,
      "/apis/k8s.cni.cncf.io/v1/namespaces/ns7/network-attachment-definitions?watch=true&timeoutSeconds=1",
      s.token,
      (l) => {
        if (l.type === "ADDED") added++;
      },
    );
    await expect.poll(() => s.watchCount()).toBe(1);
    const t = performance.now();
    s.addNads(
      Array.from({ length: 10_000 }, (_, i) => ({
        metadata: { name: `net-${i}`, namespace: `ns${i % 10}` },
        spec: { config: "{}" },
      })),
    );
    expect(performance.now() - t).toBeLessThan(500);
    const list = JSON.parse(
      (await rawWatch(s, "/apis/k8s.cni.cncf.io/v1/network-attachment-definitions")).text,
    ) as KubernetesListObject<KubernetesObject>;
    expect(list.items).toHaveLength(10_000);
    expect(list.metadata?.resourceVersion).toBe(s.resourceVersion());
    await watching;
    expect(added).toBe(1000);
  });
});

describe("one watch window per resource, as kube-apiserver's watch caches", () => {
  it("a flood of pod events does not expire a NAD watch resuming from before it", async () => {
    await using s = await startFakeApiServer({ tls: false, historyLimit: 5 });
    s.addNad({ metadata: { namespace: "ns1", name: "net-a" }, spec: { config: "{}" } });
    const since = s.resourceVersion();
    s.addNad({ metadata: { namespace: "ns1", name: "net-b" }, spec: { config: "{}" } });
    for (let i = 0; i < 20; i++) s.addPod({ metadata: { namespace: "ns1", name: `p${i}` } });
    const nadWatch = await fetch(
      `${s.url}/apis/k8s.cni.cncf.io/v1/network-attachment-definitions?watch=true&resourceVersion=${since}`,
      { headers: { authorization: `Bearer ${s.token}` } },
    );
    const reader = nadWatch.body!.getReader();
    const { value } = await reader.read();
    const first = JSON.parse(new TextDecoder().decode(value).split("\n")[0]!) as {
      type: string;
      object: { metadata: { name: string } };
    };
    expect(first).toMatchObject({ type: "ADDED", object: { metadata: { name: "net-b" } } });
    await reader.cancel();
    const podWatch = await fetch(`${s.url}/api/v1/pods?watch=true&resourceVersion=${since}`, {
      headers: { authorization: `Bearer ${s.token}` },
    });
    expect(await podWatch.text()).toContain("too old resource version");
  });
});
