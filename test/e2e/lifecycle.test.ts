/**
 * A container's life through dist/plexus with the reference bridge and host-local plugins in a
 * real namespace: ADD of a default network (eth0) and a second bridge network (net1), what the
 * namespace then holds, CHECK, and the DELs a runtime sends (containerd's two, K1), each leaving
 * nothing behind. Subnets 10.211.x.0/24.
 */
import { chmodSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { expect, it } from "vitest";
import { cniError } from "../support/plexus-bin";
import {
  CNI_BIN_DIR,
  describeE2e,
  ip,
  links,
  NOTHING_LEFT,
  routes,
  useE2eScope,
} from "../support/netns";
import {
  cacheNames,
  cachedResult,
  defaultNet,
  expectNetnsMatchesResult,
  expectOk,
  expectSilentOk,
  plexusConf,
  secondaryBridgeNet,
  type Result100,
} from "./networks";

const t = useE2eScope();

/** Default network 10.211.<n>.0/24 on eth0, a second bridge network 10.211.<n+1>.0/24 on net1. */
function twoBridges(octet: number, extra: Record<string, unknown> = {}) {
  const { scope } = t;
  return plexusConf(
    scope,
    [
      defaultNet(scope, `10.211.${octet}.0/24`),
      secondaryBridgeNet(scope, `10.211.${octet + 1}.0/24`),
    ],
    extra,
  );
}

function attachEnv(netns: string, containerId = "ctr-life") {
  return { CNI_CONTAINERID: containerId, CNI_NETNS: netns, CNI_IFNAME: "eth0" };
}

describeE2e(
  "e2e lifecycle: bridge + host-local default network and a second bridge network",
  () => {
    it("N6.2 C2.4 M7 ADD attaches eth0 and net1 whose interfaces, addresses and routes match the results; DEL C2.5 removes links, IPs, record and cache", async () => {
      const { scope } = t;
      const ns = scope.addNetns();
      const conf = twoBridges(1);
      const env = attachEnv(ns.path);

      const add = await scope.run("ADD", conf, env);
      const result = expectOk(add) as unknown as Result100;
      expect(result.cniVersion).toBe("1.0.0");
      // The printed result is the default network's (eth0), in the requested version (C2.4).
      expect(result.ips).toEqual([
        { address: "10.211.1.2/24", gateway: "10.211.1.1", interface: 2 },
      ]);
      expectNetnsMatchesResult(ns, result, { ifName: "eth0" });
      // net1's result is the cached one (C3.3); the namespace matches it as well.
      const net1 = cachedResult(scope, "bridge-net", "ctr-life", "net1");
      expect(net1.ips?.map((i) => i.address)).toEqual(["10.211.2.2/24"]);
      expectNetnsMatchesResult(ns, net1, { ifName: "net1" });
      expect(
        links(ns.name)
          .map((l) => l.name)
          .sort(),
      ).toEqual(["eth0", "lo", "net1"]);
      // The default route goes through the default network only.
      expect(routes(ns.name).filter((r) => r.dst === "default")).toEqual([
        { dst: "default", gateway: "10.211.1.1", dev: "eth0" },
      ]);

      // M7: the record and the cache are on disk; host-local holds one address per network.
      expect(scope.recordFiles()).toEqual(["ctr-life-eth0.json"]);
      const record = JSON.parse(
        readFileSync(join(scope.cniDir, "records", "ctr-life-eth0.json"), "utf8"),
      ) as {
        attachments: Array<{ ifName: string; network: string }>;
      };
      expect(record.attachments.map((a) => `${a.network}:${a.ifName}`)).toEqual([
        "default-net:eth0",
        "bridge-net:net1",
      ]);
      expect(scope.cacheFiles()).toEqual(
        cacheNames(scope, "ctr-life", ["bridge-net", "net1"], ["default-net", "eth0"]),
      );
      expect(scope.ipReservations()).toEqual(["bridge-net/10.211.2.2", "default-net/10.211.1.2"]);
      expect(scope.attachmentLeftovers().hostLinks).toHaveLength(2);

      expectSilentOk(await scope.run("DEL", conf, env));
      expect(scope.attachmentLeftovers()).toEqual(NOTHING_LEFT);
    });

    it("N6.2 N7.3 delegates run one at a time, the default network first; DEL in reverse", async () => {
      const { scope } = t;
      const ns = scope.addNetns();
      // A tracing shim in binDir (searched before CNI_PATH, M1) around the real bridge plugin:
      // it logs start and end of each call with the uptime clock, and runs the real plugin in
      // between.
      const binDir = join(scope.root, "trace-bin");
      const log = join(scope.root, "trace.log");
      const shim = [
        "#!/bin/sh",
        `t() { cut -d' ' -f1 /proc/uptime; }`,
        `echo "start $CNI_COMMAND $CNI_IFNAME $(t)" >> ${log}`,
        `${CNI_BIN_DIR}/bridge`,
        "rc=$?",
        `echo "end $CNI_COMMAND $CNI_IFNAME $(t)" >> ${log}`,
        "exit $rc",
        "",
      ].join("\n");
      mkdirSync(binDir);
      writeFileSync(join(binDir, "bridge"), shim);
      chmodSync(join(binDir, "bridge"), 0o755);
      const conf = twoBridges(3, { binDir });
      const env = attachEnv(ns.path, "ctr-order");

      expectOk(await scope.run("ADD", conf, env));
      expectSilentOk(await scope.run("DEL", conf, env));
      const lines = readFileSync(log, "utf8")
        .trim()
        .split("\n")
        .map((l) => l.split(" "));
      // Strictly alternating start/end pairs: no delegate starts before the previous one ended.
      expect(lines.map((l) => `${l[0]} ${l[1]} ${l[2]}`)).toEqual([
        "start ADD eth0",
        "end ADD eth0",
        "start ADD net1",
        "end ADD net1",
        "start DEL net1",
        "end DEL net1",
        "start DEL eth0",
        "end DEL eth0",
      ]);
      const times = lines.map((l) => Number(l[3]));
      expect([...times].sort((a, b) => a - b)).toEqual(times);
      expect(scope.attachmentLeftovers()).toEqual(NOTHING_LEFT);
    });

    it("C2.6 CHECK after ADD succeeds with empty stdout; after net1 is deleted inside the namespace it fails naming the network", async () => {
      const { scope } = t;
      const ns = scope.addNetns();
      const conf = twoBridges(5);
      const env = attachEnv(ns.path, "ctr-check");
      expectOk(await scope.run("ADD", conf, env));
      expectSilentOk(await scope.run("CHECK", conf, env));

      ip(["link", "del", "net1"], { netns: ns.name });
      const err = cniError(await scope.run("CHECK", conf, env));
      expect(err.msg).toContain("bridge-net");
      expect(err.msg).toContain("net1");
      // eth0 still checks out: the failure is net1's alone, and CHECK changed nothing.
      expect(scope.recordFiles()).toEqual(["ctr-check-eth0.json"]);
      expect(scope.ipReservations()).toEqual(["bridge-net/10.211.6.2", "default-net/10.211.5.2"]);

      expectSilentOk(await scope.run("DEL", conf, env));
      expect(scope.attachmentLeftovers()).toEqual(NOTHING_LEFT);
    });

    it("C2.5 B65 DEL twice: both succeed with empty stdout, nothing left", async () => {
      const { scope } = t;
      const ns = scope.addNetns();
      const conf = twoBridges(7);
      const env = attachEnv(ns.path, "ctr-twice");
      expectOk(await scope.run("ADD", conf, env));
      expectSilentOk(await scope.run("DEL", conf, env));
      expect(scope.attachmentLeftovers()).toEqual(NOTHING_LEFT);
      expectSilentOk(await scope.run("DEL", conf, env));
      expect(scope.attachmentLeftovers()).toEqual(NOTHING_LEFT);
    });

    it('K1 B5 C2.5 containerd\'s two DELs: with the netns, then with CNI_NETNS="" after the netns is gone', async () => {
      const { scope } = t;
      const ns = scope.addNetns();
      const conf = twoBridges(9);
      const env = attachEnv(ns.path, "ctr-k1");
      expectOk(await scope.run("ADD", conf, env));
      // StopPodSandbox: DEL with the namespace.
      expectSilentOk(await scope.run("DEL", conf, env));
      expect(scope.attachmentLeftovers()).toEqual(NOTHING_LEFT);
      // RemovePodSandbox: the namespace is closed, DEL again without it.
      scope.deleteNetns(ns);
      expectSilentOk(await scope.run("DEL", conf, { ...env, CNI_NETNS: "" }));
      expect(scope.attachmentLeftovers()).toEqual(NOTHING_LEFT);
    });

    it('B5 C2.5 DEL with CNI_NETNS="" after the namespace was deleted releases the IPs, the record and the cache', async () => {
      const { scope } = t;
      const ns = scope.addNetns();
      const conf = twoBridges(11);
      const env = attachEnv(ns.path, "ctr-nons");
      expectOk(await scope.run("ADD", conf, env));
      scope.deleteNetns(ns);
      // The kernel removed both veth pairs with the namespace; the reservations are still held.
      expect(scope.ipReservations()).toEqual(["bridge-net/10.211.12.2", "default-net/10.211.11.2"]);
      expectSilentOk(await scope.run("DEL", conf, { ...env, CNI_NETNS: "" }));
      expect(scope.attachmentLeftovers()).toEqual(NOTHING_LEFT);
    });

    it("B65 C2.5 DEL without ADD succeeds, prints nothing and creates no state", async () => {
      const { scope } = t;
      const ns = scope.addNetns();
      const conf = twoBridges(13);
      expectSilentOk(await scope.run("DEL", conf, attachEnv(ns.path, "ctr-never")));
      expectSilentOk(await scope.run("DEL", conf, { ...attachEnv("", "ctr-never") }));
      expect(scope.attachmentLeftovers()).toEqual(NOTHING_LEFT);
    });

    it("C2.2 B66 in real runs stdout is one JSON document for ADD, VERSION and errors, and empty for DEL, CHECK, STATUS and GC (no K8S_POD_* args)", async () => {
      const { scope } = t;
      const ns = scope.addNetns();
      const conf = twoBridges(15, { cniVersion: "1.1.0" });
      const env = attachEnv(ns.path, "ctr-stdout");

      const add = expectOk(await scope.run("ADD", conf, env));
      expect(add.cniVersion).toBe("1.1.0");
      const version = expectOk(await scope.run("VERSION", conf));
      expect(version.supportedVersions).toContain("1.1.0");
      expectSilentOk(await scope.run("CHECK", conf, env));
      expectSilentOk(await scope.run("STATUS", conf));
      // Errors: one JSON error object each, in the config's version.
      const unknown = cniError(
        await scope.run("CHECK", conf, { ...env, CNI_CONTAINERID: "ctr-unknown" }),
      );
      expect(unknown).toMatchObject({ cniVersion: "1.1.0", code: 3 });
      const badNetns = cniError(
        await scope.run("ADD", conf, {
          ...env,
          CNI_CONTAINERID: "ctr-other",
          CNI_NETNS: `${ns.path}-gone`,
        }),
      );
      expect(badNetns).toMatchObject({ cniVersion: "1.1.0", code: 4 });
      expectSilentOk(
        await scope.run("GC", {
          ...conf,
          "cni.dev/valid-attachments": [{ containerID: "ctr-stdout", ifname: "eth0" }],
        }),
      );
      expectSilentOk(await scope.run("DEL", conf, env));
      expect(scope.attachmentLeftovers()).toEqual(NOTHING_LEFT);
    });
    it("B48 a repeated ADD of the same container tears the earlier attachments down first: nothing leaks, the new ADD owns everything", async () => {
      const { scope } = t;
      const ns = scope.addNetns();
      const conf = twoBridges(17);
      const env = attachEnv(ns.path, "ctr-again");
      expectOk(await scope.run("ADD", conf, env));
      expect(scope.ipReservations()).toHaveLength(2);
      // The runtime repeats ADD without a DEL (or an earlier ADD was cut short after its record).
      const again = expectOk(await scope.run("ADD", conf, env)) as unknown as Result100;
      expectNetnsMatchesResult(ns, again, { ifName: "eth0" });
      expect(
        links(ns.name)
          .map((l) => l.name)
          .sort(),
      ).toEqual(["eth0", "lo", "net1"]);
      // One reservation per network, not two: the first ADD's addresses were released.
      expect(scope.ipReservations()).toHaveLength(2);
      expect(scope.recordFiles()).toEqual(["ctr-again-eth0.json"]);
      expectSilentOk(await scope.run("DEL", conf, env));
      expect(scope.attachmentLeftovers()).toEqual(NOTHING_LEFT);
    });

    it('K5 B62 a DEL that fails because a delegate\'s state is unreachable never says "not found"; the record is kept for the retry', async () => {
      const { scope } = t;
      const ns = scope.addNetns();
      const conf = twoBridges(19);
      const env = attachEnv(ns.path, "ctr-nf");
      expectOk(await scope.run("ADD", conf, env));
      // Make net1's delegate fail DEL with the plugin's own "... not found" wording: its binary dir
      // is swapped for a shim that answers like a plugin whose link vanished.
      const binDir = join(scope.root, "nf-bin");
      mkdirSync(binDir);
      writeFileSync(
        join(binDir, "bridge"),
        [
          "#!/bin/sh",
          `if [ "$CNI_COMMAND" = DEL ] && [ "$CNI_IFNAME" = net1 ]; then echo ` +
            `'{"cniVersion":"1.0.0","code":999,"msg":"Link not found"}'; exit 1; fi`,
          `exec ${CNI_BIN_DIR}/bridge`,
          "",
        ].join("\n"),
      );
      chmodSync(join(binDir, "bridge"), 0o755);
      const err = cniError(await scope.run("DEL", { ...conf, binDir }, env));
      expect(err.msg).toContain("net1");
      expect(err.msg).not.toMatch(/not found/i);
      expect(scope.recordFiles()).toEqual(["ctr-nf-eth0.json"]);
      // The retry without the shim finishes the job.
      expectSilentOk(await scope.run("DEL", conf, env));
      expect(scope.attachmentLeftovers()).toEqual(NOTHING_LEFT);
    });
  },
);
