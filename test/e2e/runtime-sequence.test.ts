/**
 * Every failed ADD played as a runtime plays it (K1, M7, C2.5, M14): ADD fails, then DEL with
 * the same config and CNI_NETNS set (containerd's cleanup), DEL again with CNI_NETNS="" and no
 * prevResult (RemovePodSandbox), and DEL once the API server has gone. Every DEL must exit 0 and
 * nothing may be left: a DEL that fails wedges the pod (stuck Terminating, netns and IPs leaked).
 * dist/plexus, the fake API server over HTTPS, real bridge/host-local/static/ptp, real namespaces.
 * Subnets 10.221.x.0/24.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, expect, it } from "vitest";
import { startFakeApiServer, writeKubeconfig, type FakeApiServer } from "../support/fake-apiserver";
import { cniError } from "../support/plexus-bin";
import {
  describeE2e,
  links,
  NOTHING_LEFT,
  useE2eScope,
  type E2eScope,
  type Netns,
} from "../support/netns";
import { bridgeNet, defaultNet, expectOk, expectSilentOk, hostLocal, plexusConf } from "./networks";

const t = useE2eScope();
let api: FakeApiServer | undefined;
afterEach(async () => {
  await api?.close();
  api = undefined;
});

const NETWORKS = "k8s.v1.cni.cncf.io/networks";
const podNames = (ns: Netns) =>
  links(ns.name)
    .map((l) => l.name)
    .filter((n) => n !== "lo")
    .sort();

/** A cluster network (bridge + host-local in confDir), Plexus's config with short API deadlines. */
async function setup(scope: E2eScope, subnet: number, extra: Record<string, unknown> = {}) {
  api = await startFakeApiServer();
  const confDir = join(scope.root, "net.d");
  mkdirSync(confDir, { recursive: true });
  writeFileSync(
    join(confDir, "10-cbr0.conflist"),
    JSON.stringify({
      cniVersion: "1.0.0",
      name: "cbr0",
      plugins: [defaultNet(scope, `10.221.${subnet}.0/24`, "cbr0")],
    }),
  );
  const conf = plexusConf(scope, [], {
    clusterNetwork: "cbr0",
    confDir,
    kubeconfig: writeKubeconfig(api, { dir: scope.root }),
    apiRequestTimeoutSeconds: 0.5,
    apiTotalTimeoutSeconds: 2,
    ...extra,
  });
  delete (conf as Record<string, unknown>).delegates;
  return { api, conf };
}

function podEnv(ns: Netns, name: string) {
  return {
    CNI_CONTAINERID: `ctr-${name}`,
    CNI_NETNS: ns.path,
    CNI_IFNAME: "eth0",
    CNI_ARGS: `IgnoreUnknown=1;K8S_POD_NAMESPACE=app;K8S_POD_NAME=${name};K8S_POD_UID=uid-${name}`,
  };
}

function nad(scope: E2eScope, name: string, subnet: number, namespace = "app") {
  return {
    metadata: { namespace, name },
    spec: {
      config: JSON.stringify(
        bridgeNet({
          name,
          bridge: scope.bridgeName(),
          ipam: hostLocal(scope, `10.221.${subnet}.0/24`),
        }),
      ),
    },
  };
}

/** K1: the cleanup DEL, the DEL without a netns, and a DEL after the API server went away. */
async function playRuntimeDels(
  scope: E2eScope,
  conf: Record<string, unknown>,
  env: Record<string, string>,
) {
  expectSilentOk(await scope.run("DEL", conf, env));
  expectSilentOk(await scope.run("DEL", conf, { ...env, CNI_NETNS: "" }));
  await api?.close();
  expectSilentOk(await scope.run("DEL", conf, { ...env, CNI_NETNS: "" }));
  expect(scope.attachmentLeftovers()).toEqual(NOTHING_LEFT);
}

interface FailureClass {
  what: string;
  code: number;
  /** Sets the pod (and NADs) up; returns extra Plexus config. */
  arrange(scope: E2eScope, api: FakeApiServer): Record<string, unknown> | undefined;
}

const CLASSES: FailureClass[] = [
  {
    what: "B21 an annotation that is not JSON",
    code: 7,
    arrange: (_s, a) => void a.addPod(pod("p", '[{"name":')),
  },
  {
    what: "B23 an invalid interface name",
    code: 7,
    arrange: (s, a) => void (a.addPod(pod("p", "net-a@eth0/1")), a.addNad(nad(s, "net-a", 2))),
  },
  {
    what: "B22 an invalid MAC",
    code: 7,
    arrange: (s, a) =>
      void (a.addPod(pod("p", JSON.stringify([{ name: "net-a", mac: "zz:00:00:00:00:01" }]))),
      a.addNad(nad(s, "net-a", 2))),
  },
  {
    what: "B22 an invalid IP",
    code: 7,
    arrange: (s, a) =>
      void (a.addPod(pod("p", JSON.stringify([{ name: "net-a", ips: ["999.1.1.1/24"] }]))),
      a.addNad(nad(s, "net-a", 2))),
  },
  {
    what: "B20 a name that is not DNS-1123",
    code: 7,
    arrange: (_s, a) => void a.addPod(pod("p", "Net_A")),
  },
  {
    what: "B23 N4.1.2.1.5 a duplicate interface",
    code: 7,
    arrange: (s, a) =>
      void (a.addPod(pod("p", "net-a@data0,net-b@data0")),
      a.addNad(nad(s, "net-a", 2)),
      a.addNad(nad(s, "net-b", 3))),
  },
  { what: "B28 a missing NAD", code: 7, arrange: (_s, a) => void a.addPod(pod("p", "nope")) },
  {
    what: "B32 N3.4.1 a NAD without config and without a file",
    code: 7,
    arrange: (_s, a) =>
      void (a.addPod(pod("p", "bare")), a.addNad({ metadata: { namespace: "app", name: "bare" } })),
  },
  {
    what: "B24 N7.4 namespace isolation refusing the NAD",
    code: 7,
    arrange: (s, a) => {
      a.addPod(pod("p", "team-b/net-x"));
      a.addNad(nad(s, "net-x", 2, "team-b"));
      return { namespaceIsolation: true };
    },
  },
  {
    what: "M4 a requested capability no plugin declares",
    code: 7,
    arrange: (s, a) =>
      void (a.addPod(
        pod(
          "p",
          JSON.stringify([
            { name: "net-a", portMappings: [{ hostPort: 8080, containerPort: 80 }] },
          ]),
        ),
      ),
      a.addNad(nad(s, "net-a", 2))),
  },
  {
    what: "M4 a default-route gateway outside the network (verification, after attaching)",
    code: 103,
    arrange: (s, a) =>
      void (a.addPod(pod("p", JSON.stringify([{ name: "net-a", "default-route": ["192.0.2.1"] }]))),
      a.addNad(nad(s, "net-a", 2))),
  },
  {
    what: "N6.1.2 the readiness indicator never appearing",
    code: 11,
    arrange: (s, a) => (
      a.addPod(pod("p", "")),
      { readinessindicatorfile: join(s.root, "never"), readinessTimeoutSeconds: 0.3 }
    ),
  },
];

function pod(name: string, networks: string) {
  return {
    metadata: {
      namespace: "app",
      name,
      uid: `uid-${name}`,
      annotations: networks ? { [NETWORKS]: networks } : {},
    },
  };
}

describeE2e("e2e K1 M7 a failed ADD, then the runtime's DELs: none fails, nothing is left", () => {
  it.each(CLASSES.map((c, i) => [c.what, c, i] as const))(
    "K1 M7 C2.5 %s",
    async (_what, cls, i) => {
      const { scope } = t;
      const { api, conf } = await setup(scope, 10 + i);
      Object.assign(conf, cls.arrange(scope, api) ?? {});
      const ns = scope.addNetns();
      const env = podEnv(ns, "p");
      const err = cniError(await scope.run("ADD", conf, env));
      expect(err.code, err.msg).toBe(cls.code);
      expect(err.msg).toContain("app/p");
      expect(podNames(ns)).toEqual([]);
      await playRuntimeDels(scope, conf, env);
    },
  );

  it("K1 M7 B34 the API server down at ADD: ADD fails with 104, and every DEL succeeds without it", async () => {
    const { scope } = t;
    const { api, conf } = await setup(scope, 30);
    await api.close();
    const ns = scope.addNetns();
    const env = podEnv(ns, "p");
    expect(cniError(await scope.run("ADD", conf, env)).code).toBe(104);
    await playRuntimeDels(scope, conf, env);
  });
});

describeE2e(
  "e2e M7 retryDeleteOnError: a delegate that can never DEL does not wedge the pod",
  () => {
    /** A bridge NAD whose subnet cannot parse: host-local fails ADD and DEL alike (code 999). */
    const broken = (scope: E2eScope, bridge: string, subnet = "10.221.41.128/33") => ({
      metadata: { namespace: "app", name: "bad" },
      spec: {
        config: JSON.stringify(bridgeNet({ name: "bad", bridge, ipam: hostLocal(scope, subnet) })),
      },
    });

    it("M7 off (default): ADD fails, DEL #1 reports the failure, DEL #2 succeeds but keeps the attachment pending (no event); housekeeping (GC) past failedDelRetrySeconds abandons it with a TeardownAbandoned event", async () => {
      const { scope } = t;
      const { api, conf } = await setup(scope, 40, {
        failedDelRetrySeconds: 0,
        cniVersion: "1.1.0",
      });
      api.addPod(pod("p", "bad"));
      api.addNad(broken(scope, scope.bridgeName()));
      const ns = scope.addNetns();
      const env = podEnv(ns, "p");
      expect(cniError(await scope.run("ADD", conf, env)).msg).toContain("invalid CIDR address");
      const del1 = cniError(await scope.run("DEL", conf, env));
      expect(del1.msg).toMatch(/network "app\/bad" \(net1\).*invalid CIDR address/);
      expectSilentOk(await scope.run("DEL", conf, { ...env, CNI_NETNS: "" }));
      const abandoned = () => api.events().filter((e) => e.reason === "TeardownAbandoned");
      expect(abandoned()).toEqual([]);
      expect(scope.recordFiles()).toEqual(["ctr-p-eth0.json"]);
      scope.deleteNetns(ns);
      expectSilentOk(await scope.run("GC", { ...conf, "cni.dev/valid-attachments": [] }));
      expect(abandoned()).toEqual([
        expect.objectContaining({
          type: "Warning",
          message: expect.stringMatching(
            /network "app\/bad" \(net1\), plugins bridge: .*invalid CIDR address/,
          ),
        }),
      ]);
      expect(scope.attachmentLeftovers()).toEqual(NOTHING_LEFT);
    });

    it("M7 on: DEL keeps failing while the NAD is broken; once the admin fixes the NAD, DEL succeeds and nothing is left", async () => {
      const { scope } = t;
      const { api, conf } = await setup(scope, 42, { retryDeleteOnError: true });
      const bridge = scope.bridgeName();
      api.addPod(pod("p", "bad"));
      api.addNad(broken(scope, bridge));
      const ns = scope.addNetns();
      const env = podEnv(ns, "p");
      expect(cniError(await scope.run("ADD", conf, env)).code).toBe(999);
      for (const netns of [ns.path, "", ""])
        expect(cniError(await scope.run("DEL", conf, { ...env, CNI_NETNS: netns })).code).toBe(999);
      expect(scope.recordFiles()).toEqual(["ctr-p-eth0.json"]);
      api.addNad(broken(scope, bridge, "10.221.43.0/24"));
      expectSilentOk(await scope.run("DEL", conf, env));
      expect(api.events().filter((e) => e.reason === "TeardownAbandoned")).toEqual([]);
      expect(scope.attachmentLeftovers()).toEqual(NOTHING_LEFT);
    });
  },
);

describeE2e(
  "e2e N4.1.2.1.3 N4.1.2.1.4 M4 ips and mac reach the delegate in args.cni, whatever its capabilities",
  () => {
    it("N4.1.2.1.3 N4.1.2.1.4 static IPAM and bridge honour args.cni ips and mac with no capability declared: ADD succeeds, network-status shows them", async () => {
      const { scope } = t;
      const { api, conf } = await setup(scope, 50);
      api.addPod(
        pod(
          "p",
          JSON.stringify([{ name: "fixed", ips: ["10.221.51.77/24"], mac: "02:21:00:00:00:77" }]),
        ),
      );
      api.addNad({
        metadata: { namespace: "app", name: "fixed" },
        spec: {
          config: JSON.stringify({
            cniVersion: "1.0.0",
            name: "fixed",
            type: "bridge",
            bridge: scope.bridgeName(),
            ipam: { type: "static" },
          }),
        },
      });
      const ns = scope.addNetns();
      const env = podEnv(ns, "p");
      expectOk(await scope.run("ADD", conf, env));
      expect(links(ns.name).find((l) => l.name === "net1")).toMatchObject({
        mac: "02:21:00:00:00:77",
        addresses: ["10.221.51.77/24"],
      });
      const status = JSON.parse(
        (api.getPod("app", "p")!.metadata.annotations as Record<string, string>)[
          "k8s.v1.cni.cncf.io/network-status"
        ]!,
      ) as Array<Record<string, unknown>>;
      expect(status[1]).toMatchObject({
        name: "app/fixed",
        interface: "net1",
        ips: ["10.221.51.77"],
        mac: "02:21:00:00:00:77",
      });
      expectSilentOk(await scope.run("DEL", conf, env));
      expect(scope.attachmentLeftovers()).toEqual(NOTHING_LEFT);
    });

    it("N4.1.2.1.4 ptp ignores a requested MAC: ADD fails with 103 naming it, rolls back, and the runtime's DELs succeed", async () => {
      const { scope } = t;
      const { api, conf } = await setup(scope, 52);
      api.addPod(pod("p", JSON.stringify([{ name: "p2p", mac: "02:21:00:00:00:52" }])));
      api.addNad({
        metadata: { namespace: "app", name: "p2p" },
        spec: {
          config: JSON.stringify({
            cniVersion: "1.0.0",
            name: "p2p",
            type: "ptp",
            ipam: hostLocal(scope, "10.221.53.0/24"),
          }),
        },
      });
      const ns = scope.addNetns();
      const env = podEnv(ns, "p");
      const err = cniError(await scope.run("ADD", conf, env));
      expect(err).toMatchObject({ code: 103, msg: expect.stringContaining("02:21:00:00:00:52") });
      // No end of ptp's veth pair is left in the pod (so none on the host: a pair goes as one).
      expect(podNames(ns)).toEqual([]);
      await playRuntimeDels(scope, conf, env);
    });
  },
);

describeE2e("e2e C2.6 CHECK of a pod whose NADs speak 0.3.1, 0.4.0 and 1.0.0", () => {
  it("C2.6 CHECK exits 0: the 0.3.1 network is skipped (it has no CHECK), the others are checked", async () => {
    const { scope } = t;
    const { api, conf } = await setup(scope, 60);
    api.addPod(pod("p", "v031,v040,v100"));
    for (const [name, version, subnet] of [
      ["v031", "0.3.1", 61],
      ["v040", "0.4.0", 62],
      ["v100", "1.0.0", 63],
    ] as const) {
      api.addNad({
        metadata: { namespace: "app", name },
        spec: {
          config: JSON.stringify({
            ...bridgeNet({
              name,
              bridge: scope.bridgeName(),
              ipam: hostLocal(scope, `10.221.${subnet}.0/24`),
            }),
            cniVersion: version,
          }),
        },
      });
    }
    const ns = scope.addNetns();
    const env = podEnv(ns, "p");
    expectOk(await scope.run("ADD", conf, env));
    expectSilentOk(await scope.run("CHECK", conf, env));
    expectSilentOk(await scope.run("DEL", conf, env));
    expect(scope.attachmentLeftovers()).toEqual(NOTHING_LEFT);
  });
});

describeE2e("e2e M4 the runtime's own requests belong to the network on CNI_IFNAME", () => {
  it("M4 C3.2 runtimeConfig ips with two inline delegates on different subnets: eth0 gets the requested IP, net1 is allocated normally", async () => {
    const { scope } = t;
    const withIps = (o: ReturnType<typeof bridgeNet>) => ({ ...o, capabilities: { ips: true } });
    const conf = plexusConf(
      scope,
      [
        withIps(defaultNet(scope, "10.221.70.0/24")),
        withIps(
          bridgeNet({
            name: "second",
            bridge: scope.bridgeName(),
            ipam: hostLocal(scope, "10.221.71.0/24"),
          }),
        ),
      ],
      { capabilities: { ips: true }, runtimeConfig: { ips: ["10.221.70.50/24"] } },
    );
    const ns = scope.addNetns();
    const env = { CNI_CONTAINERID: "ctr-podman", CNI_NETNS: ns.path, CNI_IFNAME: "eth0" };
    const add = expectOk(await scope.run("ADD", conf, env));
    expect((add.ips as Array<{ address: string }>).map((i) => i.address)).toEqual([
      "10.221.70.50/24",
    ]);
    const byName = new Map(links(ns.name).map((l) => [l.name, l.addresses]));
    expect(byName.get("eth0")).toEqual(["10.221.70.50/24"]);
    expect(byName.get("net1")).toEqual(["10.221.71.2/24"]);
    expectSilentOk(await scope.run("DEL", conf, env));
    expect(scope.attachmentLeftovers()).toEqual(NOTHING_LEFT);
  });
});
