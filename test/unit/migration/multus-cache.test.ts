/**
 * Migration from Multus (M14): reading Multus 4.x's per-container delegate cache, and DEL and
 * CHECK of a container Plexus has no record of but Multus attached, over a FakeExec.
 */
import { spawnSync } from "node:child_process";
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  rmSync,
  symlinkSync,
  truncateSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { parseEnv, type CniRequest } from "../../../src/cni/env";
import type { CniError } from "../../../src/cni/errors";
import { parsePlexusConf, type PlexusConf } from "../../../src/config/plugin-conf";
import { FileCluster } from "../../../src/cluster/file-cluster";
import { cmdAdd } from "../../../src/orchestrate/add";
import { cmdCheck } from "../../../src/orchestrate/check";
import { cmdDel } from "../../../src/orchestrate/del";
import {
  MAX_MULTUS_CACHE_BYTES,
  readMultusCache,
  type MultusCacheQuery,
  type MultusCacheRead,
} from "../../../src/migration/multus-cache";
import { FakeExec, fakeDeps } from "../../fakes/fake-exec";
import {
  multusEntry,
  writeLibcniResult,
  writeMultusCache,
  type MultusDelegate,
} from "../../support/multus-cache";

const NETNS = "/proc/self/ns/net";
const CID = "0123abcd";

let dir: string;
let exec: FakeExec;
let deps: ReturnType<typeof fakeDeps>;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "plx-multus-"));
  exec = new FakeExec();
  deps = fakeDeps(exec);
});
afterEach(() => {
  deps.dispose();
  rmSync(dir, { recursive: true, force: true });
});

const cluster: MultusDelegate = {
  config: {
    cniVersion: "1.0.0",
    name: "cluster",
    type: "bridge",
    bridge: "cni0",
    isGateway: true,
    ipam: { type: "host-local", subnet: "10.1.0.0/24" },
  },
  // Multus gives the master delegate no requests even when the entry carries some.
  ipRequest: ["10.1.0.9/24"],
};
const blue: MultusDelegate = {
  name: "default/blue",
  config: {
    cniVersion: "1.0.0",
    name: "blue",
    plugins: [
      { type: "macvlan", master: "eth9", capabilities: { ips: true, mac: true } },
      { type: "tuning" },
    ],
  },
  ifnameRequest: "blue1",
  ipRequest: ["10.2.0.5/24"],
  macRequest: "02:00:00:00:00:05",
};
const green: MultusDelegate = {
  name: "ns2/green",
  config: { name: "green", type: "bridge", ipam: { type: "host-local", subnet: "10.3.0.0/24" } },
  deviceID: "0000:03:00.1",
  infinibandGUIDRequest: "c2:11:22:33:44:55:66:77",
};

const query = (extra: Partial<MultusCacheQuery> = {}): MultusCacheQuery => ({
  dir,
  containerId: CID,
  ifName: "eth0",
  cniVersion: "0.4.0",
  ...extra,
});
const write = (text: string) => writeFileSync(join(dir, CID), text);
const reasonOf = (read: MultusCacheRead) =>
  read.state === "corrupt" ? read.reason : `not corrupt: ${read.state}`;

describe("reading Multus's delegate cache", () => {
  it("a file as Multus 4.x writes it: the first entry is the default network on CNI_IFNAME, the others on ifnameRequest or net<position>; requests only for the others", async () => {
    writeMultusCache(dir, CID, [cluster, blue, green]);
    const r = await readMultusCache(query());
    expect(r.state).toBe("found");
    if (r.state !== "found") return;
    expect(r.failedDels).toBe(0);
    expect(
      r.attachments.map((a) => ({
        network: a.network,
        ifName: a.ifName,
        isDefault: a.isDefault,
        capabilityArgs: a.capabilityArgs,
      })),
    ).toEqual([
      { network: "cluster", ifName: "eth0", isDefault: true, capabilityArgs: undefined },
      {
        network: "default/blue",
        ifName: "blue1",
        isDefault: false,
        capabilityArgs: { ips: ["10.2.0.5/24"], mac: "02:00:00:00:00:05" },
      },
      {
        network: "ns2/green",
        ifName: "net2",
        isDefault: false,
        capabilityArgs: { deviceID: "0000:03:00.1", infinibandGUID: "c2:11:22:33:44:55:66:77" },
      },
    ]);
    // The configs are Multus's Bytes: a single conf becomes a one-plugin list, a conflist keeps its
    // plugins.
    expect(r.attachments[0]!.conf).toMatchObject({
      name: "cluster",
      cniVersion: "1.0.0",
      plugins: [
        { type: "bridge", bridge: "cni0", ipam: { type: "host-local", subnet: "10.1.0.0/24" } },
      ],
    });
    expect(r.attachments[1]!.conf.plugins.map((p) => p.type)).toEqual(["macvlan", "tuning"]);
    // A config without cniVersion gets the Plexus config's, as Multus gives it its own.
    expect(r.attachments[2]!.conf.cniVersion).toBe("0.4.0");
  });

  it('a missing file is missing; multusCacheDir "" is off without looking', async () => {
    expect(await readMultusCache(query())).toEqual({ state: "missing", path: join(dir, CID) });
    expect(await readMultusCache(query({ dir: join(dir, "no", "such") }))).toMatchObject({
      state: "missing",
    });
    writeMultusCache(dir, CID, [cluster]);
    expect(await readMultusCache(query({ dir: "" }))).toEqual({ state: "off" });
  });

  it.each([
    ["not JSON", "[{", /not valid JSON/],
    ["empty", "", /empty/],
    [
      "an object, not a list",
      JSON.stringify(multusEntry(cluster)),
      /expected a JSON list of Multus delegates/,
    ],
    ["an empty list", "[]", /list of delegates is empty/],
    [
      "an entry without Bytes",
      JSON.stringify([{ ...multusEntry(cluster), Bytes: undefined }]),
      /Bytes/,
    ],
    [
      "Bytes that are not base64",
      JSON.stringify([{ ...multusEntry(cluster), Bytes: "%%%not*base64" }]),
      /entry 0 \(cluster\): "Bytes" is not base64/,
    ],
    [
      "Bytes that decode to garbage",
      JSON.stringify([
        { ...multusEntry(cluster), Bytes: Buffer.from("\u0001\u0002garbage{").toString("base64") },
      ]),
      /entry 0.*not valid JSON/,
    ],
    [
      "Bytes that decode to a config without type",
      JSON.stringify([multusEntry({ config: { cniVersion: "1.0.0", name: "x" } })]),
      /entry 0.*type/,
    ],
    [
      "a plugin type that is a path",
      JSON.stringify([
        multusEntry({ config: { cniVersion: "1.0.0", name: "x", type: "../../bin/sh" } }),
      ]),
      /plugin type/,
    ],
    [
      "ipRequest that is not a list",
      JSON.stringify([{ ...multusEntry(cluster), ipRequest: "10.0.0.1" }]),
      /ipRequest/,
    ],
    [
      "an interface name with a slash",
      JSON.stringify([multusEntry(cluster), multusEntry({ ...blue, ifnameRequest: "../x" })]),
      /entry 1.*interface name/,
    ],
    [
      "a deviceID with a path in it (M10: the one device rule)",
      JSON.stringify([multusEntry(cluster), { ...multusEntry(blue), deviceID: "../../sys/bus" }]),
      /entry 1.*"deviceID" "\.\.\/\.\.\/sys\/bus" is not a valid device ID/,
    ],
  ])("B47 a file that is %s is corrupt, with a reason", async (_what, text, reason) => {
    write(text);
    const r = await readMultusCache(query());
    expect(r.state).toBe("corrupt");
    expect(reasonOf(r)).toMatch(reason);
  });

  it("B47 B72 B73 a file over the size limit is corrupt without being read; a directory, FIFO or symlink in its place is corrupt, and reading it does not block", async () => {
    write("[");
    truncateSync(join(dir, CID), MAX_MULTUS_CACHE_BYTES + 1);
    expect(reasonOf(await readMultusCache(query()))).toMatch(/more than the 4194304-byte limit/);
    rmSync(join(dir, CID));
    mkdirSync(join(dir, CID));
    expect(reasonOf(await readMultusCache(query()))).toBe(
      "not read: it is a directory, not a regular file",
    );
    rmSync(join(dir, CID), { recursive: true });
    symlinkSync("/etc/hostname", join(dir, CID));
    expect(reasonOf(await readMultusCache(query()))).toBe(
      "not read: it is a symbolic link (not followed)",
    );
    rmSync(join(dir, CID));
    expect(spawnSync("mkfifo", [join(dir, CID)]).status).toBe(0);
    expect(reasonOf(await readMultusCache(query()))).toBe(
      "not read: it is a FIFO, not a regular file",
    );
  });

  it("a container ID that could leave the directory is refused (code 4) before any path is built", async () => {
    for (const containerId of ["../etc", "a/b", "..", ""]) {
      await expect(readMultusCache(query({ containerId }))).rejects.toMatchObject({ code: 4 });
    }
  });
});

function req(command: string, extra: Record<string, string> = {}): CniRequest {
  return parseEnv({
    CNI_COMMAND: command,
    CNI_CONTAINERID: CID,
    CNI_NETNS: NETNS,
    CNI_IFNAME: "eth0",
    CNI_PATH: "/opt/cni/bin",
    CNI_ARGS: "IgnoreUnknown=1;K8S_POD_NAMESPACE=default;K8S_POD_NAME=p1",
    ...extra,
  });
}

/**
 * Plexus's config after the switch: the same default network, inline, and the Multus cache dir of
 * this test.
 */
function conf(extra: Record<string, unknown> = {}): PlexusConf {
  return parsePlexusConf({
    cniVersion: "1.0.0",
    name: "plexus",
    type: "plexus",
    multusCacheDir: dir,
    delegates: [{ ...cluster.config, name: "plexus-default" }],
    ...extra,
  });
}

const resultFor = (ifName: string, address: string) => ({
  cniVersion: "1.0.0",
  interfaces: [{ name: ifName, sandbox: NETNS }],
  ips: [{ address, interface: 0 }],
});
const multusFiles = () =>
  existsSync(dir) ? readdirSync(dir).filter((n) => !n.startsWith(".")) : [];
const multusResults = () =>
  existsSync(join(dir, "results"))
    ? readdirSync(join(dir, "results")).filter((n) => !n.startsWith("."))
    : [];

/** A container as Multus left it: the delegate list and libcni's cached results. */
function multusAttached(): void {
  writeMultusCache(dir, CID, [cluster, blue, green]);
  const cniArgs: Array<[string, string]> = [
    ["IgnoreUnknown", "true"],
    ["K8S_POD_NAMESPACE", "default"],
    ["K8S_POD_NAME", "p1"],
  ];
  writeLibcniResult(dir, {
    network: "cluster",
    containerId: CID,
    ifName: "eth0",
    config: cluster.config,
    netns: NETNS,
    cniArgs,
    result: resultFor("eth0", "10.1.0.2/24"),
  });
  writeLibcniResult(dir, {
    network: "blue",
    containerId: CID,
    ifName: "blue1",
    config: blue.config,
    netns: NETNS,
    cniArgs,
    result: resultFor("blue1", "10.2.0.5/24"),
  });
  writeLibcniResult(dir, {
    network: "green",
    containerId: CID,
    ifName: "net2",
    config: green.config,
    netns: NETNS,
    cniArgs,
    result: resultFor("net2", "10.3.0.2/24"),
  });
}

describe("DEL of a container Multus attached", () => {
  it("M7 C2.5 C3.3 without a Plexus record, DEL runs Multus's delegates in reverse with their cached results and requests, then removes the file and the results", async () => {
    multusAttached();
    await cmdDel(req("DEL"), conf(), deps);
    expect(exec.summary()).toEqual([
      "DEL net2 bridge",
      "DEL blue1 tuning",
      "DEL blue1 macvlan",
      "DEL eth0 bridge",
    ]);
    const [green1, tuning, macvlan, eth0] = exec.calls;
    // Only what the plugin declares reaches it as runtimeConfig (C3.2); ips/mac are blue's
    // requests.
    expect(macvlan!.stdin.runtimeConfig).toEqual({
      ips: ["10.2.0.5/24"],
      mac: "02:00:00:00:00:05",
    });
    expect(tuning!.stdin).not.toHaveProperty("runtimeConfig");
    // prevResult comes from libcni's cache under Multus's cniDir; green has no cniVersion of its
    // own and runs with the Plexus config's, as Multus gave it its own config's.
    expect(macvlan!.stdin.prevResult).toMatchObject({ ips: [{ address: "10.2.0.5/24" }] });
    expect(green1!.stdin).toMatchObject({
      cniVersion: "1.0.0",
      prevResult: { cniVersion: "1.0.0", ips: [{ address: "10.3.0.2/24" }] },
    });
    expect(eth0!.stdin).toMatchObject({
      name: "cluster",
      bridge: "cni0",
      prevResult: { ips: [{ address: "10.1.0.2/24" }] },
    });
    expect(eth0!.env).toMatchObject({
      CNI_CONTAINERID: CID,
      CNI_NETNS: NETNS,
      CNI_ARGS: "IgnoreUnknown=1;K8S_POD_NAMESPACE=default;K8S_POD_NAME=p1",
    });
    expect(multusFiles()).toEqual(["results"]);
    expect(multusResults()).toEqual([]);

    // B65: the runtime's next DEL finds neither record nor Multus file: Plexus's own no-record
    // path.
    exec.calls.length = 0;
    await cmdDel(req("DEL", { CNI_NETNS: "" }), conf(), deps);
    expect(exec.calls.map((c) => c.stdin.name)).toEqual(["plexus-default"]);
  });

  it("a Plexus record wins over a Multus file for the same container", async () => {
    await cmdAdd(req("ADD"), conf({ withoutKubernetes: true }), deps);
    writeMultusCache(dir, CID, [cluster]);
    exec.calls.length = 0;
    await cmdDel(req("DEL"), conf(), deps);
    expect(exec.calls.map((c) => c.stdin.name)).toEqual(["plexus-default"]);
    expect(multusFiles()).toEqual([CID]);
  });

  it('multusCacheDir "" leaves Multus\'s file alone: DEL goes on as without a record', async () => {
    multusAttached();
    await cmdDel(req("DEL"), conf({ multusCacheDir: "" }), deps);
    expect(exec.calls.map((c) => c.stdin.name)).toEqual(["plexus-default"]);
    expect(multusFiles().sort()).toEqual([CID, "results"]);
  });

  it("B47 an unusable Multus file is warned about, left in place, and DEL goes on as without a record", async () => {
    write("{not json");
    await cmdDel(req("DEL"), conf(), deps);
    expect(exec.calls.map((c) => c.stdin.name)).toEqual(["plexus-default"]);
    expect(
      deps.logs.find((l) => l.level === "warn" && String(l.obj.path).endsWith(CID))?.obj.reason,
    ).toMatch(/not valid JSON/);
    expect(multusFiles()).toEqual([CID]);
  });

  /** The DEL gave up on default/blue: an error in the log and a TeardownAbandoned event. */
  const expectTeardownAbandoned = (clusterDir: string) => {
    expect(
      deps.logs.some(
        (l) =>
          l.level === "error" &&
          l.msg.includes("giving up") &&
          l.obj.network === "default/blue" &&
          String(l.obj.err).includes("Link not found"),
      ),
    ).toBe(true);
    const events = readFileSync(join(clusterDir, "status", "events.jsonl"), "utf8")
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(events).toEqual([
      expect.objectContaining({
        involvedObject: { kind: "Pod", namespace: "default", name: "p1" },
        type: "Warning",
        reason: "TeardownAbandoned",
        message: expect.stringContaining('network "default/blue" (blue1), plugins macvlan, tuning'),
      }),
    ]);
  };

  it('M7 B62 retryDeleteOnError false: a failing delegate fails the DEL (never saying "not found") and keeps the file; the next DEL retries everything and, failing again, gives up with a TeardownAbandoned event and succeeds', async () => {
    multusAttached();
    const clusterDir = join(dir, "cluster");
    deps.kube = async () => new FileCluster(clusterDir);
    exec.on({ command: "DEL", type: "macvlan" }, { error: { code: 11, msg: "Link not found" } });
    const err = (await cmdDel(req("DEL"), conf(), deps).catch((e: unknown) => e)) as CniError;
    expect(err).toMatchObject({
      code: 11,
      message: expect.stringContaining('network "default/blue" (blue1)'),
    });
    expect(err.message).not.toMatch(/not found/i);
    expect(exec.summary()).toEqual([
      "DEL net2 bridge",
      "DEL blue1 tuning",
      "DEL blue1 macvlan",
      "DEL eth0 bridge",
    ]);
    expect(multusFiles().sort()).toEqual([CID, "results"]);
    // The failed network's cached result stays for the retry; the others are gone.
    expect(multusResults()).toEqual([`blue-${CID}-blue1`]);
    // The file is still Multus's format (Multus ignores the mark), now marked as failed once.
    const marked = JSON.parse(readFileSync(join(dir, CID), "utf8")) as Array<
      Record<string, unknown>
    >;
    expect(marked.map((e) => [e.Name, e.plexusDelAttempts])).toEqual([
      ["cluster", 1],
      ["default/blue", 1],
      ["ns2/green", 1],
    ]);

    exec.calls.length = 0;
    await cmdDel(req("DEL"), conf(), deps);
    expect(exec.summary()).toEqual([
      "DEL net2 bridge",
      "DEL blue1 tuning",
      "DEL blue1 macvlan",
      "DEL eth0 bridge",
    ]);
    expectTeardownAbandoned(clusterDir);
    expect(multusFiles().sort()).toEqual(["cluster", "results"]);
    expect(multusResults()).toEqual([]);
  });

  it("B62 retryDeleteOnError true: DEL keeps failing and keeping the file until the delegate succeeds", async () => {
    multusAttached();
    exec.on({ command: "DEL", type: "macvlan" }, { error: { code: 5, msg: "busy" } }, { times: 3 });
    for (let i = 0; i < 3; i++)
      await expect(
        cmdDel(req("DEL"), conf({ retryDeleteOnError: true }), deps),
      ).rejects.toMatchObject({ code: 5 });
    expect(multusFiles().sort()).toEqual([CID, "results"]);
    await cmdDel(req("DEL"), conf({ retryDeleteOnError: true }), deps);
    expect(multusFiles()).toEqual(["results"]);
    expect(multusResults()).toEqual([]);
  });
});

describe("CHECK of a container Multus attached", () => {
  it("C2.6 without a Plexus record, CHECK runs Multus's delegates in order with libcni's cached results; without either it is code 3", async () => {
    multusAttached();
    await cmdCheck(req("CHECK"), conf(), deps);
    expect(exec.summary()).toEqual([
      "CHECK eth0 bridge",
      "CHECK blue1 macvlan",
      "CHECK blue1 tuning",
      "CHECK net2 bridge",
    ]);
    expect(exec.calls[1]!.stdin.prevResult).toMatchObject({ ips: [{ address: "10.2.0.5/24" }] });
    // CHECK changes nothing.
    expect(multusFiles().sort()).toEqual([CID, "results"]);
    expect(multusResults()).toHaveLength(3);

    rmSync(join(dir, CID));
    await expect(cmdCheck(req("CHECK"), conf(), deps)).rejects.toMatchObject({ code: 3 });
  });
});
