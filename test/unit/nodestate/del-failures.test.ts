/**
 * No DEL fails forever (M7, K1, M14): DEL without a record, `retryDeleteOnError` in both modes,
 * ADD's rollback of a delegate that refused its config, a fixed NAD un-wedging its pods. Over a
 * FakeExec and the file-backed cluster (the real KubeApi over a manifest directory).
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { CniRequest } from "../../../src/cni/env";
import { CniError, Code } from "../../../src/cni/errors";
import { parsePlexusConf, type PlexusConf } from "../../../src/config/plugin-conf";
import { FileCluster } from "../../../src/cluster/file-cluster";
import type { KubeApi } from "../../../src/cluster/kube-api";
import { cmdAdd } from "../../../src/orchestrate/add";
import { cmdDel } from "../../../src/orchestrate/del";
import { cmdGc } from "../../../src/orchestrate/gc";
import type { ContainerRecord } from "../../../src/nodestate/record";
import { cniRequest, FakeExec, fakeDeps } from "../../fakes/fake-exec";

const POD_ARGS = "IgnoreUnknown=1;K8S_POD_NAMESPACE=app;K8S_POD_NAME=web;K8S_POD_UID=uid-web";

function req(command: string, extra: Record<string, string> = {}): CniRequest {
  return cniRequest(command, { CNI_ARGS: POD_ARGS, ...extra });
}

let exec: FakeExec;
let deps: ReturnType<typeof fakeDeps>;
let clusterDir: string;
/** Every verb call gets a fresh client, as every CNI call is a fresh process. */
let kubeCalls = 0;

function nad(name: string, config: Record<string, unknown>) {
  return {
    apiVersion: "k8s.cni.cncf.io/v1",
    kind: "NetworkAttachmentDefinition",
    metadata: { namespace: "app", name },
    spec: { config: JSON.stringify(config) },
  };
}
function writeCluster(annotation: string, nads: unknown[]): void {
  const pod = {
    apiVersion: "v1",
    kind: "Pod",
    metadata: {
      namespace: "app",
      name: "web",
      uid: "uid-web",
      annotations: { "k8s.v1.cni.cncf.io/networks": annotation },
    },
  };
  writeFileSync(
    join(clusterDir, "objects.json"),
    JSON.stringify({ apiVersion: "v1", kind: "List", items: [pod, ...nads] }),
  );
}
/** The events a DEL wrote (ADD writes AddedInterface). */
const events = () => {
  const p = join(clusterDir, "status", "events.jsonl");
  const all = existsSync(p)
    ? readFileSync(p, "utf8")
        .trim()
        .split("\n")
        .map((l) => JSON.parse(l) as Record<string, unknown>)
    : [];
  return all.filter((e) => e.reason !== "AddedInterface");
};

beforeEach(() => {
  exec = new FakeExec();
  deps = fakeDeps(exec);
  clusterDir = join(deps.cniDir, "cluster");
  mkdirSync(clusterDir);
  kubeCalls = 0;
  deps.kube = async () => {
    kubeCalls++;
    return new FileCluster(clusterDir);
  };
});
afterEach(() => deps.dispose());

function conf(extra: Record<string, unknown> = {}): PlexusConf {
  return parsePlexusConf({
    cniVersion: "1.0.0",
    name: "plexus",
    type: "plexus",
    delegates: [{ cniVersion: "1.0.0", name: "cluster", type: "bridge" }],
    ...extra,
  });
}
const records = () =>
  existsSync(join(deps.cniDir, "records"))
    ? readdirSync(join(deps.cniDir, "records")).filter((n) => !n.startsWith("."))
    : [];
const results = () =>
  existsSync(join(deps.cniDir, "results"))
    ? readdirSync(join(deps.cniDir, "results")).filter((n) => !n.startsWith("."))
    : [];
const record = () =>
  JSON.parse(readFileSync(deps.records.path("ctr1", "eth0"), "utf8")) as ContainerRecord;
const failure = (pending: Promise<unknown>) =>
  pending.then(
    () => expect.fail("expected a failure"),
    (e: unknown) => e as CniError,
  );

describe("DEL without a record (M7, B65, K1)", () => {
  it.each([
    ["an invalid annotation", "not a valid,,list"],
    ["a missing NAD", "nope"],
  ])(
    "M7 K1 after an ADD that failed on %s, every DEL succeeds and tears down the default network only",
    async (_what, annotation) => {
      writeCluster(annotation, []);
      await expect(cmdAdd(req("ADD"), conf(), deps)).rejects.toMatchObject({ code: 7 });
      expect(exec.calls).toEqual([]);
      for (const extra of [{}, { CNI_NETNS: "" }] as Array<Record<string, string>>) {
        exec.calls.length = 0;
        await cmdDel(req("DEL", extra), conf(), deps);
        expect(exec.summary()).toEqual(["DEL eth0 bridge"]);
      }
      expect(records()).toEqual([]);
      expect(
        deps.logs.some((l) => l.level === "warn" && /could not be worked out/.test(l.msg)),
      ).toBe(true);
    },
  );

  it("M7 B34 the API server failing: DEL asks it once, tears down the default network from the config, succeeds", async () => {
    let gets = 0;
    const down: KubeApi = {
      getPod: async () => {
        gets++;
        throw new CniError(Code.ApiFailure, "API server unreachable");
      },
      getNad: async () => {
        gets++;
        throw new CniError(Code.ApiFailure, "API server unreachable");
      },
      setNetworkStatus: async () => {},
      recordEvent: async () => {},
    };
    deps.kube = async () => down;
    await cmdDel(req("DEL", { CNI_NETNS: "" }), conf({ defaultNetworks: ["extra"] }), deps);
    expect(exec.summary()).toEqual(["DEL eth0 bridge"]);
    expect(gets).toBe(1);
  });

  it.each([false, true])(
    "M7 K1 a DEL with no record whose delegate fails (a plugin that is not idempotent) exits 0 and writes nothing, every time (retryDeleteOnError %s)",
    async (retry) => {
      writeCluster("", []);
      exec.on(
        { command: "DEL", type: "bridge" },
        { error: { code: 999, msg: "Link missing" } },
        { times: 5 },
      );
      for (const netns of ["/proc/self/ns/net", "", "", "/proc/self/ns/net", ""]) {
        await cmdDel(req("DEL", { CNI_NETNS: netns }), conf({ retryDeleteOnError: retry }), deps);
        expect(records()).toEqual([]);
      }
      expect(exec.summary()).toEqual(Array(5).fill("DEL eth0 bridge"));
      expect(events()).toEqual([]);
      expect(deps.logs).toContainEqual(
        expect.objectContaining({
          level: "warn",
          msg: expect.stringContaining("precautionary DEL failed"),
        }),
      );
    },
  );
});

describe("DEL without a record, a delegate refusing its config (M7, C2.3)", () => {
  it("M7 a precautionary DEL refused with a config code (1–7, e.g. a cniVersion the binary does not speak) is logged, not a failure: no record, no retry", async () => {
    writeCluster("", []);
    exec.on(
      { command: "DEL", type: "bridge" },
      { error: { code: 1, msg: "incompatible CNI versions" } },
    );
    await cmdDel(req("DEL"), conf(), deps);
    expect(records()).toEqual([]);
    expect(deps.logs).toContainEqual(
      expect.objectContaining({
        level: "warn",
        msg: expect.stringContaining("precautionary DEL failed"),
      }),
    );
  });
});

describe("retryDeleteOnError (M7)", () => {
  const twoNets = () =>
    conf({
      delegates: [
        { cniVersion: "1.0.0", name: "cluster", type: "bridge" },
        { cniVersion: "1.0.0", name: "blue", type: "macvlan" },
      ],
    });

  it("M7 M13 off (the default): DEL #1 reports the failure and keeps only that attachment; DEL #2 fails on it again and answers 0, but the attachment stays pending (nothing abandoned, no event)", async () => {
    writeCluster("", []);
    await cmdAdd(req("ADD"), twoNets(), deps);
    expect(results().sort()).toEqual(["blue-ctr1-net1", "cluster-ctr1-eth0"]);
    exec.on(
      { command: "DEL", type: "macvlan" },
      { error: { code: 999, msg: "master gone" } },
      { times: 2 },
    );
    exec.calls.length = 0;
    const err = await failure(cmdDel(req("DEL"), twoNets(), deps));
    expect(err.message).toContain('network "blue" (net1)');
    expect(exec.summary()).toEqual(["DEL net1 macvlan", "DEL eth0 bridge"]);
    expect(record().attachments.map((a) => [a.ifName, a.failedDels])).toEqual([["net1", 1]]);
    expect(events()).toEqual([]);

    exec.calls.length = 0;
    await cmdDel(req("DEL", { CNI_NETNS: "" }), twoNets(), deps);
    expect(exec.summary()).toEqual(["DEL net1 macvlan"]);
    expect(records()).toEqual(["ctr1-eth0.json"]);
    expect(record().delFailedAt).toMatch(/^\d{4}-/);
    const kept = record().attachments.map((a) => [a.ifName, a.failedDels, a.lastDelError?.code]);
    expect(kept).toEqual([["net1", 2, 999]]);
    expect(readdirSync(join(deps.cniDir, "pending"))).toEqual(["ctr1-eth0.json"]);
    expect(results()).toEqual(["blue-ctr1-net1"]);
    expect(events()).toEqual([]);
    expect(deps.logs.filter((l) => /giving up/.test(String(l.msg)))).toEqual([]);
  });

  it("M7 M13 off: past failedDelRetrySeconds, housekeeping (GC) abandons what DEL #2 left pending, with an event, a log and no cache file", async () => {
    writeCluster("", []);
    const c = conf({ ...twoNets(), failedDelRetrySeconds: 0, "cni.dev/valid-attachments": [] });
    await cmdAdd(req("ADD"), c, deps);
    exec.on({ command: "DEL", type: "macvlan" }, { error: { code: 999, msg: "master gone" } });
    await failure(cmdDel(req("DEL"), c, deps));
    await cmdDel(req("DEL", { CNI_NETNS: "" }), c, deps);
    expect(events()).toEqual([]);
    await cmdGc(cniRequest("GC"), c, deps);
    expect(records()).toEqual([]);
    expect(results()).toEqual([]);
    expect(events()).toEqual([
      expect.objectContaining({
        type: "Warning",
        reason: "TeardownAbandoned",
        message: expect.stringMatching(
          /network "blue" \(net1\), plugins macvlan: .*master gone.*may have leaked/,
        ),
      }),
    ]);
    expect(deps.logs).toContainEqual(
      expect.objectContaining({
        level: "error",
        obj: expect.objectContaining({ network: "blue", ifName: "net1", plugins: "macvlan" }),
      }),
    );
    // A later DEL (RemovePodSandbox) finds no record: it tears down what the config names, as after
    // any DEL.
    await cmdDel(req("DEL", { CNI_NETNS: "" }), c, deps);
    expect(records()).toEqual([]);
  });

  it("M7 M13 off: a teardown slower than delTimeoutSeconds fails both runtime DELs, and housekeeping's budget of its own finishes it: nothing is left, no event", async () => {
    writeCluster("", []);
    const c = conf({ ...twoNets(), delTimeoutSeconds: 0.3, "cni.dev/valid-attachments": [] });
    await cmdAdd(req("ADD"), c, deps);
    const run = exec.execPlugin.bind(exec);
    exec.execPlugin = async (r) => {
      const env = r.env as Record<string, string>;
      if (env.CNI_COMMAND === "DEL" && env.CNI_IFNAME === "net1") {
        // A plugin slower than the runtime's call, and killed at that call's deadline.
        const wait = Math.min(500, r.deadlineMs);
        await new Promise((done) => setTimeout(done, wait));
        if (wait < 500) throw new CniError(Code.DelegateTimeout, "macvlan DEL: deadline passed");
      }
      return run(r);
    };
    await failure(cmdDel(req("DEL"), c, deps));
    await cmdDel(req("DEL", { CNI_NETNS: "" }), c, deps);
    expect(records()).toEqual(["ctr1-eth0.json"]);
    await cmdGc(cniRequest("GC"), c, deps);
    expect(records()).toEqual([]);
    expect(results()).toEqual([]);
    expect(readdirSync(join(deps.cniDir, "pending"))).toEqual([]);
    expect(events()).toEqual([]);
  });

  it("M7 off: a delegate that recovers on the retry is simply done, no event", async () => {
    writeCluster("", []);
    await cmdAdd(req("ADD"), twoNets(), deps);
    exec.on(
      { command: "DEL", type: "macvlan" },
      { error: { code: 11, msg: "busy" } },
      { times: 1 },
    );
    await expect(cmdDel(req("DEL"), twoNets(), deps)).rejects.toMatchObject({ code: 11 });
    await cmdDel(req("DEL"), twoNets(), deps);
    expect(records()).toEqual([]);
    expect(events()).toEqual([]);
  });

  it("M7 on: every DEL fails and the record stays until the delegate succeeds", async () => {
    writeCluster("", []);
    const c = () =>
      conf({
        ...twoNets(),
        retryDeleteOnError: true,
        delegates: [
          { cniVersion: "1.0.0", name: "cluster", type: "bridge" },
          { cniVersion: "1.0.0", name: "blue", type: "macvlan" },
        ],
      });
    await cmdAdd(req("ADD"), c(), deps);
    exec.on(
      { command: "DEL", type: "macvlan" },
      { error: { code: 999, msg: "master gone" } },
      { times: 4 },
    );
    for (let i = 1; i <= 4; i++) {
      await expect(cmdDel(req("DEL", { CNI_NETNS: "" }), c(), deps)).rejects.toMatchObject({
        code: 999,
      });
      expect(record().attachments.map((a) => [a.ifName, a.failedDels])).toEqual([["net1", i]]);
    }
    await cmdDel(req("DEL", { CNI_NETNS: "" }), c(), deps);
    expect(records()).toEqual([]);
    expect(events()).toEqual([]);
  });

  it("M7 off: when the failed attachment cannot be kept (the record cannot be rewritten), it is abandoned at once and DEL succeeds", async () => {
    writeCluster("", []);
    await cmdAdd(req("ADD"), conf(), deps);
    exec.on({ command: "DEL", type: "bridge" }, { error: { code: 999, msg: "bridge DEL broke" } });
    deps.records.write = async () => {
      throw new CniError(Code.IoFailure, "ENOSPC: no space left on device, write");
    };
    await cmdDel(req("DEL"), conf(), deps);
    expect(events()).toEqual([expect.objectContaining({ reason: "TeardownAbandoned" })]);
    expect(records()).toEqual([]);
  });
});

describe("ADD rollback keeps only what may really be attached (M7, C4.1)", () => {
  const withNad = (subnet: string) =>
    nad("bad", {
      cniVersion: "1.0.0",
      name: "bad",
      type: "macvlan",
      ipam: { type: "host-local", subnet },
    });

  it("M7 C4.1 a delegate that refused its config on ADD and on the rollback's DEL with the same code (1–7) never attached: no record is kept", async () => {
    writeCluster("bad", [withNad("10.0.0.0/24")]);
    exec.on({ command: "ADD", type: "macvlan" }, { error: { code: 7, msg: "invalid config" } });
    exec.on({ command: "DEL", type: "macvlan" }, { error: { code: 7, msg: "invalid config" } });
    await expect(cmdAdd(req("ADD"), conf(), deps)).rejects.toMatchObject({ code: 7 });
    expect(records()).toEqual([]);
  });

  it("M7 C4.1 a delegate failing with a runtime error (999) on both is kept, as it may hold state", async () => {
    writeCluster("bad", [withNad("10.0.0.0/24")]);
    exec.on({ command: "ADD", type: "macvlan" }, { error: { code: 999, msg: "half done" } });
    exec.on({ command: "DEL", type: "macvlan" }, { error: { code: 999, msg: "cannot undo" } });
    await expect(cmdAdd(req("ADD"), conf(), deps)).rejects.toMatchObject({
      code: 999,
      message: expect.stringContaining("rollback also failed"),
    });
    expect(record().attachments.map((a) => [a.network, a.ifName, a.failedDels])).toEqual([
      ["app/bad", "net1", undefined],
    ]);
  });

  it("M7 B33 a NAD fixed after the failure: the recorded config still fails, the NAD's current config tears it down, DEL succeeds", async () => {
    writeCluster("bad", [withNad("10.0.0.0/33")]);
    exec.on({ command: "ADD", type: "macvlan" }, { error: { code: 999, msg: "invalid CIDR" } });
    // The rollback's DEL, the runtime's first DEL and the recorded config's next try all fail.
    const times = 3;
    exec.on({ command: "DEL", type: "macvlan" }, { error: { code: 999, msg: "bad" } }, { times });
    const retry = conf({ retryDeleteOnError: true });
    await expect(cmdAdd(req("ADD"), retry, deps)).rejects.toMatchObject({ code: 999 });
    await expect(cmdDel(req("DEL"), retry, deps)).rejects.toMatchObject({ code: 999 });
    writeCluster("bad", [withNad("10.0.0.0/24")]);
    exec.calls.length = 0;
    await cmdDel(req("DEL"), retry, deps);
    expect(exec.summary()).toEqual(["DEL net1 macvlan", "DEL net1 macvlan"]);
    expect(exec.calls[1]!.stdin.ipam).toMatchObject({ subnet: "10.0.0.0/24" });
    expect(records()).toEqual([]);
    expect(kubeCalls).toBeGreaterThan(0);
  });

  it("B86 a NAD edited to another plugin type after its DEL failed: the new type never runs, the record stays", async () => {
    writeCluster("bad", [withNad("10.0.0.0/33")]);
    exec.on({ command: "ADD", type: "macvlan" }, { error: { code: 999, msg: "invalid CIDR" } });
    exec.on({ command: "DEL", type: "macvlan" }, { error: { code: 999, msg: "invalid CIDR" } });
    const retry = conf({ retryDeleteOnError: true });
    await expect(cmdAdd(req("ADD"), retry, deps)).rejects.toMatchObject({ code: 999 });
    writeCluster("bad", [nad("bad", { cniVersion: "1.0.0", name: "bad", type: "tuning" })]);
    exec.calls.length = 0;
    await expect(cmdDel(req("DEL"), retry, deps)).rejects.toMatchObject({ code: 999 });
    expect(exec.summary()).toEqual(["DEL net1 macvlan"]);
    expect(record().attachments.map((a) => a.conf.plugins[0]!.type)).toEqual(["macvlan"]);
  });
});
