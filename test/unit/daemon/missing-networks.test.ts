/**
 * The daemon's NetworksMissing detector over pods as the watch cache keeps them, with a fake clock.
 */
import { describe, expect, it } from "vitest";
import { MissingNetworksDetector, missingNetworks } from "../../../src/daemon/missing-networks";
import type { PodEvent } from "../../../src/cluster/kube-api";
import { silentLogger } from "../../../src/log/logger";
import { NETWORK_STATUS_ANNOTATION, NETWORKS_ANNOTATION, type Pod } from "../../../src/npwg/types";

function pod(
  name: string,
  options: {
    networks?: string;
    status?: unknown[];
    phase?: string;
    hostNetwork?: boolean;
    deleting?: boolean;
    namespace?: string;
  } = {},
): Pod {
  const annotations: Record<string, string> = {};
  if (options.networks !== undefined) annotations[NETWORKS_ANNOTATION] = options.networks;
  if (options.status) annotations[NETWORK_STATUS_ANNOTATION] = JSON.stringify(options.status);
  return {
    metadata: {
      name,
      namespace: options.namespace ?? "app",
      uid: `uid-${name}`,
      annotations,
      ...(options.deleting ? { deletionTimestamp: "2026-01-01T00:00:00Z" } : {}),
    },
    spec: { nodeName: "node-1", ...(options.hostNetwork ? { hostNetwork: true } : {}) },
    status: { phase: options.phase ?? "Running" },
  };
}
const entry = (name: string, iface: string, isDefault = false) => ({
  name,
  interface: iface,
  default: isDefault,
});

describe("missingNetworks: what a Running pod asked for and does not have", () => {
  it("a pod with every network in its status is fine; one lacking a network names it (with its interface when requested)", () => {
    const full = pod("a", {
      networks: "net-a,other/net-b@data0",
      status: [
        entry("cbr0", "eth0", true),
        entry("app/net-a", "net1"),
        entry("other/net-b", "data0"),
      ],
    });
    expect(missingNetworks(full)).toBeUndefined();
    const partial = pod("b", {
      networks: "net-a,other/net-b@data0",
      status: [entry("cbr0", "eth0", true), entry("app/net-a", "net1")],
    });
    expect(missingNetworks(partial)).toEqual(["other/net-b@data0"]);
  });

  it("a pod with no network-status at all (created before Plexus, or a runtime that skipped it) lacks everything it asked for", () => {
    expect(
      missingNetworks(
        pod("c", {
          networks: JSON.stringify([{ name: "net-a" }, { name: "net-a", interface: "net9" }]),
        }),
      ),
    ).toEqual(["app/net-a", "app/net-a@net9"]);
  });

  it("the same NAD twice needs two status entries", () => {
    expect(
      missingNetworks(
        pod("d", {
          networks: "net-a,net-a",
          status: [entry("cbr0", "eth0", true), entry("app/net-a", "net1")],
        }),
      ),
    ).toEqual(["app/net-a"]);
  });

  it.each([
    ["hostNetwork pods (no CNI at all)", { networks: "net-a", hostNetwork: true }],
    ["pods not Running yet", { networks: "net-a", phase: "Pending" }],
    ["finished pods", { networks: "net-a", phase: "Succeeded" }],
    ["pods being deleted", { networks: "net-a", deleting: true }],
    ["pods that ask for nothing", {}],
    ["pods with an empty annotation", { networks: " " }],
  ])("never flags %s", (_label, o) => {
    expect(missingNetworks(pod("e", o))).toBeUndefined();
  });

  it("pods in kube-system are checked too (the annotation applies in systemNamespaces)", () => {
    expect(missingNetworks(pod("f", { networks: "net-a", namespace: "kube-system" }))).toEqual([
      "kube-system/net-a",
    ]);
  });
});

function detector(pods: Pod[], options: { failEvents?: number } = {}) {
  let now = 1_000_000;
  let failures = options.failEvents ?? 0;
  const events: Array<{ pod: string; event: PodEvent }> = [];
  const d = new MissingNetworksDetector({
    pods: () => pods,
    api: {
      recordEvent: async (p, event) => {
        if (failures-- > 0) throw new Error("API down");
        events.push({ pod: `${p.namespace}/${p.name}/${p.uid}`, event });
      },
    },
    log: silentLogger(),
    graceMs: 30_000,
    now: () => now,
  });
  return { d, events, advance: (ms: number) => (now += ms) };
}

describe("MissingNetworksDetector", () => {
  it("waits out the grace period, then records one Warning NetworksMissing event per pod UID and counts it; never again for the same UID", async () => {
    const pods = [
      pod("old", { networks: "net-a" }),
      pod("ok", {
        networks: "net-a",
        status: [entry("cbr0", "eth0", true), entry("app/net-a", "net1")],
      }),
      pod("host", { networks: "net-a", hostNetwork: true }),
    ];
    const { d, events, advance } = detector(pods);
    await d.scan();
    expect(events).toEqual([]);
    expect(d.flagged).toBe(0);
    advance(29_000);
    await d.scan();
    expect(events).toEqual([]);
    advance(2_000);
    await d.scan();
    expect(events).toEqual([
      {
        pod: "app/old/uid-old",
        event: {
          type: "Warning",
          reason: "NetworksMissing",
          message: expect.stringContaining("app/net-a"),
        },
      },
    ]);
    expect(events[0]!.event.message).toContain("no network-status at all");
    expect(d.flagged).toBe(1);
    for (let i = 0; i < 5; i++) {
      advance(10_000);
      await d.scan();
    }
    expect(events).toHaveLength(1);
    expect(d.flagged).toBe(1);
  });

  it("a pod whose status arrives within the grace period (an ADD that just finished) is never flagged", async () => {
    const p = pod("new", { networks: "net-a" });
    const pods = [p];
    const { d, events, advance } = detector(pods);
    await d.scan();
    advance(5_000);
    pods[0] = pod("new", {
      networks: "net-a",
      status: [entry("cbr0", "eth0", true), entry("app/net-a", "net1")],
    });
    await d.scan();
    advance(60_000);
    await d.scan();
    expect(events).toEqual([]);
    expect(d.flagged).toBe(0);
  });

  it("the count drops when the pod goes away; a recreated pod (new UID) is reported again", async () => {
    const pods = [pod("p", { networks: "net-a" })];
    const { d, events, advance } = detector(pods);
    await d.scan();
    advance(31_000);
    await d.scan();
    expect(d.flagged).toBe(1);
    pods.pop();
    await d.scan();
    expect(d.flagged).toBe(0);
    pods.push({
      ...pod("p", { networks: "net-a" }),
      metadata: { ...pod("p", { networks: "net-a" }).metadata, uid: "uid-p-2" },
    });
    await d.scan();
    advance(31_000);
    await d.scan();
    expect(events.map((e) => e.pod)).toEqual(["app/p/uid-p", "app/p/uid-p-2"]);
  });

  it("an event the API refused is tried again at the next scan, and then written once", async () => {
    const { d, events, advance } = detector([pod("q", { networks: "net-a" })], { failEvents: 1 });
    await d.scan();
    advance(31_000);
    await d.scan();
    expect(events).toEqual([]);
    await d.scan();
    await d.scan();
    expect(events).toHaveLength(1);
  });
});
