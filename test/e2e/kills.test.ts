/**
 * The runtime's deadline and overlapping calls, played for real (B64, B81, K1): the real
 * dist/plexus, the real bridge and host-local, real SIGKILLs of Plexus only (as containerd kills
 * it: its delegates are not the runtime's to kill), and the runtime's DELs right after. The
 * container's lock, inherited by every delegate, is what makes these end clean. Subnets 10.223.x.
 */
import { chmodSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { expect, it } from "vitest";
import { runPlexus, type RunResult } from "../support/plexus-bin";
import {
  CNI_BIN_DIR,
  describeE2e,
  NOTHING_LEFT,
  useE2eScope,
  type E2eScope,
  type Netns,
} from "../support/netns";
import { bridgeNet, defaultNet, expectSilentOk, hostLocal, plexusConf } from "./networks";

const t = useE2eScope();

/**
 * A delegate named `slowbridge`: on ADD it sleeps first, then becomes /usr/lib/cni/bridge (a shell
 * in between, as wrappers are); other verbs go straight to bridge, so the runtime's DEL is quick.
 */
function slowBridgeDir(scope: E2eScope, sleepSeconds: number): string {
  const dir = join(scope.root, "slowbin");
  mkdirSync(dir, { recursive: true });
  const path = join(dir, "slowbridge");
  writeFileSync(
    path,
    `#!/bin/sh\n[ "$CNI_COMMAND" = ADD ] && sleep ${sleepSeconds}\nexec ${CNI_BIN_DIR}/bridge ` +
      `"$@"\n`,
  );
  chmodSync(path, 0o755);
  return dir;
}

function run(
  scope: E2eScope,
  verb: string,
  conf: unknown,
  env: Record<string, string>,
  onSpawn?: (pid: number) => void,
): Promise<RunResult> {
  return runPlexus({
    env: scope.env(verb, env),
    stdin: JSON.stringify(conf),
    timeoutMs: 30_000,
    ...(onSpawn ? { onSpawn } : {}),
  });
}

const settle = (ms: number) => new Promise((r) => setTimeout(r, ms));

describeE2e("e2e B64 the runtime's SIGKILL and overlapping calls leave nothing behind", () => {
  it("B64 K1 Plexus SIGKILLed while a delegate is still starting, then the runtime's DELs: the orphaned delegate never attaches after the DEL (8 rounds, kills 50–450 ms into ADD)", async () => {
    const { scope } = t;
    const slow = slowBridgeDir(scope, 0.5);
    for (let round = 0; round < 8; round++) {
      const conf = plexusConf(scope, [
        { ...defaultNet(scope, `10.223.${round}.0/24`), type: "slowbridge" },
      ]);
      const ns: Netns = scope.addNetns();
      const env = {
        CNI_CONTAINERID: `ctr-kill-${round}`,
        CNI_NETNS: ns.path,
        CNI_IFNAME: "eth0",
        CNI_PATH: `${slow}:${CNI_BIN_DIR}`,
      };
      const killAfter = 50 + Math.floor((400 * round) / 7);
      const add = await run(
        scope,
        "ADD",
        conf,
        env,
        (pid) => void setTimeout(() => process.kill(pid, "SIGKILL"), killAfter),
      );
      expect(add.signal, `round ${round}: plexus was killed ${killAfter} ms into ADD`).toBe(
        "SIGKILL",
      );
      expectSilentOk(await run(scope, "DEL", conf, env));
      expectSilentOk(await run(scope, "DEL", conf, { ...env, CNI_NETNS: "" }));
      // Longer than the orphan would have needed to wake up and attach.
      await settle(700);
      expect(scope.attachmentLeftovers(), `round ${round}`).toEqual(NOTHING_LEFT);
    }
  });

  it("ADD and DEL of one container at once (10 rounds): they run one after the other, and after the runtime's last DEL nothing is left", async () => {
    const { scope } = t;
    for (let round = 0; round < 10; round++) {
      const conf = plexusConf(scope, [
        defaultNet(scope, `10.223.${20 + round}.0/24`),
        bridgeNet({
          name: "second",
          bridge: scope.bridgeName(),
          ipam: hostLocal(scope, `10.223.${40 + round}.0/24`),
        }),
      ]);
      const ns = scope.addNetns();
      const env = { CNI_CONTAINERID: `ctr-race-${round}`, CNI_NETNS: ns.path, CNI_IFNAME: "eth0" };
      const [add, del] = await Promise.all([
        run(scope, "ADD", conf, env),
        settle(round * 15).then(() => run(scope, "DEL", conf, env)),
      ]);
      expect(add.code, `round ${round} ADD: ${add.stdout}`).toBe(0);
      expect(del.code, `round ${round} DEL: ${del.stdout}`).toBe(0);
      // The runtime goes on as after any sandbox: StopPodSandbox's DEL, the netns removed,
      // RemovePodSandbox's DEL.
      expectSilentOk(await run(scope, "DEL", conf, env));
      expect(scope.attachmentLeftovers(), `round ${round}`).toEqual(NOTHING_LEFT);
      scope.deleteNetns(ns);
      expectSilentOk(await run(scope, "DEL", conf, { ...env, CNI_NETNS: "" }));
      expect(scope.attachmentLeftovers(), `round ${round}`).toEqual(NOTHING_LEFT);
    }
  });

  it("two ADDs of one container at once: both answer, the second replaces the first, and one DEL leaves nothing (IPs, record, cache, lock)", async () => {
    const { scope } = t;
    const conf = plexusConf(scope, [defaultNet(scope, "10.223.60.0/24")]);
    const ns = scope.addNetns();
    const env = { CNI_CONTAINERID: "ctr-twice", CNI_NETNS: ns.path, CNI_IFNAME: "eth0" };
    const both = await Promise.all([run(scope, "ADD", conf, env), run(scope, "ADD", conf, env)]);
    for (const r of both) expect(r.code, r.stdout).toBe(0);
    expect(scope.ipReservations()).toHaveLength(1);
    expect(scope.recordFiles()).toEqual(["ctr-twice-eth0.json"]);
    expectSilentOk(await run(scope, "DEL", conf, env));
    expect(scope.attachmentLeftovers()).toEqual(NOTHING_LEFT);
  });
});
