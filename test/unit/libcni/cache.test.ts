/**
 * The libcni-style result cache (C3.3) on a temp cniDir: round trip, replacement, corrupt entries.
 */
import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { ResultCache } from "../../../src/libcni/cache";
import { stateFileName } from "../../../src/store/state-names";

let cniDir: string;
let cache: ResultCache;
beforeEach(() => {
  cniDir = mkdtempSync(join(tmpdir(), "plx-cache-"));
  cache = new ResultCache(cniDir);
});
afterEach(() => rmSync(cniDir, { recursive: true, force: true }));

const k = { networkName: "net-a", containerId: "ctr1", ifName: "eth0" };
const entry = (address: string, extra: Record<string, unknown> = {}) => ({
  ...k,
  config: '{"cniVersion":"1.0.0","name":"net-a","plugins":[{"type":"bridge"}]}',
  netns: "/var/run/netns/x",
  cniArgs: "K=V",
  result: { cniVersion: "1.0.0", ips: [{ address }] },
  ...extra,
});

describe("ResultCache", () => {
  it("C3.3 an entry is written under <cniDir>/results/<network>-<container>-<ifname>, mode 0600, and read back", async () => {
    await cache.set(entry("10.0.0.2/24"));
    expect(cache.path(k)).toBe(join(cniDir, "results", "net-a-ctr1-eth0"));
    expect(statSync(cache.path(k)).mode & 0o777).toBe(0o600);
    expect(await cache.get(k)).toEqual({ kind: "cniCacheV1", ...entry("10.0.0.2/24") });
    expect(readdirSync(join(cniDir, "results"))).toEqual(["net-a-ctr1-eth0"]);
  });

  it("B48 a second ADD's entry replaces the first one, leaving one file and no temp files", async () => {
    await cache.set(entry("10.0.0.2/24"));
    await cache.set(entry("10.0.0.3/24"));
    expect((await cache.get(k))!.result).toEqual({
      cniVersion: "1.0.0",
      ips: [{ address: "10.0.0.3/24" }],
    });
    expect(readdirSync(join(cniDir, "results"))).toEqual(["net-a-ctr1-eth0"]);
  });

  it("C2.5 a missing entry is undefined and deleting it is fine", async () => {
    expect(await cache.get(k)).toBeUndefined();
    await cache.delete(k);
    await cache.set(entry("10.0.0.2/24"));
    await cache.delete(k);
    expect(await cache.get(k)).toBeUndefined();
  });

  it.each([
    ["zero bytes", ""],
    ["truncated JSON", '{"kind":"cniCacheV1","networkName":"net-a","contai'],
    ["JSON null", "null"],
    ["a list", "[]"],
    [
      "a foreign record",
      JSON.stringify({
        kind: "somethingElse",
        networkName: "net-a",
        containerId: "ctr1",
        ifName: "eth0",
      }),
    ],
    [
      "a record without ifName",
      JSON.stringify({ kind: "cniCacheV1", networkName: "net-a", containerId: "ctr1" }),
    ],
  ])("B47 an entry holding %s reads as absent and is left out of list()", async (_what, text) => {
    mkdirSync(join(cniDir, "results"), { recursive: true });
    writeFileSync(cache.path(k), text);
    expect(await cache.get(k)).toBeUndefined();
    expect(await cache.list()).toEqual([]);
  });

  it("C2.9 list() returns every readable entry, filtered by network, skipping leftover temp files", async () => {
    await cache.set(entry("10.0.0.2/24"));
    await cache.set(entry("10.0.0.3/24", { containerId: "ctr2" }));
    await cache.set(entry("10.0.0.4/24", { networkName: "net-b" }));
    writeFileSync(
      join(cniDir, "results", ".net-a-ctr3-eth0.tmp-1-1-x"),
      JSON.stringify({ kind: "cniCacheV1", ...k, containerId: "ctr3" }),
    );
    expect((await cache.list()).map((e) => `${e.networkName}/${e.containerId}`).sort()).toEqual([
      "net-a/ctr1",
      "net-a/ctr2",
      "net-b/ctr1",
    ]);
    expect((await cache.list("net-a")).map((e) => e.containerId).sort()).toEqual(["ctr1", "ctr2"]);
    expect(await cache.list("net-c")).toEqual([]);
  });

  it("C2.9 list() of a cniDir that has no results yet is empty", async () => {
    expect(await cache.list()).toEqual([]);
  });

  it("B44 an unwritable results dir (it is a file) fails with 5 and leaves no temp file", async () => {
    writeFileSync(join(cniDir, "results"), "x");
    await expect(cache.set(entry("10.0.0.2/24"))).rejects.toMatchObject({
      code: 5,
      message: expect.stringContaining(cache.path(k)),
    });
    expect(readdirSync(cniDir)).toEqual(["results"]);
  });

  it("C3.3 an entry that exists but cannot be read (a directory) is an I/O error 5, not silently absent", async () => {
    mkdirSync(cache.path(k), { recursive: true });
    await expect(cache.get(k)).rejects.toMatchObject({ code: 5 });
  });
});

describe("state file names", () => {
  it("B48 readable libcni-style names when unambiguous; a hashed name when a later part has a dash or the name is too long; never the same file for two identities", () => {
    expect(stateFileName(["net-a", "ctr1", "eth0"])).toBe("net-a-ctr1-eth0");
    const a = stateFileName(["abc", "net1-x"], ".json");
    const b = stateFileName(["abc-net1", "x"], ".json");
    expect(b).toBe("abc-net1-x.json");
    expect(a).toMatch(/^~[0-9a-f]{64}\.json$/);
    const long = stateFileName(["n".repeat(250), "ctr1", "eth0"]);
    expect(long).toMatch(/^~[0-9a-f]{64}$/);
    expect(new Set([a, b, long, stateFileName(["n".repeat(249), "ctr1", "eth0"])]).size).toBe(4);
  });

  it("B48 a cache entry whose identity is not the one asked for is not returned", async () => {
    const dir = mkdtempSync(join(tmpdir(), "plx-cache-"));
    try {
      const cache = new ResultCache(dir);
      const k = { networkName: "net-a", containerId: "ctr1", ifName: "eth0" };
      await cache.set({ ...k, config: "{}", result: { cniVersion: "1.0.0" } as never });
      expect(await cache.get(k)).toBeDefined();
      writeFileSync(
        cache.path(k),
        JSON.stringify({ kind: "cniCacheV1", ...k, containerId: "other", config: "{}" }),
      );
      expect(await cache.get(k)).toBeUndefined();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("B64 temp files of writers that were killed mid-write are swept on the next write; a live writer's are kept", async () => {
    const dir = mkdtempSync(join(tmpdir(), "plx-cache-"));
    try {
      const results = join(dir, "results");
      mkdirSync(results);
      const dead = spawnSync("true").pid!;
      writeFileSync(join(results, `.net-a-ctr9-eth0.tmp-${dead}-1-abc`), "half");
      writeFileSync(join(results, `.net-a-ctr8-eth0.tmp-${process.ppid}-1-abc`), "in progress");
      await new ResultCache(dir).set({
        networkName: "net-b",
        containerId: "ctr1",
        ifName: "eth0",
        config: "{}",
      });
      expect(readdirSync(results).sort()).toEqual([
        `.net-a-ctr8-eth0.tmp-${process.ppid}-1-abc`,
        "net-b-ctr1-eth0",
      ]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
