import { describe, expect, it } from "vitest";
import { parseCniArgs, podFromArgs } from "../../../src/cni/args";
import { Code } from "../../../src/cni/errors";

/** parseCniArgs refuses `raw` with code 4, the message naming each of `words`. */
function refused(raw: string, ...words: string[]): void {
  let caught: unknown;
  try {
    parseCniArgs(raw);
  } catch (err) {
    caught = err;
  }
  expect(caught, raw).toMatchObject({ code: Code.InvalidEnv });
  const message = (caught as Error).message;
  expect(message).toMatch(/^CNI_ARGS is invalid: /);
  for (const word of words) expect(message).toContain(word);
}

describe("C2.1 B6 M17 CNI_ARGS", () => {
  it("C2.1 K=V pairs separated by ';' give the known keys; empty or unset means none", () => {
    expect(
      Object.fromEntries(parseCniArgs("IgnoreUnknown=1;K8S_POD_NAME=a;K8S_POD_UID=;FOO=x")),
    ).toEqual({ IgnoreUnknown: "1", K8S_POD_NAME: "a", K8S_POD_UID: "" });
    expect(parseCniArgs("").size).toBe(0);
    expect(parseCniArgs(undefined).size).toBe(0);
  });

  it("C2.1 values are not trimmed or decoded (libcni LoadArgs keeps them as they are)", () => {
    expect(parseCniArgs("K8S_POD_NAME= x ;K8S_POD_UID=%2F").get("K8S_POD_NAME")).toBe(" x ");
    expect(parseCniArgs("K8S_POD_NAME= x ;K8S_POD_UID=%2F").get("K8S_POD_UID")).toBe("%2F");
  });

  it.each(["K=a=b", "IgnoreUnknown=1;", ";IgnoreUnknown=1", "novalue", "A=1;;B=2", ";"])(
    "B6 %j is refused with code 4 (libcni LoadArgs: every pair splits into KEY and VALUE)",
    (raw) => refused(raw, "is not KEY=VALUE"),
  );

  it("M17 B6 a key given twice: the last value wins, as in libcni (Multus puts its own arguments before the runtime's)", () => {
    const multus =
      "IgnoreUnknown=true;K8S_POD_NAMESPACE=ns;K8S_POD_NAME=first;K8S_POD_INFRA_CONTAINER_ID=c1;" +
      "K8S_POD_UID=u-1;IgnoreUnknown=1;K8S_POD_NAMESPACE=ns2;K8S_POD_NAME=last;" +
      "K8S_POD_INFRA_CONTAINER_ID=c2;K8S_POD_UID=u-2";
    expect(podFromArgs(parseCniArgs(multus))).toEqual({
      namespace: "ns2",
      name: "last",
      uid: "u-2",
      infraContainerId: "c2",
    });
    // A last value that is empty empties the key: no pod.
    expect(podFromArgs(parseCniArgs("K8S_POD_NAMESPACE=ns;K8S_POD_NAME=a;K8S_POD_NAME="))).toBe(
      undefined,
    );
  });

  it("M17 an unknown key is refused naming it, unless the last IgnoreUnknown, wherever it stands, is 1 or true in any case", () => {
    refused("K8S_POD_NAME=a;FOO=1", '"FOO"', "IgnoreUnknown");
    refused("IgnoreUnknown=1;FOO=1;IgnoreUnknown=0", '"FOO"');
    refused("=v", '""');
    for (const raw of [
      "FOO=1;IgnoreUnknown=1",
      "IgnoreUnknown=false;FOO=1;IgnoreUnknown=TRUE",
      "IgnoreUnknown=True;=v;MAC=02:00:00:00:00:01",
    ]) {
      expect(() => parseCniArgs(raw), raw).not.toThrow();
    }
  });

  it("M17 every IgnoreUnknown must be 1, true, 0 or false (libcni's UnmarshallableBool), even one a later pair overrides", () => {
    refused("IgnoreUnknown=yes", '"IgnoreUnknown=yes"', "1, true, 0 or false");
    refused("IgnoreUnknown=;IgnoreUnknown=1", '"IgnoreUnknown="');
    refused("IgnoreUnknown= 1");
    expect(parseCniArgs("IgnoreUnknown=FALSE").get("IgnoreUnknown")).toBe("FALSE");
  });

  it("M17 IP, a field of Multus's K8sArgs, must be an address as Go's net.ParseIP takes it, or empty", () => {
    for (const ip of ["10.1.2.3", "fd00::5", "::ffff:1.2.3.4", "1:2:3:4:5:6:1.2.3.4", "::", ""]) {
      expect(parseCniArgs(`IP=${ip}`).get("IP"), ip).toBe(ip);
    }
    for (const ip of ["010.1.2.3", "1.2.3", "fe80::1%eth0", "1::2::3", "::1:2:3:4:5:6:1.2.3.4"]) {
      refused(`IgnoreUnknown=1;IP=${ip}`, `"IP=${ip}"`, "an IP address");
    }
  });

  it("B6 a long CNI_ARGS is not echoed back whole: five unknown keys named, pairs cut short", () => {
    const many = Array.from({ length: 5000 }, (_, i) => `arg${i}=v`).join(";");
    refused(many, '"arg0"', '"arg4"', "and 4995 more");
    let message = "";
    try {
      parseCniArgs(`${"x".repeat(100_000)}=a=b`);
    } catch (err) {
      message = (err as Error).message;
    }
    expect(message.length).toBeLessThan(300);
  });

  it("M17 CommonArgs, the struct LoadArgs finds but cannot set, is refused even with IgnoreUnknown", () => {
    refused("IgnoreUnknown=1;CommonArgs=x", "CommonArgs");
  });

  it("B6 keys are case-sensitive, as in libcni: k8s_pod_name is an unknown key, not K8S_POD_NAME", () => {
    const args = parseCniArgs("IgnoreUnknown=1;K8S_POD_NAME=a;k8s_pod_name=b");
    expect(args.get("K8S_POD_NAME")).toBe("a");
    expect(
      podFromArgs(parseCniArgs("IgnoreUnknown=1;k8s_pod_name=a;k8s_pod_namespace=ns")),
    ).toBeUndefined();
    refused("k8s_pod_name=a", '"k8s_pod_name"');
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
