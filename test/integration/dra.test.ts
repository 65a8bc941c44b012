/**
 * Device networks through Dynamic Resource Allocation (resource.k8s.io/v1) with dist/plexus (M10):
 * a pod whose two NADs (resourceName example.com/netdra) are backed by a claim allocated two VFs
 * of a ResourceSlice, plus a GPU claim, and no kubelet socket at all. Read from a manifest
 * directory (fileClusterDir), from the fake API server directly (thin) and through the daemon.
 * The fixture plugin is the device delegate (no SR-IOV here): it logs the deviceID it got.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { request } from "node:http";
import { join } from "node:path";
import { describe, expect, it, onTestFinished } from "vitest";
import {
  type DraScenario,
  draScenario,
  GPU_CLAIM,
  NET_CLAIM,
  NETDRA,
  scenarioList,
  VF1,
  VF2,
  vfDevice,
} from "../support/dra-fixtures";
import { type FakeApiServer, startFakeApiServer, writeKubeconfig } from "../support/fake-apiserver";
import { cniError, PLEXUS_BIN, unixSocketStatus } from "../support/plexus-bin";
import { useSandbox } from "./use-sandbox";

const ctx = useSandbox();
const POD_ARGS = "IgnoreUnknown=1;K8S_POD_NAMESPACE=app;K8S_POD_NAME=web;K8S_POD_UID=uid-web";
const STATUS = "k8s.v1.cni.cncf.io/network-status";

/**
 * The NADs' netconf: the fixture as an SR-IOV-like delegate that declares the device capabilities.
 */
function nadConfig(name: string): string {
  return JSON.stringify(
    ctx.sb.delegate(name, {
      type: "sriov",
      extra: { capabilities: { deviceID: true, CNIDeviceInfoFile: true } },
    }),
  );
}

const deviceAdds = () =>
  ctx.sb
    .invocations()
    .filter((i) => i.command === "ADD" && i.type === "sriov")
    .map((i) => [i.network, i.cniEnv.CNI_IFNAME, (i.stdin as Record<string, unknown>).deviceID]);

const EXPECTED = [
  ["netdra-a", "net1", VF1],
  ["netdra-b", "net2", VF2],
];

function baseConf(extra: Record<string, unknown>): Record<string, unknown> {
  return ctx.sb.config([ctx.sb.delegate("cluster-net")], {
    // No kubelet at all: a device network through DRA never needs its pod-resources socket.
    podResourcesSocket: join(ctx.sb.root, "no-kubelet.sock"),
    podResourcesTimeoutSeconds: 1,
    deviceInfoDir: join(ctx.sb.root, "devinfo"),
    ...extra,
  });
}

function fileCluster(sc: DraScenario): Record<string, unknown> {
  const dir = join(ctx.sb.root, "cluster");
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, "web.json"), scenarioList(sc));
  return baseConf({ fileClusterDir: dir });
}

async function expectCleanDel(conf: Record<string, unknown>): Promise<void> {
  const d = await ctx.sb.run("DEL", conf, { CNI_ARGS: POD_ARGS });
  expect(d.code, d.stdout + d.stderr).toBe(0);
  expect(ctx.sb.recordFiles()).toEqual([]);
}

describe("M10 DRA device networks from a manifest directory (fileClusterDir), no kubelet", () => {
  it("M10 two NADs of one resource get the claim's two devices sorted (0000:07:00.1 to net1, .2 to net2); the GPU claim is skipped; device-info and DEL as for device plugins", async () => {
    const conf = fileCluster(draScenario({ nadConfig }));
    const dp = join(ctx.sb.root, "devinfo", "dp");
    mkdirSync(dp, { recursive: true });
    const pci = { type: "pci", version: "1.1.0", pci: { "pci-address": VF1 } };
    writeFileSync(join(dp, `example.com-netdra-${VF1}-device.json`), JSON.stringify(pci));
    const r = await ctx.sb.run("ADD", conf, { CNI_ARGS: POD_ARGS });
    expect(r.code, r.stdout + r.stderr).toBe(0);
    expect(deviceAdds()).toEqual(EXPECTED);
    const net1 = ctx.sb.invocations().find((i) => i.network === "netdra-a")!;
    expect((net1.stdin as Record<string, unknown>).runtimeConfig).toEqual({
      deviceID: VF1,
      CNIDeviceInfoFile: join(ctx.sb.root, "devinfo", "cni", "netdra-a-ctr1_net1"),
    });
    expect(JSON.parse(net1.deviceInfoSeen as string)).toEqual(pci);
    const status = JSON.parse(
      readFileSync(join(ctx.sb.root, "cluster", "status", "app.web.json"), "utf8"),
    ).metadata.annotations[STATUS];
    expect(JSON.parse(status)[1]).toMatchObject({
      name: "app/netdra-a",
      interface: "net1",
      "device-info": pci,
    });
    await expectCleanDel(conf);
    const dels = ctx.sb.invocations().filter((i) => i.command === "DEL" && i.type === "sriov");
    expect(dels.map((i) => (i.stdin as Record<string, unknown>).deviceID).sort()).toEqual([
      VF1,
      VF2,
    ]);
    expect(existsSync(join(ctx.sb.root, "devinfo", "cni", "netdra-a-ctr1_net1"))).toBe(false);
  });

  const bad: Array<[string, (sc: DraScenario) => void, number, RegExp]> = [
    [
      "a claim not allocated yet",
      (sc) => delete (sc.claims[0]!.status as Record<string, unknown>).allocation,
      11,
      new RegExp(`ResourceClaim app/${NET_CLAIM} is not allocated yet`),
    ],
    [
      "a claim missing",
      (sc) => sc.claims.splice(1, 1),
      11,
      new RegExp(`ResourceClaim app/${GPU_CLAIM} does not exist`),
    ],
    [
      "a template's claim not generated yet",
      (sc) => delete (sc.pod.status as Record<string, unknown>).resourceClaimStatuses,
      11,
      /claim net: no ResourceClaim generated yet from template netdra-vfs/,
    ],
    [
      "an attribute of the wrong type",
      (sc) => {
        (sc.slices[1]!.spec as { devices: unknown[] }).devices[0] = vfDevice("vf-1", VF1, {
          int: 7,
        });
      },
      7,
      /device vf-1 .*k8s\.cni\.cncf\.io\/resourceName must be a string .* but has int/,
    ],
    [
      "more NADs than devices",
      (sc) => {
        sc.pod.metadata.annotations = {
          "k8s.v1.cni.cncf.io/networks": "netdra-a,netdra-b,netdra-a",
        };
      },
      7,
      new RegExp(
        `resource ${NETDRA}: 3 network\\(s\\).*only 2 carry .*ResourceClaim\\(s\\) ${NET_CLAIM}, ` +
          `${GPU_CLAIM}`,
      ),
    ],
    [
      "more NADs than devices because one is in no ResourceSlice (yet)",
      (sc) => {
        (sc.slices[1]!.spec as { devices: unknown[] }).devices.splice(1, 1);
      },
      11,
      /2 network\(s\).*only 1 carry.*1 allocated device\(s\) are in no ResourceSlice yet/,
    ],
    [
      "an extended-resource mapping to a device of another resourceName",
      (sc) => {
        (sc.pod.status as Record<string, unknown>).extendedResourceClaimStatus = {
          resourceClaimName: GPU_CLAIM,
          requestMappings: [{ containerName: "app", resourceName: NETDRA, requestName: "gpu" }],
        };
      },
      7,
      /extended resource example\.com\/netdra is mapped to request gpu, so the device must carry/,
    ],
  ];
  it.each(bad)(
    "B76 M10 %s: a CNI error naming pod, NAD and claim; nothing attached; DEL clean",
    async (_, edit, code, why) => {
      const conf = fileCluster(draScenario({ nadConfig, edit }));
      const err = cniError(await ctx.sb.run("ADD", conf, { CNI_ARGS: POD_ARGS }));
      expect(err.code).toBe(code);
      expect(err.msg).toMatch(/pod app\/web/);
      expect(err.msg).toMatch(/app\/netdra-a/);
      expect(err.msg).toMatch(why);
      expect(ctx.sb.invocations().filter((i) => i.command === "ADD")).toEqual([]);
      await expectCleanDel(conf);
    },
  );

  it("M10 extended-resource mapping (status.extendedResourceClaimStatus): the mapped request's devices, kubelet not asked", async () => {
    const conf = fileCluster(
      draScenario({
        nadConfig,
        edit: (sc) => {
          const pod = sc.pod as unknown as {
            spec: Record<string, unknown>;
            status: Record<string, unknown>;
          };
          pod.spec.resourceClaims = [];
          pod.status.resourceClaimStatuses = [];
          pod.spec.containers = [
            { name: "app", resources: { requests: { [NETDRA]: "2" }, limits: { [NETDRA]: "2" } } },
          ];
          pod.status.extendedResourceClaimStatus = {
            resourceClaimName: NET_CLAIM,
            requestMappings: [{ containerName: "app", resourceName: NETDRA, requestName: "vfs" }],
          };
        },
      }),
    );
    const r = await ctx.sb.run("ADD", conf, { CNI_ARGS: POD_ARGS });
    expect(r.code, r.stdout + r.stderr).toBe(0);
    expect(deviceAdds()).toEqual(EXPECTED);
  });
});

function onApi(api: FakeApiServer, sc: DraScenario): void {
  api.addPod(sc.pod as never);
  for (const n of sc.nads) api.addNad(n as never);
  for (const c of sc.claims) api.addDra("resourceclaims", c as never);
  for (const s of sc.slices) api.addDra("resourceslices", s as never);
}

async function apiSetup(
  edit?: (sc: DraScenario) => void,
  server: Parameters<typeof startFakeApiServer>[0] = {},
): Promise<{ api: FakeApiServer; conf: Record<string, unknown> }> {
  const api = await startFakeApiServer(server);
  onTestFinished(() => api.close());
  onApi(api, draScenario({ nadConfig, ...(edit ? { edit } : {}) }));
  const conf = baseConf({
    kubeconfig: writeKubeconfig(api, { dir: ctx.sb.root }),
    apiRequestTimeoutSeconds: 2,
  });
  return { api, conf };
}

const draRequests = (api: FakeApiServer) =>
  api.requests
    .filter((r) => r.path.startsWith("/apis/resource.k8s.io/"))
    .map((r) => `${r.method} ${r.path}${r.query}`);

describe("M10 DRA device networks through the API server (thin mode)", () => {
  it("M10 the same devices; the ADD adds one GET per claim and one LIST per driver (field selectors spec.nodeName, spec.driver)", async () => {
    const { api, conf } = await apiSetup();
    const r = await ctx.sb.run("ADD", conf, { CNI_ARGS: POD_ARGS });
    expect(r.code, r.stdout + r.stderr).toBe(0);
    expect(deviceAdds()).toEqual(EXPECTED);
    expect(draRequests(api).sort()).toEqual(
      [
        `GET /apis/resource.k8s.io/v1/namespaces/app/resourceclaims/${NET_CLAIM}`,
        `GET /apis/resource.k8s.io/v1/namespaces/app/resourceclaims/${GPU_CLAIM}`,
        "GET /apis/resource.k8s.io/v1/resourceslices?fieldSelector=spec.nodeName%3Dnode-1%2Cspec.driver%3Dsriov.example.com",
        "GET /apis/resource.k8s.io/v1/resourceslices?fieldSelector=spec.nodeName%3Dnode-1%2Cspec.driver%3Dgpu.example.com",
        // D1: the claim's device status (refused here: deploy/ without dra-claim-status).
        `PATCH /apis/resource.k8s.io/v1/namespaces/app/resourceclaims/${NET_CLAIM}/status?fieldManager=plexus`,
      ].sort(),
    );
    // The rest of the ADD as for any pod: the pod, its two NADs, the status write, the event;
    // then the refused claim status's warning event.
    expect(
      api.requests.filter((q) => !q.path.startsWith("/apis/resource.k8s.io/")).map((q) => q.method),
    ).toEqual(["GET", "GET", "GET", "PATCH", "POST", "POST"]);
    await expectCleanDel(conf);
  });

  it("M10 a pod without claims reads no DRA object (the device-plugin path is unchanged)", async () => {
    const { api, conf } = await apiSetup((sc) => {
      const pod = sc.pod as unknown as {
        spec: Record<string, unknown>;
        status: Record<string, unknown>;
      };
      delete pod.spec.resourceClaims;
      delete pod.status.resourceClaimStatuses;
    });
    const err = cniError(await ctx.sb.run("ADD", conf, { CNI_ARGS: POD_ARGS }));
    // Without claims, kubelet is the only source: its socket is missing here.
    expect(err.code).toBe(11);
    expect(err.msg).toMatch(/pod-resources socket/);
    expect(draRequests(api)).toEqual([]);
  });

  it("M10 a claim the API server does not have (404): 11 naming it; nothing attached", async () => {
    const { conf } = await apiSetup((sc) => sc.claims.splice(0, 1));
    const err = cniError(await ctx.sb.run("ADD", conf, { CNI_ARGS: POD_ARGS }));
    expect(err.code).toBe(11);
    expect(err.msg).toMatch(
      new RegExp(
        `pod app/web: the device of network\\(s\\) app/netdra-a .*ResourceClaim ` +
          `app/${NET_CLAIM} does not exist`,
      ),
    );
    expect(ctx.sb.invocations().filter((i) => i.command === "ADD")).toEqual([]);
    await expectCleanDel(conf);
  });

  it("M10 a cluster without resource.k8s.io/v1: 104 naming the API, not 11 (retried forever)", async () => {
    const { api, conf } = await apiSetup(undefined, { unserved: ["resource.k8s.io/v1"] });
    const err = cniError(await ctx.sb.run("ADD", conf, { CNI_ARGS: POD_ARGS }));
    expect(err.code).toBe(104);
    expect(err.msg).toContain(`get ResourceClaim app/${NET_CLAIM}`);
    expect(err.msg).toContain("does not serve resourceclaims of API resource.k8s.io/v1");
    expect(err.msg).toContain("Dynamic Resource Allocation");
    // One GET per claim, none repeated; no slice is listed.
    const claimGets = draRequests(api);
    expect(
      claimGets.every((r) =>
        r.startsWith("GET /apis/resource.k8s.io/v1/namespaces/app/resourceclaims/"),
      ),
    ).toBe(true);
    expect(new Set(claimGets).size).toBe(claimGets.length);
    expect(ctx.sb.invocations().filter((i) => i.command === "ADD")).toEqual([]);
    await expectCleanDel(conf);
  });

  it("M10 a claim not allocated yet: 11 through the API too; nothing attached", async () => {
    const { conf } = await apiSetup(
      (sc) => delete (sc.claims[0]!.status as Record<string, unknown>).allocation,
    );
    const err = cniError(await ctx.sb.run("ADD", conf, { CNI_ARGS: POD_ARGS }));
    expect(err.code).toBe(11);
    expect(err.msg).toMatch(/not allocated yet/);
    expect(ctx.sb.invocations().filter((i) => i.command === "ADD")).toEqual([]);
    await expectCleanDel(conf);
  });
});

describe("M10 B76 what a driver publishes is checked before any delegate runs (thin mode)", () => {
  type Spec = { devices: unknown[] };
  const sriovSlice = (sc: DraScenario) => sc.slices[1]!;
  const annotate = (sc: DraScenario, networks: unknown[]) => {
    const annotations = sc.pod.metadata.annotations as Record<string, string>;
    annotations["k8s.v1.cni.cncf.io/networks"] = JSON.stringify(networks);
  };

  it("M10 B76 B78 a device twice in one pool and generation: 7 naming both slices", async () => {
    for (const order of ["copy last", "copy first"]) {
      const { conf } = await apiSetup((sc) => {
        const copy = structuredClone(sriovSlice(sc));
        copy.metadata.name = "node-1-sriov-copy";
        (copy.spec as Spec).devices = [vfDevice("vf-1", "0000:07:00.9")];
        if (order === "copy last") sc.slices.push(copy);
        else sc.slices.unshift(copy);
      });
      const err = cniError(await ctx.sb.run("ADD", conf, { CNI_ARGS: POD_ARGS }));
      expect(err.code, order).toBe(7);
      expect(err.msg).toMatch(/^pod app\/web: the device of network\(s\) app\/netdra-a/);
      expect(err.msg).toContain(
        "device vf-1 (driver sriov.example.com, pool node-1, generation 2): " +
          "ResourceSlices node-1-sriov, node-1-sriov-copy each list it",
      );
      expect(ctx.sb.invocations().filter((i) => i.command === "ADD")).toEqual([]);
      await expectCleanDel(conf);
    }
  });

  it("M10 B76 B78 a deviceID attribute with a path: 7 naming claim, device, value", async () => {
    const { conf } = await apiSetup((sc) => {
      (sriovSlice(sc).spec as Spec).devices[0] = vfDevice("vf-1", "../../../sys/class/net/eth0");
    });
    const err = cniError(await ctx.sb.run("ADD", conf, { CNI_ARGS: POD_ARGS }));
    expect(err.code).toBe(7);
    expect(err.msg).toContain(
      `ResourceClaim ${NET_CLAIM}: device vf-1 (driver sriov.example.com, pool node-1): ` +
        'attribute k8s.cni.cncf.io/deviceID "../../../sys/class/net/eth0" is not a valid device ' +
        "ID",
    );
    expect(ctx.sb.invocations().filter((i) => i.command === "ADD")).toEqual([]);
    await expectCleanDel(conf);
  });

  it("M10 B78 a pod's deviceID among its claimed devices takes that one, else 7", async () => {
    const networks = [{ name: "netdra-a" }, { name: "netdra-b", deviceID: VF1 }];
    const { conf } = await apiSetup((sc) => annotate(sc, networks));
    const r = await ctx.sb.run("ADD", conf, { CNI_ARGS: POD_ARGS });
    expect(r.code, r.stdout + r.stderr).toBe(0);
    expect(deviceAdds()).toEqual([
      ["netdra-a", "net1", VF2],
      ["netdra-b", "net2", VF1],
    ]);
    await expectCleanDel(conf);

    const stolen = [{ name: "netdra-a", deviceID: "0000:07:00.3" }];
    const other = await apiSetup((sc) => annotate(sc, stolen));
    const before = ctx.sb.invocations().length;
    const err = cniError(await ctx.sb.run("ADD", other.conf, { CNI_ARGS: POD_ARGS }));
    expect(err.code).toBe(7);
    const where = `pod app/web: network app/netdra-a (resource ${NETDRA}): `;
    expect(err.msg.startsWith(where)).toBe(true);
    expect(err.msg).toContain('asks for deviceID "0000:07:00.3"');
    const claimed = (id: string) => `${id} (ResourceClaim ${NET_CLAIM})`;
    expect(err.msg).toContain(`${claimed(VF1)}, ${claimed(VF2)}`);
    expect(ctx.sb.invocations().slice(before)).toEqual([]);
    expect(ctx.sb.recordFiles()).toEqual([]);
  });
});

function metricsText(socket: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const req = request({ socketPath: socket, path: "/metrics" }, (res) => {
      let text = "";
      res.on("data", (c: Buffer) => (text += c.toString()));
      res.on("end", () => resolve(text));
    });
    req.on("error", reject);
    req.end();
  });
}

async function startDaemon(kubeconfig: string): Promise<{ socket: string; daemon: ChildProcess }> {
  const socket = join(ctx.sb.root, "run", "plexus.sock");
  const daemon = spawn(
    PLEXUS_BIN,
    [
      "daemon",
      "--kubeconfig",
      kubeconfig,
      "--node-name",
      "node-1",
      "--socket",
      socket,
      "--pod-resources-socket",
      "",
    ],
    { cwd: "/", stdio: ["ignore", "ignore", "pipe"] },
  );
  daemon.stderr!.resume();
  onTestFinished(async () => {
    if (daemon.exitCode === null && daemon.signalCode === null) {
      const exited = new Promise((r) => daemon.once("exit", r));
      daemon.kill("SIGTERM");
      await exited;
    }
  });
  await expect
    .poll(() => unixSocketStatus(socket, "/readyz"), { timeout: 15_000, interval: 20 })
    .toBe(200);
  return { socket, daemon };
}

const CLAIMS = "/apis/resource.k8s.io/v1/namespaces/app/resourceclaims";
/** Every request for a ResourceClaim, with who made it. */
const claimRequests = (api: FakeApiServer) =>
  api.requests
    .filter((q) => q.path.includes("/resourceclaims"))
    .map((q) => `${q.method} ${q.path}${q.query} ${q.userAgent}`);

/** The reads among them (the claim status writes of D1 are PATCHes, by the daemon too). */
const claimReads = (api: FakeApiServer) => claimRequests(api).filter((q) => q.startsWith("GET "));

async function stopDaemon(started: { daemon: ChildProcess }): Promise<void> {
  const exited = new Promise((res) => started.daemon.once("exit", res));
  started.daemon.kill("SIGTERM");
  await exited;
}

describe("M10 DRA device networks through the daemon's caches", () => {
  it("M10 the daemon reads a new pod's claims by name (no claim list or watch); the ADD reads nothing from the API server", async () => {
    const { api, conf } = await apiSetup();
    const d = await startDaemon(conf.kubeconfig as string);
    // The DRA caches are not part of readiness: the slice watch opens, the pod's two claims are
    // read.
    await expect
      .poll(() => metricsText(d.socket), { timeout: 10_000 })
      .toMatch(
        /plexus_daemon_cache_objects\{kind="resourceclaim"\} 2\n[\s\S]*kind="resourceslice"\} 3\n/,
      );
    expect(claimRequests(api).sort()).toEqual([
      `GET ${CLAIMS}/${GPU_CLAIM} plexus-daemon`,
      `GET ${CLAIMS}/${NET_CLAIM} plexus-daemon`,
    ]);
    const before = api.requests.length;
    const r = await ctx.sb.run(
      "ADD",
      { ...conf, daemonSocket: d.socket, logLevel: "verbose" },
      { CNI_ARGS: POD_ARGS },
    );
    expect(r.code, r.stdout + r.stderr).toBe(0);
    expect(r.stderr).not.toMatch(/thin mode/);
    expect(deviceAdds()).toEqual(EXPECTED);
    const reads = api.requests
      .slice(before)
      .filter((q) => q.method === "GET" && !q.query.includes("watch"));
    expect(reads).toEqual([]);
    expect(await metricsText(d.socket)).toContain(
      'plexus_daemon_cache_total{kind="resourceclaim",result="hit"} 2\n',
    );
    // Nothing of the daemon's life asked for the claims of the cluster, listed or watched.
    expect(
      api.requests.filter((q) => q.path === "/apis/resource.k8s.io/v1/resourceclaims"),
    ).toEqual([]);
    expect(
      api.requests.filter((q) => q.path.includes("/resourceclaims") && q.query.includes("watch")),
    ).toEqual([]);
    await stopDaemon(d);
  });

  it("M10 a claim cached before its allocation is read again at the ADD (never answered stale): 11, then the devices once allocated", async () => {
    const sc = draScenario({ nadConfig });
    const allocated = sc.claims[0]!;
    const { api, conf } = await apiSetup(
      (x) => delete (x.claims[0]!.status as Record<string, unknown>).allocation,
    );
    const d = await startDaemon(conf.kubeconfig as string);
    await expect.poll(() => claimRequests(api).length, { timeout: 10_000 }).toBe(2);
    const err = cniError(
      await ctx.sb.run("ADD", { ...conf, daemonSocket: d.socket }, { CNI_ARGS: POD_ARGS }),
    );
    expect(err).toMatchObject({
      code: 11,
      msg: expect.stringContaining(`ResourceClaim app/${NET_CLAIM} is not allocated yet`),
    });
    api.addDra("resourceclaims", allocated as never);
    const r = await ctx.sb.run(
      "ADD",
      { ...conf, daemonSocket: d.socket },
      { CNI_ARGS: POD_ARGS, CNI_CONTAINERID: "ctr2" },
    );
    expect(r.code, r.stdout + r.stderr).toBe(0);
    expect(deviceAdds()).toEqual(EXPECTED);
    // The net claim read ahead, then at each ADD; the GPU claim (allocated, reserved) once.
    expect(claimReads(api).sort()).toEqual([
      `GET ${CLAIMS}/${GPU_CLAIM} plexus-daemon`,
      ...Array(3).fill(`GET ${CLAIMS}/${NET_CLAIM} plexus-daemon`),
    ]);
    await stopDaemon(d);
  });

  it("M10 a deleted pod's claims leave the cache; the pod recreated with its claim allocated anew gets the new devices", async () => {
    const { api, conf } = await apiSetup();
    const d = await startDaemon(conf.kubeconfig as string);
    const cachedClaims = async () =>
      Number(
        /plexus_daemon_cache_objects\{kind="resourceclaim"\} (\d+)/.exec(
          await metricsText(d.socket),
        )?.[1],
      );
    await expect.poll(cachedClaims, { timeout: 10_000 }).toBe(2);
    api.deletePod("app", "web");
    await expect.poll(cachedClaims, { timeout: 5000 }).toBe(0);
    // The claim was deallocated, then allocated (other devices) and reserved for the new pod.
    const again = draScenario({ nadConfig });
    const uid = "uid-web-2";
    for (const c of again.claims) {
      const status = c.status as { reservedFor: Array<{ uid: string }> };
      status.reservedFor[0]!.uid = uid;
    }
    const results = (
      again.claims[0]!.status as { allocation: { devices: { results: Array<{ device: string }> } } }
    ).allocation.devices.results;
    results[0]!.device = "vf-3";
    for (const c of again.claims) api.addDra("resourceclaims", c as never);
    api.addPod({ ...again.pod, metadata: { ...again.pod.metadata, uid } } as never);
    await expect.poll(cachedClaims, { timeout: 5000 }).toBe(2);
    const args = POD_ARGS.replace("K8S_POD_UID=uid-web", `K8S_POD_UID=${uid}`);
    const before = api.requests.length;
    const r = await ctx.sb.run("ADD", { ...conf, daemonSocket: d.socket }, { CNI_ARGS: args });
    expect(r.code, r.stdout + r.stderr).toBe(0);
    expect(deviceAdds()).toEqual([
      ["netdra-a", "net1", VF1],
      ["netdra-b", "net2", "0000:07:00.3"],
    ]);
    expect(
      api.requests.slice(before).filter((q) => q.method === "GET" && !q.query.includes("watch")),
    ).toEqual([]);
    expect(claimReads(api)).toHaveLength(4);
    await stopDaemon(d);
  });

  it("M10 the daemon on a cluster without resource.k8s.io/v1: the ADD fails with 104, not 11", async () => {
    const { api, conf } = await apiSetup(undefined, { unserved: ["resource.k8s.io/v1"] });
    const d = await startDaemon(conf.kubeconfig as string);
    const err = cniError(
      await ctx.sb.run("ADD", { ...conf, daemonSocket: d.socket }, { CNI_ARGS: POD_ARGS }),
    );
    expect(err.code).toBe(104);
    expect(err.msg).toContain("does not serve resourceclaims of API resource.k8s.io/v1");
    expect(ctx.sb.invocations().filter((i) => i.command === "ADD")).toEqual([]);
    // The daemon's probe found the API not served: no DRA watch was opened.
    expect(
      api.requests.some(
        (q) => q.path.startsWith("/apis/resource.k8s.io/") && q.query.includes("watch"),
      ),
    ).toBe(false);
    const exited = new Promise((res) => d.daemon.once("exit", res));
    d.daemon.kill("SIGTERM");
    await exited;
  });

  it("M10 an API server without resource.k8s.io/v1 (404): no DRA watch, the daemon stays ready and reads claims and slices live", async () => {
    const { api, conf } = await apiSetup();
    api.inject(
      { path: "/apis/resource.k8s.io/v1/resourceslices", method: "GET", times: 1 },
      { kind: "status", code: 404 },
    );
    const d = await startDaemon(conf.kubeconfig as string);
    await expect.poll(() => api.watchCount()).toBe(2);
    const r = await ctx.sb.run("ADD", { ...conf, daemonSocket: d.socket }, { CNI_ARGS: POD_ARGS });
    expect(r.code, r.stdout + r.stderr).toBe(0);
    expect(deviceAdds()).toEqual(EXPECTED);
    // Read live by the daemon (its user agent), not by the CNI process.
    const live = api.requests.filter(
      (q) =>
        q.method === "GET" &&
        q.path.startsWith("/apis/resource.k8s.io/") &&
        !q.query.includes("resourceVersion=0"),
    );
    expect(live.map((q) => q.userAgent)).toEqual(Array(4).fill("plexus-daemon"));
    expect(api.watchCount()).toBe(2);
    const exited = new Promise((res) => d.daemon.once("exit", res));
    d.daemon.kill("SIGTERM");
    await exited;
  });
});

describe("M19 resourceName per attachment through DRA (thin mode)", () => {
  type Spec = { devices: unknown[] };
  const FAST = "example.com/netdra-fast";
  const ALLOWED = "k8s.v1.cni.cncf.io/allowedResourceNames";
  /** vf-2 published under FAST; netdra-a offers both pools; the annotation as given. */
  const scenario = (networks: unknown[]) => (sc: DraScenario) => {
    (sc.slices[1]!.spec as Spec).devices[1] = vfDevice("vf-2", VF2, { string: FAST });
    const nad = sc.nads[0]!.metadata.annotations as Record<string, string>;
    nad[ALLOWED] = `${NETDRA}, ${FAST}`;
    const pod = sc.pod.metadata.annotations as Record<string, string>;
    pod["k8s.v1.cni.cncf.io/networks"] = JSON.stringify(networks);
  };

  it("M19 a pick the NAD lists takes that pool's claimed device; others the NAD's", async () => {
    const networks = [{ name: "netdra-a", resourceName: FAST }, { name: "netdra-b" }];
    const { conf } = await apiSetup(scenario(networks));
    const r = await ctx.sb.run("ADD", conf, { CNI_ARGS: POD_ARGS });
    expect(r.code, r.stdout + r.stderr).toBe(0);
    expect(deviceAdds()).toEqual([
      ["netdra-a", "net1", VF2],
      ["netdra-b", "net2", VF1],
    ]);
    await expectCleanDel(conf);
  });

  it("M19 not listed, or not the NAD's own: 7 naming both, no DRA read", async () => {
    for (const [networks, nad] of [
      [[{ name: "netdra-a", resourceName: "example.com/other" }], `its ${ALLOWED}`],
      [[{ name: "netdra-b", resourceName: FAST }], `it has no ${ALLOWED} and its own`],
    ] as const) {
      const { api, conf } = await apiSetup(scenario([...networks]));
      const err = cniError(await ctx.sb.run("ADD", conf, { CNI_ARGS: POD_ARGS }));
      expect(err.code).toBe(7);
      const network = networks[0]!;
      expect(err.msg).toContain(
        `pod app/web: network app/${network.name}: the pod's selection asks for resourceName ` +
          `"${network.resourceName}", but the NAD does not offer it: ${nad}`,
      );
      expect(err.msg).toContain(`"${NETDRA}"`);
      expect(draRequests(api)).toEqual([]);
      expect(ctx.sb.invocations().filter((i) => i.command === "ADD")).toEqual([]);
      await expectCleanDel(conf);
    }
  });
});
