/**
 * `plexus uninstall`'s plan: the names the installer writes, under the same flags (container paths
 * as mounted, node paths under --host-prefix), and bad flags refused with what was expected. The
 * removal itself runs through dist/plexus in test/integration/install-lifecycle.test.ts.
 */
import { describe, expect, it } from "vitest";
import { planUninstall } from "../../../src/install/uninstall";

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
    expect(p.credentialsDir).toEqual({ local: "/host/etc/cni/net.d/plexus.d", host: "/etc/cni/net.d/plexus.d" });
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
