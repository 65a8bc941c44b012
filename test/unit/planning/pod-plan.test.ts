/**
 * The planner ADD and DEL share (src/planning/pod-plan.ts) over a FakeKube: which networks a pod
 * gets, in which order, on which interfaces, with which configs; what it asks the API; and that
 * every error names the pod. The same rules run end to end in test/e2e/pods*.test.ts.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { parseEnv, type CniRequest } from "../../../src/cni/env";
import { parsePlexusConf, type PlexusConf } from "../../../src/config/plugin-conf";
import { silentLogger } from "../../../src/log/logger";
import { eagerLoaders } from "../../../src/ops/loaders";
import { planDefaultsOnly, planForPod } from "../../../src/planning/pod-plan";
import { FakeKube } from "../../fakes/fake-kube";

const NETWORKS = "k8s.v1.cni.cncf.io/networks";
const log = silentLogger();
let confDir: string;
let kube: FakeKube;

beforeEach(() => {
  confDir = mkdtempSync(join(tmpdir(), "plx-plan-"));
  writeFileSync(
    join(confDir, "10-cbr0.conflist"),
    JSON.stringify({ cniVersion: "1.0.0", name: "cbr0", plugins: [{ type: "bridge" }] }),
  );
  kube = new FakeKube();
});
afterEach(() => rmSync(confDir, { recursive: true, force: true }));

function req(
  args = "IgnoreUnknown=1;K8S_POD_NAMESPACE=app;K8S_POD_NAME=web;K8S_POD_UID=uid-web",
): CniRequest {
  return parseEnv({
    CNI_COMMAND: "ADD",
    CNI_CONTAINERID: "ctr1",
    CNI_NETNS: "/proc/self/ns/net",
    CNI_IFNAME: "eth0",
    CNI_PATH: "/opt/cni/bin",
    CNI_ARGS: args,
  });
}
function conf(extra: Record<string, unknown> = {}): PlexusConf {
  return parsePlexusConf({
    cniVersion: "1.0.0",
    name: "plexus",
    clusterNetwork: "cbr0",
    confDir,
    ...extra,
  });
}
const plan = (plexusConf = conf(), request = req()) =>
  planForPod(request, plexusConf, { kube: async () => kube, log, load: eagerLoaders });
const bridge = (name: string, extra: Record<string, unknown> = {}) => ({
  cniVersion: "1.0.0",
  name,
  type: "bridge",
  ...extra,
});

describe("planForPod", () => {
  it("N6 N6.2 N4.2 M2 M3 the cluster network on eth0, defaultNetworks next, then the annotation's networks, each resolved to its config", async () => {
    kube
      .addPod("app", "web", { [NETWORKS]: "net-a,other/net-b@eth5,net-a" })
      .addNad("app", "net-a", bridge("net-a"))
      .addNad("other", "net-b", bridge("net-b"));
    kube.addNad("kube-system", "always", bridge("always"));
    const p = await plan(conf({ defaultNetworks: ["always"] }));
    expect(p.attachments.map((a) => [a.network, a.ifName, a.isDefault, a.conf.name])).toEqual([
      ["cbr0", "eth0", true, "cbr0"],
      ["kube-system/always", "net1", false, "always"],
      ["app/net-a", "net2", false, "net-a"],
      ["other/net-b", "eth5", false, "net-b"],
      ["app/net-a", "net4", false, "net-a"],
    ]);
    expect(p.pod?.metadata.name).toBe("web");
  });

  it("M1 a pod of a cluster costs one pod read and one read per NAD (the cluster network found as a file after one NAD lookup, M2)", async () => {
    kube.addPod("app", "web", { [NETWORKS]: "net-a" }).addNad("app", "net-a", bridge("net-a"));
    await plan();
    expect(kube.calls).toEqual(["getPod app/web", "getNad kube-system/cbr0", "getNad app/net-a"]);
  });

  it("N4.1.2.1.3 M4 a selection's ips and mac become args.cni and the attachment's capability values", async () => {
    kube
      .addPod("app", "web", {
        [NETWORKS]: JSON.stringify([
          { name: "net-a", ips: ["10.1.0.5/24"], mac: "02:00:00:00:00:05" },
        ]),
      })
      .addNad("app", "net-a", bridge("net-a"));
    const att = (await plan()).attachments[1]!;
    expect(att.conf.plugins[0]!.args).toEqual({
      cni: { ips: ["10.1.0.5/24"], mac: "02:00:00:00:00:05" },
    });
    expect(att.capabilityArgs).toEqual({ ips: ["10.1.0.5/24"], mac: "02:00:00:00:00:05" });
    expect(att.selection).toMatchObject({ namespace: "app", name: "net-a" });
  });

  it.each([
    ["N4.1.x B19 an invalid item", "a,,b", /networks annotation item 2/],
    ["B28 a missing NAD", "nope", /no NetworkAttachmentDefinition nope exists in namespace app/],
    ["N4.1.2.1.5 a duplicate interface", "net-a@x0,net-a@x0", /x0/],
  ])("%s fails with 7, and the message names the pod", async (_what, annotation, detail) => {
    kube.addPod("app", "web", { [NETWORKS]: annotation }).addNad("app", "net-a", bridge("net-a"));
    const err = await plan().then(
      () => expect.fail("expected a failure"),
      (e: unknown) => e as { code: number; message: string },
    );
    expect(err.code).toBe(7);
    expect(err.message).toMatch(/^pod app\/web: /);
    expect(err.message).toMatch(detail);
  });

  it("M9 B28 a missing NAD records NoNetworkFound on the pod before failing", async () => {
    kube.addPod("app", "web", { [NETWORKS]: "nope" });
    await expect(plan()).rejects.toMatchObject({ code: 7 });
    expect(kube.events).toEqual([
      expect.objectContaining({
        type: "Warning",
        reason: "NoNetworkFound",
        pod: expect.objectContaining({ name: "web" }),
      }),
    ]);
  });

  it("M8 B39 a recreated pod (another UID) fails with 3 before any NAD is read", async () => {
    kube.addPod("app", "web", {}, "uid-new");
    await expect(plan()).rejects.toMatchObject({
      code: 3,
      message: expect.stringContaining("UID mismatch"),
    });
    expect(kube.calls).toEqual(["getPod app/web"]);
  });

  it("B7 without pod arguments: the default network only, and the API is never asked", async () => {
    const p = await plan(conf(), req("IgnoreUnknown=1"));
    expect(p.attachments.map((a) => a.network)).toEqual(["cbr0"]);
    expect(kube.calls).toEqual([]);
  });

  it("B34 the API down: the pod read's 104 is the error", async () => {
    kube.fail("getPod");
    await expect(plan()).rejects.toMatchObject({ code: 104 });
  });
});

describe("the tenant model: what a pod's annotations may make the node run", () => {
  it("N7.4 allowedPluginTypes: a pod's network of another type fails with 7 before any delegate runs; the admin's cluster network is not checked", async () => {
    kube.addPod("app", "web", { [NETWORKS]: "hd" }).addNad("app", "hd", {
      cniVersion: "1.0.0",
      name: "hd",
      type: "host-device",
      device: "eth1",
    });
    await expect(
      plan(conf({ allowedPluginTypes: ["macvlan", "host-local"] })),
    ).rejects.toMatchObject({
      code: 7,
      message: expect.stringMatching(
        /^pod app\/web: network app\/hd uses plugin type "host-device"/,
      ),
    });
    kube.addPod("app", "web", {});
    expect(
      (await plan(conf({ allowedPluginTypes: ["macvlan"] }))).attachments.map(
        (a) => a.conf.plugins[0]!.type,
      ),
    ).toEqual(["bridge"]);
  });

  it("N7.4 M5 allowedPluginTypes covers the default-network override too", async () => {
    kube
      .addPod("app", "web", { "v1.multus-cni.io/default-network": "app/hd" })
      .addNad("app", "hd", { cniVersion: "1.0.0", name: "hd", type: "host-device" });
    await expect(plan(conf({ allowedPluginTypes: ["bridge"] }))).rejects.toMatchObject({
      code: 7,
      message: expect.stringContaining('"host-device"'),
    });
  });

  it("N7.4 N3.4.1 under namespaceIsolation a tenant's NAD without spec.config cannot take the admin's config file of the same name; a global namespace's can", async () => {
    writeFileSync(
      join(confDir, "20-storage.conflist"),
      JSON.stringify({
        cniVersion: "1.0.0",
        name: "storage",
        plugins: [{ type: "macvlan", master: "eth1" }],
      }),
    );
    kube.addPod("app", "web", { [NETWORKS]: "storage" }).addNad("app", "storage");
    await expect(plan(conf({ namespaceIsolation: true }))).rejects.toMatchObject({
      code: 7,
      message: expect.stringContaining("spec.config is absent, and under namespaceIsolation"),
    });
    expect((await plan(conf())).attachments[1]!.conf.name).toBe("storage");
    kube.addPod("app", "web", { [NETWORKS]: "default/storage" }).addNad("default", "storage");
    expect(
      (await plan(conf({ namespaceIsolation: true }))).attachments[1]!.conf.plugins[0]!.type,
    ).toBe("macvlan");
  });

  it("B25 a NAD of 1,000 plugins fails with 7 at planning, naming maxPluginsPerNetwork", async () => {
    kube.addPod("app", "web", { [NETWORKS]: "huge" }).addNad("app", "huge", {
      cniVersion: "1.0.0",
      name: "huge",
      plugins: Array.from({ length: 1000 }, () => ({ type: "tuning" })),
    });
    await expect(plan()).rejects.toMatchObject({
      code: 7,
      message: expect.stringMatching(/network app\/huge has 1000 plugins.*"maxPluginsPerNetwork"/),
    });
  });
});

describe("planDefaultsOnly (DEL without a record, B38)", () => {
  it("M2 M3 the cluster network, and defaultNetworks only with Kubernetes access", async () => {
    kube.addNad("kube-system", "always", bridge("always"));
    const withKube = await planDefaultsOnly(
      req(),
      conf({ defaultNetworks: ["always"] }),
      kube,
      log,
    );
    expect(withKube.map((a) => [a.network, a.ifName])).toEqual([
      ["cbr0", "eth0"],
      ["kube-system/always", "net1"],
    ]);
    const without = await planDefaultsOnly(
      req(),
      conf({ defaultNetworks: ["always"] }),
      undefined,
      log,
    );
    expect(without.map((a) => [a.network, a.ifName])).toEqual([["cbr0", "eth0"]]);
  });
});

describe("M1 M11 no silent default network only", () => {
  const noKube = (c: PlexusConf, r: CniRequest) =>
    planForPod(r, c, { kube: async () => undefined, log, load: eagerLoaders });

  it("M1 an ADD that names a pod, with no way to reach Kubernetes, fails with 7 naming what is missing", async () => {
    await expect(noKube(conf(), req())).rejects.toMatchObject({
      code: 7,
      message: expect.stringMatching(
        /pod app\/web: .*no "kubeconfig" key.*KUBERNETES_SERVICE_HOST.*"fileClusterDir".*"withoutKubernetes": true/,
      ),
    });
  });

  it('M1 "withoutKubernetes": true (also spelled WithoutKubernetes) attaches the default network only, on purpose', async () => {
    const p = await noKube(
      parsePlexusConf({
        cniVersion: "1.0.0",
        name: "plexus",
        clusterNetwork: "cbr0",
        confDir,
        WithoutKubernetes: true,
      }),
      req(),
    );
    expect(p.attachments.map((a) => a.network)).toEqual(["cbr0"]);
  });

  it("B7 without a pod in CNI_ARGS (cnitool, podman) the default network is attached as before", async () => {
    const p = await noKube(conf(), req("IgnoreUnknown=1"));
    expect(p.attachments.map((a) => a.network)).toEqual(["cbr0"]);
  });
});
