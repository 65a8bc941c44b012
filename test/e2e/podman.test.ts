/**
 * A real container runtime driving dist/plexus (K1, C2.4, C2.5): Debian's podman with its CNI
 * backend (`network_backend = "cni"`) runs Plexus's conflist for `podman run`, `stop` and `rm`,
 * with runc and a one-file image (a static busybox, `podman import`ed). podman decides when ADD and
 * DEL happen and what they get, as containerd does for the kubelet; the tests look at what the
 * container saw and at what is left afterwards. Subnets 10.222.x.0/24.
 */
import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { PLEXUS_BIN, TEST_PATH } from "../support/plexus-bin";
import {
  CNI_BIN_DIR,
  describeE2e,
  NOTHING_LEFT,
  useE2eScope,
  type E2eScope,
} from "../support/netns";
import { bridgeNet, defaultNet, hostLocal } from "./networks";

const TOOLS = [
  { command: "podman", pkg: "podman" },
  { command: "runc", pkg: "runc" },
  { command: "/bin/busybox", pkg: "busybox-static" },
];
/** This sandbox refuses podman's default rlimits (see the project brief). */
const ULIMITS = ["--ulimit", "nofile=4096:4096", "--ulimit", "nproc=1024:1024"];
const IMAGE = "localhost/plexus-e2e-busybox:1";

/** podman's own state for this file: storage, run dir, its config, the CNI conf and bin dirs. */
let home: string;

function podman(args: readonly string[]): { status: number; stdout: string; stderr: string } {
  const r = spawnSync(
    "podman",
    [
      "--root",
      join(home, "root"),
      "--runroot",
      join(home, "run"),
      "--storage-driver",
      "vfs",
      ...args,
    ],
    {
      env: { PATH: TEST_PATH, CONTAINERS_CONF: join(home, "containers.conf"), HOME: home },
      encoding: "utf8",
      timeout: 60_000,
    },
  );
  return {
    status: r.status ?? -1,
    stdout: r.stdout,
    stderr: r.stderr + (r.error ? String(r.error) : ""),
  };
}

function podmanOk(args: readonly string[]): string {
  const r = podman(args);
  expect(r.status, `podman ${args.join(" ")}: ${r.stderr}`).toBe(0);
  return r.stdout;
}

/**
 * A podman network that is Plexus with inline delegates (no Kubernetes), state in the test's scope.
 */
function writeNetwork(
  scope: E2eScope,
  name: string,
  delegates: unknown[],
  extra: Record<string, unknown> = {},
): void {
  const plexus = {
    ...extra,
    type: "plexus",
    cniDir: scope.cniDir,
    logLevel: "debug",
    logFile: join(scope.root, "plexus.log"),
    logToStderr: false,
    capabilities: { ips: true, mac: true },
    delegates,
  };
  writeFileSync(
    join(home, "net", `${name}.conflist`),
    JSON.stringify({ cniVersion: "1.0.0", name, plugins: [plexus] }),
  );
}

const withIps = <T extends object>(conf: T) => ({ ...conf, capabilities: { ips: true } });

/** The container's interfaces and addresses as `ip -o -4 addr` prints them: name → addresses. */
function addresses(out: string): Record<string, string[]> {
  const by: Record<string, string[]> = {};
  for (const line of out.split("\n")) {
    const m = /^\d+:\s+(\S+)\s+inet\s+(\S+)/.exec(line);
    if (m && m[1] !== "lo") (by[m[1]!] ??= []).push(m[2]!);
  }
  return by;
}

describeE2e(
  "e2e podman (CNI backend) runs dist/plexus",
  () => {
    const t = useE2eScope();

    beforeAll(() => {
      home = mkdtempSync(join(tmpdir(), "plx-podman-"));
      for (const d of ["net", "bin", "image/bin"]) mkdirSync(join(home, d), { recursive: true });
      symlinkSync(PLEXUS_BIN, join(home, "bin", "plexus"));
      writeFileSync(
        join(home, "containers.conf"),
        [
          "[network]",
          'network_backend = "cni"',
          `cni_plugin_dirs = ["${join(home, "bin")}", "${CNI_BIN_DIR}"]`,
          `network_config_dir = "${join(home, "net")}"`,
          "[engine]",
          'runtime = "runc"',
          'cgroup_manager = "cgroupfs"',
          'events_logger = "file"',
          "",
        ].join("\n"),
      );
      // The image: one static binary and the applet names the tests run.
      spawnSync("cp", ["/bin/busybox", join(home, "image/bin/busybox")]);
      for (const applet of ["sh", "ip", "sleep"])
        symlinkSync("busybox", join(home, "image/bin", applet));
      spawnSync("tar", ["-C", join(home, "image"), "-cf", join(home, "image.tar"), "."]);
      podmanOk(["import", join(home, "image.tar"), IMAGE]);
    });

    afterAll(() => {
      if (!home) return;
      podman(["rm", "--all", "--force", "--time", "0"]);
      podman(["system", "reset", "--force"]);
      rmSync(home, { recursive: true, force: true });
    });

    it("K1 C2.4 `podman run --ip` on a network of two delegates: eth0 gets the requested IP, net1 is allocated normally; after `--rm` nothing is left", async () => {
      const { scope } = t;
      writeNetwork(scope, "plx-two", [
        withIps(defaultNet(scope, "10.222.1.0/24", "pm-main")),
        withIps(
          bridgeNet({
            name: "pm-second",
            bridge: scope.bridgeName(),
            ipam: hostLocal(scope, "10.222.2.0/24"),
          }),
        ),
      ]);
      const out = podmanOk([
        "run",
        "--rm",
        ...ULIMITS,
        "--network",
        "plx-two",
        "--ip",
        "10.222.1.50",
        IMAGE,
        "ip",
        "-o",
        "-4",
        "addr",
      ]);
      expect(addresses(out)).toEqual({ eth0: ["10.222.1.50/24"], net1: ["10.222.2.2/24"] });
      expect(scope.attachmentLeftovers()).toEqual(NOTHING_LEFT);
    });

    it("K1 C2.5 run -d, stop, rm: the runtime's ADD, then its DELs (stop, and rm after the netns is gone), leave nothing", async () => {
      const { scope } = t;
      writeNetwork(scope, "plx-life", [defaultNet(scope, "10.222.3.0/24", "pm-life")]);
      const id = podmanOk([
        "run",
        "-d",
        ...ULIMITS,
        "--network",
        "plx-life",
        IMAGE,
        "sleep",
        "600",
      ]).trim();
      expect(scope.ipReservations()).toEqual(["pm-life/10.222.3.2"]);
      expect(scope.recordFiles()).toEqual([`${id}-eth0.json`]);
      podmanOk(["stop", "--time", "0", id]);
      podmanOk(["rm", id]);
      expect(scope.attachmentLeftovers()).toEqual(NOTHING_LEFT);
    });

    it("K1 M7 an ADD that fails under podman (the second network's range is taken): podman's cleanup DEL succeeds, nothing is left, the next run works", async () => {
      const { scope } = t;
      const full = hostLocal(scope, "10.222.5.0/24", {
        rangeStart: "10.222.5.10",
        rangeEnd: "10.222.5.10",
      });
      writeNetwork(scope, "plx-full", [
        defaultNet(scope, "10.222.4.0/24", "pm-ok"),
        bridgeNet({ name: "pm-full", bridge: scope.bridgeName(), ipam: full }),
      ]);
      mkdirSync(join(scope.dataDir, "pm-full"), { recursive: true });
      writeFileSync(join(scope.dataDir, "pm-full", "10.222.5.10"), "someone-else\neth0");
      const r = podman(["run", "--rm", ...ULIMITS, "--network", "plx-full", IMAGE, "true"]);
      expect(r.status).not.toBe(0);
      expect(r.stderr).toContain("pm-full");
      rmSync(join(scope.dataDir, "pm-full", "10.222.5.10"));
      expect(scope.attachmentLeftovers()).toEqual(NOTHING_LEFT);
      const out = podmanOk([
        "run",
        "--rm",
        ...ULIMITS,
        "--network",
        "plx-full",
        IMAGE,
        "ip",
        "-o",
        "-4",
        "addr",
      ]);
      expect(addresses(out)).toEqual({ eth0: ["10.222.4.3/24"], net1: ["10.222.5.10/24"] });
      expect(scope.attachmentLeftovers()).toEqual(NOTHING_LEFT);
    });

    it("M7 K1 podman calls DEL once: a second network whose ADD and DEL both fail (an invalid subnet), then `rm -f`; plexus records shows the pending record, its DEL error and when it goes; the next container run and removed on the node retries the record, abandons it (failedDelRetrySeconds 0) and leaves no record, lock or result file", async () => {
      const { scope } = t;
      const bad = hostLocal(scope, "10.222.7.128/33");
      writeNetwork(
        scope,
        "plx-once",
        [
          defaultNet(scope, "10.222.6.0/24", "pm-once"),
          bridgeNet({ name: "pm-bad", bridge: scope.bridgeName(), ipam: bad }),
        ],
        { failedDelRetrySeconds: 0 },
      );
      // The node's setting: every network of this node runs Plexus with the same bound.
      writeNetwork(scope, "plx-next", [defaultNet(scope, "10.222.8.0/24", "pm-next")], {
        failedDelRetrySeconds: 0,
      });
      const r = podman([
        "run",
        "-d",
        "--name",
        "once",
        ...ULIMITS,
        "--network",
        "plx-once",
        IMAGE,
        "sleep",
        "600",
      ]);
      expect(r.status).not.toBe(0);
      expect(r.stderr).toContain("invalid CIDR address");
      podman(["rm", "-f", "--time", "0", "once"]);
      // podman's one DEL failed: the record waits, shown as pending, for a retry by a later call.
      expect(scope.recordFiles()).toHaveLength(1);
      expect(scope.attachmentLeftovers().pendingFiles).toHaveLength(1);
      type Listed = { state: string; why: string; delFailedAt: string; retryUntil: string };
      const records = (args: string[]) => {
        const list = ["records", "list", "--output", "json", ...args];
        const r = spawnSync(PLEXUS_BIN, list, { encoding: "utf8" });
        return JSON.parse(r.stdout) as Array<Listed & { lastErrors: string[] }>;
      };
      // Why it is there (the network's last DEL error) and when it goes: by the network's own
      // failedDelRetrySeconds (0: at the next retry), or the default's hour when read without it.
      const [own] = records(["--config", join(home, "net", "plx-once.conflist")]);
      expect(own).toMatchObject({
        state: "pending",
        lastErrors: [expect.stringMatching(/^pm-bad@net1: .*invalid CIDR/)],
      });
      expect(own!.retryUntil).toBe(own!.delFailedAt);
      expect(own!.why).toContain("invalid CIDR address");
      const [byDir] = records(["--cni-dir", scope.cniDir]);
      expect(Date.parse(byDir!.retryUntil) - Date.parse(byDir!.delFailedAt)).toBe(3600_000);
      podmanOk(["run", "--rm", ...ULIMITS, "--network", "plx-next", IMAGE, "sleep", "0"]);
      expect(scope.attachmentLeftovers()).toEqual(NOTHING_LEFT);
      // No pod in the record (no Kubernetes here): the abandonment is a log line naming the
      // network.
      expect(readFileSync(join(scope.root, "plexus.log"), "utf8")).toMatch(
        /"network":"pm-bad".*giving up on this attachment/,
      );
    });
  },
  { tools: TOOLS },
);
