import { mkdtempSync, rmSync, symlinkSync, writeFileSync, existsSync, readdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { COMMANDS, parseCommand, parseEnv } from "../../../src/cni/env";
import { assertNetnsUsable } from "../../../src/netns/check";
import { Code, isCniError } from "../../../src/cni/errors";
import { podNetns } from "../../support/plexus-bin";

const ADD = {
  CNI_COMMAND: "ADD",
  CNI_CONTAINERID: "abc123",
  CNI_NETNS: "/var/run/netns/x",
  CNI_IFNAME: "eth0",
  CNI_PATH: "/opt/cni/bin",
};

/** The CniError code thrown by fn, or "no error". */
function codeOf(fn: () => unknown): number | string {
  try {
    fn();
  } catch (err) {
    expect(isCniError(err)).toBe(true);
    return (err as { code: number }).code;
  }
  return "no error";
}

describe("C2.1 CNI_* environment", () => {
  it("C2.1 parses a valid ADD environment; CNI_PATH is split on ':' with empty entries dropped", () => {
    const req = parseEnv({
      ...ADD,
      CNI_PATH: ":/a::/b:",
      CNI_ARGS: "IgnoreUnknown=1;K8S_POD_NAME=p",
    });
    expect(req).toMatchObject({
      command: "ADD",
      containerId: "abc123",
      ifName: "eth0",
      netns: "/var/run/netns/x",
      path: ["/a", "/b"],
    });
    expect(req.args.get("K8S_POD_NAME")).toBe("p");
    expect(req.args.get("IgnoreUnknown")).toBe("1");
  });

  it("C4.1 CNI_ARGS is kept verbatim for the delegates", () => {
    expect(parseEnv({ ...ADD, CNI_ARGS: "IgnoreUnknown=1;K8S_POD_NAME=p" }).rawArgs).toBe(
      "IgnoreUnknown=1;K8S_POD_NAME=p",
    );
    expect(parseEnv(ADD).rawArgs).toBe("");
  });

  it.each([
    ["ADD", ["CNI_CONTAINERID", "CNI_NETNS", "CNI_IFNAME"]],
    ["CHECK", ["CNI_CONTAINERID", "CNI_NETNS", "CNI_IFNAME"]],
    ["DEL", ["CNI_CONTAINERID", "CNI_IFNAME"]],
    ["GC", ["CNI_PATH"]],
  ])("C2.1 %s needs %j: each one missing or empty is code 4 naming it", (command, required) => {
    for (const key of required) {
      for (const value of [undefined, ""]) {
        const env: Record<string, string | undefined> = {
          ...ADD,
          CNI_COMMAND: command,
          [key]: value,
        };
        expect(() => parseEnv(env)).toThrow(
          expect.objectContaining({ code: Code.InvalidEnv, message: expect.stringContaining(key) }),
        );
      }
    }
  });

  it("B2 B4 ADD without CNI_CONTAINERID or without CNI_NETNS is code 4", () => {
    const { CNI_CONTAINERID: _c, ...noId } = ADD;
    const { CNI_NETNS: _n, ...noNetns } = ADD;
    expect(codeOf(() => parseEnv(noId))).toBe(Code.InvalidEnv);
    expect(codeOf(() => parseEnv(noNetns))).toBe(Code.InvalidEnv);
  });

  it('C2.1 B5 DEL accepts an empty or missing CNI_NETNS (containerd passes "" once the netns is closed)', () => {
    expect(parseEnv({ ...ADD, CNI_COMMAND: "DEL", CNI_NETNS: "" }).netns).toBe("");
    expect(
      parseEnv({ CNI_COMMAND: "DEL", CNI_CONTAINERID: "c", CNI_IFNAME: "eth0" }),
    ).toMatchObject({
      command: "DEL",
      netns: "",
      path: [],
    });
  });

  it("C2.1 VERSION and STATUS need only CNI_COMMAND; GC needs only CNI_COMMAND and CNI_PATH", () => {
    expect(parseEnv({ CNI_COMMAND: "VERSION" })).toMatchObject({
      command: "VERSION",
      containerId: "",
      ifName: "",
      netns: "",
    });
    expect(parseEnv({ CNI_COMMAND: "STATUS" }).command).toBe("STATUS");
    expect(parseEnv({ CNI_COMMAND: "GC", CNI_PATH: "/opt/cni/bin" })).toMatchObject({
      command: "GC",
      path: ["/opt/cni/bin"],
    });
  });

  it("C2.1 commands without an attachment do not validate stray CNI_CONTAINERID/CNI_IFNAME", () => {
    // libcni does not send them; a runtime that leaves them over must not turn VERSION into an
    // error.
    expect(parseEnv({ CNI_COMMAND: "VERSION", CNI_IFNAME: "a/b" }).command).toBe("VERSION");
  });

  it("C2.1 every CNI command of 1.1.0 is recognised", () => {
    expect([...COMMANDS]).toEqual(["ADD", "DEL", "CHECK", "VERSION", "STATUS", "GC"]);
    for (const c of COMMANDS) expect(parseCommand(c)).toBe(c);
  });

  it.each([undefined, "", "add", "Add", "FOO", " ADD", "ADD\n"])(
    "B1 CNI_COMMAND %j is code 4",
    (cmd) => {
      expect(codeOf(() => parseEnv({ ...ADD, CNI_COMMAND: cmd }))).toBe(Code.InvalidEnv);
    },
  );

  it("B1 a missing CNI_COMMAND says which commands exist", () => {
    expect(() => parseCommand(undefined)).toThrow(
      expect.objectContaining({
        message: expect.stringContaining("ADD, DEL, CHECK, VERSION, STATUS, GC"),
      }),
    );
  });

  it("B1 a huge CNI_COMMAND is not echoed back whole", () => {
    let thrown: unknown;
    try {
      parseCommand("X".repeat(100_000));
    } catch (err) {
      thrown = err;
    }
    expect(thrown, "parseCommand must refuse it").toMatchObject({ code: 4 });
    expect((thrown as Error).message.length).toBeLessThan(300);
    expect((thrown as Error).message).toContain("CNI_COMMAND");
  });

  it.each([
    ["../../etc/x"],
    ["a/b"],
    ["-leading"],
    ["_leading"],
    [".hidden"],
    ["x".repeat(1024 * 1024)],
    ["a b"],
    ["a\nb"],
    ["ä"],
  ])("B2 C2.1 container ID %#: code 4 on ADD, CHECK and DEL", (id) => {
    for (const command of ["ADD", "CHECK", "DEL"]) {
      expect(codeOf(() => parseEnv({ ...ADD, CNI_COMMAND: command, CNI_CONTAINERID: id }))).toBe(
        Code.InvalidEnv,
      );
    }
  });

  it("B2 a 1 MiB container ID is refused without creating any file, and its message stays short", () => {
    const dir = mkdtempSync(join(tmpdir(), "plx-env-"));
    try {
      const id = "a".repeat(1024 * 1024);
      let msg = "";
      try {
        parseEnv({ ...ADD, CNI_CONTAINERID: id });
      } catch (err) {
        msg = (err as Error).message;
      }
      expect(msg).toContain("CNI_CONTAINERID");
      expect(msg.length).toBeLessThan(1000);
      expect(readdirSync(dir)).toEqual([]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("B2 C2.1 container IDs of the usual shapes pass", () => {
    for (const id of ["a".repeat(64), "0f1e2d3c", "pod_1.sandbox-2", "A", "9"])
      expect(parseEnv({ ...ADD, CNI_CONTAINERID: id }).containerId).toBe(id);
  });

  it.each([
    "",
    "a".repeat(16),
    "é".repeat(8),
    ".",
    "..",
    "eth0:1",
    "a b",
    "a/b",
    "tab\tx",
    "nl\n",
    "nb\u00a0sp",
  ])("B3 CNI_IFNAME %j is code 4", (name) => {
    expect(codeOf(() => parseEnv({ ...ADD, CNI_IFNAME: name }))).toBe(Code.InvalidEnv);
    expect(codeOf(() => parseEnv({ ...ADD, CNI_COMMAND: "DEL", CNI_IFNAME: name }))).toBe(
      Code.InvalidEnv,
    );
  });

  it("B3 a 15-byte interface name is the longest allowed", () => {
    expect(parseEnv({ ...ADD, CNI_IFNAME: "a".repeat(15) }).ifName).toHaveLength(15);
    expect(codeOf(() => parseEnv({ ...ADD, CNI_IFNAME: "a".repeat(16) }))).toBe(Code.InvalidEnv);
    for (const ok of ["eth0", "net1", "e.1", "veth-a_b", "...x"])
      expect(parseEnv({ ...ADD, CNI_IFNAME: ok }).ifName).toBe(ok);
  });

  it.each([
    ["NUL", "n\u0000x"],
    ["a control character", "net\u00071"],
    ["a bidi override", "net\u202e1"],
    ["a Cyrillic look-alike of eth0", "\u0435th0"],
    ["a Cyrillic look-alike inside net1", "n\u0435t1"],
    ["non-ASCII letters", "é".repeat(7)],
  ])(
    "B3 an interface name with %s is refused: ASCII letters, digits, '_', '.', '-' only",
    (_what, name) => {
      expect(codeOf(() => parseEnv({ ...ADD, CNI_IFNAME: name }))).toBe(Code.InvalidEnv);
    },
  );

  it("B6 an invalid CNI_ARGS fails the whole environment with code 4", () => {
    expect(codeOf(() => parseEnv({ ...ADD, CNI_ARGS: "K8S_POD_NAME=a=b" }))).toBe(Code.InvalidEnv);
    expect(codeOf(() => parseEnv({ ...ADD, CNI_ARGS: "A=1;" }))).toBe(Code.InvalidEnv);
  });
});

describe("B4 CNI_NETNS must be a network namespace", () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), "plx-env-"));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("B4 a regular file is code 4, naming the path and saying it is not a network namespace", async () => {
    const file = join(dir, "file");
    writeFileSync(file, "");
    await expect(assertNetnsUsable(file)).rejects.toMatchObject({
      code: Code.InvalidEnv,
      message: expect.stringMatching(/file.*not a network namespace/),
    });
  });

  it("B4 a directory is code 4", async () => {
    await expect(assertNetnsUsable(dir)).rejects.toMatchObject({ code: Code.InvalidEnv });
  });

  it("B4 a vanished path, and a dangling symlink, are code 4 naming the reason", async () => {
    const gone = join(dir, "gone");
    await expect(assertNetnsUsable(gone)).rejects.toMatchObject({
      code: Code.InvalidEnv,
      message: expect.stringContaining("ENOENT"),
    });
    const link = join(dir, "dangling");
    symlinkSync(join(dir, "nowhere"), link);
    await expect(assertNetnsUsable(link)).rejects.toMatchObject({ code: Code.InvalidEnv });
    expect(existsSync(gone)).toBe(false);
  });

  it("B4 a namespace of another kind (/proc/self/ns/uts) is code 4 naming its kind", async () => {
    await expect(assertNetnsUsable("/proc/self/ns/uts")).rejects.toMatchObject({
      code: Code.InvalidEnv,
      message: expect.stringContaining("uts namespace"),
    });
  });

  it("B4 a pod's network namespace passes, also through a symlink", async () => {
    await expect(assertNetnsUsable(podNetns())).resolves.toBeUndefined();
    const link = join(dir, "net-link");
    symlinkSync(podNetns(), link);
    await expect(assertNetnsUsable(link)).resolves.toBeUndefined();
  });

  it("B97 the process's own network namespace (the node's) is refused (4), also through a symlink", async () => {
    const own = { code: 4, message: expect.stringContaining("Plexus's own network namespace") };
    await expect(assertNetnsUsable("/proc/self/ns/net")).rejects.toMatchObject(own);
    await expect(assertNetnsUsable("/proc/thread-self/ns/net")).rejects.toMatchObject(own);
    const link = join(dir, "own-link");
    symlinkSync("/proc/self/ns/net", link);
    await expect(assertNetnsUsable(link)).rejects.toMatchObject(own);
  });
});
