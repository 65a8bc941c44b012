/**
 * What Plexus finds in its shared directories is input, not truth (dist/plexus, the fixture
 * plugin):
 * a planted record naming `../` makes no path outside cniDir (records rm, GC, the lock clean-up),
 * and FIFOs where records and cached results belong hang neither `records list`, `doctor` nor GC.
 */
import { execFileSync, spawnSync, spawn } from "node:child_process";
import {
  existsSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  utimesSync,
  writeFileSync,
} from "node:fs";
import { join, relative } from "node:path";
import { gunzipSync } from "node:zlib";
import { describe, expect, it, onTestFinished } from "vitest";
import { runPlexus, TEST_PATH } from "../support/plexus-bin";
import { useSandbox } from "./use-sandbox";

const ctx = useSandbox();
/** A person's shell: no CNI_* variables. */
const OPS_ENV = { PATH: TEST_PATH };

/** Every file under `dir` with its content (a FIFO as "fifo"), for a before/after comparison. */
function snapshot(dir: string, skip: string[]): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (d: string) => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const p = join(d, e.name);
      if (skip.includes(p)) continue;
      if (e.isDirectory()) walk(p);
      else out[relative(dir, p)] = e.isFIFO() ? "fifo" : readFileSync(p, "utf8");
    }
  };
  walk(dir);
  return out;
}

function plantedRecord(containerId: string, ifName: string, conf: Record<string, unknown>) {
  return {
    kind: "plexusRecordV1",
    containerId,
    ifName,
    netns: "",
    cniVersion: "1.0.0",
    cniArgs: "",
    attachments: [
      {
        network: "net-a",
        ifName,
        isDefault: true,
        conf: { cniVersion: "1.0.0", name: "net-a", plugins: [conf] },
      },
    ],
  };
}

describe("B71 record contents never become paths", () => {
  it("B71 a planted record with ../ in its names: GC and records rm (with --teardown) delete nothing outside cniDir and run no delegate for it", async () => {
    const { sb } = ctx;
    const delegate = sb.delegate("net-a", { cniVersion: "1.1.0" });
    const conf = sb.config([delegate], { cniVersion: "1.1.0" });
    const records = join(sb.cniDir, "records");
    mkdirSync(records, { recursive: true });
    // What the old code would have removed: <root>/victim-eth0.json (the record),
    // <root>/victim-eth0.lock (its lock).
    for (const victim of ["victim-eth0.json", "victim-eth0.lock"])
      writeFileSync(join(sb.root, victim), "keep me");
    writeFileSync(
      join(records, "evil-eth0.json"),
      JSON.stringify(plantedRecord("../../victim", "eth0", delegate)),
    );
    writeFileSync(
      join(records, "evil2-x.json"),
      JSON.stringify(plantedRecord("evil2", "../../../x", delegate)),
    );
    const before = snapshot(sb.root, [sb.logPath]);

    const gc = await sb.run("GC", { ...conf, "cni.dev/valid-attachments": [] });
    expect(gc.code, gc.stdout + gc.stderr).toBe(0);
    expect(sb.calls()).toEqual(["GC net-a"]);
    // GC wrote only its node-wide stamp (when it rebuilt pending/ from the records).
    const now = snapshot(sb.root, [sb.logPath]);
    const { "cni/housekeeping/pending-synced": stamp, ...afterGc } = now;
    expect(stamp).toBe("");
    expect(afterGc).toEqual(before);

    const list = await runPlexus({
      args: ["records", "list", "--cni-dir", sb.cniDir, "-o", "json"],
      env: OPS_ENV,
    });
    expect(list.code, list.stderr).toBe(0);
    const listed = JSON.parse(list.stdout) as Array<{ id: string; state: string; why: string }>;
    expect(listed.map((r) => [r.id, r.state])).toEqual([
      ["evil-eth0", "corrupt"],
      ["evil2-x", "corrupt"],
    ]);
    expect(listed[0]!.why).toMatch(/CNI_CONTAINERID "\.\.\/\.\.\/victim" is invalid.*left alone/);

    for (const id of ["evil-eth0", "evil2-x"]) {
      const rm = await runPlexus({
        args: ["records", "rm", id, "--teardown", "--cni-dir", sb.cniDir],
        env: OPS_ENV,
      });
      expect(rm.code, rm.stderr).toBe(0);
    }
    // Only the planted files themselves went (by the names they were found under); no delegate ran.
    const after = snapshot(sb.root, [sb.logPath]);
    expect(Object.keys(before).filter((k) => !(k in after))).toEqual([
      "cni/records/evil-eth0.json",
      "cni/records/evil2-x.json",
    ]);
    expect(readFileSync(join(sb.root, "victim-eth0.json"), "utf8")).toBe("keep me");
    expect(readFileSync(join(sb.root, "victim-eth0.lock"), "utf8")).toBe("keep me");
    expect(sb.calls()).toEqual(["GC net-a"]);
  });
});

describe("B72 FIFOs where state files belong", () => {
  it("B72 FIFOs in records/ and results/: records list, doctor and GC each finish within 5 s", async () => {
    const { sb } = ctx;
    const conf = sb.config([sb.delegate("net-a", { cniVersion: "1.1.0" })], {
      cniVersion: "1.1.0",
    });
    // A real record and cached result beside the FIFOs: the tools still see them.
    expect((await sb.run("ADD", conf)).code).toBe(0);
    execFileSync("mkfifo", [join(sb.cniDir, "records", "fifo-eth0.json")]);
    execFileSync("mkfifo", [join(sb.cniDir, "results", "net-a-fifo-eth0")]);
    const confDir = join(sb.root, "net.d");
    mkdirSync(confDir);
    writeFileSync(
      join(confDir, "00-plexus.conflist"),
      JSON.stringify({ cniVersion: "1.0.0", name: "plexus-net", plugins: [conf] }),
    );

    const list = await runPlexus({
      args: ["records", "list", "--cni-dir", sb.cniDir],
      env: OPS_ENV,
      timeoutMs: 10_000,
    });
    expect(list.timedOut).toBe(false);
    expect(list.durationMs).toBeLessThan(5000);
    expect(list.stdout).toMatch(/ctr1-eth0\s+ok/);
    expect(list.stdout).toMatch(/fifo-eth0\s+corrupt.*not read: it is a FIFO, not a regular file/);

    const doctor = await runPlexus({
      args: ["doctor", "--cni-conf-dir", confDir],
      env: OPS_ENV,
      timeoutMs: 10_000,
    });
    expect(doctor.timedOut).toBe(false);
    expect(doctor.durationMs).toBeLessThan(5000);
    expect(doctor.stdout + doctor.stderr).toMatch(
      /corrupt record.*fifo-eth0: not read: it is a FIFO/,
    );

    const gc = await sb.run(
      "GC",
      { ...conf, "cni.dev/valid-attachments": [] },
      {},
      { timeoutMs: 10_000 },
    );
    expect(gc.timedOut).toBe(false);
    expect(gc.durationMs).toBeLessThan(5000);
    expect(gc.code, gc.stdout + gc.stderr).toBe(0);
    expect(sb.calls()).toEqual(["ADD net-a", "DEL net-a", "GC net-a"]);
    expect(existsSync(join(sb.cniDir, "records", "fifo-eth0.json"))).toBe(true);
  });
});

describe("B72 a FIFO in place of a container's cached result", () => {
  it("B72 DEL goes on without prevResult (a warning), finishes at once, exits 0 and removes the FIFO", async () => {
    const { sb } = ctx;
    const logFile = join(sb.root, "plexus.log");
    const conf = sb.config([sb.delegate("net-a")], {
      logFile,
      logLevel: "verbose",
      logToStderr: false,
    });
    expect((await sb.run("ADD", conf)).code).toBe(0);
    const [entry] = sb.resultFiles();
    rmSync(join(sb.cniDir, "results", entry!));
    execFileSync("mkfifo", [join(sb.cniDir, "results", entry!)]);
    const del = await sb.run("DEL", conf, {}, { timeoutMs: 10_000 });
    expect(del.timedOut).toBe(false);
    expect(del.durationMs).toBeLessThan(5000);
    expect(del.code, del.stdout).toBe(0);
    expect(del.stdout).toBe("");
    const delStdin = sb.invocations().find((i) => i.command === "DEL")!.stdin as Record<
      string,
      unknown
    >;
    expect(delStdin).not.toHaveProperty("prevResult");
    expect(readFileSync(logFile, "utf8")).toMatch(/cached result unreadable; DEL without it/);
    expect(sb.resultFiles()).toEqual([]);
    expect(sb.recordFiles()).toEqual([]);
  });
});

describe("B72 a directory in place of a container's cached result", () => {
  it("B72 DEL goes on without prevResult, exits 0 and removes the directory: a planted tree never fails DEL for good", async () => {
    const { sb } = ctx;
    const conf = sb.config([sb.delegate("net-a")]);
    expect((await sb.run("ADD", conf)).code).toBe(0);
    const [entry] = sb.resultFiles();
    const planted = join(sb.cniDir, "results", entry!);
    rmSync(planted);
    mkdirSync(join(planted, "inner"), { recursive: true });
    writeFileSync(join(planted, "inner", "x"), "x");
    const del = await sb.run("DEL", conf);
    expect(del.code, del.stdout + del.stderr).toBe(0);
    expect(existsSync(planted)).toBe(false);
    expect(sb.recordFiles()).toEqual([]);
    expect((await sb.run("DEL", conf)).code).toBe(0);
  });
});

describe("B64 the temp file of a record writer killed before its rename", () => {
  it("B64 a DEL that finds no record still removes it (the writer's pid is dead): the ADD it belonged to left nothing else", async () => {
    const { sb } = ctx;
    const conf = sb.config([sb.delegate("net-a")]);
    const dead = spawnSync(process.execPath, ["-e", "0"]).pid;
    mkdirSync(join(sb.cniDir, "records"), { recursive: true });
    const temp = join(sb.cniDir, "records", `.ctr1-eth0.json.tmp-${dead}-1-k1ll3d`);
    writeFileSync(temp, '{"containerId":"ctr1"');
    const del = await sb.run("DEL", conf);
    expect(del.code, del.stdout + del.stderr).toBe(0);
    expect(existsSync(temp)).toBe(false);
  });
});

describe("B74 log rotation in the executable", () => {
  it("B74 an ADD rotates a 2 MiB log past a stale rotate lock; a detached child writes the .gz; ten-day-old sibling logs stay under maxAge 1", async () => {
    const { sb } = ctx;
    const logDir = join(sb.root, "logs");
    mkdirSync(logDir);
    const logFile = join(logDir, "plexus.log");
    const body = "old line\n".repeat(240_000); // ~2.1 MiB
    writeFileSync(logFile, body);
    // Siblings ten days old (maxAge 1 would take them if they counted as backups), and a rotate
    // lock left two minutes ago by a killed process.
    const old = Date.now() / 1000 - 10 * 86_400;
    for (const sibling of ["plexus-daemon.log", "plexus-install.log"]) {
      writeFileSync(join(logDir, sibling), sibling);
      utimesSync(join(logDir, sibling), old, old);
    }
    writeFileSync(join(logDir, "plexus.log.rotate-lock"), "");
    utimesSync(
      join(logDir, "plexus.log.rotate-lock"),
      Date.now() / 1000 - 120,
      Date.now() / 1000 - 120,
    );
    const conf = sb.config([sb.delegate("net-a")], {
      logFile,
      logLevel: "info",
      logToStderr: false,
      logOptions: { maxSize: 1, maxBackups: 3, maxAge: 1, compress: true },
    });
    const r = await sb.run("ADD", conf);
    expect(r.code, r.stdout + r.stderr).toBe(0);
    await expect
      .poll(() => readdirSync(logDir).sort(), { timeout: 10_000, interval: 50 })
      .toEqual([
        expect.stringMatching(/^plexus-\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d\.\d{3}Z\.log\.gz$/),
        "plexus-daemon.log",
        "plexus-install.log",
        "plexus.log",
      ]);
    const gz = readdirSync(logDir).find((n) => n.endsWith(".gz"))!;
    expect(gunzipSync(readFileSync(join(logDir, gz))).toString()).toBe(body);
    expect(readFileSync(join(logDir, "plexus-daemon.log"), "utf8")).toBe("plexus-daemon.log");
  });
});

describe("records rm --teardown takes the container's lock", () => {
  it("records rm --teardown waits for an ADD that holds the container's lock, then finds its rollback did the work: one DEL, never alongside the ADD", async () => {
    const { sb } = ctx;
    const conf = sb.config([sb.delegate("net-a", { behaviours: { ADD: { do: "hang" } } })], {
      addTimeoutSeconds: 2,
    });
    const add = sb.run("ADD", conf);
    await expect.poll(() => sb.calls(), { timeout: 5000, interval: 20 }).toEqual(["ADD net-a"]);
    expect(sb.recordFiles()).toEqual(["ctr1-eth0.json"]);
    const started = performance.now();
    const rm = await runPlexus({
      args: ["records", "rm", "ctr1-eth0", "--teardown", "--cni-dir", sb.cniDir],
      env: { ...OPS_ENV, CNI_PATH: sb.binDir },
      timeoutMs: 15_000,
    });
    const waitedMs = performance.now() - started;
    expect((await add).code).toBe(1);
    expect(rm.code, rm.stderr).toBe(0);
    expect(rm.stdout).toContain("was removed while this waited for the container's lock");
    // It waited for the ADD's deadline and rollback instead of tearing down under the running ADD.
    expect(waitedMs).toBeGreaterThan(1000);
    expect(sb.calls()).toEqual(["ADD net-a", "DEL net-a"]);
    expect(sb.recordFiles()).toEqual([]);
  });
});

describe("B72 what sits at a container's lock path", () => {
  it("B72 a FIFO at the lock path, flocked by another process: ADD neither reads it nor waits for it, makes its own lock file, and DEL leaves nothing", async () => {
    const { sb } = ctx;
    const conf = sb.config([sb.delegate("net-a")]);
    const lock = join(sb.cniDir, "locks", "ctr1-eth0.lock");
    mkdirSync(join(sb.cniDir, "locks"), { recursive: true });
    execFileSync("mkfifo", [lock]);
    // Held open read-write (so reading it would wait for data, not for a writer) and flocked.
    const holder = spawn(
      "bash",
      ["-c", 'exec 9<>"$1"; flock 9; echo locked; exec sleep 30', "_", lock],
      {
        stdio: ["ignore", "pipe", "inherit"],
      },
    );
    onTestFinished(() => void holder.kill("SIGKILL"));
    await new Promise((resolve) => holder.stdout.once("data", resolve));
    const add = await sb.run("ADD", conf, {}, { timeoutMs: 10_000 });
    expect(add.timedOut).toBe(false);
    expect(add.durationMs).toBeLessThan(5000);
    expect(add.code, add.stdout + add.stderr).toBe(0);
    const del = await sb.run("DEL", conf, {}, { timeoutMs: 10_000 });
    expect(del.code, del.stdout + del.stderr).toBe(0);
    expect(existsSync(lock)).toBe(false);
    expect(sb.calls()).toEqual(["ADD net-a", "DEL net-a"]);
  });

  it("B72 a symlink at the lock path is not followed: its target keeps its content, the link is replaced", async () => {
    const { sb } = ctx;
    const conf = sb.config([sb.delegate("net-a")]);
    const victim = join(sb.root, "victim");
    writeFileSync(victim, "keep me");
    const lock = join(sb.cniDir, "locks", "ctr1-eth0.lock");
    mkdirSync(join(sb.cniDir, "locks"), { recursive: true });
    symlinkSync(victim, lock);
    const add = await sb.run("ADD", conf);
    expect(add.code, add.stdout + add.stderr).toBe(0);
    expect(readFileSync(victim, "utf8")).toBe("keep me");
    expect(lstatSync(lock).isSymbolicLink()).toBe(false);
    expect((await sb.run("DEL", conf)).code).toBe(0);
    expect(readFileSync(victim, "utf8")).toBe("keep me");
  });
});
