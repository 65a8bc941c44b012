/**
 * The verbs' edge cases over a FakeExec (complements verbs.test.ts): where an ADD fails and what
 * is torn down, records that are stale, corrupt or unwritable, DEL errors, CHECK/STATUS/GC corners.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { parseEnv } from "../../../src/cni/env";
import { AggregateCniError, type CniError } from "../../../src/cni/errors";
import { ALL_VERSIONS } from "../../../src/cni/version";
import { parsePlexusConf, type PlexusConf } from "../../../src/config/plugin-conf";
import { ioError } from "../../../src/store/atomic-file";
import { cmdAdd } from "../../../src/orchestrate/add";
import { cmdCheck } from "../../../src/orchestrate/check";
import { cmdDel } from "../../../src/orchestrate/del";
import { baseEnvOf } from "../../../src/orchestrate/deps";
import { cmdGc } from "../../../src/orchestrate/gc";
import { RecordStore, type ContainerRecord } from "../../../src/nodestate/record";
import { cmdStatus } from "../../../src/orchestrate/status";
import { cniRequest, FakeExec, fakeDeps } from "../../fakes/fake-exec";

const req = cniRequest;

const three = (version = "1.0.0") => [
  { cniVersion: version, name: "cluster", type: "bridge" },
  { cniVersion: version, name: "blue", type: "macvlan" },
  { cniVersion: version, name: "green", type: "tuning" },
];

function conf(extra: Record<string, unknown> = {}, version = "1.0.0"): PlexusConf {
  return parsePlexusConf({
    cniVersion: version,
    name: "plexus",
    type: "plexus",
    delegates: three(),
    ...extra,
  });
}
const noDelegates = () =>
  parsePlexusConf({ cniVersion: "1.0.0", name: "p", delegates: [] }, { requireNetworks: false });

let exec: FakeExec;
let deps: ReturnType<typeof fakeDeps>;
beforeEach(() => {
  exec = new FakeExec();
  deps = fakeDeps(exec);
});
afterEach(() => deps.dispose());

const records = () =>
  existsSync(join(deps.cniDir, "records")) ? readdirSync(join(deps.cniDir, "records")) : [];
const failure = (pending: Promise<unknown>) =>
  pending.then(
    () => expect.fail("expected a failure"),
    (e: unknown) => e as CniError,
  );

describe("ADD failures (N7.2, C4.1)", () => {
  it("N7.2 C4.1 the default network failing: it alone is DELed, later networks are never tried, the code is kept", async () => {
    exec.on({ command: "ADD", ifName: "eth0" }, { error: { code: 11, msg: "ipam busy" } });
    const err = await failure(cmdAdd(req("ADD"), conf(), deps));
    expect(err).toMatchObject({
      code: 11,
      message: expect.stringContaining('default network "cluster" (eth0)'),
    });
    expect(exec.summary()).toEqual(["ADD eth0 bridge", "DEL eth0 bridge"]);
    expect(records()).toEqual([]);
  });

  it("N7.2 the last network failing: everything is torn down in reverse, the failed one first", async () => {
    exec.on({ command: "ADD", ifName: "net2" }, { throws: new TypeError("boom") });
    const err = await failure(cmdAdd(req("ADD"), conf(), deps));
    expect(err.code).toBe(999);
    expect(exec.summary()).toEqual([
      "ADD eth0 bridge",
      "ADD net1 macvlan",
      "ADD net2 tuning",
      "DEL net2 tuning",
      "DEL net1 macvlan",
      "DEL eth0 bridge",
    ]);
  });

  it("C4.1 B9 a delegate whose binary is missing never ran, so it is not DELed; the ones before it are", async () => {
    exec = new FakeExec(["bridge", "tuning"]);
    deps.exec = exec;
    const err = await failure(cmdAdd(req("ADD"), conf(), deps));
    expect(err).toMatchObject({ code: 7, message: expect.stringContaining('"macvlan"') });
    expect(exec.summary()).toEqual(["ADD eth0 bridge", "DEL eth0 bridge"]);
    expect(records()).toEqual([]);
  });

  it("N7.2 B62 M7 when the rollback fails too, the error says both, keeps the cause's code, and the record keeps only what is left for DEL", async () => {
    exec.on({ command: "ADD", ifName: "net1" }, { error: { code: 11, msg: "add broke" } });
    exec.on(
      { command: "DEL", ifName: "eth0" },
      { error: { code: 5, msg: "del broke" } },
      { times: 1 },
    );
    const err = await failure(cmdAdd(req("ADD"), conf(), deps));
    expect(err.code).toBe(11);
    expect(err.message).toMatch(/add broke.*rollback also failed.*del broke/);
    expect(records()).toEqual(["ctr1-eth0.json"]);
    const rec = JSON.parse(
      readFileSync(deps.records.path("ctr1", "eth0"), "utf8"),
    ) as ContainerRecord;
    expect(rec.attachments.map((a) => a.ifName)).toEqual(["eth0"]);
    // The runtime's DEL then finishes the job from the record.
    exec.calls.length = 0;
    await cmdDel(req("DEL"), noDelegates(), deps);
    expect(exec.summary()).toEqual(["DEL eth0 bridge"]);
    expect(records()).toEqual([]);
  });

  it("B4 an unusable netns fails with 4 before anything runs or is written", async () => {
    await expect(
      cmdAdd(req("ADD", { CNI_NETNS: join(deps.cniDir, "no-such-netns") }), conf(), deps),
    ).rejects.toMatchObject({ code: 4 });
    expect(exec.calls).toEqual([]);
    expect(records()).toEqual([]);
  });

  it("N7.3 N6.2 with uneven delegate delays, ADD and DEL still run one delegate at a time in order", async () => {
    exec.on({ ifName: "eth0" }, { result: { ips: [{ address: "10.0.0.2/24" }] } }, 15);
    exec.on({ ifName: "net1" }, { result: { ips: [{ address: "10.0.1.2/24" }] } }, 1);
    exec.on({ ifName: "net2" }, { result: { ips: [{ address: "10.0.2.2/24" }] } }, 8);
    await cmdAdd(req("ADD"), conf(), deps);
    await cmdDel(req("DEL"), conf(), deps);
    expect(exec.summary()).toEqual([
      "ADD eth0 bridge",
      "ADD net1 macvlan",
      "ADD net2 tuning",
      "DEL net2 tuning",
      "DEL net1 macvlan",
      "DEL eth0 bridge",
    ]);
    exec.assertSerial();
  });
});

describe("C2.4 the ADD output is in the config's cniVersion", () => {
  it.each(ALL_VERSIONS)("C2.4 %s", async (v) => {
    const delegates = three(v === "1.1.0" ? "0.4.0" : "1.1.0");
    const out = await cmdAdd(req("ADD"), conf({ delegates }, v), deps);
    expect(out.result.cniVersion).toBe(v);
    const r = out.result as unknown as Record<string, unknown>;
    if (v === "0.1.0" || v === "0.2.0") expect(r.ip4).toMatchObject({ ip: "10.0.0.2/24" });
    else
      expect(r.ips).toEqual([
        expect.objectContaining({
          address: "10.0.0.2/24",
          ...(v.startsWith("0.") ? { version: "4" } : {}),
        }),
      ]);
    // Not another attachment's result.
    expect(JSON.stringify(r)).not.toContain("10.0.1.");
  });
});

describe("records (M7, B44–B48)", () => {
  it("B45 a cniDir that refuses writes (EROFS) fails ADD with 5 before any delegate runs", async () => {
    class ReadOnlyStore extends RecordStore {
      override async write(): Promise<void> {
        throw ioError(
          `cannot write ${this.dir}`,
          Object.assign(new Error("read-only file system"), { code: "EROFS" }),
        );
      }
    }
    deps.records = new ReadOnlyStore(deps.cniDir);
    await expect(cmdAdd(req("ADD"), conf(), deps)).rejects.toMatchObject({
      code: 5,
      message: expect.stringContaining("EROFS"),
    });
    expect(exec.calls).toEqual([]);
  });

  it("B44 a cniDir that is itself a file fails ADD with 5 before any delegate runs", async () => {
    const file = join(deps.cniDir, "plain-file");
    writeFileSync(file, "");
    deps.records = new RecordStore(file);
    await expect(cmdAdd(req("ADD"), conf({ cniDir: file }), deps)).rejects.toMatchObject({
      code: 5,
    });
    expect(exec.calls).toEqual([]);
  });

  it.each([
    ["zero-byte", ""],
    [
      "truncated",
      '{"kind":"plexusRecordV1","containerId":"ctr1","ifName":"eth0","attachments":[{"netw',
    ],
  ])(
    "B47 ADD over a %s record overwrites it and tears nothing down from it",
    async (_what, text) => {
      mkdirp(join(deps.cniDir, "records"));
      writeFileSync(deps.records.path("ctr1", "eth0"), text);
      await cmdAdd(req("ADD"), conf(), deps);
      expect(exec.summary().every((s) => s.startsWith("ADD"))).toBe(true);
      const rec = JSON.parse(
        readFileSync(deps.records.path("ctr1", "eth0"), "utf8"),
      ) as ContainerRecord;
      expect(rec.attachments.map((a) => a.ifName)).toEqual(["eth0", "net1", "net2"]);
    },
  );

  it("B48 B64 ADD over the record of an earlier, cut-short ADD tears that one down first, from its record, then replaces it", async () => {
    await cmdAdd(
      req("ADD"),
      conf({ delegates: [{ cniVersion: "1.0.0", name: "old", type: "bridge" }] }),
      deps,
    );
    exec.calls.length = 0;
    await cmdAdd(req("ADD"), conf(), deps);
    expect(exec.summary()).toEqual([
      "DEL eth0 bridge",
      "ADD eth0 bridge",
      "ADD net1 macvlan",
      "ADD net2 tuning",
    ]);
    expect(exec.calls[0]!.stdin.name).toBe("old");
    const read = await deps.records.read("ctr1", "eth0");
    expect(read.state === "found" && read.record.attachments.map((a) => a.network)).toEqual([
      "cluster",
      "blue",
      "green",
    ]);
  });

  it("M7 B33 DEL runs from the record even when the config now has no delegates at all", async () => {
    await cmdAdd(req("ADD"), conf(), deps);
    exec.calls.length = 0;
    await cmdDel(req("DEL"), noDelegates(), deps);
    expect(exec.summary()).toEqual(["DEL net2 tuning", "DEL net1 macvlan", "DEL eth0 bridge"]);
    expect(exec.calls.every((c) => c.stdin.prevResult !== undefined)).toBe(true);
    expect(records()).toEqual([]);
  });

  it("B47 a truncated record on DEL falls back to the configured delegates and says so in a warning", async () => {
    await cmdAdd(req("ADD"), conf(), deps);
    const p = deps.records.path("ctr1", "eth0");
    writeFileSync(p, readFileSync(p, "utf8").slice(0, 40));
    exec.calls.length = 0;
    await cmdDel(req("DEL"), conf(), deps);
    expect(exec.summary()).toEqual(["DEL net2 tuning", "DEL net1 macvlan", "DEL eth0 bridge"]);
    expect(deps.logs.some((l) => l.level === "warn" && /unreadable/.test(l.msg))).toBe(true);
    expect(records()).toEqual([]);
  });

  it("B47 M7 a zero-byte record with no delegates to fall back to: DEL warns naming the file, removes it and succeeds (it could never succeed later)", async () => {
    mkdirp(join(deps.cniDir, "records"));
    writeFileSync(deps.records.path("ctr1", "eth0"), "");
    await cmdDel(req("DEL"), noDelegates(), deps);
    expect(exec.calls).toEqual([]);
    expect(records()).toEqual([]);
    expect(deps.logs).toContainEqual(
      expect.objectContaining({
        level: "warn",
        obj: expect.objectContaining({
          path: deps.records.path("ctr1", "eth0"),
          reason: "the file is empty",
        }),
      }),
    );
  });
});

describe("DEL (C2.5, N7.2, B62, B65)", () => {
  it("C2.5 B65 DEL of a container never added runs the configured delegates without prevResult, succeeds, and writes no record", async () => {
    await cmdDel(req("DEL", { CNI_CONTAINERID: "unknown", CNI_NETNS: "" }), conf(), deps);
    expect(exec.summary()).toEqual(["DEL net2 tuning", "DEL net1 macvlan", "DEL eth0 bridge"]);
    expect(exec.calls.every((c) => !("prevResult" in c.stdin) && c.env.CNI_NETNS === "")).toBe(
      true,
    );
    expect(records()).toEqual([]);
  });

  it("N7.2 B62 every failure is in one AggregateCniError, each naming its network", async () => {
    await cmdAdd(req("ADD"), conf(), deps);
    exec.on({ command: "DEL", ifName: "net2" }, { error: { code: 7, msg: "tuning DEL broke" } });
    exec.on({ command: "DEL", ifName: "eth0" }, { error: { code: 5, msg: "bridge DEL broke" } });
    const err = (await failure(cmdDel(req("DEL"), conf(), deps))) as CniError & { cause?: unknown };
    const agg = err.cause as AggregateCniError;
    expect(agg).toBeInstanceOf(AggregateCniError);
    expect(agg.errors.map((e) => e.code)).toEqual([7, 5]);
    expect(agg.errors[0]!.message).toContain('network "green" (net2)');
    expect(agg.errors[1]!.message).toContain('default network "cluster" (eth0)');
    expect(err.code).toBe(7);
    expect(exec.summary()).toContain("DEL net1 macvlan");
    expect(records()).toEqual(["ctr1-eth0.json"]);
  });

  it("K5 B62 a delegate's 'not found' wording does not reach the runtime, which would take it for success", async () => {
    await cmdAdd(req("ADD"), conf(), deps);
    exec.on(
      { command: "DEL", ifName: "net1" },
      { error: { code: 999, msg: "Link not found", details: "master eth9 Not Found" } },
    );
    const err = await failure(cmdDel(req("DEL"), conf(), deps));
    expect(err.message).not.toMatch(/not found/i);
    expect(err.details ?? "").not.toMatch(/not found/i);
    expect(records()).toEqual(["ctr1-eth0.json"]);
  });

  it("B62 a retried DEL after a failure finishes the job and removes the record", async () => {
    await cmdAdd(req("ADD"), conf(), deps);
    exec.on(
      { command: "DEL", ifName: "net1" },
      { error: { code: 11, msg: "try later" } },
      { times: 1 },
    );
    await expect(cmdDel(req("DEL"), conf(), deps)).rejects.toMatchObject({ code: 11 });
    await cmdDel(req("DEL", { CNI_NETNS: "" }), conf(), deps);
    expect(records()).toEqual([]);
  });
});

describe("CHECK, STATUS, GC corners", () => {
  it("C2.6 B66 CHECK without K8S_POD_* works, and the first failing attachment fails it with its own code", async () => {
    await cmdAdd(req("ADD", { CNI_ARGS: "" }), conf(), deps);
    await cmdCheck(req("CHECK", { CNI_ARGS: "" }), conf(), deps);
    exec.calls.length = 0;
    exec.on({ command: "CHECK", ifName: "net1" }, { error: { code: 104, msg: "mac changed" } });
    await expect(cmdCheck(req("CHECK"), conf(), deps)).rejects.toMatchObject({
      code: 104,
      message: expect.stringContaining('network "blue" (net1)'),
    });
    expect(exec.summary()).toEqual(["CHECK eth0 bridge", "CHECK net1 macvlan"]);
  });

  it("C2.6 CHECK skips an attachment whose delegate is older than 0.4.0 (no CHECK exists for it) and checks the others", async () => {
    const c = conf({
      delegates: [
        { cniVersion: "1.0.0", name: "new", type: "bridge" },
        { cniVersion: "0.3.1", name: "old", type: "macvlan" },
        { cniVersion: "0.4.0", name: "mid", type: "tuning" },
      ],
    });
    await cmdAdd(req("ADD"), c, deps);
    exec.calls.length = 0;
    await cmdCheck(req("CHECK"), c, deps);
    expect(exec.summary()).toEqual(["CHECK eth0 bridge", "CHECK net2 tuning"]);
  });

  it("C2.6 CHECK with a corrupt record is code 3 naming the file", async () => {
    mkdirp(join(deps.cniDir, "records"));
    writeFileSync(deps.records.path("ctr1", "eth0"), "{");
    await expect(cmdCheck(req("CHECK"), conf(), deps)).rejects.toMatchObject({
      code: 3,
      message: expect.stringContaining("unreadable"),
    });
    expect(exec.calls).toEqual([]);
  });

  it("C2.8 B66 STATUS keeps a delegate's 51 and names the network; earlier networks were asked, later ones not", async () => {
    const c = conf({ delegates: three("1.1.0") }, "1.1.0");
    exec.on({ command: "STATUS", type: "macvlan" }, { error: { code: 51, msg: "limited" } });
    await expect(cmdStatus(parseEnv({ CNI_COMMAND: "STATUS" }), c, deps)).rejects.toMatchObject({
      code: 51,
      message: expect.stringContaining('"blue"'),
    });
    expect(exec.summary()).toEqual(["STATUS  bridge", "STATUS  macvlan"]);
  });

  it("C2.9 B66 GC without pod args: failures are aggregated, the others still run, a failed stale record is kept", async () => {
    const c = (extra: Record<string, unknown> = {}) =>
      conf({ delegates: three("1.1.0"), ...extra }, "1.1.0");
    for (const id of ["keep", "stale1", "stale2"])
      await cmdAdd(req("ADD", { CNI_CONTAINERID: id, CNI_ARGS: "" }), c(), deps);
    mkdirp(join(deps.cniDir, "records"));
    writeFileSync(join(deps.cniDir, "records", "broken-eth0.json"), "");
    exec.calls.length = 0;
    exec.on(
      { command: "DEL", containerId: "stale1", ifName: "net1" },
      { error: { code: 5, msg: "stale1 net1 broke" } },
    );
    exec.on({ command: "GC", type: "tuning" }, { error: { code: 11, msg: "gc broke" } });
    const gcReq = parseEnv({ CNI_COMMAND: "GC", CNI_PATH: "/opt/cni/bin" });
    const err = (await failure(
      cmdGc(
        gcReq,
        c({ "cni.dev/valid-attachments": [{ containerID: "keep", ifname: "eth0" }] }),
        deps,
      ),
    )) as AggregateCniError;
    expect(err).toBeInstanceOf(AggregateCniError);
    // stale1 net1 fails in the container teardown and again when the "blue" network's GC retries
    // its still-cached attachment (libcni GCNetworkList); the tuning GC failure is the third.
    expect(err.errors.map((e) => e.message)).toEqual([
      expect.stringMatching(/^GC of container stale1: .*stale1 net1 broke/),
      expect.stringMatching(/^GC of network "blue": .*stale1 net1 broke/),
      expect.stringMatching(/^GC of network "green": .*gc broke/),
    ]);
    // stale1's other attachments and all of stale2's were still DELed; GC went to every network.
    expect(
      exec.calls.map((x) => `${x.command} ${x.containerId || "-"} ${x.ifName || "-"} ${x.type}`),
    ).toEqual([
      "DEL stale1 net2 tuning",
      "DEL stale1 net1 macvlan",
      "DEL stale1 eth0 bridge",
      "DEL stale2 net2 tuning",
      "DEL stale2 net1 macvlan",
      "DEL stale2 eth0 bridge",
      "GC - - bridge",
      "DEL stale1 net1 macvlan",
      "GC - - macvlan",
      "GC - - tuning",
    ]);
    expect(
      exec.calls.find((x) => x.command === "GC" && x.type === "bridge")!.stdin[
        "cni.dev/valid-attachments"
      ],
    ).toEqual([{ containerID: "keep", ifname: "eth0" }]);
    expect(records().sort()).toEqual(["broken-eth0.json", "keep-eth0.json", "stale1-eth0.json"]);
  });
});

it("C4.1 baseEnvOf passes the runtime's env through without CNI_* (those are set per delegate)", () => {
  expect(
    baseEnvOf({ PATH: "/bin", CNI_COMMAND: "ADD", CNI_PATH: "/x", HOME: undefined, LANG: "C" }),
  ).toEqual({
    PATH: "/bin",
    LANG: "C",
  });
});

/** RecordStore creates its dir on write; tests that plant a file before any write make it here. */
function mkdirp(dir: string) {
  mkdirSync(dir, { recursive: true });
}

describe("record names", () => {
  it("B48 M7 (container abc, interface net1-x) and (container abc-net1, interface x) keep separate records; each DEL finds its own", async () => {
    const c = conf({ delegates: [{ cniVersion: "1.0.0", name: "cluster", type: "bridge" }] });
    await cmdAdd(req("ADD", { CNI_CONTAINERID: "abc", CNI_IFNAME: "net1-x" }), c, deps);
    await cmdAdd(req("ADD", { CNI_CONTAINERID: "abc-net1", CNI_IFNAME: "x" }), c, deps);
    expect(records()).toHaveLength(2);
    await cmdDel(req("DEL", { CNI_CONTAINERID: "abc", CNI_IFNAME: "net1-x" }), c, deps);
    expect(records()).toEqual(["abc-net1-x.json"]);
    expect((await deps.records.read("abc-net1", "x")).state).toBe("found");
  });

  it("M7 a record written under the old name (<container>-<interface>.json, before hashed names) is still found and removed by DEL", async () => {
    const c = conf({ delegates: [{ cniVersion: "1.0.0", name: "cluster", type: "bridge" }] });
    await cmdAdd(req("ADD", { CNI_CONTAINERID: "abc", CNI_IFNAME: "net1-x" }), c, deps);
    const [hashed] = records();
    const text = readFileSync(join(deps.cniDir, "records", hashed!), "utf8");
    rmSync(join(deps.cniDir, "records", hashed!));
    writeFileSync(join(deps.cniDir, "records", "abc-net1-x.json"), text);
    expect((await deps.records.read("abc", "net1-x")).state).toBe("found");
    expect((await deps.records.read("abc-net1", "x")).state).toBe("missing");
    exec.calls.length = 0;
    await cmdDel(req("DEL", { CNI_CONTAINERID: "abc", CNI_IFNAME: "net1-x" }), c, deps);
    expect(exec.summary()).toEqual(["DEL net1-x bridge"]);
    expect(records()).toEqual([]);
  });
});
