/**
 * DEL is bounded (M7, K1, C2.5, C2.9): the DEL deadline shared between the networks, a DEL that
 * never ran never counted, the records of failed DELs retried by later calls and GC and abandoned
 * after `failedDelRetrySeconds` (for runtimes that call DEL once), CHECK refused for a pre-0.4.0
 * config (C2.6). Over a FakeExec and a temp cniDir; the end-to-end tests play the same on real
 * plugins (test/e2e/del-bounded.test.ts, test/e2e/podman.test.ts).
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { CniRequest } from "../../../src/cni/env";
import { parsePlexusConf, type PlexusConf } from "../../../src/config/plugin-conf";
import type { ExecRequest } from "../../../src/invoke/plugin-exec";
import { FileCluster } from "../../../src/cluster/file-cluster";
import { cmdAdd } from "../../../src/orchestrate/add";
import { cmdCheck } from "../../../src/orchestrate/check";
import { cmdDel } from "../../../src/orchestrate/del";
import { cmdGc } from "../../../src/orchestrate/gc";
import type { ContainerRecord } from "../../../src/nodestate/record";
import { cniRequest, FakeExec, fakeDeps } from "../../fakes/fake-exec";

let exec: FakeExec;
let deps: ReturnType<typeof fakeDeps>;
/** The deadline each delegate was given, in call order. */
let deadlines: number[];
let clusterDir: string;
const PODS = ["ctr1", "ctr2", "other", "nothing"];

/** The events Plexus wrote to the file-backed cluster, but ADD's AddedInterface. */
function events(): Array<{ reason: string; message: string; pod: string }> {
  const p = join(clusterDir, "status", "events.jsonl");
  if (!existsSync(p)) return [];
  return readFileSync(p, "utf8")
    .trim()
    .split("\n")
    .map(
      (l) =>
        JSON.parse(l) as {
          reason: string;
          message: string;
          involvedObject: { namespace: string; name: string };
        },
    )
    .filter((e) => e.reason !== "AddedInterface")
    .map((e) => ({
      reason: e.reason,
      message: e.message,
      pod: `${e.involvedObject.namespace}/${e.involvedObject.name}`,
    }));
}

beforeEach(() => {
  exec = new FakeExec();
  const run = exec.execPlugin.bind(exec);
  deadlines = [];
  exec.execPlugin = (r: ExecRequest) => {
    deadlines.push(r.deadlineMs);
    return run(r);
  };
  deps = fakeDeps(exec);
  clusterDir = join(deps.cniDir, "cluster");
  mkdirSync(clusterDir);
  const items = PODS.map((name) => ({
    apiVersion: "v1",
    kind: "Pod",
    metadata: { namespace: "app", name, uid: `uid-${name}` },
  }));
  writeFileSync(
    join(clusterDir, "objects.json"),
    JSON.stringify({ apiVersion: "v1", kind: "List", items }),
  );
  deps.kube = async () => new FileCluster(clusterDir);
});
afterEach(() => deps.dispose());

const THREE = [
  { cniVersion: "1.0.0", name: "cluster", type: "bridge" },
  { cniVersion: "1.0.0", name: "blue", type: "macvlan" },
  { cniVersion: "1.0.0", name: "red", type: "tuning" },
];

function conf(extra: Record<string, unknown> = {}): PlexusConf {
  return parsePlexusConf({
    cniVersion: "1.0.0",
    name: "plexus",
    type: "plexus",
    delegates: THREE,
    ...extra,
  });
}
const req = (command: string, extra: Record<string, string> = {}): CniRequest =>
  cniRequest(command, extra);
const podReq = (command: string, id: string) =>
  req(command, {
    CNI_CONTAINERID: id,
    CNI_ARGS: `IgnoreUnknown=1;K8S_POD_NAMESPACE=app;K8S_POD_NAME=${id}`,
  });
const dir = (name: string) =>
  existsSync(join(deps.cniDir, name))
    ? readdirSync(join(deps.cniDir, name)).filter((n) => !n.startsWith("."))
    : [];
/** The interfaces of ctr1 (the pending record) a call retried. */
function retriedIfNames(): string[] {
  const calls = exec.calls.filter((c) => c.containerId === "ctr1");
  return calls.map((c) => c.ifName);
}
const record = (id = "ctr1") =>
  JSON.parse(readFileSync(deps.records.path(id, "eth0"), "utf8")) as ContainerRecord;

describe("the DEL deadline, shared between the networks (M7)", () => {
  it("M7 each network's DEL gets what is left divided by the networks still to go; the default network, last, gets the rest", async () => {
    await cmdAdd(req("ADD"), conf({ delTimeoutSeconds: 3 }), deps);
    deadlines = [];
    await cmdDel(req("DEL"), conf({ delTimeoutSeconds: 3 }), deps);
    expect(exec.summary().slice(-3)).toEqual([
      "DEL net2 tuning",
      "DEL net1 macvlan",
      "DEL eth0 bridge",
    ]);
    const [red, blue, cluster] = deadlines as [number, number, number];
    expect(red).toBeGreaterThan(900);
    expect(red).toBeLessThanOrEqual(1000);
    expect(blue).toBeGreaterThan(1400);
    expect(blue).toBeLessThanOrEqual(1500);
    expect(cluster).toBeGreaterThan(2800);
  });

  it("M7 K1 a network whose DEL never started (no time left) is not counted and never abandoned: the DEL fails (11) until it has run", async () => {
    await cmdAdd(req("ADD"), conf(), deps);
    // A slow first DEL the fake does not kill uses up the whole deadline, twice.
    exec.on({ command: "DEL" }, { result: {} }, { delayMs: 400, times: 2 });
    const left = [
      [
        ["eth0", undefined],
        ["net1", undefined],
      ],
      [["eth0", undefined]],
    ];
    for (const round of [0, 1]) {
      const err = await cmdDel(req("DEL"), conf({ delTimeoutSeconds: 0.3 }), deps).then(
        () => undefined,
        (e: unknown) => e as { code: number; message: string },
      );
      expect(err?.code, `round ${round}`).toBe(11);
      expect(err?.message).toContain("not run, the call's deadline passed");
      expect(record().attachments.map((a) => [a.ifName, a.failedDels])).toEqual(left[round]);
    }
    await cmdDel(req("DEL"), conf({ delTimeoutSeconds: 0.3 }), deps);
    expect(dir("records")).toEqual([]);
    expect(events()).toEqual([]);
    expect(exec.summary().filter((c) => c === "DEL eth0 bridge")).toHaveLength(1);
  });
});

describe("records of failed DELs, for runtimes that call DEL once (M7, K1)", () => {
  async function failedDel(conf: PlexusConf, id = "ctr1"): Promise<void> {
    await cmdAdd(podReq("ADD", id), conf, deps);
    exec.on(
      { command: "DEL", type: "macvlan" },
      { error: { code: 999, msg: "master gone" } },
      { times: 1 },
    );
    await expect(cmdDel(podReq("DEL", id), conf, deps)).rejects.toMatchObject({ code: 999 });
  }

  it("M7 a failed DEL marks its record pending (when it first failed), with an entry in pending/", async () => {
    await failedDel(conf());
    expect(record().delFailedAt).toMatch(/^\d{4}-\d\d-\d\dT/);
    expect(dir("pending")).toEqual(["ctr1-eth0.json"]);
  });

  it("M7 M13 an ADD on the node never retries another container's pending record; a DEL of another container does, and still failing past failedDelRetrySeconds (0) abandons it with an event on its pod, and its record, pending entry and lock go", async () => {
    const c = conf({ failedDelRetrySeconds: 0 });
    await failedDel(c);
    exec.on({ command: "DEL", type: "macvlan" }, { error: { code: 999, msg: "master gone" } });
    exec.calls.length = 0;
    await cmdAdd(podReq("ADD", "other"), c, deps);
    expect(exec.summary()).toEqual(["ADD eth0 bridge", "ADD net1 macvlan", "ADD net2 tuning"]);
    expect(dir("records").sort()).toEqual(["ctr1-eth0.json", "other-eth0.json"]);
    exec.calls.length = 0;
    await cmdDel(podReq("DEL", "nothing"), c, deps);
    expect(retriedIfNames()).toEqual(["net1"]);
    expect(dir("records")).toEqual(["other-eth0.json"]);
    expect(dir("pending")).toEqual([]);
    expect(dir("results").filter((n) => n.includes("ctr1"))).toEqual([]);
    expect(events()).toEqual([
      expect.objectContaining({
        pod: "app/ctr1",
        reason: "TeardownAbandoned",
        message: expect.stringContaining("master gone"),
      }),
    ]);
  });

  it("M7 a retry that succeeds (the cause went away) removes the record, without an event", async () => {
    const c = conf();
    await failedDel(c);
    exec.calls.length = 0;
    // Retried by a DEL of another container (long since due: the interval is from the entry's
    // time).
    const entry = join(deps.cniDir, "pending", "ctr1-eth0.json");
    const { utimesSync } = await import("node:fs");
    utimesSync(entry, new Date(Date.now() - 60_000), new Date(Date.now() - 60_000));
    await cmdDel(podReq("DEL", "nothing"), c, deps);
    expect(retriedIfNames()).toEqual(["net1"]);
    expect(dir("records")).toEqual([]);
    expect(dir("pending")).toEqual([]);
    expect(events()).toEqual([]);
  });

  it("M7 within failedDelRetrySeconds the record is kept (pending), and a call retries it at most once per interval", async () => {
    const c = conf();
    await failedDel(c);
    exec.calls.length = 0;
    await cmdDel(podReq("DEL", "nothing"), c, deps);
    expect(exec.calls.filter((call) => call.containerId === "ctr1")).toEqual([]);
    expect(dir("records")).toEqual(["ctr1-eth0.json"]);
  });

  it("M7 with retryDeleteOnError the record is retried but never abandoned", async () => {
    const c = conf({ failedDelRetrySeconds: 0, retryDeleteOnError: true });
    await failedDel(c);
    exec.on({ command: "DEL", type: "macvlan" }, { error: { code: 999, msg: "master gone" } });
    await cmdDel(podReq("DEL", "nothing"), c, deps);
    expect(exec.summary().filter((s) => s === "DEL net1 macvlan").length).toBeGreaterThanOrEqual(2);
    expect(dir("records").sort()).toEqual(["ctr1-eth0.json"]);
    expect(events()).toEqual([]);
  });

  it("C2.9 M7 GC retries every pending record, whatever its interval, and abandons those past the bound", async () => {
    // Within the bound (and its retry interval) while the DELs fail: kept for GC.
    const c = conf();
    await failedDel(c, "ctr1");
    await failedDel(c, "ctr2");
    exec.on(
      { command: "DEL", type: "macvlan" },
      { error: { code: 999, msg: "master gone" } },
      { times: 2 },
    );
    await cmdGc(
      req("GC"),
      conf({ failedDelRetrySeconds: 0, "cni.dev/valid-attachments": [] }),
      deps,
    );
    expect(dir("records")).toEqual([]);
    expect(dir("pending")).toEqual([]);
    expect(
      events()
        .map((e) => e.pod)
        .sort(),
    ).toEqual(["app/ctr1", "app/ctr2"]);
  });

  it("M7 M13 B83 a pending entry that is not a regular file (symlink, FIFO), names no valid container, or is not its own file name is ignored, not followed", async () => {
    const { symlinkSync } = await import("node:fs");
    mkdirSync(join(deps.cniDir, "pending"), { recursive: true });
    writeFileSync(
      join(deps.cniDir, "pending", "x-eth0.json"),
      JSON.stringify({ containerId: "../x", ifName: "eth0" }),
    );
    symlinkSync("/etc/passwd", join(deps.cniDir, "pending", "y-eth0.json"));
    const { execFileSync } = await import("node:child_process");
    execFileSync("mkfifo", [join(deps.cniDir, "pending", "z-eth0.json")]);
    writeFileSync(
      join(deps.cniDir, "pending", "w-eth0.json"),
      JSON.stringify({ containerId: "other", ifName: "eth0" }),
    );
    expect(deps.records.listPending()).toEqual([]);
    // Junk is removed when it is met (never read twice); the symlink's target is untouched.
    expect(dir("pending")).toEqual([]);
    expect(existsSync("/etc/passwd")).toBe(true);
  });

  it("M7 M13 the record is the source of truth: a pending marker whose write failed is rebuilt from the record, and the record is retried", async () => {
    const c = conf();
    const mark = deps.records.markPending.bind(deps.records);
    deps.records.markPending = async () => {
      throw new Error("EIO: i/o error, open pending/ctr1-eth0.json");
    };
    await failedDel(c);
    deps.records.markPending = mark;
    expect(record().delFailedAt).toBeDefined();
    expect(dir("pending")).toEqual([]);
    exec.calls.length = 0;
    // No GC and no daemon: the next DEL rebuilds the index (its last rebuild is old) and retries.
    const { utimesSync } = await import("node:fs");
    const stamp = join(deps.cniDir, "housekeeping", "pending-synced");
    if (existsSync(stamp)) utimesSync(stamp, new Date(0), new Date(0));
    await cmdDel(podReq("DEL", "nothing"), conf({ failedDelRetrySeconds: 0 }), deps);
    expect(retriedIfNames()).toEqual(["net1"]);
    expect(dir("records")).toEqual([]);
    expect(dir("pending")).toEqual([]);
  });

  it("M7 M13 B83 GC rebuilds the index: junk and entries of records that are not pending go, a pending record's missing entry comes back", async () => {
    const c = conf();
    await cmdAdd(podReq("ADD", "ctr2"), c, deps);
    mkdirSync(join(deps.cniDir, "pending"), { recursive: true });
    const pending = join(deps.cniDir, "pending");
    for (let i = 0; i < 50; i++) writeFileSync(join(pending, `junk${i}-eth0.json`), "{");
    writeFileSync(
      join(deps.cniDir, "pending", "ctr2-eth0.json"),
      JSON.stringify({ containerId: "ctr2", ifName: "eth0" }),
    );
    const rec = record("ctr2");
    // A pending record (with delFailedAt) whose entry is missing; its DEL fails again in GC.
    const delFailedAt = new Date().toISOString();
    await deps.records.write({ ...rec, containerId: "ctr1", delFailedAt });
    exec.on({ command: "DEL" }, { error: { code: 999, msg: "still broken" } });
    const gcConf = conf({ "cni.dev/valid-attachments": [{ containerID: "ctr2", ifname: "eth0" }] });
    await expect(cmdGc(req("GC"), gcConf, deps)).rejects.toMatchObject({ code: 999 });
    expect(dir("pending")).toEqual(["ctr1-eth0.json"]);
  });

  it("M7 M13 while the daemon's housekeeper runs (its stamp is in the future), a DEL leaves other containers' records to it", async () => {
    const c = conf({ failedDelRetrySeconds: 0 });
    await failedDel(c);
    await deps.records.markHousekeeper(Date.now() + 60_000);
    exec.calls.length = 0;
    await cmdDel(podReq("DEL", "nothing"), c, deps);
    expect(exec.calls.filter((call) => call.containerId === "ctr1")).toEqual([]);
    expect(dir("records")).toEqual(["ctr1-eth0.json"]);
    // A stamp further ahead than a housekeeper sets one (skewed clock, planted) is not believed.
    await deps.records.markHousekeeper(Date.now() + 3 * 3600_000);
    expect(deps.records.housekeeperAlive()).toBe(false);
    // A stamp in the past: the housekeeper stopped, DELs take the retries back.
    await deps.records.markHousekeeper(Date.now() - 1);
    await cmdDel(podReq("DEL", "nothing"), c, deps);
    expect(retriedIfNames()).toEqual(["net1"]);
  });
});

describe("CHECK and the config's version (C2.6)", () => {
  it("C2.6 CHECK with a Plexus config older than 0.4.0 fails with 1 (config version does not allow CHECK), running nothing", async () => {
    await expect(cmdCheck(req("CHECK"), conf({ cniVersion: "0.3.1" }), deps)).rejects.toMatchObject(
      {
        code: 1,
        message: expect.stringContaining("config version does not allow CHECK"),
      },
    );
    expect(exec.calls).toEqual([]);
  });
});
