/**
 * The DaemonSet image as `npm run image` builds it (scripts/image.mjs, offline, into a private
 * podman store), run with podman the way the DaemonSet runs its installer (M11): the node's root
 * bind-mounted as /host holding a primary CNI config, the service-account token and CA where
 * Kubernetes mounts them, KUBERNETES_SERVICE_HOST/PORT set, and the installer container's memory
 * limit from deploy/daemonset.yaml. `install --once` must leave the binary and 00-plexus.conflist
 * in the host dir: the AVX2 build on a CPU with AVX2, the baseline one when /proc/cpuinfo (bound
 * over by a file without avx2, as LXCFS does) lists none. The arm64 image's files run under
 * qemu-aarch64-static with only what the image holds.
 */
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { load } from "js-yaml";
import { afterAll, beforeAll, expect, it } from "vitest";
import { buildInfo } from "../../scripts/build-info.mjs";
import { cpuinfoHasAvx2 } from "../../src/install/self";
import { REPO_ROOT, TEST_PATH } from "../support/plexus-bin";
import { describeE2e } from "../support/netns";
import { ensureRelease, releasePath } from "../support/release";

const TOOLS = [
  { command: "podman", pkg: "podman" },
  { command: "readelf", pkg: "binutils" },
  { command: "qemu-aarch64-static", pkg: "qemu-user-static" },
  { command: "/lib/ld-linux-aarch64.so.1", pkg: "libc6:arm64 (dpkg --add-architecture arm64)" },
];
/** This sandbox refuses podman's default rlimits (see the project brief). */
const ULIMITS = ["--ulimit", "nofile=4096:4096", "--ulimit", "nproc=1024:1024"];
const INFO = buildInfo();
/** What `plexus --version` prints for this build. */
const VERSION_LINE = `${INFO.version} (commit ${INFO.commit})`;
/** The manifest list scripts/image.mjs built (the name it prints: version and commit). */
let IMAGE: string;
const image = (arch: string) => `${IMAGE}-${arch}`;
const SA_DIR = "/var/run/secrets/kubernetes.io/serviceaccount";

let home: string;
const globals = () => [
  "--root",
  join(home, "root"),
  "--runroot",
  join(home, "run"),
  "--storage-driver",
  "vfs",
];

function podman(args: readonly string[]) {
  const r = spawnSync("podman", [...globals(), ...args], {
    env: { PATH: TEST_PATH, HOME: home },
    encoding: "utf8",
    timeout: 120_000,
  });
  return {
    status: r.status ?? -1,
    stdout: r.stdout ?? "",
    stderr: (r.stderr ?? "") + (r.error ? String(r.error) : ""),
  };
}

function podmanOk(args: readonly string[]): string {
  const r = podman(args);
  expect(r.status, `podman ${args.join(" ")}: ${r.stderr}`).toBe(0);
  return r.stdout;
}

/** The installer container's memory limit in deploy/daemonset.yaml, in MiB. */
function installerMemoryLimitMiB(): number {
  const ds = load(readFileSync(join(REPO_ROOT, "deploy/daemonset.yaml"), "utf8")) as {
    spec: {
      template: {
        spec: { containers: Array<{ name: string; resources: { limits: { memory: string } } }> };
      };
    };
  };
  const install = ds.spec.template.spec.containers.find((c) => c.name === "install");
  const m = /^(\d+)Mi$/.exec(install?.resources.limits.memory ?? "");
  if (!m)
    throw new Error(
      `deploy/daemonset.yaml: the install container's memory limit is not in Mi: ${install?.resources.limits.memory}`,
    );
  return Number(m[1]);
}

/** A node's root: a primary conflist in etc/cni/net.d, an empty opt/cni/bin; a service-account dir. */
function nodeRoot(name: string): { host: string; sa: string } {
  const host = join(home, name, "host");
  const sa = join(home, name, "sa");
  for (const d of ["etc/cni/net.d", "opt/cni/bin", "var/lib/cni"])
    mkdirSync(join(host, d), { recursive: true });
  mkdirSync(sa, { recursive: true });
  writeFileSync(join(sa, "token"), "token-from-the-kubelet");
  writeFileSync(
    join(sa, "ca.crt"),
    "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n",
  );
  const primary = {
    cniVersion: "1.0.0",
    name: "primary-net",
    plugins: [
      { type: "bridge", bridge: "cni0", ipam: { type: "host-local", subnet: "10.233.0.0/24" } },
    ],
  };
  writeFileSync(join(host, "etc/cni/net.d/10-bridge.conflist"), JSON.stringify(primary));
  return { host, sa };
}

function runInstaller(node: { host: string; sa: string }, extraRunArgs: string[] = []) {
  return podman([
    "run",
    "--rm",
    "--network",
    "none",
    ...ULIMITS,
    `--memory=${installerMemoryLimitMiB()}m`,
    "-v",
    `${node.host}:/host`,
    "-v",
    `${node.sa}:${SA_DIR}:ro`,
    "-e",
    "KUBERNETES_SERVICE_HOST=10.233.255.1",
    "-e",
    "KUBERNETES_SERVICE_PORT=443",
    ...extraRunArgs,
    IMAGE,
    "install",
    "--once",
    "--primary-config-timeout=20",
  ]);
}

const sha256 = (path: string) => createHash("sha256").update(readFileSync(path)).digest("hex");

describeE2e(
  "e2e the DaemonSet image (npm run image, podman)",
  () => {
    const timings: string[] = [];

    beforeAll(() => {
      home = mkdtempSync(join(tmpdir(), "plx-image-"));
      ensureRelease();
      const started = performance.now();
      const r = spawnSync(process.execPath, [join(REPO_ROOT, "scripts/image.mjs"), ...globals()], {
        cwd: REPO_ROOT,
        env: { ...process.env, PATH: TEST_PATH },
        encoding: "utf8",
        timeout: 240_000,
      });
      if (r.status !== 0)
        throw new Error(`scripts/image.mjs failed (${r.status ?? r.signal}): ${r.stderr}`);
      IMAGE = r.stdout.trim();
      timings.push(
        `npm run image (both architectures) ${Math.round(performance.now() - started)} ms`,
      );
      timings.push(r.stderr.trim().replaceAll("\n", "; "));
    }, 300_000);

    afterAll(() => {
      process.stderr.write(`image e2e: ${timings.join("; ")}\n`);
      if (!home) return;
      podman(["rm", "--all", "--force", "--time", "0"]);
      podman(["system", "reset", "--force"]);
      rmSync(home, { recursive: true, force: true });
    });

    it("one image per architecture and a manifest list naming both; the image's entry answers --version", () => {
      const list = JSON.parse(podmanOk(["manifest", "inspect", IMAGE])) as {
        manifests: Array<{ platform: { architecture: string; os: string } }>;
      };
      expect(list.manifests.map((m) => `${m.platform.os}/${m.platform.architecture}`)).toEqual([
        "linux/amd64",
        "linux/arm64",
      ]);
      for (const arch of ["amd64", "arm64"])
        expect(
          podmanOk([
            "image",
            "inspect",
            "--format",
            "{{.Architecture}}",
            `${IMAGE}-${arch}`,
          ]).trim(),
        ).toBe(arch);
      const config = JSON.parse(podmanOk(["image", "inspect", `${IMAGE}-amd64`]))[0].Config as {
        Entrypoint: string[];
      };
      expect(config.Entrypoint).toEqual(["/usr/local/bin/plexus"]);
      const run = ["run", "--rm", "--network", "none", ...ULIMITS];
      const version = podmanOk([...run, IMAGE, "--version"]);
      expect(version.trim()).toBe(VERSION_LINE);
    });

    it("the name has version and commit; OCI labels: source, revision, version, licenses", () => {
      expect(IMAGE).toMatch(/^localhost\/plexus:/);
      expect(IMAGE).toContain(INFO.commit.slice(0, 12));
      for (const arch of ["amd64", "arm64"]) {
        const inspect = podmanOk(["image", "inspect", "--format", "{{json .Labels}}", image(arch)]);
        const labels = JSON.parse(inspect) as Record<string, string>;
        expect(labels["org.opencontainers.image.revision"]).toBe(INFO.commit);
        expect(labels["org.opencontainers.image.version"]).toBe(INFO.version);
        expect(labels["org.opencontainers.image.licenses"]).toMatch(/^Apache-2\.0( AND .+)?$/);
        const created = new Date(INFO.time * 1000).toISOString().replace(/\.000Z$/, "Z");
        expect(labels["org.opencontainers.image.created"]).toBe(created);
        if (INFO.source) expect(labels["org.opencontainers.image.source"]).toBe(INFO.source);
        // The commit's time, not the build's: one commit, one image.
        const when = podmanOk(["image", "inspect", "--format", "{{.Created.Unix}}", image(arch)]);
        expect(Number(when.trim())).toBe(INFO.time);
      }
    });

    it("M11 install --once from the image, under the installer's memory limit: the binary for this CPU and 00-plexus.conflist land in the bind-mounted host dir", () => {
      const node = nodeRoot("node-a");
      const started = performance.now();
      const r = runInstaller(node);
      timings.push(`install --once in the container ${Math.round(performance.now() - started)} ms`);
      expect(r.status, r.stderr).toBe(0);
      expect(r.stdout, "the installer writes nothing to stdout").toBe("");
      const avx2 = cpuinfoHasAvx2(readFileSync("/proc/cpuinfo", "utf8"));
      const want = releasePath(avx2 ? "plexus-linux-amd64" : "plexus-linux-amd64-baseline");
      expect(sha256(join(node.host, "opt/cni/bin/plexus"))).toBe(sha256(want));
      const conf = JSON.parse(
        readFileSync(join(node.host, "etc/cni/net.d/00-plexus.conflist"), "utf8"),
      );
      expect(conf.plugins[0]).toMatchObject({
        type: "plexus",
        clusterNetwork: "/etc/cni/net.d/10-bridge.conflist",
        kubeconfig: "/etc/cni/net.d/plexus.d/plexus.kubeconfig",
      });
      const kubeconfig = readFileSync(
        join(node.host, "etc/cni/net.d/plexus.d/plexus.kubeconfig"),
        "utf8",
      );
      expect(kubeconfig).toContain("https://10.233.255.1:443");
      expect(readFileSync(join(node.host, "etc/cni/net.d/plexus.d/token"), "utf8")).toBe(
        "token-from-the-kubelet",
      );
    });

    it("M11 on a CPU without AVX2 (a /proc/cpuinfo without the flag bound over the real one) the installer installs the baseline build", () => {
      const node = nodeRoot("node-b");
      const cpuinfo = join(home, "cpuinfo-nehalem");
      writeFileSync(
        cpuinfo,
        "processor\t: 0\nmodel name\t: Intel Core i7 9xx (Nehalem Class Core i7)\nflags\t\t: fpu sse sse2 ssse3 cx16 sse4_1 sse4_2 popcnt\n\n",
      );
      const r = runInstaller(node, ["-v", `${cpuinfo}:/proc/cpuinfo:ro`]);
      expect(r.status, r.stderr).toBe(0);
      expect(sha256(join(node.host, "opt/cni/bin/plexus"))).toBe(
        sha256(releasePath("plexus-linux-amd64-baseline")),
      );
      expect(
        JSON.parse(readFileSync(join(node.host, "etc/cni/net.d/00-plexus.conflist"), "utf8"))
          .plugins[0].type,
      ).toBe("plexus");
    });

    it("the arm64 image holds the arm64 executable and the glibc it links: it runs from the image's files alone under qemu-aarch64-static", () => {
      const id = podmanOk(["create", "--platform", "linux/arm64", `${IMAGE}-arm64`]).trim();
      const tree = join(home, "arm64-tree");
      mkdirSync(tree);
      try {
        podmanOk(["export", "-o", join(home, "arm64.tar"), id]);
      } finally {
        podman(["rm", id]);
      }
      expect(spawnSync("tar", ["-xf", join(home, "arm64.tar"), "-C", tree]).status).toBe(0);
      const exe = join(tree, "usr/local/bin/plexus");
      expect(readFileSync(exe).readUInt16LE(18)).toBe(0xb7); // aarch64
      expect(sha256(exe)).toBe(sha256(releasePath("plexus-linux-arm64")));
      // -L: the image's tree is the guest's root, so the loader and glibc come from the image.
      const r = spawnSync("qemu-aarch64-static", ["-L", tree, exe, "--version"], {
        encoding: "utf8",
        env: { PATH: TEST_PATH, QEMU_LD_PREFIX: tree },
        timeout: 60_000,
      });
      expect(r.status, r.stderr).toBe(0);
      expect(r.stdout.trim()).toBe(VERSION_LINE);
      // The image's own SBOM names this executable by its SHA-256, and its license is there.
      const doc = join(tree, "usr/share/doc/plexus");
      const sbom = JSON.parse(readFileSync(join(doc, "sbom.cdx.json"), "utf8"));
      const entry = "/usr/local/bin/plexus";
      const listed = sbom.components.find((c: { name: string }) => c.name === entry);
      expect(listed.hashes).toEqual([{ alg: "SHA-256", content: sha256(exe) }]);
      expect(sbom.components.map((c: { name: string }) => c.name)).toContain("libc6");
      expect(readFileSync(join(doc, "LICENSE"), "utf8")).toMatch(/Apache License/);
    });
  },
  { tools: TOOLS },
);
