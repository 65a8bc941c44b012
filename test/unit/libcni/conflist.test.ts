/**
 * One network (a conflist) run the libcni way over a FakeExec: order, prevResult chaining, the
 * result cache, runtimeConfig from capabilities, the env each delegate gets, CHECK/STATUS/GC.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { ConfList } from "../../../src/cni/conf";
import { AggregateCniError, type CniError } from "../../../src/cni/errors";
import { ALL_VERSIONS, versionAtLeast } from "../../../src/cni/version";
import * as libcni from "../../../src/libcni/conflist";
import { buildPluginConf, pluginsStartedOf, type RuntimeConf } from "../../../src/libcni/conflist";
import { vouch, vouchForAdd } from "../../../src/libcni/vouch";
import { FakeExec, fakeDeps } from "../../fakes/fake-exec";

// libcni runs only what the delegate gate vouched for (src/gate/): these tests are about libcni's
// own semantics, so each list is vouched for as the gate would, right before it runs.
type Rest<F> = F extends (list: never, ...rest: infer R) => infer O ? [R, O] : never;
const addNetworkList = (l: ConfList, ...r: Rest<typeof libcni.addNetworkList>[0]) =>
  libcni.addNetworkList(vouchForAdd(l), ...r);
const delNetworkList = (l: ConfList, ...r: Rest<typeof libcni.delNetworkList>[0]) =>
  libcni.delNetworkList(vouch(l), ...r);
const checkNetworkList = (l: ConfList, ...r: Rest<typeof libcni.checkNetworkList>[0]) =>
  libcni.checkNetworkList(vouch(l), ...r);
const statusNetworkList = (l: ConfList, ...r: Rest<typeof libcni.statusNetworkList>[0]) =>
  libcni.statusNetworkList(vouch(l), ...r);
const gcNetworkList = (l: ConfList, ...r: Rest<typeof libcni.gcNetworkList>[0]) =>
  libcni.gcNetworkList(vouch(l), ...r);

const NETNS = "/proc/self/ns/net";

function list(version = "1.0.0", extra: Partial<ConfList> = {}): ConfList {
  return {
    cniVersion: version,
    name: "net-a",
    plugins: [
      { type: "bridge", bridge: "br0", ipam: { type: "host-local", subnet: "10.1.0.0/24" } },
      { type: "tuning", name: "ignored-name", cniVersion: "0.3.1", capabilities: { mac: true } },
      { type: "portmap", capabilities: { portMappings: true, bandwidth: false } },
    ],
    ...extra,
  };
}

function rt(extra: Partial<RuntimeConf> = {}): RuntimeConf {
  return {
    containerId: "ctr1",
    netns: NETNS,
    ifName: "eth0",
    args: "IgnoreUnknown=1;K8S_POD_NAME=p",
    path: ["/opt/cni/bin", "/usr/lib/cni"],
    capabilityArgs: {},
    baseEnv: { PATH: "/usr/bin", KEEP_ME: "1" },
    deadlineMs: 1000,
    ...extra,
  };
}

let exec: FakeExec;
let deps: ReturnType<typeof fakeDeps>;
beforeEach(() => {
  exec = new FakeExec(["bridge", "tuning", "portmap"]);
  // Distinct answers per plugin, so a chained prevResult can be told apart.
  exec.on(
    { command: "ADD", type: "bridge" },
    {
      result: {
        interfaces: [{ name: "eth0", sandbox: NETNS }],
        ips: [{ address: "10.1.0.2/24", gateway: "10.1.0.1", interface: 0 }],
      },
    },
  );
  exec.on(
    { command: "ADD", type: "tuning" },
    {
      result: {
        interfaces: [{ name: "eth0", mac: "02:00:00:00:00:01", sandbox: NETNS }],
        ips: [{ address: "10.1.0.2/24", gateway: "10.1.0.1", interface: 0 }],
      },
    },
  );
  exec.on(
    { command: "ADD", type: "portmap" },
    {
      result: {
        interfaces: [{ name: "eth0", mac: "02:00:00:00:00:01", sandbox: NETNS }],
        ips: [{ address: "10.1.0.2/24", gateway: "10.1.0.1", interface: 0 }],
        dns: { nameservers: ["10.96.0.10"] },
      },
    },
  );
  deps = fakeDeps(exec);
});
afterEach(() => deps.dispose());

const key = (containerId = "ctr1", ifName = "eth0", networkName = "net-a") => ({
  networkName,
  containerId,
  ifName,
});

describe("ADD", () => {
  it("C3.1 runs the plugins in order, each given the previous plugin's result as prevResult; returns the last result", async () => {
    const out = await addNetworkList(list(), rt(), deps);
    expect(exec.summary()).toEqual(["ADD eth0 bridge", "ADD eth0 tuning", "ADD eth0 portmap"]);
    const [bridge, tuning, portmap] = exec.calls;
    expect(bridge!.stdin).not.toHaveProperty("prevResult");
    expect(tuning!.stdin.prevResult).toEqual({
      cniVersion: "1.0.0",
      interfaces: [{ name: "eth0", sandbox: NETNS }],
      ips: [{ address: "10.1.0.2/24", gateway: "10.1.0.1", interface: 0 }],
    });
    // portmap gets tuning's result (with the MAC), not bridge's.
    expect(portmap!.stdin.prevResult).toMatchObject({ interfaces: [{ mac: "02:00:00:00:00:01" }] });
    expect(out).toMatchObject({ cniVersion: "1.0.0", dns: { nameservers: ["10.96.0.10"] } });
    exec.assertSerial();
  });

  it("C3.1 B58 a plugin answering in another version is converted to the list's version before it is chained", async () => {
    exec.on(
      { command: "ADD", type: "bridge" },
      {
        stdout: JSON.stringify({
          cniVersion: "0.4.0",
          ips: [{ version: "4", address: "10.1.0.9/24" }],
        }),
      },
    );
    await addNetworkList(list("1.0.0"), rt(), deps);
    expect(exec.calls[1]!.stdin.prevResult).toEqual({
      cniVersion: "1.0.0",
      ips: [{ address: "10.1.0.9/24" }],
    });
  });

  it("N7.1 the list's name and cniVersion are injected into every plugin, replacing the plugin's own; other keys verbatim", async () => {
    await addNetworkList(list("0.4.0"), rt(), deps);
    for (const c of exec.calls)
      expect(c.stdin).toMatchObject({ name: "net-a", cniVersion: "0.4.0" });
    expect(exec.calls[0]!.stdin).toEqual({
      type: "bridge",
      name: "net-a",
      cniVersion: "0.4.0",
      bridge: "br0",
      ipam: { type: "host-local", subnet: "10.1.0.0/24" },
    });
  });

  it("C3.2 runtimeConfig is the declared capabilities that the runtime supplied; capabilities is removed; other keys pass through", () => {
    const l: ConfList = {
      cniVersion: "1.0.0",
      name: "n",
      plugins: [
        {
          type: "macvlan",
          master: "eth1",
          capabilities: { portMappings: true, bandwidth: false, mac: true },
          custom: { nested: [1, "x"] },
        },
      ],
    };
    const supplied = {
      portMappings: [{ hostPort: 8080, containerPort: 80 }],
      bandwidth: { ingressRate: 1 },
      ips: ["10.0.0.5/24"],
    };
    const conf = buildPluginConf(l, l.plugins[0]!, supplied);
    // mac declared but not supplied; bandwidth supplied but declared false; ips supplied but not
    // declared.
    expect(conf).toEqual({
      type: "macvlan",
      name: "n",
      cniVersion: "1.0.0",
      master: "eth1",
      custom: { nested: [1, "x"] },
      runtimeConfig: { portMappings: supplied.portMappings },
    });
    // A plugin declaring nothing gets no runtimeConfig at all.
    expect(buildPluginConf(l, { type: "tuning" }, supplied)).not.toHaveProperty("runtimeConfig");
  });

  it("C3.2 the capability values reach the delegate verbatim through ADD", async () => {
    const pm = [{ HostPort: 80, ContainerPort: 8080, Protocol: "tcp" }];
    await addNetworkList(
      list(),
      rt({ capabilityArgs: { portMappings: pm, mac: "02:00:00:00:00:09", bandwidth: { x: 1 } } }),
      deps,
    );
    const [bridge, tuning, portmap] = exec.calls;
    expect(bridge!.stdin).not.toHaveProperty("runtimeConfig");
    expect(tuning!.stdin.runtimeConfig).toEqual({ mac: "02:00:00:00:00:09" });
    expect(portmap!.stdin.runtimeConfig).toEqual({ portMappings: pm });
    for (const c of exec.calls) expect(c.stdin).not.toHaveProperty("capabilities");
  });

  it("C4.1 every delegate gets CNI_COMMAND, CONTAINERID, NETNS, IFNAME, ARGS and PATH, plus the base env", async () => {
    await addNetworkList(
      list(),
      rt({ baseEnv: { PATH: "/usr/bin", KEEP_ME: "1", HOME: "/root" } }),
      deps,
    );
    for (const c of exec.calls) {
      expect(c.env).toEqual({
        PATH: "/usr/bin",
        KEEP_ME: "1",
        HOME: "/root",
        CNI_COMMAND: "ADD",
        CNI_CONTAINERID: "ctr1",
        CNI_NETNS: NETNS,
        CNI_IFNAME: "eth0",
        CNI_ARGS: "IgnoreUnknown=1;K8S_POD_NAME=p",
        CNI_PATH: "/opt/cni/bin:/usr/lib/cni",
      });
    }
    expect(exec.calls.map((c) => c.path)).toEqual([
      "/fake/bin/bridge",
      "/fake/bin/tuning",
      "/fake/bin/portmap",
    ]);
    expect(exec.lookups[0]).toEqual({ type: "bridge", dirs: ["/opt/cni/bin", "/usr/lib/cni"] });
  });

  it("C3.3 the final result is cached with the config, netns, args and capability values it was added with", async () => {
    const out = await addNetworkList(
      list(),
      rt({ capabilityArgs: { mac: "02:00:00:00:00:09" } }),
      deps,
    );
    const entry = await deps.cache.get(key());
    expect(entry).toMatchObject({
      kind: "cniCacheV1",
      ...key(),
      netns: NETNS,
      cniArgs: "IgnoreUnknown=1;K8S_POD_NAME=p",
      capabilityArgs: { mac: "02:00:00:00:00:09" },
    });
    expect(entry!.result).toEqual(out);
    expect(JSON.parse(entry!.config)).toEqual(list());
  });

  it("C4.1 a failing plugin stops the list; nothing is cached; the error keeps the delegate's code and says how many plugins ran", async () => {
    exec.on({ command: "ADD", type: "tuning" }, { error: { code: 11, msg: "busy", details: "d" } });
    const err = (await addNetworkList(list(), rt(), deps).catch((e: unknown) => e)) as CniError;
    expect(err).toMatchObject({
      code: 11,
      details: "d",
      message: expect.stringContaining('type="tuning" network="net-a" (ADD)'),
    });
    expect(pluginsStartedOf(err)).toBe(2);
    expect(exec.summary()).toEqual(["ADD eth0 bridge", "ADD eth0 tuning"]);
    expect(await deps.cache.get(key())).toBeUndefined();
  });

  it("B9 C4.1 a plugin missing from CNI_PATH fails with 7 naming the type and the network; only the plugins before it ran", async () => {
    exec = new FakeExec(["bridge"]);
    deps.exec = exec;
    const err = (await addNetworkList(list(), rt(), deps).catch((e: unknown) => e)) as CniError;
    expect(err).toMatchObject({
      code: 7,
      message: expect.stringMatching(/network "net-a".*"tuning"/),
    });
    expect(pluginsStartedOf(err)).toBe(1);
    expect(exec.summary()).toEqual(["ADD eth0 bridge"]);
  });

  it("B55 garbage on stdout is code 100 naming the plugin, and nothing is cached", async () => {
    exec.on({ command: "ADD", type: "portmap" }, { stdout: '{"cniVersion":"1.0.0", "ips": [' });
    await expect(addNetworkList(list(), rt(), deps)).rejects.toMatchObject({
      code: 100,
      message: expect.stringContaining('"portmap"'),
    });
    expect(await deps.cache.get(key())).toBeUndefined();
  });
});

describe("DEL", () => {
  it("C3.1 runs the plugins in reverse", async () => {
    await addNetworkList(list(), rt(), deps);
    exec.calls.length = 0;
    await delNetworkList(list(), rt(), deps);
    expect(exec.summary()).toEqual(["DEL eth0 portmap", "DEL eth0 tuning", "DEL eth0 bridge"]);
  });

  describe.each(ALL_VERSIONS)("cniVersion %s", (v) => {
    const withPrev = versionAtLeast(v, "0.4.0");
    it(`C3.1 C3.3 DEL ${
      withPrev
        ? "passes the cached final result as prevResult"
        : "passes no prevResult " + "(< 0.4.0)"
    }, and removes the cache entry`, async () => {
      const out = await addNetworkList(list(v), rt(), deps);
      exec.calls.length = 0;
      await delNetworkList(list(v), rt(), deps);
      expect(exec.calls).toHaveLength(3);
      for (const c of exec.calls) {
        if (withPrev) expect(c.stdin.prevResult).toEqual(out);
        else expect(c.stdin).not.toHaveProperty("prevResult");
        expect(c.stdin.cniVersion).toBe(v);
      }
      expect(await deps.cache.get(key())).toBeUndefined();
    });
  });

  it("C2.5 DEL without an earlier ADD runs every plugin without prevResult and succeeds", async () => {
    await delNetworkList(list(), rt({ netns: "" }), deps);
    expect(exec.summary()).toEqual(["DEL eth0 portmap", "DEL eth0 tuning", "DEL eth0 bridge"]);
    expect(exec.calls.every((c) => !("prevResult" in c.stdin) && c.env.CNI_NETNS === "")).toBe(
      true,
    );
  });

  it("B62 C3.3 a failing plugin does not stop the others; the cache entry is kept for the retry, and removed once a retry succeeds", async () => {
    await addNetworkList(list(), rt(), deps);
    exec.calls.length = 0;
    exec.on(
      { command: "DEL", type: "tuning" },
      { error: { code: 5, msg: "tuning broke" } },
      { times: 1 },
    );
    await expect(delNetworkList(list(), rt(), deps)).rejects.toMatchObject({
      code: 5,
      message: expect.stringContaining("tuning broke"),
    });
    expect(exec.summary()).toEqual(["DEL eth0 portmap", "DEL eth0 tuning", "DEL eth0 bridge"]);
    expect(await deps.cache.get(key())).toBeDefined();
    // The retry still has the prevResult.
    exec.calls.length = 0;
    await delNetworkList(list(), rt(), deps);
    expect(exec.calls.every((c) => c.stdin.prevResult !== undefined)).toBe(true);
    expect(await deps.cache.get(key())).toBeUndefined();
  });

  it("N7.2 several failing plugins give one aggregate error that names each, with the first code", async () => {
    exec.on({ command: "DEL", type: "portmap" }, { error: { code: 11, msg: "portmap broke" } });
    exec.on({ command: "DEL", type: "bridge" }, { throws: new TypeError("bridge exploded") });
    const err = (await delNetworkList(list(), rt(), deps).catch(
      (e: unknown) => e,
    )) as AggregateCniError;
    expect(err).toBeInstanceOf(AggregateCniError);
    expect(err.code).toBe(11);
    expect(err.errors.map((e) => e.code)).toEqual([11, 999]);
    expect(err.message).toMatch(/portmap broke.*bridge exploded/);
  });
});

describe("CHECK", () => {
  it("C3.3 C2.6 runs the plugins in order, each with the cached result as prevResult", async () => {
    const out = await addNetworkList(list(), rt(), deps);
    exec.calls.length = 0;
    await checkNetworkList(list(), rt(), deps);
    expect(exec.summary()).toEqual([
      "CHECK eth0 bridge",
      "CHECK eth0 tuning",
      "CHECK eth0 portmap",
    ]);
    for (const c of exec.calls) expect(c.stdin.prevResult).toEqual(out);
  });

  it("C3.3 CHECK without a cached result is code 3 and runs nothing", async () => {
    await expect(checkNetworkList(list(), rt(), deps)).rejects.toMatchObject({
      code: 3,
      message: expect.stringContaining("ctr1"),
    });
    expect(exec.calls).toEqual([]);
  });

  it.each(["0.1.0", "0.2.0", "0.3.0", "0.3.1"])(
    "C2.6 CHECK of a %s list is skipped as a runtime skips it (no CHECK before 0.4.0): success, nothing run",
    async (v) => {
      await addNetworkList(list(v), rt(), deps);
      exec.calls.length = 0;
      await checkNetworkList(list(v), rt(), deps);
      expect(exec.calls).toEqual([]);
    },
  );

  it("C2.6 disableCheck skips CHECK entirely", async () => {
    await checkNetworkList(list("1.0.0", { disableCheck: true }), rt(), deps);
    expect(exec.calls).toEqual([]);
  });

  it("C2.6 a failing CHECK keeps the delegate's code", async () => {
    await addNetworkList(list(), rt(), deps);
    exec.on({ command: "CHECK", type: "tuning" }, { error: { code: 104, msg: "mac differs" } });
    await expect(checkNetworkList(list(), rt(), deps)).rejects.toMatchObject({ code: 104 });
  });
});

describe("STATUS", () => {
  it.each(["0.4.0", "1.0.0"])("C2.8 a %s list is not asked (STATUS needs 1.1.0)", async (v) => {
    await statusNetworkList(list(v), rt(), deps);
    expect(exec.calls).toEqual([]);
  });

  it("C2.8 a 1.1.0 list: every plugin, without attachment env, runtimeConfig or prevResult", async () => {
    await statusNetworkList(
      list("1.1.0"),
      rt({ capabilityArgs: { portMappings: [1], mac: "x" } }),
      deps,
    );
    expect(exec.summary()).toEqual(["STATUS  bridge", "STATUS  tuning", "STATUS  portmap"]);
    for (const c of exec.calls) {
      expect(c.env).toEqual({
        PATH: "/usr/bin",
        KEEP_ME: "1",
        CNI_COMMAND: "STATUS",
        CNI_PATH: "/opt/cni/bin:/usr/lib/cni",
      });
      expect(c.stdin).not.toHaveProperty("runtimeConfig");
      expect(c.stdin).not.toHaveProperty("prevResult");
    }
  });

  it.each([50, 51])("C2.8 a delegate's STATUS error %i keeps its code", async (code) => {
    exec.on({ command: "STATUS", type: "tuning" }, { error: { code, msg: "not now" } });
    await expect(statusNetworkList(list("1.1.0"), rt(), deps)).rejects.toMatchObject({ code });
  });
});

describe("GC", () => {
  async function addAll(version: string) {
    for (const [c, i] of [
      ["keep", "eth0"],
      ["stale1", "eth0"],
      ["stale2", "net1"],
    ] as const) {
      await addNetworkList(
        list(version),
        rt({ containerId: c, ifName: i, args: `K=${c}`, capabilityArgs: { mac: `m-${c}` } }),
        deps,
      );
    }
    // Another network's entry: not this list's business.
    await addNetworkList({ ...list(version), name: "net-b" }, rt({ containerId: "stale1" }), deps);
    exec.calls.length = 0;
  }
  const gcRt = () => rt({ containerId: "", netns: "", ifName: "", args: "" });

  it("C2.9 DELs the cached attachments of this network that are not valid, with their cached args, then forwards GC (1.1.0)", async () => {
    await addAll("1.1.0");
    const valid = [{ containerID: "keep", ifname: "eth0" }];
    await gcNetworkList(list("1.1.0"), valid, gcRt(), deps);
    const dels = exec.calls.filter((c) => c.command === "DEL");
    expect(dels.map((c) => `${c.containerId}/${c.ifName} ${c.type}`).sort()).toEqual(
      [
        "stale1/eth0 bridge",
        "stale1/eth0 portmap",
        "stale1/eth0 tuning",
        "stale2/net1 bridge",
        "stale2/net1 portmap",
        "stale2/net1 tuning",
      ].sort(),
    );
    const tuningDel = dels.find((c) => c.containerId === "stale2" && c.type === "tuning")!;
    expect(tuningDel.env).toMatchObject({ CNI_ARGS: "K=stale2", CNI_NETNS: "" });
    expect(tuningDel.stdin.runtimeConfig).toEqual({ mac: "m-stale2" });
    expect(tuningDel.stdin.prevResult).toBeDefined();
    const gcs = exec.calls.filter((c) => c.command === "GC");
    expect(gcs.map((c) => c.type)).toEqual(["bridge", "tuning", "portmap"]);
    expect(exec.calls.slice(-3).every((c) => c.command === "GC")).toBe(true);
    for (const c of gcs)
      expect(c.stdin).toMatchObject({
        name: "net-a",
        cniVersion: "1.1.0",
        "cni.dev/valid-attachments": valid,
      });
    expect((await deps.cache.list("net-a")).map((e) => e.containerId)).toEqual(["keep"]);
    expect((await deps.cache.list("net-b")).map((e) => e.containerId)).toEqual(["stale1"]);
  });

  it("C2.9 a list older than 1.1.0 gets the DELs but no GC", async () => {
    await addAll("1.0.0");
    await gcNetworkList(list("1.0.0"), [{ containerID: "keep", ifname: "eth0" }], gcRt(), deps);
    expect(exec.calls.some((c) => c.command === "GC")).toBe(false);
    expect(exec.calls.filter((c) => c.command === "DEL")).toHaveLength(6);
  });

  it("C2.9 keeps going past failures and reports them all at the end; a failed attachment stays cached", async () => {
    await addAll("1.1.0");
    exec.on(
      { command: "DEL", containerId: "stale1", type: "bridge" },
      { error: { code: 5, msg: "stale1 broke" } },
    );
    exec.on({ command: "GC", type: "tuning" }, { error: { code: 11, msg: "gc broke" } });
    const err = (await gcNetworkList(
      list("1.1.0"),
      [{ containerID: "keep", ifname: "eth0" }],
      gcRt(),
      deps,
    ).catch((e: unknown) => e)) as AggregateCniError;
    expect(err).toBeInstanceOf(AggregateCniError);
    expect(err.message).toMatch(/stale1 broke.*gc broke/);
    expect(exec.calls.filter((c) => c.containerId === "stale2")).toHaveLength(3);
    expect(exec.calls.filter((c) => c.command === "GC")).toHaveLength(3);
    expect((await deps.cache.list("net-a")).map((e) => e.containerId).sort()).toEqual([
      "keep",
      "stale1",
    ]);
  });

  it("C2.9 disableGC skips GC entirely", async () => {
    await addAll("1.1.0");
    await gcNetworkList(list("1.1.0", { disableGC: true }), [], gcRt(), deps);
    expect(exec.calls).toEqual([]);
  });
});

describe("the call's deadline (addTimeoutSeconds, delTimeoutSeconds)", () => {
  let exec: FakeExec;
  let deps: ReturnType<typeof fakeDeps>;
  beforeEach(() => {
    exec = new FakeExec(["bridge", "tuning", "portmap"]);
    deps = fakeDeps(exec);
  });
  afterEach(() => deps.dispose());

  it("B52 each delegate's deadline is cut to what is left of the call's", async () => {
    const seen: number[] = [];
    const inner = deps.exec;
    deps.exec = {
      findInPath: (t, d) => inner.findInPath(t, d),
      execPlugin: (r) => (seen.push(r.deadlineMs), inner.execPlugin(r)),
    };
    await addNetworkList(
      list(),
      rt({
        deadlineMs: 60_000,
        callDeadline: { at: Date.now() + 5_000, key: "addTimeoutSeconds" },
      }),
      deps,
    );
    expect(seen).toHaveLength(3);
    for (const ms of seen) expect(ms).toBeGreaterThan(4_000), expect(ms).toBeLessThanOrEqual(5_000);
  });

  it("B52 a call whose deadline has passed runs no further plugin: 101 naming the key, and the plugins that ran are known", async () => {
    const err = await addNetworkList(
      list(),
      rt({ callDeadline: { at: Date.now() - 1, key: "addTimeoutSeconds" } }),
      deps,
    ).catch((e: unknown) => e as CniError);
    expect(err).toMatchObject({ code: 101, message: expect.stringContaining("addTimeoutSeconds") });
    expect(exec.calls).toEqual([]);
    expect(pluginsStartedOf(err)).toBe(0);
  });
});
