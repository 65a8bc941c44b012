/**
 * M1, B17 against Go itself: Plexus's key fold is Go's on every code point, and a tenant's NAD
 * whose keys come in every spelling Go reads as one (ASCII case, ſ, K, two spellings, nested)
 * reaches its delegates with no key Plexus owns carrying the tenant's value, as a Go plugin built
 * on libcni's types decodes the delegate's stdin. Go's decoder is test/support/go/jsonfold, built
 * here; it also runs as the delegate in the binary's ADD. Fails without Go under CI=true.
 */
import { execFileSync } from "node:child_process";
import { copyFileSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ConfList } from "../../src/cni/conf";
import { CniError, Code } from "../../src/cni/errors";
import { foldKey } from "../../src/cni/keys";
import { addNetworkList } from "../../src/libcni/conflist";
import { ResultCache } from "../../src/libcni/cache";
import { vouchForAdd } from "../../src/libcni/vouch";
import type { ExecRequest, PluginExec } from "../../src/invoke/plugin-exec";
import { parsePlexusConf, type PlexusConf } from "../../src/config/plugin-conf";
import { silentLogger } from "../../src/log/logger";
import { applySelection } from "../../src/npwg/delegate-args";
import { resolveNadConfig } from "../../src/npwg/nad";
import type { Nad, NetworkSelection } from "../../src/npwg/types";
import { buildGoJson, goDecode, type GoJson, type GoSeen } from "../support/go-json";
import { FC_SEED, oracleFold, plexusConfig, TENANT, tenantConfig } from "../support/key-spellings";
import { cniError, requirePlexusBinary, Sandbox } from "../support/plexus-bin";
import { propertyRuns } from "../support/property";

let go: GoJson | undefined;
beforeAll(() => {
  go = buildGoJson();
});
afterAll(() => go?.dispose());

/** Skips a test (outside CI only: buildGoJson throws under CI=true) when Go is missing. */
function needGo(skip: (note: string) => void): GoJson {
  if (!go) skip("no Go on this machine");
  return go!;
}

describe("M1 the key fold is Go's, code point by code point", () => {
  it("M1 foldKey gives what Go's unicode.SimpleFold gives for every code point", (t) => {
    const bin = needGo(t.skip);
    const text = execFileSync(bin.bin, ["fold"], { encoding: "utf8", maxBuffer: 64 << 20 });
    const goFold = new Map(
      text
        .trim()
        .split("\n")
        .map((line) => line.split(" ").map((hex) => Number.parseInt(hex, 16)) as [number, number]),
    );
    expect(goFold.get(0x17f)).toBe(0x53);
    expect(goFold.get(0x212a)).toBe(0x4b);
    const wrong: string[] = [];
    for (let cp = 0; cp <= 0x10ffff; cp++) {
      if (cp >= 0xd800 && cp <= 0xdfff) continue;
      const want = goFold.get(cp) ?? cp;
      const got = foldKey(String.fromCodePoint(cp)).codePointAt(0);
      if (got === want || wrong.length >= 10) continue;
      wrong.push(`U+${cp.toString(16)}: ${got} (Go: ${want})`);
    }
    expect(wrong, "regenerate src/cni/fold-table.ts: node scripts/fold-table.mjs").toEqual([]);
    // Lone surrogates: Go's decoder reads each as U+FFFD, so two of them are one key.
    const [surrogates] = goDecode(bin, ['{"\\ud800": 1, "\\udc00": 2}']) as GoSeen[];
    expect(surrogates!.map).toEqual({ "\ufffd": 2 });
    expect(foldKey("\ud800")).toBe(foldKey("\udc00"));
  });
});

type Notes = Record<string, string>;

/** The pod asks for these in cni-args: Plexus merges them into every plugin's args.cni. */
const SELECTION: NetworkSelection = {
  namespace: "tenant",
  name: "net-a",
  cniArgs: { ips: ["10.9.9.9/24"], mac: "02:00:00:00:00:09" },
};
const RESULT = { ips: [{ address: "10.1.2.3/24" }] };
const OWNED = ["cniVersion", "name", "capabilities", "runtimeConfig", "prevResult", "args"];

const nad = (config: unknown): Nad => ({
  apiVersion: "k8s.cni.cncf.io/v1",
  kind: "NetworkAttachmentDefinition",
  metadata: { namespace: "tenant", name: "net-a" },
  spec: { config: JSON.stringify(config) },
});

/** The key Go reads for `name` in a generated object (its alphabet: ASCII, ſ, K): the last. */
function goRead(obj: Record<string, unknown>, name: string): unknown {
  const keys = Object.keys(obj).filter((k) => oracleFold(k) === oracleFold(name));
  return keys.length ? obj[keys.at(-1)!] : undefined;
}

function pluginCount(config: Record<string, unknown>): number {
  const plugins = goRead(config, "plugins");
  return Array.isArray(plugins) ? plugins.length : 1;
}

/** What the delegates' Go decoder read of each plugin's stdin, in order, is Plexus's own. */
function expectOwnedKeysArePlexus(
  config: Record<string, unknown>,
  seen: GoSeen[],
  cniArgs?: Record<string, unknown>,
): void {
  expect(seen).toHaveLength(pluginCount(config));
  seen.forEach((view, i) => {
    const where = `plugin ${i} of ${JSON.stringify(config)}`;
    const { struct, map } = view;
    expect(struct.cniVersion, where).toBe("1.0.0");
    expect(struct.name, where).toBe(goRead(config, "name") ?? "net-a");
    expect(struct.capabilities, where).toBeUndefined();
    expect(struct.runtimeConfig, where).toBeUndefined();
    if (i === 0) expect(struct.prevResult, where).toBeUndefined();
    else expect(struct.prevResult, where).toEqual({ cniVersion: "1.0.0", ...RESULT });
    if (cniArgs) expect(struct.args?.cni, where).toEqual(cniArgs);
    for (const owned of OWNED) {
      const spellings = Object.keys(map).filter((k) => oracleFold(k) === oracleFold(owned));
      expect(
        spellings.filter((k) => k !== owned),
        where,
      ).toEqual([]);
    }
    expect(JSON.stringify(map), where).not.toContain(`"tenant":"${TENANT}"`);
  });
}

/**
 * A refusal is code 7 and names two keys of one object of the config that fold together. The
 * helpers judge keys with the generator's oracle, not with the fold under test.
 */
function expectRefusal(code: number, msg: string, config: unknown): void {
  expect(code, msg).toBe(Code.InvalidNetworkConfig);
  const both = /has both ("(?:[^"\\]|\\.)*") and ("(?:[^"\\]|\\.)*")/.exec(msg);
  if (!both) return; // another 7 (a missing name, say): not this test's concern
  const [first, second] = [JSON.parse(both[1]!), JSON.parse(both[2]!)] as [string, string];
  expect(first).not.toBe(second);
  expect(oracleFold(first)).toBe(oracleFold(second));
  expect(JSON.stringify(config)).toContain(JSON.stringify(first).slice(1, -1));
}

/** The delegate seam in-process: records each stdin, answers as a chained plugin does. */
class RecordingExec implements PluginExec {
  readonly stdins: string[] = [];
  async findInPath(type: string): Promise<string> {
    return `/opt/cni/bin/${type}`;
  }
  async execPlugin(request: ExecRequest): Promise<Uint8Array> {
    this.stdins.push(Buffer.from(request.stdin).toString("utf8"));
    return Buffer.from(JSON.stringify({ cniVersion: "1.0.0", ...RESULT }));
  }
}

/** ADD of one network in-process, through the code that builds each delegate's stdin. */
type AddOptions = { containerId: string; cniDir: string };

async function addInProcess(conf: ConfList, options: AddOptions): Promise<string[]> {
  const exec = new RecordingExec();
  const rt = {
    containerId: options.containerId,
    netns: "/proc/self/ns/net",
    ifName: "net1",
    args: "",
    path: ["/opt/cni/bin"],
    capabilityArgs: {},
    baseEnv: {},
    deadlineMs: 10_000,
  };
  const deps = { exec, cache: new ResultCache(options.cniDir), log: silentLogger() };
  // Vouched for as the delegate gate does: this test is about the stdin libcni builds.
  await addNetworkList(vouchForAdd(conf), rt, deps);
  return exec.stdins;
}

type Ran = Array<{ config: Record<string, unknown>; stdins: string[] }>;

/** Go's view of every recorded stdin, checked per generated config. */
function expectGoSeesPlexusKeys(gojson: GoJson, ran: Ran, cniArgs?: Record<string, unknown>): void {
  const seen = goDecode(
    gojson,
    ran.flatMap((r) => r.stdins),
  );
  for (const { config, stdins } of ran) {
    const views = seen.splice(0, stdins.length);
    for (const v of views) expect(v).not.toHaveProperty("error");
    expectOwnedKeysArePlexus(config, views as GoSeen[], cniArgs);
  }
}

describe("M1 B17 generated configs to their delegates' stdin, as Go reads it", () => {
  it("M1 B17 B77 NAD → addNetworkList in-process: no owned key is the tenant's", async (t) => {
    const gojson = needGo(t.skip);
    const configs = fc.sample(tenantConfig, propertyRuns({ seed: FC_SEED, numRuns: 300 }));
    const cniDir = join(gojson.bin, "..", "cni");
    const ran: Ran = [];
    for (const [i, config] of configs.entries()) {
      let conf: ConfList;
      try {
        conf = resolveNadConfig(nad(config), []).conf;
      } catch (err) {
        if (!(err instanceof CniError)) throw err;
        expectRefusal(err.code, err.message, config);
        continue;
      }
      const applied = applySelection(conf, SELECTION);
      const stdins = await addInProcess(applied.conf, { containerId: `ctr${i}`, cniDir });
      ran.push({ config, stdins });
    }
    expect(ran.length).toBeGreaterThan(20);
    expectGoSeesPlexusKeys(gojson, ran, SELECTION.cniArgs);
  });

  it("M1 B17 B77 Plexus's own config, delegates[] → addNetworkList: the same", async (t) => {
    const gojson = needGo(t.skip);
    const configs = fc.sample(plexusConfig, propertyRuns({ seed: FC_SEED, numRuns: 300 }));
    const cniDir = join(gojson.bin, "..", "cni-delegates");
    const ran: Ran = [];
    for (const [i, config] of configs.entries()) {
      let conf: PlexusConf;
      try {
        conf = parsePlexusConf(config);
      } catch (err) {
        if (!(err instanceof CniError)) throw err;
        expectRefusal(err.code, err.message, config);
        continue;
      }
      const delegates = (goRead(config, "delegates") ?? []) as Record<string, unknown>[];
      for (const [d, list] of conf.delegates.entries()) {
        const stdins = await addInProcess(list, { containerId: `ctr${i}-${d}`, cniDir });
        ran.push({ config: delegates[d]!, stdins });
      }
    }
    expect(ran.length).toBeGreaterThan(10);
    expectGoSeesPlexusKeys(gojson, ran);
  });
});

describe("M1 B17 through the binary: a tenant's NAD, Go as the delegate", () => {
  let sb: Sandbox;
  beforeAll(() => {
    requirePlexusBinary();
    sb = new Sandbox("plx-gojson-");
  });
  afterAll(async () => {
    const left = await sb?.dispose();
    expect(left, "processes still running after the tests").toEqual([]);
  });

  /** A node reading its cluster from a manifest dir; `bridge` and `portmap` are Go's decoder. */
  function node(gojson: GoJson) {
    const confDir = join(sb.root, "net.d");
    const clusterDir = join(sb.root, "cluster");
    mkdirSync(confDir, { recursive: true });
    mkdirSync(clusterDir, { recursive: true });
    sb.installPlugin("noop");
    const defaultNet = { type: "noop", debugFile: sb.setBehaviours("default-net", {}) };
    const list = { cniVersion: "1.0.0", name: "default-net", plugins: [defaultNet] };
    writeFileSync(join(confDir, "10-default.conflist"), JSON.stringify(list));
    for (const type of ["bridge", "portmap"]) copyFileSync(gojson.bin, join(sb.binDir, type));
    const stdinConf = {
      cniVersion: "1.0.0",
      name: "plexus-net",
      type: "plexus",
      clusterNetwork: "default-net",
      confDir,
      cniDir: sb.cniDir,
      daemonSocket: "",
      fileClusterDir: clusterDir,
    };
    return { clusterDir, stdinConf, calls: join(sb.binDir, "jsonfold.calls") };
  }

  it("M1 B17 B77 ADD on a generated NAD: 7 naming both keys, or only Plexus's", async (t) => {
    const gojson = needGo(t.skip);
    const { clusterDir, stdinConf, calls } = node(gojson);
    const pod = {
      apiVersion: "v1",
      kind: "Pod",
      metadata: { namespace: "tenant", name: "web", uid: "uid-web", annotations: {} as Notes },
    };
    const selection = [{ name: "net-a", "cni-args": SELECTION.cniArgs }];
    pod.metadata.annotations["k8s.v1.cni.cncf.io/networks"] = JSON.stringify(selection);
    let accepted = 0;
    const configs = fc.sample(tenantConfig, propertyRuns({ seed: FC_SEED + 1, numRuns: 40 }));
    for (const [i, config] of configs.entries()) {
      const objects = [nad(config), pod].map((x) => `---\n${JSON.stringify(x)}\n`).join("");
      writeFileSync(join(clusterDir, "objects.yaml"), objects);
      rmSync(calls, { force: true });
      const r = await sb.run("ADD", stdinConf, {
        CNI_CONTAINERID: `ctr${i}`,
        CNI_ARGS: "IgnoreUnknown=1;K8S_POD_NAMESPACE=tenant;K8S_POD_NAME=web;K8S_POD_UID=uid-web",
      });
      if (r.code !== 0) {
        const e = cniError(r);
        expectRefusal(e.code, e.msg, config);
        continue;
      }
      accepted++;
      const lines = readFileSync(calls, "utf8").trim().split("\n");
      const seen = lines.map((line) => JSON.parse(line) as { command: string; seen: GoSeen });
      expect(seen.map((s) => s.command)).toEqual(seen.map(() => "ADD"));
      expectOwnedKeysArePlexus(
        config,
        seen.map((s) => s.seen),
        SELECTION.cniArgs,
      );
    }
    expect(accepted).toBeGreaterThan(5);
  });
});
