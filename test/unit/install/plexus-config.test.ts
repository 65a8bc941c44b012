/**
 * The generated 00-plexus.conflist (M11): one plugin of type plexus, clusterNetwork the primary's
 * node path, cniVersion negotiated, the primary's capabilities, the flag-given keys, and a config
 * the plugin's own parser accepts once the runtime has injected name and cniVersion (libcni).
 */
import { describe, expect, it } from "vitest";
import { parseConfList } from "../../../src/cni/conf";
import { parsePlexusConf } from "../../../src/config/plugin-conf";
import {
  buildPlexusConfig,
  primaryCapabilities,
  renderPlexusConfig,
  type PlexusConfigInput,
} from "../../../src/install/plexus-config";

const primary = parseConfList(
  {
    cniVersion: "0.4.0",
    name: "k8s-pod-network",
    plugins: [
      { type: "calico", capabilities: { ipRanges: true } },
      { type: "portmap", capabilities: { portMappings: true, snat: false } },
      { type: "bandwidth", capabilities: { bandwidth: true, portMappings: true } },
    ],
  },
  { what: "primary" },
);

function input(extra: Partial<PlexusConfigInput> = {}): PlexusConfigInput {
  return {
    primary,
    primaryHostPath: "/etc/cni/net.d/10-calico.conflist",
    networkName: "plexus-cni-network",
    kubeconfigHost: "/etc/cni/net.d/plexus.d/plexus.kubeconfig",
    confDirHost: "/etc/cni/net.d",
    pluginKeys: {},
    ...extra,
  };
}

describe("generated Plexus config", () => {
  it("M11 is a conflist with one plugin of type plexus, clusterNetwork the primary's path and a kubeconfig file", () => {
    const c = buildPlexusConfig(input()) as {
      cniVersion: string;
      name: string;
      plugins: Array<Record<string, unknown>>;
    };
    expect(c.name).toBe("plexus-cni-network");
    expect(c.plugins).toHaveLength(1);
    expect(c.plugins[0]).toMatchObject({
      type: "plexus",
      clusterNetwork: "/etc/cni/net.d/10-calico.conflist",
      kubeconfig: "/etc/cni/net.d/plexus.d/plexus.kubeconfig",
      confDir: "/etc/cni/net.d",
    });
    expect(c.plugins[0]).not.toHaveProperty("delegates");
  });

  it("M11 capabilities are the union of the primary's plugins' (true ones), so runtimeConfig reaches them", () => {
    expect(primaryCapabilities(primary)).toEqual({
      bandwidth: true,
      ipRanges: true,
      portMappings: true,
    });
    const c = buildPlexusConfig(input()) as { plugins: Array<Record<string, unknown>> };
    expect(c.plugins[0]!.capabilities).toEqual({
      bandwidth: true,
      ipRanges: true,
      portMappings: true,
    });
    const single = parseConfList({ cniVersion: "1.0.0", name: "n", type: "bridge" }, { what: "x" });
    expect(buildPlexusConfig(input({ primary: single })).plugins).toEqual([
      expect.not.objectContaining({ capabilities: expect.anything() }),
    ]);
  });

  it("M11 cniVersion is the primary's unless --cni-version is given", () => {
    expect(buildPlexusConfig(input()).cniVersion).toBe("0.4.0");
    expect(buildPlexusConfig(input({ cniVersion: "1.0.0" })).cniVersion).toBe("1.0.0");
  });

  it("M11 flag-given keys, readiness file and cniDir land in the plugin config", () => {
    const c = buildPlexusConfig(
      input({
        readinessIndicatorHost: "/run/flannel/subnet.env",
        cniDirHost: "/var/lib/cni/plexus",
        pluginKeys: {
          namespaceIsolation: true,
          globalNamespaces: "default,shared",
          logLevel: "debug",
          binDir: "/opt/extra",
        },
      }),
    ) as { plugins: Array<Record<string, unknown>> };
    expect(c.plugins[0]).toMatchObject({
      readinessindicatorfile: "/run/flannel/subnet.env",
      cniDir: "/var/lib/cni/plexus",
      namespaceIsolation: true,
      globalNamespaces: "default,shared",
      logLevel: "debug",
      binDir: "/opt/extra",
    });
  });

  it("M11 N6.1 the plugin's own parser accepts it as the runtime passes it (name and cniVersion injected)", () => {
    const list = JSON.parse(
      renderPlexusConfig(
        input({ readinessIndicatorHost: "/run/ready", pluginKeys: { namespaceIsolation: true } }),
      ),
    ) as {
      cniVersion: string;
      name: string;
      plugins: Array<Record<string, unknown>>;
    };
    const conf = parsePlexusConf({
      ...list.plugins[0],
      name: list.name,
      cniVersion: list.cniVersion,
    });
    expect(conf.clusterNetwork).toBe("/etc/cni/net.d/10-calico.conflist");
    expect(conf.kubeconfig).toBe("/etc/cni/net.d/plexus.d/plexus.kubeconfig");
    expect(conf.readinessindicatorfile).toBe("/run/ready");
    expect(conf.namespaceIsolation).toBe(true);
    expect(conf.capabilities).toEqual({ bandwidth: true, ipRanges: true, portMappings: true });
    expect(conf.unknownKeys).toEqual([]);
  });
});
