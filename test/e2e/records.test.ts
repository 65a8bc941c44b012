/**
 * `plexus records` with the reference plugins: a container whose sandbox went away
 * without a successful DEL is listed as stale, and `records rm --teardown` runs DEL's teardown
 * with CNI_NETNS="" so the host side (veth, IP reservations, cached results) is released and the
 * record removed. Subnets 10.223.x.0/24.
 */
import { expect, it } from "vitest";
import { runPlexus } from "../support/plexus-bin";
import { CNI_BIN_DIR, describeE2e, NOTHING_LEFT, useE2eScope } from "../support/netns";
import { defaultNet, expectOk, plexusConf, secondaryBridgeNet } from "./networks";

const t = useE2eScope();

describeE2e("e2e plexus records: a stale record torn down by hand", () => {
  it("M7 a record whose netns is gone is listed stale; rm --teardown releases its veths, IPs and cache, then removes it", async () => {
    const { scope } = t;
    const ns = scope.addNetns();
    const conf = plexusConf(scope, [
      defaultNet(scope, "10.223.1.0/24"),
      secondaryBridgeNet(scope, "10.223.2.0/24"),
    ]);
    expectOk(
      await scope.run("ADD", conf, {
        CNI_CONTAINERID: "ctr-rec",
        CNI_NETNS: ns.path,
        CNI_IFNAME: "eth0",
      }),
    );
    expect(scope.ipReservations()).toHaveLength(2);
    // The runtime removed the sandbox without a successful DEL.
    scope.deleteNetns(ns);

    const people = (args: string[]) =>
      runPlexus({
        env: {
          ...scope.env("-"),
          CNI_COMMAND: undefined,
          CNI_ARGS: undefined,
          CNI_PATH: undefined,
        },
        args: [...args, "--cni-dir", scope.cniDir, "--cni-path", CNI_BIN_DIR],
      });
    const list = await people(["records", "list"]);
    expect(list.code, list.stderr).toBe(0);
    expect(list.stdout).toMatch(/^ctr-rec-eth0\s+stale\s+-\s+default-net@eth0,bridge-net@net1/m);

    const rm = await people(["records", "rm", "ctr-rec-eth0", "--teardown"]);
    expect(rm.code, rm.stderr).toBe(0);
    expect(rm.stdout).toContain("tore down 2 attachment(s) of ctr-rec-eth0");
    expect(scope.attachmentLeftovers()).toEqual(NOTHING_LEFT);
  });
});
