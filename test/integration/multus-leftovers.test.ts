/**
 * Through dist/plexus: `plexus doctor` names what Multus leaves on a node once Plexus has taken
 * over, each with what to do (M14, M18), and `plexus validate --preflight` lists every
 * NetworkAttachmentDefinition Plexus would read differently from Multus v4 (M14), from a manifest
 * and from the cluster (the test API server).
 */
import { spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { startFakeApiServer, writeKubeconfig } from "../support/fake-apiserver";
import { PLEXUS_BIN, requirePlexusBinary, TEST_PATH } from "../support/plexus-bin";

beforeAll(() => requirePlexusBinary());

const roots: string[] = [];
afterEach(() => {
  for (const root of roots.splice(0)) rmSync(root, { recursive: true, force: true });
});

function tempRoot(): string {
  const root = mkdtempSync(join(tmpdir(), "plx-it-multus-left-"));
  roots.push(root);
  return root;
}

/** Runs dist/plexus without blocking (the test API server answers in this process). */
function plexus(args: string[], env: Record<string, string> = {}) {
  return new Promise<{ status: number | null; stdout: string; stderr: string }>((resolve) => {
    const child = spawn(PLEXUS_BIN, args, {
      env: { PATH: TEST_PATH, HOME: "/nonexistent", ...env },
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d) => (stdout += d));
    child.stderr.on("data", (d) => (stderr += d));
    child.on("close", (status) => resolve({ status, stdout, stderr }));
  });
}

const BRIDGE = { cniVersion: "1.0.0", name: "primary-net", plugins: [{ type: "bridge" }] };
const multusAround = (delegate: object) =>
  JSON.stringify({
    cniVersion: "1.0.0",
    name: "multus-cni-network",
    type: "multus",
    delegates: [delegate],
  });
const MULTUS = multusAround(BRIDGE);
const WRAPPING = multusAround({ cniVersion: "1.0.0", name: "p", plugins: [{ type: "plexus" }] });

/** A node Plexus took over from Multus (the installer, run once), and Multus's leftovers. */
async function switchedNode() {
  const root = tempRoot();
  const confDir = join(root, "net.d");
  const binDir = join(root, "bin");
  const cache = join(root, "multus-cache");
  for (const d of [confDir, binDir, join(confDir, "multus.d"), join(cache, "results")])
    mkdirSync(d, { recursive: true });
  writeFileSync(join(confDir, "10-bridge.conflist"), JSON.stringify(BRIDGE));
  writeFileSync(join(confDir, "00-multus.conf"), MULTUS);
  writeFileSync(join(confDir, "multus.d", "multus.kubeconfig"), "{}");
  writeFileSync(join(binDir, "multus"), "");
  for (const pod of ["ctr-a", "ctr-b"]) writeFileSync(join(cache, pod), "{}");
  const install = await plexus([
    "install",
    "--once",
    "--host-prefix=",
    `--cni-conf-dir=${confDir}`,
    `--cni-bin-dir=${binDir}`,
    "--skip-binary-copy",
    "--without-kubernetes",
    `--cni-dir=${join(root, "state")}`,
  ]);
  expect(install.status, install.stderr).toBe(0);
  // An earlier installer kept a copy wrapping Plexus; the cache is this test's.
  writeFileSync(join(confDir, "00-multus.conf.plexus-moved.2"), WRAPPING);
  const configPath = join(confDir, "00-plexus.conflist");
  const config = JSON.parse(readFileSync(configPath, "utf8"));
  config.plugins[0].multusCacheDir = cache;
  config.plugins[0].daemonSocket = "";
  writeFileSync(configPath, JSON.stringify(config));
  return { root, confDir, binDir, cache };
}

async function multusLines(n: { confDir: string; binDir: string }) {
  const r = await plexus(["doctor", `--cni-conf-dir=${n.confDir}`, `--cni-path=${n.binDir}`]);
  return r.stdout.split("\n").filter((l) => /^\S+\s+multus\s/.test(l));
}

describe("M18 plexus doctor names Multus's leftovers and what to do with each", () => {
  it("M18 M14 kept copies, guards, multus.d, the binary, the cache of Multus's pods", async () => {
    const n = await switchedNode();
    const lines = await multusLines(n);
    const about = (needle: string) => lines.filter((l) => l.includes(needle));
    expect(about("00-multus.conf.plexus-moved:")[0]).toMatch(
      /^warning .*the way back\) restores as 00-multus\.conf; remove it once Multus's .*: rm /,
    );
    expect(about("00-multus.conf.plexus-moved.2:")[0]).toMatch(/wrapping Plexus's, never restored/);
    expect(about("Plexus's guards")[0]).toContain(join(n.confDir, "00-multus.conf.new"));
    expect(about(join(n.confDir, "multus.d"))[0]).toMatch(/Multus's kubeconfig.*rm -r /);
    expect(about(join(n.binDir, "multus"))[0]).toMatch(/^warning .*Multus's plugin.*rm /);
    expect(about(n.cache)[0]).toMatch(/^ok .*files of 2 pod\(s\) Multus attached: Plexus reads/);
    // Once those pods are gone, results of no pod are a leftover; an empty cache is harmless.
    for (const pod of ["ctr-a", "ctr-b"]) rmSync(join(n.cache, pod));
    writeFileSync(join(n.cache, "results", "net-ctr-c-net1"), "{}");
    const later = await multusLines(n);
    expect(later.find((l) => l.includes(n.cache))).toMatch(/^warning .*no pod's file.*rm -r /);
    rmSync(join(n.cache, "results", "net-ctr-c-net1"));
    const empty = await multusLines(n);
    expect(empty.find((l) => l.includes(n.cache))).toMatch(/^ok .*is empty/);
  });

  it("M18 a Multus config wrapping Plexus that the runtime runs is an error", async () => {
    const n = await switchedNode();
    rmSync(join(n.confDir, "00-multus.conf"), { recursive: true });
    writeFileSync(join(n.confDir, "00-multus.conf"), WRAPPING);
    const r = await plexus(["doctor", `--cni-conf-dir=${n.confDir}`, `--cni-path=${n.binDir}`]);
    expect(r.status).toBe(1);
    expect(r.stdout).toMatch(
      /^error\s+multus\s+.*00-multus\.conf is Multus's config wrapping Plexus's: .*delete/m,
    );
  });

  it("M14 a node that never ran Multus: one line, nothing to do", async () => {
    const root = tempRoot();
    const confDir = join(root, "net.d");
    mkdirSync(confDir);
    writeFileSync(join(confDir, "10-bridge.conflist"), JSON.stringify(BRIDGE));
    const plugin = {
      type: "plexus",
      clusterNetwork: join(confDir, "10-bridge.conflist"),
      withoutKubernetes: true,
      daemonSocket: "",
      cniDir: join(root, "state"),
      multusCacheDir: join(root, "multus-cache"),
    };
    const list = { cniVersion: "1.0.0", name: "plexus-cni-network", plugins: [plugin] };
    writeFileSync(join(confDir, "00-plexus.conflist"), JSON.stringify(list));
    const r = await plexus(["doctor", `--cni-conf-dir=${confDir}`, `--cni-path=${root}`]);
    const lines = r.stdout.split("\n").filter((l) => /^\S+\s+multus\s/.test(l));
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^ok\s+multus\s+nothing of Multus's in /);
  });
});

const nad = (name: string, config: string | undefined) => ({
  apiVersion: "k8s.cni.cncf.io/v1",
  kind: "NetworkAttachmentDefinition",
  metadata: { name, namespace: "default" },
  spec: config === undefined ? {} : { config },
});
const bridgeConf = (extra: object) =>
  JSON.stringify({ cniVersion: "0.3.1", type: "bridge", bridge: "br1", ...extra });

/** One NAD of each kind: read alike, refused by Plexus only, by both, and another file. */
const NADS = [
  nad("same", bridgeConf({})),
  nad("no-version", JSON.stringify({ type: "macvlan", master: "eth0" })),
  nad("folded", bridgeConf({ Type: "macvlan" })),
  nad("broken", "{not json"),
  nad("by-file", undefined),
];

describe("M14 plexus validate --preflight: every NAD Plexus reads differently from Multus", () => {
  it("M14 from a manifest: refused by Plexus only, by both, another file; no other", async () => {
    const root = tempRoot();
    const file = join(root, "nads.json");
    writeFileSync(file, JSON.stringify({ kind: "List", items: NADS }));
    const nadDir = join(root, "nad-conf");
    mkdirSync(nadDir);
    const byFile = (type: string) => JSON.stringify({ cniVersion: "0.3.1", name: "by-file", type });
    // Multus takes the first file by name, Plexus the .conflist of that name.
    writeFileSync(join(nadDir, "10-by-file.conf"), byFile("bridge"));
    const list = { cniVersion: "0.3.1", name: "by-file", plugins: [{ type: "macvlan" }] };
    writeFileSync(join(nadDir, "20-by-file.conflist"), JSON.stringify(list));
    const args = ["validate", "--preflight", `--file=${file}`, `--nad-conf-dir=${nadDir}`];
    const r = await plexus(args);
    expect(r.status, r.stderr).toBe(1);
    const lines = r.stdout.trim().split("\n");
    expect(lines.map((l) => l.split(/\s+/).slice(0, 2).join(" "))).toEqual([
      "warning default/broken",
      "warning default/by-file",
      "error default/folded",
      "error default/no-version",
      "5 NetworkAttachmentDefinition(s)",
    ]);
    expect(lines[0]).toMatch(/fails with Multus and Plexus alike/);
    expect(lines[1]).toMatch(/Plexus runs .*20-by-file\.conflist.*Multus .*10-by-file\.conf/);
    expect(lines[2]).toMatch(/Plexus refuses it where Multus runs it: .*(Type|type)/);
    expect(lines[3]).toMatch(/Plexus refuses it where Multus runs it: .*cniVersion/);
    expect(lines[4]).toMatch(/checked against Multus v4: 4 read differently$/);
    const json = await plexus([...args, "-o", "json"]);
    expect(JSON.parse(json.stdout).map((f: { nad: string }) => f.nad)).toHaveLength(4);
  });

  it("M14 from the cluster: the NADs it lists, the kubeconfig as kubectl finds it", async () => {
    await using api = await startFakeApiServer();
    api.addNads(NADS.slice(0, 2).map((n) => ({ metadata: n.metadata, spec: n.spec })));
    const root = tempRoot();
    const kubeconfig = writeKubeconfig(api, { dir: root });
    const r = await plexus(["validate", "--preflight"], { KUBECONFIG: kubeconfig });
    expect(r.status, r.stderr).toBe(1);
    expect(r.stdout).toMatch(/^error\s+default\/no-version\s+Plexus refuses it/m);
    expect(r.stdout).toMatch(/2 NetworkAttachmentDefinition\(s\) checked.*: 1 read differently/);
    expect(r.stdout).not.toMatch(/default\/same/);
  });
});
