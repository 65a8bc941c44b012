import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { parseCniArgs, podFromArgs } from "../../../src/cni/args";
import { assertNetnsUsable, parseEnv } from "../../../src/cni/env";
import { Code } from "../../../src/cni/errors";

const ADD = { CNI_COMMAND: "ADD", CNI_CONTAINERID: "abc123", CNI_NETNS: "/var/run/netns/x", CNI_IFNAME: "eth0", CNI_PATH: "/opt/cni/bin" };

function codeOf(fn: () => unknown): number | undefined {
  try {
    fn();
  } catch (err) {
    return (err as { code?: number }).code;
  }
  return undefined;
}

describe("C2.1 CNI_* environment", () => {
  it("C2.1 parses a valid ADD environment, splitting CNI_PATH on ':'", () => {
    const req = parseEnv({ ...ADD, CNI_PATH: "/a::/b", CNI_ARGS: "IgnoreUnknown=1;K8S_POD_NAME=p" });
    expect(req).toMatchObject({ command: "ADD", containerId: "abc123", ifName: "eth0", netns: "/var/run/netns/x", path: ["/a", "/b"] });
    expect(req.args.get("K8S_POD_NAME")).toBe("p");
  });

  it.each([
    ["ADD", ["CNI_CONTAINERID", "CNI_NETNS", "CNI_IFNAME"]],
    ["CHECK", ["CNI_CONTAINERID", "CNI_NETNS", "CNI_IFNAME"]],
    ["DEL", ["CNI_CONTAINERID", "CNI_IFNAME"]],
    ["GC", ["CNI_PATH"]],
  ])("C2.1 %s needs %j: each one missing is code 4 naming it", (command, required) => {
    for (const key of required) {
      const env: Record<string, string | undefined> = { ...ADD, CNI_COMMAND: command };
      delete env[key];
      expect(() => parseEnv(env)).toThrow(expect.objectContaining({ code: Code.InvalidEnv, message: expect.stringContaining(key) }));
    }
  });

  it("C2.1 B5 DEL accepts an empty or missing CNI_NETNS; VERSION and STATUS need only CNI_COMMAND", () => {
    expect(parseEnv({ ...ADD, CNI_COMMAND: "DEL", CNI_NETNS: "" }).netns).toBe("");
    expect(parseEnv({ CNI_COMMAND: "DEL", CNI_CONTAINERID: "c", CNI_IFNAME: "eth0" }).netns).toBe("");
    expect(parseEnv({ CNI_COMMAND: "VERSION" }).command).toBe("VERSION");
    expect(parseEnv({ CNI_COMMAND: "STATUS" }).command).toBe("STATUS");
  });

  it.each([undefined, "", "add", "Add", "FOO"])("B1 CNI_COMMAND %j is code 4", (cmd) => {
    expect(codeOf(() => parseEnv({ ...ADD, CNI_COMMAND: cmd }))).toBe(Code.InvalidEnv);
  });

  it.each(["../../etc/x", "a/b", "-leading", "", "x".repeat(1024 * 1024), "a b", "ä"])("B2 C2.1 container ID %#: code 4", (id) => {
    expect(codeOf(() => parseEnv({ ...ADD, CNI_CONTAINERID: id }))).toBe(Code.InvalidEnv);
  });

  it("B2 C2.1 container IDs of the usual shapes pass", () => {
    for (const id of ["a".repeat(64), "0f1e2d3c", "pod_1.sandbox-2"]) expect(parseEnv({ ...ADD, CNI_CONTAINERID: id }).containerId).toBe(id);
  });

  it.each(["", "a".repeat(16), ".", "..", "eth0:1", "a b", "a/b", "tab\tx"])("B3 CNI_IFNAME %j is code 4", (name) => {
    expect(codeOf(() => parseEnv({ ...ADD, CNI_IFNAME: name }))).toBe(Code.InvalidEnv);
  });

  it("B3 a 15-byte interface name is the longest allowed", () => {
    expect(parseEnv({ ...ADD, CNI_IFNAME: "a".repeat(15) }).ifName).toHaveLength(15);
  });
});

describe("B6 CNI_ARGS", () => {
  it("B6 K=V pairs separated by ';' parse; empty means none", () => {
    expect([...parseCniArgs("A=1;B=;C=x")]).toEqual([["A", "1"], ["B", ""], ["C", "x"]]);
    expect(parseCniArgs("").size).toBe(0);
    expect(parseCniArgs(undefined).size).toBe(0);
  });

  it.each(["K=a=b", "A=1;", "novalue", "=v", "A=1;;B=2"])("B6 %j is refused with code 4 (libcni LoadArgs)", (raw) => {
    expect(codeOf(() => parseCniArgs(raw))).toBe(Code.InvalidEnv);
  });

  it("B6 a duplicate key (two K8S_POD_NAMEs) is refused with code 4: the pod's identity would be ambiguous", () => {
    expect(() => parseCniArgs("K8S_POD_NAME=a;K8S_POD_NAME=b")).toThrow(expect.objectContaining({ code: 4, message: expect.stringContaining("K8S_POD_NAME") }));
  });

  it("B7 without K8S_POD_NAMESPACE or K8S_POD_NAME there is no pod context; B8 K8S_POD_UID is optional", () => {
    expect(podFromArgs(parseCniArgs("IgnoreUnknown=1"))).toBeUndefined();
    expect(podFromArgs(parseCniArgs("K8S_POD_NAME=a"))).toBeUndefined();
    expect(podFromArgs(parseCniArgs("K8S_POD_NAME=a;K8S_POD_NAMESPACE=ns"))).toEqual({ namespace: "ns", name: "a" });
    expect(podFromArgs(parseCniArgs("K8S_POD_UID=u;K8S_POD_NAME=a;K8S_POD_NAMESPACE=ns"))).toEqual({ namespace: "ns", name: "a", uid: "u" });
  });
});

describe("B4 CNI_NETNS must be a network namespace", () => {
  it("B4 a regular file, a vanished path and a non-net namespace are code 4; the current netns passes", async () => {
    const dir = mkdtempSync(join(tmpdir(), "plx-env-"));
    try {
      const file = join(dir, "file");
      writeFileSync(file, "");
      await expect(assertNetnsUsable(file)).rejects.toMatchObject({ code: Code.InvalidEnv });
      await expect(assertNetnsUsable(join(dir, "gone"))).rejects.toMatchObject({ code: Code.InvalidEnv });
      await expect(assertNetnsUsable("/proc/self/ns/uts")).rejects.toMatchObject({ code: Code.InvalidEnv });
      await expect(assertNetnsUsable("/proc/self/ns/net")).resolves.toBeUndefined();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
