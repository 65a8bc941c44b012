import { describe, expect, it } from "vitest";
import {
  firstConfigFile,
  isConfigFileName,
  pickByName,
  type ConfFile,
} from "../../../src/npwg/conf-dir";

const conf = (name: string, type = "bridge") => JSON.stringify({ cniVersion: "1.0.0", name, type });
const list = (name: string, plugins: unknown[] = [{ type: "bridge" }]) =>
  JSON.stringify({ cniVersion: "1.0.0", name, plugins });

describe("N3.4.1 pickByName", () => {
  it("N3.4.1 a .conflist whose name matches wins over a matching .conf or .json that sorts first (Multus takes the first file)", () => {
    const files: ConfFile[] = [
      { path: "/d/00-a.conf", content: conf("net-a") },
      { path: "/d/01-a.json", content: conf("net-a") },
      { path: "/d/99-a.conflist", content: list("net-a") },
    ];
    const r = pickByName(files, "net-a");
    expect(r.picked?.path).toBe("/d/99-a.conflist");
    expect(r.warnings).toEqual([
      '/d/00-a.conf, /d/01-a.json also have "name": "net-a"; using /d/99-a.conflist',
    ]);
  });

  it("N3.4.1 matches the JSON name, not the file name; without a .conflist the first matching .conf/.json in path order", () => {
    const files: ConfFile[] = [
      { path: "/d/net-a.conflist", content: list("other") },
      { path: "/d/20-x.json", content: conf("net-a", "macvlan") },
      { path: "/d/10-x.conf", content: conf("net-a", "ipvlan") },
    ];
    const r = pickByName(files, "net-a");
    expect(r.picked).toEqual({ path: "/d/10-x.conf", value: JSON.parse(conf("net-a", "ipvlan")) });
  });

  it("N3.4.1 path order is byte order like libcni's sort.Strings, not locale order", () => {
    // In byte order "B" (0x42) sorts before "a" (0x61); localeCompare puts "a" first.
    const files: ConfFile[] = [
      { path: "/d/a.conf", content: conf("net-a", "ptp") },
      { path: "/d/B.conf", content: conf("net-a", "bridge") },
    ];
    expect(pickByName(files, "net-a").picked?.path).toBe("/d/B.conf");
  });

  it("B32 no file has the name: nothing picked; files with other extensions are never read", () => {
    const r = pickByName(
      [
        { path: "/d/net-a.yaml", content: conf("net-a") },
        { path: "/d/x.conf", content: conf("x") },
      ],
      "net-a",
    );
    expect(r.picked).toBeUndefined();
    expect(r.warnings).toEqual([]);
  });

  it.each([
    ["not JSON", "{nope", "is not valid JSON"],
    ["JSON null", "null", "is not a JSON object"],
    ["a list", "[]", "is not a JSON object"],
    ["a __proto__ key", '{"__proto__": {}, "name": "net-a", "type": "bridge"}', "__proto__"],
    [
      "over 1 MiB",
      JSON.stringify({ name: "net-a", type: "bridge", pad: "x".repeat(1024 * 1024) }),
      "byte limit",
    ],
  ])(
    "B29 a broken file (%s) is skipped with a warning, the next one is used",
    (_label, content, warning) => {
      const r = pickByName(
        [
          { path: "/d/00-broken.conflist", content },
          { path: "/d/10-ok.conf", content: conf("net-a") },
        ],
        "net-a",
      );
      expect(r.picked?.path).toBe("/d/10-ok.conf");
      expect(r.warnings).toHaveLength(1);
      expect(r.warnings[0]).toMatch(/^\/d\/00-broken\.conflist .*skipped$/);
      expect(r.warnings[0]).toContain(warning);
    },
  );
});

describe("M2 M11 firstConfigFile", () => {
  it("M2 the alphabetically first .conf/.conflist/.json, whatever its name", () => {
    const files: ConfFile[] = [
      { path: "/etc/cni/net.d/20-b.conflist", content: list("b") },
      { path: "/etc/cni/net.d/10-a.json", content: conf("a") },
      { path: "/etc/cni/net.d/05-readme.txt", content: "not a config" },
    ];
    expect(firstConfigFile(files).picked?.path).toBe("/etc/cni/net.d/10-a.json");
  });

  it.each([
    ["not JSON", "{"],
    ["a conflist with plugins: []", list("x", [])],
    [
      "a conflist with plugins not a list",
      JSON.stringify({ cniVersion: "1.0.0", name: "x", plugins: {} }),
    ],
    ["a conf without type", JSON.stringify({ cniVersion: "1.0.0", name: "x" })],
  ])("B49 M2 %s is skipped with a warning", (_label, content) => {
    const r = firstConfigFile([
      { path: "/d/00-bad.conflist", content },
      { path: "/d/10-good.conf", content: conf("good") },
    ]);
    expect(r.picked?.path).toBe("/d/10-good.conf");
    expect(r.warnings).toEqual([expect.stringMatching(/^\/d\/00-bad\.conflist .*skipped$/)]);
  });

  it("B49 M11 excluded files (our own config, our temp files) are passed over silently; none usable → nothing picked", () => {
    const files: ConfFile[] = [
      { path: "/d/00-plexus.conflist", content: list("plexus", [{ type: "plexus" }]) },
      { path: "/d/.00-plexus.conflist.tmp", content: list("plexus", [{ type: "plexus" }]) },
      { path: "/d/10-empty.conflist", content: list("empty", []) },
    ];
    const r = firstConfigFile(files, { exclude: (p) => p.includes("plexus") });
    expect(r.picked).toBeUndefined();
    expect(r.warnings).toEqual(['/d/10-empty.conflist has no plugins in "plugins"; skipped']);
  });

  it("M2 config file names: .conf, .conflist, .json only", () => {
    expect(
      ["a.conf", "a.conflist", "a.json", "a.conf.bak", "a.yaml", "conf"].map(isConfigFileName),
    ).toEqual([true, true, true, false, false, false]);
  });
});
