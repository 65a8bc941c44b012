/**
 * M18: the take-over holds while Multus's DaemonSet still runs. Its entrypoint renders its config
 * again on every start, wrapping the first other config of the conf dir, which is Plexus's once
 * the node has switched. In-process on temp dirs: guards keep every name it writes; a Multus config
 * wrapping Plexus is removed and never kept, said once per change; a kept copy is never written
 * over; the way back restores the newest kept copy that does not wrap Plexus, and never one that
 * does; the readiness probe does not take such a config for a node handed back.
 */
import * as fs from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { classifyRuntimeConfig, switchedVerdict } from "../../../src/install/config-state";
import { keptName, MOVED_SUFFIX } from "../../../src/install/kept-copies";
import { wrapsPlexus } from "../../../src/install/multus-config";
import { isGuard, listGuards, removeGuard } from "../../../src/install/multus-guard";
import { resolveOptions, type InstallOptions } from "../../../src/install/options";
import { runInstall } from "../../../src/install/run";
import { waitFor } from "../../support/plexus-bin";
import { recordingLogger } from "./recording-logger";

const { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, renameSync } = fs;
const { rmSync, writeFileSync } = fs;

let root: string;
let confDir: string;

beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), "plx-m18-"));
  confDir = join(root, "net.d");
  for (const d of [confDir, join(root, "bin"), join(root, "sa")]) mkdirSync(d);
  writeFileSync(join(root, "sa", "token"), "token-1");
  writeFileSync(join(root, "sa", "ca.crt"), "ca-1");
  writeFileSync(join(confDir, "10-bridge.conflist"), BRIDGE);
});

afterEach(() => rmSync(root, { recursive: true, force: true }));

const bridgeList = { cniVersion: "0.4.0", name: "mynet", plugins: [{ type: "bridge" }] };
const BRIDGE = JSON.stringify(bridgeList);
const plexusList = {
  cniVersion: "0.4.0",
  name: "plexus-cni-network",
  plugins: [{ type: "plexus", clusterNetwork: "/etc/cni/net.d/10-bridge.conflist" }],
};

/** What Multus thin's entrypoint renders (its multusConfTemplate) around `delegate`. */
function multusAround(delegate: object, logLevel?: string): string {
  const kubeconfig = "/etc/cni/net.d/multus.d/multus.kubeconfig";
  const conf = { cniVersion: "0.4.0", name: "multus-cni-network", type: "multus", kubeconfig };
  return JSON.stringify({ ...conf, ...(logLevel ? { logLevel } : {}), delegates: [delegate] });
}
const MULTUS = multusAround(bridgeList);
const WRAPPING = multusAround(plexusList);

function options(extra: Partial<InstallOptions> = {}): InstallOptions {
  const o = resolveOptions(
    {
      cniConfDir: confDir,
      cniBinDir: join(root, "bin"),
      hostPrefix: "",
      kubeconfigFileHost: join(confDir, "plexus.d", "plexus.kubeconfig"),
      tokenFile: join(root, "sa", "token"),
      caFile: join(root, "sa", "ca.crt"),
      skipBinaryCopy: true,
      networkName: "plexus-cni-network",
      primaryConfigTimeout: "10",
      pollInterval: "20",
      installerLogLevel: "info",
      once: true,
    },
    { KUBERNETES_SERVICE_HOST: "10.96.0.1", KUBERNETES_SERVICE_PORT: "443" },
  );
  return { ...o, ...extra };
}

async function install(extra: Partial<InstallOptions> = {}) {
  const log = recordingLogger();
  const code = await runInstall(options(extra), { log, signal: new AbortController().signal });
  return { code, log };
}

/** The runtime's view (libcni's ConfFiles): config names that are not directories, in order. */
function runtimeFirst(): string | undefined {
  return readdirSync(confDir, { withFileTypes: true })
    .filter((d) => !d.isDirectory() && /\.(conf|conflist|json)$/.test(d.name))
    .map((d) => d.name)
    .sort()[0];
}

/** What a guard of Plexus's looks like is not what is checked here: it is removed by hand. */
function dropGuards(): void {
  for (const name of listGuards(confDir, readdirSync(confDir))) removeGuard(confDir, name);
}

const read = (name: string) => readFileSync(join(confDir, name), "utf8");

describe("M18 a Multus config that wraps Plexus", () => {
  it("M18 is one whose delegates run Plexus: single, in a list, nested, or clusterNetwork", () => {
    const parse = (text: string) => JSON.parse(text) as Record<string, unknown>;
    expect(wrapsPlexus(parse(WRAPPING))).toBe(true);
    expect(wrapsPlexus(parse(MULTUS))).toBe(false);
    const list = { cniVersion: "1.0.0", name: "m", plugins: [{ type: "multus" }] };
    const inList = { ...list, plugins: [{ type: "multus", delegates: [plexusList] }] };
    expect(wrapsPlexus(inList)).toBe(true);
    expect(wrapsPlexus(list)).toBe(false);
    // Multus v4.0.2 wrapping its own config (its entrypoint restarted), which wraps Plexus.
    expect(wrapsPlexus(parse(multusAround(parse(WRAPPING))))).toBe(true);
    expect(wrapsPlexus(parse(multusAround(parse(MULTUS))))).toBe(false);
    const single = { type: "plexus", name: "p", cniVersion: "0.4.0" };
    expect(wrapsPlexus({ type: "multus-shim", Delegates: [single] })).toBe(true);
    const byPath = { type: "multus", clusterNetwork: "/etc/cni/net.d/00-plexus.conflist" };
    expect(wrapsPlexus(byPath)).toBe(true);
    expect(wrapsPlexus({ ...byPath, clusterNetwork: "/etc/cni/net.d/10-bridge.conflist" })).toBe(
      false,
    );
    // Plexus's own config is not Multus's.
    expect(wrapsPlexus(plexusList)).toBe(false);
  });
});

describe("M18 the take-over holds while Multus's DaemonSet runs", () => {
  it("M18 guards hold every name Multus's entrypoint writes; the runtime skips them", async () => {
    writeFileSync(join(confDir, "00-multus.conf"), MULTUS);
    // A temp file an earlier render of Multus's entrypoint left behind.
    writeFileSync(join(confDir, "00-multus.conf.new"), "{");
    expect((await install()).code).toBe(0);
    for (const name of ["00-multus.conf", "00-multus.conflist", "00-multus.conf.new"])
      expect(isGuard(join(confDir, name)), name).toBe(true);
    expect(read(`00-multus.conf${MOVED_SUFFIX}`)).toBe(MULTUS);
    expect(runtimeFirst()).toBe("00-plexus.conflist");
    // What Multus thin's entrypoint does (open the temp name, then rename it), and thick's
    // daemon (write the name in place), both fail now.
    expect(() => writeFileSync(join(confDir, "00-multus.conf.new"), WRAPPING)).toThrow(/EISDIR/);
    writeFileSync(join(root, "rendered"), WRAPPING);
    expect(() => renameSync(join(root, "rendered"), join(confDir, "00-multus.conf"))).toThrow();
    expect(() => writeFileSync(join(confDir, "00-multus.conflist"), WRAPPING)).toThrow(/EISDIR/);
    expect(runtimeFirst()).toBe("00-plexus.conflist");
  });

  it("M18 one that wraps Plexus is removed, never kept; said once per change", async () => {
    writeFileSync(join(confDir, "00-multus.conf"), MULTUS);
    const log = recordingLogger();
    const abort = new AbortController();
    const done = runInstall(options({ once: false }), { log, signal: abort.signal });
    const kept = join(confDir, `00-multus.conf${MOVED_SUFFIX}`);
    try {
      await waitFor(() => existsSync(kept), 10_000, "the take-over");
      // Written past the guards (as a render racing the first rename could): twice the same,
      // then another one.
      for (const text of [WRAPPING, WRAPPING, multusAround(plexusList, "debug")]) {
        dropGuards();
        writeFileSync(join(confDir, "00-multus.conf"), text);
        await waitFor(() => isGuard(join(confDir, "00-multus.conf")), 10_000, "its removal");
      }
    } finally {
      abort.abort();
      expect(await done).toBe(0);
    }
    expect(readFileSync(kept, "utf8")).toBe(MULTUS);
    expect(readdirSync(confDir).filter((n) => n.includes(MOVED_SUFFIX))).toEqual([
      `00-multus.conf${MOVED_SUFFIX}`,
    ]);
    const said = log.lines.filter((l) => /wrapping Plexus's 00-plexus\.conflist/.test(l.msg));
    expect(said.map((l) => l.level)).toEqual(["error", "error"]);
    expect(said[0]!.msg).toMatch(/removed, not kept; the way back restores 00-multus\.conf\./);
    expect(said[0]!.msg).toMatch(/delete Multus's DaemonSet/);
    const back = await install({ takeOverMultus: false });
    expect(back.code).toBe(0);
    expect(read("00-multus.conf")).toBe(MULTUS);
    expect(listGuards(confDir, readdirSync(confDir))).toEqual([]);
  });

  it("M18 a kept copy is never written over; the way back puts the newest good one", async () => {
    const older = multusAround(bridgeList, "error");
    writeFileSync(join(confDir, `00-multus.conf${MOVED_SUFFIX}`), older);
    writeFileSync(join(confDir, "00-multus.conf"), MULTUS);
    expect((await install()).code).toBe(0);
    expect(read(keptName("00-multus.conf", 1))).toBe(older);
    expect(read(keptName("00-multus.conf", 2))).toBe(MULTUS);
    // The same config written again is kept already: no third copy.
    dropGuards();
    writeFileSync(join(confDir, "00-multus.conf"), MULTUS);
    expect((await install()).code).toBe(0);
    expect(existsSync(join(confDir, keptName("00-multus.conf", 3)))).toBe(false);
    const back = await install({ takeOverMultus: false });
    expect(read("00-multus.conf")).toBe(MULTUS);
    expect(read(keptName("00-multus.conf", 1))).toBe(older);
    const restored = back.log.lines.find((l) => /handed the node back/.test(l.msg));
    expect(restored?.fields).toMatchObject({ keptStill: [keptName("00-multus.conf", 1)] });
  });

  it("M18 the way back never restores a kept copy that wraps Plexus", async () => {
    // What an earlier installer kept over the good copy when Multus re-rendered.
    writeFileSync(join(confDir, `00-multus.conf${MOVED_SUFFIX}`), WRAPPING);
    expect((await install()).code).toBe(0);
    const first = await install({ takeOverMultus: false });
    expect(first.code).toBe(0);
    expect(existsSync(join(confDir, "00-multus.conf"))).toBe(false);
    expect(runtimeFirst()).toBe("00-plexus.conflist");
    const refused = first.log.lines.filter((l) => /not handing .* back to Multus/.test(l.msg));
    expect(refused.map((l) => l.level)).toEqual(["error"]);
    expect(refused[0]!.msg).toMatch(/00-multus\.conf\.plexus-moved \(wraps-plexus\)/);
    // With a good copy beside it (older), that one goes back.
    renameSync(join(confDir, keptName("00-multus.conf", 1)), join(root, "wrapping"));
    writeFileSync(join(confDir, keptName("00-multus.conf", 1)), MULTUS);
    renameSync(join(root, "wrapping"), join(confDir, keptName("00-multus.conf", 2)));
    expect((await install({ takeOverMultus: false })).code).toBe(0);
    expect(read("00-multus.conf")).toBe(MULTUS);
  });

  it("M18 handed back, a first config of Multus's that wraps Plexus is not ready", () => {
    const dir = "/host/etc/cni/net.d";
    const files = [
      { path: `${dir}/00-multus.conf`, content: WRAPPING },
      { path: `${dir}/00-plexus.conflist`, content: JSON.stringify(plexusList) },
    ];
    const found = classifyRuntimeConfig(files);
    expect(found).toMatchObject({ state: "multus", wrapsPlexus: true });
    const expectBack = { confDir: dir, plexusName: "00-plexus.conflist", takeOverMultus: false };
    const verdict = switchedVerdict(found, expectBack);
    expect(verdict.ready).toBe(false);
    expect(verdict.message).toMatch(/wraps Plexus's: every ADD through it fails/);
    const good = classifyRuntimeConfig([{ ...files[0]!, content: MULTUS }, files[1]!]);
    expect(switchedVerdict(good, expectBack).ready).toBe(true);
  });

  it("M18 Multus's config passed over as primary: said once, at info, not every pass", async () => {
    writeFileSync(join(confDir, "00-multus.conf"), MULTUS);
    const log = recordingLogger();
    const abort = new AbortController();
    const o = options({ once: false, takeOverMultus: false });
    const done = runInstall(o, { log, signal: abort.signal });
    try {
      await waitFor(() => existsSync(join(confDir, "00-plexus.conflist")), 10_000, "the install");
      // Passes at the poll interval (20 ms), and one per change of the dir.
      for (let i = 0; i < 5; i++) {
        writeFileSync(join(confDir, `unrelated-${i}.txt`), "x");
        await new Promise((r) => setTimeout(r, 60));
      }
    } finally {
      abort.abort();
      expect(await done).toBe(0);
    }
    const about = log.lines.filter((l) => l.msg.includes("00-multus.conf is Multus's config"));
    expect(about.map((l) => l.level)).toEqual(["info"]);
  });
});
