import { describe, expect, it } from "vitest";
import { missingNadError, resolveNadConfig, type ConfFile } from "../../../src/npwg/nad";
import type { Nad } from "../../../src/npwg/types";

const nad = (config?: unknown, name = "net-a"): Nad => ({
  metadata: { name, namespace: "ns" },
  ...(config === undefined ? {} : { spec: { config: config as string } }),
});
const bridge = { cniVersion: "1.0.0", name: "net-a", type: "bridge", bridge: "br-a" };
const err7 = (text: string | RegExp) =>
  expect.objectContaining({
    code: 7,
    message: typeof text === "string" ? expect.stringContaining(text) : expect.stringMatching(text),
  });

describe("N3.4.1 NAD → delegate config", () => {
  it("N3.4.1 spec.config first, even when a file of that name exists: a single config becomes a one-plugin list", () => {
    const r = resolveNadConfig(nad(JSON.stringify(bridge)), [
      {
        path: "/etc/cni/net.d/net-a.conflist",
        content: JSON.stringify({ ...bridge, plugins: [{ type: "macvlan" }] }),
      },
    ]);
    expect(r.source).toBe("spec.config");
    expect(r.conf).toEqual({ cniVersion: "1.0.0", name: "net-a", plugins: [{ ...bridge }] });
    expect(r.warnings).toEqual([]);
  });

  it("N3.4.1 a conflist in spec.config keeps its plugins in order", () => {
    const r = resolveNadConfig(
      nad(
        JSON.stringify({
          cniVersion: "1.0.0",
          name: "net-a",
          plugins: [{ type: "bridge" }, { type: "tuning", mac: "02:00:00:00:00:01" }],
        }),
      ),
      [],
    );
    expect(r.conf.plugins.map((p) => p.type)).toEqual(["bridge", "tuning"]);
  });

  it("N3.2 N3.4.1 without spec.config, a .conflist whose name matches wins over a .conf that sorts first (Multus takes the .conf)", () => {
    const files: ConfFile[] = [
      { path: "/d/00-net-a.conf", content: JSON.stringify({ ...bridge, bridge: "from-conf" }) },
      {
        path: "/d/99-net-a.conflist",
        content: JSON.stringify({
          cniVersion: "1.0.0",
          name: "net-a",
          plugins: [{ type: "bridge", bridge: "from-conflist" }],
        }),
      },
      {
        path: "/d/10-other.conflist",
        content: JSON.stringify({
          cniVersion: "1.0.0",
          name: "other",
          plugins: [{ type: "bridge" }],
        }),
      },
    ];
    const r = resolveNadConfig(nad(), files);
    expect(r.source).toBe("/d/99-net-a.conflist");
    expect(r.conf.plugins[0]?.bridge).toBe("from-conflist");
  });

  it("N3.2 N3.4.1 then a .conf or .json whose name matches; an empty spec.config counts as absent; broken files are skipped with a warning", () => {
    const files: ConfFile[] = [
      { path: "/d/01-broken.conflist", content: "{nope" },
      { path: "/d/02-net-a.json", content: JSON.stringify(bridge) },
    ];
    const r = resolveNadConfig(nad(""), files);
    expect(r.source).toBe("/d/02-net-a.json");
    expect(r.conf.plugins[0]?.type).toBe("bridge");
    expect(r.warnings).toEqual([
      expect.stringMatching(/^\/d\/01-broken\.conflist is not valid JSON.*; skipped$/),
    ]);
  });

  it("N3.4.2 a file config without cniVersion takes defaultVersion", () => {
    const { cniVersion: _v, ...noVersion } = bridge;
    expect(
      resolveNadConfig(nad(), [{ path: "/d/a.conf", content: JSON.stringify(noVersion) }], {
        defaultVersion: "0.4.0",
      }).conf.cniVersion,
    ).toBe("0.4.0");
  });

  it("B32 N3.4.1 no spec.config and no file of that name → 7 naming the NAD and what was looked for", () => {
    expect(() =>
      resolveNadConfig(nad(), [
        { path: "/d/x.conf", content: JSON.stringify({ ...bridge, name: "x" }) },
      ]),
    ).toThrow(
      err7(
        /^NetworkAttachmentDefinition ns\/net-a: spec\.config absent and no \.conflist, \.conf or \.json file in the CNI config directory has "name": "net-a"$/,
      ),
    );
  });

  it("B32 a file of that name that is itself broken is not a match: 7, the skipped file in the details", () => {
    try {
      resolveNadConfig(nad(), [{ path: "/d/net-a.conf", content: "{" }]);
      expect.unreachable();
    } catch (e) {
      expect(e).toMatchObject({
        code: 7,
        details: expect.stringContaining("/d/net-a.conf is not valid JSON"),
      });
    }
  });

  it("N3.4.2 a config without a name gets the NAD's (single config and conflist)", () => {
    const { name: _n, ...unnamed } = bridge;
    const single = resolveNadConfig(nad(JSON.stringify(unnamed)), []);
    expect(single.conf.name).toBe("net-a");
    expect(single.conf.plugins[0]?.name).toBe("net-a");
    expect(single.warnings).toEqual([]);
    expect(
      resolveNadConfig(
        nad(JSON.stringify({ cniVersion: "1.0.0", plugins: [{ type: "bridge" }] })),
        [],
      ).conf.name,
    ).toBe("net-a");
  });

  it("N3.4.3 a config name that differs from the NAD's is kept and returned as a warning", () => {
    const r = resolveNadConfig(nad(JSON.stringify({ ...bridge, name: "other-name" })), []);
    expect(r.conf.name).toBe("other-name");
    expect(r.warnings).toEqual([
      expect.stringMatching(/ns\/net-a.*"other-name" differs from the NAD's name "net-a"/),
    ]);
  });

  it.each([
    ["not JSON", "{not json"],
    ["only whitespace", "   "],
    ["JSON null", "null"],
    ["a list", "[]"],
    ["a string", '"net-a"'],
    ["over 1 MiB", JSON.stringify({ ...bridge, pad: "x".repeat(1024 * 1024) })],
  ])("B29 spec.config %s → 7 naming the NAD", (_label, config) => {
    expect(() => resolveNadConfig(nad(config), [])).toThrow(
      err7("NetworkAttachmentDefinition ns/net-a spec.config"),
    );
  });

  it("B29 spec.config that is not a string (a hand-made object) → 7", () => {
    expect(() => resolveNadConfig(nad({ type: "bridge" }), [])).toThrow(
      err7("ns/net-a: spec.config must be a string"),
    );
  });

  it.each([
    ["empty plugins", { cniVersion: "1.0.0", name: "net-a", plugins: [] }],
    ["a plugin without type", { cniVersion: "1.0.0", name: "net-a", plugins: [{ bridge: "x" }] }],
    ["a single config without type", { cniVersion: "1.0.0", name: "net-a" }],
    ["type ../bin/sh", { ...bridge, type: "../bin/sh" }],
    ["type /bin/sh", { ...bridge, type: "/bin/sh" }],
    ["type with NUL", { ...bridge, type: "sh\u0000" }],
    ["empty type", { ...bridge, type: "" }],
  ])("B31 B30 %s → 7 naming the NAD", (_label, config) => {
    expect(() => resolveNadConfig(nad(JSON.stringify(config)), [])).toThrow(err7("ns/net-a"));
  });

  it("B30 a bad type in a conf-dir file → 7 naming the NAD and the file", () => {
    expect(() =>
      resolveNadConfig(nad(), [
        { path: "/d/a.conf", content: JSON.stringify({ ...bridge, type: "../x" }) },
      ]),
    ).toThrow(err7(/ns\/net-a \(config from \/d\/a\.conf\)/));
  });
});

describe("B28 a missing NAD", () => {
  it('B28 names the pod, the reference and the namespace searched, without the words "not found" (B62)', () => {
    const e = missingNadError({
      pod: "app/p",
      ref: { namespace: "team", name: "net-x" },
      from: "annotation k8s.v1.cni.cncf.io/networks",
    });
    expect(e).toMatchObject({
      code: 7,
      message:
        "pod app/p: network team/net-x (annotation k8s.v1.cni.cncf.io/networks): no " +
        'NetworkAttachmentDefinition named "net-x" exists in namespace team',
    });
    expect(e.message.toLowerCase()).not.toContain("not found");
  });
});
