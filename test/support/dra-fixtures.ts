/**
 * A pod with device networks through DRA (resource.k8s.io/v1), as objects for the manifest
 * directory, the fake API server and unit tests alike: two NADs with resourceName
 * example.com/netdra, a claim generated from a template and allocated two VFs (in the order
 * 0000:07:00.2, 0000:07:00.1) of an SR-IOV driver's ResourceSlice, and a GPU claim (named directly)
 * whose device has neither network attribute; both reserved for the pod, as the scheduler leaves
 * them before it binds the pod to the node. An older generation of the SR-IOV pool names other
 * PCI addresses: only the latest generation counts.
 */
export const NETDRA = "example.com/netdra";
const SRIOV_DRIVER = "sriov.example.com";
const GPU_DRIVER = "gpu.example.com";
const NODE = "node-1";
export const VF1 = "0000:07:00.1";
export const VF2 = "0000:07:00.2";
export const NET_CLAIM = "web-net-x7k2p";
export const GPU_CLAIM = "gpu-claim";

const s = (v: string) => ({ string: v });
type Obj = {
  apiVersion: string;
  kind: string;
  metadata: Record<string, unknown> & { name: string };
  [k: string]: unknown;
};

export interface DraScenario {
  pod: Obj;
  nads: Obj[];
  claims: Obj[];
  slices: Obj[];
}

export interface ScenarioOptions {
  /** Each NAD's netconf (JSON text). */
  nadConfig: (name: string) => string;
  networks?: string;
  /** Changes to apply to the default objects. */
  edit?: (o: DraScenario) => void;
}

export function vfDevice(name: string, pci: string, resourceName: unknown = s(NETDRA)) {
  return {
    name,
    attributes: {
      "k8s.cni.cncf.io/deviceID": s(pci),
      "k8s.cni.cncf.io/resourceName": resourceName,
      "sriov.example.com/pfName": s("ens1f0"),
    },
  };
}

export function draScenario(o: ScenarioOptions): DraScenario {
  const nad = (name: string): Obj => ({
    apiVersion: "k8s.cni.cncf.io/v1",
    kind: "NetworkAttachmentDefinition",
    metadata: {
      name,
      namespace: "app",
      annotations: { "k8s.v1.cni.cncf.io/resourceName": NETDRA },
    },
    spec: { config: o.nadConfig(name) },
  });
  const result = (driver: string, device: string, request: string) => ({
    driver,
    pool: NODE,
    device,
    request,
  });
  const sc: DraScenario = {
    pod: {
      apiVersion: "v1",
      kind: "Pod",
      metadata: {
        name: "web",
        namespace: "app",
        uid: "uid-web",
        annotations: { "k8s.v1.cni.cncf.io/networks": o.networks ?? "netdra-a,netdra-b" },
      },
      spec: {
        nodeName: NODE,
        containers: [
          {
            name: "app",
            image: "busybox",
            resources: { claims: [{ name: "net" }, { name: "gpu" }] },
          },
        ],
        resourceClaims: [
          { name: "net", resourceClaimTemplateName: "netdra-vfs" },
          { name: "gpu", resourceClaimName: GPU_CLAIM },
        ],
      },
      status: {
        phase: "Pending",
        resourceClaimStatuses: [{ name: "net", resourceClaimName: NET_CLAIM }],
      },
    },
    nads: [nad("netdra-a"), nad("netdra-b")],
    claims: [
      {
        apiVersion: "resource.k8s.io/v1",
        kind: "ResourceClaim",
        metadata: { name: NET_CLAIM, namespace: "app" },
        spec: {
          devices: {
            requests: [{ name: "vfs", exactly: { deviceClassName: "sriov-vf", count: 2 } }],
          },
        },
        status: {
          allocation: {
            devices: {
              results: [result(SRIOV_DRIVER, "vf-2", "vfs"), result(SRIOV_DRIVER, "vf-1", "vfs")],
            },
            nodeSelector: {
              nodeSelectorTerms: [
                { matchFields: [{ key: "metadata.name", operator: "In", values: [NODE] }] },
              ],
            },
          },
          reservedFor: [{ resource: "pods", name: "web", uid: "uid-web" }],
        },
      },
      {
        apiVersion: "resource.k8s.io/v1",
        kind: "ResourceClaim",
        metadata: { name: GPU_CLAIM, namespace: "app" },
        spec: { devices: { requests: [{ name: "gpu", exactly: { deviceClassName: "gpu" } }] } },
        status: {
          allocation: { devices: { results: [result(GPU_DRIVER, "gpu-0", "gpu")] } },
          reservedFor: [{ resource: "pods", name: "web", uid: "uid-web" }],
        },
      },
    ],
    slices: [
      {
        apiVersion: "resource.k8s.io/v1",
        kind: "ResourceSlice",
        metadata: { name: `${NODE}-sriov-old` },
        spec: {
          driver: SRIOV_DRIVER,
          nodeName: NODE,
          pool: { name: NODE, generation: 1, resourceSliceCount: 1 },
          devices: [vfDevice("vf-1", "0000:99:00.1"), vfDevice("vf-2", "0000:99:00.2")],
        },
      },
      {
        apiVersion: "resource.k8s.io/v1",
        kind: "ResourceSlice",
        metadata: { name: `${NODE}-sriov` },
        spec: {
          driver: SRIOV_DRIVER,
          nodeName: NODE,
          pool: { name: NODE, generation: 2, resourceSliceCount: 1 },
          devices: [vfDevice("vf-1", VF1), vfDevice("vf-2", VF2), vfDevice("vf-3", "0000:07:00.3")],
        },
      },
      {
        apiVersion: "resource.k8s.io/v1",
        kind: "ResourceSlice",
        metadata: { name: `${NODE}-gpu` },
        spec: {
          driver: GPU_DRIVER,
          nodeName: NODE,
          pool: { name: NODE, generation: 1, resourceSliceCount: 1 },
          devices: [{ name: "gpu-0", attributes: { model: s("A100") } }],
        },
      },
    ],
  };
  o.edit?.(sc);
  return sc;
}

/** The scenario as one multi-document YAML-compatible JSON `List` (for fileClusterDir). */
export function scenarioList(sc: DraScenario): string {
  return JSON.stringify({
    apiVersion: "v1",
    kind: "List",
    items: [sc.pod, ...sc.nads, ...sc.claims, ...sc.slices],
  });
}
