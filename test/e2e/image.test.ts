/**
 * The DaemonSet images as `npm run image` builds them (scripts/image.mjs, offline, into a private
 * podman store): two manifest lists, the default one and the baseline one, over images that hold
 * one executable each (the arm64 image shared by both). Run with podman the way the DaemonSet runs
 * its installer (M11): the node's root bind-mounted as /host holding a primary CNI config, the
 * service-account token and CA where Kubernetes mounts them, KUBERNETES_SERVICE_HOST/PORT set, and
 * the installer container's memory limit from deploy/daemonset.yaml. `install --once` must leave
 * the image's executable and 00-plexus.conflist in the host dir: the AVX2 build from the default
 * image (which cannot start on a CPU without AVX2), the baseline build from the baseline image,
 * also under a /proc/cpuinfo without avx2 (bound over the real one, as LXCFS does). The arm64
 * image's files run under qemu-aarch64-static with only what the image holds, and each image's
 * SBOM names its executable and the pinned glibc by what the tree holds.
 */
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs";
import { writeFileSync } from "node:fs";
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
/** The manifest lists scripts/image.mjs built (the names it prints: version and commit). */
let IMAGE: string;
let BASELINE: string;
/** Every image, by the name scripts/image.mjs gives it. */
const images = () => [`${IMAGE}-amd64`, `${IMAGE}-arm64`, `${BASELINE}-amd64`];
const HOST_AVX2 = cpuinfoHasAvx2(readFileSync("/proc/cpuinfo", "utf8"));
/** What a shell reports for a process killed by SIGILL (128 + 4): podman passes it on. */
const SIGILL_STATUS = 132;
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
      `deploy/daemonset.yaml: the install container's memory limit is not in Mi: ` +
        `${install?.resources.limits.memory}`,
    );
  return Number(m[1]);
}

/**
 * A node's root: a primary conflist in etc/cni/net.d, an empty opt/cni/bin; a service-account dir.
 */
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

function runInstaller(o: {
  node: { host: string; sa: string };
  image: string;
  extraRunArgs?: string[];
}) {
  const { node, image, extraRunArgs = [] } = o;
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
    image,
    "install",
    "--once",
    "--primary-config-timeout=20",
  ]);
}

const sha256 = (path: string) => createHash("sha256").update(readFileSync(path)).digest("hex");

/** The file tree of `image` (of `arch`), exported into `<home>/<name>`. */
function exportTree(o: { image: string; arch: string; name: string }): string {
  const id = podmanOk(["create", "--platform", `linux/${o.arch}`, o.image]).trim();
  const tree = join(home, o.name);
  const tar = join(home, `${o.name}.tar`);
  mkdirSync(tree);
  try {
    podmanOk(["export", "-o", tar, id]);
  } finally {
    podman(["rm", id]);
  }
  expect(spawnSync("tar", ["-xf", tar, "-C", tree]).status).toBe(0);
  rmSync(tar);
  return tree;
}

type SbomComponent = {
  name: string;
  version: string;
  description?: string;
  hashes: Array<{ content: string }>;
  properties?: Array<{ name: string; value: string }>;
  components?: SbomComponent[];
};

/**
 * The image's own SBOM names what its tree holds: the executable (the release build `build`) by
 * SHA-256 with the version and commit, and Debian's libc6 at the pinned version with every glibc
 * file of the tree by SHA-256.
 */
function expectSbomDescribes(o: { tree: string; build: string }) {
  const sbom = JSON.parse(readFileSync(join(o.tree, "usr/share/doc/plexus/sbom.cdx.json"), "utf8"));
  const byName = (n: string) => sbom.components.find((c: SbomComponent) => c.name === n);
  const exe: SbomComponent = byName("/usr/local/bin/plexus");
  expect(exe.hashes).toEqual([
    { alg: "SHA-256", content: sha256(join(o.tree, "usr/local/bin/plexus")) },
  ]);
  expect(exe.version).toBe(INFO.version);
  expect(exe.description).toBe(o.build);
  expect(exe.properties).toContainEqual({ name: "plexus:commit", value: INFO.commit });
  const libc6: SbomComponent = byName("libc6");
  const pinned = readFileSync(join(REPO_ROOT, "scripts/libc6.version"), "utf8").trim();
  expect(libc6.version).toBe(pinned);
  const libDir = readdirSync(join(o.tree, "lib")).find((d) => d.endsWith("-linux-gnu"))!;
  const files = readdirSync(join(o.tree, "lib", libDir)).map((f) => `/lib/${libDir}/${f}`);
  expect(libc6.components!.map((c) => c.name).sort()).toEqual(files.sort());
  for (const c of libc6.components!)
    expect(c.hashes[0]!.content, c.name).toBe(sha256(join(o.tree, c.name)));
}

/** The platforms and digests a manifest list names. */
function listed(list: string): Array<{ platform: string; digest: string }> {
  const inspect = JSON.parse(podmanOk(["manifest", "inspect", list])) as {
    manifests: Array<{ digest: string; platform: { architecture: string; os: string } }>;
  };
  return inspect.manifests.map((m) => ({
    platform: `${m.platform.os}/${m.platform.architecture}`,
    digest: m.digest,
  }));
}

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
      [IMAGE, BASELINE] = r.stdout.trim().split("\n") as [string, string];
      timings.push(
        `npm run image (both lists, three images) ${Math.round(performance.now() - started)} ms`,
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

    it("two manifest lists for amd64 and arm64, the arm64 image shared; the entry answers --version", () => {
      const lists = { default: listed(IMAGE), baseline: listed(BASELINE) };
      for (const l of Object.values(lists))
        expect(l.map((m) => m.platform)).toEqual(["linux/amd64", "linux/arm64"]);
      expect(lists.baseline[0]!.digest).not.toBe(lists.default[0]!.digest);
      expect(lists.baseline[1]!.digest).toBe(lists.default[1]!.digest);
      for (const name of images()) {
        const arch = podmanOk(["image", "inspect", "--format", "{{.Architecture}}", name]);
        expect(arch.trim()).toBe(name.endsWith("-arm64") ? "arm64" : "amd64");
        const config = JSON.parse(podmanOk(["image", "inspect", name]))[0].Config as {
          Entrypoint: string[];
          Cmd: string[];
        };
        expect(config.Entrypoint).toEqual(["/usr/local/bin/plexus"]);
        expect(config.Cmd).toEqual(["install"]);
      }
      const run = ["run", "--rm", "--network", "none", ...ULIMITS];
      expect(podmanOk([...run, BASELINE, "--version"]).trim()).toBe(VERSION_LINE);
      if (HOST_AVX2) expect(podmanOk([...run, IMAGE, "--version"]).trim()).toBe(VERSION_LINE);
    });

    it("each image holds one executable, the release build of its architecture and variant, and is about its size", () => {
      const want = [
        { image: `${IMAGE}-amd64`, arch: "amd64", file: "plexus-linux-amd64" },
        { image: `${BASELINE}-amd64`, arch: "amd64", file: "plexus-linux-amd64-baseline" },
        { image: `${IMAGE}-arm64`, arch: "arm64", file: "plexus-linux-arm64" },
      ] as const;
      for (const [i, w] of want.entries()) {
        const tree = exportTree({ image: w.image, arch: w.arch, name: `one-${i}` });
        expect(readdirSync(join(tree, "usr/local/bin")), w.image).toEqual(["plexus"]);
        expect(sha256(join(tree, "usr/local/bin/plexus")), w.image).toBe(
          sha256(releasePath(w.file)),
        );
        const size = Number(podmanOk(["image", "inspect", "--format", "{{.Size}}", w.image]));
        const exe = statSync(releasePath(w.file)).size;
        timings.push(`${w.image} ${(size / 2 ** 20).toFixed(1)} MiB`);
        // The executable and glibc: no room for a second executable.
        expect(size, w.image).toBeLessThan(exe * 1.25);
        expectSbomDescribes({ tree, build: w.file });
        rmSync(tree, { recursive: true, force: true });
      }
    });

    it("the names have version and commit; OCI labels: source, revision, version, licenses", () => {
      for (const list of [IMAGE, BASELINE]) {
        expect(list).toMatch(/^localhost\/plexus:/);
        expect(list).toContain(INFO.commit.slice(0, 12));
      }
      expect(BASELINE).toBe(`${IMAGE}-baseline`);
      for (const name of images()) {
        const inspect = podmanOk(["image", "inspect", "--format", "{{json .Labels}}", name]);
        const labels = JSON.parse(inspect) as Record<string, string>;
        expect(labels["org.opencontainers.image.revision"]).toBe(INFO.commit);
        expect(labels["org.opencontainers.image.version"]).toBe(INFO.version);
        expect(labels["org.opencontainers.image.licenses"]).toMatch(/^Apache-2\.0( AND .+)?$/);
        const created = new Date(INFO.time * 1000).toISOString().replace(/\.000Z$/, "Z");
        expect(labels["org.opencontainers.image.created"]).toBe(created);
        if (INFO.source) expect(labels["org.opencontainers.image.source"]).toBe(INFO.source);
        // The commit's time, not the build's: one commit, one image.
        const when = podmanOk(["image", "inspect", "--format", "{{.Created.Unix}}", name]);
        expect(Number(when.trim())).toBe(INFO.time);
      }
    });

    it("M11 install --once from the default image, under the installer's memory limit: the AVX2 build and 00-plexus.conflist land in the bind-mounted host dir (on a CPU without AVX2 it cannot start: SIGILL, nothing installed)", () => {
      const node = nodeRoot("node-a");
      const started = performance.now();
      const r = runInstaller({ node, image: IMAGE });
      timings.push(`install --once in the container ${Math.round(performance.now() - started)} ms`);
      if (!HOST_AVX2) {
        expect(r.status, r.stderr).toBe(SIGILL_STATUS);
        expect(readdirSync(join(node.host, "opt/cni/bin"))).toEqual([]);
        return;
      }
      expect(r.status, r.stderr).toBe(0);
      expect(r.stdout, "the installer writes nothing to stdout").toBe("");
      const installed = join(node.host, "opt/cni/bin/plexus");
      expect(sha256(installed)).toBe(sha256(releasePath("plexus-linux-amd64")));
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

    it("M11 on a CPU without AVX2 (a /proc/cpuinfo without the flag bound over the real one) the baseline image installs the baseline build", () => {
      const node = nodeRoot("node-b");
      const cpuinfo = join(home, "cpuinfo-nehalem");
      writeFileSync(
        cpuinfo,
        "processor\t: 0\nmodel name\t: Intel Core i7 9xx (Nehalem Class Core i7)\nflags\t\t: fpu " +
          "sse sse2 ssse3 cx16 sse4_1 sse4_2 popcnt\n\n",
      );
      const extraRunArgs = ["-v", `${cpuinfo}:/proc/cpuinfo:ro`];
      const r = runInstaller({ node, image: BASELINE, extraRunArgs });
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
      const tree = exportTree({ image: `${IMAGE}-arm64`, arch: "arm64", name: "arm64-tree" });
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
      expect(readFileSync(join(tree, "usr/share/doc/plexus/LICENSE"), "utf8")).toMatch(
        /Apache License/,
      );
      expectSbomDescribes({ tree, build: "plexus-linux-arm64" });
    });
  },
  { tools: TOOLS },
);
