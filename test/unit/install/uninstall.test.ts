/**
 * `plexus uninstall`'s plan: the names the installer writes, under the same flags (container paths
 * as mounted, node paths under --host-prefix), and bad flags refused with what was expected. The
 * removal itself runs through dist/plexus in test/integration/install-lifecycle.test.ts.
 */
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync } from "node:fs";
import { symlinkSync } from "node:fs";
import { writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { placeGuard } from "../../../src/install/multus-guard";
import { planUninstall, runUninstall } from "../../../src/install/uninstall";
import { recordingLogger } from "./recording-logger";

const DEFAULTS = {
  cniConfDir: "/host/etc/cni/net.d",
  cniBinDir: "/host/opt/cni/bin",
  hostPrefix: "/host",
  kubeconfigFileHost: "/etc/cni/net.d/plexus.d/plexus.kubeconfig",
  cniDir: "/var/lib/cni/plexus",
};

describe("planUninstall", () => {
  it("M11 in the DaemonSet's container: what the installer wrote, seen under /host, named as on the node", () => {
    const p = planUninstall(DEFAULTS);
    expect(p.plexusConf).toEqual({
      local: "/host/etc/cni/net.d/00-plexus.conflist",
      host: "/etc/cni/net.d/00-plexus.conflist",
    });
    expect(p.credentials.map((c) => c.local)).toEqual([
      "/host/etc/cni/net.d/plexus.d/plexus.kubeconfig",
      "/host/etc/cni/net.d/plexus.d/token",
      "/host/etc/cni/net.d/plexus.d/ca.crt",
    ]);
    expect(p.credentialsDir).toEqual({
      local: "/host/etc/cni/net.d/plexus.d",
      host: "/etc/cni/net.d/plexus.d",
    });
    expect(p.binary).toEqual({ local: "/host/opt/cni/bin/plexus", host: "/opt/cni/bin/plexus" });
    expect(p.cniDir).toEqual({ local: "/host/var/lib/cni/plexus", host: "/var/lib/cni/plexus" });
    expect(p.removeState).toBe(false);
  });

  it("on the node itself (--host-prefix ''): the paths as given", () => {
    const p = planUninstall({
      ...DEFAULTS,
      hostPrefix: "",
      cniConfDir: "/etc/cni/net.d",
      cniBinDir: "/opt/cni/bin",
      removeState: true,
    });
    expect(p.plexusConf.local).toBe("/etc/cni/net.d/00-plexus.conflist");
    expect(p.binary.local).toBe("/opt/cni/bin/plexus");
    expect(p.cniDir.local).toBe("/var/lib/cni/plexus");
    expect(p.removeState).toBe(true);
  });

  it("relative paths are refused with code 7, naming the flag and the value", () => {
    for (const [key, flag] of [
      ["cniConfDir", "--cni-conf-dir"],
      ["cniBinDir", "--cni-bin-dir"],
      ["hostPrefix", "--host-prefix"],
      ["kubeconfigFileHost", "--kubeconfig-file-host"],
      ["cniDir", "--cni-dir"],
    ] as const) {
      expect(() => planUninstall({ ...DEFAULTS, [key]: "relative/dir" }), flag).toThrow(
        expect.objectContaining({ code: 7, message: expect.stringContaining(`${flag} must be`) }),
      );
    }
  });
});

const ROOT_REFUSED = "is the root of the node";

describe("runUninstall --remove-state: only Plexus's own state goes", () => {
  let root: string;
  beforeEach(() => {
    root = mkdtempSync(join(tmpdir(), "plx-uninstall-"));
  });
  afterEach(() => rmSync(root, { recursive: true, force: true }));

  const plan = (cniDir: string, removeState = true) =>
    planUninstall({ ...DEFAULTS, hostPrefix: root, cniDir, removeState });
  const put = (rel: string, text = "x") => {
    mkdirSync(dirname(join(root, rel)), { recursive: true });
    writeFileSync(join(root, rel), text);
  };

  it("B79 refuses / and the host-prefix root before anything is removed (code 7, naming the flag)", () => {
    for (const dir of ["/", "/.", "//"])
      expect(() => plan(dir), dir).toThrow(
        expect.objectContaining({ code: 7, message: expect.stringContaining(ROOT_REFUSED) }),
      );
    // Without --remove-state the state dir is never touched, so / is no danger there.
    expect(plan("/", false).cniDir.host).toBe("/");
  });

  it("B71 B79 --cni-dir set to the state dir's parent: host-local's reservations stay, the run fails with why", async () => {
    put("var/lib/cni/networks/net-a/10.1.0.5", "c1\neth1");
    put("var/lib/cni/plexus/records/c1-eth0.json", "{}");
    const log = recordingLogger();
    expect(await runUninstall(plan("/var/lib/cni"), log)).toBe(1);
    const reservation = join(root, "var/lib/cni/networks/net-a/10.1.0.5");
    expect(readFileSync(reservation, "utf8")).toBe("c1\neth1");
    expect(existsSync(join(root, "var/lib/cni/plexus/records/c1-eth0.json"))).toBe(true);
    expect(log.text()).toContain("/var/lib/cni does not look like Plexus's state dir");
    expect(log.text()).toContain("networks");
  });

  it("B79 a dir holding only results/ (libcni's cache name) is not taken for Plexus's", async () => {
    put("var/lib/cni/results/net-c1-eth0", "{}");
    expect(await runUninstall(plan("/var/lib/cni"), recordingLogger())).toBe(1);
    expect(existsSync(join(root, "var/lib/cni/results/net-c1-eth0"))).toBe(true);
  });

  it("B79 removes records, results, locks, pending and their temp files, then the empty dirs", async () => {
    put("var/lib/cni/plexus/records/c1-eth0.json");
    put(`var/lib/cni/plexus/records/~${"a".repeat(64)}.json`);
    put("var/lib/cni/plexus/records/.c1-eth0.json.tmp-123-4-abc");
    put("var/lib/cni/plexus/results/net-a-c1-net1");
    put("var/lib/cni/plexus/locks/c1-eth0.lock");
    put("var/lib/cni/plexus/pending/c1-eth0.json");
    const log = recordingLogger();
    expect(await runUninstall(plan("/var/lib/cni/plexus"), log)).toBe(0);
    expect(existsSync(join(root, "var/lib/cni/plexus"))).toBe(false);
    expect(existsSync(join(root, "var/lib/cni"))).toBe(true);
    const done = log.lines.find((l) => l.msg.startsWith("state dir removed"));
    expect(done?.fields).toMatchObject({ removed: 6 });
  });

  it("B79 leaves what Plexus never wrote inside its own subdirs (a foreign name, a planted dir, a symlink's target)", async () => {
    put("var/lib/cni/plexus/records/c1-eth0.json");
    put("var/lib/cni/plexus/records/notes.txt");
    mkdirSync(join(root, "var/lib/cni/plexus/locks/c2-eth0.lock"), { recursive: true });
    put("etc/keep", "keep");
    mkdirSync(join(root, "var/lib/cni/plexus/results"));
    symlinkSync(join(root, "etc/keep"), join(root, "var/lib/cni/plexus/results/net-c3-eth0"));
    const log = recordingLogger();
    expect(await runUninstall(plan("/var/lib/cni/plexus"), log)).toBe(0);
    expect(existsSync(join(root, "var/lib/cni/plexus/records/c1-eth0.json"))).toBe(false);
    expect(existsSync(join(root, "var/lib/cni/plexus/records/notes.txt"))).toBe(true);
    expect(existsSync(join(root, "var/lib/cni/plexus/locks/c2-eth0.lock"))).toBe(true);
    expect(readFileSync(join(root, "etc/keep"), "utf8")).toBe("keep");
    // The symlink had one of Plexus's names: unlinked (its target stays, above).
    expect(existsSync(join(root, "var/lib/cni/plexus/results"))).toBe(false);
    const warn = log.lines.find((l) => l.level === "warn" && l.msg.startsWith("state dir"));
    expect(warn?.fields.left).toEqual([
      "/var/lib/cni/plexus/locks/c2-eth0.lock",
      "/var/lib/cni/plexus/records/notes.txt",
    ]);
  });

  it("B79 B80 a symlinked plexus.d is left alone: nothing is removed through it", async () => {
    put("elsewhere/token", "secret");
    put("elsewhere/plexus.kubeconfig", "kc");
    mkdirSync(join(root, "etc/cni/net.d"), { recursive: true });
    symlinkSync(join(root, "elsewhere"), join(root, "etc/cni/net.d/plexus.d"));
    const log = recordingLogger();
    expect(await runUninstall(plan("/var/lib/cni/plexus", false), log)).toBe(0);
    expect(readFileSync(join(root, "elsewhere/token"), "utf8")).toBe("secret");
    expect(existsSync(join(root, "elsewhere/plexus.kubeconfig"))).toBe(true);
    expect(log.text()).toContain("the credentials dir is a symbolic link");
  });

  it("M14 a config the take-over moved aside is kept and named, with the way back", async () => {
    put("etc/cni/net.d/00-plexus.conflist", "{}");
    put("etc/cni/net.d/00-multus.conf.plexus-moved", MULTUS);
    const log = recordingLogger();
    const confDir = join(root, "etc/cni/net.d");
    const where = { ...DEFAULTS, hostPrefix: root, cniConfDir: confDir };
    expect(await runUninstall(planUninstall(where), log)).toBe(0);
    expect(existsSync(join(root, "etc/cni/net.d/00-plexus.conflist"))).toBe(false);
    expect(existsSync(join(root, "etc/cni/net.d/00-multus.conf.plexus-moved"))).toBe(true);
    const warned = log.lines.filter((line) => /moved aside/.test(line.msg));
    expect(warned).toHaveLength(1);
    expect(JSON.stringify(warned[0])).toContain("00-multus.conf.plexus-moved");
    expect(warned[0]!.msg).toContain("--no-take-over-multus");
  });

  it("M18 the guards go; a kept copy wrapping Plexus is named as never to go back", async () => {
    const dir = join(root, "etc/cni/net.d");
    put("etc/cni/net.d/00-plexus.conflist", "{}");
    put("etc/cni/net.d/00-multus.conf.plexus-moved", MULTUS);
    put("etc/cni/net.d/00-multus.conf.plexus-moved.2", WRAPPING);
    for (const name of ["00-multus.conf", "00-multus.conflist", "00-multus.conf.new"])
      expect(placeGuard(dir, name)).toBe("placed");
    // A directory of someone else's under a guard's name stays.
    mkdirSync(join(dir, "00-other.conf"));
    const log = recordingLogger();
    const where = { ...DEFAULTS, hostPrefix: root, cniConfDir: dir };
    expect(await runUninstall(planUninstall(where), log)).toBe(0);
    expect(readdirSync(dir).sort()).toEqual([
      "00-multus.conf.plexus-moved",
      "00-multus.conf.plexus-moved.2",
      "00-other.conf",
    ]);
    const warned = log.lines.filter((line) => /moved aside/.test(line.msg));
    expect(warned).toHaveLength(1);
    expect(warned[0]!.msg).toMatch(/rename 00-multus\.conf\.plexus-moved to 00-multus\.conf/);
    expect(warned[0]!.msg).toMatch(/never put back 00-multus\.conf\.plexus-moved\.2: it wraps/);
  });
});

/** What Multus thin's entrypoint renders around a bridge, and around Plexus's config (M18). */
const MULTUS = JSON.stringify({
  cniVersion: "0.4.0",
  name: "multus-cni-network",
  type: "multus",
  delegates: [{ cniVersion: "0.4.0", name: "b", type: "bridge" }],
});
const WRAPPING = JSON.stringify({
  cniVersion: "0.4.0",
  name: "multus-cni-network",
  type: "multus",
  delegates: [{ cniVersion: "0.4.0", name: "p", plugins: [{ type: "plexus" }] }],
});
