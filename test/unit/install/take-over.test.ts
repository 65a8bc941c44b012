/**
 * Taking a node over from Multus in place and handing it back (M11), in-process on temp dirs: the
 * installer run with the args of Multus's own thin DaemonSet, Multus's config never taken as the
 * primary network, the rename sequence checked against libcni's choice by a watcher thread polling
 * the dir throughout (the first config file is always a working Multus config or Plexus's), and
 * the plan over generated directories.
 */
import { execFileSync } from "node:child_process";
import * as fs from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Worker } from "node:worker_threads";
import fc from "fast-check";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { translateMultusFlags } from "../../../src/install/multus-flags";
import { resolveOptions } from "../../../src/install/options";
import type { InstallFlags, InstallOptions } from "../../../src/install/options";
import { choosePrimary, readConfDir } from "../../../src/install/primary";
import { runInstall } from "../../../src/install/run";
import { MOVED_SUFFIX } from "../../../src/install/kept-copies";
import { isGuard } from "../../../src/install/multus-guard";
import {
  type ConfDirEntry,
  newMultusMemory,
  planTakeOver,
  takeOverBlockers,
  takeOverFromMultus,
} from "../../../src/install/take-over";
import { waitFor } from "../../support/plexus-bin";
import { recordingLogger } from "./recording-logger";
import { propertyRuns } from "../../support/property";

const { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync } = fs;
const { writeFileSync } = fs;

let root: string;
let confDir: string;
let saDir: string;

beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), "plx-takeover-"));
  confDir = join(root, "net.d");
  saDir = join(root, "sa");
  for (const d of [confDir, join(root, "bin"), saDir]) mkdirSync(d);
  writeFileSync(join(saDir, "token"), "token-1");
  writeFileSync(join(saDir, "ca.crt"), "ca-1");
});

afterEach(() => rmSync(root, { recursive: true, force: true }));

const bridgeList = { cniVersion: "0.4.0", name: "mynet", plugins: [{ type: "bridge" }] };
const bridge = JSON.stringify(bridgeList);
/** What Multus thin's entrypoint writes with --multus-conf-file=auto (its multusConfTemplate). */
const multusConf = JSON.stringify({
  cniVersion: "0.4.0",
  name: "multus-cni-network",
  type: "multus",
  kubeconfig: "/etc/cni/net.d/multus.d/multus.kubeconfig",
  delegates: [JSON.parse(bridge)],
});

/** The args of Multus v4.0.2's deployments/multus-daemonset.yml, on this test's dirs. */
function multusDaemonSetArgs(): string[] {
  const auto = "--multus-conf-file=auto";
  return [auto, `--multus-autoconfig-dir=${confDir}`, `--cni-conf-dir=${confDir}`];
}

/** The translated args as commander would hand them over (only the flags used here). */
function options(args: string[]): InstallOptions {
  const flags: InstallFlags = {
    cniConfDir: confDir,
    cniBinDir: join(root, "bin"),
    hostPrefix: "",
    kubeconfigFileHost: join(confDir, "plexus.d", "plexus.kubeconfig"),
    tokenFile: join(saDir, "token"),
    caFile: join(saDir, "ca.crt"),
    skipBinaryCopy: true,
    networkName: "plexus-cni-network",
    primaryConfigTimeout: "10",
    pollInterval: "40",
    installerLogLevel: "info",
    once: true,
  };
  for (const a of translateMultusFlags(args)) {
    if (a === "--no-take-over-multus") flags.takeOverMultus = false;
    if (a.startsWith("--nad-conf-dir=")) flags.nadConfDir = a.slice("--nad-conf-dir=".length);
  }
  const env = { KUBERNETES_SERVICE_HOST: "10.96.0.1", KUBERNETES_SERVICE_PORT: "443" };
  return resolveOptions(flags, env);
}

async function install(args: string[]) {
  const log = recordingLogger();
  const code = await runInstall(options(args), { log, signal: new AbortController().signal });
  return { code, log };
}

/**
 * A thread that polls the conf dir as libcni does (config names in byte order, the first one read
 * and decoded) until told to stop, and reports each distinct first file it saw by name and type,
 * plus anything else (no config, an undecodable one) as a violation.
 */
function startWatcher(dir: string) {
  // [0]: stop, [1]: polls completed.
  const stop = new Int32Array(new SharedArrayBuffer(8));
  const code = `
    const { workerData, parentPort } = require("node:worker_threads");
    const { readdirSync, readFileSync } = require("node:fs");
    const { dir, stop } = workerData;
    const seen = new Set(); const bad = []; let polls = 0;
    for (; Atomics.load(stop, 0) === 0; Atomics.store(stop, 1, ++polls)) {
      // libcni's ConfFiles: config names that are not directories, in byte order.
      const names = readdirSync(dir, { withFileTypes: true })
        .filter((d) => !d.isDirectory() && /\\.(conf|conflist|json)$/.test(d.name))
        .map((d) => d.name).sort();
      const first = names[0];
      if (!first) { bad.push("no config"); continue; }
      try {
        const v = JSON.parse(readFileSync(dir + "/" + first, "utf8"));
        seen.add(first + ":" + (v.type ?? v.plugins[0].type));
      } catch (e) {
        // Renamed away (or a guard renamed in) between readdir and read: poll again, as libcni
        // does at the next change; anything else is a violation.
        if (e.code !== "ENOENT" && e.code !== "EISDIR") bad.push(first + ": " + e.message);
      }
    }
    parentPort.postMessage({ seen: [...seen], bad, polls });`;
  const worker = new Worker(code, { eval: true, workerData: { dir, stop } });
  type Seen = { seen: string[]; bad: string[]; polls: number };
  const result = new Promise<Seen>((resolve, reject) => {
    worker.once("message", resolve);
    worker.once("error", reject);
  });
  return {
    started: () => waitFor(() => Atomics.load(stop, 1) >= 1, 10_000, "the watcher's first poll"),
    /**
     * Returns once a whole poll began after this call: the watcher has seen the directory as it
     * is now, however busy the machine (the deadline only guards against a hang).
     */
    settled() {
      const now = Atomics.load(stop, 1);
      return waitFor(() => Atomics.load(stop, 1) >= now + 2, 10_000, "a whole poll of the watcher");
    },
    async stop() {
      Atomics.store(stop, 0, 1);
      const r = await result;
      await worker.terminate();
      return r;
    },
  };
}

describe("taking a node over from Multus (installer, temp dirs)", () => {
  it("M11 M14 with Multus's DaemonSet args, its config goes once Plexus's is in place", async () => {
    writeFileSync(join(confDir, "00-multus.conf"), multusConf);
    writeFileSync(join(confDir, "10-bridge.conflist"), bridge);
    const { code, log } = await install(multusDaemonSetArgs());
    expect(code).toBe(0);
    const conf = JSON.parse(readFileSync(join(confDir, "00-plexus.conflist"), "utf8"));
    // The primary network is the bridge, never Multus wrapped inside Plexus.
    expect(conf.plugins[0].clusterNetwork).toBe(join(confDir, "10-bridge.conflist"));
    expect(conf.plugins[0].confDir).toBe("/etc/cni/multus/net.d");
    // M18: under its name now, a guard (a directory: libcni skips it), not a config.
    expect(isGuard(join(confDir, "00-multus.conf"))).toBe(true);
    expect(readFileSync(join(confDir, `00-multus.conf${MOVED_SUFFIX}`), "utf8")).toBe(multusConf);
    expect(log.text()).toMatch(/took over from Multus.*00-multus\.conf\.plexus-moved/);
    expect(log.text()).toMatch(/00-multus\.conf is Multus's config.*not a primary config/);
  });

  it("M11 M14 --multus-cni-conf-dir keeps its meaning: the config reads NAD files there", async () => {
    writeFileSync(join(confDir, "10-bridge.conflist"), bridge);
    const nads = "--multus-cni-conf-dir=/etc/cni/nads";
    const { code } = await install([...multusDaemonSetArgs(), nads]);
    expect(code).toBe(0);
    const conf = JSON.parse(readFileSync(join(confDir, "00-plexus.conflist"), "utf8"));
    expect(conf.plugins[0].confDir).toBe("/etc/cni/nads");
    // Given under the host prefix, as a container path: the node's path goes in the config.
    const mapped = resolveOptions(
      {
        cniConfDir: "/host/etc/cni/net.d",
        cniBinDir: "/host/opt/cni/bin",
        hostPrefix: "/host",
        kubeconfigFileHost: "/etc/cni/net.d/plexus.d/plexus.kubeconfig",
        tokenFile: "/sa/token",
        caFile: "/sa/ca.crt",
        skipBinaryCopy: true,
        networkName: "n",
        primaryConfigTimeout: "1",
        pollInterval: "40",
        installerLogLevel: "info",
        nadConfDir: "/host/etc/cni/multus/net.d",
      },
      {},
    );
    expect(mapped.nadConfDirHost).toBe("/etc/cni/multus/net.d");
  });

  it("M11 M14 take-over and back, repeated: the first config is Multus's or Plexus's", async () => {
    writeFileSync(join(confDir, "00-multus.conf"), multusConf);
    writeFileSync(join(confDir, "10-bridge.conflist"), bridge);
    const watcher = startWatcher(confDir);
    try {
      await watcher.started();
      for (let i = 0; i < 5; i++) {
        expect((await install(multusDaemonSetArgs())).code).toBe(0);
        // M18: a guard (a directory, which libcni skips) now holds Multus's name.
        expect(isGuard(join(confDir, "00-multus.conf"))).toBe(true);
        await watcher.settled();
        const back = await install([...multusDaemonSetArgs(), "--take-over-multus=false"]);
        expect(back.code).toBe(0);
        expect(back.log.text()).toMatch(/handed the node back to Multus/);
        expect(readFileSync(join(confDir, "00-multus.conf"), "utf8")).toBe(multusConf);
        await watcher.settled();
      }
    } finally {
      const r = await watcher.stop();
      expect(r.bad).toEqual([]);
      expect(r.polls).toBeGreaterThan(0);
      const both = ["00-multus.conf:multus", "00-plexus.conflist:plexus"];
      expect(new Set(r.seen)).toEqual(new Set(both));
    }
  });

  it("M11 M14 a non-Multus config between Multus's and Plexus's blocks the take-over", async () => {
    writeFileSync(join(confDir, "00-multus.conf"), multusConf);
    const nm = { cniVersion: "0.4.0", name: "nm", type: "bridge" };
    writeFileSync(join(confDir, "00-nm.conf"), JSON.stringify(nm));
    const { code, log } = await install(multusDaemonSetArgs());
    expect(code).toBe(0);
    expect(existsSync(join(confDir, "00-multus.conf"))).toBe(true);
    const errors = log.lines.filter((l) => l.level === "error");
    const blocked = errors.filter((l) => /00-nm\.conf also sorts/.test(l.msg));
    expect(blocked).toHaveLength(1);
  });

  it("M11 M14 --no-take-over-multus leaves Multus's config first", async () => {
    writeFileSync(join(confDir, "00-multus.conf"), multusConf);
    writeFileSync(join(confDir, "10-bridge.conflist"), bridge);
    expect((await install([...multusDaemonSetArgs(), "--take-over-multus=false"])).code).toBe(0);
    expect(readdirSync(confDir).sort()).toEqual([
      "00-multus.conf",
      "00-plexus.conflist",
      "10-bridge.conflist",
      "plexus.d",
    ]);
  });
});

describe("Multus's config is never the primary network", () => {
  it.each(["multus", "multus-shim"])("M11 M14 type %s is refused, single or in a list", (type) => {
    for (const value of [
      { cniVersion: "0.4.0", name: "m", type },
      { cniVersion: "0.4.0", name: "m", plugins: [{ type }] },
    ]) {
      const files = [
        { path: "/d/00-multus.conf", content: JSON.stringify(value) },
        { path: "/d/10-bridge.conflist", content: bridge },
      ];
      const r = choosePrimary(files);
      expect(r.primary?.path).toBe("/d/10-bridge.conflist");
      // Expected while switching: a note, not a warning (M18: not a warning on every pass).
      expect(r.notes.join("\n")).toMatch(/00-multus\.conf is Multus's config/);
      expect(r.warnings).toEqual([]);
    }
  });
});

describe("planTakeOver over generated directories", () => {
  const CONFIG = /\.(conf|conflist|json)$/;
  const name = fc.stringMatching(/^[0-9a-z-]{1,6}\.(conf|conflist|json|txt)$/);
  const kind = fc.constantFrom("multus", "multus-shim", "bridge", "garbage", "unreadable");
  const conf = (type: string) => JSON.stringify({ cniVersion: "1.0.0", name: "n", type });
  const content = (k: string) => (k === "garbage" ? "{" : conf(k));
  /** A file the shared reader refuses (a FIFO, too large): listed by libcni all the same. */
  const entry = (n: string, k: string): ConfDirEntry =>
    k === "unreadable" ? { name: n, refused: "it is a FIFO" } : { name: n, content: content(k) };

  const dirs = fc.uniqueArray(fc.tuple(name, kind), { selector: (t) => t[0], maxLength: 8 });
  const plexusList = JSON.stringify({ plugins: [{ type: "plexus" }] });
  const plexus = { name: "00-plexus.conflist", content: plexusList };

  it("M11 M14 B90 after the planned renames Plexus's config is first, Multus's before each", () => {
    fc.assert(
      fc.property(dirs, (generated) => {
        const files = [...generated.map(([n, k]) => entry(n, k)), plexus];
        const plan = planTakeOver(files, "00-plexus.conflist");
        const configs = (list: typeof files) =>
          list.filter((f) => CONFIG.test(f.name)).sort((a, b) => (a.name < b.name ? -1 : 1));
        if (plan.action === "blocked") {
          // The file named is one the runtime would load before Plexus's, and not Multus's.
          expect(plan.name < "00-plexus.conflist").toBe(true);
          const named = files.find((f) => f.name === plan.name)!;
          expect("refused" in named || !/"type":"multus/.test(named.content)).toBe(true);
        }
        if (plan.action !== "move") return;
        let left = files;
        for (const moved of plan.names) {
          const first = configs(left)[0]!;
          expect(first.name).toBe(moved);
          expect("content" in first && JSON.parse(first.content).type).toMatch(/^multus(-shim)?$/);
          left = left.filter((f) => f.name !== moved);
        }
        expect(configs(left)[0]!.name).toBe("00-plexus.conflist");
      }),
      propertyRuns({ seed: 20261126, numRuns: 300 }),
    );
  });
});

describe("B90 a config file Plexus cannot read blocks the take-over", () => {
  const multus = { name: "00-multus.conf", content: multusConf };
  const plexusList = JSON.stringify({ plugins: [{ type: "plexus" }] });
  const plexus = { name: "00-plexus.conflist", content: plexusList };

  it.each([
    ["a FIFO", "it is a FIFO, not a regular file"],
    ["a 2 MiB file", "it is 2097152 bytes, more than the 1048576-byte limit"],
    ["a symlink to a directory", "it is a directory, not a regular file"],
  ])("B90 %s between Multus's and Plexus's config: blocked, the file named", (_, reason) => {
    const odd = { name: "00-nm.conf", refused: reason };
    const plan = planTakeOver([plexus, odd, multus], plexus.name);
    expect(plan).toEqual({
      action: "blocked",
      name: "00-nm.conf",
      why: `cannot be read as a CNI config (${reason})`,
    });
  });

  it("B90 one sorting after Plexus's is no obstacle; one that is not JSON is named as such", () => {
    const after = { name: "99-nm.conf", refused: "it is a FIFO, not a regular file" };
    const plan = planTakeOver([plexus, after, multus], plexus.name);
    expect(plan).toEqual({ action: "move", names: ["00-multus.conf"] });
    const garbage = { name: "00-nm.json", content: "not json" };
    expect(takeOverBlockers([plexus, garbage, multus], plexus.name)).toEqual([
      { name: "00-nm.json", why: "is not a CNI config (not a JSON object)" },
    ]);
  });

  it("B90 readConfDir lists what libcni lists: FIFOs, big files, symlinks; no directory", () => {
    writeFileSync(join(confDir, "00-multus.conf"), multusConf);
    execFileSync("mkfifo", [join(confDir, "00-fifo.conf")]);
    writeFileSync(join(confDir, "00-big.json"), Buffer.alloc(2 * 1024 * 1024, 0x20));
    mkdirSync(join(confDir, "00-dir.conf"));
    symlinkSync(join(root, "bin"), join(confDir, "00-linkdir.conflist"));
    symlinkSync(join(root, "nowhere"), join(confDir, "00-dangling.conf"));
    execFileSync("mkfifo", [join(confDir, "00-other.txt")]);
    const read = readConfDir(confDir);
    expect(read.files.map((f) => f.path)).toEqual([join(confDir, "00-multus.conf")]);
    const refused = Object.fromEntries(
      read.refused.map((r) => [r.path.slice(confDir.length + 1), r.reason]),
    );
    expect(refused).toEqual({
      "00-fifo.conf": "it is a FIFO, not a regular file",
      "00-big.json": "it is 2097152 bytes, more than the 1048576-byte limit",
      "00-linkdir.conflist": "it is a directory, not a regular file",
      "00-dangling.conf": "it is a symbolic link to nothing",
    });
  });

  it.each([
    ["a FIFO", () => execFileSync("mkfifo", [join(confDir, "00-nm.conf")])],
    ["a 2 MiB file", () => writeFileSync(join(confDir, "00-nm.conf"), Buffer.alloc(2 << 20, 32))],
  ])(
    "B90 the installer with %s there: no take-over, the file named with what to do",
    async (_, make) => {
      writeFileSync(join(confDir, "00-multus.conf"), multusConf);
      writeFileSync(join(confDir, "10-bridge.conflist"), bridge);
      make();
      const { code, log } = await install(multusDaemonSetArgs());
      expect(code).toBe(0);
      expect(readFileSync(join(confDir, "00-multus.conf"), "utf8")).toBe(multusConf);
      expect(existsSync(join(confDir, `00-multus.conf${MOVED_SUFFIX}`))).toBe(false);
      const blocked = log.lines.filter((l) => l.level === "error" && /not taking over/.test(l.msg));
      expect(blocked).toHaveLength(1);
      expect(blocked[0]!.msg).toContain(join(confDir, "00-nm.conf"));
      expect(blocked[0]!.msg).toMatch(/cannot be read as a CNI config.*Move it out of/);
    },
  );

  it("B90 a directory named like a config is not a file: the take-over proceeds", () => {
    writeFileSync(join(confDir, "00-multus.conf"), multusConf);
    mkdirSync(join(confDir, "00-nm.conf"));
    writeFileSync(join(confDir, "00-plexus.conflist"), plexusList);
    const log = recordingLogger();
    const moved = takeOverFromMultus({ confDir, plexusName: plexus.name }, newMultusMemory(), log);
    expect(moved.moved).toEqual(["00-multus.conf"]);
  });
});
