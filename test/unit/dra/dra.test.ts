/**
 * DRA (resource.k8s.io/v1) reading (M10): the trimmed shapes (src/cluster/dra-objects.ts), the
 * claims a pod uses (src/dra/pod-claims.ts), the claims → slices → attributes walk
 * (src/dra/claim-devices.ts) over an in-memory reader, and how devices.ts combines a pod's claimed
 * devices with kubelet's (sorted, kubelet asked only for requested resources).
 */
import { describe, expect, it } from "vitest";
import {
  trimPodClaims,
  trimResourceClaim,
  trimResourceSlice,
} from "../../../src/cluster/dra-objects";
import { allocatedForPod, podClaimRefs } from "../../../src/dra/pod-claims";
import { type DraReader, podClaimDevices } from "../../../src/dra/claim-devices";
import { trimPod } from "../../../src/cluster/objects";
import { silentLogger } from "../../../src/log/logger";
import type { Pod } from "../../../src/npwg/types";
import { assignDevices } from "../../../src/planning/devices";
import type { Attachment } from "../../../src/nodestate/record";
import {
  draScenario,
  GPU_CLAIM,
  NET_CLAIM,
  NETDRA,
  VF1,
  VF2,
  vfDevice,
} from "../../support/dra-fixtures";
import { recordingLogger } from "../../fakes/fake-exec";

const nadConfig = () => "{}";

function reader(sc = draScenario({ nadConfig })): DraReader & { calls: string[] } {
  const calls: string[] = [];
  return {
    calls,
    async getResourceClaim(namespace, name) {
      calls.push(`claim ${namespace}/${name}`);
      const c = sc.claims.find((x) => x.metadata.name === name);
      return c ? trimResourceClaim(c, namespace) : undefined;
    },
    async listResourceSlices(query) {
      calls.push(`slices ${query.nodeName} ${query.driver}`);
      return sc.slices
        .flatMap((s) => trimResourceSlice(s) ?? [])
        .filter((s) => s.spec.driver === query.driver);
    },
  };
}

const podOf = (sc = draScenario({ nadConfig })) => trimPod(sc.pod, "app")!;

describe("M10 DRA: trimmed shapes", () => {
  it("M10 a pod without claims keeps exactly its old trimmed shape; one with claims keeps them and its containers' extended resources only", () => {
    const plain = {
      metadata: { name: "a", namespace: "x" },
      spec: { nodeName: "n", containers: [{ name: "c" }] },
    };
    expect(trimPod(plain, "x")).toEqual({
      metadata: { name: "a", namespace: "x" },
      spec: { nodeName: "n" },
    });
    expect(trimPodClaims(plain)).toEqual({});
    const sc = draScenario({ nadConfig });
    (sc.pod.spec as { containers: unknown[] }).containers = [
      {
        name: "app",
        resources: { requests: { cpu: "1", [NETDRA]: 2 }, limits: { memory: "1Gi" } },
      },
    ];
    const pod = podOf(sc);
    expect(pod.spec).toEqual({
      nodeName: "node-1",
      resourceClaims: [
        { name: "net", resourceClaimTemplateName: "netdra-vfs" },
        { name: "gpu", resourceClaimName: GPU_CLAIM },
      ],
      containers: [{ name: "app", resources: { requests: { [NETDRA]: "2" } } }],
    });
    expect(pod.status).toEqual({
      resourceClaimStatuses: [{ name: "net", resourceClaimName: NET_CLAIM }],
    });
    // The daemon answers a trimmed pod that the binary trims again: the same pod.
    expect(trimPod(pod as never, "app")).toEqual(pod);
  });

  it("M10 claims: by name, from a template once generated; a template's entry without a name needs none; an entry not generated yet has no name; a claim named twice counts once", () => {
    const pod: Pod = {
      metadata: { name: "p", namespace: "n" },
      spec: {
        resourceClaims: [
          { name: "a", resourceClaimName: "direct" },
          { name: "b", resourceClaimTemplateName: "t" },
          { name: "c", resourceClaimTemplateName: "t" },
          { name: "d", resourceClaimTemplateName: "t2" },
          { name: "e", resourceClaimName: "direct" },
        ],
      },
      status: { resourceClaimStatuses: [{ name: "b", resourceClaimName: "p-b-1" }, { name: "c" }] },
    };
    expect(podClaimRefs(pod)).toEqual([
      { podClaim: "a", claim: "direct" },
      { podClaim: "b", claim: "p-b-1", template: "t" },
      { podClaim: "d", template: "t2" },
    ]);
  });

  it("M10 a claim keeps the pods it is reserved for (other consumers dropped), at most the API's 256", () => {
    const sc = draScenario({ nadConfig });
    const status = sc.claims[0]!.status as { reservedFor: unknown[] };
    status.reservedFor = [
      { resource: "pods", name: "web", uid: "uid-web" },
      { apiGroup: "example.com", resource: "pods", name: "x", uid: "uid-x" },
      { resource: "jobs", name: "j", uid: "uid-j" },
      { resource: "pods", name: "no-uid" },
      ...Array.from({ length: 300 }, (_, i) => ({ resource: "pods", name: `p${i}`, uid: `u${i}` })),
    ];
    const claim = trimResourceClaim(sc.claims[0]!, "app")!;
    const kept = claim.status!.reservedFor!;
    expect(kept[0]).toEqual({ resource: "pods", name: "web", uid: "uid-web" });
    expect(kept.map((r) => r.uid)).not.toContain("uid-x");
    expect(kept.map((r) => r.uid)).not.toContain("uid-j");
    expect(kept).toHaveLength(256 - 3);
    expect(allocatedForPod(claim, "uid-web")).toBe(true);
    expect(allocatedForPod(claim, "uid-x")).toBe(false);
    // Re-trimmed (the daemon's answer, trimmed again by the CNI binary): the same claim.
    expect(trimResourceClaim(claim as never, "app")).toEqual(claim);
  });

  it("M10 a slice keeps only the two network attributes of each device", () => {
    const s = trimResourceSlice(draScenario({ nadConfig }).slices[1]!)!;
    expect(s.spec.pool).toEqual({ name: "node-1", generation: 2 });
    expect(s.spec.devices[0]).toEqual({
      name: "vf-1",
      attributes: {
        "k8s.cni.cncf.io/deviceID": { string: VF1 },
        "k8s.cni.cncf.io/resourceName": { string: NETDRA },
      },
    });
  });
});

describe("M10 DRA: a pod's claimed network devices", () => {
  it("M10 D2 allocation order kept, the pool's latest generation only, the GPU claim skipped with a warning naming it; one LIST per driver", async () => {
    const r = reader();
    const logger = recordingLogger();
    const got = await podClaimDevices(podOf(), r, logger);
    expect(got.byResource.get(NETDRA)!.map((d) => [d.deviceID, d.device, d.claim])).toEqual([
      [VF2, "vf-2", NET_CLAIM],
      [VF1, "vf-1", NET_CLAIM],
    ]);
    expect([...got.byResource.keys()]).toEqual([NETDRA]);
    expect(got.claims).toEqual([NET_CLAIM, GPU_CLAIM]);
    expect(r.calls.filter((c) => c.startsWith("slices"))).toEqual([
      "slices node-1 sriov.example.com",
      "slices node-1 gpu.example.com",
    ]);
    const warned = logger.lines.filter((x) => x.level === "warn" || x.level === "error");
    expect(warned.map((x) => x.msg)).toEqual([
      expect.stringContaining("ResourceClaim contributes no network device"),
    ]);
    expect(warned[0]!.obj).toMatchObject({ claim: GPU_CLAIM });
  });

  it("M10 a device with only one of the two attributes, and one in no slice: skipped with a warning", async () => {
    const sc = draScenario({
      nadConfig,
      edit: (s) => {
        const devices = (s.slices[1]!.spec as { devices: Array<Record<string, unknown>> }).devices;
        devices[0] = { name: "vf-1", attributes: { "k8s.cni.cncf.io/deviceID": { string: VF1 } } };
        devices.splice(1, 1);
      },
    });
    const logger = recordingLogger();
    const got = await podClaimDevices(podOf(sc), reader(sc), logger);
    expect(got.byResource.size).toBe(0);
    expect(got.notInSlice).toBe(1);
    const warnings = logger.lines.filter((x) => x.level === "warn").map((x) => x.msg);
    // The GPU claim is named too; the VF claim, one of whose devices may yet appear, is not.
    expect(warnings).toEqual([
      expect.stringContaining("found in no ResourceSlice"),
      expect.stringContaining("has only one of"),
      expect.stringContaining("contributes no network device"),
    ]);
  });

  it("M10 an attribute of the wrong type is an error (7) naming claim, device and attribute", async () => {
    const sc = draScenario({
      nadConfig,
      edit: (s) => {
        (s.slices[1]!.spec as { devices: unknown[] }).devices[1] = {
          ...vfDevice("vf-2", VF2),
          attributes: {
            "k8s.cni.cncf.io/deviceID": "0000:07:00.2",
            "k8s.cni.cncf.io/resourceName": { string: NETDRA },
          },
        };
      },
    });
    await expect(podClaimDevices(podOf(sc), reader(sc), silentLogger())).rejects.toMatchObject({
      code: 7,
      message: expect.stringMatching(
        new RegExp(
          `ResourceClaim ${NET_CLAIM}: device vf-2 .*k8s\\.cni\\.cncf\\.io/deviceID must be a ` +
            `string`,
        ),
      ),
    });
  });
});

describe("M10 DRA combined with kubelet's devices (devices.ts)", () => {
  const att = (network: string, ifName: string): Attachment => ({
    network,
    ifName,
    isDefault: false,
    conf: { cniVersion: "1.0.0", name: network, plugins: [{ type: "sriov" }] },
  });

  it("M10 kubelet is asked only for resources a container requests; both sources' IDs sorted together", async () => {
    const sc = draScenario({ nadConfig });
    (sc.pod.spec as { containers: unknown[] }).containers = [
      { name: "app", resources: { limits: { "intel.com/dp": "1", [NETDRA]: "1" } } },
    ];
    const asked: string[][] = [];
    const out = await assignDevices(
      [att("app/a", "net1"), att("app/b", "net2"), att("app/c", "net3"), att("app/d", "net4")],
      [NETDRA, NETDRA, NETDRA, "intel.com/dp"],
      {
        ref: { namespace: "app", name: "web" },
        containerId: "c1",
        conf: { deviceInfoDir: "" },
        pod: podOf(sc),
        dra: reader(sc),
        lookup: async (q) => {
          asked.push(q.resourceNames);
          return new Map([
            [NETDRA, ["0000:07:00.0"]],
            ["intel.com/dp", ["0000:3b:00.1"]],
          ]);
        },
        log: silentLogger(),
      },
    );
    expect(asked).toEqual([[NETDRA, "intel.com/dp"]]);
    expect(out.map((a) => [a.device?.deviceID, a.device?.from])).toEqual([
      ["0000:07:00.0", "kubelet"],
      [VF1, "claim"],
      [VF2, "claim"],
      ["0000:3b:00.1", "kubelet"],
    ]);
  });

  it("M10 a pod without claims: kubelet for every resource, no DRA read", async () => {
    const sc = draScenario({ nadConfig });
    delete (sc.pod.spec as Record<string, unknown>).resourceClaims;
    delete (sc.pod.status as Record<string, unknown>).resourceClaimStatuses;
    const r = reader(sc);
    const out = await assignDevices([att("app/a", "net1")], [NETDRA], {
      ref: { namespace: "app", name: "web" },
      containerId: "c1",
      conf: { deviceInfoDir: "" },
      pod: podOf(sc),
      dra: r,
      lookup: async () => new Map([[NETDRA, ["0000:01:00.1"]]]),
      log: silentLogger(),
    });
    expect(out[0]!.device).toMatchObject({ deviceID: "0000:01:00.1", from: "kubelet" });
    expect(r.calls).toEqual([]);
  });
});
