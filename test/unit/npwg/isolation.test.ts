import { describe, expect, it } from "vitest";
import { checkNamespaceAccess, effectiveGlobalNamespaces } from "../../../src/npwg/isolation";

const conf = {
  namespaceIsolation: true,
  globalNamespaces: ["shared"],
  multusNamespace: "kube-system",
};
const access =
  (namespace: string, extra: { allowMultusNamespace?: boolean; conf?: typeof conf } = {}) =>
  () =>
    checkNamespaceAccess({
      podNamespace: "team-a",
      ref: { namespace, name: "n" },
      conf: extra.conf ?? conf,
      ...(extra.allowMultusNamespace ? { allowMultusNamespace: true } : {}),
    });

describe("N7.4 B24 namespace isolation", () => {
  it("N7.4 the pod's own namespace and the globalNamespaces are allowed", () => {
    expect(access("team-a")).not.toThrow();
    expect(access("shared")).not.toThrow();
  });

  it("B24 N7.4 another namespace is refused with 7 naming the reference, the pod's namespace and the rule", () => {
    expect(() =>
      checkNamespaceAccess({
        podNamespace: "team-a",
        ref: { namespace: "team-b", name: "n" },
        conf,
        what: "default-network override",
      }),
    ).toThrow(
      expect.objectContaining({
        code: 7,
        message: expect.stringMatching(
          /^default-network override team-b\/n is refused for a pod in namespace team-a: namespaceIsolation allows only .*globalNamespaces \(shared\)/,
        ),
      }),
    );
  });

  it("B24 N7.4 multusNamespace is refused for an annotation reference unless global (as Multus: it is not implicitly allowed)", () => {
    expect(access("kube-system")).toThrow(
      expect.objectContaining({
        code: 7,
        message: expect.stringContaining("kube-system/n is refused"),
      }),
    );
    expect(
      access("kube-system", { conf: { ...conf, globalNamespaces: ["shared", "kube-system"] } }),
    ).not.toThrow();
  });

  it("M5 N7.4 the default-network override may use multusNamespace (where its bare name points), still not another namespace", () => {
    expect(access("kube-system", { allowMultusNamespace: true })).not.toThrow();
    expect(access("team-b", { allowMultusNamespace: true })).toThrow(
      expect.objectContaining({
        code: 7,
        message: expect.stringContaining("multusNamespace kube-system"),
      }),
    );
  });

  it('N7.4 globalNamespaces unset means ["default"] (Multus\'s NonIsolatedNamespaces default); set, it replaces that', () => {
    const unset = { ...conf, globalNamespaces: [] };
    expect(effectiveGlobalNamespaces(unset)).toEqual(["default"]);
    expect(access("default", { conf: unset })).not.toThrow();
    expect(access("shared", { conf: unset })).toThrow(expect.objectContaining({ code: 7 }));
    expect(access("default")).toThrow(expect.objectContaining({ code: 7 }));
  });

  it("N7.4 without isolation every namespace is allowed", () => {
    expect(access("team-b", { conf: { ...conf, namespaceIsolation: false } })).not.toThrow();
  });
});
