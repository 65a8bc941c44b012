/**
 * DEL is idempotent and bounded, played as runtimes play it (M7, K1, C2.5, C2.6; B52, B44): the
 * real dist/plexus, the reference plugins (host-device, bridge, host-local) and wrappers around
 * bridge that misbehave as real plugins do (a slow DEL, a `setsid` grandchild), real namespaces.
 * Subnets 10.224.x.0/24.
 */
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { expect, it } from "vitest";
import { lockPath } from "../../src/store/container-lock";
import { startFakeApiServer, writeKubeconfig } from "../support/fake-apiserver";
import { E2eDaemons } from "../support/e2e-daemon";
import { cniError, TEST_PATH } from "../support/plexus-bin";
import {
  CNI_BIN_DIR,
  describeE2e,
  links,
  NOTHING_LEFT,
  useE2eScope,
  type E2eScope,
} from "../support/netns";
import { bridgeNet, defaultNet, expectOk, expectSilentOk, hostLocal, plexusConf } from "./networks";

const t = useE2eScope();
const settle = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A bin dir with one shell delegate `name` (a wrapper that ends by exec'ing the real bridge). */
function wrapperDir(scope: E2eScope, name: string, body: string): string {
  const dir = join(scope.root, `bin-${name}`);
  mkdirSync(join(dir, "state"), { recursive: true });
  writeFileSync(
    join(dir, name),
    `#!/bin/sh\nS=${join(dir, "state")}\nB=${CNI_BIN_DIR}/bridge\n${body}\nexec $B\n`,
  );
  chmodSync(join(dir, name), 0o755);
  return dir;
}

/**
 * The default network "main" and two secondaries, slow-a and slow-b, whose delegate `slowdel`
 * runs `body` and then the real bridge, on 10.224.<octet>, <octet+1> and <octet+2>.0/24; and the
 * environment of one pod's calls (container ctr-slow) that finds that delegate first.
 */
function slowDelegates(
  scope: E2eScope,
  { octet, body, extra }: { octet: number; body: string; extra: Record<string, unknown> },
) {
  const bin = wrapperDir(scope, "slowdel", body);
  const slow = (name: string, subnet: string) => ({
    ...bridgeNet({ name, bridge: scope.bridgeName(), ipam: hostLocal(scope, subnet) }),
    type: "slowdel",
  });
  const conf = plexusConf(
    scope,
    [
      defaultNet(scope, `10.224.${octet}.0/24`, "main"),
      slow("slow-a", `10.224.${octet + 1}.0/24`),
      slow("slow-b", `10.224.${octet + 2}.0/24`),
    ],
    extra,
  );
  const ns = scope.addNetns();
  const env = {
    CNI_CONTAINERID: "ctr-slow",
    CNI_NETNS: ns.path,
    CNI_IFNAME: "eth0",
    CNI_PATH: `${bin}:${CNI_BIN_DIR}`,
  };
  return { bin, conf, ns, env };
}

const podLinks = (netns: string) =>
  links(netns)
    .map((l) => l.name)
    .filter((n) => n !== "lo")
    .sort();

describeE2e("e2e M7 K1 DEL is idempotent and bounded", () => {
  it("B67 M7 K1 C2.5 ADD, then five DELs with host-device (whose DEL fails once its link is gone): every DEL exits 0, no record or lock file is left", async () => {
    const { scope } = t;
    const [dev] = scope.addVethPair();
    const conf = plexusConf(scope, [
      defaultNet(scope, "10.224.1.0/24"),
      { cniVersion: "1.0.0", name: "hostdev", type: "host-device", device: dev },
    ]);
    const ns = scope.addNetns();
    const env = { CNI_CONTAINERID: "ctr-hd", CNI_NETNS: ns.path, CNI_IFNAME: "eth0" };
    expectOk(await scope.run("ADD", conf, env));
    expect(podLinks(ns.name)).toEqual(["eth0", "net1"]);
    for (const netns of [ns.path, ns.path, "", ns.path, ""]) {
      expectSilentOk(await scope.run("DEL", conf, { ...env, CNI_NETNS: netns }));
      expect(scope.attachmentLeftovers()).toEqual(NOTHING_LEFT);
    }
    // retryDeleteOnError changes nothing here: there is no record, so nothing to retry.
    expectSilentOk(await scope.run("DEL", { ...conf, retryDeleteOnError: true }, env));
    expect(scope.attachmentLeftovers()).toEqual(NOTHING_LEFT);
  });

  it("B68 M7 two secondary networks whose DEL is slow, delTimeoutSeconds 2: the default network's DEL still runs on the first DEL; DEL repeated until exit 0 leaves nothing", async () => {
    const { scope } = t;
    // Slow (5 s) on the first DEL of each interface only: a plugin stuck on something that clears.
    const { conf, ns, env } = slowDelegates(scope, {
      octet: 2,
      body:
        `[ "$CNI_COMMAND" = DEL ] && [ ! -e "$S/$CNI_IFNAME" ] && { touch "$S/$CNI_IFNAME"; ` +
        `sleep 5; }`,
      extra: { delTimeoutSeconds: 2 },
    });
    expectOk(await scope.run("ADD", conf, env));
    const started = Date.now();
    const first = await scope.run("DEL", conf, env);
    expect(Date.now() - started).toBeLessThan(4000);
    expect(cniError(first).msg).toMatch(/slow-b.*slow-a|slow-a.*slow-b/s);
    // The default network got its turn: its veth and its IP are gone already.
    expect(scope.ipReservations().filter((r) => r.startsWith("main/"))).toEqual([]);
    expect(podLinks(ns.name)).toEqual(["net1", "net2"]);
    let attempts = 1;
    for (let r = first; r.code !== 0 && attempts < 5; attempts++)
      r = await scope.run("DEL", conf, env);
    expect(attempts).toBe(2);
    expectSilentOk(await scope.run("DEL", conf, { ...env, CNI_NETNS: "" }));
    expect(scope.attachmentLeftovers()).toEqual(NOTHING_LEFT);
  });

  it("B69 B52 a delegate whose grandchild leaves its session (setsid) and would attach 3 s later: ADD times out and rolls back, DEL exits 0, and 5 s later the netns has only lo and no reservation is left", async () => {
    const { scope } = t;
    const bin = wrapperDir(
      scope,
      "forker",
      `if [ "$CNI_COMMAND" = ADD ]; then
  cat > "$S/conf-$CNI_IFNAME"
  setsid sh -c "sleep 3; exec $B < '$S/conf-$CNI_IFNAME'" &
  exec sleep 1000
fi`,
    );
    const conf = plexusConf(
      scope,
      [
        defaultNet(scope, "10.224.5.0/24", "main"),
        {
          ...bridgeNet({
            name: "late",
            bridge: scope.bridgeName(),
            ipam: hostLocal(scope, "10.224.6.0/24"),
          }),
          type: "forker",
        },
      ],
      { delegateTimeoutSeconds: 1 },
    );
    const ns = scope.addNetns();
    const env = {
      CNI_CONTAINERID: "ctr-setsid",
      CNI_NETNS: ns.path,
      CNI_IFNAME: "eth0",
      CNI_PATH: `${bin}:${CNI_BIN_DIR}`,
    };
    expect(cniError(await scope.run("ADD", conf, env)).code).toBe(101);
    expectSilentOk(await scope.run("DEL", conf, env));
    expectSilentOk(await scope.run("DEL", conf, { ...env, CNI_NETNS: "" }));
    await settle(5000);
    expect(podLinks(ns.name)).toEqual([]);
    expect(scope.attachmentLeftovers()).toEqual(NOTHING_LEFT);
  });

  it("B69 B52 a delegate that succeeds but leaves a detached process behind (setsid, every descriptor closed): the process is gone when ADD returns", async () => {
    const { scope } = t;
    const bin = wrapperDir(
      scope,
      "leaver",
      `[ "$CNI_COMMAND" = ADD ] && setsid sleep 30 </dev/null >/dev/null 2>&1 3>&- &`,
    );
    const conf = plexusConf(scope, [{ ...defaultNet(scope, "10.224.11.0/24"), type: "leaver" }]);
    const ns = scope.addNetns();
    const env = {
      CNI_CONTAINERID: "ctr-leaver",
      CNI_NETNS: ns.path,
      CNI_IFNAME: "eth0",
      CNI_PATH: `${bin}:${CNI_BIN_DIR}`,
    };
    expectOk(await scope.run("ADD", conf, env));
    expect(scope.processes()).toEqual([]);
    expectSilentOk(await scope.run("DEL", conf, env));
    expect(scope.attachmentLeftovers()).toEqual(NOTHING_LEFT);
  });

  it("B70 B44 C2.5 a full 64 KiB tmpfs cniDir: DEL of a recorded container succeeds, DEL with no record exits 0, ADD fails with 5 (never 999) and leaves nothing", async () => {
    const { scope } = t;
    mkdirSync(scope.cniDir, { recursive: true });
    execFileSync("mount", ["-t", "tmpfs", "-o", "size=64k", "tmpfs", scope.cniDir]);
    try {
      const conf = plexusConf(scope, [defaultNet(scope, "10.224.7.0/24")]);
      const ns = scope.addNetns();
      const env = { CNI_CONTAINERID: "ctr-full", CNI_NETNS: ns.path, CNI_IFNAME: "eth0" };
      expectOk(await scope.run("ADD", conf, env));
      fill(join(scope.cniDir, "filler"));
      expectSilentOk(await scope.run("DEL", conf, env));
      expect(podLinks(ns.name)).toEqual([]);
      for (const netns of [ns.path, ""])
        expectSilentOk(await scope.run("DEL", conf, { ...env, CNI_NETNS: netns }));
      fill(join(scope.cniDir, "filler2")); // what the DELs freed
      const add = cniError(await scope.run("ADD", conf, env));
      expect(add.code, add.msg).toBe(5);
      expect(add.msg).toMatch(/ENOSPC/);
      expectSilentOk(await scope.run("DEL", conf, env));
      expect(scope.attachmentLeftovers()).toEqual(NOTHING_LEFT);
    } finally {
      execFileSync("umount", ["-l", scope.cniDir]);
    }
  });

  it("C2.6 CHECK with a Plexus config of cniVersion 0.3.1: error code 1, as libcni's skel answers", async () => {
    const { scope } = t;
    const conf = {
      ...plexusConf(scope, [defaultNet(scope, "10.224.8.0/24")]),
      cniVersion: "0.3.1",
    };
    const ns = scope.addNetns();
    const env = { CNI_CONTAINERID: "ctr-check", CNI_NETNS: ns.path, CNI_IFNAME: "eth0" };
    expectOk(await scope.run("ADD", conf, env));
    const check = cniError(await scope.run("CHECK", conf, env));
    expect(check).toMatchObject({ code: 1, cniVersion: "0.3.1" });
    expect(check.msg).toContain("config version does not allow CHECK");
    expectSilentOk(await scope.run("DEL", conf, env));
    expect(scope.attachmentLeftovers()).toEqual(NOTHING_LEFT);
  });
});

/** The slow delegate: 3 s on every DEL. */
const SLEEP_ON_DEL = `[ "$CNI_COMMAND" = DEL ] && sleep 3`;

/**
 * Housekeeping of a DEL that keeps failing (M7, K1): two secondary networks whose DEL takes 3 s
 * (a wrapper that sleeps, then execs the real bridge, logging each call), `delTimeoutSeconds` 2,
 * no `retryDeleteOnError`. Both runtime DELs fail on them; the second answers 0 and keeps them
 * pending; housekeeping with a budget of its own (GC, or the daemon's timer) tears them down.
 */
describeE2e(
  "e2e M7 K1 a DEL slower than its deadline: the runtime's DELs end, housekeeping finishes",
  () => {
    const slowSetup = (scope: E2eScope, octet: number) => {
      const { bin, conf, ns, env } = slowDelegates(scope, {
        octet,
        body: `echo "$CNI_COMMAND $CNI_CONTAINERID $CNI_IFNAME" >> "$S/calls"\n${SLEEP_ON_DEL}`,
        extra: { delTimeoutSeconds: 2, cniVersion: "1.1.0" },
      });
      const callLog = join(bin, "state", "calls");
      /** The slow delegate's DEL calls so far. */
      const dels = () => {
        const lines = (existsSync(callLog) ? readFileSync(callLog, "utf8") : "").split("\n");
        return lines.filter((l) => l.startsWith("DEL "));
      };
      return { bin, conf, ns, env, dels };
    };

    /**
     * ADD, then DEL until it answers 0: the first fails, the second answers 0, both kept pending.
     */
    async function delUntilZero(
      scope: E2eScope,
      setUp: ReturnType<typeof slowSetup>,
    ): Promise<void> {
      expectOk(await scope.run("ADD", setUp.conf, setUp.env));
      const first = cniError(await scope.run("DEL", setUp.conf, setUp.env));
      expect(first.msg).toMatch(/slow-b.*slow-a|slow-a.*slow-b/s);
      expectSilentOk(await scope.run("DEL", setUp.conf, setUp.env));
      // Nothing forgotten: the record keeps both secondaries, pending; their addresses stay
      // reserved.
      expect(scope.recordFiles()).toHaveLength(1);
      expect(scope.attachmentLeftovers().pendingFiles).toHaveLength(1);
      expect(
        scope
          .ipReservations()
          .map((r) => r.split("/")[0])
          .sort(),
      ).toEqual(["slow-a", "slow-b"]);
    }

    it("M7 M13 K1 without the daemon: an ADD of another pod runs no retry; DEL answers 0 on its second call, keeping what failed; GC tears it down and nothing is left", async () => {
      const { scope } = t;
      const s = slowSetup(scope, 12);
      expectOk(await scope.run("ADD", s.conf, s.env));
      expect(cniError(await scope.run("DEL", s.conf, s.env)).code).not.toBe(0);
      // A plain pod's ADD on the node, with a pending record due at once (failedDelRetrySeconds 0):
      // it retries nothing (the slow delegate's DEL is not called during it).
      const plainNet = defaultNet(scope, "10.224.15.0/24", "plain");
      const plain = plexusConf(scope, [plainNet], { delTimeoutSeconds: 2 });
      const plainNs = scope.addNetns();
      const plainEnv = { ...s.env, CNI_CONTAINERID: "ctr-plain", CNI_NETNS: plainNs.path };
      const before = s.dels().length;
      expectOk(await scope.run("ADD", { ...plain, failedDelRetrySeconds: 0 }, plainEnv));
      expect(s.dels().length).toBe(before);
      expectSilentOk(await scope.run("DEL", s.conf, s.env));
      expect(scope.recordFiles().filter((f) => f.startsWith("ctr-slow"))).toHaveLength(1);
      expect(scope.ipReservations().filter((r) => r.startsWith("slow-")).length).toBe(2);
      // The runtime removes the sandbox once DEL answered 0: the namespace (and the veths) go.
      scope.deleteNetns(s.ns);
      expectSilentOk(await scope.run("DEL", plain, plainEnv));
      const gcConf = { ...s.conf, "cni.dev/valid-attachments": [] };
      const gc = await scope.run("GC", gcConf, { CNI_PATH: s.env.CNI_PATH });
      expectSilentOk(gc);
      expect(scope.attachmentLeftovers()).toEqual(NOTHING_LEFT);
    });

    it("M7 M13 K1 with the daemon: DEL until it answers 0, then the daemon's housekeeping timer tears the rest down; nothing is left", async () => {
      const { scope } = t;
      const s = slowSetup(scope, 16);
      await delUntilZero(scope, s);
      scope.deleteNetns(s.ns);
      const confDir = join(scope.root, "net.d");
      mkdirSync(confDir, { recursive: true });
      writeFileSync(join(confDir, "00-plexus.conf"), JSON.stringify(s.conf));
      const daemon = await startHousekeepingDaemon(scope, { confDir, cniPath: s.env.CNI_PATH });
      try {
        await expect
          .poll(() => scope.recordFiles(), { timeout: 25_000, interval: 200 })
          .toEqual([]);
      } finally {
        await daemon.stop();
      }
      expect(scope.attachmentLeftovers()).toEqual(NOTHING_LEFT);
    });
  },
);

/** `dist/plexus daemon` before the fake API server, with its housekeeping timer every second. */
async function startHousekeepingDaemon(
  scope: E2eScope,
  paths: { confDir: string; cniPath: string },
): Promise<{ stop(): Promise<void> }> {
  const api = await startFakeApiServer();
  const kubeconfig = writeKubeconfig(api, { dir: scope.root, tokenFile: true });
  const socket = join(scope.root, "plexus.sock");
  const extraArgs = ["--housekeeping-interval", "1", "--cni-conf-dir", paths.confDir];
  extraArgs.push("--cni-path", paths.cniPath);
  const daemons = new E2eDaemons();
  const stop = async () => {
    await daemons.stopAll();
    await api.close();
  };
  try {
    await daemons.start(scope, { kubeconfig, socket, extraArgs });
  } catch (err) {
    await stop();
    throw err;
  }
  return { stop };
}

describeE2e("e2e B81 the lock waiter kills only a dead call's leftovers", () => {
  /**
   * A lock file whose owner (pid 2^22+1, never a live pid here) is dead, held by `flock -x …
   * sleep`.
   */
  function holdLock(
    scope: E2eScope,
    containerId: string,
    mark: Record<string, string>,
  ): ChildProcess {
    const path = lockPath(scope.cniDir, containerId, "eth0");
    mkdirSync(dirname(path), { recursive: true });
    writeFileSync(path, JSON.stringify({ pid: 4194305, verb: "ADD", marker: "dead-owner-mark" }));
    const [mk, mv] = scope.marker.split("=") as [string, string];
    const holder = spawn("flock", ["-x", path, "sleep", "30"], {
      env: { PATH: TEST_PATH, [mk]: mv, ...mark },
      stdio: "ignore",
      detached: true,
    });
    return holder;
  }

  it("B81 a running process that took the lock itself is not killed, whatever dead owner the lock file names: DEL waits to its deadline (11); once it lets go, DEL succeeds", async () => {
    const { scope } = t;
    const conf = plexusConf(scope, [defaultNet(scope, "10.224.9.0/24")], { delTimeoutSeconds: 1 });
    const holder = holdLock(scope, "ctr-foreign", {});
    await settle(200);
    const env = { CNI_CONTAINERID: "ctr-foreign", CNI_NETNS: "", CNI_IFNAME: "eth0" };
    expect(cniError(await scope.run("DEL", conf, env)).code).toBe(11);
    expect(holder.exitCode).toBeNull();
    // flock and its sleep hold the file: the test lets go of both (their process group).
    process.kill(-holder.pid!, "SIGKILL");
    await new Promise((r) => holder.once("exit", r));
    expectSilentOk(await scope.run("DEL", conf, env));
    expect(scope.attachmentLeftovers()).toEqual(NOTHING_LEFT);
  });

  // A dead call's leftovers are found by the lock's identity (the flock their descriptor holds was
  // taken by a process that is gone), never by their environment: a live process that took the
  // lock itself is another call, whatever mark it carries (lifecycle.test.ts covers the leftovers).
  it("B81 a live process that took the lock itself, even with the dead owner's mark, is not killed: DEL waits (11)", async () => {
    const { scope } = t;
    const conf = plexusConf(scope, [defaultNet(scope, "10.224.10.0/24")], { delTimeoutSeconds: 1 });
    const holder = holdLock(scope, "ctr-marked", { PLEXUS_CALL: "dead-owner-mark" });
    await settle(200);
    const env = { CNI_CONTAINERID: "ctr-marked", CNI_NETNS: "", CNI_IFNAME: "eth0" };
    expect(cniError(await scope.run("DEL", conf, env)).code).toBe(11);
    expect(holder.exitCode).toBeNull();
    process.kill(-holder.pid!, "SIGKILL");
    await new Promise((r) => holder.once("exit", r));
    expectSilentOk(await scope.run("DEL", conf, env));
    expect(scope.attachmentLeftovers()).toEqual(NOTHING_LEFT);
  });
});

/** Writes zeros to `path` until the file system is full. */
function fill(path: string): void {
  try {
    writeFileSync(path, Buffer.alloc(1024 * 1024));
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "ENOSPC") throw err;
  }
}
