/**
 * The installer's choice of the primary network config (M11, B49): libcni's order, Plexus's own
 * files and broken configs refused with a warning naming the file.
 */
import { describe, expect, it } from "vitest";
import { choosePrimary } from "../../../src/install/primary";

const bridge = (name = "mynet") =>
  JSON.stringify({ cniVersion: "1.0.0", name, plugins: [{ type: "bridge" }] });
const f = (name: string, content: string) => ({ path: `/etc/cni/net.d/${name}`, content });

describe("choosePrimary", () => {
  it("M11 picks the first .conf/.conflist/.json by byte order, not locale order", () => {
    const c = choosePrimary([
      f("20-b.conflist", bridge("b")),
      f("10-a.conf", JSON.stringify({ cniVersion: "0.4.0", name: "a", type: "ptp" })),
      f("Z.json", bridge("z")),
    ]);
    expect(c.primary?.path).toBe("/etc/cni/net.d/10-a.conf");
    expect(c.primary?.conf.plugins[0]?.type).toBe("ptp");
    // "Z" (0x5A) sorts before "a" (0x61) as libcni's sort.Strings has it.
    expect(
      choosePrimary([f("a.conflist", bridge("a")), f("Z.conflist", bridge("z"))]).primary?.path,
    ).toBe("/etc/cni/net.d/Z.conflist");
  });

  it("B49 refuses a dir holding only Plexus's own config", () => {
    const own = JSON.stringify({
      cniVersion: "1.0.0",
      name: "plexus-cni-network",
      plugins: [{ type: "plexus", clusterNetwork: "/x" }],
    });
    const c = choosePrimary([f("00-plexus.conflist", own)]);
    expect(c.primary).toBeUndefined();
  });

  it("B49 refuses a renamed copy of Plexus's config (type plexus) and says why", () => {
    const own = JSON.stringify({
      cniVersion: "1.0.0",
      name: "plexus-cni-network",
      plugins: [{ type: "plexus" }],
    });
    const c = choosePrimary([f("05-plexus-old.conflist", own)]);
    expect(c.primary).toBeUndefined();
    expect(c.warnings.join("\n")).toMatch(/05-plexus-old\.conflist is a Plexus config/);
  });

  it("B49 refuses a conflist with plugins: [] and names the file", () => {
    const c = choosePrimary([
      f("10-empty.conflist", JSON.stringify({ cniVersion: "1.0.0", name: "x", plugins: [] })),
    ]);
    expect(c.primary).toBeUndefined();
    expect(c.warnings.join("\n")).toMatch(/10-empty\.conflist has no plugins/);
  });

  it("B49 refuses a hidden temp file (an atomic writer's, Plexus's own included)", () => {
    const c = choosePrimary([f(".00-plexus.conflist.tmp-12-1-abc.conflist", bridge())]);
    expect(c.primary).toBeUndefined();
    expect(c.warnings.join("\n")).toMatch(/hidden file/);
  });

  it("B49 refuses empty, unparsable and invalid configs, each with a warning naming it, and takes the next usable one", () => {
    const c = choosePrimary([
      f("01-empty.conf", ""),
      f("02-garbage.conflist", "{not json"),
      f("03-notype.conf", JSON.stringify({ cniVersion: "1.0.0", name: "x" })),
      f(
        "04-badversion.conflist",
        JSON.stringify({ cniVersion: "9.9.9", name: "x", plugins: [{ type: "bridge" }] }),
      ),
      f("05-list.json", "[1,2]"),
      f("10-good.conflist", bridge("good")),
    ]);
    expect(c.primary?.path).toBe("/etc/cni/net.d/10-good.conflist");
    const text = c.warnings.join("\n");
    for (const name of [
      "01-empty.conf",
      "02-garbage.conflist",
      "03-notype.conf",
      "04-badversion.conflist",
      "05-list.json",
    ])
      expect(text).toContain(name);
    expect(text).toMatch(/9\.9\.9/);
  });

  it("M11 --primary-config-file-name considers that file only", () => {
    const files = [f("10-a.conflist", bridge("a")), f("20-b.conflist", bridge("b"))];
    expect(choosePrimary(files, { fileName: "20-b.conflist" }).primary?.conf.name).toBe("b");
    expect(choosePrimary(files, { fileName: "30-c.conflist" }).primary).toBeUndefined();
  });
});
