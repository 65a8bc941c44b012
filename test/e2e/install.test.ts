/**
 * `plexus install` end to end (M11, N6.1, B51): the real binary installs itself and its config into
 * temp dirs standing in for /etc/cni/net.d and /opt/cni/bin, with a bridge + host-local conflist as
 * the primary network; then a real ADD and DEL run through the generated config and the INSTALLED
 * binary in a namespace `plx-inst-<random>` (subnet 10.219.x.0/24). Also: the binary replaced
 * while another copy of it executes, the copy under the install container's memory limit (a memory
 * cgroup), and SIGTERM with --cleanup-config-on-exit.
 */
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { createHash } from "node:crypto";
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  readFileSync,
  statSync,
  unlinkSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";
import { load } from "js-yaml";
import { expect, it } from "vitest";
import { makeMemoryCgroup, runInCgroup } from "../support/memory-cgroup";
import { isAlive, PLEXUS_BIN, REPO_ROOT, singleJson, TEST_PATH } from "../support/plexus-bin";
import { waitFor } from "../support/plexus-bin";
import {
  CNI_BIN_DIR,
  describeE2e,
  isCi,
  ip,
  ipTry,
  links,
  NETNS_DIR,
  netnsExists,
  randomHex,
  useE2eScope,
  type E2eScope,
} from "../support/netns";
import { hostLocal, PLUGIN_VERSION } from "./networks";
import { LAYOUTS, type Layout, renderLayout } from "../support/deploy-render";

const t = useE2eScope();

interface NodeDirs {
  confDir: string;
  binDir: string;
  saDir: string;
  primary: string;
}

function nodeDirs(scope: E2eScope, subnet: string): NodeDirs {
  const d = {
    confDir: join(scope.root, "net.d"),
    binDir: join(scope.root, "bin"),
    saDir: join(scope.root, "sa"),
    primary: "",
  };
  for (const p of [d.confDir, d.binDir, d.saDir]) mkdirSync(p, { recursive: true });
  writeFileSync(join(d.saDir, "token"), "token-1");
  writeFileSync(join(d.saDir, "ca.crt"), "ca-1");
  d.primary = join(d.confDir, "10-bridge.conflist");
  const primary = {
    cniVersion: PLUGIN_VERSION,
    name: "primary-net",
    plugins: [
      {
        type: "bridge",
        bridge: scope.bridgeName(),
        isGateway: true,
        ipam: hostLocal(scope, subnet, { routes: [{ dst: "0.0.0.0/0" }] }),
      },
    ],
  };
  writeFileSync(d.primary, JSON.stringify(primary));
  return d;
}

function installArgs(scope: E2eScope, dirs: NodeDirs, extra: string[] = []): string[] {
  return [
    "install",
    "--host-prefix=",
    `--cni-conf-dir=${dirs.confDir}`,
    `--cni-bin-dir=${dirs.binDir}`,
    `--bin-file=${PLEXUS_BIN}`,
    `--kubeconfig-file-host=${join(dirs.confDir, "plexus.d", "plexus.kubeconfig")}`,
    `--token-file=${join(dirs.saDir, "token")}`,
    `--ca-file=${join(dirs.saDir, "ca.crt")}`,
    `--cni-dir=${scope.cniDir}`,
    "--poll-interval=50",
    "--primary-config-timeout=20",
    ...extra,
  ];
}

function installEnv(scope: E2eScope): Record<string, string> {
  const [mk, mv] = scope.marker.split("=") as [string, string];
  // A cluster address that is never contacted: no K8S_POD_* in the ADD below (B7).
  return {
    PATH: TEST_PATH,
    [mk]: mv,
    KUBERNETES_SERVICE_HOST: "10.219.255.1",
    KUBERNETES_SERVICE_PORT: "443",
  };
}

function runInstallOnce(scope: E2eScope, dirs: NodeDirs, extra: string[] = []) {
  return spawnSync(PLEXUS_BIN, installArgs(scope, dirs, ["--once", ...extra]), {
    env: installEnv(scope),
    encoding: "utf8",
    timeout: 30_000,
    cwd: "/",
  });
}

/**
 * What a runtime does with a conflist of one plugin: inject name and cniVersion, exec the plugin.
 */
function runInstalled(
  scope: E2eScope,
  dirs: NodeDirs,
  command: string,
  env: Record<string, string>,
) {
  const list = JSON.parse(readFileSync(join(dirs.confDir, "00-plexus.conflist"), "utf8")) as {
    cniVersion: string;
    name: string;
    plugins: Array<Record<string, unknown>>;
  };
  const stdin = JSON.stringify({
    ...list.plugins[0],
    name: list.name,
    cniVersion: list.cniVersion,
  });
  const [mk, mv] = scope.marker.split("=") as [string, string];
  return spawnSync(join(dirs.binDir, "plexus"), [], {
    input: stdin,
    encoding: "utf8",
    timeout: 30_000,
    cwd: "/",
    env: {
      PATH: TEST_PATH,
      [mk]: mv,
      CNI_COMMAND: command,
      CNI_PATH: `${dirs.binDir}:${CNI_BIN_DIR}`,
      CNI_ARGS: "IgnoreUnknown=1",
      ...env,
    },
  });
}

const sha = (path: string) => createHash("sha256").update(readFileSync(path)).digest("hex");

/** The install container's memory limit in deploy/daemonset.yaml, in bytes (written in Mi). */
function installerMemoryLimit(): number {
  type Container = { name: string; resources: any };
  type Ds = { spec: { template: { spec: { containers: Container[] } } } };
  const ds = load(readFileSync(join(REPO_ROOT, "deploy/daemonset.yaml"), "utf8")) as Ds;
  const install = ds.spec.template.spec.containers.find((c) => c.name === "install");
  const limit = install?.resources.limits.memory;
  const m = /^(\d+)Mi$/.exec(String(limit));
  if (!m) throw new Error(`deploy/daemonset.yaml: install's memory limit ${limit} is not in Mi`);
  return Number(m[1]) * 2 ** 20;
}

/** Dirty page cache the copy may leave at once: its flush interval plus a chunk, and slack. */
const DIRTY_BOUND = 16 * 2 ** 20;

describeE2e("e2e plexus install", () => {
  it("M11 N6.1 install --once, then a real ADD/DEL through the generated config and the installed binary", async () => {
    const { scope } = t;
    const d = nodeDirs(scope, "10.219.1.0/24");
    const ready = join(scope.root, "ready");
    writeFileSync(ready, "");
    const inst = runInstallOnce(scope, d, [`--readiness-indicator-file=${ready}`]);
    expect(inst.status, inst.stderr).toBe(0);
    expect(inst.stdout, "the installer writes nothing to stdout").toBe("");
    expect(inst.stderr).toMatch(/"msg":"config installed"/);
    expect(sha(join(d.binDir, "plexus"))).toBe(sha(PLEXUS_BIN));
    const conf = JSON.parse(readFileSync(join(d.confDir, "00-plexus.conflist"), "utf8"));
    expect(conf.plugins[0]).toMatchObject({
      type: "plexus",
      clusterNetwork: d.primary,
      kubeconfig: join(d.confDir, "plexus.d", "plexus.kubeconfig"),
    });

    const nsName = `plx-inst-${randomHex(4)}`;
    ip(["netns", "add", nsName]);
    try {
      const env = {
        CNI_CONTAINERID: "ctr-inst",
        CNI_NETNS: join(NETNS_DIR, nsName),
        CNI_IFNAME: "eth0",
      };
      const add = runInstalled(scope, d, "ADD", env);
      expect(add.status, `stdout=${add.stdout} stderr=${add.stderr}`).toBe(0);
      const result = singleJson(add.stdout) as {
        cniVersion: string;
        ips: Array<{ address: string }>;
      };
      expect(result.cniVersion).toBe(conf.cniVersion);
      expect(result.ips.map((i) => i.address)).toEqual(["10.219.1.2/24"]);
      const eth0 = links(nsName).find((l) => l.name === "eth0");
      expect(eth0?.addresses).toEqual(["10.219.1.2/24"]);
      const del = runInstalled(scope, d, "DEL", env);
      expect(del.status, `stdout=${del.stdout} stderr=${del.stderr}`).toBe(0);
      expect(del.stdout).toBe("");
      expect(links(nsName).map((l) => l.name)).toEqual(["lo"]);
    } finally {
      if (netnsExists(nsName)) ipTry(["netns", "del", nsName]);
    }
    expect(netnsExists(nsName)).toBe(false);
  });

  it("B51 M11 the binary is replaced while another copy executes: no ETXTBSY, the running process is unaffected, the new file is whole", async () => {
    const { scope } = t;
    const d = nodeDirs(scope, "10.219.2.0/24");
    const dest = join(d.binDir, "plexus");
    // A long-running executable at the destination, as a runtime executing the old plexus would be.
    copyFileSync("/bin/sleep", dest);
    const [mk, mv] = scope.marker.split("=") as [string, string];
    const running = spawn(dest, ["30"], { env: { [mk]: mv }, stdio: "ignore" });
    try {
      await waitFor(
        () =>
          running.pid !== undefined &&
          readFileSync(`/proc/${running.pid}/cmdline`, "utf8").includes("30"),
        5000,
        "the old binary running",
      );
      // Control: writing the running file in place is what fails with "text file busy".
      expect(() => writeFileSync(dest, "x", { flag: "r+" })).toThrow(
        expect.objectContaining({ code: "ETXTBSY" }),
      );
      const inst = runInstallOnce(scope, d);
      expect(inst.status, inst.stderr).toBe(0);
      expect(inst.stderr).toMatch(/plexus binary installed \(copy \+ rename\)/);
      expect(isAlive(running.pid!)).toBe(true);
      expect(sha(dest)).toBe(sha(PLEXUS_BIN));
      expect(statSync(dest).mode & 0o777).toBe(0o755);
      const version = spawnSync(dest, [], {
        env: { CNI_COMMAND: "VERSION" },
        input: "",
        encoding: "utf8",
        timeout: 10_000,
      });
      expect(version.status).toBe(0);
      expect(singleJson(version.stdout)).toHaveProperty("supportedVersions");
      // No temp file left beside it.
      expect(
        spawnSync("ls", ["-A", d.binDir], { encoding: "utf8" }).stdout.trim().split("\n"),
      ).toEqual(["plexus"]);
    } finally {
      running.kill("SIGKILL");
      await new Promise((r) =>
        running.exitCode !== null || running.signalCode !== null
          ? r(null)
          : running.once("exit", r),
      );
    }
  });

  it("B51 M11 the copy under install's memory limit: whole, little dirty", async (ctx) => {
    const { scope } = t;
    const d = nodeDirs(scope, "10.219.4.0/24");
    const limit = installerMemoryLimit();
    const cg = makeMemoryCgroup(`plx-install-${randomHex(4)}`, limit);
    if (typeof cg === "string") {
      if (isCi()) throw new Error(`${cg} (CI=true: a missing e2e prerequisite is a failure)`);
      process.stderr.write(`*** SKIPPING the memory-limited copy: ${cg} ***\n`);
      return ctx.skip();
    }
    try {
      const r = await runInCgroup(cg, [PLEXUS_BIN, ...installArgs(scope, d, ["--once"])], {
        env: installEnv(scope),
        timeoutMs: 60_000,
      });
      const mib = (n: number | undefined) => (n === undefined ? "?" : (n / 2 ** 20).toFixed(1));
      process.stderr.write(
        `install under ${mib(limit)} MiB (cgroup v${cg.version}): ${Math.round(r.ms)} ms, ` +
          `dirty at most ${mib(r.maxDirtyBytes)} MiB, peak usage ${mib(cg.peakBytes())} MiB\n`,
      );
      expect(r.status, r.stderr).toBe(0);
      expect(r.stderr).toMatch(/plexus binary installed \(copy \+ rename\)/);
      expect(sha(join(d.binDir, "plexus"))).toBe(sha(PLEXUS_BIN));
      // An unbounded copy leaves the whole file dirty until the kernel writes it back.
      expect(statSync(PLEXUS_BIN).size).toBeGreaterThan(4 * DIRTY_BOUND);
      expect(r.maxDirtyBytes).toBeLessThanOrEqual(DIRTY_BOUND);
    } finally {
      cg.remove();
    }
  });

  it("M11 the running installer regenerates and restores the config, and SIGTERM with --cleanup-config-on-exit removes it", async () => {
    const { scope } = t;
    const d = nodeDirs(scope, "10.219.3.0/24");
    const confPath = join(d.confDir, "00-plexus.conflist");
    const child: ChildProcess = spawn(
      PLEXUS_BIN,
      installArgs(scope, d, ["--cleanup-config-on-exit"]),
      {
        env: installEnv(scope),
        cwd: "/",
        stdio: ["ignore", "pipe", "pipe"],
      },
    );
    let stdout = "";
    let stderr = "";
    child.stdout!.on("data", (b: Buffer) => (stdout += b.toString()));
    child.stderr!.on("data", (b: Buffer) => (stderr += b.toString()));
    // "close", not "exit": stderr is read to its end before the last assertions on it.
    const exited = new Promise<number | null>((r) => child.once("close", (code) => r(code)));
    try {
      await waitFor(() => existsSync(confPath), 15_000, "config written by the running installer");
      const primary = JSON.parse(readFileSync(d.primary, "utf8"));
      writeFileSync(d.primary, JSON.stringify({ ...primary, cniVersion: "0.4.0" }));
      await waitFor(
        () => JSON.parse(readFileSync(confPath, "utf8")).cniVersion === "0.4.0",
        5000,
        "config regenerated for the changed primary",
      );
      unlinkSync(confPath);
      await waitFor(() => existsSync(confPath), 5000, "config restored");
      // The log line follows the restore, through a pipe: wait for it rather than race it.
      await waitFor(
        () => /deleted or renamed by another agent: restored/.test(stderr),
        5000,
        "the restore logged",
      );
      child.kill("SIGTERM");
      expect(await exited).toBe(0);
      expect(existsSync(confPath)).toBe(false);
      expect(stderr).toMatch(/Plexus config removed on exit/);
      expect(stdout).toBe("");
    } finally {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill("SIGKILL");
        await exited;
      }
    }
  });
});

/**
 * The install command of a rendered layout, run on temp dirs: the container's /host is `root`, the
 * service-account files are the test's; every other flag is as the DaemonSet gives it.
 */
function layoutArgs(layout: Layout, paths: { root: string; saDir: string }): string[] {
  const install = renderLayout(layout)
    .find((d) => d.kind === "DaemonSet")!
    .spec.template.spec.containers.find((c: { name: string }) => c.name === "install");
  const args = (install.command as string[]).slice(1).map((a) => {
    const [name, value] = a.split(/=(.*)/s) as [string, string | undefined];
    if (name === "--host-prefix") return `--host-prefix=${paths.root}`;
    if (name === "--token-file") return `--token-file=${join(paths.saDir, "token")}`;
    if (name === "--ca-file") return `--ca-file=${join(paths.saDir, "ca.crt")}`;
    return value?.startsWith("/host/") ? `${name}=${paths.root}${value.slice("/host".length)}` : a;
  });
  return [...args, `--bin-file=${PLEXUS_BIN}`, "--once", "--primary-config-timeout=20"];
}

describeE2e("e2e plexus install: each node layout of deploy/components", () => {
  it.each(LAYOUTS.map((l) => [l.name, l] as const))(
    "M11 %s: the rendered install command installs into the layout's dirs, naming node paths",
    (_name, layout) => {
      const { scope } = t;
      const root = join(scope.root, `node-${layout.name}`);
      const saDir = join(scope.root, "sa");
      const dirs = [join(root, layout.confDir), join(root, layout.binDir), saDir];
      for (const p of dirs) mkdirSync(p, { recursive: true });
      writeFileSync(join(saDir, "token"), "token-1");
      writeFileSync(join(saDir, "ca.crt"), "ca-1");
      const primary = { cniVersion: PLUGIN_VERSION, name: "primary-net", type: "bridge" };
      writeFileSync(join(root, layout.confDir, "10-bridge.conf"), JSON.stringify(primary));
      const inst = spawnSync(PLEXUS_BIN, layoutArgs(layout, { root, saDir }), {
        env: installEnv(scope),
        encoding: "utf8",
        timeout: 30_000,
        cwd: "/",
      });
      expect(inst.status, inst.stderr).toBe(0);
      expect(sha(join(root, layout.binDir, "plexus"))).toBe(sha(PLEXUS_BIN));
      const kubeconfig = `${layout.confDir}/plexus.d/plexus.kubeconfig`;
      const confFile = join(root, layout.confDir, "00-plexus.conflist");
      const conf = JSON.parse(readFileSync(confFile, "utf8"));
      expect(conf.plugins[0]).toMatchObject({
        clusterNetwork: `${layout.confDir}/10-bridge.conf`,
        kubeconfig,
        confDir: "/etc/cni/multus/net.d",
      });
      const kc = JSON.parse(readFileSync(join(root, kubeconfig), "utf8"));
      expect(kc.users[0].user.tokenFile).toBe(`${layout.confDir}/plexus.d/token`);
      expect(readFileSync(join(root, layout.confDir, "plexus.d", "token"), "utf8")).toBe("token-1");
    },
  );
});
