/**
 * The take-over from Multus through the real dist/plexus (installer and `plexus doctor`) on a temp
 * conf dir: a file with a CNI config name that Plexus cannot read (a FIFO, a 2 MiB file) sorting
 * between Multus's config and Plexus's is still a file libcni lists and loads, so the installer
 * does not move Multus's config aside (the runtime would load that file first), names it in its
 * log with what to do, and `plexus doctor` names it too.
 */
import { execFileSync, spawn, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, statSync } from "node:fs";
import { writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { startFakeApiServer } from "../support/fake-apiserver";
import { PLEXUS_BIN, requirePlexusBinary, TEST_PATH } from "../support/plexus-bin";

beforeAll(() => requirePlexusBinary());

const roots: string[] = [];
afterEach(() => {
  for (const root of roots.splice(0)) rmSync(root, { recursive: true, force: true });
});

const BRIDGE = JSON.stringify({
  cniVersion: "1.0.0",
  name: "primary-net",
  plugins: [{ type: "bridge", ipam: { type: "host-local", subnet: "10.244.0.0/24" } }],
});
/** What Multus thin's entrypoint writes with --multus-conf-file=auto. */
const MULTUS = JSON.stringify({
  cniVersion: "1.0.0",
  name: "multus-cni-network",
  type: "multus",
  kubeconfig: "/etc/cni/net.d/multus.d/multus.kubeconfig",
  delegates: [JSON.parse(BRIDGE)],
});

/** A node's conf dir with Multus's config first, a primary network, and the odd file. */
function node(makeOdd: (path: string) => void) {
  const root = mkdtempSync(join(tmpdir(), "plx-it-takeover-"));
  roots.push(root);
  const confDir = join(root, "net.d");
  const saDir = join(root, "sa");
  for (const d of [confDir, join(root, "bin"), saDir]) mkdirSync(d);
  writeFileSync(join(saDir, "token"), "token-1");
  writeFileSync(join(saDir, "ca.crt"), "ca-1");
  writeFileSync(join(confDir, "00-multus.conf"), MULTUS);
  writeFileSync(join(confDir, "10-bridge.conflist"), BRIDGE);
  // Sorts after 00-multus.conf and before 00-plexus.conflist.
  const odd = join(confDir, "00-nm.conf");
  makeOdd(odd);
  return { root, confDir, saDir, odd };
}

function run(args: string[], cwd: string) {
  return spawnSync(PLEXUS_BIN, args, {
    cwd,
    encoding: "utf8",
    timeout: 30_000,
    env: { PATH: TEST_PATH, KUBERNETES_SERVICE_HOST: "10.96.0.1", KUBERNETES_SERVICE_PORT: "443" },
  });
}

/** `plexus install --once` on the node's dirs. */
function installArgs(n: ReturnType<typeof node>): string[] {
  return [
    "install",
    "--once",
    "--host-prefix=",
    `--cni-conf-dir=${n.confDir}`,
    `--cni-bin-dir=${join(n.root, "bin")}`,
    "--skip-binary-copy",
    `--kubeconfig-file-host=${join(n.confDir, "plexus.d", "plexus.kubeconfig")}`,
    `--token-file=${join(n.saDir, "token")}`,
    `--ca-file=${join(n.saDir, "ca.crt")}`,
    `--cni-dir=${join(n.root, "state")}`,
    "--primary-config-timeout=10",
    "--poll-interval=50",
  ];
}

function installOnce(n: ReturnType<typeof node>) {
  return run(installArgs(n), n.root);
}

describe("B90 a config file Plexus cannot read sorting before its own blocks the take-over", () => {
  it.each([
    ["a FIFO", (path: string) => execFileSync("mkfifo", [path])],
    ["a 2 MiB file", (path: string) => writeFileSync(path, Buffer.alloc(2 << 20, 0x20))],
  ])("B90 %s: no take-over, the installer and plexus doctor name it", (_, makeOdd) => {
    const n = node(makeOdd);
    const install = installOnce(n);
    expect(install.status, install.stderr).toBe(0);
    // Plexus's config is written, but Multus's stays first: the runtime never reaches the odd file.
    expect(existsSync(join(n.confDir, "00-plexus.conflist"))).toBe(true);
    expect(existsSync(join(n.confDir, "00-multus.conf"))).toBe(true);
    expect(readdirSync(n.confDir).filter((f) => f.endsWith(".plexus-moved"))).toEqual([]);
    const blocked = install.stderr.split("\n").filter((l) => l.includes("not taking over"));
    expect(blocked).toHaveLength(1);
    expect(blocked[0]).toContain(n.odd);
    expect(blocked[0]).toMatch(/cannot be read as a CNI config.*Move it out of/);

    const doctor = run(["doctor", "--cni-conf-dir", n.confDir], n.root);
    expect(doctor.status, doctor.stderr).toBe(1);
    const named = doctor.stdout.split("\n").filter((l) => l.includes(n.odd));
    expect(named).toHaveLength(1);
    expect(named[0]).toMatch(/^error\s+runtime config\s.*sorts before 00-plexus\.conflist/);
    expect(named[0]).toMatch(/does not take over from Multus.*Move it out of/);
  });

  it("B90 with the file gone, the next pass takes over; doctor finds Plexus's config first", () => {
    const n = node((path) => execFileSync("mkfifo", [path]));
    expect(installOnce(n).status).toBe(0);
    rmSync(n.odd);
    const install = installOnce(n);
    expect(install.status, install.stderr).toBe(0);
    // M18: a guard (a directory, which the runtime skips) holds Multus's name now.
    expect(statSync(join(n.confDir, "00-multus.conf")).isDirectory()).toBe(true);
    expect(existsSync(join(n.confDir, "00-multus.conf.plexus-moved"))).toBe(true);
    const doctor = run(["doctor", "--cni-conf-dir", n.confDir], n.root);
    expect(doctor.stdout).toMatch(/^ok\s+runtime config\s.*00-plexus\.conflist.*runs Plexus/m);
  });
});

/**
 * `plexus install --once` beside the in-process test API server: spawned without blocking, so
 * that the server answers the installer's Event.
 */
function installWithApi(n: ReturnType<typeof node>, extra: string[], env: Record<string, string>) {
  return new Promise<{ status: number | null; stderr: string }>((resolve) => {
    const child = spawn(PLEXUS_BIN, [...installArgs(n), ...extra], {
      cwd: n.root,
      env: { PATH: TEST_PATH, ...env },
    });
    let stderr = "";
    child.stderr.on("data", (d) => (stderr += d));
    child.on("close", (status) => resolve({ status, stderr }));
  });
}

/** What Multus v4's entrypoint renders once Plexus's config is the first other one (M18). */
const WRAPPING = JSON.stringify({
  cniVersion: "1.0.0",
  name: "multus-cni-network",
  type: "multus",
  kubeconfig: "/etc/cni/net.d/multus.d/multus.kubeconfig",
  delegates: [{ cniVersion: "1.0.0", name: "plexus-cni-network", plugins: [{ type: "plexus" }] }],
});

describe("M18 the installer says so loudly: its log and an Event on its own pod", () => {
  it("M18 a Multus config wrapping Plexus is removed: an error and a Warning Event", async () => {
    await using api = await startFakeApiServer();
    const pod = api.addPod({ metadata: { namespace: "kube-system", name: "plexus-x1" } });
    const n = node(() => {});
    rmSync(n.odd, { force: true });
    writeFileSync(join(n.confDir, "00-multus.conf"), WRAPPING);
    writeFileSync(join(n.saDir, "token"), api.token);
    writeFileSync(join(n.saDir, "ca.crt"), api.caPem);
    const env = {
      POD_NAME: "plexus-x1",
      POD_NAMESPACE: "kube-system",
      POD_UID: String(pod.metadata.uid),
    };
    const install = await installWithApi(n, [`--api-server=${api.url}`], env);
    expect(install.status, install.stderr).toBe(0);
    expect(readdirSync(n.confDir).filter((f) => f.includes("plexus-moved"))).toEqual([]);
    const said = install.stderr.split("\n").filter((l) => l.includes("wrapping Plexus's"));
    expect(said).toHaveLength(1);
    expect(JSON.parse(said[0]!).level).toBe(50);
    const events = api.events().filter((e) => e.reason === "MultusConfigWrapsPlexus");
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({
      type: "Warning",
      involvedObject: { kind: "Pod", namespace: "kube-system", name: "plexus-x1" },
    });
    expect(String(events[0]!.message)).toMatch(/removed, not kept.*delete Multus's DaemonSet/);
  });

  it("M18 a take-over is a Normal Event; without its pod's name, none is recorded", async () => {
    await using api = await startFakeApiServer();
    api.addPod({ metadata: { namespace: "kube-system", name: "plexus-x2" } });
    const n = node(() => {});
    rmSync(n.odd, { force: true });
    writeFileSync(join(n.saDir, "token"), api.token);
    writeFileSync(join(n.saDir, "ca.crt"), api.caPem);
    const server = [`--api-server=${api.url}`];
    expect((await installWithApi(n, server, {})).status).toBe(0);
    expect(api.events()).toEqual([]);
    // Back, then over again, now knowing its pod.
    expect((await installWithApi(n, [...server, "--no-take-over-multus"], {})).status).toBe(0);
    const env = { POD_NAME: "plexus-x2", POD_NAMESPACE: "kube-system" };
    expect((await installWithApi(n, server, env)).status).toBe(0);
    expect(api.events().map((e) => [e.type, e.reason])).toEqual([["Normal", "TookOverFromMultus"]]);
  });
});
