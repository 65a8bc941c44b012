/**
 * M12: Multus 4.3's auxiliary CNI chain: loaded from `<directory of clusterNetwork>/<name>/*.conf`
 * in name order behind a passthru Plexus answers for itself, planned after the pod's networks on
 * `net<N>` for ADD only, and refused by name when it can never run.
 */
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, truncateSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { parseEnv, type CniRequest } from "../../../src/cni/env";
import { parsePlexusConf, type PlexusConf } from "../../../src/config/plugin-conf";
import {
  addNetworkList,
  delNetworkList,
  isBuiltinPassthru,
  type RuntimeConf,
} from "../../../src/libcni/conflist";
import { vouch, vouchForAdd } from "../../../src/libcni/vouch";
import { silentLogger } from "../../../src/log/logger";
import { eagerLoaders } from "../../../src/ops/loaders";
import { loadAuxiliaryChain } from "../../../src/planning/aux-chain";
import { FsNetworkSource } from "../../../src/planning/network-source";
import { planForPod } from "../../../src/planning/pod-plan";
import { FakeExec, fakeDeps } from "../../fakes/fake-exec";
import { FakeKube } from "../../fakes/fake-kube";

let confDir: string;
beforeEach(() => {
  confDir = mkdtempSync(join(tmpdir(), "plx-aux-"));
  writeFileSync(
    join(confDir, "10-cbr0.conflist"),
    JSON.stringify({ cniVersion: "1.0.0", name: "cbr0", plugins: [{ type: "bridge" }] }),
  );
});
afterEach(() => rmSync(confDir, { recursive: true, force: true }));

function conf(extra: Record<string, unknown> = {}): PlexusConf {
  return parsePlexusConf({
    cniVersion: "1.0.0",
    name: "plexus",
    clusterNetwork: join(confDir, "10-cbr0.conflist"),
    confDir,
    auxiliaryCNIChainName: "chain",
    withoutKubernetes: true,
    ...extra,
  });
}
function chainFile(name: string, value: unknown): void {
  mkdirSync(join(confDir, "chain"), { recursive: true });
  writeFileSync(
    join(confDir, "chain", name),
    typeof value === "string" ? value : JSON.stringify(value),
  );
}
const req = (command: string, args = "IgnoreUnknown=1"): CniRequest =>
  parseEnv({
    CNI_COMMAND: command,
    CNI_CONTAINERID: "ctr1",
    CNI_NETNS: "/proc/self/ns/net",
    CNI_IFNAME: "eth0",
    CNI_PATH: "/opt/cni/bin",
    CNI_ARGS: args,
  });
const load = (conf: PlexusConf) =>
  loadAuxiliaryChain(conf, new FsNetworkSource(conf.confDir, undefined));

describe("M12 the auxiliary chain", () => {
  it("M12 the .conf files of <dir of clusterNetwork>/<name>/, in name order, behind the passthru; other files ignored", async () => {
    chainFile("20-second.conf", {
      cniVersion: "0.3.1",
      name: "b",
      type: "tuning",
      sysctl: { a: "1" },
    });
    chainFile("10-first.conf", { name: "a", Type: "bandwidth" });
    chainFile("30-not-a-conf.json", { type: "ignored" });
    chainFile("40-nor-this.conflist", { type: "ignored" });
    const chain = await load(conf());
    expect(chain).toEqual({
      cniVersion: "1.0.0",
      name: "chain",
      plugins: [
        { type: "passthru", name: "passthru-cni" },
        { name: "a", type: "bandwidth" },
        { cniVersion: "0.3.1", name: "b", type: "tuning", sysctl: { a: "1" } },
      ],
    });
  });

  it("M12 no directory, or one without .conf files: no chain (as Multus: the passthru alone never runs)", async () => {
    expect(await load(conf())).toBeUndefined();
    chainFile("x.json", { type: "tuning" });
    expect(await load(conf())).toBeUndefined();
  });

  it.each([
    [
      "a clusterNetwork that is not a path",
      { clusterNetwork: "cbr0" },
      /needs "clusterNetwork" to be a file path/,
    ],
    [
      "a name that cannot be a directory",
      { auxiliaryCNIChainName: "../etc" },
      /not a network name that can be a directory/,
    ],
  ])("M12 %s is refused with 7", async (_what, extra, message) => {
    await expect(load(conf(extra))).rejects.toMatchObject({
      code: 7,
      message: expect.stringMatching(message),
    });
  });

  it("M12 a chain file that is not JSON or has no type fails the ADD (7) naming the file (Multus would skip the chain)", async () => {
    chainFile("a.conf", "{nope");
    await expect(load(conf())).rejects.toMatchObject({
      code: 7,
      message: expect.stringContaining("chain/a.conf"),
    });
    rmSync(join(confDir, "chain"), { recursive: true });
    chainFile("b.conf", { name: "x" });
    await expect(load(conf())).rejects.toMatchObject({
      code: 7,
      message: expect.stringMatching(/b\.conf.*no "type"/),
    });
  });

  it("M12 B72 a FIFO, a directory or an oversized file named *.conf fails the ADD (7) naming it and what it is, never skipped", async () => {
    chainFile("10-ok.conf", { type: "tuning" });
    execFileSync("mkfifo", [join(confDir, "chain", "20-fifo.conf")]);
    const source = new FsNetworkSource(confDir, undefined);
    await expect(loadAuxiliaryChain(conf(), source)).rejects.toMatchObject({
      code: 7,
      message: expect.stringMatching(/20-fifo\.conf cannot be read: it is a FIFO, not a regular/),
    });
    rmSync(join(confDir, "chain", "20-fifo.conf"));
    mkdirSync(join(confDir, "chain", "30-dir.conf"));
    await expect(loadAuxiliaryChain(conf(), source)).rejects.toMatchObject({
      message: expect.stringMatching(/30-dir\.conf cannot be read: it is a directory/),
    });
    rmSync(join(confDir, "chain", "30-dir.conf"), { recursive: true });
    chainFile("40-big.conf", "");
    truncateSync(join(confDir, "chain", "40-big.conf"), 2 * 1024 * 1024);
    await expect(loadAuxiliaryChain(conf(), source)).rejects.toMatchObject({
      message: expect.stringMatching(/40-big\.conf cannot be read: it is 2097152 bytes, more than/),
    });
  });

  it("M12 ADD plans it after the pod's networks on net<N>; DEL and a config without the key plan none", async () => {
    chainFile("t.conf", { type: "tuning" });
    const kube = new FakeKube();
    kube.addPod("app", "web", { "k8s.v1.cni.cncf.io/networks": "net-a" });
    kube.addNad("app", "net-a", { cniVersion: "1.0.0", name: "net-a", type: "bridge" });
    const ctx = { kube: async () => kube, log: silentLogger(), load: eagerLoaders };
    const podArgs = "IgnoreUnknown=1;K8S_POD_NAMESPACE=app;K8S_POD_NAME=web";
    const add = await planForPod(req("ADD", podArgs), conf(), ctx);
    expect(add.attachments.map((a) => [a.network, a.ifName, a.auxiliary ?? false])).toEqual([
      ["cbr0", "eth0", false],
      ["app/net-a", "net1", false],
      ["chain", "net2", true],
    ]);
    expect((await planForPod(req("DEL", podArgs), conf(), ctx)).attachments).toHaveLength(2);
    expect(
      (await planForPod(req("ADD", podArgs), conf({ auxiliaryCNIChainName: "" }), ctx)).attachments,
    ).toHaveLength(2);
    // A call without a pod gets it too: "for every pod".
    expect((await planForPod(req("ADD"), conf(), ctx)).attachments.map((a) => a.ifName)).toEqual([
      "eth0",
      "net1",
    ]);
  });
});

describe("M12 the passthru plugin, answered by Plexus", () => {
  const rt: RuntimeConf = {
    containerId: "ctr1",
    netns: "/proc/self/ns/net",
    ifName: "net2",
    args: "IgnoreUnknown=1",
    path: ["/opt/cni/bin"],
    capabilityArgs: {},
    baseEnv: { PATH: "/usr/bin" },
    deadlineMs: 1000,
  };
  const chain = {
    cniVersion: "1.0.0",
    name: "chain",
    plugins: [{ type: "passthru", name: "passthru-cni" }, { type: "tuning" }],
  };

  it("M12 no passthru binary runs; the next plugin gets an empty prevResult; DEL runs only the real plugins", async () => {
    const exec = new FakeExec(["tuning"]);
    exec.on({ command: "ADD", type: "tuning" }, { result: {} });
    const deps = fakeDeps(exec);
    try {
      await addNetworkList(vouchForAdd(chain), rt, deps);
      expect(exec.lookups.map((l) => l.type)).toEqual(["tuning"]);
      expect(exec.calls[0]!.stdin.prevResult).toEqual({
        cniVersion: "1.0.0",
        interfaces: [],
        ips: [],
        routes: [],
        dns: {},
      });
      await delNetworkList(vouch(chain), rt, deps);
      expect(exec.calls.map((c) => `${c.command} ${c.type}`)).toEqual(["ADD tuning", "DEL tuning"]);
    } finally {
      deps.dispose();
    }
    expect(isBuiltinPassthru({ type: "passthru" })).toBe(false);
  });
});
