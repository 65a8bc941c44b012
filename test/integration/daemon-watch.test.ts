/**
 * The daemon's watches on a quiet cluster (issue 5): bookmarks keep the resourceVersion current, so
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
import { startFakeApiServer, writeKubeconfig } from "../support/fake-apiserver";

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
        resolve(Number(new RegExp(`^${name.replace(/[{}]/g, "\\$&")} (\\S+)$`, "m").exec(text)?.[1] ?? Number.NaN)),
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
  s.addPod({ metadata: { name: "web", namespace: "app", uid: "uid-web" }, spec: { nodeName: "node-1" } });
  s.addNad({ metadata: { name: "net-a", namespace: "app" }, spec: { config: "{}" } });
  const socket = join(dir, "plexus.sock");
  const d = await startDaemon(
    { kubeconfig: writeKubeconfig(s, { dir }), nodeName: "node-1", socket },
    {},
    silentLogger(),
  );
  cleanups.push(() => d.stop());
  await expect.poll(() => metric(socket, "plexus_daemon_cache_synced"), { timeout: 5000 }).toBe(1);
  // Pods, NADs, and the DRA caches' ResourceClaims and ResourceSlices.
  await expect.poll(() => s.watchCount()).toBe(4);
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
  expect(s.dropWatches()).toBe(4);
  await expect.poll(() => s.watchCount(), { timeout: 5000 }).toBe(4);
  const resumed = s.requests.filter((r) => r.query.includes("watch=true")).slice(-4);
  for (const r of resumed)
    expect(Number(new URLSearchParams(r.query).get("resourceVersion"))).toBeGreaterThanOrEqual(now);
  expect(await metric(socket, 'plexus_daemon_watch_lists_total{kind="pod"}')).toBe(1);
  expect(await metric(socket, 'plexus_daemon_watch_lists_total{kind="nad"}')).toBe(1);
  // And the resumed watches deliver: a new pod on this node and a NAD edit reach the caches.
  s.addPod({ metadata: { name: "late", namespace: "app", uid: "uid-late" }, spec: { nodeName: "node-1" } });
  s.addNad({ metadata: { name: "net-b", namespace: "app" }, spec: { config: "{}" } });
  await expect.poll(() => metric(socket, 'plexus_daemon_cache_objects{kind="pod"}')).toBe(2);
  await expect.poll(() => metric(socket, 'plexus_daemon_cache_objects{kind="nad"}')).toBe(2);
});

it("lists in pages of 500 (continue tokens) and watches from the first page's resourceVersion", async () => {
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
  const nadLists = s.requests.filter(
    (r) => r.path.endsWith("/network-attachment-definitions") && !r.query.includes("watch=true"),
  );
  expect(nadLists.map((r) => new URLSearchParams(r.query).get("limit"))).toEqual(["500", "500", "500"]);
  expect(nadLists.map((r) => new URLSearchParams(r.query).has("continue"))).toEqual([false, true, true]);
  const nadWatch = s.requests.find(
    (r) => r.path.endsWith("/network-attachment-definitions") && r.query.includes("watch=true"),
  );
  expect(new URLSearchParams(nadWatch!.query).get("resourceVersion")).toBe(s.resourceVersion());
});
