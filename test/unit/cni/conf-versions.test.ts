/**
 * CNI 1.1's version selection in a conflist (`cniVersion` and `cniVersions`: the highest version
 * supported), read as libcni 1.2+ reads the list, and the list flags libcni reads with its
 * `readBool` (`loadOnlyInlinedPlugins` among them), for every conflist Plexus parses.
 */
import { describe, expect, it } from "vitest";
import { parseConfList } from "../../../src/cni/conf";
import { conflistUnknownKeys, describeUnknownKey } from "../../../src/config/unknown-keys";

const list = (extra: Record<string, unknown>) => ({
  name: "net-a",
  plugins: [{ type: "bridge" }, { type: "tuning" }],
  ...extra,
});
const parse = (value: unknown, defaultVersion?: string) =>
  parseConfList(value, { what: "NAD app/net-a", ...(defaultVersion ? { defaultVersion } : {}) });

function thrown(fn: () => unknown): { code: number; message: string } {
  try {
    fn();
  } catch (err) {
    return err as { code: number; message: string };
  }
  throw new Error("expected an error");
}

describe("N7.1 cniVersions: the list's version is the highest Plexus supports", () => {
  it("N7.1 the highest of cniVersions and cniVersion that Plexus speaks; versions above 1.1.0 left out", () => {
    const r = parse(
      list({ cniVersion: "0.4.0", cniVersions: ["1.0.0", "0.3.1", "1.1.0", "2.0.0"] }),
    );
    expect(r.cniVersion).toBe("1.1.0");
    // cniVersion takes part: here it is the highest.
    expect(parse(list({ cniVersion: "1.1.0", cniVersions: ["0.4.0"] })).cniVersion).toBe("1.1.0");
    // Without cniVersion, the list alone; with a cniVersion Plexus does not speak, the list wins.
    expect(parse(list({ cniVersions: ["0.3.1", "1.0.0"] })).cniVersion).toBe("1.0.0");
    expect(parse(list({ cniVersion: "9.9.9", cniVersions: ["1.0.0"] })).cniVersion).toBe("1.0.0");
  });

  it("N7.1 an unreleased version at or below 1.1.0 is passed over (libcni would pick it and fail later)", () => {
    const r = parse(list({ cniVersions: ["1.0.0", "1.0.1", "0.5.0"] }));
    expect(r.cniVersion).toBe("1.0.0");
  });

  it("N7.1 no version Plexus speaks is code 1 naming them and the supported ones; an empty list changes nothing", () => {
    const e = thrown(() => parse(list({ cniVersions: ["2.0.0", "1.0.1"] })));
    expect(e.code).toBe(1);
    expect(e.message).toContain('NAD app/net-a: no version of "cniVersion" and "cniVersions"');
    expect(e.message).toContain('"2.0.0","1.0.1"');
    expect(e.message).toContain(
      "supported versions: 0.1.0, 0.2.0, 0.3.0, 0.3.1, 0.4.0, 1.0.0, 1.1.0",
    );
    expect(parse(list({ cniVersion: "0.4.0", cniVersions: [] })).cniVersion).toBe("0.4.0");
    expect(parse(list({ cniVersions: [] }), "1.0.0").cniVersion).toBe("1.0.0");
  });

  it("N7.1 cniVersions that is not a list of version strings is code 7 naming the entry, as libcni refuses it", () => {
    const cases: Array<[unknown, string]> = [
      ["1.1.0", '"cniVersions" must be a list of version strings, got "1.1.0"'],
      [[1.1], "cniVersions[0] 1.1 is not a version"],
      [["1.0.0", "v1"], 'cniVersions[1] "v1" is not a version'],
      [["1.0.0", "1.0.0.0"], 'cniVersions[1] "1.0.0.0" is not a version'],
    ];
    for (const [cniVersions, words] of cases) {
      const e = thrown(() => parse(list({ cniVersion: "1.0.0", cniVersions })));
      expect(e.code, words).toBe(7);
      expect(e.message).toContain(words);
    }
  });

  it("N7.1 a single plugin config's cniVersions is its own key, not read for selection", () => {
    const single = { name: "net-a", type: "bridge", cniVersion: "1.0.0", cniVersions: ["1.1.0"] };
    expect(parse(single).cniVersion).toBe("1.0.0");
  });

  it("M1 cniVersions matched as Go matches keys (any case)", () => {
    expect(parse(list({ CNIVersions: ["1.0.0"] })).cniVersion).toBe("1.0.0");
  });
});

describe("N7.1 the list flags as libcni 1.2+ reads them", () => {
  it('N7.1 disableCheck, disableGC and loadOnlyInlinedPlugins: a boolean, or "true"/"false" in any case', () => {
    const r = parse(
      list({
        cniVersion: "1.1.0",
        disableCheck: "TRUE",
        disableGC: "False",
        loadOnlyInlinedPlugins: "True",
      }),
    );
    expect(r).toMatchObject({ disableCheck: true, disableGC: false });
    expect(r).not.toHaveProperty("loadOnlyInlinedPlugins");
    const e = thrown(() => parse(list({ cniVersion: "1.1.0", loadOnlyInlinedPlugins: "yes" })));
    expect(e.code).toBe(7);
    expect(e.message).toContain("loadOnlyInlinedPlugins");
  });

  it("M1 validate and doctor know loadOnlyInlinedPlugins and cniVersions as conflist keys, and name a typo of them", () => {
    const known = list({
      cniVersion: "1.1.0",
      cniVersions: ["1.1.0"],
      loadOnlyInlinedPlugins: true,
    });
    expect(conflistUnknownKeys(known)).toEqual([]);
    const typo = conflistUnknownKeys(list({ loadOnlyInlinedPlugin: true, cniVersons: ["1.0.0"] }));
    expect(typo.map(describeUnknownKey)).toEqual([
      "`loadOnlyInlinedPlugin` is not a conflist key (libcni reads no such key); did you mean " +
        "`loadOnlyInlinedPlugins`?",
      "`cniVersons` is not a conflist key (libcni reads no such key); did you mean `cniVersions`?",
    ]);
  });
});
