import { describe, expect, it } from "vitest";
import { parseCniArgs, podFromArgs } from "../../../src/cni/args";
import { Code } from "../../../src/cni/errors";

describe("C2.1 B6 CNI_ARGS", () => {
  it("C2.1 K=V pairs separated by ';' parse in order; empty or unset means none", () => {
    expect([...parseCniArgs("A=1;B=;C=x")]).toEqual([
      ["A", "1"],
      ["B", ""],
      ["C", "x"],
    ]);
    expect(parseCniArgs("").size).toBe(0);
    expect(parseCniArgs(undefined).size).toBe(0);
  });

  it("C2.1 values are not trimmed or decoded (libcni LoadArgs keeps them as they are)", () => {
    expect(parseCniArgs("A= x ;B=%2F").get("A")).toBe(" x ");
    expect(parseCniArgs("A= x ;B=%2F").get("B")).toBe("%2F");
  });

  it.each(["K=a=b", "A=1;", ";A=1", "novalue", "=v", "A=1;;B=2", ";"])(
    "B6 %j is refused with code 4 (libcni LoadArgs)",
    (raw) => {
      expect(() => parseCniArgs(raw)).toThrow(
        expect.objectContaining({
          code: Code.InvalidEnv,
          message: expect.stringContaining("CNI_ARGS"),
        }),
      );
    },
  );

  it("B6 our rule for a duplicate key: two K8S_POD_NAMEs are refused with code 4 naming the key", () => {
    expect(() => parseCniArgs("K8S_POD_NAME=a;K8S_POD_NAME=b")).toThrow(
      expect.objectContaining({
        code: Code.InvalidEnv,
        message: expect.stringContaining("K8S_POD_NAME"),
      }),
    );
    // Also when both give the same value: the rule is about the key, not about a conflict.
    expect(() => parseCniArgs("K8S_POD_NAME=a;IgnoreUnknown=1;K8S_POD_NAME=a")).toThrow(
      expect.objectContaining({ code: Code.InvalidEnv }),
    );
  });

  it("B6 keys are case-sensitive, as in libcni: K8S_POD_NAME and k8s_pod_name are different keys", () => {
    const args = parseCniArgs("K8S_POD_NAME=a;k8s_pod_name=b");
    expect(args.get("K8S_POD_NAME")).toBe("a");
    expect(podFromArgs(parseCniArgs("k8s_pod_name=a;k8s_pod_namespace=ns"))).toBeUndefined();
  });
});

describe("B7 B8 pod identity from CNI_ARGS", () => {
  it("B7 without K8S_POD_NAMESPACE or K8S_POD_NAME (or with them empty) there is no pod", () => {
    expect(podFromArgs(parseCniArgs("IgnoreUnknown=1"))).toBeUndefined();
    expect(podFromArgs(parseCniArgs("K8S_POD_NAME=a"))).toBeUndefined();
    expect(podFromArgs(parseCniArgs("K8S_POD_NAMESPACE=ns"))).toBeUndefined();
    expect(podFromArgs(parseCniArgs("K8S_POD_NAME=;K8S_POD_NAMESPACE=ns"))).toBeUndefined();
  });

  it("B8 K8S_POD_UID and K8S_POD_INFRA_CONTAINER_ID are optional; an empty UID counts as absent", () => {
    expect(podFromArgs(parseCniArgs("K8S_POD_NAME=a;K8S_POD_NAMESPACE=ns"))).toEqual({
      namespace: "ns",
      name: "a",
    });
    expect(podFromArgs(parseCniArgs("K8S_POD_UID=;K8S_POD_NAME=a;K8S_POD_NAMESPACE=ns"))).toEqual({
      namespace: "ns",
      name: "a",
    });
    expect(
      podFromArgs(
        parseCniArgs(
          "IgnoreUnknown=1;K8S_POD_NAMESPACE=ns;K8S_POD_NAME=a;K8S_POD_INFRA_CONTAINER_ID=c1;K8S_POD_UID=u-1",
        ),
      ),
    ).toEqual({ namespace: "ns", name: "a", uid: "u-1", infraContainerId: "c1" });
  });
});
