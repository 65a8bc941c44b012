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

const s = (value: string) => ({ string: value });
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

function scenarioNad(name: string, options: ScenarioOptions): Obj {
  return {
    apiVersion: "k8s.cni.cncf.io/v1",
    kind: "NetworkAttachmentDefinition",
    metadata: {
      name,
      namespace: "app",
      annotations: { "k8s.v1.cni.cncf.io/resourceName": NETDRA },
    },
    spec: { config: options.nadConfig(name) },
  };
}

/**
 * The pod: a claim from a template (its generated name in the status) and a claim named directly.
 */
function scenarioPod(networks: string): Obj {
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: {
      name: "web",
      namespace: "app",
      uid: "uid-web",
      annotations: { "k8s.v1.cni.cncf.io/networks": networks },
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
  };
}

const result = (driver: string, device: string, request: string) => ({
  driver,
  pool: NODE,
  device,
  request,
});

/** The two claims, allocated and reserved for the pod. */
function scenarioClaims(): Obj[] {
  return [
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
  ];
}

/** The node's slices: the SR-IOV pool in two generations (only the latest counts), and a GPU. */
function scenarioSlices(): Obj[] {
  const slice = (name: string, spec: Record<string, unknown>): Obj => ({
    apiVersion: "resource.k8s.io/v1",
    kind: "ResourceSlice",
    metadata: { name },
    spec,
  });
  const pool = (generation: number) => ({ name: NODE, generation, resourceSliceCount: 1 });
  return [
    slice(`${NODE}-sriov-old`, {
      driver: SRIOV_DRIVER,
      nodeName: NODE,
      pool: pool(1),
      devices: [vfDevice("vf-1", "0000:99:00.1"), vfDevice("vf-2", "0000:99:00.2")],
    }),
    slice(`${NODE}-sriov`, {
      driver: SRIOV_DRIVER,
      nodeName: NODE,
      pool: pool(2),
      devices: [vfDevice("vf-1", VF1), vfDevice("vf-2", VF2), vfDevice("vf-3", "0000:07:00.3")],
    }),
    slice(`${NODE}-gpu`, {
      driver: GPU_DRIVER,
      nodeName: NODE,
      pool: pool(1),
      devices: [{ name: "gpu-0", attributes: { model: s("A100") } }],
    }),
  ];
}

export function draScenario(options: ScenarioOptions): DraScenario {
  const sc: DraScenario = {
    pod: scenarioPod(options.networks ?? "netdra-a,netdra-b"),
    nads: [scenarioNad("netdra-a", options), scenarioNad("netdra-b", options)],
    claims: scenarioClaims(),
    slices: scenarioSlices(),
  };
  options.edit?.(sc);
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
