/**
 * The daemon's watches on a quiet cluster: bookmarks keep the resourceVersion current, so
 * when the server ends a watch after history it no longer holds was compacted, the daemon resumes
 * without a relist (at 5,000 nodes a relist of every NAD per watch timeout would be megabytes per
 * node per hour); and lists come in pages, so a list of every NAD is never one huge response.
 * Fake API server over HTTPS; the daemon in-process.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { request } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, expect, it } from "vitest";
import { startDaemon } from "../../src/daemon/main";
import { silentLogger } from "../../src/log/logger";
import {
  type FakeApiServer,
  type LoggedRequest,
  startFakeApiServer,
  writeKubeconfig,
} from "../support/fake-apiserver";

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

function metric(socket: string, name: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request({ socketPath: socket, path: "/metrics" }, (res) => {
      let text = "";
      res.on("data", (c) => (text += c));
      res.on("end", () =>
        resolve(
          Number(
            new RegExp(`^${name.replace(/[{}]/g, "\\$&")} (\\S+)$`, "m").exec(text)?.[1] ??
              Number.NaN,
          ),
        ),
      );
    });
    req.on("error", reject);
    req.end();
  });
}

it("a quiet watch resumes after compaction without relisting (bookmarks), and still sees later changes", async () => {
  const s = await startFakeApiServer({ bookmarkIntervalMs: 100 });
  cleanups.push(() => s.close());
  const dir = mkdtempSync(join(tmpdir(), "plx-daemon-watch-"));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  s.addPod({
    metadata: { name: "web", namespace: "app", uid: "uid-web" },
    spec: { nodeName: "node-1" },
  });
  s.addNad({ metadata: { name: "net-a", namespace: "app" }, spec: { config: "{}" } });
  const socket = join(dir, "plexus.sock");
  const d = await startDaemon(
    { kubeconfig: writeKubeconfig(s, { dir }), nodeName: "node-1", socket },
    {},
    silentLogger(),
  );
  cleanups.push(() => d.stop());
  await expect.poll(() => metric(socket, "plexus_daemon_cache_synced"), { timeout: 5000 }).toBe(1);
  // Pods, NADs, and this node's ResourceSlices (ResourceClaims are read by name, never watched).
  await expect.poll(() => s.watchCount()).toBe(3);
  const podLists = await metric(socket, 'plexus_daemon_watch_lists_total{kind="pod"}');
  const nadLists = await metric(socket, 'plexus_daemon_watch_lists_total{kind="nad"}');
  expect([podLists, nadLists]).toEqual([1, 1]);
  // The cluster moves on where this node's watches see nothing: pods of other nodes.
  for (let i = 0; i < 5; i++)
    s.addPod({ metadata: { name: `other-${i}`, namespace: "app" }, spec: { nodeName: "node-2" } });
  const now = Number(s.resourceVersion());
  // A bookmark carries the new resourceVersion to both watches; then the history goes.
  await expect
    .poll(() => s.requests.filter((r) => r.query.includes("watch=true")).length, { timeout: 3000 })
    .toBeGreaterThanOrEqual(2);
  await new Promise((r) => setTimeout(r, 400));
  s.compactHistory();
  expect(s.dropWatches()).toBe(3);
  await expect.poll(() => s.watchCount(), { timeout: 5000 }).toBe(3);
  const resumed = s.requests.filter((r) => r.query.includes("watch=true")).slice(-3);
  for (const r of resumed)
    expect(Number(new URLSearchParams(r.query).get("resourceVersion"))).toBeGreaterThanOrEqual(now);
  expect(await metric(socket, 'plexus_daemon_watch_lists_total{kind="pod"}')).toBe(1);
  expect(await metric(socket, 'plexus_daemon_watch_lists_total{kind="nad"}')).toBe(1);
  // And the resumed watches deliver: a new pod on this node and a NAD edit reach the caches.
  s.addPod({
    metadata: { name: "late", namespace: "app", uid: "uid-late" },
    spec: { nodeName: "node-1" },
  });
  s.addNad({ metadata: { name: "net-b", namespace: "app" }, spec: { config: "{}" } });
  await expect.poll(() => metric(socket, 'plexus_daemon_cache_objects{kind="pod"}')).toBe(2);
  await expect.poll(() => metric(socket, 'plexus_daemon_cache_objects{kind="nad"}')).toBe(2);
});

async function daemonWith1200Nads() {
  const s = await startFakeApiServer();
  cleanups.push(() => s.close());
  const dir = mkdtempSync(join(tmpdir(), "plx-daemon-pages-"));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  s.addNads(
    Array.from({ length: 1_200 }, (_, i) => ({
      metadata: { name: `net-${i}`, namespace: `ns-${i % 7}` },
      spec: { config: "{}" },
    })),
  );
  const socket = join(dir, "plexus.sock");
  const d = await startDaemon(
    { kubeconfig: writeKubeconfig(s, { dir }), nodeName: "node-1", socket },
    {},
    silentLogger(),
  );
  cleanups.push(() => d.stop());
  await expect.poll(() => metric(socket, "plexus_daemon_cache_synced"), { timeout: 5000 }).toBe(1);
  expect(await metric(socket, 'plexus_daemon_cache_objects{kind="nad"}')).toBe(1_200);
  return { s, socket };
}

const NADS = "/apis/k8s.cni.cncf.io/v1/network-attachment-definitions";
/** The NAD LISTs (not watches), answered or not. */
const nadGets = (server: FakeApiServer) =>
  server.requests.filter((r) => r.path === NADS && !r.query.includes("watch=true"));
const param = (request: LoggedRequest, name: string) =>
  new URLSearchParams(request.query).get(name);

it("the first LIST is resourceVersion=0, served whole from the watch cache (its limit ignored): no quorum read; the watch starts at its resourceVersion", async () => {
  const { s } = await daemonWith1200Nads();
  const lists = s.requests.filter((r) => r.list);
  expect(
    lists.map((r) => [r.path, param(r, "resourceVersion"), param(r, "limit"), r.list!.servedFrom]),
  ).toEqual(
    expect.arrayContaining([
      ["/api/v1/pods", "0", "500", "watch-cache"],
      [NADS, "0", "500", "watch-cache"],
    ]),
  );
  // Pods, NADs, and the DRA caches' probe and slices: every one from the watch cache.
  expect(lists.filter((r) => r.list!.servedFrom !== "watch-cache")).toEqual([]);
  expect(lists).toHaveLength(4);
  const nadWatch = s.requests.find((r) => r.path === NADS && r.query.includes("watch=true"));
  expect(param(nadWatch!, "resourceVersion")).toBe(s.resourceVersion());
});

/**
 * The NAD watch sees nothing while the cluster moves on, then its history goes: the watch's
 * resume is 410 Expired and the informer lists again, at the resourceVersion it synced, from the
 * watch cache. Returns the resourceVersion that relist answered (what this node has synced now).
 */
async function expireAndRelist(server: FakeApiServer, socket: string): Promise<string> {
  await expect.poll(() => server.watchCount()).toBe(3);
  server.addNad({ metadata: { name: "late", namespace: "ns-0" }, spec: { config: "{}" } });
  await expect.poll(() => metric(socket, 'plexus_daemon_cache_objects{kind="nad"}')).toBe(1_201);
  const synced = server.resourceVersion();
  server.addPod({ metadata: { name: "o1", namespace: "app" }, spec: { nodeName: "node-2" } });
  server.compactHistory();
  server.dropWatches();
  await expect.poll(() => nadGets(server).length, { timeout: 5000 }).toBe(2);
  const relist = nadGets(server)[1]!;
  expect([
    param(relist, "resourceVersion"),
    param(relist, "limit"),
    relist.list?.servedFrom,
  ]).toEqual([synced, null, "watch-cache"]);
  await expect.poll(() => server.watchCount(), { timeout: 5000 }).toBe(3);
  return server.resourceVersion();
}

/**
 * Next time the server says that resourceVersion is too large for its cache (504
 * ResourceVersionTooLarge): the list goes to etcd at "", in pages; the second page is held until
 * the revision of the first is compacted, so it ends in 410 and one full list.
 */
async function refuseThenExpirePages(server: FakeApiServer): Promise<void> {
  server.inject(
    { method: "GET", path: NADS, watch: false, times: 1 },
    {
      kind: "status",
      code: 504,
      reason: "Timeout",
      message: "Too large resource version",
      details: {
        causes: [{ reason: "ResourceVersionTooLarge", message: "Too large resource version" }],
      },
    },
  );
  server.inject(
    { method: "GET", path: NADS, watch: false, query: /continue=/, times: 1 },
    { kind: "delay", ms: 300 },
  );
  server.addPod({ metadata: { name: "o2", namespace: "app" }, spec: { nodeName: "node-2" } });
  server.compactHistory();
  server.dropWatches();
  await expect.poll(() => nadGets(server).length, { timeout: 5000 }).toBe(5);
  server.addNad({ metadata: { name: "later", namespace: "ns-1" }, spec: { config: "{}" } });
  server.compactHistory();
  await expect.poll(() => nadGets(server).length, { timeout: 5000 }).toBe(6);
}

it("a relist after 410 Expired is at the last resourceVersion synced, from the watch cache; etcd is read only when the server says that one is unavailable, in pages of 500, and an expired continue token ends in one full list", async () => {
  const { s, socket } = await daemonWith1200Nads();
  const relisted = await expireAndRelist(s, socket);
  await refuseThenExpirePages(s);
  const [, , refused, firstPage, expiredPage, whole] = nadGets(s);
  expect(param(refused!, "resourceVersion")).toBe(relisted);
  expect(refused!.list, "answered by the injected 504").toBeUndefined();
  expect([
    param(firstPage!, "resourceVersion"),
    param(firstPage!, "limit"),
    firstPage!.list?.servedFrom,
  ]).toEqual([null, "500", "etcd"]);
  expect(param(expiredPage!, "continue")).toBeTruthy();
  expect(expiredPage!.list, "410 Expired").toBeUndefined();
  expect([
    param(whole!, "resourceVersion"),
    param(whole!, "limit"),
    param(whole!, "continue"),
  ]).toEqual([null, null, null]);
  await expect
    .poll(() => metric(socket, 'plexus_daemon_cache_objects{kind="nad"}'), { timeout: 5000 })
    .toBe(1_202);
  // Quorum reads of NADs: only the ones after the server refused the resourceVersion.
  expect(nadGets(s).filter((r) => r.list?.servedFrom === "etcd")).toEqual([firstPage, whole]);
});
