/**
 * Pods of a cluster through dist/plexus with the real plugins in real namespaces, the cluster being
 * a directory of manifests (`fileClusterDir`: the same code path as the API server, N4, N5, N6).
 * Subnets 10.216.x.0/24.
 */
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { expect, it } from "vitest";
import { cniError, TEST_PATH } from "../support/plexus-bin";
import {
  describeE2e,
  links,
  NOTHING_LEFT,
  routes,
  useE2eScope,
  type E2eScope,
  type Netns,
} from "../support/netns";
import { bridgeNet, defaultNet, expectOk, expectSilentOk, hostLocal, plexusConf } from "./networks";

const t = useE2eScope();

interface Cluster {
  dir: string;
  conf: Record<string, unknown>;
  status(ns: string, pod: string): Array<Record<string, unknown>>;
  events(): Array<Record<string, unknown>>;
}

function nad(namespace: string, name: string, config: unknown) {
  return {
    apiVersion: "k8s.cni.cncf.io/v1",
    kind: "NetworkAttachmentDefinition",
    metadata: { namespace, name },
    spec: { config: JSON.stringify(config) },
  };
}

function pod(
  namespace: string,
  name: string,
  annotations: Record<string, string>,
  uid = `uid-${name}`,
) {
  return { apiVersion: "v1", kind: "Pod", metadata: { namespace, name, uid, annotations } };
}

/** A manifest directory and a confDir holding the cluster network (bridge + host-local). */
function cluster(
  scope: E2eScope,
  subnet: number,
  objects: unknown[],
  extra: Record<string, unknown> = {},
): Cluster {
  const dir = join(scope.root, "cluster");
  const confDir = join(scope.root, "net.d");
  mkdirSync(dir, { recursive: true });
  mkdirSync(confDir, { recursive: true });
  writeFileSync(
    join(confDir, "10-cbr0.conflist"),
    JSON.stringify({
      cniVersion: "1.0.0",
      name: "cbr0",
      plugins: [defaultNet(scope, `10.216.${subnet}.0/24`, "cbr0")],
    }),
  );
  writeFileSync(
    join(dir, "objects.json"),
    JSON.stringify({ apiVersion: "v1", kind: "List", items: objects }),
  );
  const conf = plexusConf(scope, [], {
    clusterNetwork: "cbr0",
    confDir,
    fileClusterDir: dir,
    ...extra,
  });
  delete (conf as Record<string, unknown>).delegates;
  return {
    dir,
    conf,
    status: (ns, p) => {
      const doc = JSON.parse(readFileSync(join(dir, "status", `${ns}.${p}.json`), "utf8"));
      return JSON.parse(doc.metadata.annotations["k8s.v1.cni.cncf.io/network-status"]);
    },
    events: () =>
      existsSync(join(dir, "status", "events.jsonl"))
        ? readFileSync(join(dir, "status", "events.jsonl"), "utf8")
            .trim()
            .split("\n")
            .map((l) => JSON.parse(l))
        : [],
  };
}

function podEnv(
  ns: Netns,
  namespace: string,
  name: string,
  containerId = `ctr-${name}`,
  uid = `uid-${name}`,
) {
  return {
    CNI_CONTAINERID: containerId,
    CNI_NETNS: ns.path,
    CNI_IFNAME: "eth0",
    CNI_ARGS: `IgnoreUnknown=1;K8S_POD_NAMESPACE=${namespace};K8S_POD_NAME=${name};K8S_POD_UID=${uid}`,
  };
}

const names = (ns: Netns) =>
  links(ns.name)
    .map((l) => l.name)
    .filter((n) => n !== "lo")
    .sort();

describeE2e("e2e pods of a file-backed cluster: NPWG annotations, NADs, network-status", () => {
  it("N4.1 N4.1.1 N4.2 N5 N5.2 N6 N6.2 M9 `net-a,other/net-b@eth5` gets eth0, net1, eth5 and a network-status with the default network first", async () => {
    const { scope } = t;
    const c = cluster(scope, 1, [
      pod("app", "web", { "k8s.v1.cni.cncf.io/networks": "net-a,other/net-b@eth5" }),
      nad(
        "app",
        "net-a",
        bridgeNet({
          name: "net-a",
          bridge: scope.bridgeName(),
          ipam: hostLocal(scope, "10.216.2.0/24"),
        }),
      ),
      nad(
        "other",
        "net-b",
        bridgeNet({
          name: "net-b",
          bridge: scope.bridgeName(),
          ipam: hostLocal(scope, "10.216.3.0/24"),
        }),
      ),
    ]);
    const ns = scope.addNetns();
    const env = podEnv(ns, "app", "web");
    const add = expectOk(await scope.run("ADD", c.conf, env));
    expect((add.ips as Array<{ address: string }>)[0]?.address).toBe("10.216.1.2/24");
    expect(names(ns)).toEqual(["eth0", "eth5", "net1"]);
    const status = c.status("app", "web");
    expect(status.map((s) => [s.name, s.interface, s.ips, s.default])).toEqual([
      ["cbr0", "eth0", ["10.216.1.2"], true],
      ["app/net-a", "net1", ["10.216.2.2"], false],
      ["other/net-b", "eth5", ["10.216.3.2"], false],
    ]);
    for (const s of status) expect(s.mac).toMatch(/^[0-9a-f:]{17}$/);
    expect(c.events()).toEqual([
      expect.objectContaining({
        type: "Normal",
        reason: "AddedInterface",
        message: expect.stringContaining("eth5 [10.216.3.2/24] from other/net-b"),
      }),
    ]);

    expectSilentOk(await scope.run("CHECK", c.conf, env));
    // M7: DEL runs from the record: the manifests may be gone (pod deleted, API down).
    rmSync(join(c.dir, "objects.json"));
    expectSilentOk(await scope.run("DEL", c.conf, env));
    expect(scope.attachmentLeftovers()).toEqual(NOTHING_LEFT);
  });

  it("N4.1.2 N4.1.2.1.3 N4.1.2.1.4 M4 JSON form: static IPs via the ips capability, a MAC via tuning, verified after ADD", async () => {
    const { scope } = t;
    const c = cluster(scope, 4, [
      pod("app", "db", {
        "k8s.v1.cni.cncf.io/networks": JSON.stringify([
          {
            name: "static-net",
            ips: ["10.216.5.77/24"],
            mac: "02:16:00:00:00:77",
            interface: "data0",
          },
        ]),
      }),
      nad("app", "static-net", {
        cniVersion: "1.0.0",
        name: "static-net",
        plugins: [
          {
            type: "bridge",
            bridge: scope.bridgeName(),
            ipam: { type: "static" },
            capabilities: { ips: true },
          },
          { type: "tuning", capabilities: { mac: true } },
        ],
      }),
    ]);
    const ns = scope.addNetns();
    const env = podEnv(ns, "app", "db");
    expectOk(await scope.run("ADD", c.conf, env));
    const data0 = links(ns.name).find((l) => l.name === "data0");
    expect(data0?.mac).toBe("02:16:00:00:00:77");
    expect(c.status("app", "db")[1]).toMatchObject({
      name: "app/static-net",
      interface: "data0",
      ips: ["10.216.5.77"],
      mac: "02:16:00:00:00:77",
    });
    expectSilentOk(await scope.run("DEL", c.conf, env));
    expect(scope.attachmentLeftovers()).toEqual(NOTHING_LEFT);
  });

  it("N7.2 B28 M9 a missing NAD fails the ADD before any delegate runs, with a NoNetworkFound event; nothing is left", async () => {
    const { scope } = t;
    const c = cluster(scope, 6, [pod("app", "lost", { "k8s.v1.cni.cncf.io/networks": "nope" })]);
    const ns = scope.addNetns();
    const err = cniError(await scope.run("ADD", c.conf, podEnv(ns, "app", "lost")));
    expect(err).toMatchObject({ code: 7, msg: expect.stringContaining("app/nope") });
    expect(c.events()).toEqual([
      expect.objectContaining({ type: "Warning", reason: "NoNetworkFound" }),
    ]);
    expect(names(ns)).toEqual([]);
    expect(scope.attachmentLeftovers()).toEqual(NOTHING_LEFT);
  });

  it("N7.2 a failing second network tears down the first and the default one: no IP, no record, no status", async () => {
    const { scope } = t;
    const c = cluster(scope, 7, [
      pod("app", "half", { "k8s.v1.cni.cncf.io/networks": "good,bad" }),
      nad(
        "app",
        "good",
        bridgeNet({
          name: "good",
          bridge: scope.bridgeName(),
          ipam: hostLocal(scope, "10.216.8.0/24"),
        }),
      ),
      // A range of one address that another container already holds: host-local fails.
      nad(
        "app",
        "bad",
        bridgeNet({
          name: "bad",
          bridge: scope.bridgeName(),
          ipam: hostLocal(scope, "10.216.9.0/24", {
            rangeStart: "10.216.9.10",
            rangeEnd: "10.216.9.10",
          }),
        }),
      ),
    ]);
    mkdirSync(join(scope.dataDir, "bad"), { recursive: true });
    writeFileSync(join(scope.dataDir, "bad", "10.216.9.10"), "someone-else\neth0");
    const ns = scope.addNetns();
    const err = cniError(await scope.run("ADD", c.conf, podEnv(ns, "app", "half")));
    expect(err.msg).toContain('"app/bad" (net2)');
    expect(names(ns)).toEqual([]);
    expect(existsSync(join(c.dir, "status", "app.half.json"))).toBe(false);
    rmSync(join(scope.dataDir, "bad", "10.216.9.10"));
    expect(scope.attachmentLeftovers()).toEqual(NOTHING_LEFT);
  });

  it("N7.4 B24 M5 namespace isolation refuses another namespace's NAD, also through the default-network override", async () => {
    const { scope } = t;
    const c = cluster(
      scope,
      10,
      [
        pod("app", "a", { "k8s.v1.cni.cncf.io/networks": "team-b/net-x" }),
        pod("app", "b", { "v1.multus-cni.io/default-network": "team-b/net-x" }),
        nad(
          "team-b",
          "net-x",
          bridgeNet({
            name: "net-x",
            bridge: scope.bridgeName(),
            ipam: hostLocal(scope, "10.216.11.0/24"),
          }),
        ),
      ],
      { namespaceIsolation: true },
    );
    for (const p of ["a", "b"]) {
      const ns = scope.addNetns();
      expect(cniError(await scope.run("ADD", c.conf, podEnv(ns, "app", p)))).toMatchObject({
        code: 7,
        msg: expect.stringContaining("team-b/net-x is refused"),
      });
      expect(names(ns)).toEqual([]);
    }
    expect(scope.attachmentLeftovers()).toEqual(NOTHING_LEFT);
  });

  it("M8 B39 a K8S_POD_UID that is not the pod's fails the ADD with UID mismatch; DEL still works", async () => {
    const { scope } = t;
    const c = cluster(scope, 12, [pod("app", "re", {}, "uid-new")]);
    const ns = scope.addNetns();
    const env = podEnv(ns, "app", "re", "ctr-re", "uid-old");
    expect(cniError(await scope.run("ADD", c.conf, env)).msg).toContain("UID mismatch");
    expectSilentOk(await scope.run("DEL", c.conf, env));
    expect(scope.attachmentLeftovers()).toEqual(NOTHING_LEFT);
  });
  it("M4 M6 default-route: the selected network carries the pod's default route, and the status names its gateway", async () => {
    const { scope } = t;
    const c = egressCluster({
      scope,
      index: 13,
      pod: "gw",
      network: "egress",
      gateway: "10.216.14.1",
      subnet: "10.216.14.0/24",
    });
    const ns = scope.addNetns();
    const env = podEnv(ns, "app", "gw");
    expectOk(await scope.run("ADD", c.conf, env));
    expect(routes(ns.name).filter((r) => r.dst === "default")).toEqual([
      { dst: "default", gateway: "10.216.14.1", dev: "net1" },
    ]);
    expect(c.status("app", "gw")[1]).toMatchObject({
      name: "app/egress",
      gateway: ["10.216.14.1"],
    });
    expectSilentOk(await scope.run("DEL", c.conf, env));
    expect(scope.attachmentLeftovers()).toEqual(NOTHING_LEFT);
  });

  it("M4 default-route runs no nsenter or ip found through $PATH: impostors first in PATH never run, the route is still set", async () => {
    const { scope } = t;
    const c = egressCluster({
      scope,
      index: 17,
      pod: "gwpath",
      network: "egress",
      gateway: "10.216.18.1",
      subnet: "10.216.18.0/24",
    });
    const impostors = join(scope.root, "impostors");
    const marker = join(scope.root, "impostor-ran");
    mkdirSync(impostors);
    for (const tool of ["nsenter", "ip"])
      writeFileSync(join(impostors, tool), `#!/bin/sh\necho ${tool} >> ${marker}\nexit 1\n`, {
        mode: 0o755,
      });
    const ns = scope.addNetns();
    const env = { ...podEnv(ns, "app", "gwpath"), PATH: `${impostors}:${TEST_PATH}` };
    expectOk(await scope.run("ADD", c.conf, env));
    expect(existsSync(marker)).toBe(false);
    expect(routes(ns.name).filter((r) => r.dst === "default")).toEqual([
      { dst: "default", gateway: "10.216.18.1", dev: "net1" },
    ]);
    expectSilentOk(await scope.run("DEL", c.conf, env));
    expect(scope.attachmentLeftovers()).toEqual(NOTHING_LEFT);
  });

  it("M4 default-route with an IPv6 gateway: the pod's IPv6 default route goes via it (rtnetlink, no host tool)", async () => {
    const { scope } = t;
    const c = egressCluster({
      scope,
      index: 19,
      pod: "gw6",
      network: "egress6",
      gateway: "fd00:216:20::1",
      subnet: "fd00:216:20::/64",
    });
    const ns = scope.addNetns();
    const env = podEnv(ns, "app", "gw6");
    expectOk(await scope.run("ADD", c.conf, env));
    const v6 = execFileSync("ip", ["-n", ns.name, "-6", "route", "show", "default"], {
      encoding: "utf8",
    });
    expect(v6.trim()).toMatch(/^default via fd00:216:20::1 dev net1 /);
    expect(v6.trim().split("\n")).toHaveLength(1);
    expectSilentOk(await scope.run("DEL", c.conf, env));
    expect(scope.attachmentLeftovers()).toEqual(NOTHING_LEFT);
  });

  it("M4 a default-route gateway outside the network fails the ADD and tears everything down", async () => {
    const { scope } = t;
    const c = cluster(scope, 15, [
      pod("app", "badgw", {
        "k8s.v1.cni.cncf.io/networks": JSON.stringify([
          { name: "egress", "default-route": ["192.0.2.1"] },
        ]),
      }),
      nad(
        "app",
        "egress",
        bridgeNet({
          name: "egress",
          bridge: scope.bridgeName(),
          ipam: hostLocal(scope, "10.216.16.0/24"),
        }),
      ),
    ]);
    const ns = scope.addNetns();
    const err = cniError(await scope.run("ADD", c.conf, podEnv(ns, "app", "badgw")));
    expect(err).toMatchObject({ code: 103, msg: expect.stringContaining("192.0.2.1") });
    // The kernel's own answer over rtnetlink (iproute2 would say "Nexthop has invalid gateway"): no
    // host tool ran.
    expect(err.msg).toContain("the kernel refused the route (ENETUNREACH)");
    expect(names(ns)).toEqual([]);
    expect(scope.attachmentLeftovers()).toEqual(NOTHING_LEFT);
  });
});

/**
 * A pod whose one selected network (a gateway bridge) is to carry its default route
 * (`default-route`).
 */
function egressCluster(options: {
  scope: E2eScope;
  index: number;
  pod: string;
  network: string;
  gateway: string;
  subnet: string;
}) {
  return cluster(options.scope, options.index, [
    pod("app", options.pod, {
      "k8s.v1.cni.cncf.io/networks": JSON.stringify([
        { name: options.network, "default-route": [options.gateway] },
      ]),
    }),
    nad(
      "app",
      options.network,
      bridgeNet({
        name: options.network,
        bridge: options.scope.bridgeName(),
        isGateway: true,
        ipam: hostLocal(options.scope, options.subnet),
      }),
    ),
  ]);
}
