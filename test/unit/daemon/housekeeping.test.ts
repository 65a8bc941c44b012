/**
 * The daemon's housekeeping timer (M7): passes never overlap, a failing pass is logged once per
 * cause, stop() waits for a pass under way; `--housekeeping-interval` takes seconds above 0 or "0"
 * (off). And what `plexus records` says of a pending record: why it is there and when it goes.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { resolveDaemonFlags, startHousekeeping } from "../../../src/daemon/main";
import { RecordStore, type ContainerRecord } from "../../../src/nodestate/record";
import { summarise } from "../../../src/ops/records";
import { recordingLogger } from "../../fakes/fake-exec";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe("the daemon's housekeeping timer (M7)", () => {
  it("M7 M13 runs a pass at once and then every interval after the last one ended, never two at a time; stop() waits for the pass under way", async () => {
    const log = recordingLogger();
    let running = 0;
    let most = 0;
    let passes = 0;
    const keeper = startHousekeeping(
      async () => {
        running++;
        most = Math.max(most, running);
        await sleep(30);
        passes++;
        running--;
      },
      { intervalMs: 5, log },
    );
    await sleep(150);
    await keeper.stop();
    const done = passes;
    expect(done).toBeGreaterThanOrEqual(2);
    expect(most).toBe(1);
    expect(running).toBe(0);
    await sleep(60);
    expect(passes).toBe(done);
  });

  it("M7 a pass that throws is logged at warn once per cause (a node without a Plexus config), then at debug", async () => {
    const log = recordingLogger();
    const keeper = startHousekeeping(
      async () => {
        throw new Error("no CNI config in /etc/cni/net.d");
      },
      { intervalMs: 5, log },
    );
    await sleep(80);
    await keeper.stop();
    const failed = log.lines.filter((l) => l.msg === "housekeeping pass failed");
    expect(failed.length).toBeGreaterThanOrEqual(2);
    expect(failed.filter((l) => l.level === "warn")).toHaveLength(1);
  });

  it("M7 no pass without a housekeeping function or with interval 0", async () => {
    let passes = 0;
    const pass = async () => {
      passes++;
    };
    await startHousekeeping(pass, { intervalMs: 0, log: recordingLogger() }).stop();
    await sleep(20);
    expect(passes).toBe(0);
  });

  it("M7 --housekeeping-interval: 30 s by default, 0 turns it off, anything else not above 0 is a usage error", () => {
    const env = { NODE_NAME: "n" };
    expect(resolveDaemonFlags({}, env).housekeepingIntervalMs).toBe(30_000);
    expect(resolveDaemonFlags({ housekeepingInterval: "0" }, env).housekeepingIntervalMs).toBe(0);
    const flags = (v: string) => resolveDaemonFlags({ housekeepingInterval: v }, env);
    const ms = (v: string) => flags(v).housekeepingIntervalMs;
    expect(ms("2.5")).toBe(2500);
    for (const bad of ["-1", "abc", "", "3601"]) {
      expect(() => ms(bad)).toThrow(/--housekeeping-interval/);
    }
  });
});

describe("plexus records: a pending record (M7)", () => {
  const record: ContainerRecord = {
    kind: "plexusRecordV1",
    containerId: "ctr1",
    ifName: "eth0",
    netns: "",
    cniVersion: "1.0.0",
    cniArgs: "",
    pod: { namespace: "app", name: "web" },
    delFailedAt: "2026-11-26T10:00:00.000Z",
    attachments: [
      {
        network: "app/bad",
        ifName: "net1",
        isDefault: false,
        conf: { cniVersion: "1.0.0", name: "bad", plugins: [{ type: "bridge" }] },
        lastDelError: { code: 999, msg: "invalid CIDR address: 10.0.0.128/33" },
      },
    ],
  };

  it("M7 shows why (each network's last DEL error) and when it goes (failedDelRetrySeconds after the first failure; never with retryDeleteOnError)", () => {
    const dir = mkdtempSync(join(tmpdir(), "plx-records-"));
    try {
      const store = new RecordStore(dir);
      const read = { state: "found", record } as const;
      const s = summarise(read, store, { failedDelRetryMs: 3_600_000, retryDeleteOnError: false });
      expect(s).toMatchObject({
        state: "pending",
        delFailedAt: "2026-11-26T10:00:00.000Z",
        retryUntil: "2026-11-26T11:00:00.000Z",
        lastErrors: ["app/bad@net1: code 999: invalid CIDR address: 10.0.0.128/33"],
      });
      expect(s.why).toMatch(/invalid CIDR address.*until 2026-11-26T11:00:00.000Z, then abandons/);
      const kept = summarise(read, store, { failedDelRetryMs: 0, retryDeleteOnError: true });
      expect(kept.retryUntil).toBe("never");
      expect(kept.why).toContain("never abandoned");
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
