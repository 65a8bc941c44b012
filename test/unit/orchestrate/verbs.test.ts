/**
 * The verbs over a FakeExec (no processes): order, rollback, records, the result cache and what
 * each delegate is given. The same behaviours run through the binary and real plugins in the
 * integration and e2e tiers.
 */
import { existsSync, readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { parseEnv } from "../../../src/cni/env";
import type { CniError } from "../../../src/cni/errors";
import { parsePlexusConf, type PlexusConf } from "../../../src/config/plugin-conf";
import { cmdAdd } from "../../../src/orchestrate/add";
import { cmdCheck } from "../../../src/orchestrate/check";
import { cmdDel } from "../../../src/orchestrate/del";
import { delegatePath } from "../../../src/nodestate/runtime-conf";
import { cmdGc } from "../../../src/orchestrate/gc";
import { cmdStatus } from "../../../src/orchestrate/status";
import { cniRequest, FakeExec, fakeDeps } from "../../fakes/fake-exec";

const NETNS = "/proc/self/ns/net";

const req = cniRequest;

function conf(extra: Record<string, unknown> = {}, version = "1.0.0"): PlexusConf {
  return parsePlexusConf({
    cniVersion: version,
    name: "plexus",
    type: "plexus",
    runtimeConfig: { portMappings: [{ hostPort: 80 }], bandwidth: { ingressRate: 1 } },
    delegates: [
      { cniVersion: "1.0.0", name: "cluster", type: "bridge", ipam: { type: "host-local" } },
      {
        cniVersion: "1.0.0",
        name: "blue",
        plugins: [{ type: "macvlan", capabilities: { portMappings: true } }, { type: "tuning" }],
      },
      { cniVersion: "0.4.0", name: "green", type: "bridge" },
    ],
    ...extra,
  });
}

let exec: FakeExec;
let deps: ReturnType<typeof fakeDeps>;
beforeEach(() => {
  exec = new FakeExec();
  deps = fakeDeps(exec);
});
afterEach(() => deps.dispose());

const records = () =>
  existsSync(join(deps.cniDir, "records"))
    ? readdirSync(join(deps.cniDir, "records")).filter((n) => !n.startsWith("."))
    : [];
const results = () =>
  existsSync(join(deps.cniDir, "results"))
    ? readdirSync(join(deps.cniDir, "results")).filter((n) => !n.startsWith("."))
    : [];

describe("ADD", () => {
  it("N6.2 N7.3 the default network first on CNI_IFNAME, then net1, net2, one at a time; C3.1 plugins of a list in order", async () => {
    exec.on(
      { type: "macvlan" },
      {
        result: {
          interfaces: [{ name: "net1", sandbox: NETNS }],
          ips: [{ address: "10.9.0.2/24", interface: 0 }],
        },
      },
      5,
    );
    await cmdAdd(req("ADD"), conf(), deps);
    expect(exec.summary()).toEqual([
      "ADD eth0 bridge",
      "ADD net1 macvlan",
      "ADD net1 tuning",
      "ADD net2 bridge",
    ]);
    expect(exec.overlapped).toBe(false);
    for (let i = 1; i < exec.calls.length; i++)
      expect(exec.calls[i]!.start).toBeGreaterThanOrEqual(exec.calls[i - 1]!.end);
  });

  it("N7.1 C3.1 C3.2 C4.1 each plugin gets the list's name and version, the previous result, only its declared capabilities, and the runtime's env", async () => {
    await cmdAdd(req("ADD"), conf(), deps);
    const [, macvlan, tuning] = exec.calls;
    expect(macvlan!.stdin).toMatchObject({
      name: "blue",
      cniVersion: "1.0.0",
      type: "macvlan",
      runtimeConfig: { portMappings: [{ hostPort: 80 }] },
    });
    expect(macvlan!.stdin).not.toHaveProperty("capabilities");
    expect(macvlan!.stdin).not.toHaveProperty("prevResult");
    expect(tuning!.stdin).not.toHaveProperty("runtimeConfig");
    expect(tuning!.stdin.prevResult).toMatchObject({
      cniVersion: "1.0.0",
      interfaces: [{ name: "net1" }],
    });
    expect(macvlan!.env).toMatchObject({
      CNI_COMMAND: "ADD",
      CNI_CONTAINERID: "ctr1",
      CNI_NETNS: NETNS,
      CNI_IFNAME: "net1",
      CNI_ARGS: "IgnoreUnknown=1",
      CNI_PATH: "/opt/cni/bin",
      KEEP_ME: "1",
    });
  });

  it("M1 binDir is searched before CNI_PATH", async () => {
    await cmdAdd(req("ADD"), conf({ binDir: "/plexus/bin" }), deps);
    expect(exec.calls[0]!.env.CNI_PATH).toBe("/plexus/bin:/opt/cni/bin");
  });

  it("C2.4 the printed result is the default network's, in the config's cniVersion", async () => {
    for (const v of ["0.2.0", "0.3.1", "0.4.0", "1.1.0"]) {
      const out = await cmdAdd(
        req("ADD", { CNI_CONTAINERID: `c${v.replaceAll(".", "")}` }),
        conf({}, v),
        deps,
      );
      expect(out.result.cniVersion).toBe(v);
      expect(JSON.stringify(out.result)).toContain("10.0.");
    }
  });

  it("M7 the record is on disk before the first delegate runs, and lists every attachment", async () => {
    let seen: string[] = [];
    exec.onCall = () => {
      if (seen.length === 0) seen = records();
    };
    await cmdAdd(req("ADD"), conf(), deps);
    expect(seen).toEqual(["ctr1-eth0.json"]);
    const read = await deps.records.read("ctr1", "eth0");
    expect(
      read.state === "found" && read.record.attachments.map((a) => `${a.network}@${a.ifName}`),
    ).toEqual(["cluster@eth0", "blue@net1", "green@net2"]);
    expect(results().sort()).toEqual(["blue-ctr1-net1", "cluster-ctr1-eth0", "green-ctr1-net2"]);
  });

  it("N7.2 C4.1 the first failure stops the ADD; what was attached is torn down in reverse, the failing delegate included; nothing is left", async () => {
    exec.on({ command: "ADD", type: "tuning" }, { error: { code: 11, msg: "busy" } });
    const err = await cmdAdd(req("ADD"), conf(), deps).catch((e: unknown) => e as CniError);
    expect(err).toMatchObject({
      code: 11,
      message: expect.stringContaining('network "blue" (net1)'),
    });
    expect(exec.summary()).toEqual([
      "ADD eth0 bridge",
      "ADD net1 macvlan",
      "ADD net1 tuning",
      "DEL net1 tuning",
      "DEL net1 macvlan",
      "DEL eth0 bridge",
    ]);
    expect(records()).toEqual([]);
    expect(results()).toEqual([]);
  });

  it("B60 K5 a default network result without an IP fails the ADD and tears everything down", async () => {
    exec.on(
      { command: "ADD", ifName: "eth0" },
      { result: { interfaces: [{ name: "eth0", sandbox: NETNS }] } },
    );
    await expect(cmdAdd(req("ADD"), conf(), deps)).rejects.toMatchObject({ code: 103 });
    expect(exec.summary().filter((s) => s.startsWith("DEL"))).toEqual([
      "DEL net2 bridge",
      "DEL net1 tuning",
      "DEL net1 macvlan",
      "DEL eth0 bridge",
    ]);
    expect(records()).toEqual([]);
  });

  it("M2 a clusterNetwork that resolves to nothing fails ADD with 7 naming it, runs nothing and leaves no record", async () => {
    const c = parsePlexusConf({
      cniVersion: "1.0.0",
      name: "p",
      clusterNetwork: "cbr0",
      confDir: deps.cniDir,
    });
    await expect(cmdAdd(req("ADD"), c, deps)).rejects.toMatchObject({
      code: 7,
      message: expect.stringContaining("clusterNetwork"),
    });
    expect(exec.calls).toEqual([]);
    expect(records()).toEqual([]);
  });

  it("B44 an unwritable cniDir fails with 5 before any delegate runs", async () => {
    writeFileSync(join(deps.cniDir, "records"), "not a dir");
    await expect(cmdAdd(req("ADD"), conf(), deps)).rejects.toMatchObject({ code: 5 });
    expect(exec.calls).toEqual([]);
  });
});

describe("DEL", () => {
  it("C2.5 C3.1 every attachment in reverse, plugins of a list in reverse, each with its cached result as prevResult (≥ 0.4.0)", async () => {
    await cmdAdd(req("ADD"), conf(), deps);
    exec.calls.length = 0;
    await cmdDel(req("DEL"), conf(), deps);
    expect(exec.summary()).toEqual([
      "DEL net2 bridge",
      "DEL net1 tuning",
      "DEL net1 macvlan",
      "DEL eth0 bridge",
    ]);
    expect(exec.calls[0]!.stdin.prevResult).toMatchObject({
      cniVersion: "0.4.0",
      ips: [{ version: "4" }],
    });
    expect(exec.calls[3]!.stdin.prevResult).toMatchObject({ interfaces: [{ name: "eth0" }] });
    expect(records()).toEqual([]);
    expect(results()).toEqual([]);
  });

  it("N7.2 B62 one failure does not stop the others; the error names every failure; record and that cache entry are kept for the retry", async () => {
    await cmdAdd(req("ADD"), conf(), deps);
    exec.on(
      { command: "DEL", type: "macvlan" },
      { error: { code: 999, msg: "macvlan DEL broke" } },
    );
    exec.on({ command: "DEL", ifName: "eth0" }, { error: { code: 5, msg: "bridge DEL broke" } });
    const err = await cmdDel(req("DEL"), conf(), deps).catch((e: unknown) => e as CniError);
    expect((err as CniError).message).toMatch(/macvlan DEL broke.*bridge DEL broke/);
    expect(exec.summary().filter((s) => s.startsWith("DEL"))).toEqual([
      "DEL net2 bridge",
      "DEL net1 tuning",
      "DEL net1 macvlan",
      "DEL eth0 bridge",
    ]);
    expect(records()).toEqual(["ctr1-eth0.json"]);
    expect(results().sort()).toEqual(["blue-ctr1-net1", "cluster-ctr1-eth0"]);
  });

  it("C2.5 B65 B5 DEL twice, DEL without ADD and DEL without a netns all succeed", async () => {
    await cmdAdd(req("ADD"), conf(), deps);
    await cmdDel(req("DEL", { CNI_NETNS: "" }), conf(), deps);
    await cmdDel(req("DEL", { CNI_NETNS: "" }), conf(), deps);
    await cmdDel(
      req("DEL", { CNI_CONTAINERID: "never-added" }),
      parsePlexusConf(
        { cniVersion: "1.0.0", name: "p", delegates: [] },
        { requireNetworks: false },
      ),
      deps,
    );
    expect(exec.calls.filter((c) => c.command === "DEL").every((c) => c.env.CNI_NETNS === "")).toBe(
      true,
    );
  });

  it("B33 M7 DEL runs what the record says, whatever the config says now", async () => {
    await cmdAdd(req("ADD"), conf(), deps);
    exec.calls.length = 0;
    const other = parsePlexusConf({
      cniVersion: "1.0.0",
      name: "plexus",
      delegates: [{ cniVersion: "1.0.0", name: "other", type: "bridge" }],
    });
    await cmdDel(req("DEL"), other, deps);
    expect(exec.calls.map((c) => c.stdin.name)).toEqual(["green", "blue", "blue", "cluster"]);
  });

  it("B47 a corrupt record falls back to the configured delegates, with a warning, and is removed", async () => {
    await cmdAdd(req("ADD"), conf(), deps);
    writeFileSync(deps.records.path("ctr1", "eth0"), "");
    exec.calls.length = 0;
    await cmdDel(req("DEL"), conf(), deps);
    expect(exec.summary()).toEqual([
      "DEL net2 bridge",
      "DEL net1 tuning",
      "DEL net1 macvlan",
      "DEL eth0 bridge",
    ]);
    expect(records()).toEqual([]);
    expect(deps.logs.some((l) => l.level === "warn" && /unreadable/.test(l.msg))).toBe(true);
  });
});

describe("CNI_PATH for delegates", () => {
  it("C4.1 M1 binDir first, every entry absolute (`.` is the working directory, never a PATH lookup), empty ones and repeats dropped", () => {
    const r = req("ADD", { CNI_PATH: `.:/usr/lib/cni::${process.cwd()}` });
    expect(delegatePath(r, conf({ binDir: "/opt/extra" }))).toEqual([
      "/opt/extra",
      process.cwd(),
      "/usr/lib/cni",
    ]);
  });
});

describe("the runtime's own requests", () => {
  it("M4 C3.2 runtimeConfig ips/mac and CNI_ARGS IP=/MAC= go to the default network's delegates only; other capabilities and args reach every network", async () => {
    const caps = { ips: true, mac: true, portMappings: true };
    const c = parsePlexusConf({
      cniVersion: "1.0.0",
      name: "plexus",
      withoutKubernetes: true,
      runtimeConfig: {
        ips: ["10.9.0.50/24"],
        mac: "02:00:00:00:00:50",
        portMappings: [{ hostPort: 80 }],
      },
      delegates: [
        { cniVersion: "1.0.0", name: "cluster", type: "bridge", capabilities: caps },
        { cniVersion: "1.0.0", name: "blue", type: "macvlan", capabilities: caps },
      ],
    });
    exec.on(
      { ifName: "eth0", command: "ADD" },
      {
        result: {
          interfaces: [{ name: "eth0", mac: "02:00:00:00:00:50", sandbox: NETNS }],
          ips: [{ address: "10.9.0.50/24", interface: 0 }],
        },
      },
    );
    await cmdAdd(
      req("ADD", {
        CNI_ARGS:
          "IgnoreUnknown=1;IP=10.9.0.50;K8S_POD_NAME=p;MAC=02:00:00:00:00:50;K8S_POD_NAMESPACE=ns",
      }),
      c,
      deps,
    );
    const [eth0, net1] = exec.calls;
    expect(eth0!.stdin.runtimeConfig).toEqual({
      ips: ["10.9.0.50/24"],
      mac: "02:00:00:00:00:50",
      portMappings: [{ hostPort: 80 }],
    });
    expect(eth0!.env.CNI_ARGS).toBe(
      "IgnoreUnknown=1;IP=10.9.0.50;K8S_POD_NAME=p;MAC=02:00:00:00:00:50;K8S_POD_NAMESPACE=ns",
    );
    expect(net1!.stdin.runtimeConfig).toEqual({ portMappings: [{ hostPort: 80 }] });
    expect(net1!.env.CNI_ARGS).toBe("IgnoreUnknown=1;K8S_POD_NAME=p;K8S_POD_NAMESPACE=ns");
  });
});

describe("CHECK, STATUS, GC", () => {
  it("C2.6 CHECK forwards to every attachment with its cached result; an unknown container is code 3", async () => {
    await cmdAdd(req("ADD"), conf(), deps);
    exec.calls.length = 0;
    await cmdCheck(req("CHECK"), conf(), deps);
    expect(exec.summary()).toEqual([
      "CHECK eth0 bridge",
      "CHECK net1 macvlan",
      "CHECK net1 tuning",
      "CHECK net2 bridge",
    ]);
    expect(exec.calls.every((c) => c.stdin.prevResult !== undefined)).toBe(true);
    await expect(
      cmdCheck(req("CHECK", { CNI_CONTAINERID: "nope" }), conf(), deps),
    ).rejects.toMatchObject({ code: 3 });
  });

  it("C2.8 B66 STATUS goes to 1.1.0 delegates only, without pod arguments, and keeps a delegate's 50", async () => {
    const c = parsePlexusConf({
      cniVersion: "1.1.0",
      name: "p",
      delegates: [
        { cniVersion: "1.1.0", name: "new", type: "bridge" },
        { cniVersion: "1.0.0", name: "old", type: "bridge" },
      ],
    });
    await cmdStatus(parseEnv({ CNI_COMMAND: "STATUS" }), c, deps);
    expect(exec.summary()).toEqual(["STATUS  bridge"]);
    expect(exec.calls[0]!.env).not.toHaveProperty("CNI_CONTAINERID");
    exec.on({ command: "STATUS" }, { error: { code: 50, msg: "not ready" } });
    await expect(cmdStatus(parseEnv({ CNI_COMMAND: "STATUS" }), c, deps)).rejects.toMatchObject({
      code: 50,
      message: expect.stringContaining('"new"'),
    });
  });

  it("C2.9 GC tears down containers the runtime no longer lists, keeps the others, and forwards GC with the delegate-level valid attachments", async () => {
    const c = (extra: Record<string, unknown> = {}) =>
      parsePlexusConf({
        cniVersion: "1.1.0",
        name: "p",
        delegates: [
          { cniVersion: "1.1.0", name: "cluster", type: "bridge" },
          { cniVersion: "1.1.0", name: "blue", type: "macvlan" },
        ],
        ...extra,
      });
    await cmdAdd(req("ADD", { CNI_CONTAINERID: "keep" }), c(), deps);
    await cmdAdd(req("ADD", { CNI_CONTAINERID: "stale" }), c(), deps);
    exec.calls.length = 0;
    await cmdGc(
      parseEnv({ CNI_COMMAND: "GC", CNI_PATH: "/opt/cni/bin" }),
      c({ "cni.dev/valid-attachments": [{ containerID: "keep", ifname: "eth0" }] }),
      deps,
    );
    expect(exec.summary()).toEqual([
      "DEL net1 macvlan",
      "DEL eth0 bridge",
      "GC  bridge",
      "GC  macvlan",
    ]);
    expect(exec.calls[0]!.env.CNI_CONTAINERID).toBe("stale");
    expect(exec.calls[2]!.stdin["cni.dev/valid-attachments"]).toEqual([
      { containerID: "keep", ifname: "eth0" },
    ]);
    expect(exec.calls[3]!.stdin["cni.dev/valid-attachments"]).toEqual([
      { containerID: "keep", ifname: "net1" },
    ]);
    expect(records()).toEqual(["keep-eth0.json"]);
  });

  it("C2.8 N6.1 STATUS is 50 while the readiness indicator file is missing, without asking any delegate", async () => {
    const c = conf({ readinessindicatorfile: join(deps.cniDir, "not-yet") }, "1.1.0");
    await expect(cmdStatus(parseEnv({ CNI_COMMAND: "STATUS" }), c, deps)).rejects.toMatchObject({
      code: 50,
      message: expect.stringContaining("not-yet"),
    });
    expect(exec.calls).toEqual([]);
    writeFileSync(join(deps.cniDir, "not-yet"), "");
    await cmdStatus(parseEnv({ CNI_COMMAND: "STATUS" }), c, deps);
  });

  it("C2.9 GC without cni.dev/valid-attachments refuses (7) rather than release everything", async () => {
    await expect(
      cmdGc(parseEnv({ CNI_COMMAND: "GC", CNI_PATH: "/x" }), conf({}, "1.1.0"), deps),
    ).rejects.toMatchObject({ code: 7 });
  });
});
