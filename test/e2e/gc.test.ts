/**
 * GC (C2.9) with the real plugins: of two containers, the one the runtime no longer lists in
 * `cni.dev/valid-attachments` is released (its host-local addresses, record and cached results),
 * the listed one is untouched. Subnets 10.215.x.0/24.
 */
import { expect, it } from "vitest";
import { describeE2e, links, NOTHING_LEFT, useE2eScope, type Netns } from "../support/netns";
import {
  cacheNames,
  defaultNet,
  expectOk,
  expectSilentOk,
  plexusConf,
  secondaryBridgeNet,
} from "./networks";

const t = useE2eScope();

function attachEnv(ns: Netns, containerId: string) {
  return { CNI_CONTAINERID: containerId, CNI_NETNS: ns.path, CNI_IFNAME: "eth0" };
}

describeE2e("e2e GC with real delegates", () => {
  it("C2.9 GC listing one of two containers releases the other's IPs, record and cache; the listed one keeps everything", async () => {
    const { scope } = t;
    const conf = plexusConf(
      scope,
      [defaultNet(scope, "10.215.1.0/24"), secondaryBridgeNet(scope, "10.215.2.0/24")],
      {
        cniVersion: "1.1.0",
      },
    );
    const keep = scope.addNetns();
    const gone = scope.addNetns();
    expectOk(await scope.run("ADD", conf, attachEnv(keep, "ctr-keep")));
    expectOk(await scope.run("ADD", conf, attachEnv(gone, "ctr-gone")));
    expect(scope.ipReservations()).toEqual([
      "bridge-net/10.215.2.2",
      "bridge-net/10.215.2.3",
      "default-net/10.215.1.2",
      "default-net/10.215.1.3",
    ]);
    expect(scope.recordFiles()).toEqual(["ctr-gone-eth0.json", "ctr-keep-eth0.json"]);
    const keptLinks = links(keep.name);

    // The runtime removed ctr-gone's sandbox (and its namespace) without a DEL reaching Plexus.
    scope.deleteNetns(gone);
    const gc = await scope.run("GC", {
      ...conf,
      "cni.dev/valid-attachments": [{ containerID: "ctr-keep", ifname: "eth0" }],
    });
    expectSilentOk(gc);

    expect(scope.ipReservations()).toEqual(["bridge-net/10.215.2.2", "default-net/10.215.1.2"]);
    expect(scope.recordFiles()).toEqual(["ctr-keep-eth0.json"]);
    expect(scope.cacheFiles()).toEqual(
      cacheNames(scope, "ctr-keep", ["bridge-net", "net1"], ["default-net", "eth0"]),
    );
    expect(links(keep.name)).toEqual(keptLinks);
    expect(scope.attachmentLeftovers().hostLinks).toHaveLength(2); // ctr-keep's two host veths

    // GC again is a no-op; then the kept container's own DEL cleans up the rest.
    expectSilentOk(
      await scope.run("GC", {
        ...conf,
        "cni.dev/valid-attachments": [{ containerID: "ctr-keep", ifname: "eth0" }],
      }),
    );
    expect(scope.recordFiles()).toEqual(["ctr-keep-eth0.json"]);
    expectSilentOk(await scope.run("DEL", conf, attachEnv(keep, "ctr-keep")));
    expect(scope.attachmentLeftovers()).toEqual(NOTHING_LEFT);
  });

  it("C2.9 GC with an empty valid list releases every container, also while its namespace still exists (IPAM only, as libcni)", async () => {
    const { scope } = t;
    const conf = plexusConf(scope, [defaultNet(scope, "10.215.3.0/24")], { cniVersion: "1.1.0" });
    const ns = scope.addNetns();
    expectOk(await scope.run("ADD", conf, attachEnv(ns, "ctr-stale")));
    expectSilentOk(await scope.run("GC", { ...conf, "cni.dev/valid-attachments": [] }));
    expect(scope.ipReservations()).toEqual([]);
    expect(scope.recordFiles()).toEqual([]);
    expect(scope.cacheFiles()).toEqual([]);
    // GC passes no namespace, so the bridge plugin released only the address; the namespace's
    // owner (the runtime) removes the namespace, which takes the veth pair with it.
    scope.deleteNetns(ns);
    expect(scope.attachmentLeftovers()).toEqual(NOTHING_LEFT);
  });
});
