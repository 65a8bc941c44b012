/**
 * Secondary networks of other kinds behind the bridge default network, with the reference plugins:
 * macvlan over a host veth, ipvlan (when the kernel has it), static IPAM, and a conflist
 * bridge + tuning whose MAC and MTU must be what the namespace shows (conflist semantics, N7.1,
 * C3.1).
 * Subnets 10.212.x.0/24.
 */
import { existsSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { expect, it } from "vitest";
import {
  describeE2e,
  kernelLacksLinkType,
  links,
  NOTHING_LEFT,
  routes,
  useE2eScope,
  type Netns,
} from "../support/netns";
import {
  bridgeNet,
  cachedResult,
  defaultNet,
  expectNetnsMatchesResult,
  expectOk,
  expectSilentOk,
  hostLocal,
  ipvlanNet,
  macvlanNet,
  plexusConf,
  PLUGIN_VERSION,
  type Result100,
} from "./networks";

const t = useE2eScope();

function attachEnv(ns: Netns, containerId: string) {
  return { CNI_CONTAINERID: containerId, CNI_NETNS: ns.path, CNI_IFNAME: "eth0" };
}

/**
 * ADD, check eth0 against the printed result and net1 against its cached result; returns net1's
 * link.
 */
async function addAndMatch(conf: unknown, ns: Netns, containerId: string, net1Name: string) {
  const { scope } = t;
  const result = expectOk(
    await scope.run("ADD", conf, attachEnv(ns, containerId)),
  ) as unknown as Result100;
  expectNetnsMatchesResult(ns, result, { ifName: "eth0" });
  const net1Result = cachedResult(scope, net1Name, containerId, "net1");
  const nsLinks = expectNetnsMatchesResult(ns, net1Result, { ifName: "net1" });
  return { result, net1Result, net1: nsLinks.find((l) => l.name === "net1")! };
}

describeE2e("e2e secondary networks: macvlan, ipvlan, static IPAM, tuning", () => {
  it("N6.2 macvlan secondary on a host veth master: net1 is a macvlan with its host-local address; DEL leaves nothing", async () => {
    const { scope } = t;
    const ns = scope.addNetns();
    const [master] = scope.addVethPair();
    const conf = plexusConf(scope, [
      defaultNet(scope, "10.212.1.0/24"),
      macvlanNet({ name: "macvlan-net", master, ipam: hostLocal(scope, "10.212.2.0/24") }),
    ]);
    const { net1, net1Result } = await addAndMatch(conf, ns, "ctr-macvlan", "macvlan-net");
    expect(net1.kind).toBe("macvlan");
    expect(net1Result.ips?.map((i) => i.address)).toEqual(["10.212.2.2/24"]);
    expect(scope.ipReservations()).toEqual(["default-net/10.212.1.2", "macvlan-net/10.212.2.2"]);

    expectSilentOk(await scope.run("DEL", conf, attachEnv(ns, "ctr-macvlan")));
    expect(scope.attachmentLeftovers()).toEqual(NOTHING_LEFT);
    // The master is untouched.
    expect(links().find((l) => l.name === master)?.state).toBe("UP");
  });

  it("N6.2 ipvlan secondary on a host veth master (skipped with the reason when the kernel has no ipvlan)", async (ctx) => {
    const missing = kernelLacksLinkType("ipvlan");
    if (missing) {
      console.warn(`*** SKIPPING ipvlan e2e test: ${missing} ***`);
      ctx.skip(missing);
    }
    const { scope } = t;
    const ns = scope.addNetns();
    const [master] = scope.addVethPair();
    const conf = plexusConf(scope, [
      defaultNet(scope, "10.212.3.0/24"),
      ipvlanNet({ name: "ipvlan-net", master, ipam: hostLocal(scope, "10.212.4.0/24") }),
    ]);
    const { net1 } = await addAndMatch(conf, ns, "ctr-ipvlan", "ipvlan-net");
    expect(net1.kind).toBe("ipvlan");
    expect(net1.addresses).toEqual(["10.212.4.2/24"]);
    expectSilentOk(await scope.run("DEL", conf, attachEnv(ns, "ctr-ipvlan")));
    expect(scope.attachmentLeftovers()).toEqual(NOTHING_LEFT);
  });

  it("static IPAM on a bridge secondary: the configured address and route are in the namespace; DEL removes net1", async () => {
    const { scope } = t;
    const ns = scope.addNetns();
    const staticNet = bridgeNet({
      name: "static-net",
      bridge: scope.bridgeName(),
      ipam: {
        type: "static",
        addresses: [{ address: "10.212.5.10/24", gateway: "10.212.5.1" }],
        routes: [{ dst: "10.212.100.0/24" }],
      },
    });
    const conf = plexusConf(scope, [defaultNet(scope, "10.212.6.0/24"), staticNet]);
    const { net1Result, net1 } = await addAndMatch(conf, ns, "ctr-static", "static-net");
    expect(net1Result.ips).toEqual([
      { address: "10.212.5.10/24", gateway: "10.212.5.1", interface: 2 },
    ]);
    expect(net1.addresses).toEqual(["10.212.5.10/24"]);
    expect(routes(ns.name)).toContainEqual({
      dst: "10.212.100.0/24",
      gateway: "10.212.5.1",
      dev: "net1",
    });
    // Static IPAM keeps no reservation; only the default network's host-local one exists.
    expect(scope.ipReservations()).toEqual(["default-net/10.212.6.2"]);

    expectSilentOk(await scope.run("DEL", conf, attachEnv(ns, "ctr-static")));
    expect(scope.attachmentLeftovers()).toEqual(NOTHING_LEFT);
  });

  it("N7.1 C3.1 conflist bridge + tuning: tuning gets the bridge result, its MAC and MTU are on net1 in the namespace; DEL restores and releases", async () => {
    const { scope } = t;
    const ns = scope.addNetns();
    const tuningDir = join(scope.root, "tuning");
    const mac = "02:42:0a:d4:07:99";
    // Only the list carries name and cniVersion: the plugins get them injected (N7.1), and tuning
    // needs the bridge's result as prevResult (C3.1) to find net1 at all.
    const tuned = {
      cniVersion: PLUGIN_VERSION,
      name: "tuned-net",
      plugins: [
        { type: "bridge", bridge: scope.bridgeName(), ipam: hostLocal(scope, "10.212.7.0/24") },
        { type: "tuning", mac, mtu: 1400, dataDir: tuningDir },
      ],
    };
    const conf = plexusConf(scope, [defaultNet(scope, "10.212.8.0/24"), tuned]);
    const { net1Result, net1 } = await addAndMatch(conf, ns, "ctr-tuning", "tuned-net");
    expect(net1.mac).toBe(mac);
    expect(net1.mtu).toBe(1400);
    const sandboxIf = net1Result.interfaces?.find((i) => i.sandbox);
    expect(sandboxIf?.mac).toBe(mac);
    // eth0 kept its own (random, not tuned) MAC and the default MTU.
    const eth0 = links(ns.name).find((l) => l.name === "eth0")!;
    expect(eth0.mac).not.toBe(mac);
    expect(eth0.mtu).toBe(1500);
    expect(readdirSync(tuningDir)).toHaveLength(1); // tuning's backup of the original settings

    expectSilentOk(await scope.run("DEL", conf, attachEnv(ns, "ctr-tuning")));
    expect(scope.attachmentLeftovers()).toEqual(NOTHING_LEFT);
    expect(existsSync(tuningDir) ? readdirSync(tuningDir) : []).toEqual([]);
  });
});
