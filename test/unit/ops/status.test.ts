/**
 * `plexus status`'s pure parts: the version from an image reference, one Plexus pod as a row (as
 * the API server returns the pod), the missing-networks rule with the grace period, the rows and
 * the summary, and the table with what comes from the cluster escaped.
 */
import { describe, expect, it } from "vitest";
import {
  type FleetStatus,
  fleetStatus,
  imageTag,
  nodeMissingNetworks,
  plexusPodStatus,
  renderStatus,
} from "../../../src/ops/status";
import { NETWORK_STATUS_ANNOTATION, NETWORKS_ANNOTATION } from "../../../src/npwg/types";

const PROBE = { exec: { command: ["/usr/local/bin/plexus", "install", "--ready"] } };

function pod(node: string, o: { image?: string; install?: boolean; probe?: boolean } = {}) {
  return {
    metadata: {
      name: `plexus-${node}`,
      namespace: "kube-system",
      labels: { "app.kubernetes.io/version": "9.9.9" },
    },
    spec: {
      nodeName: node,
      containers: [
        {
          name: "install",
          image: o.image ?? "r.example/plexus:0.2.0",
          ...(o.probe === false ? {} : { readinessProbe: PROBE }),
        },
        { name: "daemon", image: o.image ?? "r.example/plexus:0.2.0" },
      ],
    },
    status: {
      phase: "Running",
      conditions: [{ type: "Ready", status: o.install === false ? "False" : "True" }],
      containerStatuses: [
        { name: "install", ready: o.install ?? true, restartCount: 1 },
        { name: "daemon", ready: true, restartCount: 0 },
      ],
    },
  };
}

describe("plexus status, pure parts", () => {
  it("the version: the image's tag, past a registry port and before a digest; none without one", () => {
    expect(imageTag("localhost/plexus:0.1.0")).toBe("0.1.0");
    expect(imageTag("registry:5000/team/plexus:0.2.0@sha256:ab")).toBe("0.2.0");
    expect(imageTag("registry:5000/team/plexus@sha256:ab")).toBeUndefined();
    expect(imageTag("plexus")).toBeUndefined();
    // Digest only: the pod's version label.
    const byDigest = pod("n", { image: "registry:5000/plexus@sha256:ab" });
    expect(plexusPodStatus(byDigest).version).toBe("9.9.9");
  });

  it("M11 switched is the install container's readiness, and unknown without the switch probe", () => {
    expect(plexusPodStatus(pod("a"))).toEqual({
      node: "a",
      pod: "kube-system/plexus-a",
      version: "0.2.0",
      switched: true,
      ready: true,
      podsMissingNetworks: 0,
      notes: ["1 restart(s)"],
    });
    expect(plexusPodStatus(pod("b", { install: false }))).toMatchObject({
      switched: false,
      ready: false,
      notes: ["not ready: install", "1 restart(s)"],
    });
    const old = plexusPodStatus(pod("c", { probe: false }));
    expect(old.switched).toBeUndefined();
    expect(old.notes.join()).toContain("no switch probe");
    // Whatever else the API answers, a row comes out.
    expect(plexusPodStatus({})).toMatchObject({ node: "(unscheduled)", ready: false });
  });

  it("a pod counts as missing networks only past the grace, Running, not on the host network", () => {
    const now = Date.parse("2030-01-01T00:10:00Z");
    const at = { now, graceMs: 30_000 };
    const app = (status: Record<string, unknown>, extra: Record<string, unknown> = {}) => ({
      metadata: { name: "w", namespace: "app", annotations: { [NETWORKS_ANNOTATION]: "net-a" } },
      spec: { nodeName: "n1", ...extra },
      status: { phase: "Running", startTime: "2030-01-01T00:00:00Z", ...status },
    });
    expect(nodeMissingNetworks(app({}), at)).toBe("n1");
    expect(nodeMissingNetworks(app({ startTime: "2030-01-01T00:09:50Z" }), at)).toBeUndefined();
    expect(nodeMissingNetworks(app({ phase: "Pending" }), at)).toBeUndefined();
    expect(nodeMissingNetworks(app({}, { hostNetwork: true }), at)).toBeUndefined();
    const has = app({});
    (has.metadata.annotations as Record<string, string>)[NETWORK_STATUS_ANNOTATION] =
      JSON.stringify([{ name: "app/net-a", interface: "net1" }]);
    expect(nodeMissingNetworks(has, at)).toBeUndefined();
  });

  it("rows sorted by node, a row for a node with missing pods and no Plexus pod, the summary", () => {
    const status = fleetStatus(
      [pod("b", { install: false }), pod("a", { image: "r/plexus:0.1.0" })],
      new Map([
        ["b", 2],
        ["z", 1],
      ]),
    );
    expect(status.nodes.map((r) => [r.node, r.podsMissingNetworks])).toEqual([
      ["a", 0],
      ["b", 2],
      ["z", 1],
    ]);
    expect(status.nodes[2]!.notes).toEqual(["no Plexus pod on this node"]);
    expect(status.summary).toEqual({
      nodes: 3,
      switched: 1,
      ready: 1,
      podsMissingNetworks: 3,
      versions: { "0.1.0": 1, "0.2.0": 1 },
    });
  });

  it("the table escapes what comes from the cluster (a control character in a node name)", () => {
    const status: FleetStatus = {
      nodes: [
        {
          node: "evil\u001b[2Jnode",
          version: "1",
          switched: true,
          ready: true,
          podsMissingNetworks: 0,
          pod: "kube-system/p",
          notes: [],
        },
      ],
      summary: { nodes: 1, switched: 1, ready: 1, podsMissingNetworks: 0, versions: { "1": 1 } },
    };
    const text = renderStatus(status);
    expect(text).not.toContain("\u001b");
    expect(text.split("\n")[1]).toMatch(/^evil.*node +1 +yes +yes +0 +kube-system\/p$/);
  });
});
