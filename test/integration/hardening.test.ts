/**
 * Hostile or careless input through the built binary: what a tenant, a runtime's
 * environment or a broken config can make Plexus do, and what it must refuse.
 */
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { cniError, singleJson } from "../support/plexus-bin";
import { useSandbox } from "./use-sandbox";

const ctx = useSandbox();

describe("CNI_PATH entries are absolute before lookup and spawn", () => {
  it("C4.1 CNI_PATH=. with a plugin named like a system command: the plugin in the working directory runs, never the one PATH finds (iproute2's /usr/sbin/bridge)", async () => {
    const { sb } = ctx;
    const conf = sb.config([sb.delegate("net-a", { type: "bridge" })]);
    const r = await sb.run("ADD", conf, { CNI_PATH: "." }, { cwd: sb.binDir });
    expect(r.code, r.stdout + r.stderr).toBe(0);
    singleJson(r.stdout);
    expect(sb.calls()).toEqual(["ADD net-a"]);
  });
});

describe("bounded work per call", () => {
  it("B25 a network of 1,000 plugins is refused with 7 naming maxPluginsPerNetwork before any delegate runs", async () => {
    const { sb } = ctx;
    const one = sb.delegate("net-a");
    const huge = {
      cniVersion: "1.0.0",
      name: "huge",
      plugins: Array.from({ length: 1000 }, () => ({ type: one.type, debugFile: one.debugFile })),
    };
    const err = cniError(await sb.run("ADD", sb.config([one, huge])));
    expect(err).toMatchObject({
      code: 7,
      msg: expect.stringMatching(/network huge has 1000 plugins.*maxPluginsPerNetwork/),
    });
    expect(sb.calls()).toEqual([]);
  });

  it("B52 addTimeoutSeconds bounds the whole ADD: a hanging delegate is killed when the call's time is up, not after its own 30 s; the next network never runs; 101 and a rollback", async () => {
    const { sb } = ctx;
    const conf = sb.config(
      [sb.delegate("net-a", { behaviours: { ADD: { do: "hang" } } }), sb.delegate("net-b")],
      {
        addTimeoutSeconds: 1,
        delegateTimeoutSeconds: 30,
      },
    );
    const r = await sb.run("ADD", conf);
    expect(cniError(r).code).toBe(101);
    expect(r.durationMs).toBeLessThan(10_000);
    expect(sb.calls()).toEqual(["ADD net-a", "DEL net-a"]);
    expect(sb.recordFiles()).toEqual([]);
  });
});

describe("the executable ignores its runtime's tuning variables", () => {
  it("B18 BUN_OPTIONS=--preload: the call itself and its delegates run without it (the preload ran once, before Plexus could act), NODE_OPTIONS and friends never reach a delegate", async () => {
    const { sb } = ctx;
    const marks = join(sb.root, "preload-runs");
    const preload = join(sb.root, "preload.js");
    writeFileSync(
      preload,
      `require("fs").appendFileSync(${JSON.stringify(marks)}, process.pid + "\\n");`,
    );
    const conf = sb.config([sb.delegate("net-a")]);
    const tuning = {
      BUN_OPTIONS: `--preload ${preload}`,
      NODE_OPTIONS: `--require ${preload}`,
      NODE_TLS_REJECT_UNAUTHORIZED: "0",
      BUN_CONFIG_VERBOSE_FETCH: "1",
    };
    const r = await sb.run("ADD", conf, {
      ...tuning,
      SSL_CERT_FILE: "/etc/ssl/certs/ca-certificates.crt",
    });
    expect(r.code, r.stdout + r.stderr).toBe(0);
    expect(readFileSync(marks, "utf8").trim().split("\n")).toHaveLength(1);
    const env = sb.invocations()[0]!.env as Record<string, string>;
    for (const k of Object.keys(tuning)) expect(env[k], k).toBeUndefined();
    // The host's trust settings are not runtime tuning: delegates (Go programs) may need them.
    expect(env.SSL_CERT_FILE).toBe("/etc/ssl/certs/ca-certificates.crt");
  });
});
