/** `plexus install` flags (M11): container and node paths, validation that names the flag. */
import { describe, expect, it } from "vitest";
import { resolveOptions, toHost, type InstallFlags } from "../../../src/install/options";

const defaults: InstallFlags = {
  cniConfDir: "/host/etc/cni/net.d",
  cniBinDir: "/host/opt/cni/bin",
  hostPrefix: "/host",
  kubeconfigFileHost: "/etc/cni/net.d/plexus.d/plexus.kubeconfig",
  tokenFile: "/var/run/secrets/plexus/token",
  caFile: "/var/run/secrets/plexus/ca.crt",
  networkName: "plexus-cni-network",
  primaryConfigTimeout: "600",
  pollInterval: "2000",
  installerLogLevel: "info",
  binFile: "/usr/local/bin/plexus",
};

describe("install options", () => {
  it("M11 maps container paths to node paths through --host-prefix", () => {
    const o = resolveOptions(
      {
        ...defaults,
        readinessIndicatorFile: "/run/flannel/subnet.env",
        cniDir: "/var/lib/cni/plexus",
      },
      { KUBERNETES_SERVICE_HOST: "fd00::1", KUBERNETES_SERVICE_PORT: "443" },
    );
    expect(o.confDir).toEqual({ local: "/host/etc/cni/net.d", host: "/etc/cni/net.d" });
    expect(o.plexusConf).toEqual({
      local: "/host/etc/cni/net.d/00-plexus.conflist",
      host: "/etc/cni/net.d/00-plexus.conflist",
    });
    expect(o.kubeconfig).toEqual({
      local: "/host/etc/cni/net.d/plexus.d/plexus.kubeconfig",
      host: "/etc/cni/net.d/plexus.d/plexus.kubeconfig",
    });
    expect(o.token).toEqual({
      local: "/host/etc/cni/net.d/plexus.d/token",
      host: "/etc/cni/net.d/plexus.d/token",
    });
    expect(o.readinessIndicator).toEqual({
      local: "/host/run/flannel/subnet.env",
      host: "/run/flannel/subnet.env",
    });
    expect(o.cniDir).toEqual({ local: "/host/var/lib/cni/plexus", host: "/var/lib/cni/plexus" });
    expect(o.apiServer).toBe("https://[fd00::1]:443");
    expect(o.watch).toBe(true);
  });

  it("M11 an empty --host-prefix means the installer runs on the node itself", () => {
    const o = resolveOptions(
      {
        ...defaults,
        hostPrefix: "",
        cniConfDir: "/tmp/x/net.d",
        kubeconfigFileHost: "/tmp/x/net.d/plexus.d/k",
      },
      {},
    );
    expect(o.confDir).toEqual({ local: "/tmp/x/net.d", host: "/tmp/x/net.d" });
    expect(o.kubeconfig.local).toBe("/tmp/x/net.d/plexus.d/k");
    expect(o.apiServer).toBeUndefined();
    expect(toHost("/hostile/x", "/host")).toBe("/hostile/x");
  });

  it("M11 refuses bad flags naming the flag", () => {
    expect(() => resolveOptions({ ...defaults, cniVersion: "0.5.0" }, {})).toThrow(
      /--cni-version "0.5.0"/,
    );
    expect(() => resolveOptions({ ...defaults, cniConfDir: "etc/cni" }, {})).toThrow(
      /--cni-conf-dir must be an absolute path/,
    );
    expect(() => resolveOptions({ ...defaults, logLevel: "loud" }, {})).toThrow(
      /--log-level "loud"/,
    );
    expect(() => resolveOptions({ ...defaults, primaryConfigTimeout: "soon" }, {})).toThrow(
      /--primary-config-timeout/,
    );
    expect(() => resolveOptions({ ...defaults, apiServer: "http://10.0.0.1" }, {})).toThrow(
      /https/,
    );
    expect(() => resolveOptions({ ...defaults, binFile: undefined }, {})).toThrow(
      /--bin-file is required/,
    );
    expect(
      resolveOptions({ ...defaults, binFile: undefined, skipBinaryCopy: true }, {}).binFile,
    ).toBeUndefined();
  });

  it("M11 flag-given plugin keys use Multus's names", () => {
    const o = resolveOptions(
      {
        ...defaults,
        namespaceIsolation: true,
        globalNamespaces: "a,b",
        logLevel: "Verbose",
        logFile: "/var/log/plexus.log",
        logToStderr: false,
        additionalBinDir: "/opt/more",
      },
      {},
    );
    expect(o.pluginKeys).toEqual({
      namespaceIsolation: true,
      globalNamespaces: "a,b",
      logLevel: "verbose",
      logFile: "/var/log/plexus.log",
      logToStderr: false,
      binDir: "/opt/more",
    });
  });
});
