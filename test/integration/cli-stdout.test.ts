/**
 * The CLI boundary of the built binary (C2.2): for every verb, on success and on failure, stdout
 * holds exactly one JSON document where CNI expects output and nothing where it expects none,
 * even with debug logging to stderr; bad env and stdin (B1, B2, B10, B12) through the binary.
 */
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { ALL_VERSIONS } from "../../src/cni/version";
import { cniError, singleJson, type RunResult } from "../support/plexus-bin";
import { useSandbox } from "./use-sandbox";

const ctx = useSandbox();

/** Every verb at debug level, logging to stderr and to a file: stdout must still be clean. */
function loudConfig(delegateVersion = "1.1.0") {
  const { sb } = ctx;
  return sb.config([sb.delegate("net-a", { cniVersion: delegateVersion })], {
    cniVersion: "1.1.0",
    logLevel: "debug",
    logToStderr: true,
    logFile: join(sb.root, "plexus.log"),
  });
}

function expectSilentSuccess(result: RunResult): void {
  expect(result.code, result.stdout).toBe(0);
  expect(result.stdout).toBe("");
  // Logging really was on: the emptiness of stdout is not for lack of output.
  expect(result.stderr).toMatch(/"level":/);
}

function expectOneError(result: RunResult): void {
  const e = cniError(result);
  expect(e.cniVersion).toBe("1.1.0");
  expect(result.stderr).toMatch(/"level":/);
}

const GC_VALID = { "cni.dev/valid-attachments": [{ containerID: "ctr1", ifname: "eth0" }] };

describe("C2.2 stdout is the CNI result channel, for every verb", () => {
  it("C2.2 ADD success: exit 0, exactly one JSON result", async () => {
    const { sb } = ctx;
    const r = await sb.run("ADD", loudConfig());
    expect(r.code, r.stdout).toBe(0);
    expect(singleJson(r.stdout)).toMatchObject({
      cniVersion: "1.1.0",
      ips: [{ address: "10.1.2.3/24" }],
    });
    expect(r.stderr).toMatch(/"level":/);
    expect(readFileSync(join(sb.root, "plexus.log"), "utf8")).toMatch(/attached/);
  });

  it("C2.2 ADD failure: exit 1, exactly one JSON error", async () => {
    const { sb } = ctx;
    const conf = loudConfig();
    sb.setBehaviours("net-a", { ADD: { do: "error", error: { code: 11, msg: "later" } } });
    expectOneError(await sb.run("ADD", conf));
  });

  it("C2.2 DEL success prints nothing; DEL failure prints one JSON error", async () => {
    const { sb } = ctx;
    const conf = loudConfig();
    expect((await sb.run("ADD", conf)).code).toBe(0);
    sb.setBehaviours("net-a", { DEL: { do: "error", error: { code: 11, msg: "busy" } } });
    expectOneError(await sb.run("DEL", conf));
    sb.setBehaviours("net-a", {});
    expectSilentSuccess(await sb.run("DEL", conf));
  });

  it("C2.2 CHECK success prints nothing; CHECK failure prints one JSON error", async () => {
    const { sb } = ctx;
    const conf = loudConfig();
    expect((await sb.run("ADD", conf)).code).toBe(0);
    expectSilentSuccess(await sb.run("CHECK", conf));
    sb.setBehaviours("net-a", {
      CHECK: { do: "error", error: { code: 100, msg: "eth0 has the wrong IP" } },
    });
    expectOneError(await sb.run("CHECK", conf));
    expect(sb.calls()).toEqual(["ADD net-a", "CHECK net-a", "CHECK net-a"]);
  });

  it("C2.2 STATUS success prints nothing; STATUS failure prints one JSON error", async () => {
    const { sb } = ctx;
    const conf = loudConfig();
    expectSilentSuccess(await sb.run("STATUS", conf));
    sb.setBehaviours("net-a", { STATUS: { do: "error", error: { code: 50, msg: "not ready" } } });
    expectOneError(await sb.run("STATUS", conf));
  });

  it("C2.2 GC success prints nothing; GC failure prints one JSON error", async () => {
    const { sb } = ctx;
    const conf = loudConfig();
    expectSilentSuccess(await sb.run("GC", { ...conf, ...GC_VALID }));
    sb.setBehaviours("net-a", { GC: { do: "crash", stderr: "gc broke" } });
    expectOneError(await sb.run("GC", { ...conf, ...GC_VALID }));
  });

  it("C2.2 C2.7 VERSION prints one JSON document listing the supported versions", async () => {
    const { sb } = ctx;
    const r = await sb.run("VERSION", loudConfig());
    expect(r.code).toBe(0);
    expect(singleJson(r.stdout)).toEqual({
      cniVersion: "1.1.0",
      supportedVersions: [...ALL_VERSIONS],
    });
  });

  it("C2.2 a config error prints one JSON error and exits 1", async () => {
    const { sb } = ctx;
    const e = cniError(await sb.run("ADD", { ...loudConfig(), delegates: [] }));
    expect(e.code).toBe(7);
  });
});

describe("B1 B2 bad environment", () => {
  it.each([
    ["missing", undefined],
    ["empty", ""],
    ["lower case", "add"],
  ])("B1 CNI_COMMAND %s → 4", async (_label, value) => {
    const { sb } = ctx;
    const r = await sb.run("ADD", loudConfig(), { CNI_COMMAND: value });
    const e = cniError(r);
    expect(e.code).toBe(4);
    expect(e.msg).toContain("CNI_COMMAND");
    expect(sb.invocations()).toEqual([]);
  });

  it.each([
    ["missing", undefined],
    ["../../etc/x", "../../etc/x"],
    ["a/b", "a/b"],
    ["leading -", "-abc"],
    // 1 MiB cannot be passed at all: Linux refuses any env string over 128 KiB (MAX_ARG_STRLEN).
    ["120 000 characters", "a".repeat(120_000)],
  ])("B2 CNI_CONTAINERID %s → 4, no file created, no delegate run", async (_label, value) => {
    const { sb } = ctx;
    for (const verb of ["ADD", "DEL"]) {
      const e = cniError(await sb.run(verb, loudConfig(), { CNI_CONTAINERID: value }));
      expect(e.code).toBe(4);
      expect(e.msg).toContain("CNI_CONTAINERID");
    }
    expect(existsSync(sb.cniDir)).toBe(false);
    expect(existsSync(join(sb.root, "etc"))).toBe(false);
    expect(sb.invocations()).toEqual([]);
  });

  it("C2.2 C2.3 an error in the environment is answered in the config's cniVersion, not the newest", async () => {
    const { sb } = ctx;
    for (const version of ["0.4.0", "1.0.0"]) {
      const e = cniError(
        await sb.run("ADD", sb.config([sb.delegate("net-a")], { cniVersion: version }), {
          CNI_CONTAINERID: "a/b",
        }),
      );
      expect(e).toMatchObject({ code: 4, cniVersion: version });
    }
  });
});

describe("B10 VERSION ignores stdin", () => {
  it.each([
    ["garbage", "\u0000\u00ff{{{ not json"],
    ["a config with a bad version", JSON.stringify({ cniVersion: "9.9.9", name: "x" })],
    ["8 MiB of bytes", "x".repeat(8 * 1024 * 1024)],
  ])("B10 VERSION with %s on stdin still prints the supported versions", async (_label, stdin) => {
    const { sb } = ctx;
    const r = await sb.run("VERSION", stdin);
    expect(r.code).toBe(0);
    expect(singleJson(r.stdout)).toEqual({
      cniVersion: "1.1.0",
      supportedVersions: [...ALL_VERSIONS],
    });
  });
});

describe("B12 oversized stdin", () => {
  it("B12 64 MiB stdin is refused with 6, quickly", async () => {
    const { sb } = ctx;
    const big = Buffer.alloc(64 * 1024 * 1024, " ");
    big.write('{"cniVersion":"1.0.0","name":"x","pad":"', 0);
    const r = await sb.run("ADD", big);
    const e = cniError(r);
    expect(e.code).toBe(6);
    expect(r.durationMs).toBeLessThan(5000);
    expect(sb.invocations()).toEqual([]);
    expect(existsSync(sb.cniDir)).toBe(false);
  });

  it("B12 a 900 KiB config (below the cap, above a pipe's 64 KiB buffer) is read whole and works", async () => {
    const { sb } = ctx;
    const conf = sb.config([sb.delegate("net-a", { extra: { padding: "p".repeat(900 * 1024) } })]);
    const r = await sb.run("ADD", conf);
    expect(r.code, r.stdout).toBe(0);
    expect(singleJson(r.stdout)).toMatchObject({ ips: [{ address: "10.1.2.3/24" }] });
    const [add] = sb.invocations();
    expect((add!.stdin as { padding: string }).padding).toHaveLength(900 * 1024);
  });

  it("B12 10⁵-deep nesting is refused with 6, no crash", async () => {
    const { sb } = ctx;
    const deep = `{"cniVersion":"1.0.0","name":"x","delegates":[${'{"a":'.repeat(100_000)}1${"}".repeat(100_000)}]}`;
    const e = cniError(await sb.run("ADD", deep));
    expect(e.code).toBe(6);
    expect(sb.invocations()).toEqual([]);
  });
});
