/**
 * A pod of a cluster through dist/plexus against the project's fake API server over HTTPS (real
 * @kubernetes/client-node in the binary), real plugins, a real namespace. Subnets 10.217.x.0/24.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, expect, it } from "vitest";
import { startFakeApiServer, writeKubeconfig, type FakeApiServer } from "../support/fake-apiserver";
import { cniError } from "../support/plexus-bin";
import { describeE2e, links, NOTHING_LEFT, useE2eScope, type E2eScope } from "../support/netns";
import { bridgeNet, defaultNet, expectOk, expectSilentOk, hostLocal, plexusConf } from "./networks";

const t = useE2eScope();
let api: FakeApiServer | undefined;
afterEach(async () => {
  await api?.close();
  api = undefined;
});

async function setup(scope: E2eScope, octet: number) {
  api = await startFakeApiServer();
  const confDir = join(scope.root, "net.d");
  mkdirSync(confDir, { recursive: true });
  writeFileSync(
    join(confDir, "10-cbr0.conflist"),
    JSON.stringify({
      cniVersion: "1.0.0",
      name: "cbr0",
      plugins: [defaultNet(scope, `10.217.${octet}.0/24`, "cbr0")],
    }),
  );
  const kubeconfig = writeKubeconfig(api, { dir: scope.root });
  const conf = plexusConf(scope, [], { clusterNetwork: "cbr0", confDir, kubeconfig });
  delete (conf as Record<string, unknown>).delegates;
  return { api, conf };
}

/** A NAD `namespace/name` of a bridge network (a bridge of the scope's) on `subnet`. */
function bridgeNad(
  scope: E2eScope,
  { namespace, name, subnet }: { namespace: string; name: string; subnet: string },
) {
  const ipam = hostLocal(scope, subnet);
  const config = JSON.stringify(bridgeNet({ name, bridge: scope.bridgeName(), ipam }));
  return { metadata: { namespace, name }, spec: { config } };
}

/** The network-status annotation the ADD wrote on pod app/`pod`, parsed. */
function networkStatus(server: FakeApiServer, pod: string): Array<Record<string, unknown>> {
  const annotations = (server.getPod("app", pod)!.metadata.annotations ?? {}) as Record<
    string,
    string
  >;
  return JSON.parse(annotations["k8s.v1.cni.cncf.io/network-status"]!) as Array<
    Record<string, unknown>
  >;
}

describeE2e("e2e a pod through the API server (fake, HTTPS) with the real client", () => {
  it("N4.1.1 N5 N5.2 M9 `net-a,other/net-b@eth5` gets eth0, net1, eth5 and a correct network-status on the API server; DEL needs no API (M7)", async () => {
    const { scope } = t;
    const { api, conf } = await setup(scope, 1);
    api.addPod({
      metadata: {
        namespace: "app",
        name: "web",
        uid: "uid-web",
        annotations: { "k8s.v1.cni.cncf.io/networks": "net-a,other/net-b@eth5" },
      },
    });
    api.addNad(bridgeNad(scope, { namespace: "app", name: "net-a", subnet: "10.217.2.0/24" }));
    api.addNad(bridgeNad(scope, { namespace: "other", name: "net-b", subnet: "10.217.3.0/24" }));
    const ns = scope.addNetns();
    const env = {
      CNI_CONTAINERID: "ctr-api",
      CNI_NETNS: ns.path,
      CNI_IFNAME: "eth0",
      CNI_ARGS: "IgnoreUnknown=1;K8S_POD_NAMESPACE=app;K8S_POD_NAME=web;K8S_POD_UID=uid-web",
    };
    expectOk(await scope.run("ADD", conf, env));
    expect(
      links(ns.name)
        .map((l) => l.name)
        .filter((n) => n !== "lo")
        .sort(),
    ).toEqual(["eth0", "eth5", "net1"]);
    const status = networkStatus(api, "web");
    expect(status.map((s) => [s.name, s.interface, s.ips, s.default])).toEqual([
      ["cbr0", "eth0", ["10.217.1.2"], true],
      ["app/net-a", "net1", ["10.217.2.2"], false],
      ["other/net-b", "eth5", ["10.217.3.2"], false],
    ]);
    expect(api.events().map((e) => e.reason)).toEqual(["AddedInterface"]);
    // The pod, clusterNetwork looked up as a NAD in multusNamespace first (M2's order; here it is a
    // file), the K = 2 NADs, the status write and one event: 4 + K requests.
    const adds = api.requests.length;
    expect(api.requests.map((r) => `${r.method} ${r.path}`)).toEqual([
      "GET /api/v1/namespaces/app/pods/web",
      "GET /apis/k8s.cni.cncf.io/v1/namespaces/kube-system/network-attachment-definitions/cbr0",
      "GET /apis/k8s.cni.cncf.io/v1/namespaces/app/network-attachment-definitions/net-a",
      "GET /apis/k8s.cni.cncf.io/v1/namespaces/other/network-attachment-definitions/net-b",
      "PATCH /api/v1/namespaces/app/pods/web/status",
      "POST /api/v1/namespaces/app/events",
    ]);

    // M7 B38: the pod is gone and the API answers 404; DEL runs from the record with no request.
    api.deletePod("app", "web");
    expectSilentOk(await scope.run("DEL", conf, env));
    expect(api.requests.length).toBe(adds);
    expect(scope.attachmentLeftovers()).toEqual(NOTHING_LEFT);
  });

  it("N7.2 B42 a status write that keeps conflicting fails the ADD and tears everything down", async () => {
    const { scope } = t;
    const { api, conf } = await setup(scope, 4);
    api.addPod({ metadata: { namespace: "app", name: "busy", uid: "uid-busy", annotations: {} } });
    api.inject({ method: "PATCH" }, { kind: "status", code: 409 });
    const ns = scope.addNetns();
    const env = {
      CNI_CONTAINERID: "ctr-busy",
      CNI_NETNS: ns.path,
      CNI_IFNAME: "eth0",
      CNI_ARGS: "IgnoreUnknown=1;K8S_POD_NAMESPACE=app;K8S_POD_NAME=busy;K8S_POD_UID=uid-busy",
    };
    const err = cniError(await scope.run("ADD", conf, env));
    expect(err.msg).toContain("network-status");
    expect(
      links(ns.name)
        .map((l) => l.name)
        .filter((n) => n !== "lo"),
    ).toEqual([]);
    expect(scope.attachmentLeftovers()).toEqual(NOTHING_LEFT);
  });
});
