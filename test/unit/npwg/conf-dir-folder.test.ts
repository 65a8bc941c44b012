/**
 * libcni 1.3's plugin folder (conf-dir.ts withFolderPlugins): a `.conflist` taken from a
 * directory gets the `.conf` plugins of the folder named after its network appended, unless
 * `loadOnlyInlinedPlugins`; for a NAD without spec.config (N3.4.1) and the cluster network (M2).
 * The folder reader is faked here; network-source-folder.test.ts reads real directories.
 */
import { describe, expect, it } from "vitest";
import { parsePlexusConf } from "../../../src/config/plugin-conf";
import {
  firstConfigFile,
  pickByName,
  withFolderPlugins,
  type ConfFile,
  type PluginFolder,
} from "../../../src/npwg/conf-dir";
import { resolveDefaultNetworks, type NetworkSource } from "../../../src/npwg/default-network";
import { resolveNadConfig } from "../../../src/npwg/nad";
import type { Nad } from "../../../src/npwg/types";

const TUNING = { type: "tuning", sysctl: { "net.ipv4.conf.all.log_martians": "1" } };
const PORTMAP = { type: "portmap", capabilities: { portMappings: true } };

/** A file of `/d` whose folder reader answers from `folders` and records what it was asked. */
function fileIn(
  path: string,
  value: Record<string, unknown>,
  folders: Record<string, PluginFolder> = {},
): ConfFile & { asked: string[] } {
  const asked: string[] = [];
  return {
    path,
    content: JSON.stringify(value),
    asked,
    pluginFolder: (name) => {
      asked.push(name);
      return folders[name];
    },
  };
}

const folderOf = (name: string, plugins: unknown[]): PluginFolder => ({
  dir: `/d/${name}`,
  files: plugins.map((p, i) => ({ path: `/d/${name}/${i}0-p.conf`, content: JSON.stringify(p) })),
});

const bridgeList = (extra: Record<string, unknown> = {}) => ({
  cniVersion: "1.1.0",
  name: "net-a",
  plugins: [{ type: "bridge" }],
  ...extra,
});

function pickedFrom(file: ConfFile) {
  const picked = pickByName([file], "net-a").picked;
  if (!picked) throw new Error("nothing picked");
  return picked;
}

/** The error `fn` throws (fails when it returns). */
function thrown(fn: () => unknown): { code: number; message: string } {
  try {
    fn();
  } catch (err) {
    return err as { code: number; message: string };
  }
  throw new Error("expected an error");
}

describe("N7.1 libcni's plugin folder of a conflist file", () => {
  it("N7.1 a .conflist's plugins, then its folder's .conf plugins in the order given (name order)", () => {
    const file = fileIn("/d/10-a.conflist", bridgeList(), {
      "net-a": folderOf("net-a", [TUNING, PORTMAP]),
    });
    expect(withFolderPlugins(pickedFrom(file))).toEqual({
      ...bridgeList(),
      plugins: [{ type: "bridge" }, TUNING, PORTMAP],
    });
    expect(file.asked).toEqual(["net-a"]);
  });

  it("N7.1 loadOnlyInlinedPlugins true (any case of the string too): the inline plugins only, the folder not read", () => {
    for (const flag of [true, "true", "TRUE"]) {
      const file = fileIn("/d/10-a.conflist", bridgeList({ loadOnlyInlinedPlugins: flag }), {
        "net-a": folderOf("net-a", [TUNING]),
      });
      expect(withFolderPlugins(pickedFrom(file))).toEqual(
        bridgeList({ loadOnlyInlinedPlugins: flag }),
      );
      expect(file.asked).toEqual([]);
    }
    // false: the folder is read as when the key is absent.
    const file = fileIn("/d/10-a.conflist", bridgeList({ loadOnlyInlinedPlugins: false }), {
      "net-a": folderOf("net-a", [TUNING]),
    });
    expect(withFolderPlugins(pickedFrom(file)).plugins).toEqual([{ type: "bridge" }, TUNING]);
  });

  it("N7.1 loadOnlyInlinedPlugins true without plugins is refused with 7, as libcni refuses it", () => {
    const value = { cniVersion: "1.1.0", name: "net-a", loadOnlyInlinedPlugins: true };
    const e = thrown(() => withFolderPlugins(pickedFrom(fileIn("/d/10-a.conflist", value))));
    expect(e.code).toBe(7);
    expect(e.message).toContain(
      '"loadOnlyInlinedPlugins" is true, but the conflist has no "plugins"',
    );
  });

  it("N7.1 a .conflist without plugins runs its folder's alone; plugins: [] is refused before any folder is read", () => {
    const bare = { cniVersion: "1.1.0", name: "net-a" };
    const file = fileIn("/d/10-a.conflist", bare, { "net-a": folderOf("net-a", [TUNING]) });
    expect(withFolderPlugins(pickedFrom(file))).toEqual({ ...bare, plugins: [TUNING] });
    const empty = fileIn(
      "/d/10-a.conflist",
      { ...bare, plugins: [] },
      {
        "net-a": folderOf("net-a", [TUNING]),
      },
    );
    expect(withFolderPlugins(pickedFrom(empty))).toEqual({ ...bare, plugins: [] });
    expect(empty.asked).toEqual([]);
  });

  it("N7.1 a .conf or .json file takes no folder; nor does a conflist with no folder, or an empty one", () => {
    const single = { cniVersion: "1.1.0", name: "net-a", type: "bridge" };
    for (const path of ["/d/10-a.conf", "/d/10-a.json"]) {
      const file = fileIn(path, single, { "net-a": folderOf("net-a", [TUNING]) });
      expect(withFolderPlugins(pickedFrom(file))).toEqual(single);
      expect(file.asked).toEqual([]);
    }
    const none = fileIn("/d/10-a.conflist", bridgeList());
    expect(withFolderPlugins(pickedFrom(none))).toEqual(bridgeList());
    const empty = fileIn("/d/10-a.conflist", bridgeList(), { "net-a": folderOf("net-a", []) });
    expect(withFolderPlugins(pickedFrom(empty))).toEqual(bridgeList());
  });

  it("N7.1 a name that is not one path component is never asked for as a folder", () => {
    for (const name of ["../etc", "a/b", ".hidden", ""]) {
      const file = fileIn("/d/10-a.conflist", bridgeList({ name }));
      const picked = pickByName([file], name).picked!;
      expect(withFolderPlugins(picked)).toEqual(bridgeList({ name }));
      expect(file.asked).toEqual([]);
    }
  });

  it("N7.1 B92 a folder plugin's numbers reach the conflist as written", () => {
    const file: ConfFile = {
      ...fileIn("/d/10-a.conflist", bridgeList()),
      pluginFolder: () => ({
        dir: "/d/net-a",
        files: [{ path: "/d/net-a/x.conf", content: '{"type":"tuning","mtu":1e2}' }],
      }),
    };
    const plugins = withFolderPlugins(pickedFrom(file)).plugins as unknown[];
    expect(JSON.stringify(plugins[1])).toBe('{"type":"tuning","mtu":1e2}');
  });

  it("N7.1 a folder file that cannot be read, is not JSON, is not an object or has no type fails the network with 7 naming the file", () => {
    const cases: Array<[PluginFolder["files"][number], string]> = [
      [{ path: "/d/net-a/a.conf", problem: "it is a FIFO, not a regular file" }, "cannot be read"],
      [{ path: "/d/net-a/a.conf", content: "{" }, "/d/net-a/a.conf"],
      [{ path: "/d/net-a/a.conf", content: "[]" }, "is not a JSON object"],
      [{ path: "/d/net-a/a.conf", content: '{"mtu":1}' }, 'no "type"'],
      [{ path: "/d/net-a/a.conf", content: '{"type":"../sh"}' }, "/d/net-a/a.conf"],
    ];
    for (const [entry, words] of cases) {
      const file: ConfFile = {
        ...fileIn("/d/10-a.conflist", bridgeList()),
        pluginFolder: () => ({ dir: "/d/net-a", files: [entry] }),
      };
      const e = thrown(() => withFolderPlugins(pickedFrom(file)));
      expect(e.code, entry.path).toBe(7);
      expect(e.message).toContain("plugin file /d/net-a/a.conf");
      expect(e.message).toContain(words);
    }
    const unlisted: ConfFile = {
      ...fileIn("/d/10-a.conflist", bridgeList()),
      pluginFolder: () => ({ dir: "/d/net-a", files: [], problem: "cannot be listed (EACCES)" }),
    };
    const e = thrown(() => withFolderPlugins(pickedFrom(unlisted)));
    expect(e).toMatchObject({
      code: 7,
      message: "plugin folder /d/net-a cannot be listed (EACCES)",
    });
  });
});

describe("N3.4.1 a NAD without spec.config takes its conflist's folder too", () => {
  const nad: Nad = { metadata: { namespace: "app", name: "net-a" } };

  it("N3.4.1 N7.1 the conflist found by the NAD's name, with its folder's plugins after its own", () => {
    const file = fileIn("/d/10-a.conflist", bridgeList(), { "net-a": folderOf("net-a", [TUNING]) });
    const r = resolveNadConfig(nad, [file]);
    expect(r.source).toBe("/d/10-a.conflist");
    expect(r.conf.plugins.map((p) => p.type)).toEqual(["bridge", "tuning"]);
    expect(r.conf.plugins[1]).toMatchObject(TUNING);
  });

  it("N3.4.1 a broken folder plugin fails the attachment with 7 naming the NAD, the file and why", () => {
    const file: ConfFile = {
      ...fileIn("/d/10-a.conflist", bridgeList()),
      pluginFolder: () => ({
        dir: "/d/net-a",
        files: [{ path: "/d/net-a/a.conf", content: "{}" }],
      }),
    };
    const e = thrown(() => resolveNadConfig(nad, [file]));
    expect(e.code).toBe(7);
    expect(e.message).toMatch(
      /^NetworkAttachmentDefinition app\/net-a \(config from \/d\/10-a\.conflist\): plugin file \/d\/net-a\/a\.conf.*"type"/,
    );
  });

  it("N3.4.1 a spec.config conflist takes no folder (it does not come from a directory)", () => {
    const withConfig: Nad = { ...nad, spec: { config: JSON.stringify(bridgeList()) } };
    const file = fileIn("/d/10-a.conflist", bridgeList(), { "net-a": folderOf("net-a", [TUNING]) });
    expect(resolveNadConfig(withConfig, [file]).conf.plugins).toHaveLength(1);
    expect(file.asked).toEqual([]);
  });
});

describe("M2 the cluster network from the config directory takes its folder", () => {
  const plexus = (clusterNetwork: string) =>
    parsePlexusConf({ cniVersion: "1.1.0", name: "plexus", type: "plexus", clusterNetwork });

  function source(files: ConfFile[], paths: Record<string, ConfFile> = {}): NetworkSource {
    return {
      confDirFiles: async () => files,
      readPath: async (path) => paths[path],
      listDir: async (path) => (path === "/d" ? files : undefined),
    };
  }

  it("M2 N7.1 by name, as the directory's first config, and as a path: each with the folder's plugins", async () => {
    const file = fileIn("/d/10-a.conflist", bridgeList(), { "net-a": folderOf("net-a", [TUNING]) });
    const s = source([file], { "/d/10-a.conflist": file });
    for (const name of ["net-a", "/d", "/d/10-a.conflist"]) {
      const r = await resolveDefaultNetworks(undefined, plexus(name), s);
      expect(r.clusterNetwork.network, name).toBe("net-a");
      expect(
        r.clusterNetwork.conf.plugins.map((p) => p.type),
        name,
      ).toEqual(["bridge", "tuning"]);
    }
  });

  it("M2 a directory's first .conflist without plugins is usable when its folder has plugins", async () => {
    const bare = { cniVersion: "1.1.0", name: "net-a" };
    const file = fileIn("/d/10-a.conflist", bare, { "net-a": folderOf("net-a", [TUNING]) });
    const other = fileIn("/d/20-b.conf", { cniVersion: "1.1.0", name: "net-b", type: "ptp" });
    expect(firstConfigFile([file, other]).picked?.path).toBe("/d/10-a.conflist");
    const r = await resolveDefaultNetworks(undefined, plexus("/d"), source([file, other]));
    expect(r.clusterNetwork.conf.plugins.map((p) => p.type)).toEqual(["tuning"]);
    // Without the folder it is skipped, as before, and the next file is the network.
    const alone = fileIn("/d/10-a.conflist", bare);
    expect(firstConfigFile([alone, other]).picked?.path).toBe("/d/20-b.conf");
  });

  it("M2 a broken folder plugin fails with 7 naming the key, the config file and the plugin file", async () => {
    const file: ConfFile = {
      ...fileIn("/d/10-a.conflist", bridgeList()),
      pluginFolder: () => ({ dir: "/d/net-a", files: [{ path: "/d/net-a/a.conf", content: "7" }] }),
    };
    const pending = resolveDefaultNetworks(undefined, plexus("net-a"), source([file]));
    await expect(pending).rejects.toMatchObject({
      code: 7,
      message: expect.stringMatching(
        /^clusterNetwork config \/d\/10-a\.conflist: plugin file \/d\/net-a\/a\.conf is not a JSON object/,
      ),
    });
  });
});
