import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { ResultCache } from "../../../src/libcni/cache";
import { RecordStore } from "../../../src/nodestate/record";

const conf = { cniVersion: "1.0.0", name: "net-a", plugins: [{ type: "bridge" }] };
const record = (containerId: string, ifName: string, attIf = "eth0", network = "net-a") => ({
  kind: "plexusRecordV1",
  containerId,
  ifName,
  netns: "",
  cniVersion: "1.0.0",
  cniArgs: "",
  attachments: [{ network, ifName: attIf, isDefault: true, conf: { ...conf, name: network } }],
});

describe("state files are input: names are checked before they become paths", () => {
  let cniDir: string;
  beforeEach(() => {
    cniDir = mkdtempSync(join(tmpdir(), "plx-store-"));
    mkdirSync(join(cniDir, "records"));
    mkdirSync(join(cniDir, "results"));
  });
  afterEach(() => rmSync(cniDir, { recursive: true, force: true }));

  const plant = (name: string, value: unknown) =>
    writeFileSync(join(cniDir, "records", name), JSON.stringify(value));

  it("B71 a record holding ../ in its container ID, interface or an attachment is corrupt, never found", async () => {
    const store = new RecordStore(cniDir);
    plant("evil-eth0.json", record("../../../../tmp/x", "eth0"));
    plant("ctr2-eth0.json", record("ctr2", "eth0", "../x"));
    plant("ctr3-eth0.json", record("ctr3", "eth0", "eth0", "../../net"));
    // A hashed name (its interface holds a dash) matches ../ contents only if nothing checks the
    // names.
    plant(
      `${new RecordStore(cniDir).path("../up", "a-b").split("/").pop()}`,
      record("../up", "a-b"),
    );
    const reads = await store.list();
    expect(reads).toHaveLength(4);
    for (const r of reads) {
      expect(r.state).toBe("corrupt");
      expect(r.state === "corrupt" && r.reason).toMatch(/invalid|not a valid|left alone/);
    }
  });

  it("B71 a record whose (valid) names disagree with its file name is corrupt: a file never speaks for another container", async () => {
    const store = new RecordStore(cniDir);
    plant("ctr1-eth0.json", record("ctr9", "eth0"));
    const [read] = await store.list();
    expect(read).toMatchObject({
      state: "corrupt",
      reason: expect.stringContaining("do not match its file name, which should be ctr9-eth0.json"),
    });
    // Asked for by its own name, it is not ctr1's record either.
    expect((await store.read("ctr1", "eth0")).state).toBe("missing");
    plant("ctr9-eth0.json", record("ctr9", "eth0"));
    expect((await store.list()).filter((r) => r.state === "found")).toHaveLength(1);
  });

  it("B71 a cached result naming ../ is not listed (GC never removes by its names)", async () => {
    const cache = new ResultCache(cniDir);
    await cache.set({ networkName: "net-a", containerId: "ctr1", ifName: "eth0", config: "{}" });
    writeFileSync(
      join(cniDir, "results", "net-a-x-eth0"),
      JSON.stringify({
        kind: "cniCacheV1",
        networkName: "../..",
        containerId: "x",
        ifName: "eth0",
        config: "{}",
      }),
    );
    expect((await cache.list()).map((e) => e.containerId)).toEqual(["ctr1"]);
  });

  it("an entry under libcni's <network>-<container>-<interface> name (what Plexus wrote before hashed names) is still listed", async () => {
    const cache = new ResultCache(cniDir);
    const entry = {
      kind: "cniCacheV1",
      networkName: "net-a",
      containerId: "ctr1",
      ifName: "net1-x",
      config: "{}",
    };
    expect(cache.path(entry).split("/").pop()).toMatch(/^~/);
    writeFileSync(join(cniDir, "results", "net-a-ctr1-net1-x"), JSON.stringify(entry));
    expect((await cache.list()).map((e) => e.ifName)).toEqual(["net1-x"]);
  });

  it("B72 B73 a FIFO, a directory or a symlink in records/ or results/ is reported at once, not read", async () => {
    const store = new RecordStore(cniDir);
    execFileSync("mkfifo", [join(cniDir, "records", "fifo-eth0.json")]);
    mkdirSync(join(cniDir, "records", "dir-eth0.json"));
    writeFileSync(join(cniDir, "outside.json"), JSON.stringify(record("link", "eth0")));
    symlinkSync(join(cniDir, "outside.json"), join(cniDir, "records", "link-eth0.json"));
    execFileSync("mkfifo", [join(cniDir, "results", "net-a-ctr1-eth0")]);
    const started = Date.now();
    const reads = await store.list();
    expect(reads.map((r) => r.state === "corrupt" && r.reason).sort()).toEqual([
      "not read: it is a FIFO, not a regular file",
      "not read: it is a directory, not a regular file",
      "not read: it is a symbolic link (not followed)",
    ]);
    expect(await new ResultCache(cniDir).list()).toEqual([]);
    // Asked for directly, an entry that exists but is no file is an I/O error (5), not a hang.
    await expect(store.read("link", "eth0")).rejects.toMatchObject({ code: 5 });
    expect(Date.now() - started).toBeLessThan(2000);
  });
});
