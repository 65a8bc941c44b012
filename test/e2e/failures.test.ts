/**
 * Failures with the real plugins: a second delegate that cannot get an address (ADD fails, what was
 * attached is torn down, nothing is reserved or recorded, N7.2, C4.1), and CNI_NETNS that is not a
 * network namespace (B4: refused before any delegate runs). Subnets 10.213.x.0/24.
 */
import { execFileSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { expect, it } from "vitest";
import { cniError } from "../support/plexus-bin";
import {
  describeE2e,
  linkExists,
  links,
  NOTHING_LEFT,
  useE2eScope,
  type Netns,
} from "../support/netns";
import { bridgeNet, defaultNet, expectOk, expectSilentOk, hostLocal, plexusConf } from "./networks";

const t = useE2eScope();

function attachEnv(netnsPath: string, containerId: string) {
  return { CNI_CONTAINERID: containerId, CNI_NETNS: netnsPath, CNI_IFNAME: "eth0" };
}

function nsLinkNames(ns: Netns): string[] {
  return links(ns.name)
    .map((l) => l.name)
    .sort();
}

describeE2e("e2e failures: a failing second delegate, CNI_NETNS that is no namespace", () => {
  it("N7.2 C4.1 K1 a second delegate whose host-local range is exhausted fails the ADD; eth0 and net1 are torn down, no IP, record or cache kept; the other container is untouched, also by B's follow-up DELs", async () => {
    const { scope } = t;
    // tight-net has one address; container A takes it, container B's net1 then cannot get one.
    const defaultBridge = defaultNet(scope, "10.213.1.0/24");
    const tight = bridgeNet({
      name: "tight-net",
      bridge: scope.bridgeName(),
      ipam: hostLocal(scope, "10.213.2.0/24", {
        rangeStart: "10.213.2.10",
        rangeEnd: "10.213.2.10",
      }),
    });
    const conf = plexusConf(scope, [defaultBridge, tight]);
    const nsA = scope.addNetns();
    const nsB = scope.addNetns();
    expectOk(await scope.run("ADD", conf, attachEnv(nsA.path, "ctr-a")));
    const before = {
      reservations: scope.ipReservations(),
      records: scope.recordFiles(),
      cache: scope.cacheFiles(),
      nsA: links(nsA.name),
    };
    expect(before.reservations).toEqual(["default-net/10.213.1.2", "tight-net/10.213.2.10"]);

    const r = await scope.run("ADD", conf, attachEnv(nsB.path, "ctr-b"));
    const err = cniError(r);
    expect(err.msg).toContain("tight-net");
    expect(err.msg).toContain("net1");
    expect(err.msg).toMatch(/no IP addresses available/);
    // B's default network (eth0, which got 10.213.1.3) and its half-made net1 are gone.
    expect(nsLinkNames(nsB)).toEqual(["lo"]);
    expect(scope.ipReservations()).toEqual(before.reservations);
    expect(scope.recordFiles()).toEqual(before.records);
    expect(scope.cacheFiles()).toEqual(before.cache);
    expect(scope.attachmentLeftovers().hostLinks).toHaveLength(2); // A's two host veths only
    // A is untouched: same links, MACs and addresses.
    expect(links(nsA.name)).toEqual(before.nsA);

    // K1: containerd follows a failed ADD with a DEL (same netns), later one without the netns.
    expectSilentOk(await scope.run("DEL", conf, attachEnv(nsB.path, "ctr-b")));
    expectSilentOk(await scope.run("DEL", conf, attachEnv("", "ctr-b")));
    expect(scope.ipReservations()).toEqual(before.reservations);
    expect(scope.recordFiles()).toEqual(before.records);
    expect(links(nsA.name)).toEqual(before.nsA);

    expectSilentOk(await scope.run("DEL", conf, attachEnv(nsA.path, "ctr-a")));
    expect(scope.attachmentLeftovers()).toEqual(NOTHING_LEFT);
  });

  it("B4 CNI_NETNS pointing at a regular file: error code 4 before any delegate runs (no bridge, no IPAM state, no record)", async () => {
    const { scope } = t;
    const conf = plexusConf(scope, [defaultNet(scope, "10.213.3.0/24")]);
    const bridge = (conf.delegates[0] as { bridge: string }).bridge;
    const file = join(scope.root, "not-a-netns");
    writeFileSync(file, "");
    const err = cniError(await scope.run("ADD", conf, attachEnv(file, "ctr-file")));
    expect(err.code).toBe(4);
    expect(err.msg).toContain(file);
    expect(linkExists(bridge)).toBe(false);
    expect(scope.attachmentLeftovers()).toEqual(NOTHING_LEFT);
  });

  it("B4 CNI_NETNS naming a namespace that vanished: error code 4 before any delegate runs", async () => {
    const { scope } = t;
    const conf = plexusConf(scope, [defaultNet(scope, "10.213.4.0/24")]);
    const bridge = (conf.delegates[0] as { bridge: string }).bridge;
    const ns = scope.addNetns();
    scope.deleteNetns(ns);
    const err = cniError(await scope.run("ADD", conf, attachEnv(ns.path, "ctr-gone")));
    expect(err.code).toBe(4);
    expect(err.msg).toContain(ns.path);
    expect(linkExists(bridge)).toBe(false);
    expect(scope.attachmentLeftovers()).toEqual(NOTHING_LEFT);
  });

  it("B4 CNI_NETNS naming a namespace of another kind (/proc/<pid>/ns/uts, or a bind-mounted UTS namespace): code 4 before any delegate runs", async () => {
    const { scope } = t;
    const conf = plexusConf(scope, [defaultNet(scope, "10.213.5.0/24")]);
    const bridge = (conf.delegates[0] as { bridge: string }).bridge;
    const bound = join(scope.root, "uts-ns");
    writeFileSync(bound, "");
    execFileSync("mount", ["--bind", `/proc/${process.pid}/ns/uts`, bound]);
    try {
      for (const path of [`/proc/${process.pid}/ns/uts`, bound]) {
        const err = cniError(await scope.run("ADD", conf, attachEnv(path, "ctr-uts")));
        expect(err.code, path).toBe(4);
        expect(err.msg).toContain("is a uts namespace");
        expect(linkExists(bridge), "the bridge plugin never ran").toBe(false);
        expect(scope.attachmentLeftovers()).toEqual(NOTHING_LEFT);
      }
    } finally {
      execFileSync("umount", [bound]);
    }
  });
});
