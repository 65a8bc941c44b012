/**
 * The daemon's hot-plug trigger: an edit of a pod's networks annotation runs one reconcile after
 * the debounce (a burst is one), never two of one pod at a time, retried with backoff when it
 * fails and at most maxAttempts times; first sight of a pod, another namespace or a deletion run
 * nothing.
 */
import { describe, expect, it } from "vitest";
import { HotplugReconciler, parseConcurrency, parseNamespaces } from "../../../src/daemon/hotplug";
import type { HotplugOutcome } from "../../../src/daemon/hotplug";
import type { Pod } from "../../../src/npwg/types";
import { Limiter } from "../../../src/watch/limiter";
import { recordingLogger } from "../../fakes/fake-exec";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const pod = (networks: string, namespace = "app", name = "web"): Pod => ({
  metadata: {
    namespace,
    name,
    uid: `u-${name}`,
    annotations: { "k8s.v1.cni.cncf.io/networks": networks },
  },
});

type Knobs = { delayMs?: number; namespaces?: string; limiter?: Limiter };

function harness(outcomes: HotplugOutcome[] = [], knobs: Knobs = {}) {
  const calls: string[] = [];
  let running = 0;
  let most = 0;
  const tallies: unknown[] = [];
  const sent: Array<readonly string[]> = [];
  const r = new HotplugReconciler({
    pass: async ({ namespace, name, sentEvents }) => {
      running++;
      most = Math.max(most, running);
      calls.push(`${namespace}/${name}`);
      sent.push(sentEvents);
      await sleep(knobs.delayMs ?? 1);
      running--;
      return outcomes.shift() ?? { ok: true, attached: 1, detached: 0 };
    },
    log: recordingLogger(),
    debounceMs: 20,
    backoff: { minMs: 10, maxMs: 40 },
    maxAttempts: 3,
    namespaces: parseNamespaces(knobs.namespaces),
    metrics: { hotplugReconciled: (t) => tallies.push(t) },
    limiter: knobs.limiter,
  });
  return { r, calls, tallies, sent, most: () => most };
}

describe("the daemon's hot-plug trigger", () => {
  it("M15 first sight runs nothing; a burst of edits is one reconcile after the debounce", async () => {
    const h = harness();
    h.r.observe(pod("a"), "change");
    await sleep(60);
    expect(h.calls).toEqual([]);
    h.r.observe(pod("a,b"), "change");
    h.r.observe(pod("a,b,c"), "change");
    h.r.observe(pod("a,b,c"), "change");
    await sleep(80);
    expect(h.calls).toEqual(["app/web"]);
    const seconds = expect.any(Number);
    expect(h.tallies).toEqual([{ attached: 1, detached: 0, failed: false, seconds }]);
    await h.r.stop();
  });

  it("M15 an edit during a reconcile runs one more after it, never two at a time", async () => {
    const h = harness([], { delayMs: 80 });
    h.r.observe(pod("a"), "change");
    h.r.observe(pod("a,b"), "change");
    await sleep(40);
    h.r.observe(pod("a"), "change");
    await sleep(250);
    expect(h.calls).toHaveLength(2);
    expect(h.most()).toBe(1);
    await h.r.stop();
  });

  it("M15 a failed reconcile is retried with backoff, at most maxAttempts times per edit", async () => {
    const fail = { ok: false, attached: 0, detached: 0, error: "boom" };
    const h = harness([fail, fail, fail, fail]);
    h.r.observe(pod("a"), "change");
    h.r.observe(pod("a,b"), "change");
    await sleep(250);
    expect(h.calls).toHaveLength(3);
    expect(h.tallies.every((t) => (t as { failed: boolean }).failed)).toBe(true);
    await h.r.stop();
  });

  it("M15 pods of other namespaces, and deleted pods, are left alone", async () => {
    const h = harness([], { namespaces: "db" });
    h.r.observe(pod("a"), "change");
    h.r.observe(pod("a,b"), "change");
    const other = harness();
    other.r.observe(pod("a"), "change");
    other.r.observe(pod("a,b"), "change");
    other.r.observe(pod("a,b"), "delete");
    await sleep(80);
    expect(h.calls).toEqual([]);
    expect(other.calls).toEqual([]);
    await h.r.stop();
    await other.r.stop();
  });

  it("M15 --hot-plug-namespaces takes namespace names separated by commas", () => {
    expect([...parseNamespaces("app, db")!]).toEqual(["app", "db"]);
    expect(parseNamespaces(undefined)).toBeUndefined();
    expect(() => parseNamespaces(",")).toThrow(/expected namespace names/);
    expect(() => parseNamespaces("App")).toThrow(/expected namespace names/);
  });

  it("B93 40 pods edited at once: the node's limiter runs at most its number of reconciles", async () => {
    const limiter = new Limiter(3);
    const h = harness([], { delayMs: 15, limiter });
    const names = Array.from({ length: 40 }, (_, i) => `pod${i}`);
    for (const name of names) h.r.observe(pod("a", "app", name), "change");
    for (const name of names) h.r.observe(pod("a,b", "app", name), "change");
    await expect.poll(() => h.calls.length, { timeout: 5000 }).toBe(40);
    // Every pod reconciled once, never more than three at a time (and three did run together).
    expect(new Set(h.calls).size).toBe(40);
    expect(h.most()).toBe(3);
    expect(limiter.active).toBe(0);
    await h.r.stop();
  });

  it("B93 an edit made while its reconcile waits for the limiter is read by it: no second run", async () => {
    const limiter = new Limiter(1);
    let release = () => {};
    const busy = limiter.run(() => new Promise<void>((resolve) => (release = resolve)));
    const h = harness([], { limiter });
    h.r.observe(pod("a"), "change");
    h.r.observe(pod("a,b"), "change");
    await sleep(60);
    h.r.observe(pod("a,b,c"), "change");
    await sleep(60);
    expect(h.calls).toEqual([]);
    release();
    await busy;
    await sleep(80);
    expect(h.calls).toEqual(["app/web"]);
    await h.r.stop();
  });

  it("B93 each reconcile is told the Warning events the pod's last one recorded", async () => {
    const fail = { ok: false, attached: 0, detached: 0, error: "boom", warned: ["k1"] };
    const unsaid = { ok: false, attached: 0, detached: 0, error: "crashed" };
    const h = harness([fail, unsaid, { ok: true, attached: 1, detached: 0, warned: [] }]);
    h.r.observe(pod("a"), "change");
    h.r.observe(pod("a,b"), "change");
    await expect.poll(() => h.calls.length, { timeout: 2000 }).toBe(3);
    h.r.observe(pod("a,b,c"), "change");
    await expect.poll(() => h.calls.length, { timeout: 2000 }).toBe(4);
    // A report without its events keeps the last ones; one that recorded none clears them.
    expect(h.sent).toEqual([[], ["k1"], ["k1"], []]);
    await h.r.stop();
  });

  it("B93 --hot-plug-concurrency takes a whole number from 1 to 64, 4 by default", () => {
    expect(parseConcurrency(undefined)).toBe(4);
    expect(parseConcurrency("12")).toBe(12);
    for (const bad of ["0", "65", "2.5", "", "four", "-1"])
      expect(() => parseConcurrency(bad), bad).toThrow(/expected a whole number from 1 to 64/);
  });
});
